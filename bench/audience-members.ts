// What adding many members to an audience in one JSON request does to everyone else (issue 34): POST
// /audience/{id}/members with BENCH_MEMBERS members (10,000, the most one request takes), BENCH_REPEAT times (3) into
// one audience, while GET /health is sent every BENCH_HEALTH_MS (10 ms), open loop. Reports /health latency during
// the requests (p50, p99, max) and each request's time (median). BENCH_ROOTS: comma-separated checkouts to run side by
// side, one server each in turn (default: this one); BENCH_DIALECT: sqlite (default) or postgres.
//   npx tsx bench/audience-members.ts
import { writeFileSync } from 'node:fs';
import { sleep, type Dialect } from '../test/support/server.js';
import { intEnv } from './lib/harness.js';
import { printTable, quantile, resultPath } from './lib/report.js';
import { benchRoots, f0, healthSummary, perCheckout, pollHealth, rootLabel } from './lib/health.js';

const MEMBERS = intEnv('BENCH_MEMBERS', 10_000, 1);
const REPEAT = intEnv('BENCH_REPEAT', 3, 1);
const HEALTH_MS = intEnv('BENCH_HEALTH_MS', 10, 1);
const ROOTS = benchRoots();
const DIALECT = (process.env.BENCH_DIALECT ?? 'sqlite') as Dialect;
const A = '/atoms/v1';

/** `n` members with numbers of their own (batch `b`), a name and an order number each. */
const membersOf = (b: number, n: number) => Array.from({ length: n }, (_, i) => ({ phoneNumber: `+1356${b}${String(100_000 + i)}`, name: `Member ${i}`, order: `A-${b}-${i}` }));

const runs = await perCheckout(ROOTS, DIALECT, async (server) => {
  const form = new FormData();
  form.append('name', 'Bench');
  form.append('phoneNumberColumnName', 'phone');
  form.append('file', new Blob(['phone,name,order\n+13550000001,First,A-0\n'], { type: 'text/csv' }), 'bench.csv');
  const res = await fetch(`${server.base}${A}/audience`, { method: 'POST', headers: { authorization: `Bearer ${server.key}` }, body: form });
  const id = ((await res.json()) as { data?: { _id?: string } }).data?._id;
  if (res.status !== 201 || !id) throw new Error(`audience upload answered ${res.status}`);
  // A small addition first, so the code paths are loaded before anything is measured.
  await server.request('POST', `${A}/audience/${id}/members`, { body: { members: membersOf(9, 50) } });
  for (let i = 0; i < 20; i++) await fetch(`${server.base}/health`).then((r) => r.arrayBuffer());
  const requestMs: number[] = [];
  const statuses: number[] = [];
  const poll = pollHealth(server, HEALTH_MS);
  await sleep(200);
  for (let b = 0; b < REPEAT; b++) {
    const started = performance.now();
    const added = await server.request('POST', `${A}/audience/${id}/members`, { body: { members: membersOf(b, MEMBERS) } });
    requestMs.push(performance.now() - started);
    statuses.push(added.status);
    await sleep(200);
  }
  return { during: await poll.stop(), requestMs, statuses };
});

printTable(
  `POST /audience/{id}/members with ${MEMBERS} members, ${REPEAT} times, /health every ${HEALTH_MS} ms (${DIALECT}); ms`,
  ['build', 'statuses', 'request p50', '/health p50', 'p99', 'max', 'problems'],
  runs.map((r) => [rootLabel(r.root), r.statuses.join(' '), f0(quantile(r.requestMs, 0.5)), f0(quantile(r.during, 0.5)), f0(quantile(r.during, 0.99)), f0(Math.max(...r.during)), String(r.problems.length)]),
  1,
);
writeFileSync(resultPath('audience-members'), JSON.stringify({ members: MEMBERS, repeat: REPEAT, dialect: DIALECT, runs: runs.map((r) => ({ ...r, during: healthSummary(r.during) })) }, null, 2));
