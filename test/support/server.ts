// Test harness: starts the real server as a child process on an ephemeral port (SQLite or a private PostgreSQL schema).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import pg from 'pg';
import Database from 'better-sqlite3';
import { openStore, type Db } from '../../control-plane/store/db.js';

export type Dialect = 'sqlite' | 'postgres';
export const ROOT = path.resolve(import.meta.dirname, '../..');
export const PG_URL = process.env.PARLEY_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Dialects the store-backed suites run on: both by default (CI has PostgreSQL); PARLEY_TEST_DIALECTS=sqlite narrows. */
export function testDialects(): Dialect[] {
  return (process.env.PARLEY_TEST_DIALECTS ?? 'sqlite,postgres').split(',').map((d) => d.trim()) as Dialect[];
}

/**
 * Dialects the realtime suites run on (phone calls, transfers, DTMF, the scheduler): what they test is media and
 * signalling, and every store write they make is the same one the store-facing suites run on both dialects, so by
 * default they run on the first of testDialects() only. PARLEY_TEST_MEDIA_DIALECTS=sqlite,postgres runs them on both.
 */
export function mediaDialects(): Dialect[] {
  const raw = process.env.PARLEY_TEST_MEDIA_DIALECTS;
  if (raw) return raw.split(',').map((d) => d.trim()) as Dialect[];
  return testDialects().slice(0, 1);
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface StoreEnv {
  dialect: Dialect;
  env: Record<string, string>;
  dataDir: string;
  cleanup(): Promise<void>;
}

/** A fresh, empty store: a temp data dir, plus a private schema on PostgreSQL. */
export function freshStore(dialect: Dialect): StoreEnv {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-test-'));
  const env: Record<string, string> = { PARLEY_DATA_DIR: dataDir };
  let schema: string | null = null;
  if (dialect === 'postgres') {
    schema = `t_${randomBytes(6).toString('hex')}`;
    env.DATABASE_URL = PG_URL;
    env.DATABASE_SCHEMA = schema;
  }
  return {
    dialect,
    env,
    dataDir,
    async cleanup() {
      rmSync(dataDir, { recursive: true, force: true });
      if (schema) {
        const client = new pg.Client({ connectionString: PG_URL });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await client.end();
      }
    },
  };
}

export class TestServer {
  readonly logs: string[] = [];
  port = 0;
  /** The SIP port (UDP and TCP), once the server logged it. */
  sipPort = 0;
  exitCode: number | null = null;
  private exited: Promise<unknown>;

  constructor(readonly proc: ChildProcess, readonly key: string, readonly store: StoreEnv, readonly env: Record<string, string>) {
    this.exited = once(proc, 'exit').then(([code]) => {
      this.exitCode = code as number | null;
    });
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async request<T = any>(method: string, p: string, opts: { body?: unknown; key?: string | null; headers?: Record<string, string>; raw?: BodyInit | Buffer } = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? this.key : opts.key;
    if (key) headers.authorization = `Bearer ${key}`;
    let body: BodyInit | undefined = opts.raw as BodyInit | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    const res = await fetch(this.base + p, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  /** Resolves once a log line matches (logs arrive over a pipe, possibly after the HTTP response). */
  async waitForLog(pattern: RegExp, timeoutMs = 5000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.logs.find((l) => pattern.test(l));
      if (line) return line;
      if (Date.now() > deadline) throw new Error(`no log line matched ${pattern}`);
      await sleep(20);
    }
  }

  /** Sends SIGTERM and resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (this.exitCode === null && this.proc.exitCode === null) this.proc.kill('SIGTERM');
    await this.exited;
    return this.exitCode;
  }

  async waitExit(): Promise<number | null> {
    await this.exited;
    return this.exitCode;
  }
}

/** `root`: the checkout to run the server from (benches compare another build side by side); default this one. */
export async function startServer(options: { store: StoreEnv; env?: Record<string, string>; root?: string }): Promise<TestServer> {
  const key = `sk_test_${randomBytes(16).toString('hex')}`;
  // Models load lazily unless a suite asks for warm-up (most suites never touch them).
  // SIP on a free port unless a suite picks one (parallel servers would collide on 5060).
  const env = { ...process.env, HOST: '127.0.0.1', PORT: '0', PARLEY_SIP_PORT: '0', LOG_LEVEL: 'info', PARLEY_WARM_MODELS: 'false', PARLEY_ALLOW_PRIVATE_EGRESS: '1', PARLEY_BOOTSTRAP_KEY: key, ...options.store.env, ...options.env } as Record<string, string>;
  // PARLEY_SERVER_NODE_FLAGS: extra node flags for the servers a test or bench starts (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`).
  const flags = (process.env.PARLEY_SERVER_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(process.execPath, [...flags, '--import', 'tsx', 'server/main.ts'], { cwd: options.root ?? ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const server = new TestServer(proc, key, options.store, env);
  const onLine = (resolve: () => void) => (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
      server.logs.push(line);
      try {
        const entry = JSON.parse(line) as { msg?: string; port?: number; sipPort?: number };
        if (entry.msg === 'sip listening' && entry.sipPort) server.sipPort = entry.sipPort;
        if (entry.msg === 'listening' && entry.port) {
          server.port = entry.port;
          resolve();
        }
      } catch {
        /* not a log line */
      }
    }
  };
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve, reject) => {
    proc.stdout?.on('data', onLine(resolve));
    proc.stderr?.on('data', (c: Buffer) => server.logs.push(c.toString('utf8')));
    proc.once('exit', (code) => reject(new Error(`server exited with ${code} before listening:\n${server.logs.join('\n')}`)));
    timer = setTimeout(() => {
      // Not left running: a server that starts after its suite gave up would hold its ports and CPU for good.
      proc.kill('SIGKILL');
      reject(new Error(`server did not start in time:\n${server.logs.join('\n')}`));
    }, 30_000);
    timer.unref();
  }).finally(() => clearTimeout(timer));
  return server;
}

/** Runs an operator CLI (`control-plane/cli/<name>.ts`) against the same store as a server. */
export async function runCliOn(store: StoreEnv, name: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', `control-plane/cli/${name}.ts`, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...store.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(proc, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

/** Runs the keys CLI against the same store as a server. */
export const keysCli = (store: StoreEnv, args: string[]) => runCliOn(store, 'keys', args);

export async function createOrgKey(store: StoreEnv, name: string, org: string, extra: string[] = []): Promise<string> {
  const { code, stdout, stderr } = await keysCli(store, ['create', '--name', name, '--org', org, '--json', ...extra]);
  if (code !== 0) throw new Error(`keys create failed: ${stderr}`);
  return (JSON.parse(stdout.trim().split('\n').pop() as string) as { key: string }).key;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs one SQL statement directly on a test store, as another process sharing that store would; returns rows. */
export async function storeSql(store: StoreEnv, statement: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  if (store.dialect === 'sqlite') {
    const db = new Database(path.join(store.dataDir, 'parley.sqlite'));
    try {
      const stmt = db.prepare(statement.replace(/\$\d+/g, '?'));
      return stmt.reader ? (stmt.all(...params) as Record<string, unknown>[]) : (stmt.run(...params), []);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${store.env.DATABASE_SCHEMA}` });
  await client.connect();
  try {
    return (await client.query(statement, params)).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}

/** Runs `fn` on a store connection of its own to the same store as a server (closed afterwards). */
export async function withStore<T>(store: StoreEnv, fn: (db: Db) => Promise<T>): Promise<T> {
  const opened = await openStore({ dataDir: store.dataDir, databaseUrl: store.env.DATABASE_URL, pgSchema: store.env.DATABASE_SCHEMA });
  try {
    return await fn(opened.db);
  } finally {
    await opened.close();
  }
}
