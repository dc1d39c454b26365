// `POST {waves}/auth/token`: mints a short-lived access token from an API key (tokens cannot mint), rate limited per key.
import type { HttpServer } from '../http/server.js';
import { ApiError } from '../../control-plane/errors.js';
import type { RateLimiter } from '../../control-plane/auth/rate-limit.js';
import { TOKEN_TTL, type AccessTokens } from '../../control-plane/auth/tokens.js';
import { inferenceError } from '../http/auth.js';

function ttlOf(body: unknown): number {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return invalid('Request body must be a JSON object', []);
  const ttl = (body as { ttl_seconds?: unknown }).ttl_seconds;
  if (ttl === undefined) return TOKEN_TTL.default;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < TOKEN_TTL.min || ttl > TOKEN_TTL.max) {
    return invalid(`ttl_seconds must be an integer from ${TOKEN_TTL.min} to ${TOKEN_TTL.max}`, ['ttl_seconds']);
  }
  return ttl;
}

function invalid(message: string, path: string[]): never {
  throw new ApiError(400, message, { rawBody: { status: 'error', message, errors: [{ code: 'invalid_ttl', message, path }] } });
}

export function tokenRoutes(server: HttpServer, prefix: string, tokens: AccessTokens, mintLimiter: RateLimiter, mintsPerMinute: number): void {
  server.route('POST', `${prefix}/auth/token`, (req) => {
    const ttl = ttlOf(req.json());
    const auth = req.auth;
    if (!auth) throw new Error('route requires authentication');
    const decision = mintLimiter.hit(auth.keyId, mintsPerMinute);
    if (!decision.allowed) {
      throw inferenceError(429, 'Too many access tokens minted; mint one per client session', { ...decision.headers, 'Retry-After': String(decision.retryAfterSec) });
    }
    const { token, expiresAt } = tokens.mint(auth.keyId, ttl);
    return {
      status: 201,
      headers: decision.headers,
      body: { access_token: token, token_type: 'Bearer', expires_in: ttl, expires_at: expiresAt.toISOString() },
    };
  }, { auth: 'inference-key-only', maxBodyBytes: 4096 });
}
