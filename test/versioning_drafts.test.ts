// The open draft: upsert, read with edit history, discard, expectedRevision conflicts and promptScoreStale.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshStore, startServer, testDialects, type StoreEnv, type TestServer } from './support/server.js';
import { A, commit, createAgent, mainBranchId, publish, putDraft } from './support/agents.js';

describe.each(testDialects())('drafts on %s', (dialect) => {
  let store: StoreEnv;
  let server: TestServer;
  const draftUrl = (agent: string, branch: string) => `${A}/agent/${agent}/branches/${branch}/draft`;

  beforeAll(async () => {
    store = freshStore(dialect);
    server = await startServer({ store });
  });
  afterAll(async () => {
    await server.stop();
    await store.cleanup();
  });

  async function fresh(): Promise<{ agent: string; main: string }> {
    const agent = await createAgent(server);
    return { agent, main: await mainBranchId(server, agent) };
  }

  it('upserts the draft, merging nested fields, and keeps an edit history', async () => {
    const { agent, main } = await fresh();
    const first = await putDraft(server, agent, main, { prompt: 'You are a concierge.', synthesizer: { speed: 1.1 } });
    expect(first.status, first.text).toBe(200);
    const d1 = first.body.data;
    expect(d1).toMatchObject({ status: 'draft', agent, branch: main, revisionNumber: null, versionNumber: null, draftRevision: 1, pendingPublish: null, securityCheck: null });
    expect(d1.draftId).toBe(d1._id);

    const second = await putDraft(server, agent, main, { synthesizer: { voiceConfig: { voiceId: 'amber' } }, defaultVariables: { city: 'Lyon' } });
    expect(second.body.data).toMatchObject({ _id: d1._id, draftRevision: 2 });

    const got = await server.request('GET', draftUrl(agent, main));
    expect(got.status).toBe(200);
    expect(got.body.data.latest).toMatchObject({ _id: d1._id, draftRevision: 2 });
    expect(got.body.data.editCount).toBe(2);
    expect(got.body.data.editHistory.map((e: any) => [e.revision, e.changedSections.sort()])).toEqual([
      [2, ['call_handling', 'voice']],
      [1, ['voice', 'workflow_prompt']],
    ]);
    const resolved = (await server.request('GET', `${A}/agent/${agent}?draftId=${d1._id}`)).body.data;
    expect(resolved.synthesizer).toMatchObject({ speed: 1.1, voiceConfig: { voiceId: 'amber', model: 'waves_lightning_v3_1' } });
    expect(resolved.defaultVariables).toEqual({ city: 'Lyon' });
  });

  it('refuses bodies without recognised fields, internal section names and invalid values (400)', async () => {
    const { agent, main } = await fresh();
    for (const body of [{}, { workflow_prompt: { prompt: 'x' } }, { expectedRevision: 0 }, { unknownField: 1 }]) {
      const res = await putDraft(server, agent, main, body);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual(['No recognized config fields in request body']);
    }
    const bad = await putDraft(server, agent, main, { interruptionBackoffTimer: 11, timezone: 'Mars/Olympus' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.join('\n')).toMatch(/interruptionBackoffTimer:[\s\S]*timezone:/);
    expect((await putDraft(server, agent, main, { prompt: 'x', expectedRevision: -1 })).status).toBe(400);
    expect((await server.request('GET', draftUrl(agent, main))).status).toBe(404);
  });

  it('discards the draft; reading or discarding a missing draft is 404', async () => {
    const { agent, main } = await fresh();
    await putDraft(server, agent, main, { prompt: 'Temporary.' });
    const del = await server.request('DELETE', draftUrl(agent, main));
    expect(del.body).toEqual({ status: true, data: { discarded: true } });
    const again = await server.request('DELETE', draftUrl(agent, main));
    expect(again.status).toBe(404);
    expect(again.body.status).toBe(false);
    expect((await server.request('GET', draftUrl(agent, main))).status).toBe(404);
    const pub = await publish(server, agent, main);
    expect(pub.status).toBe(404);
  });

  it('409 DraftConflictError when a concurrent edit changed the same field since expectedRevision', async () => {
    const { agent, main } = await fresh();
    await putDraft(server, agent, main, { prompt: 'Base prompt.', firstMessage: 'Hello' });
    // Two clients read draftRevision 1; client B writes first.
    await putDraft(server, agent, main, { prompt: 'Edited by B.', expectedRevision: 1 });
    const a = await putDraft(server, agent, main, { prompt: 'Edited by A.', expectedRevision: 1 });
    expect(a.status).toBe(409);
    expect(a.body.status).toBe(false);
    expect(a.body.errors).toEqual(['prompt']);
    expect(a.body.data.conflict).toMatchObject({ expectedRevision: 1, latestRevision: 2 });
    expect(a.body.data.conflict.diffs).toEqual([{ path: 'prompt', yourValue: 'Edited by A.', latestValue: 'Edited by B.' }]);

    // Another field, or the same value, does not conflict.
    const other = await putDraft(server, agent, main, { firstMessage: 'Hi!', expectedRevision: 1 });
    expect(other.status, other.text).toBe(200);
    const same = await putDraft(server, agent, main, { prompt: 'Edited by B.', expectedRevision: 1 });
    expect(same.status).toBe(200);
    // Nested leaves: a sibling leaf is fine, the same leaf conflicts.
    await putDraft(server, agent, main, { synthesizer: { speed: 1.4 } });
    const latest = (await server.request('GET', draftUrl(agent, main))).body.data.latest.draftRevision;
    await putDraft(server, agent, main, { synthesizer: { speed: 0.9 } });
    expect((await putDraft(server, agent, main, { synthesizer: { consistency: 0.2 }, expectedRevision: latest })).status).toBe(200);
    const nested = await putDraft(server, agent, main, { synthesizer: { speed: 1.8 }, expectedRevision: latest });
    expect(nested.status).toBe(409);
    expect(nested.body.errors).toEqual(['synthesizer.speed']);

    // Omitting expectedRevision is last-write-wins.
    const force = await putDraft(server, agent, main, { prompt: 'Edited by A.' });
    expect(force.status).toBe(200);
    expect((await server.request('GET', `${A}/agent/${agent}?draftId=${force.body.data._id}`)).body.data.prompt).toBe('Edited by A.');
  });

  it('409 base_revision_unavailable for a revision the branch does not have', async () => {
    const { agent, main } = await fresh();
    await putDraft(server, agent, main, { prompt: 'One.' });
    const future = await putDraft(server, agent, main, { prompt: 'Two.', expectedRevision: 7 });
    expect(future.status).toBe(409);
    expect(future.body).toMatchObject({ status: false, errors: ['base_revision_unavailable'] });

    // After publish, a draft revision of the old draft is gone from the branch's open draft.
    await putDraft(server, agent, main, { prompt: 'Three.' });
    expect((await publish(server, agent, main)).status).toBe(200);
    await putDraft(server, agent, main, { prompt: 'Four.' });
    const stale = await putDraft(server, agent, main, { prompt: 'Five.', expectedRevision: 1 });
    expect(stale.status).toBe(409);
    expect(stale.body.errors).toEqual(['base_revision_unavailable']);
    // The state the new draft started from is still a valid base.
    const base = await putDraft(server, agent, main, { firstMessage: 'Hey', expectedRevision: 2 });
    expect(base.status, base.text).toBe(200);
  });

  it('marks the prompt score stale once the draft changes what it scored', async () => {
    const { agent, main } = await fresh();
    const rev = await commit(server, agent, main, { prompt: 'You are Ava, a friendly receptionist. Never give medical advice.' });
    expect(rev.promptScore).toMatchObject({ overall_grade: expect.any(String), band: 'lean' });
    expect(rev.promptScoreStale).toBe(false);
    const voiceOnly = await putDraft(server, agent, main, { synthesizer: { speed: 1 } });
    expect(voiceOnly.body.data.promptScore).toEqual(rev.promptScore);
    expect(voiceOnly.body.data.promptScoreStale).toBe(false);
    const promptEdit = await putDraft(server, agent, main, { prompt: 'You are Ava. Keep answers short.' });
    expect(promptEdit.body.data.promptScoreStale).toBe(true);
    const republished = await publish(server, agent, main);
    expect(republished.body.data.revision.promptScoreStale).toBe(false);
    expect(republished.body.data.revision.promptScore.scoredAt >= rev.promptScore.scoredAt).toBe(true);
  });
});
