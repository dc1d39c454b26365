// Inbound calls refused or canceled, over real SIP peers (a raw caller, baresip): each trunk check's final response (403,
// 401 then 403 or an answer, 404, 480, 488, 603, 503 with Retry-After) and CANCEL before the answer (487); each refusal
// beside a call the same trunk answers, with the agent's audio, once the condition is lifted.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { PG_URL, sleep, mediaDialects, testDialects, type StoreEnv, type TestServer } from './support/server.js';
import { baresipCall, callerScript, killBaresips } from './support/baresip.js';
import { freePort, killPeers, STACK_HOST } from './support/sip-peers.js';
import { RawCaller, challengeParams, digestAnswer, type Answered } from './support/raw-caller.js';
import { answeredTrunk, peerRtpPorts, sipServerForSuite, workflowAgent } from './support/phone-server.js';

const A = '/atoms/v1';

/**
 * Holds an ACCESS EXCLUSIVE lock on the agent configuration blocks (PostgreSQL): loading an agent's configuration waits,
 * as it would on a store stalled by a long migration or a stuck transaction. Resolves with the release.
 */
async function stallAgentConfig(store: StoreEnv): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${store.env.DATABASE_SCHEMA}` });
  await client.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE blocks IN ACCESS EXCLUSIVE MODE');
  return async () => {
    await client.query('ROLLBACK');
    await client.end();
  };
}

/** Waits until the server's RTP reaches the caller (the agent speaks), then hangs up. */
async function answeredAndHungUp(caller: RawCaller, a: Answered): Promise<void> {
  expect(a.final.status, a.final.text).toBe(200);
  const before = caller.rtpPackets;
  for (let i = 0; i < 100 && caller.rtpPackets < before + 10; i++) await sleep(50);
  expect(caller.rtpPackets).toBeGreaterThanOrEqual(before + 10);
  expect(await caller.bye(a)).toBe(200);
}

const callers: RawCaller[] = [];
async function rawCaller(server: TestServer, transport: 'udp' | 'tcp' = 'udp'): Promise<RawCaller> {
  const c = await RawCaller.open({ host: STACK_HOST, port: server.sipPort }, transport);
  callers.push(c);
  return c;
}

afterEach(() => {
  killBaresips();
  killPeers();
  for (const c of callers.splice(0)) c.close();
});

describe.each(testDialects())('inbound call refusals on %s', (dialect) => {
  const suite = sipServerForSuite(dialect);
  let server: TestServer;
  let store: StoreEnv;
  let agentId: string;

  beforeAll(async () => {
    ({ server, store } = suite);
    agentId = await workflowAgent(server, 'Hello, this is the front desk.');
  });

  it('refuses a source address outside allowedAddresses with 403, and answers it once the trunk lists it', async () => {
    const trunkId = await answeredTrunk(server, agentId, { numbers: ['+15550200001'], allowedAddresses: ['10.20.0.0/16'] });
    const caller = await rawCaller(server);
    const refused = await caller.invite({ to: '+15550200001' });
    expect(refused.final.startLine).toBe('SIP/2.0 403 Forbidden');
    expect(refused.responses.map((r) => r.status)).toEqual([100, 403]);
    const patched = await server.request('PATCH', `${A}/sip-trunk/${trunkId}`, { body: { allowedAddresses: ['127.0.0.0/24'] } });
    expect(patched.status, patched.text).toBe(200);
    await answeredAndHungUp(caller, await caller.invite({ to: '+15550200001' }));
  });

  it('refuses a caller number outside allowedNumbers with 403, and answers an allowed one', async () => {
    await answeredTrunk(server, agentId, { numbers: ['+15550200002'], allowedNumbers: ['+15557770001'] });
    const caller = await rawCaller(server);
    const refused = await caller.invite({ to: '+15550200002', from: '+15557770002' });
    expect(refused.final.startLine).toBe('SIP/2.0 403 Forbidden');
    // A digits-only user part is the same number with its `+`.
    await answeredAndHungUp(caller, await caller.invite({ to: '15550200002', from: '15557770001' }));
  });

  it('challenges a trunk with credentials (401), refuses a wrong password (403) and answers the right one', async () => {
    await answeredTrunk(server, agentId, { numbers: ['+15550200003'], authUsername: 'carrier', authPassword: 'right-horse-battery' });
    const caller = await rawCaller(server);
    const challenged = await caller.invite({ to: '+15550200003' });
    expect(challenged.final.status).toBe(401);
    const c = challengeParams(challenged.final.headers['www-authenticate'] ?? '');
    expect(c).toMatchObject({ realm: 'parley', algorithm: 'MD5', qop: 'auth' });
    expect(c.nonce).toMatch(/\S{10,}/);
    const uri = challenged.invite.uri;
    const wrong = await caller.invite({ to: '+15550200003', retry: challenged.invite, authorization: digestAnswer(challenged.final, uri, 'carrier', 'wrong-horse') });
    expect(wrong.final.startLine).toBe('SIP/2.0 403 Forbidden');
    const wrongUser = await caller.invite({ to: '+15550200003', retry: wrong.invite, authorization: digestAnswer(challenged.final, uri, 'someone', 'right-horse-battery') });
    expect(wrongUser.final.status).toBe(403);
    const right = await caller.invite({ to: '+15550200003', retry: wrongUser.invite, authorization: digestAnswer(challenged.final, uri, 'carrier', 'right-horse-battery') });
    await answeredAndHungUp(caller, right);
  });

  it('answers 404 for a number nobody answers and for a number on no trunk', async () => {
    await answeredTrunk(server, null, { numbers: ['+15550200004'] });
    const caller = await rawCaller(server);
    expect((await caller.invite({ to: '+15550200004' })).final.startLine).toBe('SIP/2.0 404 Not Found');
    expect((await caller.invite({ to: '+15550299999' })).final.startLine).toBe('SIP/2.0 404 Not Found');
    expect((await caller.invite({ to: 'not-a-number' })).final.status).toBe(404);
  });

  it('refuses an SRTP-only offer under mediaEncryption disable with 488, and answers a plain one', async () => {
    await answeredTrunk(server, agentId, { numbers: ['+15550200005'], mediaEncryption: 'disable' });
    const caller = await rawCaller(server);
    const refused = await caller.invite({ to: '+15550200005', sdp: caller.offer('srtp') });
    expect(refused.final.startLine).toBe('SIP/2.0 488 Not Acceptable Here');
    expect(refused.final.headers.warning).toMatch(/^399 parley ".*SRTP-only offer.*disabled/);
    await answeredAndHungUp(caller, await caller.invite({ to: '+15550200005', sdp: caller.offer('plain') }));
  });

  it('refuses a plain offer under mediaEncryption require with 488, and answers an SRTP offer with SRTP', async () => {
    await answeredTrunk(server, agentId, { numbers: ['+15550200006'], mediaEncryption: 'require' });
    const caller = await rawCaller(server);
    const refused = await caller.invite({ to: '+15550200006', sdp: caller.offer('plain') });
    expect(refused.final.startLine).toBe('SIP/2.0 488 Not Acceptable Here');
    expect(refused.final.headers.warning).toMatch(/requires SRTP/);
    const answered = await caller.invite({ to: '+15550200006', sdp: caller.offer('srtp') });
    expect(answered.final.status).toBe(200);
    expect(answered.final.body).toMatch(/^m=audio \d+ RTP\/SAVP 0 101\r$/m);
    expect(answered.final.body).toMatch(/^a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\S+\r$/m);
    expect(await caller.bye(answered)).toBe(200);
  });

  it('declines with 603 while the deprecated allowInboundCall is false (telephony window open), and answers once it is true', async () => {
    const agent = await workflowAgent(server, 'Hello from the switched agent.');
    await answeredTrunk(server, agent, { numbers: ['+15550200007'] });
    const off = await server.request('PATCH', `${A}/agent/${agent}`, { body: { allowInboundCall: false } });
    expect(off.status, off.text).toBe(200);
    expect(off.headers.get('deprecation')).toBe('true');
    const caller = await rawCaller(server);
    expect((await caller.invite({ to: '+15550200007' })).final.startLine).toBe('SIP/2.0 603 Decline');
    expect((await server.request('PATCH', `${A}/agent/${agent}`, { body: { allowInboundCall: true } })).status).toBe(200);
    await answeredAndHungUp(caller, await caller.invite({ to: '+15550200007' }));
  });

  it('answers a CANCEL that arrives before the answer with 200, and the INVITE with 487 (never 200)', async () => {
    await answeredTrunk(server, agentId, { numbers: ['+15550200008'] });
    // Over TCP, INVITE and CANCEL in one segment: the CANCEL is read before any answer can be sent.
    const caller = await rawCaller(server, 'tcp');
    const pending = caller.build({ to: '+15550200008' });
    caller.peer.send(pending.text + caller.cancelText(pending));
    const cancelOk = await caller.peer.waitFor((m) => m.headers.cseq === `${pending.cseq} CANCEL`, 5000, pending.since);
    expect(cancelOk.startLine).toBe('SIP/2.0 200 OK');
    const final = await caller.final(pending);
    expect(final.final.startLine).toBe('SIP/2.0 487 Request Terminated');
    await sleep(500);
    expect(final.responses.concat(caller.peer.received.slice(pending.since)).some((m) => m.status === 200 && m.headers.cseq === `${pending.cseq} INVITE`)).toBe(false);
    // The canceled call is on record: status cancelled, no duration, no transcript.
    const record = await unansweredRecord(server, 'cancelled', '15550200008');
    expect(record).toMatchObject({ type: 'telephony_inbound', to: '+15550200008', status: 'cancelled', endReason: 'canceled', duration: 0, transcript: [] });
  });

  it('challenges baresip on a trunk with credentials: the right password is answered, a wrong one refused with 403', async () => {
    await answeredTrunk(server, agentId, { numbers: ['+15550200009'], authUsername: 'pbx', authPassword: 'baresip-secret' });
    const script = callerScript([{ silence: 2 }]);
    const dial = async (password: string, timeoutS: number) =>
      baresipCall({ target: `sip:15550200009@${STACK_HOST}:${server.sipPort}`, wav: script, sipPort: await freePort(), rtpPorts: peerRtpPorts(), auth: { username: 'pbx', password }, timeoutS });
    const right = await dial('baresip-secret', 4);
    expect(right.established, right.log).toBe(true);
    expect(right.log).toMatch(/SIP Progress: 180 Ringing/);
    const wrong = await dial('not-the-secret', 3);
    expect(wrong.established, wrong.log).toBe(false);
    expect(wrong.log).toMatch(/session closed: 403 Forbidden/);
  }, 20_000);

  it.skipIf(dialect !== 'postgres')('answers 480 when the agent is not ready within ringingTimeoutSecs, after ringing (180)', async () => {
    await answeredTrunk(server, agentId, { numbers: ['+15550200010'], ringingTimeoutSecs: 1 });
    const caller = await rawCaller(server);
    const release = await stallAgentConfig(store);
    try {
      const pending = caller.send({ to: '+15550200010' });
      const ringing = await caller.peer.waitFor((m) => m.status === 180 && m.headers['call-id'] === pending.callId, 5000, pending.since);
      const answered = await caller.final(pending);
      expect(answered.final.startLine).toBe('SIP/2.0 480 Temporarily Unavailable');
      expect(answered.responses.map((r) => r.status)).toEqual([100, 180, 480]);
      // The ringing timeout (1 s) runs from the 180.
      expect(answered.final.at - ringing.at).toBeGreaterThanOrEqual(950);
      expect(answered.final.at - ringing.at).toBeLessThan(2000);
    } finally {
      await release();
    }
    expect(await unansweredRecord(server, 'no_answer', '15550200010')).toMatchObject({ status: 'no_answer', endReason: 'ringing_timeout', to: '+15550200010' });
    // The same trunk answers once the agent's configuration loads in time.
    await answeredAndHungUp(caller, await caller.invite({ to: '+15550200010' }));
  });

  it.skipIf(dialect !== 'postgres')('answers a CANCEL while ringing with 200, and the INVITE with 487', async () => {
    await answeredTrunk(server, agentId, { numbers: ['+15550200011'], ringingTimeoutSecs: 10 });
    const caller = await rawCaller(server);
    const release = await stallAgentConfig(store);
    try {
      const pending = caller.send({ to: '+15550200011' });
      await caller.peer.waitFor((m) => m.status === 180 && m.headers['call-id'] === pending.callId, 5000, pending.since);
      expect((await caller.cancel(pending)).startLine).toBe('SIP/2.0 200 OK');
      const final = await caller.final(pending);
      expect(final.final.startLine).toBe('SIP/2.0 487 Request Terminated');
      expect(final.responses.map((r) => r.status)).toEqual([100, 180, 487]);
    } finally {
      await release();
    }
    await sleep(300);
    expect(caller.peer.received.some((m) => m.status === 200 && /INVITE$/.test(m.headers.cseq ?? ''))).toBe(false);
  });
});

/** The record of a call that ended before the answer (written just after the final response): polled by status and number. */
async function unansweredRecord(server: TestServer, status: string, number: string): Promise<any> {
  for (let i = 0; i < 50; i++) {
    const list = await server.request('GET', `${A}/conversation?statusFilter=${status}&search=${number}`);
    const log = list.body.data?.logs?.[0];
    if (log) return (await server.request('GET', `${A}/conversation/${log.callId}`)).body.data;
    await sleep(100);
  }
  throw new Error(`no ${status} call to ${number}`);
}

describe.each(mediaDialects())('inbound calls over capacity on %s', (dialect) => {
  const suite = sipServerForSuite(dialect, { PARLEY_MAX_SPEECH_SESSIONS: '1' });
  let server: TestServer;

  beforeAll(() => {
    server = suite.server;
  });

  it('refuses a second call with 503 and Retry-After while one is up; the first keeps its audio, and the place frees up', async () => {
    const agentId = await workflowAgent(server, 'Hello, you are through to the only line. Please hold while I look that up for you.');
    await answeredTrunk(server, agentId, { numbers: ['+15550300001'] });
    const first = await rawCaller(server);
    const up = await first.invite({ to: '+15550300001' });
    expect(up.final.status).toBe(200);
    const second = await rawCaller(server);
    const refused = await second.invite({ to: '+15550300001' });
    expect(refused.final.startLine).toBe('SIP/2.0 503 Service Unavailable');
    expect(refused.final.headers['retry-after']).toBe('5');
    // The call already up goes on sending audio.
    const during = first.rtpPackets;
    await sleep(1000);
    expect(first.rtpPackets - during).toBeGreaterThanOrEqual(40);
    // The caller hangs up while the agent still speaks: the place is free at once.
    expect(await first.bye(up)).toBe(200);
    await answeredAndHungUp(second, await second.invite({ to: '+15550300001' }));
    // A call canceled before the answer gives its place back too.
    const canceling = await rawCaller(server, 'tcp');
    const pending = canceling.build({ to: '+15550300001' });
    canceling.peer.send(pending.text + canceling.cancelText(pending));
    expect((await canceling.final(pending)).final.status).toBe(487);
    await sleep(200);
    await answeredAndHungUp(first, await first.invite({ to: '+15550300001' }));
  });

  it.skipIf(dialect !== 'postgres')('a call canceled while ringing gives its place back at once, even while its agent is still loading', async () => {
    const agentId = await workflowAgent(server, 'Hello, you are through.');
    await answeredTrunk(server, agentId, { numbers: ['+15550300002'], ringingTimeoutSecs: 20 });
    const caller = await rawCaller(server);
    const release = await stallAgentConfig(suite.store);
    try {
      const first = caller.send({ to: '+15550300002' });
      await caller.peer.waitFor((m) => m.status === 180 && m.headers['call-id'] === first.callId, 5000, first.since);
      await caller.cancel(first);
      expect((await caller.final(first)).final.status).toBe(487);
      // The only place is free again: the next call rings (it is not refused with 503).
      const second = caller.send({ to: '+15550300002' });
      const next = await caller.peer.waitFor((m) => m.headers['call-id'] === second.callId && (m.status === 180 || (m.status as number) >= 300), 5000, second.since);
      expect(next.startLine).toBe('SIP/2.0 180 Ringing');
      await caller.cancel(second);
      expect((await caller.final(second)).final.status).toBe(487);
    } finally {
      await release();
    }
  });
});
