// `{atoms}/auth/session`: the console signs in with an API key (an HttpOnly cookie and a CSRF token), reads it back,
// signs out, and mints short-lived `wat_` access tokens for the inference API (which never takes the cookie).
import { z } from 'zod';
import type { HttpServer } from '../http/server.js';
import { docs, ok, type HttpRequest } from '../http/types.js';
import { ApiError, badRequest, forbidden, unauthorized } from '../../control-plane/errors.js';
import type { KeyResolver } from '../../control-plane/auth/keys.js';
import { SESSION_COOKIE, SIGN_IN_FAILURES_PER_MINUTE, type BrowserSession, type BrowserSessions, type SignInLimiter } from '../../control-plane/auth/sessions.js';
import { crossOrigin, requireCsrf, sessionCookie, viaHttps } from '../http/auth.js';
import { TOKEN_LIMIT_MESSAGE, TOKEN_RESPONSE, type TokenMinter } from './auth-token.js';

/** Lifetime of a token minted for the console: long enough for one request (a voice sample). */
export const CONSOLE_TOKEN_TTL_SECONDS = 60;

export interface SessionRouteDeps {
  sessions: BrowserSessions;
  keys: KeyResolver;
  /** Failed sign-ins per client address. */
  signIns: SignInLimiter;
  /** The minter of `POST {waves}/auth/token`: the console's tokens count against the same per-key limit. */
  minter: TokenMinter;
}

/** The cookie: script cannot read it (HttpOnly), other sites' requests do not carry it (SameSite=Strict). */
function cookie(req: HttpRequest, value: string, maxAgeSec: number): string {
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeSec}${viaHttps(req) ? '; Secure' : ''}`;
}

/** What the page learns of its session; the CSRF token is here so a reloaded page gets it back. */
const view = (s: BrowserSession) => ({ csrfToken: s.csrfToken, expiresAt: s.expiresAt, organizationId: s.orgId, keyName: s.keyName });

/** Session responses carry the CSRF token: never cached. */
const NO_STORE = { 'Cache-Control': 'no-store' };
/** The sign-in body. A body that is not an object is a 400; a missing or non-string key is a failed sign-in (401). */
const signInBody = z.object({ apiKey: z.string().describe('An `sk_...` key.') }).passthrough();

const d = docs('Browser sessions');
const sessionData = {
  type: 'object',
  required: ['status', 'data'],
  properties: {
    status: { const: true },
    data: {
      type: 'object',
      required: ['csrfToken', 'expiresAt', 'organizationId', 'keyName'],
      properties: {
        csrfToken: { type: 'string', description: 'Send as `X-CSRF-Token` on every request other than GET made with the cookie.' },
        expiresAt: { type: 'string', format: 'date-time', description: 'Absolute expiry (PARLEY_SESSION_TTL_HOURS after sign-in).' },
        organizationId: { type: 'string' },
        keyName: { type: 'string', description: 'The API key the session acts as.' },
      },
    },
  },
};
const COOKIE_NOTE = 'Reads the `parley_session` cookie (401 without a live session).';

async function currentSession(req: HttpRequest, sessions: BrowserSessions): Promise<{ token: string; session: BrowserSession }> {
  const token = sessionCookie(req);
  const session = token === null ? null : await sessions.resolve(token);
  if (token === null || !session) throw unauthorized('Unauthorized: not signed in (sign in with POST /auth/session)');
  return { token, session };
}

export function sessionRoutes(server: HttpServer, prefix: string, deps: SessionRouteDeps): void {
  server.route('POST', `${prefix}/auth/session`, async (req) => {
    // Another site must not sign a visitor in either (into the attacker's organization).
    if (crossOrigin(req)) throw forbidden('Cross-site request refused');
    const address = req.remoteAddress ?? 'unknown';
    const wait = deps.signIns.retryAfter(address);
    if (wait > 0) throw new ApiError(429, 'Too many failed sign-in attempts; try again later', { headers: { 'Retry-After': String(wait) } });
    const body = req.json();
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('Request body must be a JSON object: {"apiKey": "sk_..."}');
    const parsed = signInBody.safeParse(body);
    const apiKey = parsed.success ? parsed.data.apiKey : undefined;
    const key = apiKey !== undefined ? await deps.keys.resolve(apiKey) : null;
    if (!key) {
      deps.signIns.fail(address);
      throw unauthorized(apiKey ? 'Unauthorized: invalid API key' : 'Unauthorized: missing API key (send {"apiKey": "sk_..."})');
    }
    const { token, session } = await deps.sessions.create(key);
    return ok(view(session), 201, { ...NO_STORE, 'Set-Cookie': cookie(req, token, deps.sessions.ttlSeconds) });
  }, {
    auth: 'none',
    maxBodyBytes: 4096,
    doc: d('Sign in with an API key (sets the session cookie)', {
      description:
        'Sets `parley_session` (HttpOnly, SameSite=Strict, Path=/, Max-Age: the session lifetime; Secure behind `X-Forwarded-Proto: https`). ' +
        'The session then acts as the key on every agent-platform route. A wrong or missing key is 401; ' +
        `${SIGN_IN_FAILURES_PER_MINUTE} failed attempts a minute from one address: 429 with Retry-After.`,
      body: { schema: signInBody },
      response: { status: 201, schema: sessionData },
      errors: [401, 429],
    }),
  });

  server.route('GET', `${prefix}/auth/session`, async (req) => {
    const { session } = await currentSession(req, deps.sessions);
    return ok(view(session), 200, NO_STORE);
  }, { auth: 'none', doc: d('The current session (a reloaded page gets its CSRF token back)', { description: COOKIE_NOTE, response: { schema: sessionData }, errors: [401] }) });

  server.route('DELETE', `${prefix}/auth/session`, async (req) => {
    const { token, session } = await currentSession(req, deps.sessions);
    requireCsrf(req, session);
    await deps.sessions.delete(token);
    return ok({ signedOut: true }, 200, { ...NO_STORE, 'Set-Cookie': cookie(req, '', 0) });
  }, { auth: 'none', doc: d('Sign out (deletes the session, clears the cookie)', { description: `${COOKIE_NOTE} Needs \`X-CSRF-Token\` (403 without it).`, errors: [401, 403] }) });

  server.route('POST', `${prefix}/auth/session/access-token`, async (req) => {
    // A cookie-only route: an API client mints with its key at POST {waves}/auth/token.
    if (req.headers.authorization !== undefined) throw forbidden('This route takes the session cookie only; with an API key, use POST /auth/token of the inference API');
    const { session } = await currentSession(req, deps.sessions);
    requireCsrf(req, session);
    const minted = deps.minter.mint(session.keyId, CONSOLE_TOKEN_TTL_SECONDS);
    if (minted.refused) throw new ApiError(429, TOKEN_LIMIT_MESSAGE, { headers: minted.headers });
    return { status: 201, headers: { ...NO_STORE, ...minted.headers }, body: minted.body };
  }, {
    auth: 'none',
    maxBodyBytes: 1024,
    doc: d('Mint a short-lived access token (wat_) for the inference API from the session', {
      description:
        `${COOKIE_NOTE} Needs \`X-CSRF-Token\` (403 without it). The inference API does not take the cookie; the console ` +
        `plays voice samples with this token instead. It lives ${CONSOLE_TOKEN_TTL_SECONDS} s, acts as the session's key, and ` +
        'counts against the same per-key limit as `POST /auth/token` of the inference API (429 with Retry-After). ' +
        'Requests with an `Authorization` header are refused (403): API clients mint with their key there.',
      response: { status: 201, description: 'The token, in the shape of the inference API\'s `POST /auth/token`.', schema: { ...TOKEN_RESPONSE, properties: { ...TOKEN_RESPONSE.properties, expires_in: { type: 'integer', const: CONSOLE_TOKEN_TTL_SECONDS } } } },
      errors: [401, 403, 429],
    }),
  });
}
