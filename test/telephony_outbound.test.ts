// Outbound calls (wire §4) against the real server and a real SIP callee: the request's checks and errors, a call placed
// through an outbound trunk to sipp (the INVITE's From and Request-URI, the agent speaking, its BYE, the record and the
// webhooks as the spec says for telephony_outbound), and cancel and retries.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createOrgKey, freshStore, runCliOn, sleep, startServer, mediaDialects, testDialects, type TestServer } from './support/server.js';
import { baresipCallee, canRunRealtime, killCallees, startSippCarrier, type Arrival } from './support/sip-callee.js';
import { callerScript } from './support/baresip.js';
import { ASTERISK_SOUNDS_DIR } from '../bench/lib/asterisk-corpus.js';
import { transcribe } from './support/phone-server.js';
import { STACK_HOST, killPeers, sippMessages, startSipp } from './support/sip-peers.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import { sipServerForSuite, workflowAgent } from './support/phone-server.js';
import { mainBranchId } from './support/agents.js';
import { lookupAgent, startCrm } from './support/crm.js';

const A = '/atoms/v1';

afterEach(() => {
  killPeers();
  killCallees();
});

/** An outbound trunk to a carrier on 127.0.0.1:`port` (fields as given); returns its id. */
async function outboundTrunk(server: TestServer, port: number, body: Record<string, unknown> = {}): Promise<string> {
  const res = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Carrier out', address: `127.0.0.1:${port}`, numbers: ['+15550200001'], ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.data._id as string;
}

async function waitForStatus(server: TestServer, callId: string, wanted: (s: string) => boolean, timeoutMs = 10_000, key?: string): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await server.request('GET', `${A}/conversation/${callId}`, { key });
    expect(res.status, res.text).toBe(200);
    if (wanted(res.body.data.status)) return res.body.data;
    if (Date.now() > until) throw new Error(`call ${callId} stayed ${res.body.data.status}`);
    await sleep(50);
  }
}

const FINAL = new Set(['completed', 'failed', 'no_answer', 'cancelled']);
/** The call's record once it has ended (a queued or ringing call is not ended yet). */
const settled = (server: TestServer, callId: string) => waitForStatus(server, callId, (s) => FINAL.has(s), 20_000);

describe.each(testDialects())('outbound calls on %s', (dialect) => {
  // No outbound trunk field sets the ringing timeout: the server's does (60 s by default).
  // Private egress: the pre-call test's CRM listens on loopback.
  const suite = sipServerForSuite(dialect, { PARLEY_OUTBOUND_RING_SECS: '3', PARLEY_OUTBOUND_QUEUE: '3', PARLEY_ALLOW_PRIVATE_EGRESS: '1' });
  let server: TestServer;
  let agentId: string;

  const hooks = new WebhookReceiver();

  beforeAll(async () => {
    server = suite.server;
    agentId = await workflowAgent(server, 'Hello, this is Parley calling about your order. Goodbye.', true);
    await hooks.start();
    const hook = await server.request('POST', `${A}/webhook`, {
      body: { endpoint: hooks.url, events: ['pre-conversation', 'post-conversation'].map((eventType) => ({ agentId, eventType })) },
    });
    expect(hook.status, hook.text).toBe(201);
  });
  afterAll(() => hooks.close());

  const call = async (fromNumber: string, phoneNumber = '+15550300001'): Promise<string> => {
    const res = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber, fromNumber } });
    expect(res.status, res.text).toBe(200);
    return res.body.data.conversationId as string;
  };

  it('refuses what cannot be placed with 400 naming the field, and an unknown agent with 404', async () => {
    const trunk = await outboundTrunk(server, 5999, { numbers: ['+15550200009'] });
    try {
      const post = (body: unknown) => server.request('POST', `${A}/conversation/outbound`, { body });
      const cases: Array<[unknown, RegExp]> = [
        [{ phoneNumber: '+15550300001', fromNumber: '+15550200009' }, /agentId: required/],
        [{ agentId, fromNumber: '+15550200009' }, /phoneNumber: required/],
        [{ agentId, phoneNumber: '5550300001', fromNumber: '+15550200009' }, /phoneNumber: required, the E\.164/],
        [{ agentId, phoneNumber: '+15550300001', fromNumber: '+1 555 020 0009' }, /fromNumber: must be an E\.164/],
        [{ agentId, phoneNumber: '+15550300001', fromNumber: '+15550299999' }, /fromNumber: \+15550299999 is not a number your organization dials from/],
        [{ agentId, phoneNumber: '+15550300001', fromNumber: '+15550200009', variables: { 'bad key': 1 } }, /variables\.bad key/],
        [{ agentId, phoneNumber: '+15550300001', fromNumber: '+15550200009', colour: 'blue' }, /colour: unknown field/],
        [{ agentId, phoneNumber: '+15550300001', fromNumber: '+15550200009', fromProductId: 'x' }, /not both/],
        [[], /JSON object/],
      ];
      for (const [body, message] of cases) {
        const res = await post(body);
        expect(res.status, `${JSON.stringify(body)} -> ${res.text}`).toBe(400);
        expect(JSON.stringify(res.body)).toMatch(message);
      }
      const unknown = await post({ agentId: 'ffffffffffffffffffffffff', phoneNumber: '+15550300001', fromNumber: '+15550200009' });
      expect(unknown.status, unknown.text).toBe(404);
    } finally {
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  });

  it('places a call through the outbound trunk: sipp answers, the agent speaks its message and hangs up, and the call is recorded as telephony_outbound', async () => {
    const sipp = await startSipp({ scenario: 'uas', calls: 1, timeoutS: 40 });
    const trunk = await outboundTrunk(server, sipp.port, { numbers: ['+15550200001'] });
    try {
      const res = await server.request('POST', `${A}/conversation/outbound`, {
        body: { agentId, phoneNumber: '+15550300001', fromNumber: '+15550200001', variables: { customer_name: 'Ada' } },
      });
      expect(res.status, res.text).toBe(200);
      const callId = res.body.data.conversationId as string;
      expect(callId).toMatch(/^CALL-\d{13}-[0-9a-f]{6}$/);
      expect(res.headers.get('deprecation')).toBeNull();
      const answered = await waitForStatus(server, callId, (s) => s === 'in_progress' || s === 'completed', 15_000);
      expect(answered).toMatchObject({ type: 'telephony_outbound', from: '+15550200001', to: '+15550300001' });
      const record = await settled(server, callId);
      expect(record).toMatchObject({ status: 'completed', type: 'telephony_outbound', from: '+15550200001', to: '+15550300001', endReason: 'ended' });
      expect(record.transcript.map((t: { content: string }) => t.content).join(' ')).toMatch(/calling about your order/);
      expect(record.variables).toMatchObject({ customer_name: 'Ada', user_number: '+15550300001', agent_number: '+15550200001', conversation_type: 'telephonyOutbound' });
      const pre = await hooks.waitFor(callId, 'pre-conversation');
      expect(pre.metadata).toMatchObject({ conversationType: 'telephonyOutbound', toPhone: '+15550300001', fromPhone: '+15550200001' });
      const post = await hooks.waitFor(callId, 'post-conversation');
      expect(post.metadata.callData).toMatchObject({ fromNumber: '+15550200001', toNumber: '+15550300001', callDirection: 'telephony_outbound', callStatus: 'completed' });
      expect(Date.parse(post.metadata.callData.answerTime)).toBeLessThanOrEqual(Date.parse(post.metadata.callData.endTime));
      // What sipp saw: one INVITE to the callee's number from our caller ID, then our BYE.
      const done = await sipp.done;
      const received = sippMessages(done.messages).filter((m) => m.direction === 'received');
      const invite = received.find((m) => m.method === 'INVITE');
      expect(invite?.startLine).toMatch(/^INVITE sip:\+15550300001@127\.0\.0\.1:\d+ SIP\/2\.0$/);
      expect(invite?.headers.from).toMatch(/sip:\+15550200001@/);
      expect(invite?.body).toMatch(/^m=audio \d+ RTP\/AVP 0 8 101/m);
      expect(received.filter((m) => m.method === 'INVITE')).toHaveLength(1);
      expect(received.some((m) => m.method === 'BYE')).toBe(true);
    } finally {
      sipp.kill();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 60_000);
  it('runs the agent\'s pre-call API while the callee\'s phone rings: the lookup is done before the answer, and its variables are in the first words and the record', async () => {
    const crm = await startCrm('Grace');
    const { hits } = crm;
    const RING_MS = 2500;
    const carrier = await startSippCarrier({ answer: 'ok', ringMs: RING_MS, holdMs: 8000, calls: 1, timeoutS: 30 });
    const trunk = await outboundTrunk(server, carrier.port, { numbers: ['+15550200011'] });
    try {
      const created = await server.request('POST', `${A}/agent`, { body: lookupAgent(crm, 'Hello {{customer_name}}, this is Parley. Goodbye.') });
      expect(created.status, created.text).toBe(201);
      const res = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId: created.body.data, phoneNumber: '+15550300011', fromNumber: '+15550200011' } });
      expect(res.status, res.text).toBe(200);
      const callId = res.body.data.conversationId as string;
      const record = await settled(server, callId);
      expect(record).toMatchObject({ status: 'completed', type: 'telephony_outbound' });
      expect(record.transcript.map((t: { content: string }) => t.content).join(' ')).toMatch(/Hello Grace, this is Parley/);
      expect(record.variables).toMatchObject({ customer_name: 'Grace', user_number: '+15550300011' });
      expect(record.preCallApi).toMatchObject({ ok: true, status: 200, error: null, variables: ['customer_name'] });
      // One lookup, with the callee's number, sent while the phone rang: after the INVITE reached the carrier and
      // well before its 200 OK (RING_MS after the INVITE).
      expect(hits).toHaveLength(1);
      expect(hits[0]!.url).toBe(`/lookup/${encodeURIComponent('+15550300011')}`);
      const invite = carrier.arrivals()[0]!;
      expect(hits[0]!.at).toBeGreaterThanOrEqual(Math.floor(invite.at) - 50);
      expect(hits[0]!.at - invite.at).toBeLessThan(RING_MS - 1000);
    } finally {
      await carrier.stop();
      await crm.close();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 60_000);

  it('records a busy callee (486) as failed with callFailureReason busy; post-conversation has callStatus busy, the call\'s variables and the 11 standard keys, answerTime null; analytics with the agent\'s metrics', async () => {
    const carrier = await startSippCarrier({ answer: 486, calls: 1, timeoutS: 20 });
    const trunk = await outboundTrunk(server, carrier.port, { numbers: ['+15550200002'] });
    const created = await server.request('POST', `${A}/agent`, {
      body: {
        name: 'Busy line',
        workflowType: 'workflow_graph',
        workflowGraph: { nodes: [{ id: 'a', type: 'end_call', text: 'Hello.' }], edges: [] },
        defaultVariables: { plan: 'gold' },
        postCallAnalyticsConfig: { dispositionMetrics: [{ identifier: 'topic', dispositionMetricPrompt: 'What was the call about?', dispositionMetricType: 'STRING' }] },
      },
    });
    expect(created.status, created.text).toBe(201);
    const busyAgent = created.body.data as string;
    const busyHooks = new WebhookReceiver();
    await busyHooks.start();
    const hook = await server.request('POST', `${A}/webhook`, { body: { endpoint: busyHooks.url, events: [{ agentId: busyAgent, eventType: 'post-conversation' }] } });
    expect(hook.status, hook.text).toBe(201);
    try {
      const placed = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId: busyAgent, phoneNumber: '+15550300001', fromNumber: '+15550200002', variables: { customer_name: 'Ada' } } });
      expect(placed.status, placed.text).toBe(200);
      const callId = placed.body.data.conversationId as string;
      const record = await settled(server, callId);
      expect(record).toMatchObject({ status: 'failed', type: 'telephony_outbound', callFailureReason: 'busy', endReason: 'busy' });
      const post = await busyHooks.waitFor(callId, 'post-conversation');
      expect(post.metadata.callData).toMatchObject({ callStatus: 'busy', callDirection: 'telephony_outbound', answerTime: null, callDuration: 0 });
      const standard = ['call_id', 'user_number', 'agent_number', 'conversation_type', 'agent_gender', 'default_language', 'supported_languages', 'current_date', 'current_time', 'current_day', 'timezone'];
      expect(Object.keys(post.metadata.variables)).toEqual(expect.arrayContaining([...standard, 'customer_name', 'plan']));
      expect(post.metadata.variables).toMatchObject({ call_id: callId, customer_name: 'Ada', plan: 'gold', user_number: '+15550300001', agent_number: '+15550200002', conversation_type: 'telephonyOutbound' });
      expect(record.variables).toMatchObject({ customer_name: 'Ada', plan: 'gold', call_id: callId });
      let analyzed: any = null;
      for (let i = 0; i < 100 && !analyzed; i++) {
        analyzed = (await server.request('GET', `${A}/conversation/${callId}`)).body.data.postCallAnalytics;
        if (!analyzed) await sleep(50);
      }
      expect(analyzed?.dispositionMetrics?.map((m: { identifier: string }) => m.identifier)).toEqual(['topic']);
    } finally {
      busyHooks.close();
      await carrier.stop();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 30_000);

  it('records 480 as no_answer, and a call ringing past PARLEY_OUTBOUND_RING_SECS as no_answer after our CANCEL', async () => {
    const unavailable = await startSippCarrier({ answer: 480, calls: 1, timeoutS: 20 });
    const t1 = await outboundTrunk(server, unavailable.port, { numbers: ['+15550200003'] });
    const rings = await startSippCarrier({ answer: 'ring', calls: 1, timeoutS: 20 });
    const t2 = await outboundTrunk(server, rings.port, { numbers: ['+15550200004'] });
    try {
      const [a, b] = await Promise.all([call('+15550200003'), call('+15550200004')]);
      expect(await settled(server, a)).toMatchObject({ status: 'no_answer', endReason: 'no_answer' });
      const started = Date.now();
      const record = await settled(server, b);
      expect(record).toMatchObject({ status: 'no_answer', endReason: 'ringing_timeout' });
      expect(Date.now() - started).toBeLessThan(8000);
      expect((await hooks.waitFor(b, 'post-conversation')).metadata.callData.callStatus).toBe('no-answer');
      const sawCancel = sippMessages((await rings.stop()).messages).some((m) => m.direction === 'received' && m.method === 'CANCEL');
      expect(sawCancel).toBe(true);
    } finally {
      await unavailable.stop();
      await rings.stop();
      for (const t of [t1, t2]) expect((await server.request('DELETE', `${A}/sip-trunk/${t}`)).status).toBe(200);
    }
  }, 40_000);

  it('cancels a ringing call (our CANCEL, status cancelled) and a queued one (never dialed); answered or ended calls cannot be canceled', async () => {
    const rings = await startSippCarrier({ answer: 'ring', calls: 1, timeoutS: 30 });
    // cpsLimit 1: the second call waits a second for its slot, long enough to be canceled in the queue.
    const trunk = await outboundTrunk(server, rings.port, { numbers: ['+15550200005'], cpsLimit: 1 });
    try {
      const first = await call('+15550200005', '+15550300005');
      const second = await call('+15550200005', '+15550300006');
      await waitForStatus(server, first, (s) => s === 'processing');
      const queued = await server.request('POST', `${A}/conversation/${second}/cancel`);
      expect(queued.status, queued.text).toBe(200);
      expect(queued.body.data).toMatchObject({ callId: second, canceled: true });
      const ring = await server.request('POST', `${A}/conversation/cancel`, { body: { callIds: [first, 'CALL-1700000000000-abcdef'] } });
      expect(ring.status, ring.text).toBe(200);
      expect(ring.body.data.results).toEqual([
        { callId: first, canceled: true },
        { callId: 'CALL-1700000000000-abcdef', canceled: false, reason: 'not found' },
      ]);
      expect(await settled(server, first)).toMatchObject({ status: 'cancelled', endReason: 'canceled' });
      expect(await settled(server, second)).toMatchObject({ status: 'cancelled', endReason: 'canceled' });
      expect((await hooks.waitFor(first, 'post-conversation')).metadata.callData.callStatus).toBe('canceled');
      const again = await server.request('POST', `${A}/conversation/${first}/cancel`);
      expect(again.status).toBe(400);
      expect(again.text).toMatch(/already cancelled/);
      // sipp saw the first call's INVITE and CANCEL, and never the second call.
      await sleep(1500);
      expect(rings.arrivals().map((x) => x.to)).toEqual(['+15550300005']);
      const received = sippMessages((await rings.stop()).messages).filter((m) => m.direction === 'received');
      expect(received.some((m) => m.method === 'CANCEL')).toBe(true);
      expect((await server.request('GET', `${A}/conversation/${first}/retries`)).body.data).toEqual({ retries: [] });
    } finally {
      await rings.stop();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 40_000);
  it('cancels by the hosted SDK\'s body {callId, reason}: an answered call is ended (BYE), an ended one is 400, an unknown one 404; the path form takes only queued calls', async () => {
    const sipp = await startSipp({ scenario: 'uas', calls: 1, timeoutS: 40 });
    const trunk = await outboundTrunk(server, sipp.port, { numbers: ['+15550200010'] });
    const waiting = await workflowAgent(server, 'Hello, this is Parley. Take your time.');
    try {
      const cancel = (body: unknown) => server.request('POST', `${A}/conversation/cancel`, { body });
      const missing = await cancel({ reason: 'x' });
      expect(missing.status, missing.text).toBe(400);
      expect(missing.body.errors).toContain('callId: required');
      expect((await cancel({ callId: 7 })).body.errors).toContain('callId: must be a call id string');
      expect((await cancel({ callId: 'CALL-1700000000000-abcdef' })).status).toBe(404);
      const placed = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId: waiting, phoneNumber: '+15550300010', fromNumber: '+15550200010' } });
      expect(placed.status, placed.text).toBe(200);
      const callId = placed.body.data.conversationId as string;
      await waitForStatus(server, callId, (s) => s === 'in_progress', 15_000);
      const notQueued = await server.request('POST', `${A}/conversation/${callId}/cancel`);
      expect(notQueued.status, notQueued.text).toBe(400);
      expect(notQueued.text).toMatch(/is not in queue and cannot be cancelled/);
      const ended = await cancel({ callId, reason: 'the customer asked us to stop' });
      expect(ended.status, ended.text).toBe(200);
      expect(ended.body.data).toEqual({ callId, status: 'cancelled', previousStatus: 'in_progress' });
      expect(await settled(server, callId)).toMatchObject({ status: 'completed', endReason: 'canceled' });
      const done = await sipp.done;
      expect(sippMessages(done.messages).some((m) => m.direction === 'received' && m.method === 'BYE')).toBe(true);
      const again = await cancel({ callId });
      expect(again.status).toBe(400);
      expect(again.text).toMatch(/already completed and cannot be cancelled/);
      expect((await server.request('POST', `${A}/conversation/CALL-1700000000000-abcdef/cancel`)).status).toBe(404);
    } finally {
      sipp.kill();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 60_000);

  it('places a telephony test call (mode telephony, toPhone) from the agent\'s caller ID, running the open draft; it is recorded isTest', async () => {
    const sipp = await startSipp({ scenario: 'uas', calls: 1, timeoutS: 40 });
    const trunk = await outboundTrunk(server, sipp.port, { numbers: ['+15550200011'] });
    const tested = await workflowAgent(server, 'Live hello.');
    try {
      const main = await mainBranchId(server, tested);
      const testCall = (body: unknown) => server.request('POST', `${A}/agent/${tested}/branches/${main}/test-call`, { body });
      // No number to call from yet.
      const draft = await server.request('PUT', `${A}/agent/${tested}/branches/${main}/draft`, { body: { workflowGraph: { nodes: [{ id: 'a', type: 'end_call', text: 'Draft hello, goodbye.' }], edges: [] } } });
      expect(draft.status, draft.text).toBe(200);
      const noFrom = await testCall({ mode: 'telephony', toPhone: '+15550300011', includeDraft: true });
      expect(noFrom.status, noFrom.text).toBe(400);
      expect(noFrom.text).toMatch(/fromNumber: required: the agent has no number to call from/);
      expect((await testCall({ mode: 'telephony' })).body.errors).toContain('toPhone: required with mode telephony (the E.164 number the agent calls)');
      expect((await testCall({ mode: 'webcall', toPhone: '+15550300011' })).body.errors).toContain('toPhone: only with mode telephony');
      const callerId = await server.request('POST', `${A}/agent/${tested}/caller-ids`, { body: { sipTrunkId: trunk, phoneNumber: '+15550200011' } });
      expect(callerId.status, callerId.text).toBeLessThan(300);
      const placed = await testCall({ mode: 'telephony', toPhone: '+15550300011', includeDraft: true, variables: { customer_name: 'Ada' } });
      expect(placed.status, placed.text).toBe(200);
      expect(placed.body.data).toMatchObject({ mode: 'telephony', toPhone: '+15550300011', fromNumber: '+15550200011', target: 'draft' });
      expect(placed.body.data.token).toBeUndefined();
      const callId = placed.body.data.callId as string;
      expect(placed.body.data.conversationId).toBe(callId);
      const record = await settled(server, callId);
      expect(record).toMatchObject({ status: 'completed', type: 'telephony_outbound', isTest: true, from: '+15550200011', to: '+15550300011' });
      expect(record.transcript.map((t: { content: string }) => t.content).join(' ')).toMatch(/Draft hello/);
      expect(record.variables).toMatchObject({ customer_name: 'Ada' });
      const invite = sippMessages((await sipp.done).messages).find((m) => m.direction === 'received' && m.method === 'INVITE');
      expect(invite?.startLine).toMatch(/^INVITE sip:\+15550300011@/);
    } finally {
      sipp.kill();
      await server.request('DELETE', `${A}/agent/${tested}/caller-ids/${encodeURIComponent('+15550200011')}`);
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 60_000);

  it('dials from the deprecated fromProductId, and from the caller-ids default when fromNumber is omitted, with Deprecation: true', async () => {
    const sipp = await startSippCarrier({ answer: 486, calls: 2, timeoutS: 20 });
    // The legacy import: an inbound trunk with the number, an outbound trunk to the carrier; its product id names the number.
    const imported = await server.request('POST', `${A}/product/import-phone-number`, { body: { phoneNumber: '+15550200006', sipTerminationUrl: `127.0.0.1:${sipp.port}` } });
    expect(imported.status, imported.text).toBe(200);
    const { outboundSipTrunkId, inboundSipTrunkId } = imported.body.data.attributes;
    const other = await workflowAgent(server, 'Hello from the bridge.');
    try {
      const byProduct = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: '+15550300007', fromProductId: imported.body.data._id } });
      expect(byProduct.status, byProduct.text).toBe(200);
      expect(byProduct.headers.get('deprecation')).toBe('true');
      expect(await settled(server, byProduct.body.data.conversationId)).toMatchObject({ from: '+15550200006', to: '+15550300007', callFailureReason: 'busy' });

      const none = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId: other, phoneNumber: '+15550300008' } });
      expect(none.status).toBe(400);
      expect(none.text).toMatch(/fromNumber: required \(the agent has no default caller ID/);
      const bridged = await server.request('POST', `${A}/agent/${other}/caller-ids`, { body: { sipTrunkId: outboundSipTrunkId, phoneNumber: '+15550200006' } });
      expect(bridged.status, bridged.text).toBe(201);
      const byDefault = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId: other, phoneNumber: '+15550300008' } });
      expect(byDefault.status, byDefault.text).toBe(200);
      expect(byDefault.headers.get('deprecation')).toBe('true');
      expect(await settled(server, byDefault.body.data.conversationId)).toMatchObject({ from: '+15550200006', to: '+15550300008', callFailureReason: 'busy' });
      const unknownProduct = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: '+15550300007', fromProductId: 'ffffffffffffffffffffffff' } });
      expect(unknownProduct.status).toBe(400);
      expect(unknownProduct.text).toMatch(/fromProductId: ffffffffffffffffffffffff is not a number your organization dials from/);
    } finally {
      await sipp.stop();
      expect((await server.request('DELETE', `${A}/agent/${other}/caller-ids/${encodeURIComponent('+15550200006')}`)).status).toBe(200);
      for (const t of [inboundSipTrunkId, outboundSipTrunkId]) expect((await server.request('DELETE', `${A}/sip-trunk/${t}`)).status, `trunk ${t}`).toBe(200);
    }
  }, 40_000);

  it('lets PARLEY_OUTBOUND_QUEUE calls wait per carrier address and refuses the next with 429 and Retry-After', async () => {
    const rings = await startSippCarrier({ answer: 'ring', calls: 1, timeoutS: 30 });
    const trunk = await outboundTrunk(server, rings.port, { numbers: ['+15550200007'], cpsLimit: 1 });
    const ids: string[] = [];
    try {
      // The first call rings (it no longer waits); the next three wait for their slots a second apart.
      ids.push(await call('+15550200007', '+15550300010'));
      await waitForStatus(server, ids[0]!, (s) => s === 'processing');
      for (let i = 1; i <= 3; i++) ids.push(await call('+15550200007', `+1555030001${i}`));
      const refused = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: '+15550300019', fromNumber: '+15550200007' } });
      expect(refused.status, refused.text).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(3);
      expect(refused.body).toMatchObject({ status: false, error_type: 'outbound_queue_full' });
      // Another carrier address has a queue of its own.
      const sipp = await startSippCarrier({ answer: 486, calls: 1, timeoutS: 20 });
      const elsewhere = await outboundTrunk(server, sipp.port, { numbers: ['+15550200008'] });
      const busy = await call('+15550200008');
      expect(await settled(server, busy)).toMatchObject({ callFailureReason: 'busy' });
      await sipp.stop();
      expect((await server.request('DELETE', `${A}/sip-trunk/${elsewhere}`)).status).toBe(200);
    } finally {
      const canceled = await server.request('POST', `${A}/conversation/cancel`, { body: { callIds: ids } });
      expect(canceled.status, canceled.text).toBe(200);
      for (const id of ids) expect((await settled(server, id)).status).toBe('cancelled');
      await rings.stop();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 40_000);
});

describe('outbound calls after the telephony window', () => {
  const suite = sipServerForSuite('sqlite', { PARLEY_TELEPHONY_REWORK_DATE: '2020-01-01' });

  it('requires fromNumber: an omitted one and the removed fromProductId are 400', async () => {
    const server = suite.server;
    const agentId = await workflowAgent(server, 'Hello.');
    const omitted = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: '+15550300001' } });
    expect(omitted.status).toBe(400);
    expect(omitted.text).toMatch(/fromNumber: required, the E\.164 number your organization dials from/);
    expect(omitted.headers.get('deprecation')).toBeNull();
    const product = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: '+15550300001', fromProductId: 'x' } });
    expect(product.status).toBe(400);
    expect(product.text).toMatch(/fromProductId: unknown field/);
  });
});

/** Gaps between consecutive arrivals, ms. */
const gapsOf = (arrivals: Arrival[]) => arrivals.slice(1).map((a, i) => a.at - arrivals[i]!.at);
/**
 * The carriers of the pacing tests run under SCHED_FIFO where allowed (CI runs as root): sipp logs an INVITE when it
 * reads it, and with other suites loading both cores a starved sipp logged two INVITEs sent 204 ms apart 194 ms apart.
 */
const TIMED = canRunRealtime();

/** Queues `n` calls from `fromNumber` to distinct numbers (+1555040xxxx from `first`); returns their ids in order. */
async function queueCalls(server: TestServer, agentId: string, fromNumber: string, n: number, first: number, key?: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: `+1555040${String(first + i).padStart(4, '0')}`, fromNumber }, key });
    expect(res.status, res.text).toBe(200);
    ids.push(res.body.data.conversationId as string);
  }
  return ids;
}

describe('outbound pacing while answered calls end', () => {
  // The organization's speech-session cap (PARLEY_MAX_SPEECH_SESSIONS_PER_KEY, 6 by default) bounds its calls up at
  // once: the 7th call waits until one ends. It must then be dialed as soon as a line closes, not at the next poll
  // (500 ms later: the pace fell to 74% of cpsLimit, a gap of 914-918 ms where the cap alone asks about 500).
  const suite = sipServerForSuite('sqlite');

  it('dials a call held back by the cap as soon as an answered call ends', async () => {
    const server = suite.server;
    const carrier = await startSippCarrier({ answer: 'ok', holdMs: 1500, timeoutS: 60, realtime: TIMED });
    const trunk = await outboundTrunk(server, carrier.port, { numbers: ['+15550880001'], cpsLimit: 5 });
    try {
      const agentId = await workflowAgent(server, 'Hello there, this is a pacing test call.');
      await Promise.all(Array.from({ length: 12 }, (_, i) => server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: `+155508900${String(i).padStart(2, '0')}`, fromNumber: '+15550880001' } })));
      for (let i = 0; i < 150 && carrier.arrivals().length < 12; i++) await sleep(100);
      const gaps = gapsOf(carrier.arrivals().sort((a, b) => a.at - b.at));
      expect(gaps).toHaveLength(11);
      // Never closer than the pace; the wait for a free place no longer than the first call's end asks (about 500 ms).
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(190);
      expect(Math.max(...gaps), gaps.join(' ')).toBeLessThan(800);
    } finally {
      await carrier.stop();
      for (let i = 0; i < 100; i++) {
        if ((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status === 200) break;
        await sleep(200);
      }
    }
  }, 60_000);
});

describe.each(testDialects())('outbound pacing by cpsLimit on %s', (dialect) => {
  // A platform carrier on the same address as an outbound trunk: both dial through one pace.
  const carrierPort = 41000 + Math.floor(Math.random() * 4000) * 2;
  const suite = sipServerForSuite(dialect, { PARLEY_CARRIER_ADDRESS: `127.0.0.1:${carrierPort}`, PARLEY_CARRIER_CPS: '4' });

  it('sends INVITEs to one carrier address no closer than 1000/cpsLimit ms, first in first out', async () => {
    const server = suite.server;
    const agentId = await workflowAgent(server, 'Hello.');
    const carrier = await startSippCarrier({ answer: 486, calls: 8, timeoutS: 30, realtime: TIMED });
    const trunk = await outboundTrunk(server, carrier.port, { numbers: ['+15550200020'], cpsLimit: 5 });
    try {
      const ids = await queueCalls(server, agentId, '+15550200020', 8, 0);
      for (const id of ids) expect((await settled(server, id)).callFailureReason).toBe('busy');
      const arrivals = carrier.arrivals();
      expect(arrivals.map((a) => a.to)).toEqual(ids.map((_, i) => `+1555040${String(i).padStart(4, '0')}`));
      expect(new Set(arrivals.map((a) => a.from))).toEqual(new Set(['+15550200020']));
      expect(Math.min(...gapsOf(arrivals))).toBeGreaterThanOrEqual(200 - 5);
      expect(arrivals.at(-1)!.at - arrivals[0]!.at).toBeLessThan(7 * 200 + 400); // and it keeps up with the pace
    } finally {
      await carrier.stop();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 40_000);

  it('shares one pace between a trunk and the platform carrier on the same address, at the lower limit', async () => {
    const server = suite.server;
    const agentId = await workflowAgent(server, 'Hello.');
    const added = await runCliOn(suite.store, 'numbers', ['add', '+15550200031', '--provider', 'carrier1', '--json']);
    expect(added.code, added.stderr).toBe(0);
    expect((await server.request('POST', `${A}/product/rent-number`, { body: { phoneNumber: '+15550200031' } })).status).toBe(200);
    const carrier = await startSippCarrier({ port: carrierPort, answer: 486, calls: 8, timeoutS: 30, realtime: TIMED });
    const trunk = await outboundTrunk(server, carrierPort, { numbers: ['+15550200030'], cpsLimit: 10 });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        ids.push(...(await queueCalls(server, agentId, '+15550200030', 1, 100 + 2 * i)));
        ids.push(...(await queueCalls(server, agentId, '+15550200031', 1, 101 + 2 * i)));
      }
      for (const id of ids) expect((await settled(server, id)).callFailureReason).toBe('busy');
      const arrivals = carrier.arrivals();
      expect(arrivals).toHaveLength(8);
      expect(new Set(arrivals.map((a) => a.from))).toEqual(new Set(['+15550200030', '+15550200031']));
      // PARLEY_CARRIER_CPS 4 < the trunk's 10: 250 ms apart, whichever number dials.
      expect(Math.min(...gapsOf(arrivals))).toBeGreaterThanOrEqual(250 - 5);
    } finally {
      await carrier.stop();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 40_000);
});

describe('outbound calls survive a server restart', () => {

  it('a server killed with calls queued: the next one dials the rest, none twice, and closes the ones it may have rung', async () => {
    const store = freshStore('sqlite');
    const carrier = await startSippCarrier({ answer: 'ring', calls: 10, timeoutS: 40 });
    const env = { PARLEY_SIP_HOST: STACK_HOST, PARLEY_OUTBOUND_LEASE_SECS: '2', PARLEY_OUTBOUND_RING_SECS: '1' };
    const first = await startServer({ store, env });
    let second: TestServer | null = null;
    try {
      const agentId = await workflowAgent(first, 'Hello.');
      const trunk = await outboundTrunk(first, carrier.port, { numbers: ['+15550200040'], cpsLimit: 2 });
      expect(trunk).toBeTruthy();
      const ids = await queueCalls(first, agentId, '+15550200040', 6, 200);
      // Two INVITEs out (500 ms apart), then the server dies mid-pace.
      for (let i = 0; i < 100 && carrier.arrivals().length < 2; i++) await sleep(20);
      first.proc.kill('SIGKILL');
      await first.waitExit();
      const dialedBefore = carrier.arrivals().map((a) => a.to);
      expect(dialedBefore.length).toBeGreaterThanOrEqual(2);
      // The same store; the first server's key is the one that placed the calls.
      second = await startServer({ store, env: { ...env, PARLEY_BOOTSTRAP_KEY: first.key } });
      const s = second;
      const records = [];
      for (const id of ids) records.push(await waitForStatus(s, id, (st) => FINAL.has(st), 30_000, first.key));
      // No number was dialed twice. The calls the first server had sent or slotted for sending when it died (they may
      // have rung) are closed as failed (server_stopped) once its claim lapsed; the second server dialed the rest.
      const dialed = carrier.arrivals().map((a) => a.to);
      expect(new Set(dialed).size).toBe(dialed.length);
      const stopped = records.filter((r) => r.status === 'failed');
      for (const r of stopped) expect(r).toMatchObject({ endReason: 'server_stopped' });
      expect(stopped.length).toBeGreaterThanOrEqual(dialedBefore.length);
      expect(stopped.length).toBeLessThanOrEqual(dialedBefore.length + 1); // + the one waiting for its slot
      for (const [i, r] of records.entries()) {
        const number = `+1555040${String(200 + i).padStart(4, '0')}`;
        if (dialedBefore.includes(number)) expect(r.status, number).toBe('failed');
        else if (r.status !== 'failed') {
          expect(r, number).toMatchObject({ status: 'no_answer', endReason: 'ringing_timeout' });
          expect(dialed.filter((d) => d === number)).toHaveLength(1);
        }
      }
      expect(records.filter((r) => r.status === 'no_answer').length).toBeGreaterThanOrEqual(6 - dialedBefore.length - 1);
    } finally {
      await second?.stop();
      await first.stop();
      await carrier.stop();
      await store.cleanup();
    }
  }, 60_000);
});

describe.runIf(testDialects().includes('postgres'))('outbound pacing across two servers sharing PostgreSQL and Redis', () => {

  it('keeps one cpsLimit for both: their INVITEs to the carrier stay 1000/cps apart, each call dialed once', async () => {
    const store = freshStore('postgres');
    const carrier = await startSippCarrier({ answer: 486, calls: 12, timeoutS: 40, realtime: TIMED });
    // A Redis key prefix of this test's own is not needed: the pace key is the carrier's address, a port no other test uses.
    const env = { PARLEY_SIP_HOST: STACK_HOST, PARLEY_REDIS_URL: 'redis://127.0.0.1:6379' };
    const a = await startServer({ store, env });
    const b = await startServer({ store, env: { ...env, PARLEY_BOOTSTRAP_KEY: a.key } });
    try {
      const agentId = await workflowAgent(a, 'Hello.');
      await outboundTrunk(a, carrier.port, { numbers: ['+15550200050'], cpsLimit: 5 });
      // Each server takes six calls; both dialers serve the one queue.
      const [fromA, fromB] = await Promise.all([queueCalls(a, agentId, '+15550200050', 6, 300), queueCalls(b, agentId, '+15550200050', 6, 310, a.key)]);
      for (const id of [...fromA, ...fromB]) expect((await waitForStatus(a, id, (s) => FINAL.has(s), 20_000)).callFailureReason).toBe('busy');
      const arrivals = carrier.arrivals();
      expect(arrivals).toHaveLength(12);
      expect(new Set(arrivals.map((x) => x.to)).size).toBe(12);
      expect(Math.min(...gapsOf(arrivals))).toBeGreaterThanOrEqual(200 - 5);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await carrier.stop();
      await store.cleanup();
    }
  }, 60_000);
});

describe.each(mediaDialects())('an outbound call a person answers, on %s', (dialect) => {
  const suite = sipServerForSuite(dialect);

  it('baresip answers, hears the agent greet, says hello, and hears its goodbye before our BYE', async () => {
    const server = suite.server;
    const agent = await server.request('POST', `${A}/agent`, {
      body: {
        name: 'Order line',
        workflowType: 'workflow_graph',
        workflowGraph: {
          startNodeId: 'greet',
          nodes: [
            { id: 'greet', type: 'say', text: 'Hello, this is Parley calling about your order. Can you hear me?' },
            { id: 'bye', type: 'end_call', text: 'Thank you for confirming. Goodbye.' },
          ],
          edges: [{ from: 'greet', to: 'bye', condition: { type: 'any' } }],
        },
      },
    });
    expect(agent.status, agent.text).toBe(201);
    // The callee waits out the greeting, then says hello.
    const script = callerScript([{ silence: 6 }, { wav: `${ASTERISK_SOUNDS_DIR}/hello-world.wav` }]);
    const callee = await baresipCallee({ user: '+15550300100', wav: script, timeoutS: 40 });
    const trunk = await outboundTrunk(server, callee.port, { numbers: ['+15550200060'] });
    try {
      const callId = (await server.request('POST', `${A}/conversation/outbound`, { body: { agentId: agent.body.data, phoneNumber: '+15550300100', fromNumber: '+15550200060' } })).body.data.conversationId as string;
      await callee.established;
      const record = await settled(server, callId);
      expect(record).toMatchObject({ status: 'completed', type: 'telephony_outbound', endReason: 'ended', from: '+15550200060', to: '+15550300100' });
      expect(record.transcript.map((t: { role: string }) => t.role)).toEqual(['agent', 'user', 'agent']);
      expect(record.transcript[1].content.toLowerCase()).toMatch(/hello/);
      expect(await transcribe(server, await callee.recording())).toMatch(/calling about your order\b.*\bgoodbye/);
    } finally {
      await callee.stop();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 60_000);

  it('answers the carrier digest challenge with the trunk credentials; a wrong password fails the call (403)', async () => {
    const server = suite.server;
    const agentId = await workflowAgent(server, 'Hello.', true);
    const carrier = await startSippCarrier({ answer: 486, challenge: { username: 'parley', password: 'trunk-secret' }, calls: 2, timeoutS: 20 });
    const trunk = await outboundTrunk(server, carrier.port, { numbers: ['+15550200061'], authUsername: 'parley', authPassword: 'trunk-secret' });
    try {
      const ok = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: '+15550300101', fromNumber: '+15550200061' } });
      // Past the challenge, the carrier's own answer decides: busy.
      expect(await settled(server, ok.body.data.conversationId)).toMatchObject({ status: 'failed', callFailureReason: 'busy' });
      const patched = await server.request('PATCH', `${A}/sip-trunk/${trunk}`, { body: { authPassword: 'wrong' } });
      expect(patched.status, patched.text).toBe(200);
      const bad = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: '+15550300102', fromNumber: '+15550200061' } });
      expect(await settled(server, bad.body.data.conversationId)).toMatchObject({ status: 'failed', callFailureReason: 'sip_403' });
      const arrivals = carrier.arrivals();
      expect(arrivals).toHaveLength(4); // each call: the INVITE, then its retry with credentials
      expect(arrivals.filter((x) => x.authorization).map((x) => x.authorization)).toEqual([expect.stringMatching(/^Digest username="parley"/), expect.stringMatching(/^Digest username="parley"/)]);
      expect(JSON.stringify(arrivals)).not.toContain('trunk-secret');
    } finally {
      await carrier.stop();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 40_000);
});

describe('outbound calls of several organizations on one carrier address', () => {
  const carrierPort = 41000 + Math.floor(Math.random() * 4000) * 2 + 1;
  // One speech session per organization: an organization with a call up cannot start its next one yet.
  const suite = sipServerForSuite('sqlite', { PARLEY_CARRIER_ADDRESS: `127.0.0.1:${carrierPort}`, PARLEY_CARRIER_CPS: '10', PARLEY_MAX_SPEECH_SESSIONS_PER_KEY: '1' });

  it('an organization at its session cap does not hold up the calls of another organization queued behind its own', async () => {
    const server = suite.server;
    const other = await createOrgKey(suite.store, 'fair-b', 'org-fair-b');
    for (const [number, key] of [['+15550200061', server.key], ['+15550200062', other]] as const) {
      const added = await runCliOn(suite.store, 'numbers', ['add', number, '--provider', 'carrier1', '--json']);
      expect(added.code, added.stderr).toBe(0);
      const rented = await server.request('POST', `${A}/product/rent-number`, { body: { phoneNumber: number }, key });
      expect(rented.status, rented.text).toBe(200);
    }
    const agentA = await workflowAgent(server, 'Hello.');
    const created = await server.request('POST', `${A}/agent`, { body: { name: 'B line', workflowType: 'workflow_graph', workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Hello.' }], edges: [] } }, key: other });
    expect(created.status, created.text).toBe(201);
    const agentB = created.body.data as string;
    // The carrier answers every call and hangs up 4 s later.
    const carrier = await startSippCarrier({ port: carrierPort, answer: 'ok', holdMs: 4000, calls: 3, timeoutS: 40 });
    try {
      const place = async (agentId: string, phoneNumber: string, fromNumber: string, key: string) => {
        const res = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber, fromNumber }, key });
        expect(res.status, res.text).toBe(200);
        return res.body.data.conversationId as string;
      };
      const a1 = await place(agentA, '+15550400701', '+15550200061', server.key);
      const a2 = await place(agentA, '+15550400702', '+15550200061', server.key);
      const b1 = await place(agentB, '+15550400703', '+15550200062', other);
      for (const [id, key] of [[a1, server.key], [a2, server.key], [b1, other]] as const) await waitForStatus(server, id, (s) => FINAL.has(s), 30_000, key);
      const arrivals = carrier.arrivals();
      // B's call went while A's first call was up; A's second waited for A's first to end.
      expect(arrivals.map((a) => a.to)).toEqual(['+15550400701', '+15550400703', '+15550400702']);
      expect(arrivals[1]!.at - arrivals[0]!.at).toBeLessThan(2000);
      expect(arrivals[2]!.at - arrivals[0]!.at).toBeGreaterThan(3500);
    } finally {
      await carrier.stop();
    }
  }, 60_000);
});
