// A hand-built SIP caller for inbound-call tests over a RawSipPeer: INVITEs with a chosen caller number, SDP and digest
// answer (computed here with node:crypto, independently of our stack), ACK, CANCEL, BYE, a 200 for the server's BYE,
// and an RTP socket that counts the packets the server sends.
import dgram from 'node:dgram';
import { createHash, randomBytes } from 'node:crypto';
import { PEER_HOST, RawSipPeer, newBranch, type RawSipMessage } from './sip-peers.js';

export interface InviteOptions {
  /** The Request-URI's user part (the called number, e.g. `+15550100` or `15550100`). */
  to: string;
  /** The From user part (the caller's number); default `caller`. */
  from?: string;
  /** The SDP offer; default a plain PCMU + telephone-event offer to this caller's RTP socket. */
  sdp?: string;
  /** An Authorization header value (see `digestAnswer`). */
  authorization?: string;
  /** Reuse a call (a retry after 401 keeps Call-ID and From tag, with the next CSeq). */
  retry?: PendingInvite;
}

export interface PendingInvite {
  uri: string;
  callId: string;
  fromTag: string;
  from: string;
  cseq: number;
  branch: string;
  /** The INVITE as sent. */
  text: string;
  /** Index in the peer's `received` when it was sent. */
  since: number;
}

export interface Answered {
  invite: PendingInvite;
  final: RawSipMessage;
  /** Every response to this INVITE, provisional ones included, in arrival order. */
  responses: RawSipMessage[];
}

const h = (s: string) => createHash('md5').update(s).digest('hex');

export class RawCaller {
  /** RTP packets the server sent to our media socket. */
  rtpPackets = 0;
  private constructor(
    readonly peer: RawSipPeer,
    private readonly server: { host: string; port: number },
    private readonly rtp: dgram.Socket,
  ) {}

  /** `host`: the local address to call from (another loopback address, e.g. 127.0.0.3, is another source). */
  static async open(server: { host: string; port: number }, transport: 'udp' | 'tcp' = 'udp', host = PEER_HOST): Promise<RawCaller> {
    const peer = await RawSipPeer.open(transport, server, host);
    const rtp = dgram.createSocket('udp4');
    await new Promise<void>((r) => rtp.bind(0, host, () => r()));
    const caller = new RawCaller(peer, server, rtp);
    rtp.on('message', () => caller.rtpPackets++);
    return caller;
  }

  get rtpPort(): number {
    return this.rtp.address().port;
  }

  /** A plain offer (RTP/AVP) or an SRTP-only one (RTP/SAVP with an SDES key) to our RTP socket. */
  offer(kind: 'plain' | 'srtp' = 'plain'): string {
    const proto = kind === 'srtp' ? 'RTP/SAVP' : 'RTP/AVP';
    return [
      'v=0', `o=- 1 1 IN IP4 ${this.peer.host}`, 's=-', `c=IN IP4 ${this.peer.host}`, 't=0 0', `m=audio ${this.rtpPort} ${proto} 0 101`,
      'a=rtpmap:0 PCMU/8000', 'a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-15', 'a=ptime:20', 'a=sendrecv',
      ...(kind === 'srtp' ? [`a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:${randomBytes(30).toString('base64')}`] : []),
      '',
    ].join('\r\n');
  }

  /** Sends an INVITE (not waiting for anything). */
  send(o: InviteOptions): PendingInvite {
    const pending = this.build(o);
    this.peer.send(pending.text);
    return pending;
  }

  /** Builds an INVITE without sending it (to send it together with something else). */
  build(o: InviteOptions): PendingInvite {
    const uri = `sip:${o.to}@${this.server.host}:${this.server.port}`;
    const from = o.retry?.from ?? o.from ?? 'caller';
    const pending: PendingInvite = {
      uri,
      callId: o.retry?.callId ?? `${randomBytes(8).toString('hex')}@${this.peer.host}`,
      fromTag: o.retry?.fromTag ?? randomBytes(4).toString('hex'),
      from,
      cseq: (o.retry?.cseq ?? 0) + 1,
      branch: newBranch(),
      text: '',
      since: this.peer.received.length,
    };
    pending.text = this.request(pending, 'INVITE', {
      branch: pending.branch,
      headers: [...(o.authorization ? [`Authorization: ${o.authorization}`] : []), 'Content-Type: application/sdp'],
      body: o.sdp ?? this.offer(),
    });
    return pending;
  }

  /** The INVITE's final response (ACKed: a non-2xx on its transaction, a 2xx end to end). */
  async final(p: PendingInvite, timeoutMs = 10_000): Promise<Answered> {
    const mine = (m: RawSipMessage) => m.status !== undefined && m.headers['call-id'] === p.callId && m.headers.cseq === `${p.cseq} INVITE`;
    const final = await this.peer.waitFor((m) => mine(m) && (m.status as number) >= 200, timeoutMs, p.since);
    const to = final.headers.to as string;
    if ((final.status as number) >= 300) this.peer.send(this.request(p, 'ACK', { branch: p.branch, to, cseq: p.cseq }));
    else this.peer.send(this.request(p, 'ACK', { to, cseq: p.cseq, uri: contactOf(final) }));
    return { invite: p, final, responses: this.peer.received.slice(p.since).filter(mine) };
  }

  async invite(o: InviteOptions, timeoutMs?: number): Promise<Answered> {
    return this.final(this.send(o), timeoutMs);
  }

  /** CANCELs a pending INVITE (same branch and CSeq number); resolves with the CANCEL's response. */
  async cancel(p: PendingInvite): Promise<RawSipMessage> {
    const since = this.peer.received.length;
    this.peer.send(this.cancelText(p));
    return this.peer.waitFor((m) => m.headers['call-id'] === p.callId && m.headers.cseq === `${p.cseq} CANCEL`, 5000, since);
  }

  cancelText(p: PendingInvite): string {
    return this.request(p, 'CANCEL', { branch: p.branch, cseq: p.cseq });
  }

  /** Hangs up an answered call; resolves with the BYE's final status. */
  async bye(a: Answered): Promise<number> {
    const since = this.peer.received.length;
    const cseq = a.invite.cseq + 1;
    this.peer.send(this.request(a.invite, 'BYE', { to: a.final.headers.to, cseq, uri: contactOf(a.final) }));
    const res = await this.peer.waitFor((m) => m.headers['call-id'] === a.invite.callId && m.headers.cseq === `${cseq} BYE`, 5000, since);
    return res.status as number;
  }

  /** Waits for the server's BYE on an answered call and answers it 200. */
  async awaitBye(a: Answered, timeoutMs = 15_000): Promise<RawSipMessage> {
    const bye = await this.peer.waitFor((m) => m.method === 'BYE' && m.headers['call-id'] === a.invite.callId, timeoutMs, a.invite.since);
    this.peer.send(['SIP/2.0 200 OK', `Via: ${bye.headers.via}`, `From: ${bye.headers.from}`, `To: ${bye.headers.to}`, `Call-ID: ${a.invite.callId}`, `CSeq: ${bye.headers.cseq}`, 'Content-Length: 0', '', ''].join('\r\n'));
    return bye;
  }

  /**
   * Sends a PCMU silence packet every `everyMs` to the media address of an answered call's SDP (a caller whose line is
   * alive, for a server that hangs up on media timeout); returns a function that stops it.
   */
  sendRtp(a: Answered, everyMs = 500): () => void {
    const address = /^c=IN IP4 (\S+)/m.exec(a.final.body)?.[1];
    const port = Number(/^m=audio (\d+)/m.exec(a.final.body)?.[1]);
    if (!address || !port) throw new Error('no audio in the answer');
    let seq = 1;
    const send = () => {
      const packet = Buffer.alloc(12 + 160, 0xff);
      packet[0] = 0x80;
      packet[1] = 0;
      packet.writeUInt16BE(seq & 0xffff, 2);
      packet.writeUInt32BE((seq * 160) >>> 0, 4);
      packet.writeUInt32BE(0x5eed, 8);
      seq++;
      this.rtp.send(packet, port, address);
    };
    send();
    const timer = setInterval(send, everyMs);
    return () => clearInterval(timer);
  }

  close(): void {
    this.peer.close();
    this.rtp.close();
  }

  private request(p: PendingInvite, method: string, o: { branch?: string; to?: string; cseq?: number; uri?: string; headers?: string[]; body?: string }): string {
    const body = o.body ?? '';
    const transport = this.peer.transport.toUpperCase();
    return [
      `${method} ${o.uri ?? p.uri} SIP/2.0`,
      `Via: SIP/2.0/${transport} ${this.peer.host}:${this.peer.port};branch=${o.branch ?? newBranch()};rport`,
      `From: <sip:${p.from}@${this.peer.host}>;tag=${p.fromTag}`,
      `To: ${o.to ?? `<${p.uri}>`}`,
      `Call-ID: ${p.callId}`,
      `CSeq: ${o.cseq ?? p.cseq} ${method}`,
      `Contact: <sip:${p.from}@${this.peer.host}:${this.peer.port}${this.peer.transport === 'tcp' ? ';transport=tcp' : ''}>`,
      'Max-Forwards: 70',
      ...(o.headers ?? []),
      `Content-Length: ${Buffer.byteLength(body)}`,
      '',
      body,
    ].join('\r\n');
  }
}

function contactOf(m: RawSipMessage): string {
  const uri = /<([^>]+)>/.exec(m.headers.contact ?? '')?.[1];
  if (!uri) throw new Error(`no Contact in ${m.startLine}`);
  return uri;
}

/** The parameters of a `WWW-Authenticate: Digest ...` challenge. */
export function challengeParams(value: string): Record<string, string> {
  const params: Record<string, string> = {};
  for (const m of value.replace(/^Digest\s+/i, '').matchAll(/([a-z]+)=("([^"]*)"|[^,\s]+)/gi)) params[(m[1] as string).toLowerCase()] = m[3] ?? (m[2] as string);
  return params;
}

/** An Authorization value answering a 401's challenge for an INVITE to `uri` (RFC 2617, MD5, qop=auth). */
export function digestAnswer(challenge: RawSipMessage, uri: string, username: string, password: string): string {
  const c = challengeParams(challenge.headers['www-authenticate'] ?? '');
  const cnonce = randomBytes(8).toString('hex');
  const nc = '00000001';
  const ha1 = h(`${username}:${c.realm}:${password}`);
  const ha2 = h(`INVITE:${uri}`);
  const response = c.qop ? h(`${ha1}:${c.nonce}:${nc}:${cnonce}:auth:${ha2}`) : h(`${ha1}:${c.nonce}:${ha2}`);
  return `Digest username="${username}", realm="${c.realm}", nonce="${c.nonce}", uri="${uri}", response="${response}", algorithm=MD5${c.qop ? `, qop=auth, nc=${nc}, cnonce="${cnonce}"` : ''}`;
}
