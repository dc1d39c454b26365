// Outbound calls (wire §4) against the real server and a real SIP callee: the request's checks and errors, a call placed
// through an outbound trunk to sipp (the INVITE's From and Request-URI, the agent speaking, its BYE, the record and the
// webhooks as the spec says for telephony_outbound), and cancel and retries.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sleep, testDialects, type TestServer } from './support/server.js';
import { killPeers, sippMessages, sippResponse, sippScenario, startSipp, writeScenario } from './support/sip-peers.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sipServerForSuite, workflowAgent } from './support/phone-server.js';

const A = '/atoms/v1';

afterEach(() => {
  killPeers();
});

/** A callee that answers each INVITE with `status` (after a 180), e.g. 486 Busy Here. */
const refusing = (status: string) =>
  writeScenario(`refuse-${status.slice(0, 3)}`, sippScenario('refuse', ['<recv request="INVITE" />', sippResponse('180 Ringing', { toTag: '01' }), sippResponse(status, { toTag: '01' }), '<recv request="ACK" />']));

/** A callee that rings and never answers; a CANCEL gets 200, and the INVITE 487. */
const ringing = () =>
  writeScenario(
    'ring',
    sippScenario('ring', [
      '<recv request="INVITE" />',
      sippResponse('180 Ringing', { toTag: '01' }),
      '<recv request="CANCEL" />',
      sippResponse('200 OK'),
      sippResponse('487 Request Terminated', { toTag: '01', cseq: '1 INVITE' }),
      '<recv request="ACK" />',
    ]),
  );

/** Webhook events delivered to a local receiver. */
class Hooks {
  readonly received: any[] = [];
  private server!: Server;
  url = '';
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }
  of(callId: string, eventType: string): any[] {
    return this.received.filter((e) => e.metadata?.callId === callId && e.metadata?.eventType === eventType);
  }
  async waitFor(callId: string, eventType: string, timeoutMs = 15_000): Promise<any> {
    const until = Date.now() + timeoutMs;
    while (this.of(callId, eventType).length === 0) {
      if (Date.now() > until) throw new Error(`no ${eventType} for ${callId}`);
      await sleep(50);
    }
    return this.of(callId, eventType)[0];
  }
  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** An outbound trunk to a carrier on 127.0.0.1:`port` (fields as given); returns its id. */
async function outboundTrunk(server: TestServer, port: number, body: Record<string, unknown> = {}): Promise<string> {
  const res = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Carrier out', address: `127.0.0.1:${port}`, numbers: ['+15550200001'], ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.data._id as string;
}

async function waitForStatus(server: TestServer, callId: string, wanted: (s: string) => boolean, timeoutMs = 10_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await server.request('GET', `${A}/conversation/${callId}`);
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
  const suite = sipServerForSuite(dialect, { PARLEY_OUTBOUND_RING_SECS: '3' });
  let server: TestServer;
  let agentId: string;

  const hooks = new Hooks();

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
  it('records a busy callee (486) as failed with callFailureReason busy, and callStatus busy in post-conversation', async () => {
    const sipp = await startSipp({ scenario: refusing('486 Busy Here'), calls: 1, timeoutS: 20 });
    const trunk = await outboundTrunk(server, sipp.port, { numbers: ['+15550200002'] });
    try {
      const callId = await call('+15550200002');
      const record = await settled(server, callId);
      expect(record).toMatchObject({ status: 'failed', type: 'telephony_outbound', callFailureReason: 'busy', endReason: 'busy' });
      const post = await hooks.waitFor(callId, 'post-conversation');
      expect(post.metadata.callData).toMatchObject({ callStatus: 'busy', callDirection: 'telephony_outbound' });
      expect(hooks.of(callId, 'pre-conversation')).toHaveLength(1);
    } finally {
      sipp.kill();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 30_000);

  it('records 480 as no_answer, and a call ringing past PARLEY_OUTBOUND_RING_SECS as no_answer after our CANCEL', async () => {
    const unavailable = await startSipp({ scenario: refusing('480 Temporarily Unavailable'), calls: 1, timeoutS: 20 });
    const t1 = await outboundTrunk(server, unavailable.port, { numbers: ['+15550200003'] });
    const rings = await startSipp({ scenario: ringing(), calls: 1, timeoutS: 20 });
    const t2 = await outboundTrunk(server, rings.port, { numbers: ['+15550200004'] });
    try {
      const [a, b] = await Promise.all([call('+15550200003'), call('+15550200004')]);
      expect(await settled(server, a)).toMatchObject({ status: 'no_answer', endReason: 'no_answer' });
      const started = Date.now();
      const record = await settled(server, b);
      expect(record).toMatchObject({ status: 'no_answer', endReason: 'ringing_timeout' });
      expect(Date.now() - started).toBeLessThan(8000);
      expect((await hooks.waitFor(b, 'post-conversation')).metadata.callData.callStatus).toBe('no-answer');
      const sawCancel = sippMessages((await rings.done).messages).some((m) => m.direction === 'received' && m.method === 'CANCEL');
      expect(sawCancel).toBe(true);
    } finally {
      unavailable.kill();
      rings.kill();
      for (const t of [t1, t2]) expect((await server.request('DELETE', `${A}/sip-trunk/${t}`)).status).toBe(200);
    }
  }, 40_000);

  it('cancels a ringing call (our CANCEL, status cancelled) and a queued one (never dialed); answered or ended calls cannot be canceled', async () => {
    const rings = await startSipp({ scenario: ringing(), calls: 1, timeoutS: 30 });
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
      rings.kill();
      const received = sippMessages((await rings.done).messages).filter((m) => m.direction === 'received');
      expect(received.filter((m) => m.method === 'INVITE').map((m) => m.startLine)).toEqual([expect.stringContaining('+15550300005')]);
      expect(received.some((m) => m.method === 'CANCEL')).toBe(true);
      expect((await server.request('GET', `${A}/conversation/${first}/retries`)).body.data).toEqual({ retries: [] });
    } finally {
      rings.kill();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 40_000);
});
