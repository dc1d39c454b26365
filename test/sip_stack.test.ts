// The SIP signalling leg against real peers: sipp calling our UAS and answering our UAC over UDP and TCP, our BYE,
// OPTIONS and 405/481 defaults, CANCEL before the answer, digest both ways, 2xx retransmission until the ACK (and BYE
// without one), and nothing left open after close().
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { SipStack } from '../telephony/sip/stack.js';
import { loadSettings } from '../server/settings.js';
import { challenge, verify } from '../telephony/sip/digest.js';
import { SipError } from '../telephony/sip/message.js';
import type { Dialog, DialogDestroyInfo } from '../telephony/sip/dialog.js';
import {
  PEER_HOST,
  STACK_HOST,
  RawSipPeer,
  killPeers,
  newBranch,
  rawRequest,
  sdpOffer,
  sippMessages,
  sippByeAnswered,
  sippCallSetup,
  sippResponse,
  sippScenario,
  sippSdp,
  startSipp,
  writeScenario,
  type RawSipMessage,
} from './support/sip-peers.js';
import { canRunRealtime, startSippCarrier } from './support/sip-callee.js';

const OUR_SDP = ['v=0', `o=- 7 7 IN IP4 ${STACK_HOST}`, 's=-', `c=IN IP4 ${STACK_HOST}`, 't=0 0', 'm=audio 41000 RTP/AVP 0 101', 'a=rtpmap:0 PCMU/8000', ''].join('\r\n');
const REALM = 'parley.test';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sdpLines = (sdp: string) => sdp.split(/\r?\n/).filter(Boolean);

async function waitUntil<T>(fn: () => T | undefined | false, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

interface CallLog {
  dialogs: Dialog[];
  destroys: { callId: string; info: DialogDestroyInfo }[];
  byeAnswered: string[];
  cancels: string[];
  uasErrors: { callId: string; err: unknown }[];
  infos: { callId: string; contentType?: string; body: string }[];
}

/** The application under test: Request-URI users pick a behaviour. */
function testApp(stack: SipStack): CallLog {
  const log: CallLog = { dialogs: [], destroys: [], byeAnswered: [], cancels: [], uasErrors: [], infos: [] };
  stack.use('INVITE', async (req, res) => {
    const user = req.ruri.user ?? '';
    if (user === 'slow') {
      res.send(180);
      await new Promise<void>((r) => req.once('cancel', () => r()));
      log.cancels.push(req.headers.callId);
    } else if (user.startsWith('auth')) {
      const verdict = verify(req, { username: 'alice', password: 's3cret', realm: REALM }, { nonceTtlMs: user === 'auth-short' ? 300 : undefined });
      if (verdict === 'missing') return void challenge(res, REALM);
      if (verdict === 'wrong') return void res.send(403);
    } else if (user !== 'answer' && user !== 'hangup') {
      return void res.send(404);
    }
    try {
      const d = await stack.createUAS(req, res, { localSdp: OUR_SDP, headers: { 'X-Parley-Test': 'yes' } });
      log.dialogs.push(d);
      d.on('destroy', (info) => log.destroys.push({ callId: d.callId, info }));
      d.on('info', (r) => log.infos.push({ callId: d.callId, contentType: r.headers.contentType, body: r.body }));
      if (user === 'hangup') setTimeout(() => void d.destroy({ reason: 'agent-ended' }).then(() => log.byeAnswered.push(d.callId)), 300);
    } catch (err) {
      log.uasErrors.push({ callId: req.headers.callId, err });
    }
  });
  return log;
}

/** A raw peer's response to a request it received (a To tag added when there is none). */
function replyTo(m: RawSipMessage, status: string, extra = ''): string {
  const to = /;tag=/.test(m.headers.to!) ? m.headers.to : `${m.headers.to};tag=peer`;
  return `SIP/2.0 ${status}\r\nVia: ${m.headers.via}\r\nFrom: ${m.headers.from}\r\nTo: ${to}\r\nCall-ID: ${m.headers['call-id']}\r\nCSeq: ${m.headers.cseq}\r\n${extra}Content-Length: 0\r\n\r\n`;
}

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

/** The test's own digest answer (RFC 2617, qop=auth), independent of the stack's code. */
function digestAnswer(wwwAuth: string, method: string, uri: string, password: string): string {
  const realm = /realm="([^"]+)"/.exec(wwwAuth)![1]!;
  const nonce = /nonce="([^"]+)"/.exec(wwwAuth)![1]!;
  const cnonce = 'abcdef0123456789';
  const response = md5(`${md5(`alice:${realm}:${password}`)}:${nonce}:00000001:${cnonce}:auth:${md5(`${method}:${uri}`)}`);
  return `Authorization: Digest username="alice", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=MD5, qop=auth, nc=00000001, cnonce="${cnonce}"`;
}

// First, while no other stack's transactions hold timers: the counts of open handles must return to where they were.
describe('SIP stack shutdown', () => {
  it('close() ends dialogs and pending requests and leaves no socket or timer behind', async () => {
    const kinds = ['UDPWrap', 'TCPServerWrap', 'TCPSocketWrap', 'Timeout'];
    const count = () => Object.fromEntries(kinds.map((k) => [k, process.getActiveResourcesInfo().filter((r) => r === k).length]));
    const before = count();
    const s = await SipStack.start({ host: STACK_HOST, port: 0 });
    const sLog = testApp(s);
    const p = await RawSipPeer.open('tcp', { host: STACK_HOST, port: s.port });
    const uri = `sip:answer@${STACK_HOST}:${s.port}`;
    const [up, unacked] = [`up-${newBranch()}`, `unacked-${newBranch()}`];
    for (const callId of [up, unacked]) p.send(rawRequest(p, { method: 'INVITE', uri, callId, body: sdpOffer(), headers: ['Content-Type: application/sdp'] }));
    const ok = await p.waitFor((m) => m.status === 200 && m.headers['call-id'] === up);
    await p.waitFor((m) => m.status === 200 && m.headers['call-id'] === unacked);
    p.send(rawRequest(p, { method: 'ACK', uri, callId: up, toTag: /tag=(\w+)/.exec(ok.headers.to!)![1] }));
    await waitUntil(() => sLog.dialogs.length === 1);
    // A call to a port nobody answers: its INVITE transaction is retransmitting when we close.
    const dead = s.createUAC(`sip:nobody@${PEER_HOST}:9`, { localSdp: OUR_SDP }).catch((e) => e);
    await sleep(50);
    await s.close();
    const err = await dead;
    expect([err.status, err.reason]).toEqual([503, 'SIP stack closed']);
    expect(sLog.destroys).toEqual([{ callId: up, info: { by: 'local', reason: 'shutdown' } }]);
    const uas = await waitUntil(() => sLog.uasErrors.find((e) => e.callId === unacked));
    expect([(uas.err as SipError).status, (uas.err as SipError).reason]).toEqual([503, 'SIP stack closed']);
    p.close();
    await sleep(50);
    const after = count();
    expect({ ...after, Timeout: 0 }).toEqual({ ...before, Timeout: 0 });
    // Other timers (the runner's) may have fired meanwhile; none of ours may remain.
    expect(after.Timeout).toBeLessThanOrEqual(before.Timeout!);
  });
});

describe('SIP settings', () => {
  it('PARLEY_SIP_PORT (default 5060, 0 any free port, off), PARLEY_SIP_HOST, PARLEY_SIP_PUBLIC_ADDRESS, the RTP ports, the media thread\'s priority, and timeout', () => {
    const media = { rtpPorts: { min: 10000, max: 20000 }, mediaProfile: 'balanced', mediaPriority: 'latency', rtpSenders: 2, rtpSendLeadMs: 10, rtpTimeoutSecs: 60 };
    expect(loadSettings({ PARLEY_SIP_HOST: '127.0.0.2' }).sip).toEqual({ port: 5060, host: '127.0.0.2', publicAddress: '127.0.0.2', ...media });
    expect(loadSettings({ PARLEY_SIP_PORT: 'off', PARLEY_SIP_PUBLIC_ADDRESS: 'sip.example.com' }).sip).toEqual({ port: null, host: '0.0.0.0', publicAddress: 'sip.example.com', ...media });
    expect(loadSettings({ PARLEY_RTP_PORTS: '30000-30099', PARLEY_RTP_TIMEOUT_SECS: '0' }).sip).toMatchObject({ rtpPorts: { min: 30000, max: 30099 }, rtpTimeoutSecs: 0 });
    // The main-thread option was removed: set at all, it refuses start-up and says where RTP runs now.
    expect(() => loadSettings({ PARLEY_MEDIA_THREAD: 'main' })).toThrow("PARLEY_MEDIA_THREAD was removed: every call's RTP runs on the media worker thread");
    expect(loadSettings({}).sip.mediaPriority).toBe('latency');
    expect(loadSettings({ PARLEY_MEDIA_PRIORITY: ' Realtime ' }).sip.mediaPriority).toBe('realtime');
    expect(loadSettings({ PARLEY_MEDIA_PRIORITY: 'normal' }).sip.mediaPriority).toBe('normal');
    expect(() => loadSettings({ PARLEY_MEDIA_PRIORITY: 'high' })).toThrow('PARLEY_MEDIA_PRIORITY must be latency, realtime, normal');
    expect(() => loadSettings({ PARLEY_RTP_PORTS: '10-20' })).toThrow(/PARLEY_RTP_PORTS must be/);
    expect(loadSettings({ PARLEY_RTP_SENDERS: '0', PARLEY_RTP_SEND_LEAD_MS: '20' }).sip).toMatchObject({ rtpSenders: 0, rtpSendLeadMs: 20 });
    expect(() => loadSettings({ PARLEY_RTP_SENDERS: '9' })).toThrow('PARLEY_RTP_SENDERS must be 0-8');
    expect(() => loadSettings({ PARLEY_RTP_SENDERS: 'two' })).toThrow('PARLEY_RTP_SENDERS must be an integer >= 0');
    expect(() => loadSettings({ PARLEY_RTP_SEND_LEAD_MS: '0' })).toThrow('PARLEY_RTP_SEND_LEAD_MS must be an integer >= 1');
    expect(() => loadSettings({ PARLEY_RTP_SEND_LEAD_MS: '41' })).toThrow('PARLEY_RTP_SEND_LEAD_MS must be 1-40');
    expect(loadSettings({ PARLEY_SIP_PORT: '0' }).sip.port).toBe(0);
    expect(loadSettings({}).sip.publicAddress).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(() => loadSettings({ PARLEY_SIP_PORT: '70000' })).toThrow('PARLEY_SIP_PORT must be a port number (0 for any free one) or off');
    expect(() => loadSettings({ PARLEY_SIP_HOST: 'localhost' })).toThrow('PARLEY_SIP_HOST must be an IPv4 address such as 0.0.0.0');
    expect(() => loadSettings({ PARLEY_SIP_PUBLIC_ADDRESS: 'not an address' })).toThrow('PARLEY_SIP_PUBLIC_ADDRESS must be an IPv4 address or a host name');
  });
});

describe('SIP stack against real peers', () => {
  let stack: SipStack;
  let log: CallLog;
  const peers: RawSipPeer[] = [];
  const peer = async (transport: 'udp' | 'tcp' = 'udp') => {
    const p = await RawSipPeer.open(transport, { host: STACK_HOST, port: stack.port });
    peers.push(p);
    return p;
  };

  beforeAll(async () => {
    stack = await SipStack.start({ host: STACK_HOST, port: 0, publicAddress: STACK_HOST });
    log = testApp(stack);
  });
  afterEach(() => {
    killPeers();
    for (const p of peers.splice(0)) p.close();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it.each(['udp', 'tcp'] as const)('sipp calls our UAS over %s: one 200 OK with our SDP, the ACK stops it, sipp BYE ends the dialog', async (transport) => {
    const run = await startSipp({ scenario: 'uac', remote: `${STACK_HOST}:${stack.port}`, transport, service: 'answer', pauseMs: 2000, timeoutS: 15 });
    const result = await run.done;
    expect(result.code, result.output).toBe(0);
    const msgs = sippMessages(result.messages);
    const invite = msgs.find((m) => m.direction === 'sent' && m.method === 'INVITE')!;
    const callId = invite.headers['call-id']!;
    const oks = msgs.filter((m) => m.direction === 'received' && m.status === 200 && m.headers.cseq === '1 INVITE');
    // sipp paused 2 s after its ACK: an unstopped retransmission would have arrived at 0.5 s.
    expect(oks).toHaveLength(1);
    const ok = oks[0]!;
    const dialog = log.dialogs.find((d) => d.callId === callId)!;
    expect(ok.headers.contact).toBe(`<sip:${STACK_HOST}:${stack.port}${transport === 'tcp' ? ';transport=tcp' : ''}>`);
    expect(ok.headers.to).toBe(`answer <sip:answer@${STACK_HOST}:${stack.port}>;tag=${dialog.localTag}`);
    expect(ok.headers['content-type']).toBe('application/sdp');
    expect(ok.headers['x-parley-test']).toBe('yes');
    expect(sdpLines(ok.body)).toEqual(sdpLines(OUR_SDP));
    expect(dialog.direction).toBe('uas');
    expect(dialog.remoteTag).toBe(/tag=(\S+)/.exec(invite.headers.from!)![1]);
    expect(dialog.source).toEqual({ transport, address: PEER_HOST, port: run.port });
    expect(dialog.remoteUri).toBe(`sip:sipp@${PEER_HOST}:${run.port}`);
    expect(dialog.remoteSdp).toContain('m=audio 6000 RTP/AVP 0');
    await waitUntil(() => log.destroys.some((d) => d.callId === callId));
    expect(log.destroys.filter((d) => d.callId === callId)).toEqual([{ callId, info: { by: 'remote', reason: 'bye' } }]);
    expect(stack.dialogs.some((d) => d.callId === callId)).toBe(false);
  });

  it.each(['udp', 'tcp'] as const)('our destroy() sends a BYE in the dialog that sipp answers (%s)', async (transport) => {
    const scenario = writeScenario('uac-waits-for-bye', sippScenario('uac waits for BYE', [...sippCallSetup(sippSdp('PCMU')), ...sippByeAnswered()]));
    const run = await startSipp({ scenario, remote: `${STACK_HOST}:${stack.port}`, transport, service: 'hangup', timeoutS: 15 });
    const result = await run.done;
    expect(result.code, result.output).toBe(0);
    const msgs = sippMessages(result.messages);
    const callId = msgs.find((m) => m.method === 'INVITE')!.headers['call-id']!;
    const dialog = log.dialogs.find((d) => d.callId === callId)!;
    const bye = msgs.find((m) => m.direction === 'received' && m.method === 'BYE')!;
    expect(bye.startLine).toBe(`BYE sip:sipp@${PEER_HOST}:${run.port};transport=${transport.toUpperCase()} SIP/2.0`);
    expect(bye.headers.from).toBe(`<sip:hangup@${STACK_HOST}:${stack.port}>;tag=${dialog.localTag}`);
    expect(bye.headers.to).toBe(`sipp <sip:sipp@${PEER_HOST}:${run.port}>;tag=${dialog.remoteTag}`);
    expect(bye.headers.cseq).toBe('1 BYE');
    expect(bye.headers['call-id']).toBe(callId);
    await waitUntil(() => log.byeAnswered.includes(callId));
    expect(log.destroys.filter((d) => d.callId === callId)).toEqual([{ callId, info: { by: 'local', reason: 'agent-ended' } }]);
  });

  it.each(['udp', 'tcp'] as const)('OPTIONS is answered 200 with Allow and Accept; other methods 405, stray BYE 481 (%s)', async (transport) => {
    const p = await peer(transport);
    const uri = `sip:${STACK_HOST}:${stack.port}`;
    p.send(rawRequest(p, { method: 'OPTIONS', uri, callId: 'opt-1' }));
    const ok = await p.waitFor((m) => m.headers['call-id'] === 'opt-1');
    expect(ok.status).toBe(200);
    expect(ok.headers.allow).toBe('INVITE, ACK, BYE, CANCEL, OPTIONS, INFO, UPDATE');
    expect(ok.headers.accept).toBe('application/sdp');
    expect(ok.headers.via).toMatch(new RegExp(`;rport=${p.port};received=${PEER_HOST.replace(/\./g, '\\.')}$`));
    expect(ok.headers.to).toMatch(/;tag=[0-9a-f]{16}$/);
    p.send(rawRequest(p, { method: 'SUBSCRIBE', uri, callId: 'sub-1' }));
    const nope = await p.waitFor((m) => m.headers['call-id'] === 'sub-1');
    expect([nope.status, nope.headers.allow]).toEqual([405, 'INVITE, ACK, BYE, CANCEL, OPTIONS, INFO, UPDATE']);
    p.send(rawRequest(p, { method: 'BYE', uri, callId: 'bye-1' }));
    p.send(rawRequest(p, { method: 'BYE', uri, callId: 'bye-2', toTag: 'nosuchdialog' }));
    expect((await p.waitFor((m) => m.headers['call-id'] === 'bye-1')).status).toBe(481);
    expect((await p.waitFor((m) => m.headers['call-id'] === 'bye-2')).status).toBe(481);
  });

  it('CANCEL before the answer: 200 to the CANCEL, 487 to the INVITE, the application is told', async () => {
    const p = await peer();
    const uri = `sip:slow@${STACK_HOST}:${stack.port}`;
    const branch = newBranch();
    const callId = `cancel-${branch}`;
    p.send(rawRequest(p, { method: 'INVITE', uri, callId, branch, body: sdpOffer(), headers: ['Content-Type: application/sdp'] }));
    expect((await p.waitFor((m) => m.status === 100 && m.headers['call-id'] === callId)).headers.to).toBe(`<${uri}>`);
    const ringing = await p.waitFor((m) => m.status === 180 && m.headers['call-id'] === callId);
    expect(ringing.headers.to).toMatch(/;tag=[0-9a-f]{16}$/);
    p.send(rawRequest(p, { method: 'CANCEL', uri, callId, branch }));
    const cancelOk = await p.waitFor((m) => m.status === 200 && m.headers.cseq === '1 CANCEL');
    const terminated = await p.waitFor((m) => m.status === 487 && m.headers.cseq === '1 INVITE');
    expect([cancelOk.headers['call-id'], terminated.headers['call-id'], terminated.startLine]).toEqual([callId, callId, 'SIP/2.0 487 Request Terminated']);
    await waitUntil(() => log.cancels.includes(callId));
    // createUAS after the CANCEL refuses: the INVITE already has its final response.
    const refused = await waitUntil(() => log.uasErrors.find((e) => e.callId === callId));
    expect(refused.err).toBeInstanceOf(SipError);
    expect((refused.err as SipError).status).toBe(487);
    // The 487 is retransmitted until its ACK (same branch), then no more.
    p.send(rawRequest(p, { method: 'ACK', uri, callId, branch, toTag: /tag=(\w+)/.exec(terminated.headers.to!)![1] }));
    await sleep(100);
    const count = p.received.filter((m) => m.status === 487).length;
    await sleep(1200);
    expect(p.received.filter((m) => m.status === 487)).toHaveLength(count);
    // A CANCEL for nothing pending.
    p.send(rawRequest(p, { method: 'CANCEL', uri, callId: 'no-such-call' }));
    expect((await p.waitFor((m) => m.headers['call-id'] === 'no-such-call')).status).toBe(481);
  });

  it('digest: 401 challenge, the right password answered 200, a wrong one 403, an expired nonce challenged again', async () => {
    const p = await peer();
    const call = async (user: string, password: string | null, wait = 0) => {
      const uri = `sip:${user}@${STACK_HOST}:${stack.port}`;
      const callId = `auth-${newBranch()}`;
      const b1 = newBranch();
      p.send(rawRequest(p, { method: 'INVITE', uri, callId, branch: b1, body: sdpOffer(), headers: ['Content-Type: application/sdp'] }));
      const c = await p.waitFor((m) => m.status === 401 && m.headers['call-id'] === callId);
      p.send(rawRequest(p, { method: 'ACK', uri, callId, branch: b1, toTag: /tag=(\w+)/.exec(c.headers.to!)![1] }));
      if (password === null) return { challenge: c };
      await sleep(wait);
      const b2 = newBranch();
      p.send(rawRequest(p, { method: 'INVITE', uri, callId, cseq: 2, branch: b2, body: sdpOffer(), headers: ['Content-Type: application/sdp', digestAnswer(c.headers['www-authenticate']!, 'INVITE', uri, password)] }));
      const final = await p.waitFor((m) => m.status! >= 200 && m.headers.cseq === '2 INVITE' && m.headers['call-id'] === callId);
      const toTag = /tag=(\w+)/.exec(final.headers.to!)![1]!;
      p.send(rawRequest(p, { method: 'ACK', uri, callId, cseq: 2, branch: final.status === 200 ? newBranch() : b2, toTag }));
      return { challenge: c, final, uri, callId, toTag };
    };
    const first = await call('auth', null);
    expect(first.challenge.headers['www-authenticate']).toMatch(/^Digest realm="parley\.test", nonce="[0-9a-z]+\.[\w-]{24}", algorithm=MD5, qop="auth"$/);
    const good = await call('auth', 's3cret');
    expect(good.final!.status).toBe(200);
    expect(sdpLines(good.final!.body)).toEqual(sdpLines(OUR_SDP));
    const dialog = await waitUntil(() => log.dialogs.find((d) => d.callId === good.callId));
    p.send(rawRequest(p, { method: 'BYE', uri: good.uri!, callId: good.callId!, cseq: 3, toTag: good.toTag }));
    expect((await p.waitFor((m) => m.headers.cseq === '3 BYE')).status).toBe(200);
    await waitUntil(() => dialog.destroyed);
    const wrong = await call('auth', 'not-it');
    expect(wrong.final!.status).toBe(403);
    const stale = await call('auth-short', 's3cret', 400);
    expect(stale.final!.status).toBe(401);
    expect(stale.final!.headers['www-authenticate']).not.toBe(stale.challenge.headers['www-authenticate']);
  });

  it('in-dialog: INFO is answered and emitted, a re-INVITE gets our SDP, an old CSeq 500, and our requests follow the route set', async () => {
    const p = await peer();
    const uri = `sip:answer@${STACK_HOST}:${stack.port}`;
    const callId = `indialog-${newBranch()}`;
    // The peer records a route through itself and gives a Contact nobody listens on: our requests must go by the route.
    const contact = `sip:tester@${PEER_HOST}:9`;
    const recordRoute = `<sip:${PEER_HOST}:${p.port};lr>`;
    p.send(rawRequest(p, { method: 'INVITE', uri, callId, contact, body: sdpOffer(), headers: ['Content-Type: application/sdp', `Record-Route: ${recordRoute}`] }));
    const ok = await p.waitFor((m) => m.status === 200 && m.headers['call-id'] === callId);
    expect(ok.headers['record-route']).toBe(recordRoute);
    const toTag = /tag=(\w+)/.exec(ok.headers.to!)![1]!;
    p.send(rawRequest(p, { method: 'ACK', uri, callId, toTag }));
    const dialog = await waitUntil(() => log.dialogs.find((d) => d.callId === callId));
    p.send(rawRequest(p, { method: 'INFO', uri, callId, cseq: 2, toTag, body: 'Signal=5\r\nDuration=160\r\n', headers: ['Content-Type: application/dtmf-relay'] }));
    expect((await p.waitFor((m) => m.headers.cseq === '2 INFO')).status).toBe(200);
    expect(log.infos.filter((i) => i.callId === callId)).toEqual([{ callId, contentType: 'application/dtmf-relay', body: 'Signal=5\r\nDuration=160\r\n' }]);
    p.send(rawRequest(p, { method: 'INVITE', uri, callId, cseq: 3, toTag, body: sdpOffer(PEER_HOST, 40002), headers: ['Content-Type: application/sdp'] }));
    const reinvite = await p.waitFor((m) => m.status === 200 && m.headers.cseq === '3 INVITE');
    expect(sdpLines(reinvite.body)).toEqual(sdpLines(OUR_SDP));
    p.send(rawRequest(p, { method: 'ACK', uri, callId, cseq: 3, toTag }));
    expect(dialog.remoteSdp).toContain('m=audio 40002 ');
    p.send(rawRequest(p, { method: 'INFO', uri, callId, cseq: 2, toTag, branch: newBranch() }));
    expect((await p.waitFor((m) => m.status === 500)).startLine).toBe('SIP/2.0 500 CSeq Out of Order');
    const sent = dialog.request('INFO', { headers: { 'Content-Type': 'application/dtmf-relay' }, body: 'Signal=1\r\n' });
    const info = await p.waitFor((m) => m.method === 'INFO');
    expect(info.startLine).toBe(`INFO ${contact} SIP/2.0`);
    expect(info.headers.route).toBe(recordRoute);
    expect([info.headers.cseq, info.headers.from, info.headers.to, info.body]).toEqual(['1 INFO', `<${uri}>;tag=${toTag}`, `<sip:tester@${PEER_HOST}>;tag=tester`, 'Signal=1\r\n']);
    p.send(replyTo(info, '200 OK'));
    expect((await sent).status).toBe(200);
    const hangup = dialog.destroy();
    const bye = await p.waitFor((m) => m.method === 'BYE');
    expect([bye.startLine, bye.headers.route, bye.headers.cseq]).toEqual([`BYE ${contact} SIP/2.0`, recordRoute, '2 BYE']);
    p.send(replyTo(bye, '200 OK'));
    await hangup;
  });

  it('request() sends an out-of-dialog request, answers a 401 once, and resolves with the final response', async () => {
    const p = await peer();
    const target = `sip:peer@${PEER_HOST}:${p.port}`;
    const done = stack.request(target, { method: 'MESSAGE', from: '+15550100', headers: { 'Content-Type': 'text/plain' }, body: 'héllo', auth: { username: 'alice', password: 's3cret' } });
    const first = await p.waitFor((m) => m.method === 'MESSAGE');
    expect(first.startLine).toBe(`MESSAGE ${target} SIP/2.0`);
    expect(first.headers.from).toMatch(new RegExp(`^ ?<sip:\\+15550100@${STACK_HOST.replace(/\./g, '\\.')}>;tag=[0-9a-f]{16}$`));
    expect([first.headers.cseq, first.headers['content-type'], Buffer.from(first.body, 'latin1').toString('utf8')]).toEqual(['1 MESSAGE', 'text/plain', 'héllo']);
    p.send(replyTo(first, '401 Unauthorized', 'WWW-Authenticate: Digest realm="peer.test", nonce="abc123", qop="auth"\r\n'));
    const second = await p.waitFor((m) => m.method === 'MESSAGE' && m.headers.cseq === '2 MESSAGE');
    const auth = second.headers.authorization!;
    const field = (k: string) => new RegExp(`${k}="?([^",]+)"?`).exec(auth)?.[1];
    const expected = md5(`${md5('alice:peer.test:s3cret')}:abc123:${field('nc')}:${field('cnonce')}:auth:${md5(`MESSAGE:${target}`)}`);
    expect([field('username'), field('realm'), field('uri'), field('response')]).toEqual(['alice', 'peer.test', target, expected]);
    p.send(replyTo(second, '202 Accepted'));
    const res = await done;
    expect([res.status, res.reason, res.source]).toEqual([202, 'Accepted', { transport: 'udp', address: PEER_HOST, port: p.port }]);
  });

  it('a 200 OK without its ACK is retransmitted at T1 doubling (0.5, 1, 2 s) and stops when the ACK comes', async () => {
    const p = await peer();
    const uri = `sip:answer@${STACK_HOST}:${stack.port}`;
    const callId = `noack-${newBranch()}`;
    p.send(rawRequest(p, { method: 'INVITE', uri, callId, body: sdpOffer(), headers: ['Content-Type: application/sdp'] }));
    const oks = () => p.received.filter((m) => m.status === 200 && m.headers['call-id'] === callId);
    await waitUntil(() => oks().length >= 4, 6000);
    const at = oks().map((m) => m.at);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(gaps).toHaveLength(3);
    [500, 1000, 2000].forEach((want, i) => expect(Math.abs(gaps[i]! - want), `gap ${i}: ${gaps.join(', ')}`).toBeLessThan(200));
    const toTag = /tag=(\w+)/.exec(oks()[0]!.headers.to!)![1]!;
    p.send(rawRequest(p, { method: 'ACK', uri, callId, toTag }));
    const dialog = await waitUntil(() => log.dialogs.find((d) => d.callId === callId));
    // The next retransmission was due 4 s after the last one (T2).
    await sleep(Math.max(0, at[3]! + 4500 - Date.now()));
    expect(oks()).toHaveLength(4);
    p.send(rawRequest(p, { method: 'BYE', uri, callId, cseq: 2, toTag }));
    await waitUntil(() => dialog.destroyed);
  }, 20_000);

  it('no ACK within 64*T1: the UAS sends BYE, createUAS rejects 408; an INVITE left unanswered gets 408', async () => {
    const fast = await SipStack.start({ host: STACK_HOST, port: 0, t1Ms: 40, t2Ms: 160, inviteTimeoutMs: 500 });
    const fastLog = testApp(fast);
    try {
      const p = await RawSipPeer.open('udp', { host: STACK_HOST, port: fast.port });
      peers.push(p);
      const uri = `sip:answer@${STACK_HOST}:${fast.port}`;
      const callId = `ackless-${newBranch()}`;
      p.send(rawRequest(p, { method: 'INVITE', uri, callId, fromTag: 'caller1', body: sdpOffer(), headers: ['Content-Type: application/sdp'] }));
      const bye = await p.waitFor((m) => m.method === 'BYE', 6000);
      const oks = p.received.filter((m) => m.status === 200);
      const sinceFirst = bye.at - oks[0]!.at;
      expect(sinceFirst).toBeGreaterThanOrEqual(64 * 40 - 20);
      expect(sinceFirst).toBeLessThan(64 * 40 + 400);
      const gaps = oks.slice(1).map((m, i) => m.at - oks[i]!.at);
      expect(Math.max(...gaps)).toBeLessThan(160 + 100);
      expect(gaps.slice(-3).every((g) => g > 100)).toBe(true);
      const ourTag = /tag=(\w+)/.exec(oks[0]!.headers.to!)![1];
      expect(bye.headers.from).toBe(`<${uri}>;tag=${ourTag}`);
      expect(bye.headers.to).toBe(`<sip:tester@${PEER_HOST}>;tag=caller1`);
      expect([bye.headers.cseq, bye.headers['call-id'], bye.startLine]).toEqual(['1 BYE', callId, `BYE sip:tester@${PEER_HOST}:${p.port} SIP/2.0`]);
      const failed = await waitUntil(() => fastLog.uasErrors.find((e) => e.callId === callId));
      expect([(failed.err as SipError).status, (failed.err as SipError).reason]).toEqual([408, 'No ACK for the 2xx']);
      // The test app rings 'slow' calls until they are canceled; the stack gives up on them after inviteTimeoutMs.
      const sent = Date.now();
      p.send(rawRequest(p, { method: 'INVITE', uri: `sip:slow@${STACK_HOST}:${fast.port}`, callId: `${callId}-slow`, body: sdpOffer(), headers: ['Content-Type: application/sdp'] }));
      const timedOut = await p.waitFor((m) => m.status === 408 && m.headers['call-id'] === `${callId}-slow`);
      expect(timedOut.at - sent).toBeGreaterThanOrEqual(480);
    } finally {
      await fast.close();
    }
  });

  it.each(['udp', 'tcp'] as const)('createUAC calls sipp -sn uas over %s: 180, 200, ACK, dialog; destroy() BYE answered', async (transport) => {
    const run = await startSipp({ scenario: 'uas', transport, timeoutS: 15 });
    const provisional: number[] = [];
    const uri = `sip:bob@${PEER_HOST}:${run.port}${transport === 'tcp' ? ';transport=tcp' : ''}`;
    const dialog = await stack.createUAC(uri, { localSdp: OUR_SDP, from: '+15550100', onProvisional: (r) => provisional.push(r.status) });
    expect(provisional).toEqual([180]);
    expect(dialog.direction).toBe('uac');
    expect(dialog.remoteTag).toMatch(/SIPpTag/);
    expect(dialog.remoteSdp).toContain('m=audio');
    expect(dialog.source).toEqual({ transport, address: PEER_HOST, port: run.port });
    expect(stack.dialogs).toContain(dialog);
    const destroyed: DialogDestroyInfo[] = [];
    dialog.on('destroy', (i) => destroyed.push(i));
    await dialog.destroy();
    expect(destroyed).toEqual([{ by: 'local', reason: 'normal' }]);
    const result = await run.done;
    expect(result.code, result.output).toBe(0);
    const msgs = sippMessages(result.messages);
    const invite = msgs.find((m) => m.method === 'INVITE')!;
    expect(invite.headers.from).toMatch(new RegExp(`^ ?<sip:\\+15550100@${STACK_HOST.replace(/\./g, '\\.')}>;tag=${dialog.localTag}$`));
    expect(invite.headers['content-type']).toBe('application/sdp');
    expect(msgs.filter((m) => m.direction === 'received').map((m) => m.method)).toEqual(['INVITE', 'ACK', 'BYE']);
    expect(msgs.find((m) => m.method === 'BYE')!.headers.cseq).toBe('2 BYE');
  });

  it('createUAC answers a 401 with digest (sipp verifies it); a wrong password ends in SipError 403; onSent hears the first INVITE only', async () => {
    const scenario = writeScenario('uas-digest', authUasScenario());
    const run = await startSipp({ scenario, timeoutS: 15 });
    const sent: number[] = [];
    const dialog = await stack.createUAC(`sip:bob@${PEER_HOST}:${run.port}`, {
      localSdp: OUR_SDP,
      auth: { username: 'alice', password: 's3cret' },
      onSent: () => sent.push(performance.now()),
    });
    const answeredAt = performance.now();
    // Once (the digest retry is not reported), and before the answer.
    expect(sent).toHaveLength(1);
    expect(sent[0]!).toBeLessThan(answeredAt);
    await dialog.destroy();
    const result = await run.done;
    expect(result.code, result.output).toBe(0);
    expect(result.logs).toContain('AUTH true');
    const second = sippMessages(result.messages).filter((m) => m.method === 'INVITE')[1]!;
    expect(second.headers.authorization).toMatch(/^Digest username="alice", realm="sipp\.test", nonce="n\d+x1", uri="sip:bob@127\.0\.0\.1:\d+", response="[0-9a-f]{32}", algorithm=MD5, qop=auth, nc=00000001, cnonce="[0-9a-f]{16}"$/);
    expect(second.headers.cseq).toBe('2 INVITE');

    const run2 = await startSipp({ scenario, timeoutS: 15 });
    const err = await stack.createUAC(`sip:bob@${PEER_HOST}:${run2.port}`, { localSdp: OUR_SDP, auth: { username: 'alice', password: 'nope' } }).catch((e) => e);
    expect(err).toBeInstanceOf(SipError);
    expect([err.status, err.reason]).toEqual([403, 'Forbidden']);
    expect((await run2.done).logs).toContain('AUTH false');
  });

  it('createUAC hands the INVITE to the socket inside the call, not on a later tick: sipp logs it while this thread is still blocked', async () => {
    // The sip package sends a new transaction's first request on process.nextTick, and dgram resolves even an IP
    // literal on one; a server busy with other work sent paced INVITEs 10-20 ms after their slot.
    const carrier = await startSippCarrier({ answer: 486, calls: 1, timeoutS: 15, realtime: canRunRealtime() });
    try {
      const epochNow = () => performance.timeOrigin + performance.now();
      const calledAt = epochNow();
      const outcome = stack.createUAC(`sip:bob@${PEER_HOST}:${carrier.port}`, { localSdp: OUR_SDP, target: { address: PEER_HOST, port: carrier.port, transport: 'udp' } }).catch((e: unknown) => e);
      // Block this thread before any tick or promise continuation can run, as a burst of request handlers does.
      while (epochNow() < calledAt + 200);
      const err = await outcome;
      expect(err).toBeInstanceOf(SipError);
      expect((err as SipError).status).toBe(486);
      const [arrival] = await waitUntil(() => (carrier.arrivals().length ? carrier.arrivals() : false));
      expect(arrival!.at - calledAt).toBeLessThan(100);
    } finally {
      await carrier.stop();
    }
  });

  it('createUAC cancels through an AbortSignal: CANCEL after the 180, sipp answers 200 and 487, we ACK', async () => {
    const scenario = writeScenario('uas-cancel', cancelUasScenario());
    const run = await startSipp({ scenario, timeoutS: 15 });
    const abort = new AbortController();
    const pending = stack.createUAC(`sip:bob@${PEER_HOST}:${run.port}`, { localSdp: OUR_SDP, signal: abort.signal, onProvisional: (r) => r.status === 180 && abort.abort() });
    const err = await pending.catch((e) => e);
    expect(err).toBeInstanceOf(SipError);
    expect(err.status).toBe(487);
    const result = await run.done;
    expect(result.code, result.output).toBe(0);
    const received = sippMessages(result.messages).filter((m) => m.direction === 'received');
    expect(received.map((m) => m.method)).toEqual(['INVITE', 'CANCEL', 'ACK']);
    const [invite, cancel, ack] = received as unknown as [RawSipMessage, RawSipMessage, RawSipMessage];
    expect(cancel.headers.via).toBe(invite.headers.via);
    expect([cancel.headers.cseq, ack.headers.cseq]).toEqual(['1 CANCEL', '1 ACK']);
  });

});

function authUasScenario(): string {
  return sippScenario('uas with digest', [
    '<recv request="INVITE" />',
    sippResponse('401 Unauthorized', { toTag: '01', headers: ['WWW-Authenticate: Digest realm="sipp.test", nonce="n[pid]x[call_number]", qop="auth", algorithm=MD5'] }),
    '<recv request="ACK" />',
    '<recv request="INVITE"><action><verifyauth assign_to="authvalid" username="alice" password="s3cret" /><log message="AUTH [$authvalid]" /></action></recv>',
    '<nop hide="true" test="authvalid" next="good" />',
    sippResponse('403 Forbidden', { toTag: '02' }),
    '<recv request="ACK" next="end" />',
    '<label id="good" />',
    sippResponse('200 OK', { toTag: '02', sdp: sippSdp('PCMU') }),
    '<recv request="ACK" />',
    ...sippByeAnswered(),
    '<label id="end" />',
  ]);
}

function cancelUasScenario(): string {
  return sippScenario('uas rings until canceled', [
    '<recv request="INVITE" />',
    sippResponse('180 Ringing', { toTag: '01' }),
    '<recv request="CANCEL" />',
    sippResponse('200 OK'),
    sippResponse('487 Request Terminated', { toTag: '01', cseq: '1 INVITE' }),
    '<recv request="ACK" />',
  ]);
}
