// Credentials on HTTP routes: API keys everywhere, access tokens on the inference routes that accept them, browser
// session cookies (with a CSRF check) on the agent platform; rate limits.
import { ApiError, forbidden } from '../../control-plane/errors.js';
import type { AuthContext, KeyResolver } from '../../control-plane/auth/keys.js';
import type { RateLimiter } from '../../control-plane/auth/rate-limit.js';
import { isAccessTokenShaped, type AccessTokens } from '../../control-plane/auth/tokens.js';
import { SESSION_COOKIE, secretsEqual, type BrowserSession, type BrowserSessions } from '../../control-plane/auth/sessions.js';
import type { AuthMode, HttpRequest } from './types.js';

export function bearerToken(req: HttpRequest): string | null {
  const header = req.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? (match[1] as string) : null;
}

/** An inference-API error; it is rendered in the route's error shape (`RouteOptions.errorBody`, default `{error}`). */
export const inferenceError = (status: number, message: string, headers?: Record<string, string>) => new ApiError(status, message, { headers });

export const TOKEN_INVALID = 'Access token is invalid or expired';
/** The refusal of a request that presented no credential at all. */
export const CREDENTIAL_MISSING = 'Unauthorized: missing API key (send Authorization: Bearer sk_...)';

export interface Credential {
  key: { id: string; orgId: string; name: string; rateLimitPerMin: number | null };
  via: 'key' | 'token' | 'session';
}

/** The session cookie's value, or null (the first `parley_session` of the Cookie header). */
export function sessionCookie(req: HttpRequest): string | null {
  for (const pair of (req.headers.cookie ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === SESSION_COOKIE) return pair.slice(eq + 1).trim();
  }
  return null;
}

/** Whether the request came over https, as a proxy in front says (`X-Forwarded-Proto`). */
export function viaHttps(req: HttpRequest): boolean {
  return (req.headers['x-forwarded-proto'] ?? '').split(',')[0]?.trim().toLowerCase() === 'https';
}

/**
 * True when an `Origin` header names another origin than this server's (compared with the Host header; an
 * `X-Forwarded-Proto` scheme must match too). No Origin header (same-origin GETs, non-browser clients): false.
 */
export function crossOrigin(req: HttpRequest): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  const host = req.headers.host;
  if (!host) return true;
  try {
    const from = new URL(origin); // `null` (sandboxed pages, some redirects) does not parse: refused
    if (from.protocol !== 'http:' && from.protocol !== 'https:') return true;
    if (from.host !== new URL(`${from.protocol}//${host}`).host) return true;
    const forwarded = req.headers['x-forwarded-proto'];
    return forwarded !== undefined && from.protocol !== (viaHttps(req) ? 'https:' : 'http:');
  } catch {
    return true;
  }
}

/** Methods that change nothing, so a cookie alone may make them. */
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** A state-changing request made with the session cookie must come from our own origin and carry its CSRF token. */
export function requireCsrf(req: HttpRequest, session: BrowserSession): void {
  if (crossOrigin(req)) throw forbidden('Cross-site request refused');
  const presented = req.headers['x-csrf-token'];
  if (!presented || !secretsEqual(presented, session.csrfToken)) throw forbidden('CSRF token missing or invalid');
}

/** Resolves a presented credential: an API key, or a valid access token of an existing key; null when neither. */
export async function resolveCredential(keys: KeyResolver, tokens: AccessTokens, presented: string): Promise<Credential | null> {
  if (isAccessTokenShaped(presented)) {
    const check = tokens.check(presented);
    if (!check.ok) return null;
    // The minting key must still exist: deleting it invalidates its tokens within the key cache time.
    const key = await keys.resolveId(check.claims.keyId);
    return key ? { key, via: 'token' } : null;
  }
  const key = await keys.resolve(presented);
  return key ? { key, via: 'key' } : null;
}

/**
 * The session a request's cookie presents, for agent-platform HTTP requests without an Authorization header (a
 * request with one is an API client: its cookie is ignored). WebSocket upgrades never use the cookie.
 */
async function cookieCredential(req: HttpRequest, sessions: BrowserSessions): Promise<Credential | null> {
  if (req.headers.authorization !== undefined || req.headers.upgrade !== undefined) return null;
  const cookie = sessionCookie(req);
  if (cookie === null) return null;
  const session = await sessions.resolve(cookie);
  if (!session) throw new ApiError(401, 'Unauthorized: session expired or signed out; sign in again');
  if (!SAFE_METHODS.has(req.method)) requireCsrf(req, session);
  return { key: { id: session.keyId, orgId: session.orgId, name: session.keyName, rateLimitPerMin: session.rateLimitPerMin }, via: 'session' };
}

export function authenticator(keys: KeyResolver, tokens: AccessTokens, sessions: BrowserSessions, limiter: RateLimiter, defaultLimitPerMin: number) {
  return async (req: HttpRequest, mode: Exclude<AuthMode, 'none'>): Promise<void> => {
    const platform = mode === 'key';
    const refuse = (status: number, message: string, headers?: Record<string, string>) =>
      platform ? new ApiError(status, message, { headers }) : inferenceError(status, message, headers);
    const presented = bearerToken(req);
    let credential: Credential | null;
    if (presented) {
      credential = await resolveCredential(keys, tokens, presented);
      if (!credential) throw refuse(401, isAccessTokenShaped(presented) ? TOKEN_INVALID : 'Unauthorized: invalid API key');
      if (credential.via === 'token' && mode !== 'inference') throw refuse(403, 'Access tokens are not accepted on this route; use an API key');
    } else {
      // Browser sessions are an agent-platform credential only: the inference API keeps keys and access tokens.
      credential = platform ? await cookieCredential(req, sessions) : null;
      if (!credential) throw refuse(401, CREDENTIAL_MISSING);
    }
    // Tokens and sessions share their key's rate limit and usage: requests made with them are billed to it.
    const { key } = credential;
    const decision = limiter.hit(key.id, key.rateLimitPerMin ?? defaultLimitPerMin);
    if (!decision.allowed) {
      const headers = { ...decision.headers, 'Retry-After': String(decision.retryAfterSec) };
      throw platform
        ? new ApiError(429, 'Rate limit exceeded', { headers, rawBody: { status: false, errors: ['Rate limit exceeded'], code: 'RATE_LIMIT_EXCEEDED', retry_after: decision.retryAfterSec } })
        : refuse(429, 'Rate limit exceeded', headers);
    }
    keys.countUse(key.id);
    const auth: AuthContext = { orgId: key.orgId, keyId: key.id, keyName: key.name, via: credential.via, rateHeaders: decision.headers };
    req.auth = auth;
  };
}
