// Opens the store: SQLite (better-sqlite3, WAL) under the data directory by default, PostgreSQL when DATABASE_URL says so.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import { migrationProvider } from './migrations.js';

export type Dialect = 'sqlite' | 'postgres';
export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;

export interface StoreOptions {
  dataDir: string;
  databaseUrl?: string;
  /** PostgreSQL schema to use (created if absent); lets several servers share one database. */
  pgSchema?: string;
}

export interface Store {
  db: Db;
  dialect: Dialect;
  /** Human description without credentials, for logs. */
  describe: string;
  close(): Promise<void>;
}

export async function openStore(options: StoreOptions): Promise<Store> {
  const url = options.databaseUrl;
  if (url && /^postgres(ql)?:\/\//.test(url)) return openPostgres(url, options.pgSchema);
  if (url) throw new Error('DATABASE_URL must start with postgres:// (leave it unset for the embedded SQLite store)');
  return openSqlite(options.dataDir);
}

async function openSqlite(dataDir: string): Promise<Store> {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'parley.sqlite');
  const sqlite = new SqliteDatabase(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('synchronous = NORMAL');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cachingStatements(sqlite) }) });
  await migrate(db);
  return { db, dialect: 'sqlite', describe: `sqlite:${file}`, close: () => db.destroy() };
}

/** Prepared statements kept per SQL text (the most recently used). */
const STATEMENT_CACHE = 500;

/**
 * The SQLite database as Kysely sees it, with its prepared statements kept and reused: Kysely prepares every query
 * afresh, and preparing was as much of the main thread as running the queries (1.2 s each in 20 s of 50 answered
 * calls a second, bench:outbound). A statement still iterating (a stream) is not handed out again: a new one is.
 */
function cachingStatements(sqlite: SqliteDatabase.Database): { close(): void; prepare(sql: string): SqliteDatabase.Statement } {
  const statements = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string) {
      const kept = statements.get(sql);
      if (kept && !kept.busy) {
        statements.delete(sql); // most recently used last
        statements.set(sql, kept);
        return kept;
      }
      const statement = sqlite.prepare(sql);
      if (!kept) {
        statements.set(sql, statement);
        if (statements.size > STATEMENT_CACHE) statements.delete(statements.keys().next().value as string);
      }
      return statement;
    },
  };
}

async function openPostgres(url: string, schema?: string): Promise<Store> {
  if (schema && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error('DATABASE_SCHEMA must be a lower-case SQL identifier');
  if (schema) {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    } finally {
      await admin.end();
    }
  }
  // The schema is set as a connection start-up option, so no query can run before it applies.
  const pool = new pg.Pool({ connectionString: url, max: 10, ...(schema ? { options: `-c search_path=${schema}` } : {}) });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  await migrate(db, schema);
  const safe = new URL(url);
  safe.password = '';
  safe.username = '';
  return { db, dialect: 'postgres', describe: `postgres:${safe.host}${safe.pathname}${schema ? `#${schema}` : ''}`, close: () => db.destroy() };
}

/** Whether a store error is a unique-constraint violation (SQLite or PostgreSQL). */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505';
}

/**
 * Runs the migrations. `schema` (PostgreSQL's DATABASE_SCHEMA) is also where Kysely looks for its own migration
 * tables: without it, it looks them up in every schema of the database, so a database holding other Parley schemas
 * made it skip creating its tables in this one ("relation kysely_migration_lock does not exist", seen in CI).
 */
async function migrate(db: Db, schema?: string): Promise<void> {
  const { error, results } = await new Migrator({ db, provider: migrationProvider, ...(schema ? { migrationTableSchema: schema } : {}) }).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) throw new Error(`migration failed: ${failed?.migrationName ?? ''} ${String(error)}`);
}
