// Organizations and API keys: `sk_` keys stored only as SHA-256 hashes, resolved per request, usage counted per key.
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../store/db.js';
import { newId, nowIso } from '../store/ids.js';

export interface AuthContext {
  orgId: string;
  keyId: string;
  keyName: string;
  /** How the caller authenticated: an API key, an access token minted from that key, or a browser session acting as it. */
  via: 'key' | 'token' | 'session';
  /** RateLimit-* headers to send with the response. */
  rateHeaders?: Record<string, string>;
}

export interface KeyRecord {
  id: string;
  orgId: string;
  name: string;
  prefix: string;
  rateLimitPerMin: number | null;
  requestCount: number;
  lastUsedAt: string | null;
  createdAt: string;
}

export const DEFAULT_ORG = 'default';

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex');
const generateKey = (): string => `sk_${randomBytes(24).toString('hex')}`;
export const isKeyShaped = (value: string): boolean => /^sk_[A-Za-z0-9_-]{16,200}$/.test(value);

export async function ensureOrg(db: Db, name: string): Promise<string> {
  const existing = await db.selectFrom('organizations').select('id').where('name', '=', name).executeTakeFirst();
  if (existing) return existing.id;
  const id = newId();
  await db.insertInto('organizations').values({ id, name, created_at: nowIso() }).onConflict((oc) => oc.column('name').doNothing()).execute();
  const row = await db.selectFrom('organizations').select('id').where('name', '=', name).executeTakeFirstOrThrow();
  return row.id;
}

/** Creates a key and returns its plaintext once; only the hash is kept. */
export async function createKey(
  db: Db,
  input: { name: string; orgName?: string; rateLimitPerMin?: number | null; plaintext?: string },
): Promise<{ key: string; record: KeyRecord }> {
  const orgId = await ensureOrg(db, input.orgName ?? DEFAULT_ORG);
  const key = input.plaintext ?? generateKey();
  if (!isKeyShaped(key)) throw new Error('API keys look like sk_ followed by 16-200 letters, digits, _ or -');
  const id = newId();
  const createdAt = nowIso();
  await db
    .insertInto('api_keys')
    .values({
      id,
      org_id: orgId,
      name: input.name,
      key_hash: hashKey(key),
      prefix: `${key.slice(0, 7)}…`,
      rate_limit_per_min: input.rateLimitPerMin ?? null,
      created_at: createdAt,
    })
    .execute();
  return {
    key,
    record: { id, orgId, name: input.name, prefix: `${key.slice(0, 7)}…`, rateLimitPerMin: input.rateLimitPerMin ?? null, requestCount: 0, lastUsedAt: null, createdAt },
  };
}

/** Makes sure a key with this plaintext exists (PARLEY_BOOTSTRAP_KEY); returns whether it was created. */
export async function ensureBootstrapKey(db: Db, plaintext: string): Promise<boolean> {
  const found = await db.selectFrom('api_keys').select('id').where('key_hash', '=', hashKey(plaintext)).executeTakeFirst();
  if (found) return false;
  await createKey(db, { name: 'bootstrap', plaintext });
  return true;
}

export async function listKeys(db: Db): Promise<(KeyRecord & { orgName: string })[]> {
  const rows = await db
    .selectFrom('api_keys')
    .innerJoin('organizations', 'organizations.id', 'api_keys.org_id')
    .selectAll('api_keys')
    .select('organizations.name as org_name')
    .orderBy('api_keys.created_at')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    orgId: r.org_id,
    orgName: r.org_name,
    name: r.name,
    prefix: r.prefix,
    rateLimitPerMin: r.rate_limit_per_min,
    requestCount: Number(r.request_count),
    lastUsedAt: r.last_used_at,
    createdAt: r.created_at,
  }));
}

/** Deletes a key; its browser sessions go with it (the foreign key cascades), its access tokens within the key cache time. */
export async function deleteKey(db: Db, idOrName: string): Promise<number> {
  const result = await db
    .deleteFrom('api_keys')
    .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

interface CachedKey {
  record: { id: string; orgId: string; name: string; rateLimitPerMin: number | null } | null;
  fetchedAt: number;
}

/**
 * Resolves bearer keys with a short cache (so a deleted key stops working within `cacheMs`),
 * and batches usage counters into the store.
 */
export class KeyResolver {
  private readonly cache = new Map<string, CachedKey>();
  private readonly byIdCache = new Map<string, CachedKey>();
  private readonly usage = new Map<string, { count: number; lastUsedAt: string }>();
  private flushTimer: NodeJS.Timeout;

  constructor(
    private readonly db: Db,
    private readonly cacheMs = 5000,
    flushMs = 2000,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.flushTimer = setInterval(() => void this.flushUsage(), flushMs);
    this.flushTimer.unref();
  }

  async resolve(key: string): Promise<CachedKey['record']> {
    if (!isKeyShaped(key)) return null;
    return this.lookup(this.cache, 'key_hash', hashKey(key));
  }

  /** Resolves a key by id (the minting key of an access token), with the same cache time as by value. */
  async resolveId(keyId: string): Promise<CachedKey['record']> {
    return this.lookup(this.byIdCache, 'id', keyId);
  }

  private async lookup(cache: Map<string, CachedKey>, column: 'key_hash' | 'id', value: string): Promise<CachedKey['record']> {
    const cached = cache.get(value);
    if (cached && Date.now() - cached.fetchedAt < this.cacheMs) return cached.record;
    const row = await this.db.selectFrom('api_keys').select(['id', 'org_id', 'name', 'rate_limit_per_min']).where(column, '=', value).executeTakeFirst();
    const record = row ? { id: row.id, orgId: row.org_id, name: row.name, rateLimitPerMin: row.rate_limit_per_min } : null;
    if (cache.size > 10_000) cache.clear();
    cache.set(value, { record, fetchedAt: Date.now() });
    return record;
  }

  countUse(keyId: string): void {
    const entry = this.usage.get(keyId) ?? { count: 0, lastUsedAt: '' };
    entry.count++;
    entry.lastUsedAt = nowIso();
    this.usage.set(keyId, entry);
  }

  /** Writes the counted usage; counts that could not be written are kept for the next flush. */
  async flushUsage(): Promise<void> {
    const pending = [...this.usage.entries()];
    this.usage.clear();
    for (const [id, entry] of pending) {
      try {
        await this.db
          .updateTable('api_keys')
          .set((eb) => ({ request_count: eb('request_count', '+', entry.count), last_used_at: entry.lastUsedAt }))
          .where('id', '=', id)
          .execute();
      } catch (err) {
        const newer = this.usage.get(id);
        this.usage.set(id, { count: entry.count + (newer?.count ?? 0), lastUsedAt: newer?.lastUsedAt ?? entry.lastUsedAt });
        this.onError(err);
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.flushTimer);
    await this.flushUsage();
  }
}
