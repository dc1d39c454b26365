// Credentials on HTTP routes: API keys everywhere, access tokens on the inference routes that accept them; rate limits.
import { ApiError } from '../../control-plane/errors.js';
import type { AuthContext, KeyResolver } from '../../control-plane/auth/keys.js';
import type { RateLimiter } from '../../control-plane/auth/rate-limit.js';
import { isAccessTokenShaped, type AccessTokens } from '../../control-plane/auth/tokens.js';
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
  via: 'key' | 'token';
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

export function authenticator(keys: KeyResolver, tokens: AccessTokens, limiter: RateLimiter, defaultLimitPerMin: number) {
  return async (req: HttpRequest, mode: Exclude<AuthMode, 'none'>): Promise<void> => {
    const platform = mode === 'key';
    const refuse = (status: number, message: string, headers?: Record<string, string>) =>
      platform ? new ApiError(status, message, { headers }) : inferenceError(status, message, headers);
    const presented = bearerToken(req);
    if (!presented) throw refuse(401, CREDENTIAL_MISSING);
    const credential = await resolveCredential(keys, tokens, presented);
    if (!credential) throw refuse(401, isAccessTokenShaped(presented) ? TOKEN_INVALID : 'Unauthorized: invalid API key');
    if (credential.via === 'token' && mode !== 'inference') throw refuse(403, 'Access tokens are not accepted on this route; use an API key');
    // Tokens share the minting key's rate limit and usage: requests made with them are billed to it.
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
