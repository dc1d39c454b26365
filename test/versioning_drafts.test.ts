// The open draft: upsert, read with edit history, discard, expectedRevision conflicts and promptScoreStale.
import { describe, expect, it } from 'vitest';
import { testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, agentWithMain, commit, publish, putDraft } from './support/agents.js';

describe.each(testDialects())('drafts on %s', (dialect) => {
  const suite = serverForSuite(dialect);
  const draftUrl = (agent: string, branch: string) => `${A}/agent/${agent}/branches/${branch}/draft`;

  it('upserts the draft, merging nested fields, and keeps an edit history', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    const first = await putDraft(suite.server, agent, main, { prompt: 'You are a concierge.', synthesizer: { speed: 1.1 } });
    expect(first.status, first.text).toBe(200);
    const d1 = first.body.data;
    expect(d1).toMatchObject({ status: 'draft', agent, branch: main, revisionNumber: null, versionNumber: null, draftRevision: 1, pendingPublish: null, securityCheck: null });
    expect(d1.draftId).toBe(d1._id);

    const second = await putDraft(suite.server, agent, main, { synthesizer: { voiceConfig: { voiceId: 'amber' } }, defaultVariables: { city: 'Lyon' } });
    expect(second.body.data).toMatchObject({ _id: d1._id, draftRevision: 2 });

    const got = await suite.server.request('GET', draftUrl(agent, main));
    expect(got.status).toBe(200);
    expect(got.body.data.latest).toMatchObject({ _id: d1._id, draftRevision: 2 });
    expect(got.body.data.editCount).toBe(2);
    expect(got.body.data.editHistory.map((e: any) => [e.revision, e.changedSections.sort()])).toEqual([
      [2, ['call_handling', 'voice']],
      [1, ['voice', 'workflow_prompt']],
    ]);
    const resolved = (await suite.server.request('GET', `${A}/agent/${agent}?draftId=${d1._id}`)).body.data;
    expect(resolved.synthesizer).toMatchObject({ speed: 1.1, voiceConfig: { voiceId: 'amber', model: 'waves_lightning_v3_1' } });
    expect(resolved.defaultVariables).toEqual({ city: 'Lyon' });
  });

  it('refuses bodies without recognised fields, internal section names and invalid values (400)', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    for (const body of [{}, { workflow_prompt: { prompt: 'x' } }, { expectedRevision: 0 }, { unknownField: 1 }]) {
      const res = await putDraft(suite.server, agent, main, body);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual(['No recognized config fields in request body']);
    }
    const bad = await putDraft(suite.server, agent, main, { interruptionBackoffTimer: 11, timezone: 'Mars/Olympus' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.join('\n')).toMatch(/interruptionBackoffTimer:[\s\S]*timezone:/);
    expect((await putDraft(suite.server, agent, main, { prompt: 'x', expectedRevision: -1 })).status).toBe(400);
    expect((await suite.server.request('GET', draftUrl(agent, main))).status).toBe(404);
  });

  it('discards the draft; reading or discarding a missing draft is 404', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    await putDraft(suite.server, agent, main, { prompt: 'Temporary.' });
    const del = await suite.server.request('DELETE', draftUrl(agent, main));
    expect(del.body).toEqual({ status: true, data: { discarded: true } });
    const again = await suite.server.request('DELETE', draftUrl(agent, main));
    expect(again.status).toBe(404);
    expect(again.body.status).toBe(false);
    expect((await suite.server.request('GET', draftUrl(agent, main))).status).toBe(404);
    const pub = await publish(suite.server, agent, main);
    expect(pub.status).toBe(404);
  });

  it('409 DraftConflictError when a concurrent edit changed the same field since expectedRevision', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    await putDraft(suite.server, agent, main, { prompt: 'Base prompt.', firstMessage: 'Hello' });
    // Two clients read draftRevision 1; client B writes first.
    await putDraft(suite.server, agent, main, { prompt: 'Edited by B.', expectedRevision: 1 });
    const a = await putDraft(suite.server, agent, main, { prompt: 'Edited by A.', expectedRevision: 1 });
    expect(a.status).toBe(409);
    expect(a.body.status).toBe(false);
    expect(a.body.errors).toEqual(['prompt']);
    expect(a.body.data.conflict).toMatchObject({ expectedRevision: 1, latestRevision: 2 });
    expect(a.body.data.conflict.diffs).toEqual([{ path: 'prompt', yourValue: 'Edited by A.', latestValue: 'Edited by B.' }]);

    // Another field, or the same value, does not conflict.
    const other = await putDraft(suite.server, agent, main, { firstMessage: 'Hi!', expectedRevision: 1 });
    expect(other.status, other.text).toBe(200);
    const same = await putDraft(suite.server, agent, main, { prompt: 'Edited by B.', expectedRevision: 1 });
    expect(same.status).toBe(200);
    // Nested leaves: a sibling leaf is fine, the same leaf conflicts.
    await putDraft(suite.server, agent, main, { synthesizer: { speed: 1.4 } });
    const latest = (await suite.server.request('GET', draftUrl(agent, main))).body.data.latest.draftRevision;
    await putDraft(suite.server, agent, main, { synthesizer: { speed: 0.9 } });
    expect((await putDraft(suite.server, agent, main, { synthesizer: { consistency: 0.2 }, expectedRevision: latest })).status).toBe(200);
    const nested = await putDraft(suite.server, agent, main, { synthesizer: { speed: 1.8 }, expectedRevision: latest });
    expect(nested.status).toBe(409);
    expect(nested.body.errors).toEqual(['synthesizer.speed']);

    // Omitting expectedRevision is last-write-wins.
    const force = await putDraft(suite.server, agent, main, { prompt: 'Edited by A.' });
    expect(force.status).toBe(200);
    expect((await suite.server.request('GET', `${A}/agent/${agent}?draftId=${force.body.data._id}`)).body.data.prompt).toBe('Edited by A.');
  });

  it('409 base_revision_unavailable for a revision the branch does not have', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    await putDraft(suite.server, agent, main, { prompt: 'One.' });
    const future = await putDraft(suite.server, agent, main, { prompt: 'Two.', expectedRevision: 7 });
    expect(future.status).toBe(409);
    expect(future.body).toMatchObject({ status: false, errors: ['base_revision_unavailable'] });

    // After publish, a draft revision of the old draft is gone from the branch's open draft.
    await putDraft(suite.server, agent, main, { prompt: 'Three.' });
    expect((await publish(suite.server, agent, main)).status).toBe(200);
    await putDraft(suite.server, agent, main, { prompt: 'Four.' });
    const stale = await putDraft(suite.server, agent, main, { prompt: 'Five.', expectedRevision: 1 });
    expect(stale.status).toBe(409);
    expect(stale.body.errors).toEqual(['base_revision_unavailable']);
    // The state the new draft started from is still a valid base.
    const base = await putDraft(suite.server, agent, main, { firstMessage: 'Hey', expectedRevision: 2 });
    expect(base.status, base.text).toBe(200);
  });

  it('marks the prompt score stale once the draft changes what it scored', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    const rev = await commit(suite.server, agent, main, { prompt: 'You are Ava, a friendly receptionist. Never give medical advice.' });
    expect(rev.promptScore).toMatchObject({ overall_grade: expect.any(String), band: 'lean' });
    expect(rev.promptScoreStale).toBe(false);
    const voiceOnly = await putDraft(suite.server, agent, main, { synthesizer: { speed: 1 } });
    expect(voiceOnly.body.data.promptScore).toEqual(rev.promptScore);
    expect(voiceOnly.body.data.promptScoreStale).toBe(false);
    const promptEdit = await putDraft(suite.server, agent, main, { prompt: 'You are Ava. Keep answers short.' });
    expect(promptEdit.body.data.promptScoreStale).toBe(true);
    const republished = await publish(suite.server, agent, main);
    expect(republished.body.data.revision.promptScoreStale).toBe(false);
    expect(republished.body.data.revision.promptScore.scoredAt >= rev.promptScore.scoredAt).toBe(true);
  });
});
