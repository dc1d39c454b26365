// Benchmark: latency of publishing an agent draft over real HTTP, SQLite and PostgreSQL side by side (npm run bench:publish).
import { intEnv } from './lib/harness.js';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ROOT, freshStore, startServer, type Dialect, type TestServer } from '../test/support/server.js';
import { resultPath } from './lib/report.js';

const A = '/atoms/v1';
const CASES = ['publish (fresh scan)', 'publish (no fresh scan)'] as const;
type Case = (typeof CASES)[number];
interface Row { dialect: Dialect; case: Case; n: number; p50Ms: number; p95Ms: number; meanMs: number; minMs: number; maxMs: number; sync200: number; async202: number }

const ITERATIONS = intEnv('BENCH_ITERATIONS', 200, 1);
const WARMUP = intEnv('BENCH_WARMUP', 10, 0);
const DIALECTS = (process.env.BENCH_DIALECTS ?? 'sqlite,postgres').split(',').map((d) => d.trim()).filter(Boolean);
for (const d of DIALECTS) if (d !== 'sqlite' && d !== 'postgres') throw new Error(`BENCH_DIALECTS: unknown dialect "${d}"`);

async function call(server: TestServer, method: string, p: string, expected: number[], body?: unknown) {
  const res = await server.request(method, p, body === undefined ? {} : { body });
  if (!expected.includes(res.status)) throw new Error(`${method} ${p} -> ${res.status}: ${res.text}`);
  return res;
}

/** After a 202, waits until the deferred scan has committed (the next publish would otherwise get 409). */
async function waitSettled(server: TestServer, agentId: string, branchId: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const res = await call(server, 'GET', `${A}/agent/${agentId}/branches/${branchId}/revisions?limit=5`, [200]);
    const revs = res.body.data.revisions as { _id: string; status: string; securityCheck: { status: string; reason: string | null } | null }[];
    const scanning = revs.find((r) => r.status === 'draft');
    if (!scanning) return;
    if (scanning.securityCheck?.status === 'failed') throw new Error(`scan of ${scanning._id} failed: ${scanning.securityCheck.reason}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('deferred scan did not settle within 30 s');
}

function stats(dialect: Dialect, c: Case, ms: number[], sync200: number, async202: number): Row {
  const s = [...ms].sort((a, b) => a - b);
  const pick = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN;
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { dialect, case: c, n: s.length, p50Ms: r3(pick(0.5)), p95Ms: r3(pick(0.95)), meanMs: r3(mean), minMs: r3(s[0] ?? NaN), maxMs: r3(s[s.length - 1] ?? NaN), sync200, async202 };
}

async function benchDialect(dialect: Dialect): Promise<{ rows: Row[] }> {
  const store = freshStore(dialect);
  let server: TestServer | null = null;
  try {
    // Default log level (info), as in production: each request is logged.
    server = await startServer({ store, env: { PARLEY_RATE_LIMIT_PER_MINUTE: '1000000' } });
    const s = server;
    const agentId = (await call(s, 'POST', `${A}/agent`, [201], { name: `Bench agent (${dialect})` })).body.data as string;
    const branches = (await call(s, 'GET', `${A}/agent/${agentId}/branches`, [200])).body.data.branches as { branch: { _id: string; isDefault: boolean } }[];
    const branchId = branches.find((b) => b.branch.isDefault)?.branch._id;
    if (!branchId) throw new Error('agent has no default (Main) branch');
    const b = `${A}/agent/${agentId}/branches/${branchId}`;

    /** PUTs the draft, then times only the publish request. */
    const publishOnce = async (draft: Record<string, string>, label: string): Promise<{ ms: number; status: number }> => {
      await call(s, 'PUT', `${b}/draft`, [200], draft);
      const body = JSON.stringify({ label });
      const headers = { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' };
      const t0 = performance.now();
      const res = await fetch(`${s.base}${b}/draft/publish`, { method: 'POST', headers, body });
      const text = await res.text();
      const ms = performance.now() - t0;
      if (res.status !== 200 && res.status !== 202) throw new Error(`publish -> ${res.status}: ${text}`);
      const state = (JSON.parse(text) as { data?: { state?: string } }).data?.state;
      if (state !== (res.status === 200 ? 'committed' : 'scanning')) throw new Error(`publish ${res.status} with state ${state}: ${text}`);
      if (res.status === 202) await waitSettled(s, agentId, branchId);
      return { ms, status: res.status };
    };

    const run = async (c: Case, content: (i: number) => Record<string, string>): Promise<Row> => {
      const ms: number[] = [];
      let sync200 = 0;
      let async202 = 0;
      for (let i = 0; i < WARMUP + ITERATIONS; i++) {
        const r = await publishOnce(content(i), `${c} #${i}`);
        if (i < WARMUP) continue;
        ms.push(r.ms);
        if (r.status === 200) sync200++;
        else async202++;
      }
      return stats(dialect, c, ms, sync200, async202);
    };

    let serial = 0;
    const fresh = () => {
      serial++;
      return { prompt: `You are a helpful agent. Iteration ${serial} (${dialect}). Answer politely and concisely.`, firstMessage: `Hi ${serial}` };
    };
    const rows = [await run('publish (fresh scan)', fresh)];
    // Two contents published once (each fully scanned); alternating them later needs no fresh scan.
    const pair = [fresh(), fresh()];
    for (const [i, p] of pair.entries()) await publishOnce(p, `seed ${i}`);
    rows.push(await run('publish (no fresh scan)', (i) => pair[i % 2] as Record<string, string>));
    return { rows };
  } catch (err) {
    const tail = server ? `\nserver exit code ${server.exitCode}; last log lines:\n${server.logs.slice(-20).join('\n')}` : '';
    throw new Error(`${dialect}: ${err instanceof Error ? err.message : String(err)}${tail}`);
  } finally {
    if (server) await server.stop();
    await store.cleanup();
  }
}

const rows: Row[] = [];
for (const d of DIALECTS as Dialect[]) {
  process.stderr.write(`${d}: ${WARMUP} warm-up + ${ITERATIONS} timed publishes per case...\n`);
  rows.push(...(await benchDialect(d)).rows);
}

const ratios = CASES.map((c) => {
  const sq = rows.find((r) => r.dialect === 'sqlite' && r.case === c);
  const pgRow = rows.find((r) => r.dialect === 'postgres' && r.case === c);
  return { case: c, p50PostgresOverSqlite: sq && pgRow && sq.p50Ms > 0 ? Math.round((pgRow.p50Ms / sq.p50Ms) * 100) / 100 : null };
});

const header = ['dialect', 'case', 'n', 'p50 ms', 'p95 ms', 'mean ms', 'sync 200', 'async 202'];
const table = rows.map((r) => [r.dialect, r.case, String(r.n), r.p50Ms.toFixed(2), r.p95Ms.toFixed(2), r.meanMs.toFixed(2), String(r.sync200), String(r.async202)]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((t) => (t[i] ?? '').length)));
const line = (cells: string[]) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
console.log(`\nPublish latency over HTTP (node ${process.version}, ${ITERATIONS} iterations, ${WARMUP} warm-up)\n`);
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const t of table) console.log(line(t));
console.log('');
for (const r of ratios) console.log(`p50 postgres/sqlite, ${r.case}: ${r.p50PostgresOverSqlite === null ? 'n/a' : `${r.p50PostgresOverSqlite.toFixed(2)}x`}`);

const outFile = resultPath('publish-latency');
const result = { benchmark: 'publish-latency', node: process.version, platform: `${process.platform}-${process.arch}`, timestamp: new Date().toISOString(), iterations: ITERATIONS, warmup: WARMUP, dialects: DIALECTS, rows, ratios };
writeFileSync(outFile, `${JSON.stringify(result, null, 2)}\n`);
console.log(`\nwrote ${path.relative(process.cwd(), outFile)}`);
