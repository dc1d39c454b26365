// Calls and tokens: register-call and test-call wct_ tokens (hashed, single use, pinned config), call records, secrets vault.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { createOrgKey, freshStore, startServer, storeSql, testDialects, type StoreEnv, withStore } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, LEAKY_PROMPT, agentWithMain, commit, createAgent, publish, putDraft } from './support/agents.js';
import { openStore } from '../control-plane/store/db.js';
import { consumeCallToken } from '../control-plane/calls/call-tokens.js';
import { callTargetOfClaims, resolveCallConfig } from '../control-plane/calls/call-config.js';
import { createCall, newCallId, updateCall } from '../control-plane/calls/calls.js';
import { SecretVault, parseMasterKey } from '../control-plane/secrets/vault.js';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const TOKEN = /^wct_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function orgOf(store: StoreEnv, agentId: string): Promise<string> {
  return (await storeSql(store, 'SELECT org_id FROM agents WHERE id = $1', [agentId]))[0]!.org_id as string;
}

describe.each(testDialects())('calls and tokens on %s', (dialect) => {
  const suite = serverForSuite(dialect);
  const req = (method: string, p: string, opts: Parameters<typeof suite.server.request>[2] = {}) => suite.server.request(method, `${A}${p}`, opts);
  const consume = (token: string) => withStore(suite.store, (db) => consumeCallToken(db, token));

  it('register-call mints a single-use wct_ token stored only as its hash; reserved variables are stripped', async () => {
    const agent = await createAgent(suite.server);
    const res = await req('POST', '/conversation/register-call', {
      body: { agent_id: agent, mode: 'chat', variables: { customer_name: 'Rahul', visits: 3, vip: true, call_id: 'spoofed', timezone: 'UTC' } },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({ status: true, data: { access_token: expect.stringMatching(TOKEN), expires_in: 30, sample_rate: 24000 } });
    const token = res.body.data.access_token as string;

    const rows = await storeSql(suite.store, 'SELECT * FROM call_tokens WHERE agent_id = $1', [agent]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.token_hash).toBe(sha256(token));
    expect(JSON.stringify(rows)).not.toContain(token.slice(4));
    expect(JSON.parse(rows[0]!.variables as string)).toEqual({ customer_name: 'Rahul', visits: 3, vip: true });

    const claims = await consume(token);
    expect(claims).toMatchObject({ agentId: agent, mode: 'chat', configSource: 'live', branchId: null, revisionId: null, sampleRate: 24000, variables: { customer_name: 'Rahul', visits: 3, vip: true } });
    expect(await consume(token)).toBeNull();
    expect((await storeSql(suite.store, 'SELECT used_at FROM call_tokens WHERE token_hash = $1', [sha256(token)]))[0]!.used_at).toBeTruthy();

    const dflt = await req('POST', '/conversation/register-call', { body: { agent_id: agent } });
    expect(dflt.status).toBe(201);
    expect(await consume(dflt.body.data.access_token)).toMatchObject({ mode: 'webcall', variables: {} });
  });

  it('register-call refuses bad input naming each field, unknown (404), foreign (403) and archived (400) agents', async () => {
    const agent = await createAgent(suite.server);
    const bad = await req('POST', '/conversation/register-call', {
      body: { mode: 'video', variables: { ok: 'x', nested: { a: 1 }, '1bad': 'y', list: [1] } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.status).toBe(false);
    const errors = (bad.body.errors as string[]).join('\n');
    for (const field of ['agent_id', 'mode', 'variables.nested', 'variables.1bad', 'variables.list']) expect(errors).toContain(field);
    expect(errors).not.toContain('variables.ok');

    for (const variables of [[1, 2], 'text', null, 7]) {
      const res = await req('POST', '/conversation/register-call', { body: { agent_id: agent, variables } });
      expect(res.status, JSON.stringify(variables)).toBe(400);
      expect(res.body.errors[0]).toMatch(/^variables:/);
    }
    for (const body of [[agent], 'x']) expect((await req('POST', '/conversation/register-call', { body })).status).toBe(400);
    const malformed = await req('POST', '/conversation/register-call', { raw: '{"agent_id":', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);

    const unknown = await req('POST', '/conversation/register-call', { body: { agent_id: '0123456789abcdef01234567' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ status: false, errors: ['No agent found'] });

    const otherKey = await createOrgKey(suite.store, 'other', 'other-org');
    const foreign = await req('POST', '/conversation/register-call', { body: { agent_id: agent }, key: otherKey });
    expect(foreign.status).toBe(403);
    expect(foreign.body.status).toBe(false);

    expect((await req('DELETE', `/agent/${agent}/archive`)).status).toBe(200);
    const archived = await req('POST', '/conversation/register-call', { body: { agent_id: agent } });
    expect(archived.status).toBe(400);
    expect(archived.body.errors).toEqual(['Agent is archived']);
    expect((await req('POST', '/conversation/register-call', { body: { agent_id: agent }, key: null })).status).toBe(401);
  });

  it('a token redeems exactly once under concurrency, and not after it expires; old rows are pruned', async () => {
    const agent = await createAgent(suite.server);
    const mint = async () => (await req('POST', '/conversation/register-call', { body: { agent_id: agent } })).body.data.access_token as string;
    const token = await mint();
    // Two separate store connections (as two server processes would have) racing for one token.
    const a = await openStore({ dataDir: suite.store.dataDir, databaseUrl: suite.store.env.DATABASE_URL, pgSchema: suite.store.env.DATABASE_SCHEMA });
    const b = await openStore({ dataDir: suite.store.dataDir, databaseUrl: suite.store.env.DATABASE_URL, pgSchema: suite.store.env.DATABASE_SCHEMA });
    try {
      const results = await Promise.all([a.db, b.db, a.db, b.db, a.db, b.db].map((db) => consumeCallToken(db, token)));
      expect(results.filter((r) => r !== null)).toHaveLength(1);
      const pair = await Promise.all([a.db, b.db].map((db) => consumeCallToken(db, token)));
      expect(pair).toEqual([null, null]);
    } finally {
      await a.close();
      await b.close();
    }

    const expiring = await mint();
    await storeSql(suite.store, 'UPDATE call_tokens SET expires_at = $1 WHERE token_hash = $2', [new Date(Date.now() - 1000).toISOString(), sha256(expiring)]);
    expect(await consume(expiring)).toBeNull();
    expect(await consume('wct_00000000-0000-4000-8000-000000000000')).toBeNull();
    expect(await consume('sk_not_a_call_token')).toBeNull();

    const orgId = await orgOf(suite.store, agent);
    const old = new Date(Date.now() - 2 * 3600_000).toISOString();
    await storeSql(
      suite.store,
      "INSERT INTO call_tokens (token_hash, org_id, agent_id, mode, variables, config_source, branch_id, revision_id, sample_rate, expires_at, used_at, created_at) VALUES ($1, $2, $3, 'webcall', '{}', 'live', NULL, NULL, 24000, $4, NULL, $5)",
      ['f'.repeat(64), orgId, agent, old, old],
    );
    await mint();
    expect(await storeSql(suite.store, 'SELECT token_hash FROM call_tokens WHERE token_hash = $1', ['f'.repeat(64)])).toEqual([]);
    // The fresh used/expired tokens above are still kept (less than an hour old).
    expect((await storeSql(suite.store, 'SELECT token_hash FROM call_tokens WHERE token_hash = $1', [sha256(token)])).length).toBe(1);
  });

  it('test calls pin the open draft, a chosen revision or the branch head, and pass during a config freeze', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    const actor = { orgId: await orgOf(suite.store, agent), name: 'test' };
    const tc = (branch: string, body?: unknown) => req('POST', `/agent/${agent}/branches/${branch}/test-call`, body === undefined ? {} : { body });
    const promptOf = (token: string) =>
      withStore(suite.store, async (db) => {
        const claims = await consumeCallToken(db, token);
        expect(claims).not.toBeNull();
        const resolved = await resolveCallConfig(db, actor, agent, callTargetOfClaims(claims!));
        return { claims: claims!, prompt: resolved.config.prompt, source: resolved.configSource };
      });

    // Before the first commit: the unversioned base configuration.
    await req('PATCH', `/agent/${agent}`, { body: { prompt: 'Base prompt.' } });
    const unversioned = await tc(main);
    expect(unversioned.status, unversioned.text).toBe(200);
    expect(unversioned.body.data).toMatchObject({ target: 'live', mode: 'webcall', revisionId: null, branchId: main });
    expect((await promptOf(unversioned.body.data.access_token)).prompt).toBe('Base prompt.');

    const r1 = await commit(suite.server, agent, main, { prompt: 'Revision one.' }, 'one');
    await commit(suite.server, agent, main, { prompt: 'Revision two.' }, 'two');
    const draft = (await putDraft(suite.server, agent, main, { prompt: 'Draft prompt.' })).body.data;

    const freeze = await req('POST', `/agent/${agent}/config-freeze`, { body: { reason: 'launch' } });
    expect(freeze.status).toBe(200);
    expect((await putDraft(suite.server, agent, main, { prompt: 'blocked' })).status).toBe(423);

    const onDraft = await tc(main, { includeDraft: true, mode: 'chat', variables: { name: 'Ava' } });
    expect(onDraft.status, onDraft.text).toBe(200);
    const callId = onDraft.body.data.callId as string;
    expect(onDraft.body.data).toEqual({
      conversationId: callId,
      callId: expect.stringMatching(/^CALL-\d{13}-[0-9a-f]{6}$/),
      token: onDraft.body.data.access_token,
      roomName: callId,
      host: `ws://127.0.0.1:${suite.server.port}/atoms/v1/agent/connect`,
      access_token: expect.stringMatching(TOKEN),
      expires_in: 30,
      sample_rate: 24000,
      mode: 'chat',
      target: 'draft',
      revisionId: draft._id,
      draftId: draft._id,
      branchId: main,
    });
    const d = await promptOf(onDraft.body.data.access_token);
    expect(d).toMatchObject({ prompt: 'Draft prompt.', source: 'draft', claims: { configSource: 'draft', branchId: main, revisionId: draft._id, callId, variables: { name: 'Ava' } } });
    // Without includeDraft (or with false) the branch head runs, even while a draft is open.
    for (const body of [undefined, { includeDraft: false }]) {
      const onHead = await tc(main, body);
      expect(onHead.status, onHead.text).toBe(200);
      expect(onHead.body.data).toMatchObject({ target: 'revision', draftId: null, mode: 'webcall' });
      expect((await promptOf(onHead.body.data.access_token)).prompt).toBe('Revision two.');
    }

    const onRev = await tc(main, { target: 'revision', revisionId: r1._id, mode: 'webcall' });
    expect(onRev.status, onRev.text).toBe(200);
    expect(onRev.body.data).toMatchObject({ target: 'revision', revisionId: r1._id, draftId: null, mode: 'webcall' });
    expect(await promptOf(onRev.body.data.access_token)).toMatchObject({ prompt: 'Revision one.', source: 'revision', claims: { mode: 'webcall', revisionId: r1._id } });
    // revisionId alone implies target revision.
    expect((await tc(main, { revisionId: r1._id })).body.data.target).toBe('revision');

    expect((await req('POST', '/conversation/register-call', { body: { agent_id: agent } })).status).toBe(201);
    expect((await req('DELETE', `/agent/${agent}/config-freeze`)).status).toBe(200);

    // A fork without a draft: its head revision.
    const fork = (await req('POST', `/agent/${agent}/branches`, { body: { sourceBranchId: main, name: 'fork' } })).body.data._id as string;
    const onHead = await tc(fork);
    expect(onHead.status, onHead.text).toBe(200);
    expect(onHead.body.data).toMatchObject({ target: 'revision', branchId: fork });
    expect((await promptOf(onHead.body.data.access_token)).prompt).toBe('Revision two.');

    // The pinned draft is that draft: once discarded, the token's config no longer resolves.
    const pinned = (await tc(main, { includeDraft: true })).body.data.access_token as string;
    expect((await req('DELETE', `/agent/${agent}/branches/${main}/draft`)).status).toBe(200);
    await expect(promptOf(pinned)).rejects.toMatchObject({ status: 404 });

    const bad = await tc(main, { target: 'branch', revisionId: 12, mode: 'video', variables: { x: { y: 1 } } });
    expect(bad.status).toBe(400);
    const errors = (bad.body.errors as string[]).join('\n');
    for (const field of ['target', 'revisionId', 'mode', 'variables.x']) expect(errors).toContain(field);
    expect((await tc(main, { target: 'revision' })).body.errors).toEqual(['revisionId: required with target revision']);
    expect((await tc(main, { target: 'draft' })).body).toEqual({ status: false, errors: ['No open draft on this branch'] });
    expect((await tc('0123456789abcdef01234567')).status).toBe(404);
    expect((await tc(main, { revisionId: '0123456789abcdef01234567' })).status).toBe(404);
    // A commit of the fork does not belong to Main.
    const forkRev = await commit(suite.server, agent, fork, { prompt: 'Fork only.' });
    const wrong = await tc(main, { revisionId: forkRev._id });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors[0]).toContain('revisionId');
    const otherKey = await createOrgKey(suite.store, 'other2', 'other-org-2');
    expect((await req('POST', `/agent/${agent}/branches/${main}/test-call`, { key: otherKey })).status).toBe(403);
  });

  it('refuses a test call on a revision still waiting for its scan with 409 source_scanning', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    await commit(suite.server, agent, main, { prompt: 'Safe.' });
    await putDraft(suite.server, agent, main, { prompt: LEAKY_PROMPT });
    expect((await publish(suite.server, agent, main)).status).toBe(202);
    const scanning = (await req('GET', `/agent/${agent}/branches/${main}/revisions?limit=1`)).body.data.revisions[0];
    expect(scanning.status).toBe('draft');
    const res = await req('POST', `/agent/${agent}/branches/${main}/test-call`, { body: { revisionId: scanning._id } });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ status: false, error_type: 'source_scanning' });
    expect((await req('POST', `/agent/${agent}/versions/${scanning._id}/test-call`, { body: {} })).body.error_type).toBe('source_scanning');
    // The default target is still the committed head.
    expect((await req('POST', `/agent/${agent}/branches/${main}/test-call`)).body.data.target).toBe('revision');
  });

  it('keeps the v1 draft and version test-call endpoints, with Deprecation, minting the same pinned tokens', async () => {
    const { agent, main } = await agentWithMain(suite.server);
    const rev = await commit(suite.server, agent, main, { prompt: 'Version prompt.' });
    const draft = (await putDraft(suite.server, agent, main, { prompt: 'V1 draft.' })).body.data;
    await req('POST', `/agent/${agent}/config-freeze`, { body: {} });

    const onDraft = await req('POST', `/agent/${agent}/drafts/${draft._id}/test-call`, { body: { mode: 'chat' } });
    expect(onDraft.status, onDraft.text).toBe(201);
    expect(onDraft.headers.get('deprecation')).toBe('true');
    expect(onDraft.body.data).toMatchObject({ access_token: expect.stringMatching(TOKEN), token: onDraft.body.data.access_token, target: 'draft', draftId: draft._id, mode: 'chat' });
    expect(onDraft.body.data).toMatchObject({ conversationId: onDraft.body.data.callId, roomName: onDraft.body.data.callId, host: `ws://127.0.0.1:${suite.server.port}/atoms/v1/agent/connect` });
    const draftClaims = await consume(onDraft.body.data.access_token);
    expect(draftClaims).toMatchObject({ configSource: 'draft', revisionId: draft._id, branchId: main, mode: 'chat' });

    const onVersion = await req('POST', `/agent/${agent}/versions/${rev._id}/test-call`, { body: {} });
    expect(onVersion.status, onVersion.text).toBe(201);
    expect(onVersion.headers.get('deprecation')).toBe('true');
    expect(onVersion.body.data).toMatchObject({ target: 'revision', revisionId: rev._id, mode: 'webcall' });
    expect(await consume(onVersion.body.data.access_token)).toMatchObject({ configSource: 'revision', revisionId: rev._id, mode: 'webcall' });

    expect((await req('POST', `/agent/${agent}/drafts/${rev._id}/test-call`, { body: {} })).status).toBe(404);
    expect((await req('POST', `/agent/${agent}/versions/${draft._id}/test-call`, { body: {} })).status).toBe(404);
    const tel = await req('POST', `/agent/${agent}/versions/${rev._id}/test-call`, { body: { mode: 'telephony', toPhone: 5 } });
    expect(tel.status).toBe(400);
    expect(tel.body.errors).toEqual(['toPhone: must be an E.164 phone number such as +15550100']);
  });

  it('GET /conversation/{id} reads a call record in the wire shape; unknown 404, another organization 403', async () => {
    const agent = await createAgent(suite.server, { name: 'Caller' });
    const orgId = await orgOf(suite.store, agent);
    const unknown = await req('GET', '/conversation/CALL-1737000000000-abc123');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ status: false, errors: ['Conversation not found'] });

    const turns = [
      { turn: 1, e2eMs: 700, userEnd: '2026-01-01T00:00:01.000Z', botStart: '2026-01-01T00:00:01.700Z', sttMs: 120 },
      { turn: 2, e2eMs: 500, sttMs: 90 },
      { turn: 3, e2eMs: 900 },
      { turn: 4, e2eMs: null },
      { turn: 5, e2eMs: 600 },
    ];
    const { callId, first } = await withStore(suite.store, async (db) => {
      const first = await createCall(db, { orgId, agentId: agent, configSource: 'live', type: 'webcall', mode: 'chat', isTest: false, variables: {}, voiceConfig: {} });
      // Newest first: the second call must be created in a later millisecond.
      await new Promise((r) => setTimeout(r, 5));
      const announced = newCallId();
      const created = await createCall(db, {
        callId: announced,
        orgId,
        agentId: agent,
        branchId: null,
        revisionId: null,
        configSource: 'live',
        type: 'webcall',
        mode: 'webcall',
        isTest: true,
        variables: { customer_name: 'Rahul' },
        voiceConfig: { model: 'flite', voiceId: 'kal', gender: 'male' },
        slmModel: 'local-llm',
      });
      expect(created.id).toMatch(/^[a-f\d]{24}$/);
      expect(created.callId).toBe(announced);
      expect(first.callId).toMatch(/^CALL-\d{13}-[0-9a-f]{6}$/);
      const updated = await updateCall(db, created.callId, {
        status: 'completed',
        transcript: [
          { role: 'agent', content: 'Hello!', timestamp: '2026-01-01T00:00:00.000Z' },
          { role: 'user', content: 'Hi there', timestamp: '2026-01-01T00:00:01.000Z', interrupted: true },
        ],
        metrics: { turns },
        endReason: 'client_requested',
        endedAt: '2026-01-01T00:00:10.000Z',
        durationS: 10.5,
      });
      expect(updated).toBe(true);
      expect(await updateCall(db, 'CALL-0000000000000-000000', { status: 'failed' })).toBe(false);
      // Transitions are ms from the call's start.
      await db.updateTable('calls').set({ started_at: '2026-01-01T00:00:00.000Z' }).where('call_id', '=', created.callId).execute();
      return { callId: created.callId, first };
    });

    const res = await req('GET', `/conversation/${callId}`);
    expect(res.status, res.text).toBe(200);
    const data = res.body.data;
    expect(data).toMatchObject({
      callId,
      agent: { _id: agent, name: 'Caller', workflowType: 'single_prompt' },
      status: 'completed',
      duration: 10.5,
      recordingUrl: null,
      recordingDualUrl: null,
      from: null,
      to: null,
      type: 'webcall',
      transcript: [
        { role: 'agent', content: 'Hello!', timestamp: '2026-01-01T00:00:00.000Z' },
        { role: 'user', content: 'Hi there', timestamp: '2026-01-01T00:00:01.000Z' },
      ],
      variables: { customer_name: 'Rahul' },
      events: [],
      callCost: 0,
      callFailureReason: null,
      retryCallId: null,
      postCallAnalytics: null,
      turnMetrics: turns,
      voiceConfigUsed: { model: 'flite', voiceId: 'kal', gender: 'male' },
      slmModelUsed: 'local-llm',
      mode: 'webcall',
      isTest: true,
      configSource: 'live',
      revisionId: null,
      endReason: 'client_requested',
      endedAt: '2026-01-01T00:00:10.000Z',
    });
    expect(data._id).toMatch(/^[a-f\d]{24}$/);
    expect(data.agent).not.toHaveProperty('prompt');
    expect(data.turnLatencyMetrics).toMatchObject({ turns: 4, avgLatency: 675, medianLatency: 650, minLatency: 500, maxLatency: 900, latencies: [700, 500, 900, 600] });
    expect(data.turnLatencyMetrics.transitions[0]).toEqual({ turn: 1, user_end: 1000, bot_start: 1700, latency: 700 });
    expect(data.turnLatencyMetrics.transitions[1]).toEqual({ turn: 2, user_end: null, bot_start: null, latency: 500 });
    expect(typeof data.turnLatencyMetrics.processedAt).toBe('string');

    const plain = (await req('GET', `/conversation/${first.callId}`)).body.data;
    expect(plain).toMatchObject({ status: 'in_progress', transcript: [], turnLatencyMetrics: null, turnMetrics: null, duration: null, isTest: false });

    const list = await req('GET', `/conversation?agentId=${agent}`);
    expect(list.status).toBe(200);
    expect(list.body.data.pagination).toEqual({ total: 2, page: 1, limit: 20, hasMore: false, totalPages: 1 });
    expect(list.body.data.logs.map((c: any) => c.callId)).toEqual([callId, first.callId]);
    const paged = await req('GET', `/conversation?agentId=${agent}&page=2&limit=1`);
    expect(paged.body.data.logs.map((c: any) => c.callId)).toEqual([first.callId]);
    expect(paged.body.data.pagination).toEqual({ total: 2, page: 2, limit: 1, hasMore: false, totalPages: 2 });
    for (const q of ['limit=0', 'limit=101', 'page=0', 'page=x']) expect((await req('GET', `/conversation?${q}`)).status, q).toBe(400);
    expect((await req('GET', '/conversation?agentId=0123456789abcdef01234567')).status).toBe(404);

    const otherKey = await createOrgKey(suite.store, 'other3', 'other-org-3');
    const foreign = await req('GET', `/conversation/${callId}`, { key: otherKey });
    expect(foreign.status).toBe(403);
    expect(foreign.body.status).toBe(false);
    expect((await req('GET', '/conversation', { key: otherKey })).body.data).toEqual({ logs: [], pagination: { total: 0, page: 1, limit: 20, hasMore: false, totalPages: 0 } });
    expect((await req('GET', `/conversation?agentId=${agent}`, { key: otherKey })).status).toBe(403);
  });

  it('secrets vault: create, list, rotate and delete over HTTP; values never come back nor sit in the store in clear', async () => {
    const value = 'sv-Very-Secret-Value-7f3a9c';
    const rotated = 'sv-Rotated-Secret-Value-0b1d2e';
    const bodies: string[] = [];
    const call = async (method: string, p: string, opts: Parameters<typeof suite.server.request>[2] = {}) => {
      const res = await req(method, p, opts);
      bodies.push(res.text);
      return res;
    };

    const created = await call('POST', '/secret', { body: { name: 'crm.api-key', value } });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({ status: true, data: { name: 'crm.api-key', createdAt: expect.any(String) } });
    const dup = await call('POST', '/secret', { body: { name: 'crm.api-key', value: 'other' } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ status: false, error_type: 'secret_name_exists' });

    const badName = await call('POST', '/secret', { body: { name: 'has space', value } });
    expect(badName.status).toBe(400);
    expect(badName.body.errors[0]).toMatch(/^name:/);
    for (const v of ['', 5, 'x'.repeat(8 * 1024 + 1), undefined]) {
      const res = await call('POST', '/secret', { body: { name: 'other', value: v } });
      expect(res.status).toBe(400);
      expect(res.body.errors[0]).toMatch(/^value:/);
    }
    expect((await call('POST', '/secret', { body: { name: 'max', value: 'x'.repeat(8 * 1024) } })).status).toBe(201);
    expect((await call('POST', '/secret', { body: [1] })).status).toBe(400);

    const list = await call('GET', '/secret');
    expect(list.status).toBe(200);
    expect(list.body.data.secrets.map((s: any) => s.name)).toEqual(['crm.api-key', 'max']);
    expect(Object.keys(list.body.data.secrets[0]).sort()).toEqual(['createdAt', 'name', 'updatedAt']);

    const stored = await storeSql(suite.store, 'SELECT * FROM secrets WHERE name = $1', ['crm.api-key']);
    expect(stored).toHaveLength(1);
    const dump = JSON.stringify(stored);
    expect(dump).not.toContain(value);
    expect(dump).not.toContain(Buffer.from(value).toString('base64'));
    expect(Buffer.from(stored[0]!.iv as string, 'base64')).toHaveLength(12);
    expect(Buffer.from(stored[0]!.tag as string, 'base64')).toHaveLength(16);

    // The key file was created once, readable by the owner only, and a second open re-reads it.
    const keyFile = path.join(suite.store.dataDir, 'secret.key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const keyBefore = readFileSync(keyFile, 'utf8');
    const orgId = (await storeSql(suite.store, 'SELECT org_id FROM secrets WHERE name = $1', ['crm.api-key']))[0]!.org_id as string;
    await withStore(suite.store, async (db) => {
      const vault = await SecretVault.open(db, { dataDir: suite.store.dataDir });
      expect(await vault.get(orgId, 'crm.api-key')).toBe(value);
      expect(await vault.get(orgId, 'missing')).toBeUndefined();
      expect(await vault.get('0123456789abcdef01234567', 'crm.api-key')).toBeUndefined();
      const wrongKey = await SecretVault.open(db, { dataDir: suite.store.dataDir, envKey: 'ab'.repeat(32) });
      await expect(wrongKey.get(orgId, 'crm.api-key')).rejects.toThrow(/cannot be decrypted/);
    });
    expect(readFileSync(keyFile, 'utf8')).toBe(keyBefore);

    const rotate = await call('PUT', '/secret/crm.api-key', { body: { value: rotated } });
    expect(rotate.status, rotate.text).toBe(200);
    expect(rotate.body.data).toEqual({ name: 'crm.api-key', updatedAt: expect.any(String) });
    const after = await storeSql(suite.store, 'SELECT iv, ciphertext FROM secrets WHERE name = $1', ['crm.api-key']);
    expect(after[0]!.iv).not.toBe(stored[0]!.iv);
    await withStore(suite.store, async (db) => expect(await (await SecretVault.open(db, { dataDir: suite.store.dataDir })).get(orgId, 'crm.api-key')).toBe(rotated));
    expect((await call('PUT', '/secret/nope', { body: { value: 'x' } })).status).toBe(404);
    expect((await call('PUT', '/secret/crm.api-key', { body: { value: '' } })).status).toBe(400);

    const otherKey = await createOrgKey(suite.store, 'other4', 'other-org-4');
    expect((await call('GET', '/secret', { key: otherKey })).body.data.secrets).toEqual([]);
    expect((await call('DELETE', '/secret/crm.api-key', { key: otherKey })).status).toBe(404);
    expect((await call('POST', '/secret', { body: { name: 'crm.api-key', value: 'theirs' }, key: otherKey })).status).toBe(201);

    expect((await call('DELETE', '/secret/crm.api-key')).body).toEqual({ status: true, data: { deleted: true } });
    expect((await call('DELETE', '/secret/crm.api-key')).status).toBe(404);
    expect((await call('GET', '/secret')).body.data.secrets.map((s: any) => s.name)).toEqual(['max']);
    expect((await call('GET', '/secret', { key: null })).status).toBe(401);

    for (const text of bodies) {
      expect(text).not.toContain(value);
      expect(text).not.toContain(rotated);
    }
    const logs = suite.server.logs.join('\n');
    expect(logs).not.toContain(value);
    expect(logs).not.toContain(rotated);
  });
});

describe('secrets master key', () => {
  it('parses 64 hex characters or base64 of 32 bytes and nothing else', () => {
    const raw = Buffer.alloc(32, 7);
    expect(parseMasterKey(raw.toString('hex'))?.equals(raw)).toBe(true);
    expect(parseMasterKey(raw.toString('base64'))?.equals(raw)).toBe(true);
    expect(parseMasterKey(raw.toString('base64url'))?.equals(raw)).toBe(true);
    for (const bad of ['', 'abc', 'g'.repeat(64), raw.toString('hex').slice(2), Buffer.alloc(31).toString('base64'), Buffer.alloc(33).toString('base64')]) {
      expect(parseMasterKey(bad), bad).toBeNull();
    }
  });

  it('a bad PARLEY_SECRET_KEY fails start-up naming the variable (not echoing it); a good one is used instead of a key file', async () => {
    const store = freshStore('sqlite');
    try {
      const error = await startServer({ store, env: { PARLEY_SECRET_KEY: 'not-a-real-master-key' } }).then(
        () => null,
        (err: Error) => err,
      );
      expect(error?.message).toContain('PARLEY_SECRET_KEY must be 64 hex characters or the base64 of 32 bytes');
      expect(error?.message).not.toContain('not-a-real-master-key');

      const key = 'c3'.repeat(32);
      const server = await startServer({ store, env: { PARLEY_SECRET_KEY: key } });
      try {
        const res = await server.request('POST', `${A}/secret`, { body: { name: 'token', value: 'abc-123-secret' } });
        expect(res.status, res.text).toBe(201);
        expect(existsSync(path.join(store.dataDir, 'secret.key'))).toBe(false);
        const orgId = (await storeSql(store, 'SELECT org_id FROM secrets'))[0]!.org_id as string;
        await withStore(store, async (db) => expect(await (await SecretVault.open(db, { dataDir: store.dataDir, envKey: key })).get(orgId, 'token')).toBe('abc-123-secret'));
      } finally {
        await server.stop();
      }
    } finally {
      await store.cleanup();
    }
  });
});
