// API keys and organizations: the keys CLI, hashed storage, bootstrap key, 401/403 per organization, usage counting.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { PG_URL, createOrgKey, keysCli, sleep, startServer, testDialects, type StoreEnv } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, createAgent } from './support/agents.js';

/** Every byte the store holds, to prove a plaintext key is not among them. */
async function storeDump(store: StoreEnv): Promise<string> {
  if (store.dialect === 'sqlite') {
    return readdirSync(store.dataDir)
      .map((f) => readFileSync(path.join(store.dataDir, f)).toString('latin1'))
      .join('\n');
  }
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const rows = await client.query(`SELECT row_to_json(k)::text AS j FROM ${store.env.DATABASE_SCHEMA}.api_keys k`);
    return rows.rows.map((r: { j: string }) => r.j).join('\n');
  } finally {
    await client.end();
  }
}

describe.each(testDialects())('API keys on %s', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_KEY_CACHE_MS: '200' });

  it('creates a key from the CLI, shows it once and stores only its hash', async () => {
    const created = await keysCli(suite.store, ['create', '--name', 'ci-bot']);
    expect(created.code, created.stderr).toBe(0);
    const key = /sk_[A-Za-z0-9_-]+/.exec(created.stdout)?.[0] as string;
    expect(key).toMatch(/^sk_[a-f0-9]{48}$/);
    expect(created.stdout).toMatch(/shown only now/);

    const res = await suite.server.request('GET', `${A}/agent`, { key });
    expect(res.status).toBe(200);

    const listed = await keysCli(suite.store, ['list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('ci-bot');
    expect(listed.stdout).not.toContain(key);
    expect(listed.stdout).toContain(key.slice(0, 7));

    const dump = await storeDump(suite.store);
    expect(dump).not.toContain(key);
    expect(dump).not.toContain(suite.server.key);
  });

  it('creates the bootstrap key at start-up only once', async () => {
    const listed = await keysCli(suite.store, ['list', '--json']);
    const keys = JSON.parse(listed.stdout.trim().split('\n').pop() as string) as { name: string }[];
    expect(keys.filter((k) => k.name === 'bootstrap')).toHaveLength(1);
    const again = await startServer({ store: suite.store, env: { PARLEY_BOOTSTRAP_KEY: suite.server.key } });
    await again.stop();
    const relisted = JSON.parse((await keysCli(suite.store, ['list', '--json'])).stdout.trim().split('\n').pop() as string) as { name: string }[];
    expect(relisted.filter((k) => k.name === 'bootstrap')).toHaveLength(1);
  });

  it('refuses a request without a key or with an unknown key (401)', async () => {
    for (const key of [null, 'sk_unknown_key_0000000000000000', 'not-a-key']) {
      const res = await suite.server.request('GET', `${A}/agent`, { key });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ status: false });
      expect(res.body.errors[0]).toMatch(/^Unauthorized/);
    }
  });

  it("answers 403 for another organization's agent and hides it from lists", async () => {
    const other = await createOrgKey(suite.store, 'other-org-key', 'acme');
    const mine = await createAgent(suite.server, { name: 'Mine' });
    const theirs = await createAgent(suite.server, { name: 'Theirs' }, other);

    const forbidden = await suite.server.request('GET', `${A}/agent/${theirs}`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.status).toBe(false);
    expect(forbidden.body.data).toBeTypeOf('object');
    const write = await suite.server.request('PATCH', `${A}/agent/${theirs}`, { body: { name: 'hijack' } });
    expect(write.status).toBe(403);
    const branches = await suite.server.request('GET', `${A}/agent/${theirs}/branches`);
    expect(branches.status).toBe(403);

    const list = await suite.server.request('GET', `${A}/agent`, { key: other });
    const ids = (list.body.data.agents as { _id: string }[]).map((a) => a._id);
    expect(ids).toContain(theirs);
    expect(ids).not.toContain(mine);
    const readOwn = await suite.server.request('GET', `${A}/agent/${theirs}`, { key: other });
    expect(readOwn.status).toBe(200);
  });

  it('counts usage per key', async () => {
    const key = await createOrgKey(suite.store, 'usage-key', 'usage-org');
    for (let i = 0; i < 4; i++) expect((await suite.server.request('GET', `${A}/agent`, { key })).status).toBe(200);
    let count = 0;
    for (let i = 0; i < 40 && count < 4; i++) {
      await sleep(250);
      const keys = JSON.parse((await keysCli(suite.store, ['list', '--json'])).stdout.trim().split('\n').pop() as string) as { name: string; requestCount: number; lastUsedAt: string | null }[];
      const entry = keys.find((k) => k.name === 'usage-key');
      count = entry?.requestCount ?? 0;
      if (count >= 4) expect(entry?.lastUsedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
    expect(count).toBe(4);
  });

  it('stops accepting a deleted key (within the key cache time)', async () => {
    const key = await createOrgKey(suite.store, 'short-lived', 'temp-org');
    expect((await suite.server.request('GET', `${A}/agent`, { key })).status).toBe(200);
    const del = await keysCli(suite.store, ['delete', 'short-lived']);
    expect(del.code).toBe(0);
    await sleep(400);
    expect((await suite.server.request('GET', `${A}/agent`, { key })).status).toBe(401);
    expect((await keysCli(suite.store, ['delete', 'short-lived'])).code).toBe(1);
  });

  it('applies a per-key rate limit set at creation', async () => {
    const key = await createOrgKey(suite.store, 'slow-key', 'slow-org', ['--rate-limit', '2']);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await suite.server.request('GET', `${A}/agent`, { key })).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect((await suite.server.request('GET', `${A}/agent`)).status).toBe(200);
  });
});
