// Fuzzed SIP for hardening tests, seeded so a failing run can be replayed: valid requests (and a stray response) from a
// raw peer, each broken by one random mutation (random bytes, truncation, special characters, a duplicated or dropped
// header line, whitespace floods, a lying Content-Length, a huge header, an odd start line), and TCP streams of them.
import { newBranch, rawRequest, sdpOffer, type RawSipPeer } from './sip-peers.js';

import { mulberry32 } from '../../engine/random.js';

/** Deterministic randomness in [0, 1) from a seed. */
export const prng = mulberry32;

export interface FuzzTarget {
  /** The peer whose Via and Contact the requests carry (answers to them go there). */
  peer: RawSipPeer;
  /** The Request-URI of the requests before mutation. */
  uri: string;
  /** Where the stack under test listens (the stray response's Via names it). */
  host: string;
  port: number;
}

export interface SipFuzzer {
  /** One fuzzed message, as latin1 text of its bytes. */
  message(): string;
  /** One to five fuzzed messages back to back, as one TCP connection would carry them. */
  stream(): Buffer;
  /** `data` cut into random pieces of 1 to 2000 bytes (separate writes, so framing meets every split). */
  chunks(data: Buffer): Buffer[];
}

const SPECIALS = ['\r', '\n', '\r\n', ':', ',', ';', '<', '>', '"', '\\', '\0', ' ', '\t', '=', '@', '%', 'é'];

export function sipFuzzer(seed: number, target: FuzzTarget): SipFuzzer {
  const rnd = prng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const int = (n: number) => Math.floor(rnd() * n);
  const { peer, uri } = target;
  const valid = () =>
    pick([
      () => rawRequest(peer, { method: 'INVITE', uri, body: sdpOffer(), headers: ['Content-Type: application/sdp', 'Record-Route: <sip:p1@example.com;lr>'] }),
      () => rawRequest(peer, { method: 'OPTIONS', uri }),
      () => rawRequest(peer, { method: 'BYE', uri, toTag: 'x' }),
      () => rawRequest(peer, { method: 'CANCEL', uri }),
      () => rawRequest(peer, { method: 'ACK', uri, toTag: 'y' }),
      () => rawRequest(peer, { method: 'INFO', uri, toTag: 'z', body: 'Signal=5\r\nDuration=160\r\n', headers: ['Content-Type: application/dtmf-relay'] }),
      () => `SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP ${target.host}:${target.port};branch=${newBranch()}\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:c@d>;tag=2\r\nCall-ID: stray\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n`,
    ])();
  const mutate = (text: string): string => {
    const lines = text.split('\r\n');
    switch (int(9)) {
      case 0:
        return Buffer.from(Array.from({ length: int(1400) }, () => int(256))).toString('latin1');
      case 1:
        return text.slice(0, int(text.length));
      case 2: {
        const chars = [...text];
        for (let i = 0, n = 1 + int(20); i < n; i++) chars[int(chars.length)] = pick(SPECIALS);
        return chars.join('');
      }
      case 3: {
        const i = 1 + int(Math.max(1, lines.indexOf('') - 1));
        lines.splice(i, 0, lines[i] ?? 'X: y');
        return lines.join('\r\n');
      }
      case 4:
        lines.splice(1 + int(Math.max(1, lines.indexOf('') - 1)), 1);
        return lines.join('\r\n');
      case 5: {
        const at = int(text.length);
        return text.slice(0, at) + pick([' ', '\t', ',', ';', '"', '<']).repeat(int(3000)) + text.slice(at);
      }
      case 6:
        return text.replace(/Content-Length: \d+/, `Content-Length: ${pick(['-1', '99999999', 'NaN', '1e3', String(int(2000)), ''])}`);
      case 7:
        return text.replace(/\r\n\r\n/, `\r\nX-Huge: ${'h'.repeat(int(60_000))}\r\n\r\n`).slice(0, 65_000);
      default:
        return text.replace(/^(\S+) (\S+)/, `${pick(['INVITE', 'OPTIONS', 'REGISTER', 'BYE', 'X'.repeat(40), ''])} ${pick([uri, 'sip:', '<>', 'sip:a@[::1]', 'sips:x@y;transport=tls', `${uri};${'p;'.repeat(500)}`])}`);
    }
  };
  const message = () => mutate(valid());
  return {
    message,
    stream: () => Buffer.from(Array.from({ length: 1 + int(5) }, message).join(''), 'latin1'),
    chunks(data) {
      const out: Buffer[] = [];
      for (let at = 0; at < data.length; ) {
        const n = 1 + int(2000);
        out.push(data.subarray(at, at + n));
        at += n;
      }
      return out;
    },
  };
}
