// Analytics benchmark (`npm run bench:analytics`, or `npx tsx bench/analytics.ts`): on each store, starts the real
// server, fills its store with BENCH_CALLS call records of one organization over the last BENCH_DAYS days (through the
// store's own schema types, in batches; realistic rows: a transcript of a few turns, metrics, variables) plus a tenth as
// many of another organization, then times every analytics route over HTTP (p50 / p95 of BENCH_REPEATS requests each,
// after a warm-up), and /health while dashboards over every day run (the server's loop must stay free).
// Issue 35 goal: the dashboard answers in at most 200 ms with 100,000 calls in the store.
//
// Env: BENCH_CALLS (default 100000), BENCH_DAYS (default 90), BENCH_REPEATS (default 30), BENCH_STORES (default
// sqlite,postgres). On PostgreSQL the table is vacuumed and analyzed after the load (what autovacuum does to a table
// that grew: without it, PostgreSQL cannot use the covering index alone); SQLite gets nothing (the server never runs
// ANALYZE). Writes bench/results/analytics.json.
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { sql, type Insertable } from 'kysely';
import { faker } from '@faker-js/faker';
import { freshStore, startServer, withStore, type Dialect, type TestServer } from '../test/support/server.js';
import type { CallsTable } from '../control-plane/store/schema.js';
import { newId } from '../control-plane/store/ids.js';
import { intEnv, stopAndCollectProblems } from './lib/harness.js';
import { printTable, quantile, resultPath } from './lib/report.js';

const CALLS = intEnv('BENCH_CALLS', 100_000, 100);
const DAYS = intEnv('BENCH_DAYS', 90, 2);
const REPEATS = intEnv('BENCH_REPEATS', 30, 1);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim()) as Dialect[];
const AGENTS = 12;
const GOAL_MS = 200;
const A = '/atoms/v1';
const DAY_MS = 86_400_000;

faker.seed(35);
const OUR_NUMBERS = Array.from({ length: 20 }, (_, i) => `+1555010${String(i).padStart(4, '0')}`);
/** About a third as many callees as calls: most numbers are called more than once (the attempt cohort has depth). */
const CALLEES = Array.from({ length: Math.max(10, Math.floor(CALLS / 3)) }, () => `+1${faker.string.numeric(10)}`);
const PHRASES = Array.from({ length: 200 }, () => faker.lorem.sentence({ min: 6, max: 16 }));

/** One call record as the runtime leaves it: type, outcome, duration and times drawn as a busy deployment's. */
function callRow(orgId: string, agentIds: string[], now: number): Insertable<CallsTable> {
  const created = now - faker.number.int({ min: 0, max: DAYS * DAY_MS - 1 });
  const kind = faker.number.float({ min: 0, max: 1 });
  const type = kind < 0.6 ? 'telephony_outbound' : kind < 0.85 ? 'telephony_inbound' : 'webcall';
  const r = faker.number.float({ min: 0, max: 1 });
  let status: string;
  let answeredBy: string | null = null;
  if (type === 'telephony_outbound') status = r < 0.45 ? 'completed' : r < 0.75 ? 'no_answer' : r < 0.9 ? 'failed' : r < 0.95 ? 'cancelled' : 'completed';
  else status = r < 0.9 ? 'completed' : r < 0.95 ? 'failed' : 'cancelled';
  if (created > now - 120_000 && r < 0.5) status = 'in_progress';
  if (type === 'telephony_outbound' && status === 'completed' && faker.number.float({ min: 0, max: 1 }) < 0.12) answeredBy = 'voicemail';
  // Durations: mostly a minute or two, a long tail (log-normal-ish), 0.1 s steps as the runtime records them.
  const talked = status === 'completed' || (status === 'failed' && r < 0.8 && type !== 'telephony_outbound');
  const durationS = status === 'in_progress' ? null : talked ? Math.round(Math.min(1800, Math.exp(faker.number.float({ min: 1.5, max: 6.3 }))) * 10) / 10 : 0;
  const startedAt = new Date(created).toISOString();
  const endedAt = durationS === null ? null : new Date(created + durationS * 1000).toISOString();
  const turns = talked ? faker.number.int({ min: 2, max: 12 }) : 0;
  const transcript = Array.from({ length: turns }, (_, i) => ({ role: i % 2 ? 'user' : 'agent', content: faker.helpers.arrayElement(PHRASES), timestamp: new Date(created + i * 4000).toISOString() }));
  const ours = faker.helpers.arrayElement(OUR_NUMBERS);
  const theirs = faker.helpers.arrayElement(CALLEES);
  return {
    id: newId(),
    call_id: `CALL-${created}-${faker.string.hexadecimal({ length: 6, casing: 'lower', prefix: '' })}`,
    org_id: orgId,
    agent_id: faker.helpers.arrayElement(agentIds),
    branch_id: null,
    revision_id: null,
    config_source: 'live',
    type,
    mode: 'webcall',
    is_test: 0,
    status,
    from_number: type === 'telephony_outbound' ? ours : type === 'telephony_inbound' ? theirs : null,
    to_number: type === 'telephony_outbound' ? theirs : type === 'telephony_inbound' ? ours : null,
    started_at: startedAt,
    ended_at: endedAt,
    duration_s: durationS,
    end_reason: status === 'completed' ? (answeredBy ?? 'ended') : status === 'no_answer' ? 'ringing_timeout' : status === 'failed' ? (type === 'telephony_outbound' ? 'busy' : 'error') : status === 'cancelled' ? 'canceled' : null,
    answered_by: answeredBy,
    transcript: JSON.stringify(transcript),
    variables: JSON.stringify({ call_id: 'x', customer_name: faker.person.firstName(), account: faker.string.numeric(8) }),
    metrics: talked ? JSON.stringify({ turns: Array.from({ length: Math.floor(turns / 2) }, (_, i) => ({ turn: i + 1, e2eMs: faker.number.int({ min: 300, max: 1400 }) })), processedAt: endedAt }) : null,
    voice_config: JSON.stringify({ voiceId: 'slt', model: 'flite' }),
    slm_model: null,
    created_at: startedAt,
    updated_at: endedAt ?? startedAt,
  };
}

async function fill(server: TestServer, orgId: string, agentIds: string[], count: number): Promise<number> {
  const started = performance.now();
  const now = Date.now();
  await withStore(server.store, async (db) => {
    for (let done = 0; done < count; ) {
      const n = Math.min(400, count - done);
      const rows = Array.from({ length: n }, () => callRow(orgId, agentIds, now));
      await db.insertInto('calls').values(rows).execute();
      done += n;
    }
    // PostgreSQL: what autovacuum does after a bulk load. SQLite: nothing (the server never runs ANALYZE).
    if (server.store.dialect === 'postgres') await sql`VACUUM ANALYZE calls`.execute(db);
  });
  return (performance.now() - started) / 1000;
}

/** fetch, once more when a kept-alive connection was closed by the server while idle (the fill takes a while). */
async function fetchAgain(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    if ((err as { cause?: { code?: string } }).cause?.code !== 'UND_ERR_SOCKET') throw err;
    return fetch(url, init);
  }
}

interface Timing {
  route: string;
  p50: number;
  p95: number;
  max: number;
}

async function time(server: TestServer, key: string, route: string): Promise<Timing> {
  const one = async () => {
    const t = performance.now();
    const res = await fetchAgain(`${server.base}${A}/analytics/${route}`, { headers: { authorization: `Bearer ${key}` } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${route}: ${res.status} ${text}`);
    return performance.now() - t;
  };
  for (let i = 0; i < 3; i++) await one();
  const times: number[] = [];
  for (let i = 0; i < REPEATS; i++) times.push(await one());
  const r1 = (x: number) => Math.round(x * 10) / 10;
  return { route, p50: r1(quantile(times, 0.5)), p95: r1(quantile(times, 0.95)), max: r1(Math.max(...times)) };
}

interface StoreResult {
  store: Dialect;
  calls: number;
  fillSeconds: number;
  timings: Timing[];
  /** /health while dashboards ran. */
  loop: { during: string; healthP50: number; healthMax: number; probes: number };
  problems: string[];
}

async function bench(dialect: Dialect): Promise<StoreResult> {
  const store = freshStore(dialect);
  const server = await startServer({ store });
  try {
    const req = async (method: string, p: string, body?: unknown) => {
      const res = await fetchAgain(`${server.base}${A}${p}`, { method, headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return (await res.json()) as any;
    };
    const agentIds: string[] = [];
    for (let i = 0; i < AGENTS; i++) agentIds.push((await req('POST', '/agent', { name: `Agent ${i + 1}` })).data);
    const orgId = (await req('GET', `/agent/${agentIds[0]}`)).data.organization as string;
    // Another organization's calls beside ours (a tenth as many): every query must skip them.
    await withStore(store, async (db) => {
      await db.insertInto('organizations').values({ id: 'bench-other-org', name: 'bench-other', created_at: new Date().toISOString() }).execute();
    });
    const fillSeconds = await fill(server, orgId, agentIds, CALLS);
    await fill(server, 'bench-other-org', ['0123456789abcdef01234567'], Math.floor(CALLS / 10));
    const today = new Date().toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - DAY_MS).toISOString().slice(0, 10);
    const all = `dateFrom=${new Date(Date.now() - DAYS * DAY_MS).toISOString().slice(0, 10)}&dateTo=${today}`;
    const someCall = (await req('GET', `/analytics/call-counts-log?limit=1`)).data.calls[0].callId as string;
    const routes = [
      'dashboard',
      `dashboard?${all}`,
      `dashboard?agentId=${agentIds[0]}`,
      `dashboard?callType=outbound&${all}`,
      'summary',
      'call-volume-timeseries',
      'call-outcomes-timeseries',
      'duration-stats',
      'pickup-rate-by-number',
      'hourly-performance',
      'call-counts-by-day',
      'usage/timeseries',
      `agent-performance?${all}`,
      `weekly-trends?${all}`,
      `phone-number-trends?${all}`,
      `attempt-cohort?${all}`,
      'call-counts-log',
      'call-counts-log?page=300&limit=100',
      `concurrency?date=${yesterday}&includeAgents=true`,
      `call-start-distribution?date=${yesterday}`,
      `daily-call-summary?date=${today}`,
      `conversation-details/${someCall}`,
    ];
    const timings: Timing[] = [];
    for (const r of routes) timings.push(await time(server, server.key, r));
    // The server's loop while dashboards over every day run back to back: /health answered meanwhile (SQLite's
    // queries run on reader threads; a query on the main thread would hold every call of the server for its length).
    const health: number[] = [];
    let busy = true;
    const probe = (async () => {
      while (busy) {
        const t = performance.now();
        await (await fetchAgain(`${server.base}/health`)).text();
        health.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const dashboards = await time(server, server.key, `dashboard?${all}`);
    busy = false;
    await probe;
    const loop = { during: dashboards.route, healthP50: Math.round(quantile(health, 0.5) * 10) / 10, healthMax: Math.round(Math.max(...health) * 10) / 10, probes: health.length };
    const { problems } = await stopAndCollectProblems(server);
    return { store: dialect, calls: CALLS, fillSeconds: Math.round(fillSeconds * 10) / 10, timings, loop, problems };
  } finally {
    await server.stop();
    await store.cleanup();
  }
}

const results: StoreResult[] = [];
for (const s of STORES) results.push(await bench(s));
const routes = results[0]?.timings.map((t) => t.route) ?? [];
printTable(
  `Analytics routes over HTTP, ${CALLS} calls of one organization over ${DAYS} days (+${Math.floor(CALLS / 10)} of another); ${REPEATS} requests each, ms (default period: the last 30 days)`,
  ['route', ...results.flatMap((r) => [`${r.store} p50`, `${r.store} p95`])],
  routes.map((route, i) => [route.replace(/agentId=\w+/, 'agentId=…').replace(/dateFrom=[\d-]+&dateTo=[\d-]+/, 'all days').replace(/date=[\d-]+/, 'date=…').replace(/CALL-[\w-]+/, '{callId}'), ...results.flatMap((r) => [String(r.timings[i]?.p50), String(r.timings[i]?.p95)])]),
  1,
);
for (const r of results) {
  const dash = r.timings.filter((t) => t.route.startsWith('dashboard'));
  const worst = Math.max(...dash.map((t) => t.p95));
  console.log(`${r.store}: filled ${r.calls} calls in ${r.fillSeconds} s; dashboard p95 at most ${worst} ms (goal <= ${GOAL_MS}); /health during dashboards p50 ${r.loop.healthP50} / max ${r.loop.healthMax} ms (${r.loop.probes} probes)${r.problems.length ? `; server problems: ${r.problems.slice(0, 3).join(' | ')}` : ''}`);
}
writeFileSync(resultPath('analytics'), `${JSON.stringify({ calls: CALLS, days: DAYS, repeats: REPEATS, goalMs: GOAL_MS, results }, null, 2)}\n`);
