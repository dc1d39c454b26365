// Bearer API-key authentication and per-key rate limiting for HTTP routes.
import { ApiError } from '../../control-plane/errors.js';
import type { KeyResolver } from '../../control-plane/auth/keys.js';
import type { RateLimiter } from '../../control-plane/auth/rate-limit.js';
import type { HttpRequest } from './types.js';

export function bearerToken(req: HttpRequest): string | null {
  const header = req.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? (match[1] as string) : null;
}

export function keyAuthenticator(keys: KeyResolver, limiter: RateLimiter, defaultLimitPerMin: number) {
  return async (req: HttpRequest): Promise<void> => {
    const token = bearerToken(req);
    if (!token) throw new ApiError(401, 'Unauthorized: missing API key (send Authorization: Bearer sk_...)');
    const key = await keys.resolve(token);
    if (!key) throw new ApiError(401, 'Unauthorized: invalid API key');
    const limit = key.rateLimitPerMin ?? defaultLimitPerMin;
    const decision = limiter.hit(key.id, limit);
    if (!decision.allowed) {
      throw new ApiError(429, 'Rate limit exceeded', {
        headers: { ...decision.headers, 'Retry-After': String(decision.retryAfterSec) },
        rawBody: { status: false, errors: ['Rate limit exceeded'], code: 'RATE_LIMIT_EXCEEDED', retry_after: decision.retryAfterSec },
      });
    }
    keys.countUse(key.id);
    req.auth = { orgId: key.orgId, keyId: key.id, keyName: key.name, rateHeaders: decision.headers };
  };
}
