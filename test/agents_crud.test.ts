// Agents: create, list, get, update, archive, delete; validation naming each field; config stored as shared blocks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshStore, startServer, testDialects, type StoreEnv, type TestServer } from './support/server.js';
import { A, commit, createAgent, mainBranchId, putDraft } from './support/agents.js';

describe.each(testDialects())('agents on %s', (dialect) => {
  let store: StoreEnv;
  let server: TestServer;

  beforeAll(async () => {
    store = freshStore(dialect);
    server = await startServer({ store });
  });
  afterAll(async () => {
    await server.stop();
    await store.cleanup();
  });

  it('creates an agent with defaults, a live Main branch and an empty phoneNumber list', async () => {
    const id = await createAgent(server, { name: 'Reception', description: 'Front desk', firstMessage: 'Hello!', timezone: 'Europe/Berlin' });
    expect(id).toMatch(/^[a-f0-9]{24}$/);
    const res = await server.request('GET', `${A}/agent/${id}`);
    expect(res.status).toBe(200);
    const agent = res.body.data;
    expect(agent).toMatchObject({
      _id: id,
      name: 'Reception',
      description: 'Front desk',
      workflowType: 'single_prompt',
      firstMessage: 'Hello!',
      timezone: 'Europe/Berlin',
      allowInterruptions: true,
      allowInboundCall: true,
      archived: false,
      phoneNumber: [],
      activeVersionId: null,
    });
    expect(agent.synthesizer.voiceConfig).toMatchObject({ model: 'waves_lightning_v3_1', voiceId: 'nyah' });
    expect(agent.language).toMatchObject({ default: 'en', supported: ['en'] });
    expect(agent._resolvedConfig).toMatchObject({ firstMessage: 'Hello!', defaultLanguage: 'en', modelName: 'electron', workflowGraph: null });

    const branches = await server.request('GET', `${A}/agent/${id}/branches`);
    expect(branches.body.data.branches).toHaveLength(1);
    expect(branches.body.data.branches[0]).toMatchObject({ isLive: true, hasOpenDraft: false, revisionsCount: 0, headRevisionNumber: null, branch: { name: 'Main', isDefault: true, status: 'active' } });
  });

  it('validates the body and names every wrong field', async () => {
    const res = await server.request('POST', `${A}/agent`, {
      body: { workflowType: 'maze', synthesizer: { speed: 5 }, language: { default: 'en', supported: ['hi'] }, firstMessage: 'x'.repeat(501), toolRefs: ['tool_bad'] },
    });
    expect(res.status).toBe(400);
    expect(res.body.status).toBe(false);
    const errors = (res.body.errors as string[]).join('\n');
    for (const field of ['name', 'workflowType', 'synthesizer.speed', 'language.default', 'firstMessage', 'toolRefs.0']) expect(errors).toContain(`${field}:`);
    expect((await server.request('POST', `${A}/agent`, { body: [1, 2] })).status).toBe(400);
  });

  it('lists agents with paging, search, type filter and sorting', async () => {
    const names = ['Alpha list', 'Beta list', 'Gamma list'];
    for (const name of names) await createAgent(server, { name });
    await createAgent(server, { name: 'Graph list', workflowType: 'workflow_graph' });
    const page = await server.request('GET', `${A}/agent?search=list&offset=2&page=1&sortField=name&sortOrder=asc`);
    expect(page.status).toBe(200);
    expect(page.body.data.total).toBe(4);
    expect(page.body.data.agents.map((a: { name: string }) => a.name)).toEqual(['Alpha list', 'Beta list']);
    const page2 = await server.request('GET', `${A}/agent?search=list&offset=2&page=2&sortField=name&sortOrder=asc`);
    expect(page2.body.data.agents.map((a: { name: string }) => a.name)).toEqual(['Gamma list', 'Graph list']);
    const graphs = await server.request('GET', `${A}/agent?type=workflow_graph&search=list`);
    expect(graphs.body.data.agents.map((a: { name: string }) => a.name)).toEqual(['Graph list']);
    expect(graphs.body.data.agents[0]._resolvedConfig).toBeUndefined();
    expect((await server.request('GET', `${A}/agent?sortField=bogus`)).status).toBe(400);
    expect((await server.request('GET', `${A}/agent?offset=0`)).status).toBe(400);
  });

  it('updates config freely before versioning, then only metadata', async () => {
    const id = await createAgent(server, { name: 'Updatable' });
    const patch = await server.request('PATCH', `${A}/agent/${id}`, { body: { name: 'Renamed', allowInterruptions: false, synthesizer: { speed: 1 } } });
    expect(patch.status, patch.text).toBe(200);
    expect(patch.body.data).toBe(id);
    const read = (await server.request('GET', `${A}/agent/${id}`)).body.data;
    expect(read).toMatchObject({ name: 'Renamed', allowInterruptions: false });
    expect(read.synthesizer).toMatchObject({ speed: 1, consistency: 0.5 });
    expect((await server.request('PATCH', `${A}/agent/${id}`, { body: { synthesizer: { speed: 9 } } })).status).toBe(400);

    const main = await mainBranchId(server, id);
    await commit(server, id, main, { prompt: 'You are the front desk of a dental clinic.' });
    const refused = await server.request('PATCH', `${A}/agent/${id}`, { body: { firstMessage: 'Hi' } });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual(['Agent has versioning enabled. Config changes must be made through drafts.']);
    const meta = await server.request('PATCH', `${A}/agent/${id}`, { body: { name: 'Clinic', avatarUrl: 'https://example.com/a.png' } });
    expect(meta.status).toBe(200);
    const after = (await server.request('GET', `${A}/agent/${id}`)).body.data;
    expect(after).toMatchObject({ name: 'Clinic', avatarUrl: 'https://example.com/a.png', prompt: 'You are the front desk of a dental clinic.' });
    expect(after.activeVersionId).toMatch(/^[a-f0-9]{24}$/);
  });

  it('resolves a draft or a revision with ?draftId= / ?versionId=', async () => {
    const id = await createAgent(server, { name: 'Resolver' });
    const main = await mainBranchId(server, id);
    const rev = await commit(server, id, main, { prompt: 'Version one.' });
    const draft = await putDraft(server, id, main, { prompt: 'Draft two.' });
    const viaDraft = await server.request('GET', `${A}/agent/${id}?draftId=${draft.body.data._id}`);
    expect(viaDraft.body.data).toMatchObject({ prompt: 'Draft two.', _configSource: 'draft' });
    const viaVersion = await server.request('GET', `${A}/agent/${id}?versionId=${rev._id}`);
    expect(viaVersion.body.data).toMatchObject({ prompt: 'Version one.', _configSource: 'version' });
    expect((await server.request('GET', `${A}/agent/${id}`)).body.data.prompt).toBe('Version one.');
    expect((await server.request('GET', `${A}/agent/${id}?versionId=${draft.body.data._id}`)).status).toBe(404);
  });

  it('shares unchanged blocks between revisions', async () => {
    const id = await createAgent(server, { name: 'Blocks' });
    const main = await mainBranchId(server, id);
    const r1 = await commit(server, id, main, { prompt: 'First prompt.' });
    const r2 = await commit(server, id, main, { synthesizer: { speed: 1.5 } });
    expect(Object.keys(r1.blocks).sort()).toEqual(
      ['analytics', 'audio', 'call_handling', 'detection', 'language', 'llm', 'playbooks', 'privacy', 'timeouts', 'voice', 'widget', 'workflow_graph', 'workflow_prompt', 'workflow_tools'].sort(),
    );
    for (const section of Object.keys(r1.blocks)) {
      if (section === 'voice') expect(r2.blocks.voice).not.toBe(r1.blocks.voice);
      else expect(r2.blocks[section], section).toBe(r1.blocks[section]);
    }
  });

  it('archives, unarchives and deletes', async () => {
    const id = await createAgent(server, { name: 'Disposable' });
    const archived = await server.request('DELETE', `${A}/agent/${id}/archive?on=true`);
    expect(archived.body).toEqual({ status: true, data: { message: 'Agent archived' } });
    expect((await server.request('DELETE', `${A}/agent/${id}/archive`)).status).toBe(409);
    const listed = await server.request('GET', `${A}/agent?archived=true&search=Disposable`);
    expect(listed.body.data.total).toBe(1);
    expect((await server.request('DELETE', `${A}/agent/${id}/archive?on=false`)).body.data.message).toBe('Agent unarchived');
    const del = await server.request('DELETE', `${A}/agent/${id}`);
    expect(del.status).toBe(200);
    const gone = await server.request('GET', `${A}/agent/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ status: false, errors: ['No agent found'] });
  });
});
