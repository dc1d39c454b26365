// Calls up on a server that is killed (kill -9) are ended by whoever is alive once its lease runs out: the same server
// restarted, or another server on the store. Every call (an inbound phone call, campaign calls answered by a carrier,
// a web call, an inbound call answered while its agent waited for a slow pre-call API) ends `failed` with reason
// `server_stopped`, its post-conversation goes out once, the SIP peers (sipp)
// get a BYE from the dialog kept in the store (both lines of a bridged transfer), and the campaign finishes without
// calling anyone twice.
import { afterEach, describe, expect, it } from 'vitest';
import { freshStore, sleep, startServer, storeSql, testDialects, withStore, type StoreEnv, type TestServer } from './support/server.js';
import { abandonedLiveCalls, claimLiveCall, holdLiveCall, renewLiveCalls } from '../control-plane/calls/live-calls.js';
import { freePort, killPeers, sippByeAnswered, sippCallSetup, sippMessages, sippScenario, sippSdp, STACK_HOST, startSipp, writeScenario, type SippRun } from './support/sip-peers.js';
import { killCallees, startSippCarrier, type SippCarrier } from './support/sip-callee.js';
import { answeredTrunk, workflowAgent } from './support/phone-server.js';
import { AgentCaller, connectUrl } from './support/agent-client.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import { lookupAgent, startCrm } from './support/crm.js';

const A = '/atoms/v1';
const INBOUND_NUMBER = '+15550700100';
const OUTBOUND_NUMBER = '+15550700200';
const LEASE_SECS = 2;

afterEach(() => {
  killPeers();
  killCallees();
});

/** Env of a server with SIP on 127.0.0.2 (its own port), RTP in a random block, and a 2 s lease. */
async function serverEnv(): Promise<Record<string, string>> {
  const rtpBase = 10000 + Math.floor(Math.random() * 100) * 100;
  return {
    PARLEY_SIP_HOST: STACK_HOST,
    PARLEY_SIP_PORT: String(await freePort(STACK_HOST)),
    PARLEY_RTP_PORTS: `${rtpBase}-${rtpBase + 99}`,
    PARLEY_OUTBOUND_LEASE_SECS: String(LEASE_SECS),
    PARLEY_CAMPAIGN_MINUTE_MS: '300',
    // A pre-conversation the killed server was sending holds the call's later events until it is declared
    // interrupted (2 x this + 1 s after it started): kept short here so post-conversation follows within seconds.
    PARLEY_WEBHOOK_TIMEOUT_MS: '2000',
  };
}

/** A sipp caller dialing `number` at the server's SIP port: it is answered and waits (up to 60 s) for our BYE. */
async function callerWaitingForBye(sipPort: number, number: string): Promise<SippRun> {
  const scenario = writeScenario('caller-waits-for-bye', sippScenario('caller waits for BYE', [...sippCallSetup(sippSdp('PCMU'), '+15550799001'), ...sippByeAnswered(60_000)]));
  return startSipp({ scenario, remote: `${STACK_HOST}:${sipPort}`, service: number.slice(1), calls: 1, timeoutS: 70 });
}

/** The organization's calls (newest first). */
async function calls(server: TestServer, key?: string): Promise<any[]> {
  const res = await server.request('GET', `${A}/conversation?offset=100`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body.data.logs as any[];
}

async function waitFor<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, timeoutMs: number): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > until) throw new Error(`${what}: ${JSON.stringify(value)}`);
    await sleep(100);
  }
}

/** An agent that greets and then listens (calls stay up), with every call's webhooks sent to `hooks`. */
async function listeningAgent(server: TestServer, hooks: WebhookReceiver): Promise<string> {
  const agentId = await workflowAgent(server, 'Hello, this is the front desk.');
  const events = ['pre-conversation', 'post-conversation'].map((eventType) => ({ agentId, eventType }));
  const hook = await server.request('POST', `${A}/webhook`, { body: { endpoint: hooks.url, events } });
  expect(hook.status, hook.text).toBe(201);
  return agentId;
}

async function outboundTrunk(server: TestServer, port: number): Promise<void> {
  const res = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Carrier', address: `127.0.0.1:${port}`, numbers: [OUTBOUND_NUMBER], cpsLimit: 10 } });
  expect(res.status, res.text).toBe(201);
}

/** A web call on the agent WebSocket, its microphone sending silence at real time; resolves with its call id. */
async function webCall(server: TestServer, agentId: string): Promise<{ caller: AgentCaller; callId: string }> {
  const caller = new AgentCaller(connectUrl(server, { api_key: server.key, agent_id: agentId, mode: 'webcall' }), 16000);
  await caller.opened;
  caller.startMic();
  const created = await caller.waitFor((f) => f.type === 'session.created');
  return { caller, callId: String(created.call_id) };
}

/** What every call a killed server held must read once whoever is alive has ended it, and its webhooks. */
async function expectEndedForStoppedServer(server: TestServer, key: string, hooks: WebhookReceiver, callIds: string[], killedAt: number): Promise<void> {
  const final = await waitFor(
    'calls still up',
    async () => (await calls(server, key)).filter((c) => callIds.includes(c.callId)),
    (list) => list.length === callIds.length && list.every((c) => c.status !== 'in_progress' && c.status !== 'processing'),
    // The lease, a pass of the survivor, the BYEs: well inside 20 s.
    20_000,
  );
  for (const c of final) expect([c.callId, c.status, c.callFailureReason]).toEqual([c.callId, 'failed', 'server_stopped']);
  for (const callId of callIds) {
    const post = await hooks.waitFor(callId, 'post-conversation', 15_000);
    expect(post.metadata.callData).toMatchObject({ callStatus: 'failed' });
    // Ended when its server was last known up (its last renewal), not when the survivor took it over (a lease later).
    const { answerTime, endTime } = post.metadata.callData;
    expect(Date.parse(endTime)).toBeLessThanOrEqual(killedAt);
    expect(Date.parse(endTime)).toBeGreaterThanOrEqual(Date.parse(answerTime));
  }
  // Each post-conversation once (a second survivor pass, or a second server, writes none).
  await sleep(1500);
  for (const callId of callIds) expect(hooks.of(callId, 'post-conversation'), callId).toHaveLength(1);
}

/** `kill -9` of a server, waiting for it to be gone. */
async function kill9(server: TestServer): Promise<void> {
  server.proc.kill('SIGKILL');
  await server.waitExit();
}

/** A sipp caller that was hung up by the survivor: it ended well, having received exactly one BYE. */
async function expectOneBye(caller: SippRun): Promise<void> {
  const done = await caller.done;
  expect(done.code, done.output).toBe(0);
  expect(sippMessages(done.messages).filter((m) => m.direction === 'received' && m.method === 'BYE')).toHaveLength(1);
}

describe('calls a killed server held', () => {
  const carriers: SippCarrier[] = [];
  const receivers: WebhookReceiver[] = [];
  const servers: TestServer[] = [];
  const stores: StoreEnv[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
    await Promise.all(carriers.splice(0).map((c) => c.stop()));
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await Promise.all(stores.splice(0).map((s) => s.cleanup()));
  });

  it('are ended by the restarted server: BYE to the caller and the carrier, records failed (server_stopped), webhooks once, the campaign finished, nobody called twice', async () => {
    const store = freshStore('sqlite');
    stores.push(store);
    const hooks = new WebhookReceiver();
    receivers.push(hooks);
    await hooks.start();
    // The carrier answers every call and waits for our BYE (it never hangs up itself).
    const carrier = await startSippCarrier({ answer: 'ok', timeoutS: 90 });
    carriers.push(carrier);
    const env = await serverEnv();
    const first = await startServer({ store, env });
    servers.push(first);
    const agentId = await listeningAgent(first, hooks);
    await answeredTrunk(first, agentId, { numbers: [INBOUND_NUMBER] });
    await outboundTrunk(first, carrier.port);
    const recipients = ['+15550710001', '+15550710002'];
    const form = new FormData();
    form.append('name', 'Recovery');
    form.append('phoneNumberColumnName', 'phone');
    form.append('file', new Blob([['phone', ...recipients].join('\n')], { type: 'text/csv' }), 'list.csv');
    const uploaded = (await (await fetch(`${first.base}${A}/audience`, { method: 'POST', headers: { authorization: `Bearer ${first.key}` }, body: form })).json()) as any;
    const campaign = await first.request('POST', `${A}/campaign`, { body: { name: 'Recovery', agentId, audienceId: uploaded.data._id, fromNumbers: [OUTBOUND_NUMBER], maxRetries: 0 } });
    expect(campaign.status, campaign.text).toBe(201);
    const campaignId = campaign.body.data._id as string;

    const caller = await callerWaitingForBye(Number(env.PARLEY_SIP_PORT), INBOUND_NUMBER);
    expect((await first.request('POST', `${A}/campaign/${campaignId}/start`)).status).toBe(202);
    const web = await webCall(first, agentId);
    const up = await waitFor('calls not up', () => calls(first), (list) => list.filter((c) => c.status === 'in_progress').length === 4, 20_000);
    const callIds = up.map((c) => c.callId as string);
    expect(callIds).toContain(web.callId);

    const killedAt = Date.now();
    await kill9(first);
    await web.caller.closed;
    const second = await startServer({ store, env: { ...env, PARLEY_BOOTSTRAP_KEY: first.key } });
    servers.push(second);
    await expectEndedForStoppedServer(second, first.key, hooks, callIds, killedAt);

    // The caller and the carrier each got a BYE in their dialogs (sent from the dialogs kept in the store).
    await expectOneBye(caller);
    const carried = await carrier.stop();
    const byes = sippMessages(carried.messages).filter((m) => m.direction === 'received' && m.method === 'BYE');
    expect(new Set(byes.map((m) => m.headers['call-id'])).size).toBe(2);
    // The campaign settles its recipients as failed and finishes; each was dialed once.
    const finished = await waitFor(
      'campaign not finished',
      async () => (await second.request('GET', `${A}/campaign/${campaignId}`, { key: first.key })).body.data,
      (c) => c.campaign.status === 'completed',
      15_000,
    );
    expect(finished.metrics).toMatchObject({ total_participants: 2, contacts_called: 2, contacts_connected: 0 });
    expect(carrier.arrivals().map((a) => a.to.replace(/^\+/, '')).sort()).toEqual(recipients.map((r) => r.slice(1)).sort());
  }, 120_000);

  it('a bridged transfer: the restarted server hangs up both the caller and the transfer target', async () => {
    const store = freshStore('sqlite');
    stores.push(store);
    // The transfer target answers and waits for our BYE.
    const target = await startSippCarrier({ answer: 'ok', calls: 1, timeoutS: 60 });
    carriers.push(target);
    const env = await serverEnv();
    const first = await startServer({ store, env });
    servers.push(first);
    // Warm, with no person required: the agent places the second call and bridges the caller to it at once.
    const agentId = await workflowAgent(first, {
      nodes: [{ id: 'hand', type: 'transfer', text: 'Please hold on.', transferNumber: '+15550720001', transferOption: { type: 'warm_transfer' }, transferOnlyIfHuman: false }],
      edges: [],
    });
    await answeredTrunk(first, agentId, { numbers: [INBOUND_NUMBER] });
    const source = await first.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Transfers out', address: `127.0.0.1:${target.port}`, numbers: [OUTBOUND_NUMBER] } });
    expect(source.status, source.text).toBe(201);
    const put = await first.request('PUT', `${A}/agent/${agentId}/transfer-source`, { body: { fromNumber: OUTBOUND_NUMBER } });
    expect(put.status, put.text).toBe(200);
    const caller = await callerWaitingForBye(Number(env.PARLEY_SIP_PORT), INBOUND_NUMBER);
    await first.waitForLog(/transfer bridged to a second call/, 20_000);
    await kill9(first);
    const second = await startServer({ store, env: { ...env, PARLEY_BOOTSTRAP_KEY: first.key } });
    servers.push(second);
    // Both lines of the bridge get their BYE from the dialogs kept in the store: the caller's and the target's.
    await expectOneBye(caller);
    const targetDone = await target.done;
    const byes = sippMessages(targetDone.messages).filter((m) => m.direction === 'received' && m.method === 'BYE');
    expect(byes.length, targetDone.output).toBeGreaterThanOrEqual(1);
    expect(new Set(byes.map((m) => m.headers['call-id'])).size).toBe(1);
    expect(await second.waitForLog(/ended a call its server stopped holding/)).toMatch(/"bye":true/);
  }, 90_000);

  it('an inbound call answered before its agent started (a slow pre-call API past the ringing timeout): its record is there and ended', async () => {
    const store = freshStore('sqlite');
    stores.push(store);
    // The lookup answers after 30 s; the trunk rings 1 s, so the call is answered and the agent waits for the lookup.
    const crm = await startCrm('Grace', 30_000);
    const env = await serverEnv();
    const first = await startServer({ store, env });
    servers.push(first);
    try {
      const agent = await first.request('POST', `${A}/agent`, { body: lookupAgent(crm, 'Hello {{customer_name}}.') });
      expect(agent.status, agent.text).toBe(201);
      await answeredTrunk(first, agent.body.data as string, { numbers: [INBOUND_NUMBER], ringingTimeoutSecs: 1 });
      const caller = await callerWaitingForBye(Number(env.PARLEY_SIP_PORT), INBOUND_NUMBER);
      // Answered and held with its dialog (the lookup still running): the agent has not started.
      const [held] = await waitFor('no answered call', () => storeSql(store, 'SELECT call_id, sip_dialog FROM live_calls'), (rows) => rows.length === 1 && rows[0]!.sip_dialog !== null, 15_000);
      expect(crm.hits).toHaveLength(1);
      const killedAt = Date.now();
      await kill9(first);
      const second = await startServer({ store, env: { ...env, PARLEY_BOOTSTRAP_KEY: first.key } });
      servers.push(second);
      await expectOneBye(caller);
      // The record existed from before the answer; the survivor ended it, with the call's standard variables.
      const [record] = await waitFor('call not ended', () => calls(second, first.key), (list) => list.length === 1 && list[0].status === 'failed', 20_000);
      expect(record).toMatchObject({ callId: held!.call_id, type: 'telephony_inbound', status: 'failed', callFailureReason: 'server_stopped', to: INBOUND_NUMBER });
      const full = (await second.request('GET', `${A}/conversation/${held!.call_id}`, { key: first.key })).body.data;
      expect(full.variables, JSON.stringify(full)).toMatchObject({ call_id: held!.call_id, agent_number: INBOUND_NUMBER, customer_name: 'there' });
      // Ended when its server was last known up; nothing claims a voice spoke.
      expect(Date.parse(full.endedAt)).toBeLessThanOrEqual(killedAt);
      expect(full.voiceConfigUsed).toEqual({});
    } finally {
      await crm.close();
    }
  }, 90_000);

  it.runIf(testDialects().includes('postgres'))('are ended by another server on the store when theirs is killed (PostgreSQL)', async () => {
    const store = freshStore('postgres');
    stores.push(store);
    const hooks = new WebhookReceiver();
    receivers.push(hooks);
    await hooks.start();
    const carrier = await startSipp({ scenario: 'uas', calls: 1, timeoutS: 60 });
    const envA = await serverEnv();
    const first = await startServer({ store, env: envA });
    servers.push(first);
    const agentId = await listeningAgent(first, hooks);
    await answeredTrunk(first, agentId, { numbers: [INBOUND_NUMBER] });
    await outboundTrunk(first, carrier.port);
    const caller = await callerWaitingForBye(Number(envA.PARLEY_SIP_PORT), INBOUND_NUMBER);
    const placed = await first.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: '+15550710003', fromNumber: OUTBOUND_NUMBER } });
    expect(placed.status, placed.text).toBe(200);
    const web = await webCall(first, agentId);
    const up = await waitFor('calls not up', () => calls(first), (list) => list.filter((c) => c.status === 'in_progress').length === 3, 20_000);
    const callIds = up.map((c) => c.callId as string);
    expect(callIds).toContain(placed.body.data.conversationId);

    // The survivor starts once the calls are up (so the first server holds all three), then the first is killed.
    const second = await startServer({ store, env: { ...(await serverEnv()), PARLEY_BOOTSTRAP_KEY: first.key } });
    servers.push(second);
    const killedAt = Date.now();
    await kill9(first);
    await web.caller.closed;
    await expectEndedForStoppedServer(second, first.key, hooks, callIds, killedAt);
    // One BYE transaction each, from the survivor. (sipp sends its 200 to the address the dialog began with, the dead
    // server's port, not to the BYE's Via as RFC 3261 §18.2.2 asks, so the survivor retransmits it: same branch.)
    for (const peer of [await caller.done, await carrier.done]) {
      const byes = sippMessages(peer.messages).filter((m) => m.direction === 'received' && m.method === 'BYE');
      expect(new Set(byes.map((m) => m.headers.via)).size, peer.output).toBe(1);
      expect(byes[0]!.headers.via).toContain(`${STACK_HOST}:${second.sipPort};`);
    }
  }, 120_000);
});

describe.each(testDialects())('live-call rows on %s', (dialect) => {
  it('a row renewed within the lease is not abandoned; of two servers claiming an abandoned one, one wins', async () => {
    const store = freshStore(dialect);
    try {
      const server = await startServer({ store, env: { PARLEY_SIP_PORT: 'off' } });
      await server.stop(); // migrated, with an organization
      const [org] = await storeSql(store, 'SELECT id FROM organizations LIMIT 1');
      const results = await withStore(store, async (db) => {
        await holdLiveCall(db, { callId: 'CALL-fresh', orgId: org!.id as string, owner: 'alive', sipDialog: null });
        await holdLiveCall(db, { callId: 'CALL-stale', orgId: org!.id as string, owner: 'dead', sipDialog: { callId: 'x' } });
        await db.updateTable('live_calls').set({ renewed_at: new Date(Date.now() - 10_000).toISOString() }).where('call_id', '=', 'CALL-stale').execute();
        const abandoned = await abandonedLiveCalls(db, 5000, 10);
        const [a, b] = await Promise.all([claimLiveCall(db, abandoned[0]!, 'one'), claimLiveCall(db, abandoned[0]!, 'two')]);
        await renewLiveCalls(db, 'dead', ['CALL-stale']); // its old holder, back late: no longer its row
        const row = await db.selectFrom('live_calls').selectAll().where('call_id', '=', 'CALL-stale').executeTakeFirstOrThrow();
        return { abandoned: abandoned.map((r) => [r.call_id, r.owner, JSON.parse(r.sip_dialog ?? 'null')]), wins: [a, b].filter(Boolean).length, owner: row.owner, stillAbandoned: (await abandonedLiveCalls(db, 5000, 10)).length };
      });
      expect(results.abandoned).toEqual([['CALL-stale', 'dead', { callId: 'x' }]]);
      expect(results.wins).toBe(1);
      expect(['one', 'two']).toContain(results.owner);
      expect(results.stillAbandoned).toBe(0);
    } finally {
      await store.cleanup();
    }
  });
});
