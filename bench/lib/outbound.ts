// The outbound part of the telephony bench (issue 14 point 8), run by bench/telephony.ts after its other phases.
//  1. Dialer pacing: an outbound trunk at cpsLimit N (BENCH_OUT_CPS) to a sipp carrier that refuses every call with
//     486 (short calls), BENCH_OUT_CALLS calls queued as fast as the API takes them, with one server (SQLite, pace in
//     the process) and with two (one PostgreSQL store, pace in Redis, the calls split between them). sipp logs each
//     INVITE's arrival to the microsecond; from those: achieved rate = (n-1) / (last - first), its share of the limit,
//     the gaps between INVITEs, and the most INVITEs in any sliding window of 1000/N ms and of 1 s.
//     Windows are half-open, [t, t + w), slid over every arrival (a window holding the most starts at one). In a window
//     of 1000/N ms the limit is one call; measured at the carrier, arrival jitter (what the goal's 5 ms allowance on the
//     smallest gap is for) can put two in it while the server kept its pace, so that count is reported, and "never
//     above the limit" is judged on the 1 s window: at most N INVITEs in any [t, t + 1 s). The shortest span of N + 1
//     consecutive INVITEs says how close a run came to one more in a second. BENCH_OUT_PACING picks other
//     configurations (see pacingConfigs); BENCH_OUT_ANSWER_CALLS=0 skips part 2.
//  2. Outbound answer -> first agent audio: one server (SQLite, models warmed) and a workflow agent whose one say node
//     greets; its outbound trunk points at a callee in this process (our SipStack on PEER_HOST and a UDP socket for RTP)
//     that answers every INVITE at once with PCMU, sends 20 ms of mu-law silence every 20 ms, and hangs up (BYE) on the
//     first RTP packet from the server that is not all silence. Per call: 200 OK sent -> that packet, and
//     POST /conversation/outbound -> INVITE received (queue, dialer, pace). BENCH_OUT_ANSWER_CALLS calls, at most
//     BENCH_OUT_ANSWER_CONCURRENCY at a time, after one warm-up call that is not reported.
//  3. Pacing with answered calls (issue 34 item 6; BENCH_OUT_ANSWERED, a list of cpsLimits, runs it on each
//     BENCH_OUT_PACING configuration; by default it does not run): part 1's run, but the carrier answers every call 200
//     with PCMU and hangs up (BYE) ANSWERED_HOLD_MS after the ACK, so each call runs the agent meanwhile and holds a
//     speech session (the organization's and the server's caps bound the calls up at once, and so the pace: the servers
//     run with the caps of SERVER_ENV, far above the 75 or so calls up at once at cps 50). BENCH_OUT_ANSWERED_CALLS
//     calls per run (default about 4 s of pace, max(12, 4 × cpsLimit)). Reported as in part 1, with each call's final
//     status and endReason and the most INVITEs in any ANSWERED_HOLD_MS (the calls up at once, at least).
import dgram from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { linearToMuLaw } from '../../engine/audio/g711.js';
import { SipStack } from '../../telephony/sip/stack.js';
import type { Dialog } from '../../telephony/sip/dialog.js';
import { freshStore, startServer, type StoreEnv, type TestServer } from '../../test/support/server.js';
import { canRunRealtime, startSippCarrier, type SippCarrier } from '../../test/support/sip-callee.js';
import { PEER_HOST, STACK_HOST, sippMessages } from '../../test/support/sip-peers.js';
import { intEnv, stopAndCollectProblems, UNCAPPED_SESSIONS } from './harness.js';
import { printTable, quantile } from './report.js';

const A = '/atoms/v1';
const REDIS_URL = 'redis://127.0.0.1:6379';
const GOAL_RATE_PCT = 95;
/** The smallest-gap goal is 1000/N - 5 ms. */
const GAP_ALLOWANCE_MS = 5;
const SILENCE = linearToMuLaw(0);
const FINAL = new Set(['completed', 'failed', 'no_answer', 'cancelled']);
/** How many POST /conversation/outbound are in flight at once while queueing. */
const QUEUE_WIDTH = 16;
const SERVER_ENV = { ...UNCAPPED_SESSIONS, PARLEY_RATE_LIMIT_PER_MINUTE: '1000000', PARLEY_SIP_HOST: STACK_HOST };
/** Part 3: how long the carrier holds an answered call (ACK -> its BYE). */
const ANSWERED_HOLD_MS = 1500;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const r1 = (x: number) => Math.round(x * 10) / 10;
const r2 = (x: number) => Math.round(x * 100) / 100;
const fmt = (x: number | null | undefined, digits = 0) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const met = (x: boolean | null) => (x === null ? 'n/a' : x ? 'MET' : 'MISSED');
const errText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export interface OutboundOptions {
  /** Progress lines (default: to stderr). */
  log?: (msg: string) => void;
  /** cpsLimit of the pacing trunk (default BENCH_OUT_CPS or 50; at most 50, the API's bound). */
  cps?: number;
  /** Calls queued per pacing run (default BENCH_OUT_CALLS or 150). */
  calls?: number;
  /** Calls measured for answer -> first audio (default BENCH_OUT_ANSWER_CALLS or 20). */
  answerCalls?: number;
  /** Of those, at most this many at a time (default BENCH_OUT_ANSWER_CONCURRENCY or 1). */
  answerConcurrency?: number;
}

/** One pacing run: INVITE arrivals at the carrier for `calls` calls queued at once. */
export interface PacingRun {
  processes: number;
  store: 'sqlite' | 'postgres';
  /** Where the pace is kept: in the process, or in Redis (always with more than one process). */
  pace: 'process' | 'redis';
  cps: number;
  calls: number;
  /** INVITEs the carrier logged, and how many distinct numbers they dialed (each once: equal to `calls`). */
  invites: number;
  distinctNumbers: number;
  /** INVITEs each server sent (by its SIP port in the Via), in server order. */
  perProcess: number[];
  /** Every call's final record, `status/callFailureReason` -> count. */
  finals: Record<string, number>;
  /** Time to queue them all (every POST answered). */
  queueMs: number;
  /** First to last INVITE. */
  spanMs: number;
  achievedCps: number;
  achievedPct: number;
  minGapMs: number;
  p1GapMs: number;
  p50GapMs: number;
  maxGapMs: number;
  /** Gaps under the smallest-gap goal (1000/cps - 5 ms), and over 1000/cps + 5 ms (time the pace lost). */
  shortGaps: number;
  longGaps: number;
  /** The most INVITEs in any [t, t + 1000/cps ms) (the limit there is 1). */
  maxInIntervalWindow: number;
  /** The most INVITEs in any [t, t + 1 s) (the limit there is cps). */
  maxInSecondWindow: number;
  /**
   * The shortest span of cps + 1 consecutive INVITEs (ms): at least 1000 keeps every 1 s window at the limit, and what
   * is over 1000 is how close the pace came to putting one more in.
   */
  tightestSecondMs: number;
  /** The gaps over 1000/cps + 5 ms: when (ms after the first INVITE) and how long, and when the last POST was answered. */
  longGapsAt: Array<{ atMs: number; gapMs: number }>;
  /** Every gap between consecutive INVITEs in arrival order, ms (the distribution the figures above summarise). */
  gapsMs: number[];
  queuedAtMs: number;
  goals: { ratePct: boolean; minGap: boolean; secondWindow: boolean };
  /**
   * Part 3 only: how long the carrier held each answered call, and the most INVITEs in any such span: the calls up at
   * once, at least (a call is up from its answer, just after its INVITE, to its BYE, holdMs after the ACK).
   */
  holdMs?: number;
  peakUp?: number;
  error: string | null;
}

/** Answer -> first agent audio over `calls` outbound calls to the in-process callee. */
export interface AnswerRun {
  calls: number;
  concurrency: number;
  /** Calls that got agent audio (the rest failed: see errors). */
  measured: number;
  answerToAudio: Quantiles;
  postToInvite: Quantiles;
  postToAudio: Quantiles;
  /** Every call's final record, `status/endReason` -> count. */
  finals: Record<string, number>;
  errors: string[];
  error: string | null;
}

export interface Quantiles {
  p50: number;
  p95: number;
  max: number;
}

export interface OutboundResult {
  config: {
    cps: number; calls: number; answerCalls: number; answerConcurrency: number; warmupCalls: number; serverEnv: Record<string, string>;
    /** Part 3: its cpsLimits (none: not run), calls per run (null: max(12, 4 × cpsLimit)) and how long each call is held. */
    answered: { cps: number[]; calls: number | null; holdMs: number };
  };
  pacing: PacingRun[];
  answer: AnswerRun | null;
  /** Part 3's runs: every BENCH_OUT_PACING configuration at each of its cpsLimits in turn. */
  answered: PacingRun[];
  /** Each server's exit code on SIGTERM and its log lines at warn or above. */
  servers: Array<{ name: string; exit: number | null; problems: string[] }>;
  /** Set when a part could not run to its end. */
  failure: string | null;
}

function quantiles(xs: number[]): Quantiles {
  return { p50: r1(quantile(xs, 0.5)), p95: r1(quantile(xs, 0.95)), max: r1(xs.length ? Math.max(...xs) : NaN) };
}

/** The most of the sorted times `at` in any half-open window [t, t + windowMs). */
function maxInWindow(at: number[], windowMs: number): number {
  let best = 0;
  let end = 0;
  for (let i = 0; i < at.length; i++) {
    end = Math.max(end, i);
    while (end < at.length && (at[end] as number) < (at[i] as number) + windowMs) end++;
    best = Math.max(best, end - i);
  }
  return best;
}

/** Runs `fn(i)` for i in [0, n), at most `width` at a time. */
async function pool<T>(n: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) out[i] = await fn(i);
  };
  await Promise.all(Array.from({ length: Math.min(width, n) }, worker));
  return out;
}

/** A one-say-node workflow agent; returns its id. */
async function greetingAgent(server: TestServer, text: string): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, {
    body: { name: 'Outbound bench', workflowType: 'workflow_graph', workflowGraph: { nodes: [{ id: 'greet', type: 'say', text }], edges: [] } },
  });
  if (res.status !== 201) throw new Error(`POST /agent -> ${res.status}: ${res.text}`);
  return res.body.data as string;
}

async function outboundTrunk(server: TestServer, port: number, number: string, cps: number): Promise<void> {
  const res = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Bench carrier', address: `${PEER_HOST}:${port}`, numbers: [number], cpsLimit: cps } });
  if (res.status !== 201) throw new Error(`POST /sip-trunk/outbound -> ${res.status}: ${res.text}`);
}

/** Queues one call; `key` defaults to the server's own (a second server sharing a store takes the first one's). */
async function placeCall(server: TestServer, body: { agentId: string; phoneNumber: string; fromNumber: string }, key?: string): Promise<string> {
  const res = await server.request('POST', `${A}/conversation/outbound`, { body, key });
  if (res.status !== 200) throw new Error(`POST /conversation/outbound -> ${res.status}: ${res.text}`);
  return res.body.data.conversationId as string;
}

/** The call's record once it is final. */
async function finalRecord(server: TestServer, callId: string, timeoutMs: number): Promise<{ status: string; callFailureReason?: string | null; endReason?: string | null }> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const res = await server.request('GET', `${A}/conversation/${callId}`);
    if (res.status !== 200) throw new Error(`GET /conversation/${callId} -> ${res.status}: ${res.text}`);
    if (FINAL.has(res.body.data.status)) return res.body.data;
    if (performance.now() > until) throw new Error(`call ${callId} stayed ${res.body.data.status}`);
    await sleep(100);
  }
}

function tally(keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}

/** What a server's last log lines say, for a failure message. */
const lastLines = (servers: TestServer[]) => servers.map((s, i) => `\nserver ${i + 1} exit code ${s.exitCode}; last log lines:\n${s.logs.slice(-10).join('\n')}`).join('');

// ---------------------------------------------------------------------------------------------------------
// 1. Pacing
// ---------------------------------------------------------------------------------------------------------

/** One pacing configuration: the store, how many servers share it, and where the pace is kept. */
interface PacingConfig {
  dialect: 'sqlite' | 'postgres';
  processes: number;
  pace: 'process' | 'redis';
}

/**
 * BENCH_OUT_PACING: a comma list of `<store>:<processes>[:redis]` (default `sqlite:1,postgres:2`, the two the goals
 * are judged on). More than one process always keeps the pace in Redis; `postgres:1` and `postgres:1:redis` tell what
 * the store and the pace's round trip each cost from what the second process costs.
 */
function pacingConfigs(): PacingConfig[] {
  const raw = process.env.BENCH_OUT_PACING ?? 'sqlite:1,postgres:2';
  return raw.split(',').map((item) => {
    const [dialect, n, where, ...rest] = item.trim().split(':');
    const processes = Number(n);
    if ((dialect !== 'sqlite' && dialect !== 'postgres') || !Number.isInteger(processes) || processes < 1 || (where !== undefined && where !== 'redis') || rest.length) {
      throw new Error(`BENCH_OUT_PACING: ${JSON.stringify(item)} is not <sqlite|postgres>:<processes>[:redis]`);
    }
    if (dialect === 'sqlite' && processes > 1) throw new Error('BENCH_OUT_PACING: several processes share only a PostgreSQL store');
    return { dialect, processes, pace: processes > 1 || where === 'redis' ? 'redis' : 'process' };
  });
}

interface PacingContext {
  cps: number;
  calls: number;
  /** Part 3: the carrier answers every call and hangs up this long after the ACK; absent, it refuses them with 486. */
  holdMs?: number;
  /** Names the run's servers in the report. */
  label: string;
  log: (msg: string) => void;
  servers: OutboundResult['servers'];
}

/** Queues `calls` calls split over `servers` (all sharing one store), waits for every one to end, and reads the carrier's log. */
async function pacingRun(ctx: PacingContext, { dialect, processes, pace }: PacingConfig, runIndex: number): Promise<PacingRun> {
  const { cps, calls, holdMs } = ctx;
  const run: PacingRun = {
    processes, store: dialect, pace, cps, calls, holdMs, invites: 0, distinctNumbers: 0, perProcess: [], finals: {}, queueMs: NaN, spanMs: NaN, achievedCps: NaN, achievedPct: NaN,
    minGapMs: NaN, p1GapMs: NaN, p50GapMs: NaN, maxGapMs: NaN, shortGaps: 0, longGaps: 0, maxInIntervalWindow: 0, maxInSecondWindow: 0, tightestSecondMs: NaN, longGapsAt: [], gapsMs: [], queuedAtMs: NaN, goals: { ratePct: false, minGap: false, secondWindow: false }, error: null,
  };
  const store: StoreEnv = freshStore(dialect);
  const servers: TestServer[] = [];
  let carrier: SippCarrier | null = null;
  try {
    const answer = holdMs === undefined ? ({ answer: 486 } as const) : ({ answer: 'ok', holdMs } as const);
    carrier = await startSippCarrier({ ...answer, calls: calls + 10, timeoutS: Math.ceil(calls / cps) + 120, realtime: canRunRealtime() });
    const env = {
      ...SERVER_ENV,
      PARLEY_OUTBOUND_QUEUE: String(calls + 100),
      ...(pace === 'redis' ? { PARLEY_REDIS_URL: REDIS_URL } : {}),
      // Answered calls run the agent: its models load at start, not on the first call while the dialer keeps its pace.
      ...(holdMs !== undefined ? { PARLEY_WARM_MODELS: 'true' } : {}),
    };
    const first = await startServer({ store, env });
    servers.push(first);
    for (let i = 1; i < processes; i++) servers.push(await startServer({ store, env: { ...env, PARLEY_BOOTSTRAP_KEY: first.key } }));
    const agentId = await greetingAgent(first, 'Hello.');
    const fromNumber = `+1555020${String(8000 + runIndex).padStart(4, '0')}`;
    await outboundTrunk(first, carrier.port, fromNumber, cps);
    ctx.log(`  ${processes} process(es) on ${dialect}: queueing ${calls} calls at cpsLimit ${cps} (carrier sipp on ${PEER_HOST}:${carrier.port}, answers ${holdMs === undefined ? '486' : `200, BYE ${holdMs} ms after the ACK`})`);

    const t0 = performance.now();
    // Round robin over the servers, all POSTs as fast as they are answered.
    const ids = await pool(calls, QUEUE_WIDTH * processes, (i) =>
      placeCall(servers[i % processes] as TestServer, { agentId, phoneNumber: `+1555041${String(runIndex * 1000 + i).padStart(4, '0')}`, fromNumber }, first.key),
    );
    run.queueMs = r1(performance.now() - t0);
    const queuedEpoch = Date.now();

    // Wait on the carrier's log, not the API, so the servers do nothing else while they dial.
    const deadline = performance.now() + (calls / cps) * 2000 + 30_000;
    while (carrier.arrivals().length < calls && performance.now() < deadline) await sleep(200);
    const records = await pool(ids.length, 8, (i) => finalRecord(first, ids[i] as string, 20_000));
    // An answered call's record has no callFailureReason unless it failed; its endReason says how it ended either way.
    run.finals = tally(records.map((r) => `${r.status}/${(holdMs === undefined ? r.callFailureReason : r.endReason) ?? ''}`));

    const arrivals = carrier.arrivals().sort((a, b) => a.at - b.at);
    const at = arrivals.map((a) => a.at);
    const gaps = at.slice(1).map((t, i) => t - (at[i] as number));
    run.invites = arrivals.length;
    run.distinctNumbers = new Set(arrivals.map((a) => a.to)).size;
    run.spanMs = r1((at.at(-1) ?? NaN) - (at[0] ?? NaN));
    run.achievedCps = r2((at.length - 1) / (run.spanMs / 1000));
    run.achievedPct = r1((run.achievedCps / cps) * 100);
    run.gapsMs = gaps.map(r2);
    run.minGapMs = r2(gaps.length ? Math.min(...gaps) : NaN);
    run.p1GapMs = r2(quantile(gaps, 0.01));
    run.p50GapMs = r2(quantile(gaps, 0.5));
    run.maxGapMs = r2(gaps.length ? Math.max(...gaps) : NaN);
    run.shortGaps = gaps.filter((g) => g < 1000 / cps - GAP_ALLOWANCE_MS).length;
    run.longGaps = gaps.filter((g) => g > 1000 / cps + GAP_ALLOWANCE_MS).length;
    run.longGapsAt = gaps.flatMap((g, i) => (g > 1000 / cps + GAP_ALLOWANCE_MS ? [{ atMs: r1((at[i] as number) - (at[0] as number)), gapMs: r1(g) }] : []));
    run.queuedAtMs = r1(queuedEpoch - (at[0] ?? NaN));
    run.maxInIntervalWindow = maxInWindow(at, 1000 / cps);
    run.maxInSecondWindow = maxInWindow(at, 1000);
    run.tightestSecondMs = r1(at.length > cps ? Math.min(...at.slice(cps).map((t, i) => t - (at[i] as number))) : NaN);
    run.goals = { ratePct: run.achievedPct >= GOAL_RATE_PCT, minGap: run.minGapMs >= 1000 / cps - GAP_ALLOWANCE_MS, secondWindow: run.maxInSecondWindow <= cps };
    if (holdMs !== undefined) run.peakUp = maxInWindow(at, holdMs);

    // Which server sent each INVITE: the Via of its first transmission names the server's SIP port.
    const done = await carrier.stop();
    carrier = null;
    const viaPort = new Map<string, number>();
    for (const m of sippMessages(done.messages)) {
      if (m.direction !== 'received' || m.method !== 'INVITE') continue;
      const callId = m.headers['call-id'] ?? '';
      const port = Number(/^SIP\/2\.0\/\w+ [^:;\s]+:(\d+)/.exec(m.headers.via ?? '')?.[1]);
      if (!viaPort.has(callId)) viaPort.set(callId, port);
    }
    run.perProcess = servers.map((s) => [...viaPort.values()].filter((p) => p === s.sipPort).length);
    if (run.invites !== calls || run.distinctNumbers !== calls) run.error = `${run.invites} INVITEs to ${run.distinctNumbers} numbers for ${calls} calls`;
  } catch (err) {
    run.error = errText(err) + lastLines(servers);
  } finally {
    await carrier?.stop();
    for (const [i, s] of servers.entries()) ctx.servers.push({ name: `${ctx.label}, ${processes} process(es), server ${i + 1}`, ...(await stopAndCollectProblems(s)) });
    await store.cleanup();
  }
  return run;
}

// ---------------------------------------------------------------------------------------------------------
// 2. Answer -> first agent audio
// ---------------------------------------------------------------------------------------------------------

/** One call as the in-process callee saw it (performance.now() times). */
interface CalleeCall {
  inviteAt?: number;
  okAt?: number;
  audioAt?: number;
  /** The dialog, once the ACK of our 200 arrived. */
  dialog?: Promise<Dialog>;
  rtp?: dgram.Socket;
  stopSending?: () => void;
  /** Resolves with the first agent audio's arrival; rejects on a failure of the callee's side. */
  heard: Promise<number>;
  hear: (at: number) => void;
  fail: (err: Error) => void;
}

/** A callee on PEER_HOST: answers each INVITE for a number it expects with PCMU at once, notes 200 OK and first audio. */
class Callee {
  private readonly calls = new Map<string, CalleeCall>();

  private constructor(readonly stack: SipStack) {
    stack.use('INVITE', (req, res) => {
      const call = this.calls.get(req.ruri.user ?? '');
      if (!call || call.inviteAt !== undefined) return void res.send(404);
      call.inviteAt = performance.now();
      void this.answer(call, req.body, (sdp) => {
        call.dialog = stack.createUAS(req, res, { localSdp: sdp });
        call.okAt = performance.now(); // the 200 goes out inside createUAS
        return call.dialog;
      }).catch((err) => call.fail(err instanceof Error ? err : new Error(String(err))));
    });
  }

  static async start(): Promise<Callee> {
    return new Callee(await SipStack.start({ host: PEER_HOST, port: 0, tcp: false }));
  }

  get port(): number {
    return this.stack.port;
  }

  /** Expects a call to `number`. */
  expect(number: string): CalleeCall {
    let hear!: (at: number) => void;
    let fail!: (err: Error) => void;
    const heard = new Promise<number>((resolve, reject) => {
      hear = resolve;
      fail = reject;
    });
    heard.catch(() => undefined);
    const call: CalleeCall = { heard, hear, fail };
    this.calls.set(number, call);
    return call;
  }

  /** Hangs up (BYE) and closes the call's RTP. */
  async hangUp(number: string): Promise<void> {
    const call = this.calls.get(number);
    this.calls.delete(number);
    if (!call) return;
    call.stopSending?.();
    const dialog = await call.dialog?.catch(() => null);
    await dialog?.destroy().catch(() => undefined);
    call.rtp?.close();
  }

  async close(): Promise<void> {
    for (const n of [...this.calls.keys()]) await this.hangUp(n);
    await this.stack.close();
  }

  /** Binds the call's RTP socket, starts its silence and sends the 200 with a PCMU answer; resolves on the ACK. */
  private async answer(call: CalleeCall, offer: string, send: (sdp: string) => Promise<Dialog>): Promise<void> {
    const address = /^c=IN IP4 (\S+)/m.exec(offer)?.[1];
    const port = Number(/^m=audio (\d+)/m.exec(offer)?.[1]);
    if (!address || !port) throw new Error('the offer has no audio');
    const dtmf = /^a=rtpmap:(\d+) telephone-event\/8000/m.exec(offer)?.[1];
    const rtp = dgram.createSocket('udp4');
    call.rtp = rtp;
    await new Promise<void>((r) => rtp.bind(0, PEER_HOST, () => r()));
    rtp.on('message', (msg) => {
      if (call.audioAt !== undefined || msg.length < 12 || (msg[1]! & 0x7f) !== 0) return;
      const start = 12 + (msg[0]! & 0x0f) * 4 + (msg[0]! & 0x10 ? 4 + msg.readUInt16BE(12 + (msg[0]! & 0x0f) * 4 + 2) * 4 : 0);
      for (let i = start; i < msg.length; i++) {
        if (msg[i] !== SILENCE) {
          call.audioAt = performance.now();
          call.hear(call.audioAt);
          return;
        }
      }
    });
    const sdp = [
      'v=0', `o=- 1 1 IN IP4 ${PEER_HOST}`, 's=-', `c=IN IP4 ${PEER_HOST}`, 't=0 0', `m=audio ${rtp.address().port} RTP/AVP 0${dtmf ? ` ${dtmf}` : ''}`,
      'a=rtpmap:0 PCMU/8000', ...(dtmf ? [`a=rtpmap:${dtmf} telephone-event/8000`, `a=fmtp:${dtmf} 0-15`] : []), 'a=ptime:20', 'a=sendrecv', '',
    ].join('\r\n');
    // Silence from the answer on, as a phone sends (a 20 ms PCMU packet every 20 ms).
    let seq = 0;
    let ts = 0;
    const ssrc = randomBytes(4).readUInt32BE(0);
    const timer = setInterval(() => {
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header.writeUInt16BE(seq++ & 0xffff, 2);
      header.writeUInt32BE(ts >>> 0, 4);
      header.writeUInt32BE(ssrc, 8);
      ts += 160;
      rtp.send(Buffer.concat([header, Buffer.alloc(160, SILENCE)]), port, address);
    }, 20);
    call.stopSending = () => clearInterval(timer);
    await send(sdp);
  }
}

async function answerRun(ctx: { log: (msg: string) => void; servers: OutboundResult['servers'] }, calls: number, concurrency: number, warmup: number): Promise<AnswerRun> {
  const run: AnswerRun = { calls, concurrency, measured: 0, answerToAudio: quantiles([]), postToInvite: quantiles([]), postToAudio: quantiles([]), finals: {}, errors: [], error: null };
  const store = freshStore('sqlite');
  let server: TestServer | null = null;
  let callee: Callee | null = null;
  try {
    server = await startServer({ store, env: { ...SERVER_ENV, PARLEY_WARM_MODELS: 'true' } });
    const s = server;
    callee = await Callee.start();
    const c = callee;
    const agentId = await greetingAgent(s, 'Hello, this is Parley calling about your order.');
    const fromNumber = '+15550209000';
    await outboundTrunk(s, c.port, fromNumber, 50);
    ctx.log(`  ${warmup} warm-up call(s), then ${calls} call(s), ${concurrency} at a time, to the callee on ${PEER_HOST}:${c.port}`);

    const answerToAudio: number[] = [];
    const postToInvite: number[] = [];
    const postToAudio: number[] = [];
    const finals: string[] = [];
    await pool(warmup + calls, concurrency, async (i) => {
      const phoneNumber = `+1555042${String(i).padStart(4, '0')}`;
      const call = c.expect(phoneNumber);
      let callId: string | null = null;
      try {
        const postAt = performance.now();
        callId = await placeCall(s, { agentId, phoneNumber, fromNumber });
        // A cleared timeout, not sleep(): a pending 30 s timer per call kept the process alive 30 s after the last call.
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('no agent audio within 30 s')), 30_000);
        });
        const audioAt = await Promise.race([call.heard, timeout]).finally(() => clearTimeout(timer));
        if (i >= warmup) {
          answerToAudio.push(audioAt - (call.okAt as number));
          postToInvite.push((call.inviteAt as number) - postAt);
          postToAudio.push(audioAt - postAt);
        }
      } catch (err) {
        if (run.errors.length < 10) run.errors.push(`call ${i}: ${errText(err)}`);
      } finally {
        await c.hangUp(phoneNumber);
        if (callId) {
          const record = await finalRecord(s, callId, 15_000).catch((err) => ({ status: `not final (${errText(err)})`, endReason: '' }));
          if (i >= warmup) finals.push(`${record.status}/${record.endReason ?? ''}`);
        }
      }
    });
    run.measured = answerToAudio.length;
    run.answerToAudio = quantiles(answerToAudio);
    run.postToInvite = quantiles(postToInvite);
    run.postToAudio = quantiles(postToAudio);
    run.finals = tally(finals);
    if (run.measured < calls) run.error = `${calls - run.measured} of ${calls} calls got no agent audio`;
  } catch (err) {
    run.error = errText(err) + (server ? lastLines([server]) : '');
  } finally {
    await callee?.close();
    if (server) ctx.servers.push({ name: 'answer -> first audio', ...(await stopAndCollectProblems(server)) });
    await store.cleanup();
  }
  return run;
}

// ---------------------------------------------------------------------------------------------------------
// 3. Pacing with answered calls (part 1's pacingRun with ctx.holdMs)
// ---------------------------------------------------------------------------------------------------------

/** BENCH_OUT_ANSWERED: a comma list of cpsLimits (default empty: part 3 does not run). */
function answeredCpsList(): number[] {
  const raw = process.env.BENCH_OUT_ANSWERED?.trim() ?? '';
  if (!raw) return [];
  return raw.split(',').map((item) => {
    const cps = Number(item.trim());
    if (!Number.isInteger(cps) || cps < 1 || cps > 50) throw new Error(`BENCH_OUT_ANSWERED: ${JSON.stringify(item)} is not a cpsLimit from 1 to 50`);
    return cps;
  });
}

// ---------------------------------------------------------------------------------------------------------
// The phase and its report
// ---------------------------------------------------------------------------------------------------------

/** A pacing run's progress line (parts 1 and 3). */
function logPacing(log: (msg: string) => void, run: PacingRun): void {
  const { cps } = run;
  log(
    `    achieved ${fmt(run.achievedCps, 2)}/s (${fmt(run.achievedPct, 1)}%), smallest gap ${fmt(run.minGapMs, 2)} ms, p50 ${fmt(run.p50GapMs, 2)} ms, ` +
      `max ${run.maxInSecondWindow} in 1 s (${cps + 1} INVITEs span >= ${fmt(run.tightestSecondMs, 1)} ms), ${run.maxInIntervalWindow} in ${fmt(1000 / cps, 1)} ms; INVITEs per process ${run.perProcess.join('/')}` +
      `${run.peakUp !== undefined ? `; up at once >= ${run.peakUp}` : ''}${run.error ? `; ERROR ${run.error.split('\n')[0]}` : ''}`,
  );
}

/**
 * Runs the outbound measurements; every server and peer it starts is stopped before it resolves. A part that fails
 * is reported in `failure` (the others still run); it rejects only on invalid settings.
 */
export async function outboundPhase(opts: OutboundOptions = {}): Promise<OutboundResult> {
  const log = opts.log ?? ((msg: string) => process.stderr.write(`${msg}\n`));
  const cps = opts.cps ?? intEnv('BENCH_OUT_CPS', 50, 1);
  if (cps > 50) throw new Error('BENCH_OUT_CPS must be at most 50 (the bound on a trunk cpsLimit)');
  const calls = opts.calls ?? intEnv('BENCH_OUT_CALLS', 150, 2);
  const answerCalls = opts.answerCalls ?? intEnv('BENCH_OUT_ANSWER_CALLS', 20, 0);
  const answerConcurrency = opts.answerConcurrency ?? intEnv('BENCH_OUT_ANSWER_CONCURRENCY', 1, 1);
  const warmupCalls = 1;
  const answeredCps = answeredCpsList();
  const answeredCalls = process.env.BENCH_OUT_ANSWERED_CALLS ? intEnv('BENCH_OUT_ANSWERED_CALLS', 0, 2) : null;
  const configs = pacingConfigs();
  const result: OutboundResult = {
    config: { cps, calls, answerCalls, answerConcurrency, warmupCalls, serverEnv: SERVER_ENV, answered: { cps: answeredCps, calls: answeredCalls, holdMs: ANSWERED_HOLD_MS } },
    pacing: [], answer: null, answered: [], servers: [], failure: null,
  };
  const ctx: PacingContext = { cps, calls, label: 'pacing', log, servers: result.servers };

  log(`outbound pacing at cpsLimit ${cps}, ${calls} calls per run`);
  for (const [i, config] of configs.entries()) {
    const run = await pacingRun(ctx, config, i);
    result.pacing.push(run);
    logPacing(log, run);
  }
  // BENCH_OUT_ANSWER_CALLS=0 skips it (pacing runs only).
  const a = answerCalls > 0 ? await (log('outbound answer -> first agent audio'), answerRun(ctx, answerCalls, answerConcurrency, warmupCalls)) : null;
  result.answer = a;
  if (a) log(`    200 OK -> first audio p50 ${fmt(a.answerToAudio.p50, 1)} p95 ${fmt(a.answerToAudio.p95, 1)} ms; POST -> INVITE p50 ${fmt(a.postToInvite.p50, 1)} p95 ${fmt(a.postToInvite.p95, 1)} ms (${a.measured}/${a.calls} calls)`);

  for (const answeredAt of answeredCps) {
    const n = answeredCalls ?? Math.max(12, 4 * answeredAt);
    log(`outbound pacing with answered calls at cpsLimit ${answeredAt}, ${n} calls per run, each held ${ANSWERED_HOLD_MS} ms`);
    const answeredCtx: PacingContext = { ...ctx, cps: answeredAt, calls: n, holdMs: ANSWERED_HOLD_MS, label: `answered calls at cpsLimit ${answeredAt}` };
    for (const config of configs) {
      // Run indexes (they pick the numbers dialed) after part 1's, so that no two calls of the bench share a number.
      const run = await pacingRun(answeredCtx, config, configs.length + result.answered.length);
      result.answered.push(run);
      logPacing(log, run);
    }
  }

  const failures = [
    ...result.pacing.filter((r) => r.error).map((r) => `pacing with ${r.processes} process(es): ${r.error}`),
    ...(a?.error ? [`answer -> first audio: ${a.error}`] : []),
    ...result.answered.filter((r) => r.error).map((r) => `answered calls at cpsLimit ${r.cps} with ${r.processes} process(es): ${r.error}`),
  ];
  result.failure = failures.length ? failures.join('\n') : null;
  return result;
}

const paceWhere = (r: PacingRun) => `${r.store}, pace ${r.pace === 'redis' ? 'in Redis' : 'in process'}`;

/** Each run's gaps over 1000/cps + 5 ms, when they came; a line per run that had any. */
function printLongGaps(runs: PacingRun[], name: (r: PacingRun) => string): void {
  for (const r of runs) {
    if (!r.longGapsAt.length) continue;
    const list = r.longGapsAt.map((g) => `${fmt(g.gapMs)} at ${fmt(g.atMs)}`).join(', ');
    console.log(`  ${name(r)}: gaps over ${fmt(1000 / r.cps + GAP_ALLOWANCE_MS)} ms (ms, at ms after the first INVITE; the last POST answered at ${fmt(r.queuedAtMs)}): ${list}`);
  }
}

/** A pacing run's goals, MET or MISSED (n/a when it logged fewer than two INVITEs). */
function printPaceGoals(who: string, r: PacingRun): void {
  const ran = r.invites > 1;
  console.log(`  ${who}: achieved rate >= ${GOAL_RATE_PCT}% of the limit: ${fmt(r.achievedPct, 1)}% ${met(ran ? r.goals.ratePct : null)}`);
  console.log(`  ${who}: smallest gap >= ${fmt(1000 / r.cps - GAP_ALLOWANCE_MS, 0)} ms: ${fmt(r.minGapMs, 2)} ms ${met(ran ? r.goals.minGap : null)}`);
  console.log(`  ${who}: never above the limit, at most ${r.cps} INVITEs in any 1 s: ${r.maxInSecondWindow} ${met(ran ? r.goals.secondWindow : null)} (in any ${fmt(1000 / r.cps, 1)} ms: ${r.maxInIntervalWindow})`);
}

/** A pacing run's cells from 'store, pace' to 'min gap ms' (both pacing tables). */
const rateCells = (r: PacingRun): string[] => [
  r.pace === 'redis' ? `${r.store}, Redis` : `${r.store}, in process`,
  `${r.invites}/${r.calls}`,
  r.perProcess.join('/'),
  fmt(r.queueMs),
  fmt(r.achievedCps, 2),
  fmt(r.achievedPct, 1),
  fmt(r.minGapMs, 2),
];

/** Prints the phase's tables, its goals (MET/MISSED) and any server problems. */
export function printOutbound(result: OutboundResult): void {
  const { cps } = result.config;
  const interval = fmt(1000 / cps, 1);
  printTable(
    `Outbound dialer pacing at cpsLimit ${cps} (${result.config.calls} calls queued at once; sipp carrier (SCHED_FIFO when it can) answering 486 logs each INVITE's arrival; windows half-open, sliding)`,
    ['processes', 'store, pace', 'INVITEs', 'per process', 'queued in ms', 'achieved /s', '% of limit', 'min gap ms', 'p1 gap ms', 'p50 gap ms', 'max gap ms', `gaps <${fmt(1000 / cps - GAP_ALLOWANCE_MS)}/>${fmt(1000 / cps + GAP_ALLOWANCE_MS)}`, `max in ${interval} ms`, 'max in 1 s', `${cps + 1} span ms`, 'finals'],
    result.pacing.map((r) => [
      String(r.processes),
      ...rateCells(r),
      fmt(r.p1GapMs, 2),
      fmt(r.p50GapMs, 2),
      fmt(r.maxGapMs, 2),
      `${r.shortGaps}/${r.longGaps}`,
      String(r.maxInIntervalWindow),
      String(r.maxInSecondWindow),
      fmt(r.tightestSecondMs, 1),
      Object.entries(r.finals).map(([k, n]) => `${k} ${n}`).join(', '),
    ]),
    2,
  );
  printLongGaps(result.pacing, (r) => `${r.processes} process(es) (${paceWhere(r)})`);
  const a = result.answer;
  if (a) {
    printTable(
      `Outbound answer -> first agent audio (${a.calls} calls after ${result.config.warmupCalls} warm-up, ${a.concurrency} at a time; callee in the bench process), ms`,
      ['measured', '200 OK -> audio p50', 'p95', 'max', 'POST -> INVITE p50', 'p95', 'max', 'POST -> audio p50', 'p95', 'finals'],
      [[
        `${a.measured}/${a.calls}`,
        fmt(a.answerToAudio.p50, 1), fmt(a.answerToAudio.p95, 1), fmt(a.answerToAudio.max, 1),
        fmt(a.postToInvite.p50, 1), fmt(a.postToInvite.p95, 1), fmt(a.postToInvite.max, 1),
        fmt(a.postToAudio.p50, 1), fmt(a.postToAudio.p95, 1),
        Object.entries(a.finals).map(([k, n]) => `${k} ${n}`).join(', '),
      ]],
      0,
    );
    for (const e of a.errors) console.log(`  ${e.slice(0, 300)}`);
  }
  const held = result.config.answered.holdMs;
  if (result.answered.length) {
    const env = result.config.serverEnv;
    printTable(
      `Outbound dialer pacing with answered calls (sipp carrier answering 200 with PCMU and hanging up ${held} ms after the ACK, the agent on the line meanwhile; ` +
        `speech-session caps ${env.PARLEY_MAX_SPEECH_SESSIONS} per server (PARLEY_MAX_SPEECH_SESSIONS), ${env.PARLEY_MAX_SPEECH_SESSIONS_PER_KEY} per organization (PARLEY_MAX_SPEECH_SESSIONS_PER_KEY); ` +
        `long gaps: over 1000/cpsLimit + ${GAP_ALLOWANCE_MS} ms; N+1 span: the shortest span of cpsLimit + 1 INVITEs; up at once: the most INVITEs in any ${held} ms)`,
      ['cpsLimit', 'processes', 'store, pace', 'INVITEs', 'per process', 'queued in ms', 'achieved /s', '% of limit', 'min gap ms', 'p50 gap ms', 'max gap ms', 'long gaps', 'max in 1 s', 'N+1 span ms', 'up at once', 'finals'],
      result.answered.map((r) => [
        String(r.cps),
        String(r.processes),
        ...rateCells(r),
        fmt(r.p50GapMs, 2),
        fmt(r.maxGapMs, 2),
        String(r.longGaps),
        String(r.maxInSecondWindow),
        fmt(r.tightestSecondMs, 1),
        fmt(r.peakUp),
        Object.entries(r.finals).map(([k, n]) => `${k} ${n}`).join(', '),
      ]),
      2,
    );
    printLongGaps(result.answered, (r) => `cpsLimit ${r.cps}, ${r.processes} process(es) (${paceWhere(r)})`);
  }
  console.log(`\nOutbound goals (cpsLimit ${cps})`);
  for (const r of result.pacing) printPaceGoals(`${r.processes} process${r.processes > 1 ? 'es' : ''} (${paceWhere(r)})`, r);
  if (result.answered.length) console.log(`\nOutbound goals with answered calls (each held ${held} ms)`);
  for (const r of result.answered) printPaceGoals(`cpsLimit ${r.cps}, ${r.processes} process${r.processes > 1 ? 'es' : ''} (${paceWhere(r)})`, r);
  for (const s of result.servers) {
    if (!s.problems.length && s.exit === 0) continue;
    console.log(`\nserver (${s.name}): exit code on SIGTERM ${s.exit}; ${s.problems.length} log lines at warn or above / stderr`);
    for (const l of s.problems.slice(0, 10)) console.log(`  ${l.slice(0, 300)}`);
  }
  if (result.failure) console.log(`\nOUTBOUND RUN FAILED: ${result.failure}`);
}
