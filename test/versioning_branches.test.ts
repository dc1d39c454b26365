// Branches: create from a source (and its three 409s), list, get, rename, archive (403 rules), make live (exactly one live).
import { describe, expect, it } from 'vitest';
import { testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, LEAKY_PROMPT, commit, createAgent, mainBranchId, publish, putDraft } from './support/agents.js';

describe.each(testDialects())('branches on %s', (dialect) => {
  const suite = serverForSuite(dialect);
  const branchUrl = (agent: string, branch = '') => `${A}/agent/${agent}/branches${branch ? `/${branch}` : ''}`;
  const fork = (agent: string, sourceBranchId: string, name: string) => suite.server.request('POST', branchUrl(agent), { body: { sourceBranchId, name } });

  it('refuses to branch from a source without a commit (409 source_has_no_commit)', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    const res = await fork(agent, main, 'feature');
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ status: false, error_type: 'source_has_no_commit' });
    expect(res.body.errors[0]).toBeTypeOf('string');
  });

  it('creates a branch at the source head, lists it and gets it with its head revision', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    const head = await commit(suite.server, agent, main, { prompt: 'You are a booking agent.' }, 'v1');
    const res = await fork(agent, main, 'experiment');
    expect(res.status, res.text).toBe(201);
    const branch = res.body.data;
    expect(branch).toMatchObject({ agent, name: 'experiment', isDefault: false, sourceBranchId: main, sourceRevisionId: head._id, headRevisionId: head._id, openDraftId: null, status: 'active' });

    const list = await suite.server.request('GET', branchUrl(agent));
    expect(list.body.data.branches.map((b: any) => [b.branch.name, b.isLive])).toEqual([['Main', true], ['experiment', false]]);

    await putDraft(suite.server, agent, branch._id, { firstMessage: 'Hi there' });
    const got = await suite.server.request('GET', branchUrl(agent, branch._id));
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({ isLive: false, hasOpenDraft: true, headRevisionNumber: 1, branch: { _id: branch._id } });
    expect(got.body.data.headRevision).toMatchObject({ _id: head._id, status: 'published', label: 'v1' });
    expect(got.body.data.branch.openDraftId).toMatch(/^[a-f0-9]{24}$/);
  });

  it('validates the body and answers 404 for an unknown branch', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    expect((await suite.server.request('POST', branchUrl(agent), { body: { name: 'x' } })).status).toBe(400);
    expect((await fork(agent, main, '')).status).toBe(400);
    expect((await fork(agent, main, 'n'.repeat(101))).status).toBe(400);
    const missing = await fork(agent, '0123456789abcdef01234567', 'x');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ status: false });
    expect((await suite.server.request('GET', branchUrl(agent, '0123456789abcdef01234567'))).status).toBe(404);
  });

  it('refuses a taken name on create and rename (409 branch_name_exists)', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    await commit(suite.server, agent, main, { prompt: 'Base.' });
    const a = (await fork(agent, main, 'alpha')).body.data;
    await fork(agent, main, 'beta');
    for (const res of [await fork(agent, main, 'alpha'), await fork(agent, main, 'MAIN'), await suite.server.request('PATCH', branchUrl(agent, a._id), { body: { name: 'Beta' } })]) {
      expect(res.status).toBe(409);
      expect(res.body.error_type).toBe('branch_name_exists');
    }
    // Many creates of one name at once: exactly one wins, the rest are 409s (never a 500).
    const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => fork(agent, main, i % 2 ? 'Delta' : 'delta')));
    expect(burst.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of burst.filter((x) => x.status === 409)) expect(r.body.error_type).toBe('branch_name_exists');

    const renamed = await suite.server.request('PATCH', branchUrl(agent, a._id), { body: { name: 'gamma' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ _id: a._id, name: 'gamma' });
    const mainRename = await suite.server.request('PATCH', branchUrl(agent, main), { body: { name: 'trunk' } });
    expect(mainRename.status).toBe(403);
    expect(mainRename.body.status).toBe(false);
  });

  it('refuses to branch from a source whose newest revision is still scanning (409 source_scanning)', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    await commit(suite.server, agent, main, { prompt: 'Base.' });
    await putDraft(suite.server, agent, main, { prompt: LEAKY_PROMPT });
    expect((await publish(suite.server, agent, main)).status).toBe(202);
    const res = await fork(agent, main, 'from-scanning');
    expect(res.status).toBe(409);
    expect(res.body.error_type).toBe('source_scanning');
  });

  it('archives a branch: 403 for Main and the live branch, then read-only', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    await commit(suite.server, agent, main, { prompt: 'Base.' });
    const side = (await fork(agent, main, 'side')).body.data._id;
    const live = (await fork(agent, main, 'live-one')).body.data._id;
    expect((await suite.server.request('POST', `${branchUrl(agent, live)}/live`)).status).toBe(200);

    const archiveMain = await suite.server.request('POST', `${branchUrl(agent, main)}/archive`);
    expect(archiveMain.status).toBe(403);
    expect(archiveMain.body).toMatchObject({ status: false, data: expect.any(Object) });
    expect((await suite.server.request('POST', `${branchUrl(agent, live)}/archive`)).status).toBe(403);

    const archived = await suite.server.request('POST', `${branchUrl(agent, side)}/archive`);
    expect(archived.body).toEqual({ status: true, data: { archived: true } });
    const names = (await suite.server.request('GET', branchUrl(agent))).body.data.branches.map((b: any) => b.branch.name);
    expect(names).toEqual(['Main', 'live-one']);
    expect((await suite.server.request('GET', branchUrl(agent, side))).body.data.branch.status).toBe('archived');

    const writes = [
      await putDraft(suite.server, agent, side, { prompt: 'x' }),
      await publish(suite.server, agent, side),
      await suite.server.request('PATCH', branchUrl(agent, side), { body: { name: 'again' } }),
      await suite.server.request('POST', `${branchUrl(agent, side)}/live`),
      await suite.server.request('DELETE', `${branchUrl(agent, side)}/draft`),
    ];
    expect(writes.map((w) => w.status)).toEqual([403, 403, 403, 403, 403]);
  });

  it('makes a branch live: exactly one live branch, and production serves its head', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    const noCommit = await suite.server.request('POST', `${branchUrl(agent, main)}/live`);
    expect(noCommit.status).toBe(409);
    expect(noCommit.body.error_type).toBe('no_committed_revision');

    await commit(suite.server, agent, main, { prompt: 'Main prompt.' });
    const b1 = (await fork(agent, main, 'b1')).body.data._id;
    const b2 = (await fork(agent, main, 'b2')).body.data._id;
    const b1Head = await commit(suite.server, agent, b1, { prompt: 'B1 prompt.' });
    await commit(suite.server, agent, b2, { prompt: 'B2 prompt.' });

    const liveRes = await suite.server.request('POST', `${branchUrl(agent, b1)}/live`);
    expect(liveRes.status, liveRes.text).toBe(200);
    expect(liveRes.body.data).toMatchObject({ isLive: true, branch: { _id: b1 } });
    await Promise.all([suite.server.request('POST', `${branchUrl(agent, b2)}/live`), suite.server.request('POST', `${branchUrl(agent, main)}/live`), suite.server.request('POST', `${branchUrl(agent, b1)}/live`)]);
    const lives = (await suite.server.request('GET', branchUrl(agent))).body.data.branches.filter((b: any) => b.isLive);
    expect(lives).toHaveLength(1);
    // Archiving a branch while it is being made live: whichever wins, one live branch remains and it is not archived.
    const racer = (await fork(agent, main, 'racer')).body.data._id;
    await Promise.all([suite.server.request('POST', `${branchUrl(agent, racer)}/archive`), suite.server.request('POST', `${branchUrl(agent, racer)}/live`)]);
    const after = (await suite.server.request('GET', branchUrl(agent))).body.data.branches.filter((b: any) => b.isLive);
    expect(after).toHaveLength(1);
    expect(after[0].branch.status).toBe('active');

    await suite.server.request('POST', `${branchUrl(agent, b1)}/live`);
    const served = (await suite.server.request('GET', `${A}/agent/${agent}`)).body.data;
    expect(served).toMatchObject({ prompt: 'B1 prompt.', activeVersionId: b1Head._id });
    const head = (await suite.server.request('GET', `${branchUrl(agent, b1)}/revisions/${b1Head._id}`)).body.data.revision;
    expect(head.isActive).toBe(true);
    expect(head.activatedAt).toMatch(/^\d{4}-/);

    // Publishing on the live branch takes effect in production at once.
    await commit(suite.server, agent, b1, { prompt: 'B1 second.' });
    expect((await suite.server.request('GET', `${A}/agent/${agent}`)).body.data.prompt).toBe('B1 second.');
  });

  it('will not make live a branch whose newest revision is scanning (403)', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    await commit(suite.server, agent, main, { prompt: 'Base.' });
    const other = (await fork(agent, main, 'other')).body.data._id;
    await putDraft(suite.server, agent, other, { prompt: LEAKY_PROMPT });
    expect((await publish(suite.server, agent, other)).status).toBe(202);
    const res = await suite.server.request('POST', `${branchUrl(agent, other)}/live`);
    expect(res.status).toBe(403);
    expect((await suite.server.request('GET', branchUrl(agent, main))).body.data.isLive).toBe(true);
  });
});
