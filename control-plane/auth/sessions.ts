// Browser sessions of the console: an HttpOnly cookie acting as one API key, with a CSRF token, kept in the store.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../store/db.js';
import { nowIso } from '../store/ids.js';
import type { KeyResolver } from './keys.js';

export const SESSION_COOKIE = 'parley_session';
/** Failed sign-ins one client address may make per minute. */
export const SIGN_IN_FAILURES_PER_MINUTE = 20;

export interface BrowserSession {
  keyId: string;
  orgId: string;
  keyName: string;
  rateLimitPerMin: number | null;
  csrfToken: string;
  expiresAt: string;
}

/** 32 random bytes, base64url: the cookie value and the CSRF token both look like this. */
const randomToken = (): string => randomBytes(32).toString('base64url');
const isTokenShaped = (value: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(value);
const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/** Compares two secrets in constant time (their SHA-256s, so the length of neither leaks). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

export class BrowserSessions {
  constructor(
    private readonly db: Db,
    private readonly keys: KeyResolver,
    readonly ttlSeconds: number,
  ) {}

  /** Signs a key in: returns the cookie value (shown only in Set-Cookie) and the stored session. */
  async create(key: { id: string; orgId: string; name: string; rateLimitPerMin: number | null }): Promise<{ token: string; session: BrowserSession }> {
    const now = Date.now();
    const token = randomToken();
    const csrfToken = randomToken();
    const expiresAt = new Date(now + this.ttlSeconds * 1000).toISOString();
    // Expired rows are removed here: sign-ins are few (and limited per address), the index makes it one range delete.
    await this.db.deleteFrom('browser_sessions').where('expires_at', '<=', new Date(now).toISOString()).execute();
    await this.db
      .insertInto('browser_sessions')
      .values({ token_hash: hashToken(token), key_id: key.id, org_id: key.orgId, csrf_token: csrfToken, created_at: nowIso(), expires_at: expiresAt })
      .execute();
    return { token, session: { keyId: key.id, orgId: key.orgId, keyName: key.name, rateLimitPerMin: key.rateLimitPerMin, csrfToken, expiresAt } };
  }

  /**
   * The live session of a cookie value, or null: unknown, signed out, expired, or its key deleted (the key is
   * resolved through the key cache, so a key deleted elsewhere ends its sessions within the key cache time).
   */
  async resolve(token: string): Promise<BrowserSession | null> {
    if (!isTokenShaped(token)) return null;
    const row = await this.db.selectFrom('browser_sessions').select(['key_id', 'csrf_token', 'expires_at']).where('token_hash', '=', hashToken(token)).executeTakeFirst();
    if (!row || Date.parse(row.expires_at) <= Date.now()) return null;
    const key = await this.keys.resolveId(row.key_id);
    if (!key) return null;
    return { keyId: key.id, orgId: key.orgId, keyName: key.name, rateLimitPerMin: key.rateLimitPerMin, csrfToken: row.csrf_token, expiresAt: row.expires_at };
  }

  /** Signs out: the row is deleted, so the cookie stops working on every server at once. */
  async delete(token: string): Promise<void> {
    if (!isTokenShaped(token)) return;
    await this.db.deleteFrom('browser_sessions').where('token_hash', '=', hashToken(token)).execute();
  }
}

/**
 * Failed sign-ins per client address in a fixed one-minute window: past the limit, sign-in is refused (without
 * checking the key) until the window ends. Old windows are dropped as the map grows, so it stays small.
 */
export class SignInLimiter {
  private readonly windows = new Map<string, { start: number; failures: number }>();

  constructor(
    private readonly maxFailures = SIGN_IN_FAILURES_PER_MINUTE,
    private readonly windowMs = 60_000,
  ) {}

  /** Seconds until `address` may try again; 0 when it may try now. */
  retryAfter(address: string, now = Date.now()): number {
    const win = this.windows.get(address);
    if (!win || now - win.start >= this.windowMs || win.failures < this.maxFailures) return 0;
    return Math.max(1, Math.ceil((win.start + this.windowMs - now) / 1000));
  }

  fail(address: string, now = Date.now()): void {
    let win = this.windows.get(address);
    if (!win || now - win.start >= this.windowMs) {
      if (this.windows.size >= 10_000) this.prune(now);
      win = { start: now, failures: 0 };
      this.windows.set(address, win);
    }
    win.failures++;
  }

  private prune(now: number): void {
    for (const [address, win] of this.windows) if (now - win.start >= this.windowMs) this.windows.delete(address);
    // Still full (many addresses failing within one minute): start over rather than grow without bound.
    if (this.windows.size >= 10_000) this.windows.clear();
  }
}
