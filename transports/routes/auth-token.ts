// `POST {waves}/auth/token`: mints a short-lived access token from an API key (tokens cannot mint), rate limited per key.
import { z } from 'zod';
import type { HttpServer } from '../http/server.js';
import { docs, type HttpRequest } from '../http/types.js';
import { ApiError } from '../../control-plane/errors.js';
import type { RateLimiter } from '../../control-plane/auth/rate-limit.js';
import { TOKEN_TTL, type AccessTokens } from '../../control-plane/auth/tokens.js';
import { inferenceError } from '../http/auth.js';
import { tokenErrorBody, tokenRequestError } from './inference-errors.js';

/** The body as JSON; malformed JSON is a 400 with code `invalid_json`. */
function bodyOf(req: HttpRequest): unknown {
  try {
    return req.json();
  } catch (err) {
    if (err instanceof ApiError) throw tokenRequestError(err.message, 'invalid_json', []);
    throw err;
  }
}

/** The request body; other fields are ignored. */
const tokenBody = z.object({ ttl_seconds: z.number().int().min(TOKEN_TTL.min).max(TOKEN_TTL.max).default(TOKEN_TTL.default).describe('Lifetime of the token.') }).passthrough();

function ttlOf(body: unknown): number {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw tokenRequestError('Request body must be a JSON object', 'invalid_body', []);
  const parsed = tokenBody.safeParse(body);
  if (!parsed.success) throw tokenRequestError(`ttl_seconds must be an integer from ${TOKEN_TTL.min} to ${TOKEN_TTL.max}`, 'invalid_ttl', ['ttl_seconds']);
  return parsed.data.ttl_seconds;
}

/** The body both token routes answer with (`POST {waves}/auth/token`, `POST {atoms}/auth/session/access-token`). */
export const TOKEN_RESPONSE = { type: 'object', required: ['access_token', 'token_type', 'expires_in', 'expires_at'], properties: { access_token: { type: 'string', description: '`wat_...`: send as `Authorization: Bearer` to the inference API.' }, token_type: { const: 'Bearer' }, expires_in: { type: 'integer' }, expires_at: { type: 'string', format: 'date-time' } } };

/** Mints access tokens under one per-key limit, for every route that mints them. */
export class TokenMinter {
  constructor(
    private readonly tokens: AccessTokens,
    private readonly limiter: RateLimiter,
    private readonly perMinute: number,
  ) {}

  /** The token and the rate headers, or `refused` with the headers of a 429 (Retry-After included): each route words its own error. */
  mint(keyId: string, ttlSeconds: number): { refused: false; headers: Record<string, string>; body: Record<string, unknown> } | { refused: true; headers: Record<string, string> } {
    const decision = this.limiter.hit(keyId, this.perMinute);
    if (!decision.allowed) return { refused: true, headers: { ...decision.headers, 'Retry-After': String(decision.retryAfterSec) } };
    const { token, expiresAt } = this.tokens.mint(keyId, ttlSeconds);
    return { refused: false, headers: decision.headers, body: { access_token: token, token_type: 'Bearer', expires_in: ttlSeconds, expires_at: expiresAt.toISOString() } };
  }
}

export const TOKEN_LIMIT_MESSAGE = 'Too many access tokens minted; mint one per client session';

export function tokenRoutes(server: HttpServer, prefix: string, minter: TokenMinter): void {
  server.route('POST', `${prefix}/auth/token`, (req) => {
    const ttl = ttlOf(bodyOf(req));
    const auth = req.auth;
    if (!auth) throw new Error('route requires authentication');
    const minted = minter.mint(auth.keyId, ttl);
    if (minted.refused) throw inferenceError(429, TOKEN_LIMIT_MESSAGE, minted.headers);
    return { status: 201, headers: minted.headers, body: minted.body };
  }, { auth: 'inference-key-only', maxBodyBytes: 4096, errorBody: tokenErrorBody, doc: docs('Access tokens')('Mint a short-lived access token (wat_) from an API key', { body: { schema: tokenBody, required: false }, response: { status: 201, description: 'The token.', schema: TOKEN_RESPONSE } }) });
}
