// Test-only SIP caller over UDP, just enough to set up a call with a real peer (sipp, baresip) so RTP can flow to an
// RtpSession: INVITE with our SDP (retransmitted until answered), ACK, BYE, and a 200 for the peer's BYE.
import dgram from 'node:dgram';
import { randomBytes } from 'node:crypto';

export interface SipCall {
  status: number;
  answerSdp: string;
  /** Resolves when the peer sends BYE (answered 200). */
  peerBye: Promise<void>;
  /** Sends BYE and waits for its final response; returns its status. */
  bye(): Promise<number>;
  close(): void;
}

interface Message {
  first: string;
  headers: Map<string, string[]>;
  body: string;
}

function parse(text: string): Message {
  const split = text.indexOf('\r\n\r\n');
  const head = (split < 0 ? text : text.slice(0, split)).split('\r\n');
  const headers = new Map<string, string[]>();
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  return { first: head[0] ?? '', headers, body: split < 0 ? '' : text.slice(split + 4) };
}

const token = () => randomBytes(6).toString('hex');

/** Calls `sip:user@host:port` from a socket on localAddress, offering `sdp`; resolves with the final response. */
export async function sipCall(options: { host: string; port: number; localAddress: string; sdp: string; user?: string; timeoutMs?: number }): Promise<SipCall> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((r) => socket.bind(0, options.localAddress, r));
  const local = `${options.localAddress}:${socket.address().port}`;
  const target = `sip:${options.user ?? 'service'}@${options.host}:${options.port}`;
  const callId = `${token()}@${options.localAddress}`;
  const from = `<sip:parley-test@${options.localAddress}>;tag=${token()}`;
  let to = `<${target}>`;
  let remoteTarget = target;
  const send = (text: string) => socket.send(Buffer.from(text), options.port, options.host);
  const request = (method: string, cseq: number, body = '', extra: string[] = []) =>
    [
      `${method} ${method === 'INVITE' ? target : remoteTarget} SIP/2.0`,
      `Via: SIP/2.0/UDP ${local};branch=z9hG4bK${token()};rport`,
      'Max-Forwards: 70',
      `From: ${from}`,
      `To: ${to}`,
      `Call-ID: ${callId}`,
      `CSeq: ${cseq} ${method}`,
      `Contact: <sip:parley-test@${local}>`,
      ...extra,
      `Content-Length: ${Buffer.byteLength(body)}`,
      '',
      body,
    ].join('\r\n');

  const invite = request('INVITE', 1, options.sdp, ['Content-Type: application/sdp']);
  let ack = '';
  let byeResolve: (status: number) => void = () => {};
  let peerByeResolve: () => void = () => {};
  const peerBye = new Promise<void>((r) => (peerByeResolve = r));
  const final = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no final response to INVITE')), options.timeoutMs ?? 10_000);
    let retransmit: NodeJS.Timeout | null = setInterval(() => send(invite), 500);
    socket.on('message', (buf) => {
      const msg = parse(buf.toString());
      const cseq = msg.headers.get('cseq')?.[0] ?? '';
      if (msg.first.startsWith('SIP/2.0 ')) {
        const status = Number(msg.first.split(' ')[1]);
        if (cseq.endsWith('INVITE')) {
          if (retransmit) clearInterval(retransmit);
          retransmit = null;
          if (status < 200) return;
          clearTimeout(timer);
          to = msg.headers.get('to')?.[0] ?? to;
          const contact = /<([^>]+)>/.exec(msg.headers.get('contact')?.[0] ?? '')?.[1];
          if (status < 300 && contact) remoteTarget = contact;
          ack ||= request('ACK', 1);
          send(ack); // also for each retransmitted 2xx
          resolve({ status, body: msg.body });
        } else if (cseq.endsWith('BYE') && status >= 200) byeResolve(status);
        return;
      }
      if (msg.first.startsWith('BYE ') || msg.first.startsWith('OPTIONS ')) {
        const copy = (h: string) => (msg.headers.get(h) ?? []).map((v) => `${h.replace(/(^|-)([a-z])/g, (_, d: string, c: string) => d + c.toUpperCase())}: ${v}`);
        send(['SIP/2.0 200 OK', ...copy('via'), ...copy('from'), ...copy('to'), ...copy('call-id'), ...copy('cseq'), 'Content-Length: 0', '', ''].join('\r\n'));
        if (msg.first.startsWith('BYE ')) peerByeResolve();
      }
    });
    send(invite);
  });
  let result: { status: number; body: string };
  try {
    result = await final;
  } catch (err) {
    socket.close();
    throw err;
  }
  return {
    status: result.status,
    answerSdp: result.body,
    peerBye,
    bye: () =>
      new Promise<number>((resolve) => {
        byeResolve = resolve;
        const bye = request('BYE', 2);
        send(bye);
        const again = setInterval(() => send(bye), 500);
        const giveUp = setTimeout(() => resolve(408), 5000);
        const done = byeResolve;
        byeResolve = (s) => {
          clearInterval(again);
          clearTimeout(giveUp);
          done(s);
        };
      }),
    close: () => socket.close(),
  };
}
