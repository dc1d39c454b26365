// Where a SIP peer may aim our RTP, against the whole server over raw SIP (issue 34): an INVITE whose SDP names a
// link-local, cloud metadata, multicast, broadcast or non-hold unspecified address (IPv4 or IPv6, session- or
// stream-level c=), or lists 5,000 codecs, gets 488 before any ringing, media leg or call record; a re-INVITE or UPDATE
// doing the same in an answered call gets 488 and the call goes on; a hold re-INVITE (c=0.0.0.0, a=sendonly) is
// answered as before and pauses the media timeout; an outbound callee or a transfer target answering with such an
// address is hung up with BYE (the outbound call fails `bad_answer_sdp`; the transfer fails and the agent says so).
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sleep, mediaDialects, type TestServer } from './support/server.js';
import { PEER_HOST, RawSipPeer, STACK_HOST, newBranch, type RawSipMessage } from './support/sip-peers.js';
import { RawCaller, type Answered } from './support/raw-caller.js';
import { answeredTrunk, sipServerForSuite, workflowAgent } from './support/phone-server.js';
import { endedCall } from './support/agent-client.js';

const A = '/atoms/v1';
/** The media timeout of this suite's server: a silent caller not on hold is hung up after it. */
const MEDIA_TIMEOUT_S = 3;

const peers: { close(): void }[] = [];
afterEach(() => {
  for (const p of peers.splice(0)) p.close();
});

/** The caller's offer with its c= line aimed at `address` (IPv4 or IPv6). */
const aimedAt = (caller: RawCaller, address: string) => caller.offer().replace(`c=IN IP4 ${PEER_HOST}`, `c=IN ${address.includes(':') ? 'IP6' : 'IP4'} ${address}`);
/** The caller's offer with the session-level c= kept and a stream-level one aimed at `address`. */
const streamAimedAt = (caller: RawCaller, address: string) => caller.offer().replace(/(m=audio [^\r]*\r\n)/, `$1c=IN ${address.includes(':') ? 'IP6' : 'IP4'} ${address}\r\n`);
/**
 * The caller's offer listing 5,000 codecs: PCMU 5,000 times (10 KB, under the SDP length bound), or 5,000 dynamic payload
 * types (20 KB, over it; still one UDP datagram, and under the SIP body bound).
 */
const fiveThousandCodecs = (caller: RawCaller, dynamic: boolean) =>
  caller.offer().replace(/m=audio (\d+) RTP\/AVP 0 101/, (_m, port: string) => `m=audio ${port} RTP/AVP ${Array.from({ length: 5000 }, (_, i) => (dynamic ? 100 + (i % 28) : 0)).join(' ')}`);

const audioPort = (sdp: string) => Number(/^m=audio (\d+) /m.exec(sdp)?.[1]);
const contactUri = (m: RawSipMessage) => /<([^>]+)>/.exec(m.headers.contact ?? '')![1]!;

/** The refused kinds, each as the 488's Warning names it. */
const REFUSED: Array<[string, RegExp]> = [
  ['169.254.169.254', /cloud metadata/],
  ['fd00:ec2::254', /cloud metadata/],
  ['169.254.20.30', /link-local/],
  ['fe80::1', /link-local/],
  ['224.0.0.251', /multicast, broadcast or reserved/],
  ['ff02::1', /multicast, broadcast or reserved/],
  ['255.255.255.255', /multicast, broadcast or reserved/],
  ['0.1.2.3', /unspecified/],
];

/**
 * In-dialog requests from a RawCaller on an answered call (RawCaller itself sends only INVITE, ACK, CANCEL and BYE):
 * re-INVITE (ACKed) and UPDATE with an SDP, each with the next CSeq; and BYE after them.
 */
class InDialog {
  private cseq: number;
  constructor(
    private readonly caller: RawCaller,
    private readonly call: Answered,
  ) {
    this.cseq = call.invite.cseq;
  }

  async send(method: 'INVITE' | 'UPDATE', sdp: string): Promise<RawSipMessage> {
    const { caller, call } = this;
    const cseq = ++this.cseq;
    const branch = newBranch();
    const target = contactUri(call.final);
    const since = caller.peer.received.length;
    caller.peer.send(this.request(method, target, branch, cseq, ['Content-Type: application/sdp'], sdp));
    const final = await caller.peer.waitFor((m) => m.headers['call-id'] === call.invite.callId && m.headers.cseq === `${cseq} ${method}` && (m.status as number) >= 200, 5000, since);
    // A 2xx is ACKed end to end (a new branch), a refusal on its own transaction (the same branch).
    if (method === 'INVITE') caller.peer.send(this.request('ACK', target, (final.status as number) < 300 ? newBranch() : branch, cseq, [], '', final.headers.to));
    return final;
  }

  /** A re-INVITE without SDP (our 200 carries the offer), ACKed with `answer`; resolves with the 200. */
  async lateOffer(answer: string): Promise<RawSipMessage> {
    const { caller, call } = this;
    const cseq = ++this.cseq;
    const target = contactUri(call.final);
    const since = caller.peer.received.length;
    caller.peer.send(this.request('INVITE', target, newBranch(), cseq, [], ''));
    const ok = await caller.peer.waitFor((m) => m.headers['call-id'] === call.invite.callId && m.headers.cseq === `${cseq} INVITE` && (m.status as number) >= 200, 5000, since);
    caller.peer.send(this.request('ACK', target, newBranch(), cseq, ['Content-Type: application/sdp'], answer, ok.headers.to));
    return ok;
  }

  async bye(): Promise<number> {
    return this.caller.bye({ ...this.call, invite: { ...this.call.invite, cseq: this.cseq } });
  }

  private request(method: string, uri: string, branch: string, cseq: number, headers: string[], body: string, to = this.call.final.headers.to): string {
    const { peer } = this.caller;
    const { invite } = this.call;
    return [
      `${method} ${uri} SIP/2.0`,
      `Via: SIP/2.0/UDP ${peer.host}:${peer.port};branch=${branch};rport`,
      `From: <sip:${invite.from}@${peer.host}>;tag=${invite.fromTag}`,
      `To: ${to}`,
      `Call-ID: ${invite.callId}`,
      `CSeq: ${cseq} ${method}`,
      `Contact: <sip:${invite.from}@${peer.host}:${peer.port}>`,
      'Max-Forwards: 70',
      ...headers,
      `Content-Length: ${Buffer.byteLength(body)}`,
      '',
      body,
    ].join('\r\n');
  }
}

/** A raw callee (an outbound carrier, a transfer target) on PEER_HOST: answers the next INVITE 200 with `sdp`, then answers our BYE. */
async function rawCallee(server: TestServer): Promise<RawSipPeer> {
  const peer = await RawSipPeer.open('udp', { host: STACK_HOST, port: server.sipPort });
  peers.push(peer);
  return peer;
}

/** The callee's response to a request it received, with a To tag (and its Contact and `sdp` when given). */
function respond(peer: RawSipPeer, req: RawSipMessage, status: string, sdp?: string): void {
  const to = /;tag=/.test(req.headers.to!) ? req.headers.to : `${req.headers.to};tag=callee`;
  const body = sdp ?? '';
  peer.send(
    [
      `SIP/2.0 ${status}`, `Via: ${req.headers.via}`, `From: ${req.headers.from}`, `To: ${to}`, `Call-ID: ${req.headers['call-id']}`, `CSeq: ${req.headers.cseq}`,
      ...(sdp ? [`Contact: <sip:callee@${peer.host}:${peer.port}>`, 'Content-Type: application/sdp'] : []),
      `Content-Length: ${Buffer.byteLength(body)}`, '', body,
    ].join('\r\n'),
  );
}

/** Waits for our INVITE at a raw callee, answers 200 with an SDP aimed at `address`; resolves with our ACK and BYE (answered 200). */
async function answerAimedAt(peer: RawSipPeer, address: string): Promise<{ invite: RawSipMessage; ack: RawSipMessage; bye: RawSipMessage }> {
  const invite = await peer.waitFor((m) => m.method === 'INVITE', 20_000);
  const ip = address.includes(':') ? 'IP6' : 'IP4';
  const sdp = ['v=0', `o=- 1 1 IN IP4 ${PEER_HOST}`, 's=-', `c=IN ${ip} ${address}`, 't=0 0', 'm=audio 40000 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000', 'a=sendrecv', ''].join('\r\n');
  respond(peer, invite, '200 OK', sdp);
  const callId = invite.headers['call-id'];
  const ack = await peer.waitFor((m) => m.method === 'ACK' && m.headers['call-id'] === callId, 5000);
  const bye = await peer.waitFor((m) => m.method === 'BYE' && m.headers['call-id'] === callId, 5000);
  respond(peer, bye, '200 OK');
  return { invite, ack, bye };
}

describe.each(mediaDialects())('SDP media addresses and limits on %s', (dialect) => {
  const suite = sipServerForSuite(dialect, { PARLEY_RTP_TIMEOUT_SECS: String(MEDIA_TIMEOUT_S) });
  let server: TestServer;
  let agentId: string;

  beforeAll(async () => {
    server = suite.server;
    agentId = await workflowAgent(server, 'Hello, this is the front desk. How can I help you today?');
  });

  async function rawCaller(): Promise<RawCaller> {
    const c = await RawCaller.open({ host: STACK_HOST, port: server.sipPort });
    peers.push(c);
    return c;
  }

  /** The inbound calls recorded to a number. */
  async function callsTo(number: string): Promise<{ callId: string }[]> {
    const list = await server.request('GET', `${A}/conversation?callTypes=telephony_inbound&search=${number.replace('+', '')}`);
    expect(list.status, list.text).toBe(200);
    return list.body.data.logs;
  }

  it('refuses INVITEs aiming RTP at link-local, metadata, multicast, broadcast or unspecified addresses, and 5,000 codecs, with 488: no ringing, no media leg, no call', async () => {
    const number = '+15550700001';
    await answeredTrunk(server, agentId, { numbers: [number] });
    const caller = await rawCaller();
    // A call answered before: its RTP port, taken round-robin from the server's 100-port block (even ports).
    const before = await caller.invite({ to: number });
    expect(before.final.status, before.final.text).toBe(200);
    const firstPort = audioPort(before.final.body);
    expect(await caller.bye(before)).toBe(200);

    const offers: Array<[string, string, RegExp]> = [];
    for (const [address, kind] of REFUSED) {
      offers.push([`c= ${address}`, aimedAt(caller, address), new RegExp(`connection address refused: ${address.replace(/\./g, '\\.')} is .*${kind.source}`)]);
    }
    // A stream-level c= refused beside a session-level one that is fine; the session's refused beside a fine stream's.
    offers.push(['stream c= 169.254.169.254', streamAimedAt(caller, '169.254.169.254'), /169\.254\.169\.254 is a cloud metadata address/]);
    offers.push(['session c= ff05::2', streamAimedAt(caller, PEER_HOST).replace(`c=IN IP4 ${PEER_HOST}\r\nt=0 0`, 'c=IN IP6 ff05::2\r\nt=0 0'), /ff05::2 is a multicast/]);
    offers.push(['5,000 codecs', fiveThousandCodecs(caller, false), /more than 64 formats on one m= line \(5000\)/]);
    offers.push(['5,000 dynamic payload types', fiveThousandCodecs(caller, true), /SDP longer than 16384 characters/]);
    for (const [what, sdp, warning] of offers) {
      const refused = await caller.invite({ to: number, sdp });
      expect(refused.final.startLine, what).toBe('SIP/2.0 488 Not Acceptable Here');
      expect(refused.final.headers.warning, what).toMatch(/^399 parley "/);
      expect(refused.final.headers.warning, what).toMatch(warning);
      // Refused before the ringing: the 180 goes only after the media leg is bound and the answer made.
      expect(refused.responses.map((r) => r.status), what).toEqual([100, 488]);
      expect(refused.final.body, what).toBe('');
    }

    // No media leg was bound for any of them: the next call takes the very next port after the call before.
    const after = await caller.invite({ to: number });
    expect(after.final.status, after.final.text).toBe(200);
    const base = firstPort - (firstPort % 100);
    expect(audioPort(after.final.body)).toBe(base + ((firstPort - base + 2) % 100));
    // Our audio goes to the caller's own (loopback) address as ever.
    for (let i = 0; i < 100 && caller.rtpPackets < 10; i++) await sleep(50);
    expect(caller.rtpPackets).toBeGreaterThanOrEqual(10);
    expect(await caller.bye(after)).toBe(200);
    // And no call was recorded but the two answered ones.
    await sleep(300);
    expect(await callsTo(number)).toHaveLength(2);
  }, 60_000);

  it('answers re-INVITEs and UPDATEs aiming RTP at a refused address, or beyond the limits, with 488 (400 for a malformed SDP); the call goes on', async () => {
    const number = '+15550700002';
    await answeredTrunk(server, agentId, { numbers: [number] });
    const caller = await rawCaller();
    const call = await caller.invite({ to: number });
    expect(call.final.status, call.final.text).toBe(200);
    const stopRtp = caller.sendRtp(call, 200); // a live line: the media timeout does not end it meanwhile
    try {
      const dialog = new InDialog(caller, call);
      const cases: Array<['INVITE' | 'UPDATE', string, number, RegExp]> = [
        ['INVITE', aimedAt(caller, '169.254.169.254'), 488, /169\.254\.169\.254 is a cloud metadata address/],
        ['INVITE', streamAimedAt(caller, 'ff02::1'), 488, /ff02::1 is a multicast/],
        ['UPDATE', aimedAt(caller, 'fe80::1'), 488, /fe80::1 is a link-local address/],
        ['UPDATE', aimedAt(caller, '255.255.255.255'), 488, /255\.255\.255\.255 is a multicast, broadcast or reserved address/],
        ['INVITE', fiveThousandCodecs(caller, false), 488, /more than 64 formats/],
        ['INVITE', 'this is no SDP\r\n', 400, /SDP must start with v=0/],
      ];
      for (const [method, sdp, status, warning] of cases) {
        const res = await dialog.send(method, sdp);
        expect(res.status, `${method} ${warning}`).toBe(status);
        expect(res.headers.warning, `${method} ${warning}`).toMatch(warning);
      }
      // The call is still up, its audio still coming to the caller.
      const during = caller.rtpPackets;
      await sleep(1000);
      expect(caller.rtpPackets - during).toBeGreaterThanOrEqual(40);
      // An ordinary re-INVITE is answered 200 with our SDP, as ever.
      const ok = await dialog.send('INVITE', caller.offer());
      expect(ok.status).toBe(200);
      expect(audioPort(ok.body)).toBe(audioPort(call.final.body));
      // A re-INVITE without SDP gets our offer; an answer in the ACK aimed at a refused address ends the call (BYE).
      const late = await dialog.lateOffer(aimedAt(caller, '169.254.169.254'));
      expect(late.status).toBe(200);
      expect(audioPort(late.body)).toBe(audioPort(call.final.body));
      const bye = await caller.awaitBye(call, 5000);
      expect(bye.at - late.at).toBeLessThan(2000);
    } finally {
      stopRtp();
    }
  }, 30_000);

  it.each([
    ['c=0.0.0.0 (RFC 2543 hold)', '+15550700003', (caller: RawCaller) => aimedAt(caller, '0.0.0.0')],
    ['a=sendonly', '+15550700004', (caller: RawCaller) => caller.offer().replace('a=sendrecv', 'a=sendonly')],
  ])('a hold re-INVITE with %s is answered 200 as before; the silent caller on hold is not timed out, and is once the hold ends', async (_what, number, hold) => {
    await answeredTrunk(server, agentId, { numbers: [number] });
    const caller = await rawCaller();
    const call = await caller.invite({ to: number });
    expect(call.final.status, call.final.text).toBe(200);
    const dialog = new InDialog(caller, call);
    const stopRtp = caller.sendRtp(call, 200);
    await sleep(500);
    const held = await dialog.send('INVITE', hold(caller));
    stopRtp();
    expect(held.status, held.text).toBe(200);
    expect(audioPort(held.body)).toBe(audioPort(call.final.body));
    // Held and silent for longer than the media timeout: no BYE. Our audio still goes to the caller's own address.
    const heldAt = caller.rtpPackets;
    await sleep((MEDIA_TIMEOUT_S + 1.5) * 1000);
    expect(caller.peer.received.some((m) => m.method === 'BYE' && m.headers['call-id'] === call.invite.callId)).toBe(false);
    expect(caller.rtpPackets - heldAt).toBeGreaterThanOrEqual(100);
    // The hold ends (sendrecv to the caller's address): the silent line is hung up after the media timeout.
    const resumed = await dialog.send('INVITE', caller.offer());
    expect(resumed.status).toBe(200);
    const resumedAt = Date.now();
    const bye = await caller.awaitBye(call, 10_000);
    expect(bye.at - resumedAt).toBeGreaterThanOrEqual((MEDIA_TIMEOUT_S - 0.5) * 1000);
    const [latest] = await (async () => {
      for (let i = 0; i < 50; i++) {
        const calls = await callsTo(number);
        if (calls.length) return calls;
        await sleep(100);
      }
      return [];
    })();
    expect(await endedCall(server, latest!.callId)).toMatchObject({ status: 'completed', endReason: 'media_timeout' });
  }, 30_000);

  it('an outbound callee answering with a cloud metadata address is hung up (ACK, then BYE): the call fails bad_answer_sdp', async () => {
    const callee = await rawCallee(server);
    const trunk = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Carrier out', address: `${PEER_HOST}:${callee.port}`, numbers: ['+15550700101'] } });
    expect(trunk.status, trunk.text).toBe(201);
    const res = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: '+15550700102', fromNumber: '+15550700101' } });
    expect(res.status, res.text).toBe(200);
    const callId = res.body.data.conversationId as string;
    const { bye } = await answerAimedAt(callee, '169.254.169.254');
    expect(bye.startLine).toMatch(/^BYE sip:callee@/);
    let record: any;
    for (let i = 0; i < 100 && record?.status !== 'failed'; i++) {
      await sleep(100);
      record = (await server.request('GET', `${A}/conversation/${callId}`)).body.data;
    }
    expect(record).toMatchObject({ type: 'telephony_outbound', status: 'failed', callFailureReason: 'bad_answer_sdp' });
    expect(server.logs.some((l) => l.includes('the answer SDP was refused') && l.includes('connection address refused: 169.254.169.254 is a cloud metadata address'))).toBe(true);
    // No agent spoke on it.
    expect(record.transcript ?? []).toEqual([]);
  }, 30_000);

  it('a transfer target answering with a link-local IPv6 address is hung up: the transfer fails, the agent says so, and the call goes on', async () => {
    const target = await rawCallee(server);
    const holdOn = 'Please hold on, I will transfer your call now.';
    const transferAgent = await workflowAgent(server, {
      nodes: [{ id: 'hand', type: 'transfer', text: holdOn, transferNumber: '+15550700202', transferOption: { type: 'warm_transfer' } }],
      edges: [],
    });
    await answeredTrunk(server, transferAgent, { numbers: ['+15550700201'] });
    const trunk = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Transfers out', address: `${PEER_HOST}:${target.port}`, numbers: ['+15550700203'] } });
    expect(trunk.status, trunk.text).toBe(201);
    const put = await server.request('PUT', `${A}/agent/${transferAgent}/transfer-source`, { body: { fromNumber: '+15550700203' } });
    expect(put.status, put.text).toBe(200);
    const caller = await rawCaller();
    const call = await caller.invite({ to: '+15550700201' });
    expect(call.final.status, call.final.text).toBe(200);
    const stopRtp = caller.sendRtp(call, 200);
    try {
      const { invite } = await answerAimedAt(target, 'fe80::1');
      expect(invite.startLine).toMatch(/^INVITE sip:\+15550700202@/);
      // The agent tells the caller, who is still on the line.
      let transcript: string[] = [];
      for (let i = 0; i < 150 && transcript.length < 2; i++) {
        await sleep(100);
        const list = await server.request('GET', `${A}/conversation?callTypes=telephony_inbound&agentIds=${transferAgent}`);
        const id = list.body.data.logs[0]?.callId;
        if (id) transcript = ((await server.request('GET', `${A}/conversation/${id}`)).body.data.transcript ?? []).map((t: { content: string }) => t.content);
      }
      expect(transcript).toEqual([holdOn, "I'm sorry, I couldn't transfer your call. I'm still here to help."]);
      expect(caller.peer.received.some((m) => m.method === 'BYE')).toBe(false);
      expect(await caller.bye(call)).toBe(200);
    } finally {
      stopRtp();
    }
  }, 40_000);
});
