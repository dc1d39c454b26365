// Benchmark: phone calls over SIP/RTP against one real server (npm run bench:telephony), beside the same agent over the
// agent WebSocket in the same run. One server (SQLite in a temp dir, models warmed, SIP on 127.0.0.2, peers on
// 127.0.0.1) and one workflow_graph agent answering an inbound trunk's number: it greets, then answers every user
// turn with one spoken sentence (an `any` edge back to itself), as bench/agent-sessions.ts.
//  1. Call set-up: sipp (a real SIP user agent, its built-in `uac` scenario) places BENCH_SETUP_CALLS calls at
//     BENCH_SETUP_RATE per second to the number; each call is answered, held BENCH_SETUP_HOLD_MS and hung up. Set-up =
//     INVITE sent -> 200 OK received, from the timestamps of sipp's own message trace (microseconds).
//  2. Voice to voice, per level of concurrent calls (BENCH_LEVELS): N phone callers, then N web callers (BENCH_SIDE_ORDER).
//     With BENCH_SIDE_ORDER=mixed, a level of N >= 2 runs N phone calls alone (held, RTP timing), then N calls at once,
//     half phone and half web, started alternately (the pairs speak the same sentences at about the same moments), so
//     both sides meet the same CPU contention and the comparison is not a matter of which side ran first.
//     A phone caller is this process speaking SIP over UDP (INVITE with a PCMU offer, ACK, BYE) and RTP: it sends a
//     20 ms PCMU packet every 20 ms on a drift-corrected clock (silence, or a sentence synthesised once up front at
//     8 kHz through POST /waves/v1/tts and trimmed at -45 dBFS), waits for the agent's greeting, then BENCH_TURNS times
//     says a sentence and waits for the answer to end (700 ms of the server's G.711 silence after agent audio).
//     A web caller does the same over WSS /atoms/v1/agent/connect (test/support/agent-client.ts) with the same 8 kHz
//     sentences by default (BENCH_WS_RATE=8000: like for like, so the difference is the SIP/RTP leg); BENCH_WS_RATE=16000
//     gives it wideband speech as a browser would send (the difference then includes narrowband endpointing).
//     Voice to voice = the caller's speech ends (final packet/chunk sent + the speech in it) -> the first agent audio
//     (an RTP packet that is not G.711 silence; an output_audio.delta). The engine's e2e per turn comes from the call
//     records (turnMetrics) for both.
//     RTP send timing: |interval between consecutive packets from the server - 20 ms| at the caller's socket (so it
//     includes this process's own scheduling on the shared machine), p99 and max over every call of the level.
//     At level 1 every caller takes BENCH_TURNS_AT_1 turns (16), at other levels BENCH_TURNS. Both sides also get a
//     paired figure: the median over (caller i, turn k) of SIP minus WS, the same sentence on both sides.
//     A level is held when every phone call completed its turns and the server sent no mid-turn silence for lack of
//     agent audio (parley_rtp_output_underrun_seconds_total) and skipped no send-clock tick
//     (parley_rtp_clock_skipped_ticks_total): output never behind real time. Levels rise until one is not held.
//  3. Outbound calls (bench/lib/outbound.ts; BENCH_OUTBOUND=0 skips it, `npm run bench:outbound` runs it alone): dialer
//     pacing at cpsLimit 50 with one server and with two sharing PostgreSQL and Redis, and outbound answer -> first
//     agent audio.
// Env: BENCH_SETUP_CALLS (60), BENCH_SETUP_RATE (4), BENCH_SETUP_HOLD_MS (500), BENCH_LEVELS (1,4,8,12,16),
// BENCH_TURNS (4), BENCH_TURNS_AT_1 (16), BENCH_WARMUP_TURNS (1: turns of the warm-up phone and web call; 0: the greeting only), BENCH_SIDE_ORDER (sip, ws, alternate or mixed: which side runs first at each level, or both at once; sip), BENCH_PAUSE_MS (1000), BENCH_STAGGER_MS (2000), BENCH_WS_RATE (8000 or 16000; 8000),
// BENCH_CALLER_NICE (-10: the callers' nice value once the
// servers run, where allowed, so the bench's own scheduling stays out of the RTP timing; 0 leaves it), BENCH_CALLER_SLICE (1:
// the callers' thread takes the media thread's 0.1 ms time slice, as PARLEY_MEDIA_PRIORITY=latency; 0 leaves it), BENCH_HOST_NOISE_S
// (10: seconds of a bare 20 ms timer, at nice 0 with the servers idle, before the first level and after the last: the
// host's own floor for the RTP timing, which a shared VM can put above the 5 ms goal; 0 skips it), BENCH_VCPU_STALLS (1: during
// each level's phone calls alone, where tracefs is writable (root), count the host's vCPU stalls, bench/lib/vcpu-stalls.ts,
// and give the caller's deviation p99 over the intervals no stall touched beside the whole one; 0 skips it).
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { linearToMuLaw } from '../engine/audio/g711.js';
import type { TurnMetrics } from '../engine/agent/session.js';
import { AgentCaller, connectUrl, endedCall, speech } from '../test/support/agent-client.js';
import { freshStore, startServer, type StoreEnv, type TestServer } from '../test/support/server.js';
import { STACK_HOST, killPeers, startSipp } from '../test/support/sip-peers.js';
import { intEnv, stopAndCollectProblems, UNCAPPED_SESSIONS } from './lib/harness.js';
import { printTable, procCpuSeconds, quantile, resultPath } from './lib/report.js';
import { CALLER_SENTENCES, closeCaller, createBenchAgent, isAssistantFinal, speechEndSamples } from './lib/voice-agent.js';
import { outboundPhase, printOutbound } from './lib/outbound.js';
import { diffHistograms, histogramQuantile, parseHistograms, type Histogram } from './lib/prom.js';
import { describeHostNoise, measureHostNoise, type HostNoise } from './lib/host-noise.js';
import { MEDIA_SLICE_NS, setThreadSlice } from '../telephony/media/priority.js';
import { STALL_GAP_MS, stallTouched, VcpuStallProbe, type VcpuStalls } from './lib/vcpu-stalls.js';
import { NUMBER, PhoneCaller, TURN_END_SILENCE_MS, type CallResult } from './lib/phone-caller.js';

const A = '/atoms/v1';
const GOAL_SETUP_P50_MS = 50;
const GOAL_V2V_DELTA_MS = 50;
const GOAL_DEVIATION_P99_MS = 5;
const SERVER_ENV = {
  ...UNCAPPED_SESSIONS,
  PARLEY_WARM_MODELS: 'true',
  PARLEY_RATE_LIMIT_PER_MINUTE: '1000000',
  PARLEY_INFERENCE_QUEUE: '64',
  PARLEY_SIP_HOST: STACK_HOST,
  PARLEY_RTP_PORTS: '10000-19999',
};

const SETUP_CALLS = intEnv('BENCH_SETUP_CALLS', 60, 1);
const SETUP_RATE = intEnv('BENCH_SETUP_RATE', 4, 1);
const SETUP_HOLD_MS = intEnv('BENCH_SETUP_HOLD_MS', 500, 0);
const LEVELS = (process.env.BENCH_LEVELS ?? '1,4,8,12,16').split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
const TURNS = intEnv('BENCH_TURNS', 4, 1);
/** Turns at level 1: one caller gives few samples, and the p50 of 4 turns moved by 40-70 ms between runs. */
const TURNS_AT_1 = intEnv('BENCH_TURNS_AT_1', 16, 1);
/** Turns of the warm-up phone call and web call (not reported); 0 warms the call path with the greeting alone. */
const WARMUP_TURNS = intEnv('BENCH_WARMUP_TURNS', 1, 0);
/** Seconds of the host's timer-noise probe (bench/lib/host-noise.ts) before the first level and after the last; 0 skips it. */
const NOISE_S = intEnv('BENCH_HOST_NOISE_S', 10, 0);
const STALLS = process.env.BENCH_VCPU_STALLS !== '0';
/** The nice value this process (the callers, phone and web) asks for once the servers run. */
const CALLER_NICE = intEnv('BENCH_CALLER_NICE', -10, -20);
const CALLER_SLICE = intEnv('BENCH_CALLER_SLICE', 1, 0) !== 0;
/** Web callers send 20 ms chunks, as the phone callers send 20 ms packets (like for like). */
const WS_CHUNK_MS = 20;
const PAUSE_MS = intEnv('BENCH_PAUSE_MS', 1000, 0);
const STAGGER_MS = intEnv('BENCH_STAGGER_MS', 2000, 0);
const WS_RATE = intEnv('BENCH_WS_RATE', 8000, 8000);
if (WS_RATE !== 8000 && WS_RATE !== 16000) throw new Error('BENCH_WS_RATE must be 8000 or 16000');
/**
 * Which side runs first at each level: `sip` (phone calls, then web calls), `ws`, or `alternate` (SIP first at the
 * first level, WS first at the second, ...). Past the machine's capacity a side's figures depend on what ran just before
 * it; running both orders tells that from the leg's own cost.
 */
const SIDE_ORDER = process.env.BENCH_SIDE_ORDER ?? 'sip';
if (!['sip', 'ws', 'alternate', 'mixed'].includes(SIDE_ORDER)) throw new Error('BENCH_SIDE_ORDER must be sip, ws, alternate or mixed');


const started = performance.now();
const log = (msg: string) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${msg}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const r1 = (x: number) => Math.round(x * 10) / 10;
const fmt = (x: number | null | undefined, digits = 0) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const describeStalls = (v: SipSide['vcpuStalls']) =>
  'unavailable' in v
    ? `vCPU stalls: not read (${v.unavailable})`
    : `vCPU stalls (a busy CPU without a timer interrupt for > ${STALL_GAP_MS} ms: the hypervisor held it): ${v.over6} over ${v.spanS} s (${v.over10} > 10 ms, ${v.over20} > 20 ms, max ${fmt(v.maxMs, 1)} ms, ${v.lostMs} ms lost); ` +
      `they touched ${fmt(v.touchedPct, 1)}% of the caller's intervals; deviation p99 over the others ${fmt(v.deviationP99OutsideMs, 1)} ms; ` +
      `the kernel's memory-reclaim threads (kdamond, kswapd) ran ${v.reclaim.cpuMs} ms, ${v.reclaim.runsOver10Ms} runs > 10 ms (max ${fmt(v.reclaim.maxRunMs, 1)} ms)` +
      (v.overwritten ? `; ${v.overwritten} trace events overwritten, the counts are short` : '');
const nums = (xs: readonly (number | null | undefined)[]) => xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
const q = (xs: readonly (number | null | undefined)[], p: number) => r1(quantile(nums(xs), p));


// ---------------------------------------------------------------------------------------------------------
// 1. Set-up time from sipp's trace
// ---------------------------------------------------------------------------------------------------------

/** INVITE sent -> first 200 to it received, per call, in ms, from a sipp -trace_msg file. */
function setupTimes(trace: string): { ms: number[]; statuses: Record<string, number> } {
  const invites = new Map<string, number>();
  const answered = new Map<string, number>();
  const statuses: Record<string, number> = {};
  const finals = new Set<string>();
  const blocks = trace.split(/^-{10,} (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\s*$/m);
  for (let i = 1; i + 1 < blocks.length; i += 2) {
    const at = Date.parse(`${(blocks[i] as string).slice(0, 23).replace(' ', 'T')}Z`) + Number(`0.${(blocks[i] as string).slice(23)}`);
    const body = (blocks[i + 1] as string).replace(/\r/g, '');
    const sent = /message sent/.test(body);
    const start = body.split('\n').find((l) => /^(INVITE |SIP\/2\.0 )/.test(l)) ?? '';
    const callId = /^Call-ID:\s*(.+)$/im.exec(body)?.[1]?.trim() ?? '';
    const cseq = /^CSeq:\s*(.+)$/im.exec(body)?.[1]?.trim() ?? '';
    if (sent && start.startsWith('INVITE ') && !invites.has(callId)) invites.set(callId, at);
    const status = /^SIP\/2\.0 (\d{3})/.exec(start)?.[1];
    if (!sent && status && cseq.endsWith('INVITE') && Number(status) >= 200 && !finals.has(callId)) {
      finals.add(callId);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status === '200') answered.set(callId, at);
    }
  }
  const ms = [...answered].map(([id, at]) => at - (invites.get(id) ?? NaN)).filter(Number.isFinite);
  return { ms: ms.map(r1), statuses };
}

async function setupPhase(server: TestServer): Promise<{ calls: number; p50: number; p95: number; max: number; statuses: Record<string, number>; sippExit: number | null }> {
  const timeoutS = Math.ceil(SETUP_CALLS / SETUP_RATE + SETUP_HOLD_MS / 1000) + 30;
  const run = await startSipp({
    scenario: 'uac',
    remote: `${STACK_HOST}:${server.sipPort}`,
    service: NUMBER.slice(1),
    calls: SETUP_CALLS,
    pauseMs: SETUP_HOLD_MS,
    timeoutS,
    extra: ['-r', String(SETUP_RATE), '-rp', '1000', '-l', String(SETUP_CALLS)],
  });
  const result = await run.done;
  const { ms, statuses } = setupTimes(result.messages);
  return { calls: ms.length, p50: q(ms, 0.5), p95: q(ms, 0.95), max: ms.length ? Math.max(...ms) : NaN, statuses, sippExit: result.code };
}

// ---------------------------------------------------------------------------------------------------------
// 2. Phone callers: SIP over UDP and RTP (PCMU) from this process
// ---------------------------------------------------------------------------------------------------------

async function phoneCall(server: TestServer, sentences: Buffer[], index: number, delayMs: number, turns = TURNS): Promise<CallResult> {
  await sleep(delayMs);
  const caller = new PhoneCaller();
  try {
    await caller.dial(server.sipPort);
    await caller.firstVoiceAfter(0);
    await caller.turnEnd();
    for (let k = 0; k < turns; k++) {
      const endedAt = await caller.say(sentences[(index + k) % sentences.length] as Buffer);
      const heardAt = await caller.firstVoiceAfter(endedAt);
      caller.result.v2vMs.push(r1(heardAt - endedAt));
      await caller.turnEnd();
      caller.result.turnsDone++;
      if (k < turns - 1) await sleep(PAUSE_MS);
    }
  } catch (err) {
    caller.result.error = err instanceof Error ? err.message : String(err);
  } finally {
    await caller.hangUp();
  }
  return caller.result;
}

// ---------------------------------------------------------------------------------------------------------
// Web callers: the agent WebSocket at 16 kHz
// ---------------------------------------------------------------------------------------------------------


/**
 * Waits as a phone caller does before its next turn: until the agent's audio since frame `from` (its first delta at
 * `firstAt`), played in real time, has ended and TURN_END_SILENCE_MS has passed. Without it web callers spoke sooner
 * after each answer than phone callers (the assistant transcript comes before its audio has played), so with both
 * sides at once (BENCH_SIDE_ORDER=mixed) the web callers' turns drifted ahead and their recognitions queued first.
 */
async function heardOut(c: AgentCaller, from: number, firstAt: number): Promise<void> {
  const playedMs = (c.audioBetween(from).length / 2 / WS_RATE) * 1000;
  const wait = firstAt + playedMs + TURN_END_SILENCE_MS - performance.now();
  if (wait > 0) await sleep(wait);
}

async function webCall(server: TestServer, agentId: string, sentences: Buffer[], index: number, delayMs: number, turns = TURNS): Promise<CallResult> {
  await sleep(delayMs);
  const out: CallResult = { setupMs: null, v2vMs: [], turnsDone: 0, deviations: [], arrivals: [], callId: null, metrics: [] };
  const t0 = performance.now();
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(WS_RATE) }), WS_RATE, {}, WS_CHUNK_MS);
  c.ws.on('error', () => undefined);
  try {
    await c.opened;
    const created = await c.nextFrame((f) => f.type === 'session.created', 0, 15_000, 'session.created');
    out.setupMs = r1(created.at - t0);
    out.callId = created.call_id as string;
    c.startMic();
    const opening = await c.nextFrame((f) => f.type === 'output_audio.delta', 0, 60_000, 'opening audio');
    await c.nextFrame(isAssistantFinal, 0, 60_000, 'opening');
    await heardOut(c, 0, opening.at);
    for (let k = 0; k < turns; k++) {
      const mark = c.frames.length;
      await c.say(sentences[(index + k) % sentences.length] as Buffer);
      const endedAt = c.lastSpeechEndAt;
      const audio = await c.nextFrame((f) => f.type === 'output_audio.delta', mark, 60_000, `reply ${k + 1}`);
      out.v2vMs.push(r1(audio.at - endedAt));
      await c.nextFrame(isAssistantFinal, mark, 60_000, `reply ${k + 1} end`);
      await heardOut(c, mark, audio.at);
      out.turnsDone++;
      if (k < turns - 1) await sleep(PAUSE_MS);
    }
  } catch (err) {
    out.error = err instanceof Error ? err.message : String(err);
  } finally {
    await closeCaller(c);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Levels
// ---------------------------------------------------------------------------------------------------------

type MediaCounters = { underrunS: number; skippedTicks: number; sendDeviation: Map<string, Histogram> };

/** The server's counters of the phone leg (summed over directions), from GET /metrics. */
async function mediaCounters(server: TestServer): Promise<MediaCounters> {
  const text = (await server.request('GET', '/metrics', { key: null })).text;
  const sum = (name: string) => [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
  return {
    underrunS: sum('parley_rtp_output_underrun_seconds_total'),
    skippedTicks: sum('parley_rtp_clock_skipped_ticks_total'),
    // The server's own send timing (one series: no label splits it, so both directions are summed).
    sendDeviation: parseHistograms(text, 'parley_rtp_send_interval_deviation_seconds', ''),
  };
}

/** Turn metrics of the phone calls recorded since `seen` (call ids already read are skipped). */
async function phoneRecords(server: TestServer, seen: Set<string>): Promise<TurnMetrics[]> {
  const list = await server.request('GET', `${A}/conversation?callTypes=telephony_inbound&limit=100`);
  const ids = ((list.body?.data?.logs ?? []) as { callId: string }[]).map((l) => l.callId).filter((id) => !seen.has(id));
  const out: TurnMetrics[] = [];
  for (const id of ids) {
    seen.add(id);
    const call = await endedCall(server, id);
    out.push(...((call.turnMetrics ?? []) as TurnMetrics[]));
  }
  return out;
}

/** The median over (caller i, turn k), both sides having that turn, of SIP v2v minus WS v2v: the same sentence. */
function pairedDelta(row: LevelRow): number {
  const d: number[] = [];
  sipCompared(row).v2vByCall.forEach((sip, i) => sip.forEach((x, k) => {
    const w = row.ws.v2vByCall[i]?.[k];
    if (typeof w === 'number') d.push(x - w);
  }));
  return q(d, 0.5);
}

interface Side {
  calls: number;
  failed: number;
  turns: number;
  setupP50Ms: number;
  v2vP50Ms: number;
  v2vP95Ms: number;
  e2eP50Ms: number;
  e2eP95Ms: number;
  /** p50 of each part of the engine's e2e (turnMetrics): where a difference between the sides comes from. */
  parts: { eouDelay: number; recognition: number; firstPhrase: number; ttsFirstByte: number; overhead: number };
  serverCpuPct: number;
  errors: string[];
  /** Per caller, v2v per turn (caller i's turn k speaks the same sentence on both sides). */
  v2vByCall: number[][];
}

/** Share of intervals whose deviation is above `ms` (a complementary CDF: the tail the p99 figure comes from). */
type Ccdf = { ms: number; above: number }[];
/** Thresholds of the caller's deviation CCDF, ms. */
const CCDF_MS = [0.25, 0.5, 1, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50];

type SipSide = Side & {
  /** The caller's |interval - 20 ms| over the level's phone calls, as a CCDF at CCDF_MS (for plots). */
  deviationCcdf: Ccdf;
  /** The same at the server's send, from its histogram's bucket bounds (parley_rtp_send_interval_deviation_seconds). */
  sendDeviationCcdf: Ccdf;
  deviationP99Ms: number;
  deviationMaxMs: number;
  sendDeviationP99Ms: number;
  underrunS: number;
  skippedTicks: number;
  held: boolean;
  /** The host's vCPU stalls during these calls (bench/lib/vcpu-stalls.ts; BENCH_VCPU_STALLS), or why they were not read. */
  vcpuStalls: (Omit<VcpuStalls, 'windows'> & { touchedPct: number; deviationP99OutsideMs: number }) | { unavailable: string };
};

interface LevelRow {
  level: number;
  /** Which side ran first at this level (BENCH_SIDE_ORDER), or `mixed`: both at once. */
  first: 'sip' | 'ws' | 'mixed';
  /** The N phone calls alone: whether the level is held, and the RTP timing. */
  sip: SipSide;
  ws: Side;
  /** BENCH_SIDE_ORDER=mixed: the phone half of the N calls run at once with `ws`; compared with it instead of `sip`. */
  sipMixed?: Side;
}

/** The side the web calls of a row are compared with. */
const sipCompared = (row: LevelRow): Side => row.sipMixed ?? row.sip;

/**
 * n calls, caller i starting after delay(i) (by default spread evenly over BENCH_STAGGER_MS). Caller i speaks sentence
 * i + k at its turn k.
 */
async function side(
  server: TestServer,
  n: number,
  turns: number,
  run: (i: number, delay: number) => Promise<CallResult>,
  records: () => Promise<TurnMetrics[]>,
  delay: (i: number) => number = (i) => (n > 1 ? Math.round((i * STAGGER_MS) / n) : 0),
): Promise<{ side: Side; results: CallResult[] }> {
  const cpu0 = procCpuSeconds(server.proc.pid);
  const t0 = performance.now();
  const results = await Promise.all(Array.from({ length: n }, (_, i) => run(i, delay(i))));
  const serverCpuPct = r1(((procCpuSeconds(server.proc.pid) - cpu0) / ((performance.now() - t0) / 1000)) * 100);
  const metrics = await records();
  const failed = results.filter((r) => r.error || r.turnsDone < turns);
  return {
    results,
    side: {
      calls: n,
      failed: failed.length,
      turns: results.reduce((a, r) => a + r.turnsDone, 0),
      setupP50Ms: q(results.map((r) => r.setupMs), 0.5),
      v2vP50Ms: q(results.flatMap((r) => r.v2vMs), 0.5),
      v2vP95Ms: q(results.flatMap((r) => r.v2vMs), 0.95),
      e2eP50Ms: q(metrics.map((m) => m.e2eMs), 0.5),
      e2eP95Ms: q(metrics.map((m) => m.e2eMs), 0.95),
      parts: {
        eouDelay: q(metrics.map((m) => m.eouDelayMs), 0.5),
        recognition: q(metrics.map((m) => m.recognitionMs), 0.5),
        firstPhrase: q(metrics.map((m) => m.brainFirstPhraseMs), 0.5),
        ttsFirstByte: q(metrics.map((m) => m.ttsFirstByteMs), 0.5),
        overhead: q(metrics.map((m) => m.engineOverheadMs), 0.5),
      },
      serverCpuPct,
      errors: failed.map((r) => r.error ?? `${r.turnsDone}/${turns} turns`),
      v2vByCall: results.map((r) => r.v2vMs),
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------

/** The server under test. */
interface Target {
  store: StoreEnv;
  server: TestServer | null;
  /** Media counters at the end of the previous level. */
  counters: MediaCounters;
}

const targets: Target[] = [];
let callerNiceBefore: number | null = null;
let callerSliceSet = false;
let failure: string | null = null;
let setup: Awaited<ReturnType<typeof setupPhase>> | null = null;
const rows: LevelRow[] = [];
const serverEnds: Array<{ sending: string; exit: number | null; problems: string[] }> = [];
let stoppedBecause: string | null = null;
/** The host's timer noise with the servers idle, before the first level and after the last. */
const hostNoise: { before: HostNoise | null; after: HostNoise | null } = { before: null, after: null };

/** N phone calls against one target: the side's figures with the media counters of that server over the level. */
async function phoneSide(t: Target, n: number, turns: number, speech: Buffer[], seen: Set<string>): Promise<SipSide> {
  const s = t.server as TestServer;
  const probe = STALLS ? VcpuStallProbe.start() : 'BENCH_VCPU_STALLS=0';
  let phone: Awaited<ReturnType<typeof side>>;
  let stalls: VcpuStalls | null = null;
  try {
    phone = await side(s, n, turns, (i, d) => phoneCall(s, speech, i, d, turns), () => phoneRecords(s, seen));
  } finally {
    if (typeof probe !== 'string') stalls = await probe.stop();
  }
  const c1 = await mediaCounters(s);
  const deviations = phone.results.flatMap((r) => r.deviations);
  const underrunS = r1((c1.underrunS - t.counters.underrunS) * 1000) / 1000;
  const skippedTicks = c1.skippedTicks - t.counters.skippedTicks;
  const sendHist = diffHistograms(c1.sendDeviation, t.counters.sendDeviation).get('');
  const sendDeviationP99Ms = r1(histogramQuantile(sendHist, 0.99) * 1000);
  const deviationCcdf: Ccdf = CCDF_MS.map((ms) => ({ ms, above: deviations.length ? Math.round((deviations.filter((d) => d > ms).length / deviations.length) * 1e6) / 1e6 : NaN }));
  const sendDeviationCcdf: Ccdf = sendHist
    ? sendHist.buckets.filter((b) => Number.isFinite(b.le)).map((b) => ({ ms: Math.round(b.le * 1e6) / 1000, above: Math.round((1 - b.count / sendHist.count) * 1e6) / 1e6 }))
    : [];
  t.counters = c1;
  const held = phone.side.failed === 0 && underrunS === 0 && skippedTicks === 0;
  let vcpuStalls: SipSide['vcpuStalls'] = { unavailable: typeof probe === 'string' ? probe : 'not read' };
  if (stalls) {
    // The caller's intervals a stall touched, and the deviation over the others: what the server does when the host runs it.
    const outside: number[] = [];
    let touched = 0;
    for (const r of phone.results) {
      r.deviations.forEach((d, i) => {
        if (stallTouched(stalls.windows, r.arrivals[i]!, r.arrivals[i + 1]!)) touched++;
        else outside.push(d);
      });
    }
    const { windows: _w, ...counts } = stalls;
    vcpuStalls = { ...counts, touchedPct: r1((touched / Math.max(1, deviations.length)) * 100), deviationP99OutsideMs: q(outside, 0.99) };
  }
  return { ...phone.side, deviationCcdf, sendDeviationCcdf, deviationP99Ms: q(deviations, 0.99), deviationMaxMs: r1(deviations.length ? Math.max(...deviations) : NaN), sendDeviationP99Ms, underrunS, skippedTicks, held, vcpuStalls };
}

try {
  let agentId = '';
  {
    const t: Target = { store: freshStore('sqlite'), server: null, counters: { underrunS: 0, skippedTicks: 0, sendDeviation: new Map() } };
    targets.push(t);
    t.server = await startServer({ store: t.store, env: { ...SERVER_ENV, PARLEY_RTP_PORTS: '10000-19999' } });
    const s = t.server;
    if (!s.sipPort) throw new Error('the server did not start its SIP leg');
    log(`server up (HTTP ${s.port}, SIP ${STACK_HOST}:${s.sipPort}); agent, trunk`);
    const id = await createBenchAgent(s, 'telephony bench');
    agentId = id;
    const trunk = await s.request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'Bench carrier', numbers: [NUMBER] } });
    if (trunk.status !== 201) throw new Error(`POST /sip-trunk/inbound -> ${trunk.status}: ${trunk.text}`);
    const answers = await s.request('POST', `${A}/agent/${id}/answers`, { body: { sourceKind: 'sipTrunk', sourceId: trunk.body.data._id } });
    if (answers.status !== 201) throw new Error(`POST /agent/{id}/answers -> ${answers.status}: ${answers.text}`);
  }
  const primary = targets[0] as Target;
  const s = primary.server as TestServer;

  log('caller speech');
  const phoneSpeech: Buffer[] = [];
  const webSpeech: Buffer[] = [];
  for (const text of CALLER_SENTENCES) {
    const narrow = await speech(s, text, 8000);
    const ulaw = Buffer.alloc(speechEndSamples(narrow, 8000));
    for (let i = 0; i < ulaw.length; i++) ulaw[i] = linearToMuLaw(narrow.readInt16LE(i * 2));
    phoneSpeech.push(ulaw);
    const web = WS_RATE === 8000 ? narrow : await speech(s, text, WS_RATE);
    webSpeech.push(web.subarray(0, speechEndSamples(web, WS_RATE) * 2));
  }

  log(`set-up: sipp places ${SETUP_CALLS} calls at ${SETUP_RATE}/s, each held ${SETUP_HOLD_MS} ms`);
  setup = await setupPhase(s);
  log(`  INVITE -> 200 p50 ${fmt(setup.p50, 1)} ms, p95 ${fmt(setup.p95, 1)} ms over ${setup.calls} calls (finals ${JSON.stringify(setup.statuses)})`);

  // The callers are the instrument (their clock and the arrival times of the server's packets): like sipp in the
  // outbound phase, they run ahead of the server for the CPU where allowed, so that what a busy machine does to their
  // own event loop does not count as the server's timing. Set once the servers run (a child inherits the value).
  try {
    callerNiceBefore = os.getPriority(0);
    os.setPriority(0, CALLER_NICE);
  } catch {
    /* not allowed (no CAP_SYS_NICE): the callers keep the default */
  }
  // And the callers' thread asks for the short time slice the server's media thread has (PARLEY_MEDIA_PRIORITY=latency),
  // so a packet's arrival is read when it comes rather than when another thread's slice ends.
  const sliceRefused = CALLER_SLICE ? setThreadSlice(MEDIA_SLICE_NS) : 'BENCH_CALLER_SLICE=0';
  callerSliceSet = sliceRefused === null;
  log(`callers' nice value ${os.getPriority(0)} (asked ${CALLER_NICE}); time slice ${callerSliceSet ? `${MEDIA_SLICE_NS / 1000} us` : `default (${sliceRefused})`}`);
  log(`warm-up: one phone call and one web call, ${WARMUP_TURNS} turn(s) each (not reported)`);
  const seen = new Set<string>();
  for (const t of targets) {
    const w = await phoneCall(t.server as TestServer, phoneSpeech, 0, 0, WARMUP_TURNS);
    if (w.error) throw new Error(`warm-up phone call failed: ${w.error}`);
    await phoneRecords(t.server as TestServer, seen);
    t.counters = await mediaCounters(t.server as TestServer);
  }
  const warmWeb = await webCall(s, agentId, webSpeech, 0, 0, WARMUP_TURNS);
  if (warmWeb.error) throw new Error(`warm-up web call failed: ${warmWeb.error}`);
  if (NOISE_S > 0) {
    hostNoise.before = await measureHostNoise(NOISE_S);
    log(`host timer noise, servers idle: ${describeHostNoise(hostNoise.before)}`);
  }

  for (const n of LEVELS) {
    const turns = n === 1 ? TURNS_AT_1 : TURNS;
    const mixed = SIDE_ORDER === 'mixed' && n > 1;
    const webFirst = SIDE_ORDER === 'ws' || (SIDE_ORDER === 'alternate' && LEVELS.indexOf(n) % 2 === 1);
    const phoneText = `${n} phone call(s) x ${turns} turns`;
    const webCount = mixed ? Math.floor(n / 2) : n;
    log(
      `level ${n}: ${
        mixed ? `${phoneText}, then ${n - webCount} phone and ${webCount} web calls at once` : webFirst ? `${n} web call(s), then ${phoneText}` : `${phoneText}, then ${n} web call(s)`
      }`,
    );
    const sips: SipSide[] = [];
    const phones = async () => {
      for (const t of targets) {
        const sip = await phoneSide(t, n, turns, phoneSpeech, seen);
        sips.push(sip);
        log(
          `  SIP v2v p50 ${fmt(sip.v2vP50Ms)} p95 ${fmt(sip.v2vP95Ms)} ms; RTP deviation p99 ${fmt(sip.deviationP99Ms, 1)} ms (at the send ${fmt(sip.sendDeviationP99Ms, 1)}); ` +
            `underrun ${sip.underrunS} s, skipped ticks ${sip.skippedTicks}: ${sip.held ? 'held' : 'NOT held'}`,
        );
        log(`    ${describeStalls(sip.vcpuStalls)}`);
      }
    };
    const webIds: string[] = [];
    // Mixed: phone caller j starts at slot 2j of the spread and web caller j at slot 2j + 1 (the same sentences).
    const slot = (k: number) => Math.round((k * STAGGER_MS) / n);
    const webs = () =>
      side(
        s,
        webCount,
        turns,
        async (i, d) => {
          const r = await webCall(s, agentId, webSpeech, i, d, turns);
          if (r.callId) webIds.push(r.callId);
          return r;
        },
        async () => (await Promise.all(webIds.map((id) => endedCall(s, id)))).flatMap((c) => (c.turnMetrics ?? []) as TurnMetrics[]),
        mixed ? (i) => slot(2 * i + 1) : undefined,
      );
    let web: Awaited<ReturnType<typeof webs>>;
    let sipMixed: Side | undefined;
    if (mixed) {
      await phones();
      const [together, w] = await Promise.all([
        side(s, n - webCount, turns, (i, d) => phoneCall(s, phoneSpeech, i, d, turns), () => phoneRecords(s, seen), (i) => slot(2 * i)),
        webs(),
      ]);
      primary.counters = await mediaCounters(s);
      sipMixed = together.side;
      web = w;
      log(`  mixed: SIP v2v p50 ${fmt(sipMixed.v2vP50Ms)} p95 ${fmt(sipMixed.v2vP95Ms)} ms`);
    } else if (webFirst) {
      web = await webs();
      await phones();
    } else {
      await phones();
      web = await webs();
    }
    const row: LevelRow = { level: n, first: mixed ? 'mixed' : webFirst ? 'ws' : 'sip', sip: sips[0] as SipSide, ws: web.side, sipMixed };
    rows.push(row);
    log(`  WS v2v p50 ${fmt(row.ws.v2vP50Ms)} p95 ${fmt(row.ws.v2vP95Ms)} ms; paired SIP-WS p50 ${fmt(pairedDelta(row))} ms`);
    if (!row.sip.held) {
      stoppedBecause = `level ${n} not held`;
      break;
    }
  }
  if (NOISE_S > 0) {
    await sleep(2000); // the last calls' BYEs and records
    hostNoise.after = await measureHostNoise(NOISE_S);
    log(`host timer noise, servers idle: ${describeHostNoise(hostNoise.after)}`);
  }
} catch (err) {
  failure = err instanceof Error ? err.message : String(err);
  for (const t of targets) if (t.server) failure += `\nserver exit code ${t.server.exitCode}; last log lines:\n${t.server.logs.slice(-15).join('\n')}`;
} finally {
  // The outbound phase's servers and peers must not inherit the callers' nice value or time slice.
  if (callerNiceBefore !== null) os.setPriority(0, callerNiceBefore);
  if (callerSliceSet) setThreadSlice(0);
  killPeers();
  for (const t of targets) {
    if (t.server) serverEnds.push({ sending: describeSending(t.server.logs), ...(await stopAndCollectProblems(t.server)) });
    await t.store.cleanup();
  }
}

const outbound = failure || process.env.BENCH_OUTBOUND === '0' ? null : await outboundPhase({ log });

// ---------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------
console.log(`\nPhone calls over SIP/RTP beside web calls at ${WS_RATE} Hz (node ${process.version}, ${os.cpus().length} CPUs, ${TURNS} turns per caller (${TURNS_AT_1} at 1 call), web chunks ${WS_CHUNK_MS} ms, pause ${PAUSE_MS} ms, start spread ${STAGGER_MS} ms)`);
if (setup) console.log(`\nCall set-up (sipp uac, ${SETUP_CALLS} calls at ${SETUP_RATE}/s): INVITE -> 200 OK p50 ${fmt(setup.p50, 1)} ms, p95 ${fmt(setup.p95, 1)} ms, max ${fmt(setup.max, 1)} ms over ${setup.calls} answered calls; finals ${JSON.stringify(setup.statuses)}`);
printTable(
  'Voice to voice (caller stops speaking -> first agent audio at the caller), ms; engine e2e from the call records; SIP media quality (of the phone calls alone); with BENCH_SIDE_ORDER=mixed the SIP and WS columns are the half-and-half run, "SIP alone" the phone calls alone',
  ['calls', 'turns', 'SIP v2v p50', 'SIP v2v p95', 'WS v2v p50', 'WS v2v p95', 'SIP-WS p50', 'paired SIP-WS p50', 'SIP e2e p50', 'WS e2e p50', 'SIP alone v2v p50/p95', 'SIP setup p50', 'RTP dev p99', 'RTP dev max', 'send dev p99', 'underrun s', 'skipped', 'srv CPU SIP', 'srv CPU WS', 'failed SIP/WS', 'held'],
  rows.map((r) => [
    String(r.level),
    String(sipCompared(r).turns),
    fmt(sipCompared(r).v2vP50Ms),
    fmt(sipCompared(r).v2vP95Ms),
    fmt(r.ws.v2vP50Ms),
    fmt(r.ws.v2vP95Ms),
    fmt(sipCompared(r).v2vP50Ms - r.ws.v2vP50Ms),
    fmt(pairedDelta(r)),
    fmt(sipCompared(r).e2eP50Ms),
    fmt(r.ws.e2eP50Ms),
    r.sipMixed ? `${fmt(r.sip.v2vP50Ms)} / ${fmt(r.sip.v2vP95Ms)}` : '(same)',
    fmt(r.sip.setupP50Ms, 1),
    fmt(r.sip.deviationP99Ms, 1),
    fmt(r.sip.deviationMaxMs, 1),
    fmt(r.sip.sendDeviationP99Ms, 1),
    String(r.sip.underrunS),
    String(r.sip.skippedTicks),
    `${fmt(sipCompared(r).serverCpuPct)}%`,
    `${fmt(r.ws.serverCpuPct)}%`,
    `${sipCompared(r).failed}/${r.ws.failed}`,
    r.sip.held ? 'yes' : 'NO',
  ]),
  0,
);
printTable(
  'Where the engine e2e goes, p50 per part from the call records (ms), SIP / WS; "v2v-e2e" is the transport both ways (the caller\'s last speech to the engine\'s end of speech, the engine\'s first audio to the caller)',
  ['calls', 'first', 'eou delay', 'recognition', 'first phrase', 'TTS first', 'overhead', 'e2e', 'v2v-e2e'],
  rows.map((r) => {
    const both = (a: number, b: number) => `${fmt(a)} / ${fmt(b)}`;
    const sip = sipCompared(r);
    return [
      String(r.level),
      r.first.toUpperCase(),
      both(sip.parts.eouDelay, r.ws.parts.eouDelay),
      both(sip.parts.recognition, r.ws.parts.recognition),
      both(sip.parts.firstPhrase, r.ws.parts.firstPhrase),
      both(sip.parts.ttsFirstByte, r.ws.parts.ttsFirstByte),
      both(sip.parts.overhead, r.ws.parts.overhead),
      both(sip.e2eP50Ms, r.ws.e2eP50Ms),
      both(sip.v2vP50Ms - sip.e2eP50Ms, r.ws.v2vP50Ms - r.ws.e2eP50Ms),
    ];
  }),
  0,
);
for (const r of rows) for (const e of [...r.sip.errors.map((x) => `SIP: ${x}`), ...(r.sipMixed?.errors ?? []).map((x) => `SIP (mixed): ${x}`), ...r.ws.errors.map((x) => `WS: ${x}`)].slice(0, 4)) console.log(`  ${r.level} calls: ${e.slice(0, 300)}`);
if (stoppedBecause) console.log(`  stopped: ${stoppedBecause}`);

const held = rows.filter((r) => r.sip.held && rows.every((x) => x.level > r.level || x.sip.held));
const maxHeld = held.length ? (held[held.length - 1] as LevelRow) : null;
const one = rows.find((r) => r.level === 1) ?? null;
const met = (x: boolean | null) => (x === null ? 'n/a' : x ? 'MET' : 'MISSED');
const goals = {
  setupP50Ms: setup?.p50 ?? null,
  setupMet: setup ? setup.p50 <= GOAL_SETUP_P50_MS : null,
  v2vDeltaAt1Ms: one ? r1(sipCompared(one).v2vP50Ms - one.ws.v2vP50Ms) : null,
  v2vDeltaAtMaxMs: maxHeld ? r1(sipCompared(maxHeld).v2vP50Ms - maxHeld.ws.v2vP50Ms) : null,
  v2vPairedDeltaAt1Ms: one ? pairedDelta(one) : null,
  v2vPairedDeltaAtMaxMs: maxHeld ? pairedDelta(maxHeld) : null,
  v2vMet:
    one && maxHeld
      ? sipCompared(one).v2vP50Ms - one.ws.v2vP50Ms <= GOAL_V2V_DELTA_MS && sipCompared(maxHeld).v2vP50Ms - maxHeld.ws.v2vP50Ms <= GOAL_V2V_DELTA_MS
      : null,
  deviationP99AtMaxMs: maxHeld?.sip.deviationP99Ms ?? null,
  sendDeviationP99AtMaxMs: maxHeld?.sip.sendDeviationP99Ms ?? null,
  deviationMet: maxHeld ? maxHeld.sip.deviationP99Ms <= GOAL_DEVIATION_P99_MS : null,
  maxCallsHeld: maxHeld?.level ?? 0,
  firstLevelNotHeld: rows.find((r) => !r.sip.held)?.level ?? null,
};
console.log('\nSummary against the goals');
console.log(`  set-up p50 <= ${GOAL_SETUP_P50_MS} ms: ${fmt(goals.setupP50Ms, 1)} ms ${met(goals.setupMet)}`);
console.log(`  SIP voice-to-voice within ${GOAL_V2V_DELTA_MS} ms of the WebSocket (p50): 1 call ${fmt(goals.v2vDeltaAt1Ms)} ms, ${goals.maxCallsHeld} calls ${fmt(goals.v2vDeltaAtMaxMs)} ms ${met(goals.v2vMet)} (paired: ${fmt(goals.v2vPairedDeltaAt1Ms)} and ${fmt(goals.v2vPairedDeltaAtMaxMs)} ms)`);
console.log(
  `  RTP inter-packet deviation p99 <= ${GOAL_DEVIATION_P99_MS} ms at ${goals.maxCallsHeld} calls: ${fmt(goals.deviationP99AtMaxMs, 1)} ms at the caller ${met(goals.deviationMet)} ` +
    `(at the server's send: ${fmt(goals.sendDeviationP99AtMaxMs, 1)} ms)`,
);
if (maxHeld) console.log(`  at ${maxHeld.level} calls, ${describeStalls(maxHeld.sip.vcpuStalls)}`);
for (const [when, n] of [['before the levels', hostNoise.before], ['after them', hostNoise.after]] as const) {
  if (n) console.log(`  the host's own floor ${when} (a bare 20 ms timer at nice 0, servers idle): ${describeHostNoise(n)}`);
}
console.log(`  concurrent calls held with output never behind real time: ${goals.maxCallsHeld}${goals.firstLevelNotHeld ? ` (level ${goals.firstLevelNotHeld} was not)` : ' (highest level run)'}`);
for (const end of serverEnds) {
  console.log(`\nserver (${end.sending}): exit code on SIGTERM ${end.exit}; ${end.problems.length} log lines at warn or above / stderr`);
  for (const l of end.problems.slice(0, 10)) console.log(`  ${l.slice(0, 300)}`);
}
if (outbound) {
  console.log('\nOutbound calls');
  printOutbound(outbound);
}
if (failure) console.log(`\nRUN FAILED: ${failure}`);

const outFile = resultPath('telephony');
writeFileSync(
  outFile,
  `${JSON.stringify(
    {
      benchmark: 'telephony',
      node: process.version,
      cpus: os.cpus().length,
      timestamp: new Date().toISOString(),
      config: { sideOrder: SIDE_ORDER, wsRate: WS_RATE, warmupTurns: WARMUP_TURNS, setupCalls: SETUP_CALLS, setupRate: SETUP_RATE, setupHoldMs: SETUP_HOLD_MS, levels: LEVELS, turns: TURNS, turnsAt1: TURNS_AT_1, wsChunkMs: WS_CHUNK_MS, pauseMs: PAUSE_MS, staggerMs: STAGGER_MS, serverEnv: SERVER_ENV },
      goals,
      hostNoise,
      setup,
      levels: rows,
      servers: serverEnds,
      outbound,
      failure,
    },
    null,
    2,
  )}\n`,
);
console.log(`\nwrote ${path.relative(process.cwd(), outFile)}`);
if (failure || outbound?.failure) process.exitCode = 1;

/** How the server sends RTP, from its start-up log: the media thread's scheduling and the send pool (PARLEY_RTP_SENDERS). */
function describeSending(logs: string[]): string {
  const find = (prefix: string) => {
    for (const chunk of logs) {
      for (const line of chunk.split('\n')) {
        if (!line.includes(`"msg":"${prefix}`)) continue;
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          return null;
        }
      }
    }
    return null;
  };
  const priority = find('media thread');
  const pool = find('RTP send pool');
  const sched = priority ? `scheduling ${String(priority.priority)}` : 'scheduling not logged';
  if (!pool) return `${sched}, send pool not logged`;
  if (!pool.senders) return `${sched}, no send pool (the media thread sends)${pool.reason ? `: ${String(pool.reason)}` : ''}`;
  const cpus = Array.isArray(pool.cpus) ? ` on CPUs ${pool.cpus.join(',')}` : '';
  return `${sched}, send pool of ${String(pool.senders)} sender thread(s)${cpus}${pool.leadMs !== undefined ? `, built ${String(pool.leadMs)} ms ahead` : ''}${pool.reason ? ` (${String(pool.reason)})` : ''}`;
}
