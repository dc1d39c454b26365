// Access tokens: minting (ttl rules, rate limit, RateLimit headers), where tokens are refused, expiry, region, key deletion.
import { describe, expect, it } from 'vitest';
import { AccessTokens } from '../control-plane/auth/tokens.js';
import { createOrgKey, freshStore, keysCli, sleep, startServer, storeSql } from './support/server.js';
import { serverForSuite } from './support/suite.js';

const W = '/waves/v1';

describe('POST /auth/token', () => {
  const suite = serverForSuite('sqlite', { PARLEY_REGION: 'eu-west', PARLEY_TOKEN_MINTS_PER_MINUTE: '5', PARLEY_KEY_CACHE_MS: '500' });
  const mint = (body?: unknown, key?: string | null) => suite.server.request('POST', `${W}/auth/token`, { ...(body === undefined ? {} : { body }), key });

  it('mints a wat_ token with the default ttl of 300 s, 201, with RateLimit headers', async () => {
    const before = Date.now();
    const res = await mint();
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_at', 'expires_in', 'token_type']);
    expect(res.body.access_token).toMatch(/^wat_/);
    expect(res.body.token_type).toBe('Bearer');
    expect(res.body.expires_in).toBe(300);
    const expiresAt = Date.parse(res.body.expires_at);
    expect(res.body.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 299_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 301_000);
    expect(res.headers.get('ratelimit-limit')).toBe('5');
    expect(Number(res.headers.get('ratelimit-remaining'))).toBeLessThan(5);
    expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
    const custom = await mint({ ttl_seconds: 30 });
    expect(custom.body.expires_in).toBe(30);
  });

  it('refuses a ttl outside 30-900 or not an integer (400)', async () => {
    const key = await createOrgKey(suite.store, 'ttl-key', 'ttl-org');
    for (const ttl_seconds of [29, 901, 12.5, '300', null]) {
      const res = await mint({ ttl_seconds }, key);
      expect(res.status, String(ttl_seconds)).toBe(400);
      const message = 'ttl_seconds must be an integer from 30 to 900';
      expect(res.body).toEqual({ status: 'error', message, errors: [{ code: 'invalid_ttl', message, path: ['ttl_seconds'] }] });
    }
    expect((await mint({ ttl_seconds: 900 }, key)).status).toBe(201);
  });

  it('answers 403 to a token presented to mint, or on routes outside the accepted list', async () => {
    const key = await createOrgKey(suite.store, 'refuse-key', 'refuse-org');
    const token = (await mint(undefined, key)).body.access_token as string;
    const again = await mint(undefined, token);
    expect(again.status).toBe(403);
    expect(again.body).toEqual({ error: expect.stringMatching(/access token/i) });
    const platform = await suite.server.request('GET', '/atoms/v1/agent', { key: token });
    expect(platform.status).toBe(403);
    expect(platform.body.status).toBe(false);
  });

  it('answers 401 {error} to missing, malformed, forged and expired tokens', async () => {
    const missing = await mint(undefined, null);
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ error: expect.any(String) });
    const [secret] = await storeSql(suite.store, "SELECT value FROM server_secrets WHERE name = 'access_token_signing_key'");
    const signer = new AccessTokens(Buffer.from(String(secret?.value), 'base64'), 'eu-west');
    const keyId = String((await storeSql(suite.store, "SELECT id FROM api_keys WHERE name = 'bootstrap'"))[0]?.id);
    // Minted by this server 10 minutes ago with a 5-minute life.
    const expired = signer.mint(keyId, 300, Date.now() - 600_000).token;
    const forged = new AccessTokens(Buffer.alloc(32, 7), 'eu-west').mint(keyId, 300).token;
    for (const token of ['wat_nonsense', forged, expired]) {
      const res = await suite.server.request('POST', `${W}/auth/token`, { key: token });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Access token is invalid or expired' });
    }
    expect((await suite.server.request('GET', '/atoms/v1/agent', { key: expired })).status).toBe(401);
  });

  it('rate limits minting per key (429 with Retry-After)', async () => {
    const key = await createOrgKey(suite.store, 'burst-key', 'burst-org');
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await mint(undefined, key)).status);
    expect(statuses).toEqual([201, 201, 201, 201, 201, 429]);
    const limited = await mint(undefined, key);
    expect(limited.body).toEqual({ error: expect.stringMatching(/too many/i) });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
  });

  it('takes a token as api_key only on WebSockets: an HTTP request needs the header', async () => {
    const token = (await mint()).body.access_token as string;
    const viaQuery = await suite.server.request('GET', `${W}/voice/get-all-models?api_key=${token}`, { key: null });
    expect(viaQuery.status).toBe(401);
    expect((await suite.server.request('GET', `${W}/voice/get-all-models`, { key: token })).status).toBe(200);
  });

  it('bills requests made with a token to the minting key', async () => {
    const key = await createOrgKey(suite.store, 'billed-key', 'billed-org');
    const token = (await mint(undefined, key)).body.access_token as string;
    for (let i = 0; i < 3; i++) expect((await suite.server.request('GET', `${W}/voice/get-all-models`, { key: token })).status).toBe(200);
    let count = 0;
    for (let i = 0; i < 40 && count < 4; i++) {
      await sleep(250);
      const keys = JSON.parse((await keysCli(suite.store, ['list', '--json'])).stdout.trim().split('\n').pop() as string) as { name: string; requestCount: number }[];
      count = keys.find((k) => k.name === 'billed-key')?.requestCount ?? 0;
    }
    // One mint and three requests made with its token.
    expect(count).toBe(4);
  });

  it('refuses tokens of a deleted key within 5 s', async () => {
    const key = await createOrgKey(suite.store, 'doomed-key', 'doomed-org');
    const token = (await mint(undefined, key)).body.access_token as string;
    expect((await keysCli(suite.store, ['delete', 'doomed-key'])).code).toBe(0);
    const started = Date.now();
    let status = 0;
    while (Date.now() - started < 5000) {
      status = (await suite.server.request('GET', '/atoms/v1/agent', { key: token })).status;
      if (status === 401) break;
      await sleep(100);
    }
    expect(status).toBe(401);
  });
});

describe('tokens across regions', () => {
  it('a token minted in one region is refused (401) by a server of another region', async () => {
    const storeA = freshStore('sqlite');
    const storeB = freshStore('sqlite');
    const a = await startServer({ store: storeA, env: { PARLEY_REGION: 'us-east' } });
    const b = await startServer({ store: storeB, env: { PARLEY_REGION: 'ap-south-1', PARLEY_BOOTSTRAP_KEY: a.key } });
    try {
      const token = (await a.request('POST', `${W}/auth/token`)).body.access_token as string;
      expect(token).toMatch(/^wat_/);
      const res = await b.request('POST', `${W}/auth/token`, { key: token });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Access token is invalid or expired' });
      // The same key is valid in both regions; only the token is regional.
      expect((await b.request('POST', `${W}/auth/token`, { key: a.key })).status).toBe(201);
    } finally {
      await a.stop();
      await b.stop();
      await storeA.cleanup();
      await storeB.cleanup();
    }
  });
});
