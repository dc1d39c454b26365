// Benchmark: webhook deliveries per second with signing, and the latency an api_call tool adds to a turn
// (npm run bench:webhooks). One real server (SQLite in a temp dir, PARLEY_ALLOW_PRIVATE_EGRESS=1, models not warmed:
// everything here is chat mode), a local receiver and a local JSON API in this process.
//  1. Webhooks. The receiver (node:http, answers 200 at once) checks every X-Signature (HMAC-SHA256 hex over the raw
//     bytes with the webhook's secret from GET /webhook?webhookId=) and notes the receipt time per delivery id.
//     Four webhooks (one receiver path each); agent A is subscribed (pre, post, analytics) on webhook 1, agent B on
//     all four. Producers, each a batch run to completion before the next:
//       - calls: BENCH_CALLS chat-mode calls of a tiny workflow agent (opening, one text turn, end_call node), from
//         1 or 8 callers back to back (the 4-webhook batch with the most); each call queues three events through the server's own path
//         (transaction + dispatcher notify).
//       - direct enqueue: this process opens the same SQLite store (openStore) and calls enqueueEvent inside one
//         transaction per event, as the server does, at a fixed offered rate or as fast as it can; synthetic calls of
//         three events each (pre, post with a 4-entry transcript, analytics). The server is not notified (another
//         process), so its dispatcher finds these rows at its poll: PARLEY_WEBHOOK_POLL_MS=BENCH_POLL_MS (50) here,
//         default 1000 - at the default an idle dispatcher adds up to 1 s to such rows.
//     Latency = outbox created_at (server or bench clock, same machine) -> receipt at the receiver (ms resolution);
//     split into queue wait (created_at -> sent_at, the claim) and the dispatcher's own attempt time (latency_ms).
//     Sustained deliveries/s = deliveries / (first created_at -> last receipt). The dispatcher runs with its default
//     concurrency (8) and opens a new connection per delivery (egress-checked, no pooling).
//  2. api_call on a turn. A single-prompt agent on test/support/openai-mock.ts (no chunk delay) with one library
//     api_call tool (bearer token from the vault) to a local API answering JSON at once. Chat mode; plain and tool
//     turns alternate inside the same sessions (BENCH_TOOL_SESSIONS sessions, history kept short), so both variants
//     see the same conditions: plain = the model answers text at once; tool = the model first calls the tool, then
//     answers from its result. Reply latency = input_text.send -> assistant transcript (frame arrival). Tool turns
//     are split with in-process timestamps: send -> model request 1, its last chunk -> API request received
//     (the platform: stream parse, executor, vault decryption, egress check, connect), API receive -> answer,
//     API answer -> model request 2 (the platform: response, variables, next request), model request 2 -> reply.
// Env: BENCH_EVENTS (deliveries per direct batch, 2000), BENCH_RATES (offered deliveries/s for the direct batches,
// default 100,250,500,max), BENCH_CALLS (per calls batch, 120), BENCH_CALL_CONCURRENCY (callers, one 1-webhook batch each, 1,8), BENCH_HOOKS (4), BENCH_POLL_MS (50),
// BENCH_TOOL_TURNS (per variant, 100), BENCH_TOOL_SESSIONS (10), BENCH_BATCH_TIMEOUT_S (120).
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { intEnv, stopAndCollectProblems } from './lib/harness.js';
import { printTable, resultPath, quantile, procCpuSeconds } from './lib/report.js';
import { AgentCaller, connectUrl, type Frame } from '../test/support/agent-client.js';
import { OpenAiMock, type MockRequest, type MockReply } from '../test/support/openai-mock.js';
import { freshStore, startServer, type StoreEnv, type TestServer } from '../test/support/server.js';
import { openStore, type Store } from '../control-plane/store/db.js';
import { enqueueEvent, type CallEvent } from '../control-plane/webhooks/outbox.js';

const A = '/atoms/v1';
const EVENTS = intEnv('BENCH_EVENTS', 2000, 3);
const CALLS = intEnv('BENCH_CALLS', 120, 0);
const CALL_CONCS = (process.env.BENCH_CALL_CONCURRENCY ?? '1,8').split(',').map((x) => x.trim()).filter(Boolean).map(Number);
if (!CALL_CONCS.length || CALL_CONCS.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('BENCH_CALL_CONCURRENCY: comma-separated integers >= 1');
const HOOKS = intEnv('BENCH_HOOKS', 4, 1);
const POLL_MS = intEnv('BENCH_POLL_MS', 50, 10);
const TOOL_TURNS = intEnv('BENCH_TOOL_TURNS', 100, 0);
const TOOL_SESSIONS = intEnv('BENCH_TOOL_SESSIONS', 10, 1);
const BATCH_TIMEOUT_S = intEnv('BENCH_BATCH_TIMEOUT_S', 120, 1);
const RATES: (number | 'max')[] = (process.env.BENCH_RATES ?? '100,250,500,max')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean)
  .map((s) => {
    if (s === 'max') return 'max' as const;
    const n = Number(s);
    if (!Number.isInteger(n) || n < 1) throw new Error('BENCH_RATES: comma-separated integers >= 1 or "max"');
    return n;
  });
const SERVER_ENV = { PARLEY_WARM_MODELS: 'false', PARLEY_ALLOW_PRIVATE_EGRESS: '1', PARLEY_RATE_LIMIT_PER_MINUTE: '1000000', PARLEY_WEBHOOK_POLL_MS: String(POLL_MS) };
const API_TOKEN = 'bench-api-token-0123456789abcdef';

const started = performance.now();
const elapsedS = () => (performance.now() - started) / 1000;
const log = (msg: string) => process.stderr.write(`[${elapsedS().toFixed(0).padStart(4)} s] ${msg}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const r1 = (x: number) => Math.round(x * 10) / 10;
const r2 = (x: number) => Math.round(x * 100) / 100;
/** Nearest-rank quantile; NaN for no values. */
const fmt = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');


// ---------------------------------------------------------------------------------------------------------
// Receiver
// ---------------------------------------------------------------------------------------------------------
const secrets = new Map<string, string>(); // receiver path -> secret
const receipts = new Map<string, number>(); // delivery id -> Date.now() at receipt (first)
let sigFailures = 0;
let duplicates = 0;
let badBodies = 0;

function startReceiver(): Promise<{ server: Server; base: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      res.writeHead(200).end('ok');
      const raw = Buffer.concat(chunks);
      const secret = secrets.get(req.url ?? '');
      const sig = req.headers['x-signature'];
      if (!secret || typeof sig !== 'string' || createHmac('sha256', secret).update(raw).digest('hex') !== sig) sigFailures++;
      try {
        const id = (JSON.parse(raw.toString('utf8')) as { id?: string }).id;
        if (typeof id !== 'string') badBodies++;
        else if (receipts.has(id)) duplicates++;
        else receipts.set(id, at);
      } catch {
        badBodies++;
      }
    });
  });
  server.keepAliveTimeout = 1000;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

// ---------------------------------------------------------------------------------------------------------
// Webhook batches
// ---------------------------------------------------------------------------------------------------------
interface Batch {
  producer: string;
  webhooksPerEvent: number;
  /** Offered deliveries/s; 'max' = enqueued as fast as possible; null = calls (as fast as the callers go). */
  offeredDeliveriesPerS: number | 'max' | null;
  events: number;
  deliveries: number;
  expected: number;
  enqueueEventsPerS: number;
  sustainedPerS: number;
  latencyP50Ms: number;
  latencyP95Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  queueWaitP50Ms: number;
  queueWaitP95Ms: number;
  attemptP50Ms: number;
  attemptP95Ms: number;
  delivered: number;
  failed: number;
  unreceived: number;
  signatureFailures: number;
  serverCpuPct: number;
  wallS: number;
  /** Direct enqueue: transactions retried after SQLITE_BUSY (the store shared with the server). */
  busyRetries: number | null;
  errors: string[];
}

async function maxSeq(db: Store['db']): Promise<number> {
  const r = await db.selectFrom('webhook_outbox').select(sql<number>`coalesce(max(seq), 0)`.as('m')).executeTakeFirstOrThrow();
  return Number(r.m);
}

/** Waits until every outbox row after `fromSeq` is DELIVERED or FAILED (and `expected` rows exist), then measures. */
async function finishBatch(
  db: Store['db'],
  server: TestServer,
  meta: { producer: string; webhooksPerEvent: number; offered: number | 'max' | null; events: number; expected: number; enqueueS: number },
  fromSeq: number,
  cpu0: number,
  t0: number,
): Promise<Batch> {
  const deadline = Date.now() + BATCH_TIMEOUT_S * 1000;
  const sig0 = sigFailures;
  let rows: { id: string; status: string; created_at: string; sent_at: string | null; latency_ms: number | null; error: string | null }[] = [];
  for (;;) {
    const open = await db.selectFrom('webhook_outbox').select(sql<number>`count(*)`.as('n')).where('seq', '>', fromSeq).where('status', 'in', ['PENDING', 'SENDING']).executeTakeFirstOrThrow();
    const total = await db.selectFrom('webhook_outbox').select(sql<number>`count(*)`.as('n')).where('seq', '>', fromSeq).executeTakeFirstOrThrow();
    if (Number(open.n) === 0 && Number(total.n) >= meta.expected) break;
    if (Date.now() > deadline) break;
    await sleep(50);
  }
  const wallS = (performance.now() - t0) / 1000;
  const cpu = procCpuSeconds(server.proc.pid) - cpu0;
  await sleep(100); // last receipts' handlers
  rows = await db.selectFrom('webhook_outbox').select(['id', 'status', 'created_at', 'sent_at', 'latency_ms', 'error']).where('seq', '>', fromSeq).execute();
  const lat: number[] = [];
  const wait: number[] = [];
  const attempt: number[] = [];
  let firstCreated = Infinity;
  let lastReceipt = -Infinity;
  let unreceived = 0;
  for (const r of rows) {
    const created = Date.parse(r.created_at);
    firstCreated = Math.min(firstCreated, created);
    const got = receipts.get(r.id);
    if (got === undefined) unreceived++;
    else {
      lat.push(got - created);
      lastReceipt = Math.max(lastReceipt, got);
    }
    if (r.sent_at) wait.push(Date.parse(r.sent_at) - created);
    if (r.latency_ms !== null) attempt.push(r.latency_ms);
  }
  const delivered = rows.filter((r) => r.status === 'DELIVERED').length;
  const failed = rows.filter((r) => r.status === 'FAILED').length;
  const errors = [...new Set(rows.filter((r) => r.error).map((r) => String(r.error)))].slice(0, 5);
  if (rows.length < meta.expected) errors.push(`only ${rows.length}/${meta.expected} rows within ${BATCH_TIMEOUT_S} s`);
  const open = rows.filter((r) => r.status === 'PENDING' || r.status === 'SENDING').length;
  if (open) errors.push(`${open} rows still PENDING/SENDING after ${BATCH_TIMEOUT_S} s`);
  return {
    producer: meta.producer,
    webhooksPerEvent: meta.webhooksPerEvent,
    offeredDeliveriesPerS: meta.offered,
    events: meta.events,
    deliveries: rows.length,
    expected: meta.expected,
    enqueueEventsPerS: r1(meta.events / meta.enqueueS),
    sustainedPerS: r1(lat.length / Math.max(0.001, (lastReceipt - firstCreated) / 1000)),
    latencyP50Ms: quantile(lat, 0.5),
    latencyP95Ms: quantile(lat, 0.95),
    latencyP99Ms: quantile(lat, 0.99),
    latencyMaxMs: lat.length ? Math.max(...lat) : NaN,
    queueWaitP50Ms: quantile(wait, 0.5),
    queueWaitP95Ms: quantile(wait, 0.95),
    attemptP50Ms: quantile(attempt, 0.5),
    attemptP95Ms: quantile(attempt, 0.95),
    delivered,
    failed,
    unreceived,
    signatureFailures: sigFailures - sig0,
    serverCpuPct: r1((cpu / wallS) * 100),
    wallS: r1(wallS),
    busyRetries: null,
    errors,
  };
}

/** Metadata of a synthetic call's three events, shaped as calls/events.ts makes them. */
function syntheticEvents(orgId: string, agentId: string, callId: string): CallEvent[] {
  const base = (eventType: string) => ({ agentId, eventType, conversationType: 'webcall', callId });
  const now = new Date();
  const callData = { fromNumber: '', toNumber: '', callDuration: 42.5, callStatus: 'completed', callDirection: 'webcall', answerTime: new Date(now.getTime() - 42_500).toISOString(), endTime: now.toISOString() };
  const transcript = [
    { role: 'agent', content: 'Hello, thanks for calling the library. How can I help you today?', timestamp: now.toISOString() },
    { role: 'user', content: 'Hi, I would like to renew the books I borrowed last week, please.', timestamp: now.toISOString() },
    { role: 'agent', content: 'Of course. Your books are renewed until the end of next month.', timestamp: now.toISOString() },
    { role: 'user', content: 'Great, thank you very much. Goodbye.', timestamp: now.toISOString() },
  ];
  return [
    { orgId, agentId, callId, eventType: 'pre-conversation', metadata: { ...base('pre-conversation'), toPhone: '', fromPhone: '' } },
    { orgId, agentId, callId, eventType: 'post-conversation', metadata: { ...base('post-conversation'), recordingUrl: null, callData, transcript, variables: { call_id: callId, branch: 'Central', current_date: now.toISOString().slice(0, 10) } } },
    { orgId, agentId, callId, eventType: 'analytics-completed', metadata: { ...base('analytics-completed'), callData, analytics: { summary: 'The caller renewed their books.', dispositionMetrics: [], successMetrics: [] } } },
  ];
}

let batchNo = 0;
let busyRetries = 0;
async function directBatch(db: Store['db'], server: TestServer, orgId: string, agentId: string, hooks: number, deliveries: number, rate: number | 'max'): Promise<Batch> {
  const events = Math.max(3, Math.round(deliveries / hooks / 3) * 3);
  const list: CallEvent[] = [];
  batchNo++;
  for (let c = 0; list.length < events; c++) list.push(...syntheticEvents(orgId, agentId, `CALL-BENCH${batchNo}-${c}`));
  const fromSeq = await maxSeq(db);
  const busy0 = busyRetries;
  const cpu0 = procCpuSeconds(server.proc.pid);
  const t0 = performance.now();
  const eventRate = rate === 'max' ? Infinity : rate / hooks;
  for (let i = 0; i < list.length; i++) {
    if (Number.isFinite(eventRate)) {
      const due = t0 + (i / eventRate) * 1000;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
    }
    for (;;) {
      try {
        await db.transaction().execute((tx) => enqueueEvent(tx, list[i] as CallEvent));
        break;
      } catch (err) {
        // A deferred transaction that read before the server's dispatcher wrote cannot upgrade (SQLITE_BUSY at once,
        // the busy timeout does not apply): roll back and retry, as a second writer process has to.
        if (!/SQLITE_BUSY/.test(String((err as { code?: unknown }).code))) throw err;
        busyRetries++;
        await new Promise<void>((r) => setImmediate(r));
      }
    }
    await new Promise<void>((r) => setImmediate(r)); // let the receiver note its receipts
  }
  const enqueueS = (performance.now() - t0) / 1000;
  const b = await finishBatch(db, server, { producer: 'direct enqueue', webhooksPerEvent: hooks, offered: rate, events: list.length, expected: list.length * hooks, enqueueS }, fromSeq, cpu0, t0);
  b.busyRetries = busyRetries - busy0;
  return b;
}

const isAssistantFinal = (f: Frame) => f.type === 'transcript' && f.role === 'assistant';

async function oneCall(server: TestServer, agentId: string): Promise<void> {
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat' }), 16000);
  c.ws.on('error', () => undefined);
  try {
    await c.opened;
    await c.nextFrame(isAssistantFinal, 0, 15_000, 'opening');
    const mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'yes please' });
    await c.nextFrame((f) => f.type === 'session.closed', mark, 15_000, 'end_call');
    await Promise.race([c.closed, sleep(5000)]);
  } finally {
    c.close();
  }
}

async function callsBatch(db: Store['db'], server: TestServer, agentId: string, hooks: number, calls: number, conc: number): Promise<Batch> {
  const fromSeq = await maxSeq(db);
  const cpu0 = procCpuSeconds(server.proc.pid);
  const t0 = performance.now();
  let next = 0;
  const errors: string[] = [];
  await Promise.all(
    Array.from({ length: Math.min(conc, calls) }, async () => {
      while (next < calls) {
        next++;
        try {
          await oneCall(server, agentId);
        } catch (err) {
          errors.push(err instanceof Error ? err.message : String(err));
        }
      }
    }),
  );
  const enqueueS = (performance.now() - t0) / 1000;
  const b = await finishBatch(db, server, { producer: `calls (${conc} caller${conc > 1 ? 's' : ''})`, webhooksPerEvent: hooks, offered: null, events: calls * 3, expected: calls * 3 * hooks, enqueueS }, fromSeq, cpu0, t0);
  b.errors.push(...[...new Set(errors)].slice(0, 3).map((e) => `call: ${e.slice(0, 200)}`));
  return b;
}

// ---------------------------------------------------------------------------------------------------------
// api_call turns
// ---------------------------------------------------------------------------------------------------------
type Variant = 'plain' | 'tool';
interface TurnRec {
  variant: Variant;
  t0: number;
  modelIn: number[];
  apiIn: number[];
  apiOut: number[];
  chunkIdx: number;
  replyAt: number;
}
let cur: TurnRec | null = null;
const apiServerMs: number[] = [];
const TOOL_ASK = 'Where is my order A-100?';
const PLAIN_ASK = 'What are your opening hours?';

function mockReply(req: MockRequest): MockReply {
  cur?.modelIn.push(performance.now());
  const last = (req.body.messages ?? []).at(-1) as { role: string; content: string | null } | undefined;
  if (last?.role === 'user' && last.content === TOOL_ASK) return { toolCalls: [{ name: 'order_status', arguments: '{"order_id":"A-100"}' }] };
  if (last?.role === 'tool') return { text: `Your order is ${(JSON.parse(last.content ?? '{}') as any).order?.status ?? 'unknown'}, arriving Friday.` };
  if (last?.role === 'user') return { text: 'We are open from nine to five, Monday to Friday.' };
  return { text: 'Hello.' };
}

function startApi(): Promise<{ server: Server; base: string }> {
  const server = createServer((req, res) => {
    const tIn = performance.now();
    cur?.apiIn.push(tIn);
    const ok = req.headers.authorization === `Bearer ${API_TOKEN}`;
    req.resume();
    req.on('end', () => {
      res.on('finish', () => {
        const tOut = performance.now();
        cur?.apiOut.push(tOut);
        apiServerMs.push(tOut - tIn);
      });
      if (!ok) res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ order: { id: 'A-100', status: 'shipped', eta: 'Friday' } }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

interface TurnSample {
  variant: Variant;
  replyMs: number;
  toModel1Ms: number;
  model1StreamMs: number;
  toApiMs: number | null;
  apiMs: number | null;
  apiToModel2Ms: number | null;
  model2ToReplyMs: number | null;
  modelRequests: number;
  apiRequests: number;
}

async function toolSession(server: TestServer, mock: OpenAiMock, agentId: string, turns: Variant[]): Promise<TurnSample[]> {
  const out: TurnSample[] = [];
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat' }), 16000);
  c.ws.on('error', () => undefined);
  try {
    await c.opened;
    await c.nextFrame(isAssistantFinal, 0, 15_000, 'opening');
    for (const variant of turns) {
      await sleep(20);
      const mark = c.frames.length;
      const rec: TurnRec = { variant, t0: 0, modelIn: [], apiIn: [], apiOut: [], chunkIdx: mock.chunkTimes.length, replyAt: 0 };
      cur = rec;
      rec.t0 = performance.now();
      c.send({ type: 'input_text.send', text: variant === 'tool' ? TOOL_ASK : PLAIN_ASK });
      const reply = await c.nextFrame(isAssistantFinal, mark, 15_000, `${variant} turn`);
      rec.replyAt = reply.at;
      cur = null;
      const expect = variant === 'tool' ? /shipped/ : /nine to five/;
      if (!expect.test(String(reply.text))) throw new Error(`${variant} turn: unexpected reply ${JSON.stringify(reply.text)}`);
      const chunks = mock.chunkTimes.slice(rec.chunkIdx);
      const m1 = rec.modelIn[0] ?? NaN;
      const m1End = chunks[0]?.at(-1) ?? NaN;
      const tool = variant === 'tool';
      out.push({
        variant,
        replyMs: rec.replyAt - rec.t0,
        toModel1Ms: m1 - rec.t0,
        model1StreamMs: m1End - m1,
        toApiMs: tool ? (rec.apiIn[0] ?? NaN) - m1End : null,
        apiMs: tool ? (rec.apiOut[0] ?? NaN) - (rec.apiIn[0] ?? NaN) : null,
        apiToModel2Ms: tool ? (rec.modelIn[1] ?? NaN) - (rec.apiOut[0] ?? NaN) : null,
        model2ToReplyMs: tool ? rec.replyAt - (rec.modelIn[1] ?? NaN) : null,
        modelRequests: rec.modelIn.length,
        apiRequests: rec.apiIn.length,
      });
    }
  } finally {
    cur = null;
    c.close();
    await Promise.race([c.closed, sleep(2000)]);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------------------
let store: StoreEnv | null = null;
let server: TestServer | null = null;
let benchStore: Store | null = null;
let receiver: Server | null = null;
let api: Server | null = null;
let mock: OpenAiMock | null = null;
let failure: string | null = null;
let serverExit: number | null = null;
let serverProblems: string[] = [];
let startupMs = NaN;
const batches: Batch[] = [];
const samples: TurnSample[] = [];

try {
  const rcv = await startReceiver();
  receiver = rcv.server;
  const apiUp = await startApi();
  api = apiUp.server;
  mock = new OpenAiMock({ respond: mockReply });
  const llmBase = await mock.start();
  store = freshStore('sqlite');
  const t = performance.now();
  server = await startServer({ store, env: SERVER_ENV });
  startupMs = performance.now() - t;
  const s = server;
  log(`server up in ${fmt(startupMs)} ms (port ${s.port})`);

  // --- webhooks setup ---
  const graph = {
    nodes: [
      { id: 'ask', type: 'say', text: 'Do you want to renew your books?' },
      { id: 'done', type: 'end_call', text: 'Your books are renewed. Goodbye!' },
    ],
    edges: [{ from: 'ask', to: 'done', condition: { type: 'any' } }],
  };
  const mkAgent = async (name: string) => {
    const res = await s.request('POST', `${A}/agent`, { body: { name, workflowType: 'workflow_graph', workflowGraph: graph } });
    if (res.status !== 201) throw new Error(`POST /agent -> ${res.status}: ${res.text}`);
    return res.body.data as string;
  };
  const agentOne = await mkAgent('webhooks bench, 1 webhook');
  const agentMany = await mkAgent(`webhooks bench, ${HOOKS} webhooks`);
  const types = ['pre-conversation', 'post-conversation', 'analytics-completed'];
  for (let h = 0; h < HOOKS; h++) {
    const p = `/hooks/${h}`;
    const subs = [...(h === 0 ? [agentOne] : []), agentMany].flatMap((agentId) => types.map((eventType) => ({ agentId, eventType })));
    const res = await s.request('POST', `${A}/webhook`, { body: { endpoint: rcv.base + p, description: `bench receiver ${h}`, events: subs, headers: { 'x-bench': 'webhooks' } } });
    if (res.status !== 201) throw new Error(`POST /webhook -> ${res.status}: ${res.text}`);
    const rec = await s.request('GET', `${A}/webhook?webhookId=${res.body.data as string}`);
    const secret = (rec.body.data.decryptedSecretKey ?? rec.body.data[0]?.decryptedSecretKey) as string;
    if (!secret) throw new Error(`no decryptedSecretKey: ${rec.text.slice(0, 300)}`);
    secrets.set(p, secret);
  }
  benchStore = await openStore({ dataDir: store.dataDir });
  const db = benchStore.db;
  const orgId = (await db.selectFrom('agents').select('org_id').where('id', '=', agentOne).executeTakeFirstOrThrow()).org_id;

  log('warm-up: 5 calls (not reported)');
  await callsBatch(db, s, agentOne, 1, 5, 1);

  const runBatch = async (what: string, go: () => Promise<Batch>) => {
    log(`${what}...`);
    const b = await go();
    batches.push(b);
    log(`  ${b.deliveries} deliveries, ${fmt(b.sustainedPerS)}/s, latency p50 ${fmt(b.latencyP50Ms)} p95 ${fmt(b.latencyP95Ms)} ms, FAILED ${b.failed}, signature failures ${b.signatureFailures}`);
  };
  if (CALLS > 0) {
    for (const conc of CALL_CONCS) await runBatch(`calls: ${CALLS} x 3 events -> 1 webhook, ${conc} caller(s)`, () => callsBatch(db, s, agentOne, 1, CALLS, conc));
    const top = Math.max(...CALL_CONCS);
    if (HOOKS > 1) await runBatch(`calls: ${CALLS} x 3 events -> ${HOOKS} webhooks, ${top} caller(s)`, () => callsBatch(db, s, agentMany, HOOKS, CALLS, top));
  }
  for (const rate of RATES) await runBatch(`direct enqueue: ${EVENTS} deliveries -> 1 webhook at ${rate}`, () => directBatch(db, s, orgId, agentOne, 1, EVENTS, rate));
  if (HOOKS > 1) {
    for (const rate of RATES.filter((r) => r === 'max' || r === RATES[0])) {
      await runBatch(`direct enqueue: ${EVENTS} deliveries -> ${HOOKS} webhooks each at ${rate}`, () => directBatch(db, s, orgId, agentMany, HOOKS, EVENTS, rate));
    }
  }

  // --- api_call turns ---
  if (TOOL_TURNS > 0) {
    const sec = await s.request('POST', `${A}/secret`, { body: { name: 'bench-api-token', value: API_TOKEN } });
    if (sec.status !== 201) throw new Error(`POST /secret -> ${sec.status}: ${sec.text}`);
    const tool = await s.request('POST', `${A}/tool`, {
      body: {
        definition: {
          type: 'api_call',
          name: 'order_status',
          description: 'Look up the status of an order',
          url: `${apiUp.base}/orders/{{order_id}}`,
          method: 'GET',
          llmParameters: [{ name: 'order_id', description: 'Order number', type: 'text', required: true }],
          responseVariables: [{ variableName: 'order_eta', jsonPath: '$.order.eta' }],
          auth: { type: 'bearer', token: 'bench-api-token' },
        },
      },
    });
    if (tool.status !== 201) throw new Error(`POST /tool -> ${tool.status}: ${tool.text}`);
    const agent = await s.request('POST', `${A}/agent`, {
      body: { name: 'api_call bench', workflowType: 'single_prompt', prompt: 'You help with orders and opening hours.', firstMessage: 'Hello, how can I help?', toolRefs: [tool.body.data.toolId], model: { provider: 'openai_compatible', baseUrl: llmBase, model: 'm' } },
    });
    if (agent.status !== 201) throw new Error(`POST /agent (single_prompt) -> ${agent.status}: ${agent.text}`);
    const agentId = agent.body.data as string;
    log('api_call warm-up: 1 session, 3 turns each (not reported)');
    await toolSession(s, mock, agentId, ['plain', 'tool', 'plain', 'tool', 'plain', 'tool']);
    apiServerMs.length = 0;
    const perSession = Math.ceil(TOOL_TURNS / TOOL_SESSIONS);
    log(`api_call: ${TOOL_SESSIONS} sessions x ${perSession} turns of each variant, alternating`);
    for (let k = 0; k < TOOL_SESSIONS; k++) {
      const turns: Variant[] = [];
      for (let i = 0; i < perSession; i++) turns.push(...((k + i) % 2 === 0 ? (['plain', 'tool'] as const) : (['tool', 'plain'] as const)));
      samples.push(...(await toolSession(s, mock, agentId, turns)));
    }
  }
} catch (err) {
  failure = err instanceof Error ? (err.stack ?? err.message) : String(err);
  if (server) failure += `\nserver exit code ${server.exitCode}; last log lines:\n${server.logs.slice(-15).join('\n')}`;
} finally {
  if (benchStore) await benchStore.close();
  if (server) ({ exit: serverExit, problems: serverProblems } = await stopAndCollectProblems(server));
  if (store) await store.cleanup();
  await mock?.close();
  for (const srv of [receiver, api]) if (srv) {
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
}

// ---------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------
console.log(
  `\nWebhooks and api_call tools (node ${process.version}, ${os.cpus().length} CPUs; server start ${fmt(startupMs)} ms with ${Object.entries(SERVER_ENV).map(([k, v]) => `${k}=${v}`).join(' ')}; dispatcher concurrency 8 (default))`,
);
printTable(
  'Webhook deliveries to a local receiver (200 at once; X-Signature checked on every delivery). Latency = outbox created_at -> receipt (ms); wait = created_at -> claimed; attempt = dispatcher sign+connect+POST',
  ['producer', 'hooks/event', 'offered/s', 'events', 'deliveries', 'enq ev/s', 'deliv/s', 'p50', 'p95', 'p99', 'max', 'wait p50', 'wait p95', 'attempt p50', 'attempt p95', 'FAILED', 'sig fail', 'missing', 'busy retries', 'srv CPU'],
  batches.map((b) => [
    b.producer,
    String(b.webhooksPerEvent),
    b.offeredDeliveriesPerS === null ? '-' : String(b.offeredDeliveriesPerS),
    String(b.events),
    `${b.deliveries}/${b.expected}`,
    fmt(b.enqueueEventsPerS),
    fmt(b.sustainedPerS),
    fmt(b.latencyP50Ms),
    fmt(b.latencyP95Ms),
    fmt(b.latencyP99Ms),
    fmt(b.latencyMaxMs),
    fmt(b.queueWaitP50Ms),
    fmt(b.queueWaitP95Ms),
    fmt(b.attemptP50Ms),
    fmt(b.attemptP95Ms),
    String(b.failed),
    String(b.signatureFailures),
    String(b.unreceived),
    b.busyRetries === null ? '-' : String(b.busyRetries),
    `${fmt(b.serverCpuPct)}%`,
  ]),
  1,
);
console.log(`  direct enqueue = this process writes the outbox (enqueueEvent, one transaction per event) in the server's SQLite store; the server's dispatcher finds the rows at its ${POLL_MS} ms poll (not notified).`);
console.log(`  "offered/s" is deliveries/s (events/s x hooks/event); "max" = enqueued as fast as this process can; "-" = calls as fast as the callers go. Totals: signature failures ${sigFailures}, duplicate receipts ${duplicates}, unparsable bodies ${badBodies}.`);
for (const b of batches) for (const e of b.errors) console.log(`  ${b.producer}, ${b.webhooksPerEvent} hook(s), ${b.offeredDeliveriesPerS ?? 'calls'}: ${e.slice(0, 300)}`);

const pick = (v: Variant) => samples.filter((x) => x.variant === v);
const plain = pick('plain');
const tool = pick('tool');
const stat = (xs: (number | null)[]) => {
  const v = xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  return { n: v.length, p50: r2(quantile(v, 0.5)), p95: r2(quantile(v, 0.95)), max: r2(v.length ? Math.max(...v) : NaN) };
};
const turnStats = {
  plain: { reply: stat(plain.map((x) => x.replyMs)), toModel1: stat(plain.map((x) => x.toModel1Ms)) },
  tool: {
    reply: stat(tool.map((x) => x.replyMs)),
    toModel1: stat(tool.map((x) => x.toModel1Ms)),
    model1Stream: stat(tool.map((x) => x.model1StreamMs)),
    toApi: stat(tool.map((x) => x.toApiMs)),
    api: stat(tool.map((x) => x.apiMs)),
    apiToModel2: stat(tool.map((x) => x.apiToModel2Ms)),
    model2ToReply: stat(tool.map((x) => x.model2ToReplyMs)),
  },
  apiServerReceiveToAnswer: stat(apiServerMs),
};
const added = { p50: r2(turnStats.tool.reply.p50 - turnStats.plain.reply.p50), p95: r2(turnStats.tool.reply.p95 - turnStats.plain.reply.p95) };
const platformPart = r2(turnStats.tool.toApi.p50 + turnStats.tool.apiToModel2.p50);
if (samples.length) {
  printTable(
    `api_call tool on a chat turn: input_text.send -> assistant transcript (ms); plain and tool turns alternating in ${TOOL_SESSIONS} sessions, OpenAiMock without delay`,
    ['variant', 'turns', 'reply p50', 'reply p95', 'reply max', 'x plain p50', 'model reqs/turn', 'API reqs/turn'],
    (['plain', 'tool'] as const).map((v) => {
      const xs = pick(v);
      const st = turnStats[v].reply;
      return [v, String(st.n), fmt(st.p50, 2), fmt(st.p95, 2), fmt(st.max, 2), `${fmt(st.p50 / turnStats.plain.reply.p50, 2)}x`, fmt(xs.reduce((a, x) => a + x.modelRequests, 0) / Math.max(1, xs.length), 2), fmt(xs.reduce((a, x) => a + x.apiRequests, 0) / Math.max(1, xs.length), 2)];
    }),
    1,
  );
  console.log(`  added by the tool (tool - plain): p50 ${fmt(added.p50, 2)} ms, p95 ${fmt(added.p95, 2)} ms`);
  printTable(
    'Tool turns split (ms, in-process timestamps)',
    ['segment', 'p50', 'p95', 'max'],
    [
      ['send -> model request 1 (plain turns)', turnStats.plain.toModel1],
      ['send -> model request 1', turnStats.tool.toModel1],
      ['model 1 stream (mock)', turnStats.tool.model1Stream],
      ['model 1 done -> API request in (platform: executor, vault, egress, connect)', turnStats.tool.toApi],
      ['API receive -> answer (the API itself)', turnStats.tool.api],
      ['API answer -> model request 2 (platform: response, variables, next request)', turnStats.tool.apiToModel2],
      ['model request 2 -> reply at client', turnStats.tool.model2ToReply],
    ].map(([name, st]) => [name as string, fmt((st as { p50: number }).p50, 2), fmt((st as { p95: number }).p95, 2), fmt((st as { max: number }).max, 2)]),
    1,
  );
  console.log(`  platform's own part of the tool call (p50 of the two platform segments): ${fmt(platformPart, 2)} ms; API server receive -> answer p50 ${fmt(turnStats.apiServerReceiveToAnswer.p50, 3)} ms (${turnStats.apiServerReceiveToAnswer.n} requests)`);
}

console.log(`\nserver: exit code on SIGTERM ${serverExit}; ${serverProblems.length} log lines at warn or above / stderr`);
for (const l of serverProblems.slice(0, 15)) console.log(`  ${l.slice(0, 400)}`);
const healthy = !failure && serverProblems.length === 0 && sigFailures === 0 && batches.every((b) => b.failed === 0 && b.unreceived === 0 && b.deliveries === b.expected);
if (failure) console.log(`\nRUN FAILED: ${failure}`);

const outFile = resultPath('webhooks-tools');
writeFileSync(
  outFile,
  `${JSON.stringify(
    {
      benchmark: 'webhooks-tools',
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cpus: os.cpus().length,
      timestamp: new Date().toISOString(),
      runSeconds: r1(elapsedS()),
      config: { deliveriesPerDirectBatch: EVENTS, rates: RATES, calls: CALLS, callConcurrency: CALL_CONCS, hooks: HOOKS, pollMs: POLL_MS, toolTurnsPerVariant: TOOL_TURNS, toolSessions: TOOL_SESSIONS, serverEnv: SERVER_ENV, dispatcherConcurrency: 8 },
      notes: {
        directEnqueue: 'bench process writes the outbox with enqueueEvent (one transaction per event) in the same SQLite store; the dispatcher finds rows at its poll',
        latency: 'outbox created_at -> receipt at the receiver (Date.now(), ms)',
        sustained: 'deliveries received / (first created_at -> last receipt)',
      },
      webhooks: batches,
      totals: { signatureFailures: sigFailures, duplicateReceipts: duplicates, unparsableBodies: badBodies },
      apiCall: { stats: turnStats, addedMs: added, platformPartP50Ms: platformPart, samples },
      server: { exitCode: serverExit, problems: serverProblems },
      healthy,
      failure,
    },
    null,
    2,
  )}\n`,
);
console.log(`\nwrote ${path.relative(process.cwd(), outFile)}`);
if (failure || !healthy) process.exitCode = 1;
