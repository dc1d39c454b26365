// What creating a campaign over a maximum-size audience does to everyone else (issue 34): one POST /campaign over a
// BENCH_ROWS-member audience (100,000) copies every member into the campaign's recipients, while GET /health is sent
// every BENCH_HEALTH_MS (10 ms), open loop. Reports /health latency (p50, p99, max) before and during, and how long the
// creation took. BENCH_ROOTS: comma-separated checkouts to run side by side, one server each in turn (default: this
// one); BENCH_DIALECT: sqlite (default) or postgres.
//   npx tsx bench/campaign-create.ts
import { writeFileSync } from 'node:fs';
import { sleep, type Dialect, type TestServer } from '../test/support/server.js';
import { intEnv } from './lib/harness.js';
import { printTable, quantile, resultPath } from './lib/report.js';
import { benchRoots, f0, healthSummary, perCheckout, pollHealth, rootLabel } from './lib/health.js';

const ROWS = intEnv('BENCH_ROWS', 100_000, 1);
const HEALTH_MS = intEnv('BENCH_HEALTH_MS', 10, 1);
const ROOTS = benchRoots();
const DIALECT = (process.env.BENCH_DIALECT ?? 'sqlite') as Dialect;
const A = '/atoms/v1';
const FROM = '+15550990001';

function csvOf(rows: number): string {
  const lines = ['phone'];
  for (let i = 0; i < rows; i++) lines.push(`+1355${String(1_000_000 + i)}`);
  return lines.join('\n') + '\n';
}

async function audience(server: TestServer, rows: number): Promise<string> {
  const form = new FormData();
  form.append('name', `Bench ${rows}`);
  form.append('phoneNumberColumnName', 'phone');
  form.append('file', new Blob([csvOf(rows)], { type: 'text/csv' }), 'bench.csv');
  const res = await fetch(`${server.base}${A}/audience`, { method: 'POST', headers: { authorization: `Bearer ${server.key}` }, body: form });
  const body = (await res.json()) as { data?: { _id?: string } };
  if (res.status !== 201 || !body.data?._id) throw new Error(`audience upload answered ${res.status}`);
  return body.data._id;
}

const runs = await perCheckout(ROOTS, DIALECT, async (server) => {
  const agent = await server.request('POST', `${A}/agent`, { body: { name: 'Bench', workflowType: 'workflow_graph', workflowGraph: { nodes: [{ id: 'a', type: 'end_call', text: 'Hello.' }], edges: [] } } });
  const trunk = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Carrier', address: '127.0.0.1:5999', numbers: [FROM] } });
  if (agent.status !== 201 || trunk.status !== 201) throw new Error(`setup answered ${agent.status}, ${trunk.status}`);
  // A small campaign first, so the code paths are loaded before anything is measured.
  const small = await audience(server, 50);
  await server.request('POST', `${A}/campaign`, { body: { name: 'warm', agentId: agent.body.data, audienceId: small, fromNumbers: [FROM] } });
  const big = await audience(server, ROWS);
  for (let i = 0; i < 20; i++) await fetch(`${server.base}/health`).then((r) => r.arrayBuffer());
  const idlePoll = pollHealth(server, HEALTH_MS);
  await sleep(1000);
  const idle = await idlePoll.stop();
  const poll = pollHealth(server, HEALTH_MS);
  const started = performance.now();
  const created = await server.request('POST', `${A}/campaign`, { body: { name: 'Bench', agentId: agent.body.data, audienceId: big, fromNumbers: [FROM] } });
  const createMs = performance.now() - started;
  return { idle, during: await poll.stop(), createMs, status: created.status };
});

printTable(
  `POST /campaign over a ${ROWS}-member audience, /health every ${HEALTH_MS} ms (${DIALECT}); ms`,
  ['build', 'status', 'create', 'idle p50', 'idle max', 'during p50', 'p99', 'max', 'problems'],
  runs.map((r) => [rootLabel(r.root), String(r.status), f0(r.createMs), f0(quantile(r.idle, 0.5)), f0(Math.max(...r.idle)), f0(quantile(r.during, 0.5)), f0(quantile(r.during, 0.99)), f0(Math.max(...r.during)), String(r.problems.length)]),
  1,
);
writeFileSync(resultPath('campaign-create'), JSON.stringify({ rows: ROWS, dialect: DIALECT, runs: runs.map((r) => ({ ...r, idle: undefined, during: healthSummary(r.during) })) }, null, 2));
