// What maximum-size audience uploads do to everyone else (issue 34): BENCH_UPLOADS (6) concurrent uploads of a
// BENCH_ROWS-row CSV (100,000 rows, about 2.3 MB) by one key, while GET /health is sent every BENCH_HEALTH_MS (10 ms)
// whatever the previous one is doing (open loop, so a stall shows in every request it holds up, not just one).
// Reports /health latency (p50, p99, max) before and during the uploads, each upload's status and time, and the
// server's RSS before, at its peak during, and after the uploads (sampled from /proc every 50 ms), and its V8 heap in
// use (from /metrics every 250 ms: what the uploads hold, garbage included, as opposed to what the process keeps).
// BENCH_ROOTS: comma-separated checkouts to run side by side, one server each in turn (default: this one), e.g.
// BENCH_ROOTS=/tmp/parley-before,. to compare a build before and after a change on the same machine.
// BENCH_DIALECT: sqlite (default) or postgres.
import path from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { freshStore, sleep, startServer, type Dialect, type TestServer } from '../test/support/server.js';
import { intEnv, stopAndCollectProblems } from './lib/harness.js';
import { printTable, quantile, resultPath } from './lib/report.js';

const UPLOADS = intEnv('BENCH_UPLOADS', 6, 1);
const ROWS = intEnv('BENCH_ROWS', 100_000, 1);
const HEALTH_MS = intEnv('BENCH_HEALTH_MS', 10, 1);
const IDLE_MS = intEnv('BENCH_IDLE_MS', 2000, 0);
const ROOTS = (process.env.BENCH_ROOTS ?? '.').split(',').map((r) => path.resolve(r.trim()));
const DIALECT = (process.env.BENCH_DIALECT ?? 'sqlite') as Dialect;
const PREFIX = '/atoms/v1';

/** A CSV of `rows` members, about 23 bytes a row (the issue's 100,000 rows in 2.3 MB): number, identifier, name. */
function csvOf(rows: number, salt: number): string {
  const lines = ['phone,ref,name'];
  for (let i = 0; i < rows; i++) lines.push(`+1${salt}55${String(1_000_000 + i)},${i},P${i % 97}`);
  return lines.join('\n') + '\n';
}

/** Resident set size of a process in MB, from /proc; NaN when unreadable. */
function rssMb(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The server's V8 heap in use in MB (nodejs_heap_size_used_bytes from /metrics); NaN when unreadable. */
async function heapMb(server: TestServer): Promise<number> {
  try {
    const text = await (await fetch(`${server.base}/metrics`)).text();
    const m = /^nodejs_heap_size_used_bytes\s+(\S+)/m.exec(text);
    return m ? Number(m[1]) / 1024 / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Sends GET /health every `everyMs` until stop() (open loop); resolves with each request's latency in ms. */
function pollHealth(server: TestServer, everyMs: number): { stop: () => Promise<{ ms: number[]; failed: number }> } {
  const pending: Promise<void>[] = [];
  const ms: number[] = [];
  let failed = 0;
  const timer = setInterval(() => {
    const started = performance.now();
    pending.push(
      fetch(`${server.base}/health`).then(
        async (res) => {
          await res.arrayBuffer();
          if (res.status === 200) ms.push(performance.now() - started);
          else failed++;
        },
        () => {
          failed++;
        },
      ),
    );
  }, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
      return { ms, failed };
    },
  };
}

interface UploadResult {
  status: number;
  ms: number;
  memberCount: number | null;
  error?: string;
}

async function uploadOnce(server: TestServer, csv: string, n: number): Promise<UploadResult> {
  const form = new FormData();
  form.append('name', `Bench ${n}`);
  form.append('phoneNumberColumnName', 'phone');
  form.append('identifierColumnName', 'ref');
  form.append('file', new Blob([csv], { type: 'text/csv' }), `bench-${n}.csv`);
  const started = performance.now();
  const res = await fetch(`${server.base}${PREFIX}/audience`, { method: 'POST', headers: { authorization: `Bearer ${server.key}` }, body: form });
  const text = await res.text();
  const ms = performance.now() - started;
  try {
    const body = JSON.parse(text) as { data?: { memberCount?: number }; errors?: string[] };
    return { status: res.status, ms, memberCount: body.data?.memberCount ?? null, error: body.errors?.join('; ').slice(0, 200) };
  } catch {
    return { status: res.status, ms, memberCount: null, error: text.slice(0, 200) };
  }
}

interface Run {
  root: string;
  csvBytes: number;
  idle: { ms: number[]; failed: number };
  during: { ms: number[]; failed: number };
  uploads: UploadResult[];
  uploadsMs: number;
  rss: { before: number; peak: number; after: number; settled: number };
  heap: { before: number; peak: number; after: number };
  problems: string[];
}

const csvs = Array.from({ length: UPLOADS }, (_, n) => csvOf(ROWS, n % 10));
const runs: Run[] = [];
for (const root of ROOTS) {
  const store = freshStore(DIALECT);
  const server = await startServer({ store, root, env: { PARLEY_RATE_LIMIT_PER_MINUTE: '1000000' } });
  const pid = server.proc.pid;
  try {
    for (let i = 0; i < 20; i++) await fetch(`${server.base}/health`).then((r) => r.arrayBuffer());
    // A small upload first, so the code paths are loaded before anything is measured.
    await uploadOnce(server, csvOf(50, 9), -1);
    const idlePoll = pollHealth(server, HEALTH_MS);
    await sleep(IDLE_MS);
    const idle = await idlePoll.stop();
    const before = rssMb(pid);
    const heapBefore = await heapMb(server);
    let peak = before;
    let heapPeak = heapBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 50);
    const heapSampler = setInterval(() => void heapMb(server).then((mb) => (heapPeak = Math.max(heapPeak, mb))), 250);
    const poll = pollHealth(server, HEALTH_MS);
    const started = performance.now();
    const uploads = await Promise.all(csvs.map((csv, n) => uploadOnce(server, csv, n)));
    const uploadsMs = performance.now() - started;
    const during = await poll.stop();
    clearInterval(sampler);
    clearInterval(heapSampler);
    const after = rssMb(pid);
    const heapAfter = await heapMb(server);
    await sleep(3000);
    const settled = rssMb(pid);
    const { problems } = await stopAndCollectProblems(server);
    runs.push({ root, csvBytes: Buffer.byteLength(csvs[0] as string), idle, during, uploads, uploadsMs, rss: { before, peak: Math.max(peak, after), after, settled }, heap: { before: heapBefore, peak: Math.max(heapPeak, heapAfter), after: heapAfter }, problems });
  } finally {
    await server.stop();
    await store.cleanup();
  }
}

const f1 = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(1));
const label = (root: string) => path.relative(process.cwd(), root) || '.';
const mb = ((runs[0]?.csvBytes ?? 0) / 1e6).toFixed(2);
printTable(
  `Audience uploads: ${UPLOADS} concurrent x ${ROWS} rows (${mb} MB each), /health every ${HEALTH_MS} ms (${DIALECT}); times in ms`,
  ['checkout', 'idle p50', 'idle p99', 'health p50', 'health p99', 'health max', 'health n', 'failed', 'uploads ms', 'statuses'],
  runs.map((r) => [
    label(r.root),
    f1(quantile(r.idle.ms, 0.5)),
    f1(quantile(r.idle.ms, 0.99)),
    f1(quantile(r.during.ms, 0.5)),
    f1(quantile(r.during.ms, 0.99)),
    f1(Math.max(...r.during.ms)),
    String(r.during.ms.length),
    String(r.during.failed),
    f1(r.uploadsMs),
    r.uploads.map((u) => `${u.status}${u.memberCount === ROWS ? '' : `(${u.memberCount ?? u.error ?? '?'})`}`).join(' '),
  ]),
  1,
);
printTable(
  'Server RSS (MB): before the uploads, peak while they ran (50 ms samples), right after, 3 s later',
  ['checkout', 'before', 'peak', 'after', 'settled', 'peak - before'],
  runs.map((r) => [label(r.root), f1(r.rss.before), f1(r.rss.peak), f1(r.rss.after), f1(r.rss.settled), f1(r.rss.peak - r.rss.before)]),
  1,
);
printTable(
  'Server V8 heap in use (MB): before the uploads, peak while they ran (250 ms samples), right after',
  ['checkout', 'before', 'peak', 'after', 'peak - before'],
  runs.map((r) => [label(r.root), f1(r.heap.before), f1(r.heap.peak), f1(r.heap.after), f1(r.heap.peak - r.heap.before)]),
  1,
);
for (const run of runs) if (run.problems.length) console.log(`${run.root}: server problems:\n${run.problems.slice(0, 20).join('\n')}`);
const out = resultPath(`audience-upload-${DIALECT}`);
writeFileSync(
  out,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      uploads: UPLOADS,
      rows: ROWS,
      healthEveryMs: HEALTH_MS,
      dialect: DIALECT,
      runs: runs.map((r) => ({
        root: r.root,
        csvBytes: r.csvBytes,
        idle: { p50: quantile(r.idle.ms, 0.5), p99: quantile(r.idle.ms, 0.99), n: r.idle.ms.length, failed: r.idle.failed },
        during: { p50: quantile(r.during.ms, 0.5), p99: quantile(r.during.ms, 0.99), max: Math.max(...r.during.ms), n: r.during.ms.length, failed: r.during.failed },
        uploads: r.uploads,
        uploadsMs: r.uploadsMs,
        rssMb: r.rss,
        heapMb: r.heap,
        problems: r.problems.slice(0, 20),
      })),
    },
    null,
    2,
  ),
);
console.log(`\nwrote ${out}`);
