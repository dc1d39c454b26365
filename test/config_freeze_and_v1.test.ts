// Config freeze (423 on writes, reads pass) and the legacy v1 endpoints (409 + Deprecation, by-id reads, Sunset).
import { describe, expect, it } from 'vitest';
import { testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, commit, createAgent, mainBranchId, publish, putDraft } from './support/agents.js';

describe.each(testDialects())('config freeze and legacy v1 on %s', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_V1_SUNSET: '2027-06-30' });

  it('blocks every write with 423 config_freeze_active while reads pass; clearing lifts it', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    const rev = await commit(suite.server, agent, main, { prompt: 'Base.' });
    const fork = (await suite.server.request('POST', `${A}/agent/${agent}/branches`, { body: { sourceBranchId: main, name: 'fork' } })).body.data._id;
    await putDraft(suite.server, agent, main, { prompt: 'Pending edit.' });

    const set = await suite.server.request('POST', `${A}/agent/${agent}/config-freeze`, { body: { reason: 'Black Friday' } });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ active: true, reason: 'Black Friday', setBy: 'bootstrap' });

    const b = `${A}/agent/${agent}/branches`;
    const writes: [string, string, unknown?][] = [
      ['PUT', `${b}/${main}/draft`, { prompt: 'x' }],
      ['DELETE', `${b}/${main}/draft`],
      ['POST', `${b}/${main}/draft/publish`],
      ['POST', `${b}/${main}/draft/publish/cancel`],
      ['POST', b, { sourceBranchId: main, name: 'blocked' }],
      ['PATCH', `${b}/${fork}`, { name: 'renamed' }],
      ['POST', `${b}/${fork}/archive`],
      ['POST', `${b}/${fork}/live`],
      ['POST', `${b}/${main}/revisions/${rev._id}/restore`],
      ['PATCH', `${A}/agent/${agent}`, { name: 'x' }],
      ['DELETE', `${A}/agent/${agent}`],
      ['DELETE', `${A}/agent/${agent}/archive`],
    ];
    for (const [method, path, body] of writes) {
      const res = await suite.server.request(method, path, body === undefined ? {} : { body });
      expect(res.status, `${method} ${path}`).toBe(423);
      expect(res.body).toMatchObject({ status: false, error_type: 'config_freeze_active' });
      expect(res.body.errors[0]).toContain('Black Friday');
    }
    const reads = [`${A}/agent/${agent}`, b, `${b}/${main}`, `${b}/${main}/draft`, `${b}/${main}/revisions`, `${b}/${main}/revisions/${rev._id}`, `${A}/agent/${agent}/diff?a=${rev._id}&b=${main}:draft`];
    for (const path of reads) expect((await suite.server.request('GET', path)).status, path).toBe(200);
    expect((await suite.server.request('GET', `${A}/agent/${agent}`)).body.data.configFreeze).toMatchObject({ active: true });

    expect((await suite.server.request('DELETE', `${A}/agent/${agent}/config-freeze`)).body).toEqual({ status: true, data: { active: false } });
    const after = await publish(suite.server, agent, main);
    expect(after.status, after.text).toBe(200);
  });

  it('answers v1 writes and list reads with 409 versioning_v2_migration_required, Deprecation and Sunset', async () => {
    const agent = await createAgent(suite.server);
    const base = `${A}/agent/${agent}`;
    const retired: [string, string][] = [
      ['POST', '/drafts'],
      ['GET', '/drafts'],
      ['PATCH', '/drafts/0123456789abcdef01234567'],
      ['DELETE', '/drafts/0123456789abcdef01234567'],
      ['POST', '/drafts/0123456789abcdef01234567/publish'],
      ['PATCH', '/drafts/0123456789abcdef01234567/config'],
      ['GET', '/versions'],
      ['PATCH', '/versions/0123456789abcdef01234567'],
      ['PATCH', '/versions/0123456789abcdef01234567/activate'],
    ];
    for (const [method, path] of retired) {
      const res = await suite.server.request(method, base + path, method === 'GET' ? {} : { body: { draftName: 'x' } });
      expect(res.status, `${method} ${path}`).toBe(409);
      expect(res.headers.get('deprecation')).toBe('true');
      expect(res.headers.get('sunset')).toBe('Wed, 30 Jun 2027 00:00:00 GMT');
      expect(res.body).toMatchObject({ status: false, error_type: 'versioning_v2_migration_required' });
    }
  });

  it('keeps v1 by-id reads working: a versionId equals its revisionId', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    const r1 = await commit(suite.server, agent, main, { prompt: 'One.' }, 'one');
    const r2 = await commit(suite.server, agent, main, { prompt: 'Two.' }, 'two');
    const draft = (await putDraft(suite.server, agent, main, { prompt: 'Three.' })).body.data;
    const base = `${A}/agent/${agent}`;

    const version = await suite.server.request('GET', `${base}/versions/${r1._id}`);
    expect(version.status).toBe(200);
    expect(version.headers.get('deprecation')).toBe('true');
    expect(version.headers.get('sunset')).toBe('Wed, 30 Jun 2027 00:00:00 GMT');
    expect(version.body.data.version).toMatchObject({ _id: r1._id, label: 'one', status: 'published' });
    expect(version.body.data.resolvedConfig.prompt).toBe('One.');

    const d = await suite.server.request('GET', `${base}/drafts/${draft._id}`);
    expect(d.status).toBe(200);
    expect(d.body.data).toMatchObject({ latest: { _id: draft._id, status: 'draft' }, editCount: 1 });

    const diff = await suite.server.request('GET', `${base}/versions/diff?versionA=${r1._id}&versionB=${r2._id}`);
    expect(diff.body.data).toEqual({ hasChanges: true, sections: { workflow_prompt: { before: { prompt: 'One.', firstMessage: '' }, after: { prompt: 'Two.', firstMessage: '' } } } });
    const draftDiff = await suite.server.request('GET', `${base}/drafts/${draft._id}/diff?compareTo=${r2._id}`);
    expect(draftDiff.body.data.hasChanges).toBe(true);
    expect((await suite.server.request('GET', `${base}/versions/diff?versionA=${r1._id}`)).status).toBe(400);
    expect((await suite.server.request('GET', `${base}/versions/${draft._id}`)).status).toBe(404);
    expect((await suite.server.request('GET', `${base}/drafts/${r1._id}`)).status).toBe(404);
  });
});
