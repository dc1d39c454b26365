// SIP digest authentication (RFC 2617/3261, MD5, qop=auth): a server's challenge and check with stateless nonces
// that expire, and a client's answer to a 401/407. The hashes come from the `sip` package's digest module; its
// challenge/verify keep per-challenge state and random-number nonces without expiry, so those two are ours.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { calculateDigest, calculateUserRealmPasswordHash } from 'sip/digest.js';
import type { RawMessage } from 'sip';
import type { SipIncomingResponse, SipRequest, SipResponse } from './message.js';
import { fromWire } from './wire.js';

export interface DigestCredentials {
  username: string;
  password: string;
  realm: string;
}

export interface DigestClientCredentials {
  username: string;
  password: string;
}

/** `missing`: no usable answer (none, another realm, or an expired or foreign nonce): challenge again. */
export type DigestVerdict = 'ok' | 'missing' | 'wrong';

/** How long a nonce is accepted after its challenge. */
export const NONCE_TTL_MS = 5 * 60_000;

/**
 * Signs nonces. Several servers behind one proxy must share it (a caller's answer to one server's challenge may reach
 * another): the server sets it from a secret kept in the shared store (useNonceSecret); alone, a random one serves.
 */
let secret = randomBytes(32);

/** Signs nonces with `key` from now on (a secret every server sharing the store has). */
export function useNonceSecret(key: Buffer): void {
  if (key.length < 16) throw new Error('nonce secret too short');
  secret = Buffer.from(key);
}

function sign(ts: string, realm: string): string {
  return createHmac('sha256', secret).update(`${ts}:${realm}`).digest('base64url').slice(0, 24);
}

function makeNonce(realm: string): string {
  const ts = Date.now().toString(36);
  return `${ts}.${sign(ts, realm)}`;
}

function nonceFresh(nonce: string, realm: string, ttlMs: number): boolean {
  const [ts, mac] = nonce.split('.');
  if (!ts || !mac || !/^[0-9a-z]{1,12}$/.test(ts)) return false;
  const expected = Buffer.from(sign(ts, realm));
  const given = Buffer.from(mac);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return false;
  const age = Date.now() - parseInt(ts, 36);
  return age >= 0 && age <= ttlMs;
}

/** A parameter's text: unquoted, and decoded from the wire's bytes as UTF-8. */
function unq(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  return fromWire(v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1).replace(/\\(.)/g, '$1') : v);
}

function quotable(name: string, v: string): string {
  if (/["\\\r\n\0]/.test(v)) throw new TypeError(`digest ${name} may not contain quotes, backslashes or line breaks`);
  return v;
}

type AuthParams = Record<string, string | undefined> & { scheme?: string };

function authHeaders(raw: RawMessage, name: string): AuthParams[] {
  const list = raw.headers[name];
  return Array.isArray(list) ? (list as AuthParams[]) : [];
}

/** Sends 401 (or 407 with `proxy`) with a fresh nonce for `realm`. */
export function challenge(res: SipResponse, realm: string, opts: { proxy?: boolean; stale?: boolean } = {}): boolean {
  const value = `Digest realm="${quotable('realm', realm)}", nonce="${makeNonce(realm)}", algorithm=MD5, qop="auth"${opts.stale ? ', stale=TRUE' : ''}`;
  return opts.proxy ? res.send(407, undefined, { headers: { 'Proxy-Authenticate': value } }) : res.send(401, undefined, { headers: { 'WWW-Authenticate': value } });
}

/** Checks a request's Authorization (or Proxy-Authorization with `proxy`) against one user's credentials. */
export function verify(req: SipRequest, creds: DigestCredentials, opts: { proxy?: boolean; nonceTtlMs?: number } = {}): DigestVerdict {
  const answers = authHeaders(req.raw, opts.proxy ? 'proxy-authorization' : 'authorization').filter(
    (a) => a.scheme?.toLowerCase() === 'digest' && unq(a.realm) === creds.realm,
  );
  const a = answers[0];
  if (!a) return 'missing';
  const nonce = unq(a.nonce);
  if (!nonce || !nonceFresh(nonce, creds.realm, opts.nonceTtlMs ?? NONCE_TTL_MS)) return 'missing';
  const username = unq(a.username);
  const uri = unq(a.uri);
  const response = unq(a.response)?.toLowerCase();
  const algorithm = unq(a.algorithm)?.toLowerCase();
  const qop = unq(a.qop)?.toLowerCase();
  if (!username || !uri || !response || (algorithm && algorithm !== 'md5')) return 'wrong';
  if (username !== creds.username) return 'wrong';
  const cnonce = unq(a.cnonce);
  const nc = unq(a.nc);
  if (qop !== undefined && (qop !== 'auth' || !cnonce || !nc || !/^[0-9a-fA-F]{8}$/.test(nc))) return 'wrong';
  const ha1 = calculateUserRealmPasswordHash(creds.username, creds.realm, creds.password);
  const expected = calculateDigest({ ha1, method: req.method, nonce, nc, cnonce, qop, uri });
  const e = Buffer.from(expected);
  const g = Buffer.from(response);
  return e.length === g.length && timingSafeEqual(e, g) ? 'ok' : 'wrong';
}

/**
 * The Authorization (401) or Proxy-Authorization (407) header answering a challenge for a request we send, or null
 * when the challenge cannot be answered (no MD5 digest challenge, or only qop=auth-int).
 */
export function authorize(
  challengeResponse: SipIncomingResponse,
  req: { method: string; uri: string },
  creds: DigestClientCredentials,
): { name: 'Authorization' | 'Proxy-Authorization'; value: string } | null {
  const proxy = challengeResponse.status === 407;
  const offer = authHeaders(challengeResponse.raw, proxy ? 'proxy-authenticate' : 'www-authenticate').find((c) => {
    const algorithm = unq(c.algorithm)?.toLowerCase();
    return c.scheme?.toLowerCase() === 'digest' && (!algorithm || algorithm === 'md5') && unq(c.nonce) && unq(c.realm) !== undefined;
  });
  if (!offer) return null;
  const realm = unq(offer.realm)!;
  const nonce = unq(offer.nonce)!;
  const qops = unq(offer.qop)?.toLowerCase().split(',').map((q) => q.trim());
  if (qops && !qops.includes('auth')) return null;
  const qop = qops ? 'auth' : undefined;
  const cnonce = qop ? randomBytes(8).toString('hex') : undefined;
  const nc = qop ? '00000001' : undefined;
  const ha1 = calculateUserRealmPasswordHash(creds.username, realm, creds.password);
  const response = calculateDigest({ ha1, method: req.method, nonce, nc, cnonce, qop, uri: req.uri });
  const parts = [
    `Digest username="${quotable('username', creds.username)}"`,
    `realm="${quotable('realm', realm)}"`,
    `nonce="${quotable('nonce', nonce)}"`,
    `uri="${req.uri}"`,
    `response="${response}"`,
    'algorithm=MD5',
  ];
  if (qop) parts.push(`qop=${qop}`, `nc=${nc}`, `cnonce="${cnonce}"`);
  const opaque = unq(offer.opaque);
  if (opaque !== undefined) parts.push(`opaque="${quotable('opaque', opaque)}"`);
  return { name: proxy ? 'Proxy-Authorization' : 'Authorization', value: parts.join(', ') };
}
