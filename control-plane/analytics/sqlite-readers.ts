// Where analytics queries run. PostgreSQL: on the store's pool (the work is the database server's). SQLite: better-
// sqlite3 runs a query on the thread that asks, and an aggregate over 100,000 calls takes tens of milliseconds that
// every call on this server would wait through; so they run on worker threads, each with a read-only connection to
// the same file (WAL lets readers run beside the server's writes), the dashboard's queries side by side. The SQL is
// what Kysely compiles from the same query builders, so both stores run one text.
import { Worker } from 'node:worker_threads';
import { sql, type CompiledQuery } from 'kysely';
import type { Db } from '../store/db.js';
import { isPostgres } from './query.js';

/** A query builder: its SQL, or its own execution on the store. */
export interface Runnable<T> {
  compile(): CompiledQuery;
  execute(): Promise<T[]>;
}
export type Run = <T>(query: Runnable<T>) => Promise<T[]>;

interface Pending {
  resolve: (rows: unknown[]) => void;
  reject: (err: Error) => void;
}

class Reader {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  readonly worker: Worker;
  dead = false;

  constructor(file: string, cacheKb: number) {
    this.worker = new Worker(new URL('./sqlite-reader-worker.mjs', import.meta.url), { workerData: { file, cacheKb } });
    this.worker.unref();
    this.worker.on('message', (msg: { id: number; rows?: unknown[]; error?: string }) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error !== undefined) p.reject(new Error(msg.error));
      else p.resolve(msg.rows ?? []);
    });
    const fail = (why: string) => {
      this.dead = true;
      for (const p of this.pending.values()) p.reject(new ReaderGone(why));
      this.pending.clear();
    };
    this.worker.on('error', (err) => fail(`analytics reader crashed: ${err.message}`));
    this.worker.on('exit', () => fail('analytics reader exited'));
  }

  get load(): number {
    return this.pending.size;
  }

  all(q: CompiledQuery): Promise<unknown[]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, sql: q.sql, parameters: q.parameters });
    });
  }
}

/** The reader was lost (not a fault of the query): the caller runs it on the store instead. */
class ReaderGone extends Error {}

/** The file behind a SQLite store's main database (null for an in-memory one). */
async function sqliteFile(db: Db): Promise<string | null> {
  const rows = (await sql<{ name: string; file: string }>`PRAGMA database_list`.execute(db)).rows;
  const main = rows.find((r) => r.name === 'main');
  return main?.file ? main.file : null;
}

export interface Readers {
  run: Run;
  close(): Promise<void>;
}

/**
 * How analytics queries run on this store: `count` SQLite readers (default 2), each with a `cacheKb` page cache. A lost
 * reader is replaced on the next query; meanwhile its queries run on the store's own connection.
 */
export async function analyticsReaders(db: Db, opts: { count?: number; cacheKb?: number } = {}): Promise<Readers> {
  const direct: Run = <T>(q: Runnable<T>) => q.execute();
  if (isPostgres(db)) return { run: direct, close: async () => undefined };
  const file = await sqliteFile(db);
  if (!file) return { run: direct, close: async () => undefined };
  const count = opts.count ?? 2;
  const cacheKb = opts.cacheKb ?? 32_768;
  const readers: (Reader | null)[] = new Array(count).fill(null);
  const pick = (): Reader => {
    let best: Reader | null = null;
    for (let i = 0; i < count; i++) {
      let r = readers[i] ?? null;
      if (!r || r.dead) readers[i] = r = new Reader(file, cacheKb);
      if (!best || r.load < best.load) best = r;
    }
    return best as Reader;
  };
  const run: Run = async <T>(q: Runnable<T>): Promise<T[]> => {
    try {
      return (await pick().all(q.compile())) as T[];
    } catch (err) {
      if (err instanceof ReaderGone) return q.execute();
      throw err;
    }
  };
  return {
    run,
    async close() {
      await Promise.all(readers.map((r) => r?.worker.terminate()));
    },
  };
}
