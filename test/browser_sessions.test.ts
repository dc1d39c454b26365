// Browser sessions: sign-in cookie attributes, the cookie on agent-platform routes (not inference), CSRF refusals,
// sign-out, expiry, deleted keys, the per-address sign-in limit, and neither cookie nor CSRF token in the logs.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrgKey, keysCli, sleep, startServer, storeSql, testDialects, type TestServer } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { upgradeRefusal } from './support/ws-refusal.js';
import { A } from './support/agents.js';

const SESSION = `${A}/auth/session`;

interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

interface SignedIn {
  cookie: string;
  csrf: string;
  setCookie: string;
  body: any;
}

/** Every cookie value and CSRF token handed out, for the log scan. */
const secretsSeen: string[] = [];

/** A request as a browser page makes it: JSON (or a raw body), optional cookie, CSRF header and Origin; no key. */
async function call(server: TestServer, method: string, path: string, opts: { cookie?: string; csrf?: string; origin?: string; json?: unknown; form?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.csrf) headers['x-csrf-token'] = opts.csrf;
  if (opts.origin) headers.origin = opts.origin;
  let body: string | undefined;
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    headers['content-type'] = 'application/json';
  } else if (opts.form !== undefined) {
    body = opts.form;
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  const res = await fetch(server.base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

async function signIn(server: TestServer, apiKey: string, headers: Record<string, string> = {}): Promise<SignedIn> {
  const res = await call(server, 'POST', SESSION, { json: { apiKey }, headers });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const setCookie = res.headers.getSetCookie()[0] as string;
  const value = /^parley_session=([A-Za-z0-9_-]+);/.exec(setCookie)?.[1] as string;
  expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
  secretsSeen.push(value, res.body.data.csrfToken);
  return { cookie: `parley_session=${value}`, csrf: res.body.data.csrfToken as string, setCookie, body: res.body };
}

const agentNames = async (server: TestServer, cookie: string): Promise<string[]> => {
  const res = await call(server, 'GET', `${A}/agent`, { cookie });
  expect(res.status).toBe(200);
  return (res.body.data.agents as { name: string }[]).map((a) => a.name).sort();
};

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

describe.each(testDialects())('browser sessions on %s', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_KEY_CACHE_MS: '200' });
  let session: SignedIn;
  let origin: string;

  beforeAll(async () => {
    session = await signIn(suite.server, suite.server.key);
    origin = suite.server.base;
  });

  it('signs in with an API key: an HttpOnly, SameSite=Strict cookie, a CSRF token, only a hash stored', async () => {
    const attrs = session.setCookie.split(';').map((a) => a.trim());
    expect(attrs).toContain('HttpOnly');
    expect(attrs).toContain('SameSite=Strict');
    expect(attrs).toContain('Path=/');
    expect(attrs).toContain(`Max-Age=${12 * 3600}`);
    expect(attrs).not.toContain('Secure');
    const data = session.body.data;
    expect(data.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(data.keyName).toBe('bootstrap');
    expect(data.organizationId).toMatch(/^[a-f0-9]{24}$/);
    const expires = Date.parse(data.expiresAt) - Date.now();
    expect(expires).toBeGreaterThan(11.9 * 3600_000);
    expect(expires).toBeLessThanOrEqual(12 * 3600_000);

    const token = session.cookie.split('=')[1] as string;
    const rows = await storeSql(suite.store, 'SELECT token_hash, org_id, csrf_token FROM browser_sessions');
    expect(rows.map((r) => r.token_hash)).toContain(sha256(token));
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows.find((r) => r.token_hash === sha256(token))).toMatchObject({ org_id: data.organizationId, csrf_token: data.csrfToken });

    // Behind a proxy that says https, the cookie is Secure.
    const secure = await signIn(suite.server, suite.server.key, { 'x-forwarded-proto': 'https' });
    expect(secure.setCookie.split(';').map((a) => a.trim())).toContain('Secure');
  });

  it('gives a reloaded page its session back (GET), and 401 without a valid cookie', async () => {
    const res = await call(suite.server, 'GET', SESSION, { cookie: session.cookie });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(session.body.data);
    expect(res.headers.get('cache-control')).toBe('no-store');
    for (const cookie of [undefined, 'parley_session=not-a-session', `parley_session=${'A'.repeat(43)}`]) {
      const refused = await call(suite.server, 'GET', SESSION, { cookie });
      expect(refused.status).toBe(401);
      expect(refused.body).toMatchObject({ status: false });
      expect(refused.body.errors[0]).toMatch(/^Unauthorized/);
    }
  });

  it('refuses a wrong or missing key with 401 in the platform envelope', async () => {
    for (const json of [{ apiKey: 'sk_wrong_key_000000000000000000' }, { apiKey: '' }, {}, { apiKey: 42 }]) {
      const res = await call(suite.server, 'POST', SESSION, { json });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ status: false });
      expect(res.body.errors[0]).toMatch(/^Unauthorized/);
      expect(res.headers.getSetCookie()).toEqual([]);
    }
    expect((await call(suite.server, 'POST', SESSION, { json: ['sk_x'] })).status).toBe(400);
    // Another site cannot sign a visitor in.
    const crossSite = await call(suite.server, 'POST', SESSION, { json: { apiKey: suite.server.key }, origin: 'http://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers.getSetCookie()).toEqual([]);
  });

  it('lists agents with only the cookie, and creates one with the cookie and the CSRF header', async () => {
    expect(await agentNames(suite.server, session.cookie)).toEqual([]);
    const created = await call(suite.server, 'POST', `${A}/agent`, { cookie: session.cookie, csrf: session.csrf, origin, json: { name: 'From the console' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.headers.get('ratelimit-limit')).toBe('600');
    // The session acts as its key: the key sees the agent (same organization).
    const byKey = await suite.server.request('GET', `${A}/agent/${created.body.data}`);
    expect(byKey.status).toBe(200);
    expect(byKey.body.data.name).toBe('From the console');
    // Without an Origin header (a non-browser client holding the cookie) the token alone is enough.
    const noOrigin = await call(suite.server, 'POST', `${A}/agent`, { cookie: session.cookie, csrf: session.csrf, json: { name: 'No origin' } });
    expect(noOrigin.status).toBe(201);
    expect(await agentNames(suite.server, session.cookie)).toEqual(['From the console', 'No origin']);
  });

  it('refuses a state-changing request without the CSRF token (403) and changes nothing', async () => {
    const before = await agentNames(suite.server, session.cookie);
    const id = (await suite.server.request('GET', `${A}/agent`)).body.data.agents[0]._id as string;
    const attempts = [
      call(suite.server, 'POST', `${A}/agent`, { cookie: session.cookie, origin, json: { name: 'No header' } }),
      call(suite.server, 'POST', `${A}/agent`, { cookie: session.cookie, csrf: 'A'.repeat(43), origin, json: { name: 'Wrong token' } }),
      call(suite.server, 'POST', `${A}/agent`, { cookie: session.cookie, csrf: session.csrf.slice(0, 20), origin, json: { name: 'Short token' } }),
      call(suite.server, 'PATCH', `${A}/agent/${id}`, { cookie: session.cookie, origin, json: { name: 'Renamed' } }),
      call(suite.server, 'DELETE', `${A}/agent/${id}`, { cookie: session.cookie, origin }),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ status: false, errors: ['CSRF token missing or invalid'] });
    }
    expect(await agentNames(suite.server, session.cookie)).toEqual(before);
  });

  it('refuses a cross-site form post (403) and creates nothing, even with the right token', async () => {
    const before = await agentNames(suite.server, session.cookie);
    const form = await call(suite.server, 'POST', `${A}/agent`, { cookie: session.cookie, origin: 'http://evil.example', form: 'name=Evil' });
    expect(form.status).toBe(403);
    expect(form.body.status).toBe(false);
    // The Origin check stands on its own: a leaked token does not help another site, nor a null origin.
    for (const bad of ['http://evil.example', `http://127.0.0.1:${suite.server.port + 1}`, 'null', `https://127.0.0.1:${suite.server.port}x`]) {
      const res = await call(suite.server, 'POST', `${A}/agent`, { cookie: session.cookie, csrf: session.csrf, origin: bad, json: { name: 'Evil' } });
      expect(res.status, bad).toBe(403);
      expect(res.body).toMatchObject({ status: false, errors: ['Cross-site request refused'] });
    }
    expect(await agentNames(suite.server, session.cookie)).toEqual(before);
  });

  it('ignores the cookie when an Authorization header is present (API clients are unaffected)', async () => {
    const wrong = await call(suite.server, 'GET', `${A}/agent`, { cookie: session.cookie, headers: { authorization: 'Bearer sk_wrong_key_000000000000000000' } });
    expect(wrong.status).toBe(401);
    const basic = await call(suite.server, 'GET', `${A}/agent`, { cookie: session.cookie, headers: { authorization: 'Basic eDp5' } });
    expect(basic.status).toBe(401);
    // A key needs no CSRF token, cookie or not, and acts as its own organization.
    const other = await createOrgKey(suite.store, 'api-client', 'other-org');
    const created = await call(suite.server, 'POST', `${A}/agent`, { cookie: session.cookie, json: { name: 'By key' }, headers: { authorization: `Bearer ${other}` } });
    expect(created.status).toBe(201);
    expect(await agentNames(suite.server, session.cookie)).not.toContain('By key');
  });

  it('never accepts the cookie on the inference API or on a WebSocket upgrade', async () => {
    for (const [method, path] of [['GET', '/waves/v1/voice/get-all-models'], ['POST', '/waves/v1/auth/token'], ['POST', '/waves/v1/tts']]) {
      const res = await call(suite.server, method as string, path as string, { cookie: session.cookie, csrf: session.csrf, origin, json: method === 'POST' ? {} : undefined });
      expect(res.status, path).toBe(401);
    }
    const ws = await upgradeRefusal(`ws://127.0.0.1:${suite.server.port}${A}/agent/connect`, { cookie: session.cookie });
    expect(ws.status).toBe(401);
    const stt = await upgradeRefusal(`ws://127.0.0.1:${suite.server.port}/waves/v1/stt/live?sample_rate=16000&encoding=linear16`, { cookie: session.cookie });
    expect(stt.status).toBe(401);
  });

  it("shares the key's rate limit", async () => {
    const key = await createOrgKey(suite.store, 'slow-console', 'slow-org', ['--rate-limit', '3']);
    const slow = await signIn(suite.server, key);
    const statuses: number[] = [];
    statuses.push((await suite.server.request('GET', `${A}/agent`, { key })).status);
    for (let i = 0; i < 3; i++) statuses.push((await call(suite.server, 'GET', `${A}/agent`, { cookie: slow.cookie })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('signs out: the CSRF header is needed, then the cookie is cleared and stops working', async () => {
    const mine = await signIn(suite.server, suite.server.key);
    const token = mine.cookie.split('=')[1] as string;
    const noHeader = await call(suite.server, 'DELETE', SESSION, { cookie: mine.cookie, origin });
    expect(noHeader.status).toBe(403);
    expect((await call(suite.server, 'GET', SESSION, { cookie: mine.cookie })).status).toBe(200);

    const out = await call(suite.server, 'DELETE', SESSION, { cookie: mine.cookie, csrf: mine.csrf, origin });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ status: true, data: { signedOut: true } });
    const cleared = out.headers.getSetCookie()[0] as string;
    expect(cleared).toMatch(/^parley_session=;/);
    expect(cleared).toContain('Max-Age=0');
    expect(await storeSql(suite.store, 'SELECT 1 FROM browser_sessions WHERE token_hash = $1', [sha256(token)])).toEqual([]);
    expect((await call(suite.server, 'GET', `${A}/agent`, { cookie: mine.cookie })).status).toBe(401);
    expect((await call(suite.server, 'GET', SESSION, { cookie: mine.cookie })).status).toBe(401);
    expect((await call(suite.server, 'DELETE', SESSION, { cookie: mine.cookie, csrf: mine.csrf, origin })).status).toBe(401);
    // Other sessions of the same key are not affected.
    expect((await call(suite.server, 'GET', `${A}/agent`, { cookie: session.cookie })).status).toBe(200);
  });

  it('ends the sessions of a deleted key', async () => {
    const key = await createOrgKey(suite.store, 'console-key', 'temp-org');
    const doomed = await signIn(suite.server, key);
    expect((await call(suite.server, 'GET', `${A}/agent`, { cookie: doomed.cookie })).status).toBe(200);
    const del = await keysCli(suite.store, ['delete', 'console-key']);
    expect(del.code, del.stderr).toBe(0);
    expect(await storeSql(suite.store, 'SELECT 1 FROM browser_sessions WHERE token_hash = $1', [sha256(doomed.cookie.split('=')[1] as string)])).toEqual([]);
    await sleep(400);
    expect((await call(suite.server, 'GET', `${A}/agent`, { cookie: doomed.cookie })).status).toBe(401);
    expect((await call(suite.server, 'GET', SESSION, { cookie: doomed.cookie })).status).toBe(401);
  });

  let short: TestServer;
  describe('with a two-second session lifetime', () => {
    beforeAll(async () => {
      short = await startServer({ store: suite.store, env: { PARLEY_SESSION_TTL_HOURS: String(2 / 3600) } });
    });
    afterAll(async () => {
      await short?.stop();
    });

    it('expires sessions (absolute lifetime), and cleans expired rows up at the next sign-in', async () => {
      const brief = await signIn(short, short.key);
      expect(brief.setCookie).toMatch(/; Max-Age=2(;|$)/);
      expect((await call(short, 'GET', `${A}/agent`, { cookie: brief.cookie })).status).toBe(200);
      await sleep(2500);
      const expired = await call(short, 'GET', `${A}/agent`, { cookie: brief.cookie });
      expect(expired.status).toBe(401);
      expect(expired.body.errors[0]).toMatch(/session expired or signed out/);
      const hash = sha256(brief.cookie.split('=')[1] as string);
      expect(await storeSql(suite.store, 'SELECT 1 FROM browser_sessions WHERE token_hash = $1', [hash])).toHaveLength(1);
      await signIn(short, short.key);
      expect(await storeSql(suite.store, 'SELECT 1 FROM browser_sessions WHERE token_hash = $1', [hash])).toEqual([]);
    });

    it('limits failed sign-ins per address (429 with Retry-After), even for a right key then', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 21; i++) statuses.push((await call(short, 'POST', SESSION, { json: { apiKey: `sk_guess_${String(i).padStart(20, '0')}` } })).status);
      expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
      expect(statuses[20]).toBe(429);
      const right = await call(short, 'POST', SESSION, { json: { apiKey: short.key } });
      expect(right.status).toBe(429);
      expect(right.body).toMatchObject({ status: false });
      expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(right.headers.getSetCookie()).toEqual([]);
      // Sessions live in the store: one made on the other server works here, the sign-in limit notwithstanding.
      expect((await call(short, 'GET', `${A}/agent`, { cookie: session.cookie })).status).toBe(200);
    });
  });

  it('keeps the cookie and the CSRF token out of the logs of both servers', () => {
    const logs = [...suite.server.logs, ...short.logs].join('\n');
    expect(logs).toContain('"route":"/atoms/v1/auth/session"');
    expect(secretsSeen.length).toBeGreaterThan(10);
    for (const secret of secretsSeen) expect(logs).not.toContain(secret);
  });
});
