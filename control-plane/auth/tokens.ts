// Short-lived access tokens (`wat_...`): signed, carrying region, expiry and minting key; checked when a connection is made.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../store/db.js';
import { nowIso } from '../store/ids.js';

export const TOKEN_TTL = { min: 30, max: 900, default: 300 } as const;

export interface TokenClaims {
  /** Minting API key id (requests are billed to it). */
  keyId: string;
  region: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
}

export type TokenCheck = { ok: true; claims: TokenClaims } | { ok: false; reason: 'malformed' | 'expired' | 'wrong_region' };

export const isAccessTokenShaped = (value: string): boolean => value.startsWith('wat_');

/** Loads this deployment's signing secret, creating it on first start. Servers that share nothing have different secrets. */
/** A 32-byte server secret kept in the store under `name` (created on first use). */
export async function loadSigningSecret(db: Db, name = 'access_token_signing_key'): Promise<Buffer> {
  await db
    .insertInto('server_secrets')
    .values({ name, value: randomBytes(32).toString('base64'), created_at: nowIso() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return Buffer.from(row.value, 'base64');
}

export class AccessTokens {
  constructor(private readonly secret: Buffer, readonly region: string) {}

  mint(keyId: string, ttlSeconds: number, now = Date.now()): { token: string; expiresAt: Date } {
    const exp = Math.floor(now / 1000) + ttlSeconds;
    const payload = Buffer.from(JSON.stringify({ k: keyId, r: this.region, e: exp, n: randomBytes(6).toString('base64url') })).toString('base64url');
    return { token: `wat_${payload}.${this.sign(payload)}`, expiresAt: new Date(exp * 1000) };
  }

  /** Signature, then region, then expiry; the minting key's existence is the caller's check. */
  check(token: string, now = Date.now()): TokenCheck {
    const match = /^wat_([A-Za-z0-9_-]{10,600})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!match) return { ok: false, reason: 'malformed' };
    const [, payload, signature] = match as unknown as [string, string, string];
    const expected = Buffer.from(this.sign(payload));
    if (!timingSafeEqual(expected, Buffer.from(signature))) return { ok: false, reason: 'malformed' };
    let claims: { k?: unknown; r?: unknown; e?: unknown };
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return { ok: false, reason: 'malformed' };
    }
    if (typeof claims.k !== 'string' || typeof claims.r !== 'string' || typeof claims.e !== 'number') return { ok: false, reason: 'malformed' };
    if (claims.r !== this.region) return { ok: false, reason: 'wrong_region' };
    if (claims.e * 1000 <= now) return { ok: false, reason: 'expired' };
    return { ok: true, claims: { keyId: claims.k, region: claims.r, exp: claims.e } };
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.secret).update(payload).digest('base64url');
  }
}
