// Publishing: each row of the spec's revision state table, the scan-failure 409 and its retry, cancel, concurrent publishes.
import { describe, expect, it } from 'vitest';
import { freshStore, startServer, storeSql, testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, agentWithMain, LEAKY_PROMPT, commit, createAgent, mainBranchId, pollRevision, publish, putDraft } from './support/agents.js';

describe.each(testDialects())('publish on %s', (dialect) => {
  const suite = serverForSuite(dialect);
  const revs = (agent: string, branch: string, q = '') => suite.server.request('GET', `${A}/agent/${agent}/branches/${branch}/revisions${q}`);

  it('draft -> committed: a scan within budget answers 200 with the revision (numbers 1, 2, 3)', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    const numbers = [];
    for (const label of ['first', null, 'third']) {
      await putDraft(suite.server, agent, main, { prompt: `Prompt for ${label}.` });
      const res = await suite.server.request('POST', `${A}/agent/${agent}/branches/${main}/draft/publish`, { body: { label } });
      expect(res.status, res.text).toBe(200);
      // `warnings`: this server has no language model for the agent's calls (docs/agent-sessions.md, "Model choice").
      expect(Object.keys(res.body.data).sort()).toEqual(['revision', 'state', 'warnings']);
      const rev = res.body.data.revision;
      expect(res.body.data.state).toBe('committed');
      expect(rev).toMatchObject({ status: 'published', branch: main, label, draftId: null, draftRevision: null, pendingPublish: null, isActive: true });
      expect(rev.securityCheck).toMatchObject({ status: 'passed', reason: null });
      expect(rev.securityCheck.completedAt).toMatch(/^\d{4}-/);
      expect(rev.publishedBy).toBe('bootstrap');
      expect(rev.promptScore.dimensions).toHaveLength(11);
      numbers.push(rev.revisionNumber);
    }
    expect(numbers).toEqual([1, 2, 3]);
    const branch = (await suite.server.request('GET', `${A}/agent/${agent}/branches/${main}`)).body.data;
    expect(branch).toMatchObject({ hasOpenDraft: false, revisionsCount: 3, headRevisionNumber: 3 });
    expect((await publish(suite.server, agent, main)).status).toBe(404);
    const badLabel = await suite.server.request('POST', `${A}/agent/${agent}/branches/${main}/draft/publish`, { body: { label: 7 } });
    expect(badLabel.status).toBe(400);
  });

  it('scan fails -> stays scanning; publishes get 409 until the scan is retried', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    const base = await commit(suite.server, agent, main, { prompt: 'Safe base.' });
    await putDraft(suite.server, agent, main, { prompt: LEAKY_PROMPT });
    const res = await publish(suite.server, agent, main);
    expect(res.status).toBe(202);
    // With the state, what the revision will not do here: this server has no language model for its calls.
    expect(res.body).toEqual({ status: true, data: { state: 'scanning', warnings: [expect.stringContaining('llm_not_configured')] } });

    const newest = (await revs(agent, main, '?limit=1')).body.data.revisions[0];
    expect(newest).toMatchObject({ status: 'draft', revisionNumber: null, pendingPublish: { state: 'active', startedBy: 'bootstrap' } });
    expect(newest.securityCheck.status).toBe('failed');
    expect(newest.securityCheck.reason).toMatch(/card_number at workflow_prompt\.prompt \(card ending 1111\)/);
    expect(JSON.stringify(newest)).not.toContain('4111 1111 1111 1111');

    // A new draft starts from the newest content of the branch (the scanning revision).
    await putDraft(suite.server, agent, main, { synthesizer: { speed: 1 } });
    const blocked = await publish(suite.server, agent, main);
    expect(blocked.status).toBe(409);
    expect(blocked.body).toMatchObject({ status: false, error_type: expect.any(String), errors: [expect.stringContaining(newest._id)] });

    // A scanning revision cannot be restored, nor its branch made live.
    expect((await suite.server.request('POST', `${A}/agent/${agent}/branches/${main}/revisions/${newest._id}/restore`)).status).toBe(403);
    // Production still serves the last commit.
    expect((await suite.server.request('GET', `${A}/agent/${agent}`)).body.data.activeVersionId).toBe(base._id);

    // A plain retry scans again and fails again; acknowledging the finding as intended lets it commit.
    const scanUrl = `${A}/agent/${agent}/branches/${main}/revisions/${newest._id}/scan`;
    expect((await suite.server.request('POST', scanUrl)).status).toBe(202);
    expect((await publish(suite.server, agent, main)).status).toBe(409);
    expect((await suite.server.request('POST', scanUrl, { body: { acknowledge: ['no_such_rule'] } })).status).toBe(400);
    const retried = await suite.server.request('POST', scanUrl, { body: { acknowledge: ['card_number'] } });
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body.data.revision).toMatchObject({ _id: newest._id, status: 'published', revisionNumber: 2, securityCheck: { status: 'passed', acknowledgedRules: ['card_number'] } });
    // The open draft shares the acknowledged prompt block, so it needs no fresh scan.
    const after = await publish(suite.server, agent, main);
    expect(after.status, after.text).toBe(200);
    expect(after.body.data.revision.revisionNumber).toBe(3);
    await putDraft(suite.server, agent, main, { firstMessage: 'Welcome' });
    expect((await publish(suite.server, agent, main)).status).toBe(202);
  });

  it('409 publish_in_progress while another process holds the branch publish lock; it expires', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    const base = await commit(suite.server, agent, main, { prompt: 'Before the lock.' });
    await putDraft(suite.server, agent, main, { prompt: 'Locked out.' });
    const until = new Date(Date.now() + 60_000).toISOString();
    await storeSql(suite.store, 'UPDATE branches SET lock_token = $1, lock_expires_at = $2 WHERE id = $3', ['other-process', until, main]);
    const res = await publish(suite.server, agent, main);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ status: false, error_type: 'publish_in_progress' });
    const restore = await suite.server.request('POST', `${A}/agent/${agent}/branches/${main}/revisions/${base._id}/restore`);
    expect(restore.status).toBe(409);
    expect(restore.body.error_type).toBe('publish_in_progress');
    // A lock left by a crashed process stops counting once it expires.
    await storeSql(suite.store, 'UPDATE branches SET lock_expires_at = $1 WHERE id = $2', [new Date(Date.now() - 1000).toISOString(), main]);
    expect((await publish(suite.server, agent, main)).status).toBe(200);
  });

  it('cancelling an armed publish reopens the revision as the draft', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    await commit(suite.server, agent, main, { prompt: 'Safe base.' });
    await putDraft(suite.server, agent, main, { prompt: LEAKY_PROMPT });
    expect((await publish(suite.server, agent, main)).status).toBe(202);
    const cancel = await suite.server.request('POST', `${A}/agent/${agent}/branches/${main}/draft/publish/cancel`);
    expect(cancel.body).toEqual({ status: true, data: { cancelled: true } });
    expect((await suite.server.request('POST', `${A}/agent/${agent}/branches/${main}/draft/publish/cancel`)).status).toBe(200);
    const draft = (await suite.server.request('GET', `${A}/agent/${agent}/branches/${main}/draft`)).body.data.latest;
    expect(draft).toMatchObject({ status: 'draft', pendingPublish: { state: 'cancelled' }, securityCheck: { status: 'cancelled' } });
    expect((await revs(agent, main)).body.data.total).toBe(1);
    await putDraft(suite.server, agent, main, { prompt: 'Charge the card the caller names.' });
    const res = await publish(suite.server, agent, main);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.revision.revisionNumber).toBe(2);
  });

  it('parallel publishes on one branch never duplicate or skip a revision number', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    const statuses: number[] = [];
    const writer = async (w: number) => {
      for (let i = 0; i < 6; i++) {
        await putDraft(suite.server, agent, main, { prompt: `Writer ${w} edit ${i}.`, synthesizer: { speed: (w + i) / 10 } });
        statuses.push((await publish(suite.server, agent, main)).status);
      }
    };
    // And one draft published by ten callers at once: exactly one commits it.
    await putDraft(suite.server, agent, main, { prompt: 'Shared draft.' });
    const burst = await Promise.all(Array.from({ length: 10 }, () => publish(suite.server, agent, main)));
    expect(burst.filter((r) => r.status === 200)).toHaveLength(1);
    expect(burst.every((r) => [200, 404, 409].includes(r.status))).toBe(true);

    await Promise.all([1, 2, 3, 4, 5].map(writer));
    expect(statuses.every((s) => [200, 404, 409].includes(s))).toBe(true);
    const committed = statuses.filter((s) => s === 200).length + 1;
    const list = (await revs(agent, main, '?limit=100')).body.data;
    expect(list.total).toBe(committed);
    const numbers = list.revisions.map((r: any) => r.revisionNumber);
    expect(numbers).toEqual(Array.from({ length: committed }, (_, i) => committed - i));
    expect(list.revisions.every((r: any) => r.status === 'published')).toBe(true);
  });
});

describe.each(testDialects())('deferred scans on %s (scan budget 0)', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_SCAN_BUDGET_MS: '0' });

  it('draft -> 202 scanning with only state (and warnings); the revision shows in history and commits when the scan completes', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    await putDraft(suite.server, agent, main, { prompt: 'You are a bank assistant.' });
    const res = await publish(suite.server, agent, main, 'deferred');
    expect(res.status).toBe(202);
    // With the state, what the revision will not do here: this server has no language model for its calls.
    expect(res.body).toEqual({ status: true, data: { state: 'scanning', warnings: [expect.stringContaining('llm_not_configured')] } });
    const listed = (await suite.server.request('GET', `${A}/agent/${agent}/branches/${main}/revisions?limit=1`)).body.data.revisions[0];
    expect(listed.label).toBe('deferred');
    const done = await pollRevision(suite.server, agent, main, listed._id, (r) => r.status === 'published');
    expect(done).toMatchObject({ revisionNumber: 1, securityCheck: { status: 'passed' }, pendingPublish: null, isActive: true });
    expect((await suite.server.request('GET', `${A}/agent/${agent}`)).body.data.prompt).toBe('You are a bank assistant.');
  });

  it('content that needs no fresh scan commits synchronously (200) even with a zero budget', async () => {
    const agent = await createAgent(suite.server);
    const main = await mainBranchId(suite.server, agent);
    await putDraft(suite.server, agent, main, { prompt: 'Version A.' });
    const a = (await publish(suite.server, agent, main)).status;
    expect(a).toBe(202);
    const first = (await suite.server.request('GET', `${A}/agent/${agent}/branches/${main}/revisions?limit=1`)).body.data.revisions[0];
    await pollRevision(suite.server, agent, main, first._id, (r) => r.status === 'published');
    await putDraft(suite.server, agent, main, { prompt: 'Version B.' });
    await putDraft(suite.server, agent, main, { prompt: 'Version A.' });
    const again = await publish(suite.server, agent, main);
    expect(again.status, again.text).toBe(200);
    expect(again.body.data).toMatchObject({ state: 'committed', revision: { revisionNumber: 2, status: 'published' } });
  });
});

describe.each(testDialects())('publishes interrupted by a crash, on %s', (dialect) => {
  it('an armed draft left by a crashed publish cannot be edited until the publish is cancelled', async () => {
    const store = freshStore(dialect);
    const server = await startServer({ store });
    try {
      const { agent, main } = await agentWithMain(server);
      const draft = (await putDraft(server, agent, main, { prompt: 'Being published.' })).body.data;
      const pending = JSON.stringify({ state: 'active', startedBy: 'other-process', startedAt: new Date().toISOString() });
      await storeSql(store, 'UPDATE revisions SET pending_publish = $1 WHERE id = $2', [pending, draft._id]);
      for (const res of [await putDraft(server, agent, main, { prompt: 'Sneaked in.' }), await server.request('DELETE', `${A}/agent/${agent}/branches/${main}/draft`)]) {
        expect(res.status).toBe(409);
        expect(res.body.error_type).toBe('publish_in_progress');
      }
      expect((await server.request('POST', `${A}/agent/${agent}/branches/${main}/draft/publish/cancel`)).status).toBe(200);
      expect((await putDraft(server, agent, main, { prompt: 'Edited after cancel.' })).status).toBe(200);
    } finally {
      await server.stop();
      await store.cleanup();
    }
  });

  it('a deferred scan that never settled is resumed at start-up and commits', async () => {
    const store = freshStore(dialect);
    let server = await startServer({ store });
    try {
      const { agent, main } = await agentWithMain(server);
      const draft = (await putDraft(server, agent, main, { prompt: 'Scanned after a restart.' })).body.data;
      await server.stop();
      // The state a crash leaves between the 202 answer and the end of the background scan.
      const now = new Date().toISOString();
      await storeSql(store, 'UPDATE revisions SET pending_publish = $1, security_check = $2, listed_at = $3, draft_id = NULL WHERE id = $4', [
        JSON.stringify({ state: 'active', startedBy: 'bootstrap', startedAt: now }),
        JSON.stringify({ status: 'pending', reason: null, triggeredAt: now, completedAt: null }),
        now,
        draft._id,
      ]);
      await storeSql(store, 'UPDATE branches SET open_draft_id = NULL WHERE id = $1', [main]);
      server = await startServer({ store });
      await server.waitForLog(/"resumed":1/);
      const done = await pollRevision(server, agent, main, draft._id, (r) => r.status === 'published');
      expect(done).toMatchObject({ revisionNumber: 1, securityCheck: { status: 'passed' }, isActive: true });
    } finally {
      await server.stop();
      await store.cleanup();
    }
  });
});
