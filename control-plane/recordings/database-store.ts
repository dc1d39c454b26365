// Recording objects in the store (`recording_objects`, migration 0016): every server sharing the store serves every recording.
import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { nowIso } from '../store/ids.js';
import { FileObjectStore, SignedObjects, checkKey, type ObjectStore } from './object-store.js';

/**
 * Objects are read in slices of this many bytes. PostgreSQL sends bytea as hex text: a one-hour dual recording
 * (230 MB) read at once would arrive as a 460 MB string, close to V8's string limit; slices keep that at 16 MB.
 */
const SLICE = 8 * 1024 * 1024;
/** PostgreSQL's limit for one bytea value is 1 GB; refuse clearly before it. */
const MAX_BYTES = 1024 * 1024 * 1024 - 64 * 1024 * 1024;

export class DatabaseObjectStore extends SignedObjects implements ObjectStore {
  readonly kind = 'database' as const;
  /** Recordings written while this server kept them in files: still served from there when the store has no row. */
  private readonly earlier: FileObjectStore | null;

  constructor(
    private readonly db: Db,
    secret: Buffer,
    filesRoot?: string,
  ) {
    super(secret);
    this.earlier = filesRoot ? new FileObjectStore(filesRoot, secret) : null;
  }

  /** One upsert of the whole value: a reader sees the previous object or this one, never part of it. */
  async put(key: string, bytes: Buffer): Promise<void> {
    checkKey(key);
    if (bytes.length > MAX_BYTES) throw new Error(`object ${key} is ${bytes.length} bytes: too large for the database store`);
    const row = { key, bytes, size: bytes.length, created_at: nowIso() };
    await this.db
      .insertInto('recording_objects')
      .values(row)
      .onConflict((oc) => oc.column('key').doUpdateSet({ bytes: row.bytes, size: row.size, created_at: row.created_at }))
      .execute();
  }

  async get(key: string): Promise<Buffer | null> {
    checkKey(key);
    // Small objects (the usual call) in one query; larger ones in slices from one snapshot, so a concurrent put
    // (a transfer's recording saved over the handover's copy) cannot mix two versions.
    const head = await this.db
      .selectFrom('recording_objects')
      .select(['size', sql<Buffer | null>`case when size <= ${SLICE} then bytes end`.as('bytes')])
      .where('key', '=', key)
      .executeTakeFirst();
    if (!head) return this.earlier ? this.earlier.get(key) : null;
    if (head.bytes) return head.bytes;
    return this.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (tx) => {
        const row = await tx.selectFrom('recording_objects').select('size').where('key', '=', key).executeTakeFirst();
        if (!row) return null;
        const out = Buffer.allocUnsafe(row.size);
        for (let at = 0; at < row.size; at += SLICE) {
          const part = await tx
            .selectFrom('recording_objects')
            .select(sql<Buffer>`substr(bytes, ${at + 1}, ${SLICE})`.as('part'))
            .where('key', '=', key)
            .executeTakeFirstOrThrow();
          if (part.part.length !== Math.min(SLICE, row.size - at)) throw new Error(`object ${key}: short read at ${at}`);
          out.set(part.part, at);
        }
        return out;
      });
  }
}
