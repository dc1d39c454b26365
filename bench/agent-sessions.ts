// Benchmark: simulated callers over the agent WebSocket at real-time pace, 1 to N at once (npm run bench:agents).
// One real server (SQLite in a temp dir, models warmed) and one workflow_graph agent whose single node answers every
// user turn with one spoken sentence (an `any` edge back to itself; idle hang-up pushed out of the way).
//  1. Voice (webcall, 16 kHz PCM16 both ways): each caller connects with the API key and agent_id, streams its
//     microphone continuously at real-time pace (40 ms chunks, silence between turns; test/support/agent-client.ts),
//     waits for the opening, then BENCH_TURNS times says a short sentence (synthesised once up front through
//     POST /waves/v1/tts, voice kal16), waits for the agent's turn to finish (assistant `transcript`), pauses
//     BENCH_PAUSE_MS; then session.close, and reads the call record's `turnMetrics` (the engine's own per-turn split:
//     eouDelayMs, recognitionMs, brainFirstTokenMs, brainFirstPhraseMs, ttsFirstByteMs, e2eMs, engineOverheadMs).
//     Callers of a level start spread over BENCH_STAGGER_MS. Also measured by the client: "client e2e" = last chunk
//     of the caller's speech sent (sentences trimmed to their last frame above -45 dBFS) -> first output_audio.delta.
//     Output pacing, per agent turn (opening included): playback is assumed to start at the turn's first delta and run
//     in real time; an underrun is a delta arriving when the audio received before it is less than the wall time since
//     the first delta minus BENCH_JITTER_MS (200), i.e. a player with that much jitter buffer would have starved.
//     A level keeps up when every session completed, underrun turns < 1% of agent turns (so none with < 100 turns)
//     and the engine's e2e p95 <= BENCH_E2E_P95_LIMIT_MS. Levels rise until one fails (or the time budget is spent).
//  2. Chat (mode=chat: text in via input_text.send, text out; the brain only, no recognition or synthesis): the same
//     callers with a ~1 s pause between turns; reply latency = input_text.send sent -> assistant `transcript` arrived.
//     A level keeps up when all sessions completed and reply p95 <= BENCH_CHAT_P95_LIMIT_MS (100).
// Engine overhead (server's TurnMetrics) = e2e - (eou delay + brain first phrase + first phrase synthesis): what the
// engine adds beyond waiting for end of utterance and for the models. Recognition is speculative (it runs during the
// end-of-utterance wait), so it is inside eou delay, not added to it.
// Server CPU is the server process's utime+stime over the level's wall time (100% = one core of the 2); client CPU
// is this process's (the callers share the machine with the server); machine CPU is the whole machine's busy share
// over the level from /proc/stat (100% = every CPU busy; busy = all jiffies - idle - iowait), and "all up" the same
// over the 100 ms ticks from the last caller's start to the first caller's end (the level's whole load, without the
// start spread and the ragged end).
// Inference queue per level and job kind (live, speculative, interim, file, synthesis): jobs, wait for a slot and
// run time p50/p95, from the server's parley_inference_{wait,run}_seconds histograms scraped before and after the
// level and differenced (quantiles interpolated inside the buckets, so to within a bucket's width, ~1.5x apart), and
// the share of inference time spent waiting. A level is reported bound by compute when the machine CPU while all its
// sessions were up is >= 80% (the issue's line), by compute in bursts when under that but >= 90% busy in the ticks
// when jobs waited, by waiting when under that and >= 25% of inference time (wait + run) was waiting for a slot.
// Averages hide bursts (callers that start within BENCH_STAGGER_MS of each other speak and wait at about the same
// times), so the queue is also sampled every 100 ms (the waiting-jobs gauge on /metrics and /proc/stat over the tick):
// "CPU while waiting" is the machine's CPU over the ticks that ended with jobs in line, beside the other ticks.
//     After the first level that fails, up to BENCH_REFINE (2) levels between it and the last good one are tried
//     (bisection), budget permitting.
// Env: BENCH_LEVELS (voice, default 1,2,4,6,8,12,16,24,32,48,64), BENCH_TURNS (per voice caller, 4),
// BENCH_CHAT_LEVELS (default 1,2,4,8,16,32,64,128; "" skips), BENCH_CHAT_TURNS (5), BENCH_PAUSE_MS (1000),
// BENCH_STAGGER_MS (2000), BENCH_JITTER_MS (200), BENCH_E2E_P95_LIMIT_MS (1500), BENCH_CHAT_P95_LIMIT_MS (100),
// BENCH_BUDGET_S (420: no new voice level starts after this many seconds), BENCH_REFINE (2), BENCH_ALL_LEVELS (1: run
// every level even after one falls behind, no bisection), BENCH_CAPPED (1: the server keeps its default session caps,
// PARLEY_MAX_SPEECH_SESSIONS and the rest, instead of the bench lifting them; a caller refused with 503 before the
// upgrade is counted as refused, not failed, and a level is judged on the sessions admitted: issue 15 point 4).
import { intEnv, stopAndCollectProblems, UNCAPPED_SESSIONS } from './lib/harness.js';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { AgentCaller, connectUrl, endedCall, speech, type Frame } from '../test/support/agent-client.js';
import { ROOT, freshStore, startServer, type StoreEnv, type TestServer } from '../test/support/server.js';
import { printTable, resultPath, quantile, procCpuSeconds } from './lib/report.js';
import { diffHistograms, histogramQuantile, machineCpuMeter, parseCounters, parseHistograms, queueSampler, shortWindowMeter, type Histogram, type QueueSample } from './lib/prom.js';
import { INFERENCE_KINDS } from '../engine/models/queue.js';
import { CALLER_SENTENCES, GRAPH, OPENING, closeCaller, createBenchAgent, isAssistantFinal, speechEndSamples } from './lib/voice-agent.js';
import type { TurnMetrics } from '../engine/agent/session.js';

const A = '/atoms/v1';
const RATE = 16000;
const GOAL_OVERHEAD_P95_MS = 20;
const GOAL_E2E_P50_MS = 600;
const CAPPED = process.env.BENCH_CAPPED === '1';
const ALL_LEVELS = process.env.BENCH_ALL_LEVELS === '1';
// Capped: the server-wide caps stay at their defaults; the per-key ones are lifted (every caller here uses one key).
const CAPS = CAPPED ? { PARLEY_MAX_SPEECH_SESSIONS_PER_KEY: UNCAPPED_SESSIONS.PARLEY_MAX_SPEECH_SESSIONS_PER_KEY, PARLEY_MAX_CHAT_SESSIONS_PER_KEY: UNCAPPED_SESSIONS.PARLEY_MAX_CHAT_SESSIONS_PER_KEY } : UNCAPPED_SESSIONS;
const SERVER_ENV = { ...CAPS, PARLEY_WARM_MODELS: 'true', PARLEY_RATE_LIMIT_PER_MINUTE: '1000000', PARLEY_INFERENCE_QUEUE: '64' };

function levelsEnv(name: string, dflt: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined) return dflt;
  const out = raw.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  for (const n of out) if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: comma-separated integers >= 1`);
  return [...new Set(out)].sort((a, b) => a - b);
}

const LEVELS = levelsEnv('BENCH_LEVELS', [1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64]);
const CHAT_LEVELS = levelsEnv('BENCH_CHAT_LEVELS', [1, 2, 4, 8, 16, 32, 64, 128]);
const TURNS = intEnv('BENCH_TURNS', 4, 1);
const CHAT_TURNS = intEnv('BENCH_CHAT_TURNS', 5, 1);
const PAUSE_MS = intEnv('BENCH_PAUSE_MS', 1000, 0);
const STAGGER_MS = intEnv('BENCH_STAGGER_MS', 2000, 0);
const JITTER_MS = intEnv('BENCH_JITTER_MS', 200, 0);
const E2E_P95_LIMIT_MS = intEnv('BENCH_E2E_P95_LIMIT_MS', 1500, 1);
const CHAT_P95_LIMIT_MS = intEnv('BENCH_CHAT_P95_LIMIT_MS', 100, 1);
const BUDGET_S = intEnv('BENCH_BUDGET_S', 420, 1);
const REFINE = intEnv('BENCH_REFINE', 2, 0);


const started = performance.now();
const elapsedS = () => (performance.now() - started) / 1000;
const log = (msg: string) => process.stderr.write(`[${elapsedS().toFixed(0).padStart(4)} s] ${msg}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------------------
// Statistics and printing (as bench/stt-api.ts)
// ---------------------------------------------------------------------------------------------------------
const r1 = (x: number) => Math.round(x * 10) / 10;
/** Nearest-rank quantile (as bench/publish-latency.ts); NaN for no values. */
const nums = (xs: readonly (number | null | undefined)[]) => xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
const fmt = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
/** A quantile read from the inference histograms: inside the first bucket (0-1 ms) it is only known to be under 1 ms. */
const bucketMs = (x: number) => (x <= 1 ? '<1' : fmt(x, x < 10 ? 1 : 0));


function cpuMeter(server: TestServer) {
  const t0 = performance.now();
  const s0 = procCpuSeconds(server.proc.pid);
  const c0 = process.cpuUsage();
  const machine = machineCpuMeter();
  return () => {
    const wall = (performance.now() - t0) / 1000;
    const c = process.cpuUsage(c0);
    return {
      serverPct: r1(((procCpuSeconds(server.proc.pid) - s0) / wall) * 100),
      clientPct: r1(((c.user + c.system) / 1e6 / wall) * 100),
      machinePct: r1(machine()),
    };
  };
}

/** One inference job kind over a level: jobs, and wait / run quantiles (ms) read from the histogram buckets. */
interface InferenceKindRow {
  jobs: number;
  waitP50Ms: number;
  waitP95Ms: number;
  runP50Ms: number;
  runP95Ms: number;
  waitTotalS: number;
  runTotalS: number;
  /** Jobs dropped while waiting (a newer result made them useless) and refused (queue full). */
  dropped: number;
  refused: number;
}

async function inferenceScrape(server: TestServer) {
  const text = (await server.request('GET', '/metrics', { key: null })).text;
  return {
    wait: parseHistograms(text, 'parley_inference_wait_seconds', 'kind'),
    run: parseHistograms(text, 'parley_inference_run_seconds', 'kind'),
    dropped: parseCounters(text, 'parley_inference_dropped_total', 'kind'),
    refused: parseCounters(text, 'parley_inference_refused_total', 'kind'),
  };
}

/** Starts measuring the server's inference queue; the returned function gives what ran since, per job kind. */
async function inferenceMeter(server: TestServer): Promise<() => Promise<Record<string, InferenceKindRow>>> {
  const before = await inferenceScrape(server);
  return async () => {
    const after = await inferenceScrape(server);
    const wait = diffHistograms(after.wait, before.wait);
    const run = diffHistograms(after.run, before.run);
    const out: Record<string, InferenceKindRow> = {};
    const ms = (h: Histogram | undefined, q: number) => r1(histogramQuantile(h, q) * 1000);
    for (const kind of [...INFERENCE_KINDS, ...[...run.keys()].filter((k) => !(INFERENCE_KINDS as readonly string[]).includes(k))]) {
      const w = wait.get(kind);
      const r = run.get(kind);
      const dropped = (after.dropped.get(kind) ?? 0) - (before.dropped.get(kind) ?? 0);
      const refused = (after.refused.get(kind) ?? 0) - (before.refused.get(kind) ?? 0);
      if (!r && !dropped && !refused) continue;
      out[kind] = {
        jobs: r?.count ?? 0,
        waitP50Ms: ms(w, 0.5),
        waitP95Ms: ms(w, 0.95),
        runP50Ms: ms(r, 0.5),
        runP95Ms: ms(r, 0.95),
        waitTotalS: Math.round((w?.sum ?? 0) * 1000) / 1000,
        runTotalS: Math.round((r?.sum ?? 0) * 1000) / 1000,
        dropped,
        refused,
      };
    }
    return out;
  };
}

/** Share of the level's inference time (wait + run, all kinds) spent waiting for a slot, %. */
function waitSharePct(inference: Record<string, InferenceKindRow>): number {
  const rows = Object.values(inference);
  const wait = rows.reduce((a, x) => a + x.waitTotalS, 0);
  const run = rows.reduce((a, x) => a + x.runTotalS, 0);
  return wait + run > 0 ? r1((wait / (wait + run)) * 100) : NaN;
}

// ---------------------------------------------------------------------------------------------------------
// Caller plumbing
// ---------------------------------------------------------------------------------------------------------

/** Decoded byte length of a base64 string. */
const b64Bytes = (s: string) => Math.floor((s.length * 3) / 4) - (s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0);



// ---------------------------------------------------------------------------------------------------------
// Voice sessions
// ---------------------------------------------------------------------------------------------------------
interface AgentTurnPacing {
  kind: 'opening' | 'reply';
  audioMs: number;
  /** First to last output_audio.delta arrival. */
  spanMs: number;
  /** Largest (wall time since first delta) - (audio received before this delta), ms; > JITTER_MS = underrun. */
  maxDeficitMs: number;
  underrun: boolean;
  deltas: number;
}

/** Per-turn metrics as the call record stores them (the engine's TurnMetrics). */
type ServerTurnMetrics = TurnMetrics;

interface VoiceSession {
  index: number;
  callId: string | null;
  turnsDone: number;
  clientE2eMs: number[];
  pacing: AgentTurnPacing[];
  metrics: ServerTurnMetrics[];
  interruptions: number;
  userTurns: number;
  errorFrames: string[];
  error?: string;
  /** Refused before the upgrade with 503 (the server's session cap; BENCH_CAPPED). */
  refused?: boolean;
}

/** Splits the frames into agent turns (agent_start_talking .. agent_stop_talking) and checks their pacing. */
function pacingOf(frames: Frame[]): AgentTurnPacing[] {
  const out: AgentTurnPacing[] = [];
  let cur: { at: number; bytes: number }[] | null = null;
  const flush = () => {
    if (!cur || !cur.length) return;
    const t0 = (cur[0] as { at: number }).at;
    let received = 0;
    let maxDeficit = -Infinity;
    for (const d of cur) {
      const deficit = d.at - t0 - (received / 2 / RATE) * 1000;
      if (deficit > maxDeficit) maxDeficit = deficit;
      received += d.bytes;
    }
    out.push({
      kind: out.length === 0 ? 'opening' : 'reply',
      audioMs: r1((received / 2 / RATE) * 1000),
      spanMs: r1((cur[cur.length - 1] as { at: number }).at - t0),
      maxDeficitMs: r1(maxDeficit),
      underrun: maxDeficit > JITTER_MS,
      deltas: cur.length,
    });
  };
  for (const f of frames) {
    if (f.type === 'agent_start_talking') {
      flush();
      cur = [];
    } else if (f.type === 'output_audio.delta') {
      (cur ??= []).push({ at: f.at, bytes: b64Bytes(f.audio as string) });
    } else if (f.type === 'agent_stop_talking') {
      flush();
      cur = null;
    }
  }
  flush();
  return out;
}

interface Speech {
  text: string;
  pcm: Buffer;
  audioMs: number;
}

async function voiceCaller(server: TestServer, agentId: string, speechSet: Speech[], index: number, turns: number, delayMs: number): Promise<VoiceSession> {
  const out: VoiceSession = { index, callId: null, turnsDone: 0, clientE2eMs: [], pacing: [], metrics: [], interruptions: 0, userTurns: 0, errorFrames: [] };
  await sleep(delayMs);
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(RATE) }), RATE);
  c.ws.on('error', () => undefined);
  try {
    await c.opened;
    const created = await c.nextFrame((f) => f.type === 'session.created', 0, 15_000, 'session.created');
    out.callId = created.call_id as string;
    c.startMic();
    await c.nextFrame(isAssistantFinal, 0, 60_000, 'opening');
    for (let k = 0; k < turns; k++) {
      const s = speechSet[(index + k) % speechSet.length] as Speech;
      const mark = c.frames.length;
      await c.say(s.pcm);
      const spokenAt = performance.now();
      await c.nextFrame(isAssistantFinal, mark, 60_000, `reply ${k + 1}`);
      const firstAudio = c.frames.slice(mark).find((f) => f.type === 'output_audio.delta');
      if (firstAudio) out.clientE2eMs.push(r1(firstAudio.at - spokenAt));
      out.turnsDone++;
      if (k < turns - 1) await sleep(PAUSE_MS);
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (CAPPED && out.callId === null && /HTTP 503/.test(message)) out.refused = true;
    else out.error = message;
  } finally {
    await closeCaller(c);
  }
  out.pacing = pacingOf(c.frames);
  out.interruptions = c.of('interruption').length;
  out.userTurns = c.of('transcript', (f) => f.role === 'user').length;
  out.errorFrames = c.of('error').map((f) => `${f.code}: ${f.message}`);
  if (out.callId) {
    try {
      const call = await endedCall(server, out.callId);
      out.metrics = (call.turnMetrics ?? []) as ServerTurnMetrics[];
    } catch (err) {
      out.error ??= err instanceof Error ? err.message : String(err);
    }
  }
  return out;
}

interface VoiceRow {
  sessions: number;
  turns: number;
  failedSessions: number;
  /** Callers refused with 503 at the server's session cap (BENCH_CAPPED). */
  refusedSessions: number;
  e2eP50Ms: number;
  e2eP95Ms: number;
  clientE2eP50Ms: number;
  clientE2eP95Ms: number;
  eouP50Ms: number;
  recognitionP50Ms: number;
  recognitionP95Ms: number;
  brainFirstTokenP50Ms: number;
  brainFirstPhraseP50Ms: number;
  ttsFirstByteP50Ms: number;
  ttsFirstByteP95Ms: number;
  overheadP50Ms: number;
  overheadP95Ms: number;
  overheadMaxMs: number;
  agentTurns: number;
  underrunTurns: number;
  maxDeficitMs: number;
  /** Median of (span of the deltas / audio duration) over agent turns: ~1 when paced in real time. */
  spanOverAudioP50: number;
  interruptions: number;
  extraUserTurns: number;
  serverCpuPct: number;
  clientCpuPct: number;
  machineCpuPct: number;
  /** Machine CPU while all the level's sessions were up (from the last one's start to the first one's end), %. */
  allUpCpuPct: number;
  /** Per inference job kind over the level (kinds with no job left out). */
  inference: Record<string, InferenceKindRow>;
  inferenceWaitSharePct: number;
  /** Live recognitions that ran with the short encoder window (PARLEY_STT_SHORT_WINDOW), %. */
  shortWindowPct: number;
  /** The 100 ms queue samples: machine CPU while jobs waited for a slot, and otherwise. */
  queue: QueueSample;
  wallS: number;
  e2eP50OverC1: number | null;
  keepsUp: boolean;
  why: string[];
  errors: string[];
}

async function voiceLevel(server: TestServer, agentId: string, speechSet: Speech[], n: number, turns: number): Promise<{ row: VoiceRow; sessions: VoiceSession[] }> {
  const inferenceSince = await inferenceMeter(server);
  const windowsSince = await shortWindowMeter(async () => (await server.request('GET', '/metrics', { key: null })).text);
  const cpu = cpuMeter(server);
  const sampled = queueSampler(async () => (await server.request('GET', '/metrics', { key: null })).text);
  const t0 = performance.now();
  const delays = Array.from({ length: n }, (_, i) => (n > 1 ? Math.round((i * STAGGER_MS) / n) : 0));
  // All n sessions are up from the last one's start until the first one ends: the level's full load.
  let firstEnd = Infinity;
  const sessions = await Promise.all(
    delays.map((d, i) =>
      voiceCaller(server, agentId, speechSet, i, turns, d).then((s) => {
        firstEnd = Math.min(firstEnd, performance.now());
        return s;
      }),
    ),
  );
  const wallS = r1((performance.now() - t0) / 1000);
  const { serverPct, clientPct, machinePct } = cpu();
  const queue = await sampled();
  const allUpCpuPct = r1(queue.cpuBetween(t0 + Math.max(...delays), firstEnd));
  const inference = await inferenceSince();
  const shortWindowPct = r1(await windowsSince());
  const m = sessions.flatMap((s) => s.metrics);
  const pace = sessions.flatMap((s) => s.pacing);
  const failed = sessions.filter((s) => s.error);
  const refused = sessions.filter((s) => s.refused).length;
  const e2e = nums(m.map((x) => x.e2eMs));
  const overhead = nums(m.map((x) => x.engineOverheadMs));
  const underrunTurns = pace.filter((p) => p.underrun).length;
  const row: VoiceRow = {
    sessions: n,
    turns: m.length,
    failedSessions: failed.length,
    refusedSessions: refused,
    e2eP50Ms: r1(quantile(e2e, 0.5)),
    e2eP95Ms: r1(quantile(e2e, 0.95)),
    clientE2eP50Ms: r1(quantile(sessions.flatMap((s) => s.clientE2eMs), 0.5)),
    clientE2eP95Ms: r1(quantile(sessions.flatMap((s) => s.clientE2eMs), 0.95)),
    eouP50Ms: r1(quantile(nums(m.map((x) => x.eouDelayMs)), 0.5)),
    recognitionP50Ms: r1(quantile(nums(m.map((x) => x.recognitionMs)), 0.5)),
    recognitionP95Ms: r1(quantile(nums(m.map((x) => x.recognitionMs)), 0.95)),
    brainFirstTokenP50Ms: r1(quantile(nums(m.map((x) => x.brainFirstTokenMs)), 0.5)),
    brainFirstPhraseP50Ms: r1(quantile(nums(m.map((x) => x.brainFirstPhraseMs)), 0.5)),
    ttsFirstByteP50Ms: r1(quantile(nums(m.map((x) => x.ttsFirstByteMs)), 0.5)),
    ttsFirstByteP95Ms: r1(quantile(nums(m.map((x) => x.ttsFirstByteMs)), 0.95)),
    overheadP50Ms: r1(quantile(overhead, 0.5)),
    overheadP95Ms: r1(quantile(overhead, 0.95)),
    overheadMaxMs: r1(overhead.length ? Math.max(...overhead) : NaN),
    agentTurns: pace.length,
    underrunTurns,
    maxDeficitMs: r1(pace.length ? Math.max(...pace.map((p) => p.maxDeficitMs)) : NaN),
    spanOverAudioP50: Math.round(quantile(pace.filter((p) => p.audioMs > 0).map((p) => p.spanMs / p.audioMs), 0.5) * 1000) / 1000,
    interruptions: sessions.reduce((a, s) => a + s.interruptions, 0),
    extraUserTurns: sessions.reduce((a, s) => a + Math.max(0, s.userTurns - s.turnsDone), 0),
    serverCpuPct: serverPct,
    clientCpuPct: clientPct,
    machineCpuPct: machinePct,
    allUpCpuPct,
    inference,
    inferenceWaitSharePct: waitSharePct(inference),
    shortWindowPct,
    queue,
    wallS,
    e2eP50OverC1: null,
    keepsUp: false,
    why: [],
    errors: [...new Set(failed.map((s) => `#${s.index}: ${s.error}`).concat(sessions.flatMap((s) => s.errorFrames.map((e) => `#${s.index} error frame ${e}`))))].slice(0, 10),
  };
  if (failed.length) row.why.push(`${failed.length} session(s) failed`);
  if (row.turns < (n - refused) * turns) row.why.push(`${(n - refused) * turns - row.turns} turn(s) without metrics`);
  if (underrunTurns > 0 && underrunTurns / Math.max(1, pace.length) >= 0.01) row.why.push(`${underrunTurns} underrun turn(s)`);
  if (!(row.e2eP95Ms <= E2E_P95_LIMIT_MS)) row.why.push(`e2e p95 ${fmt(row.e2eP95Ms)} > ${E2E_P95_LIMIT_MS} ms`);
  row.keepsUp = row.why.length === 0;
  return { row, sessions };
}

// ---------------------------------------------------------------------------------------------------------
// Chat sessions
// ---------------------------------------------------------------------------------------------------------
interface ChatSession {
  index: number;
  callId: string | null;
  replyMs: number[];
  error?: string;
}

async function chatCaller(server: TestServer, agentId: string, index: number, turns: number, delayMs: number): Promise<ChatSession> {
  const out: ChatSession = { index, callId: null, replyMs: [] };
  await sleep(delayMs);
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat' }), RATE);
  c.ws.on('error', () => undefined);
  try {
    await c.opened;
    const created = await c.nextFrame((f) => f.type === 'session.created', 0, 15_000, 'session.created');
    out.callId = created.call_id as string;
    await c.nextFrame(isAssistantFinal, 0, 15_000, 'opening');
    for (let k = 0; k < turns; k++) {
      // ~1 s apart, spread so the callers do not send in lock-step.
      await sleep(PAUSE_MS * (0.5 + (((index * 7 + k * 13) % 11) / 10)));
      const mark = c.frames.length;
      const t0 = performance.now();
      c.send({ type: 'input_text.send', text: CALLER_SENTENCES[(index + k) % CALLER_SENTENCES.length] });
      const reply = await c.nextFrame(isAssistantFinal, mark, 15_000, `chat reply ${k + 1}`);
      out.replyMs.push(Math.round((reply.at - t0) * 100) / 100);
    }
  } catch (err) {
    out.error = err instanceof Error ? err.message : String(err);
  } finally {
    await closeCaller(c);
  }
  if (out.callId) {
    try {
      await endedCall(server, out.callId);
    } catch (err) {
      out.error ??= err instanceof Error ? err.message : String(err);
    }
  }
  return out;
}

interface ChatRow {
  sessions: number;
  turns: number;
  failedSessions: number;
  replyP50Ms: number;
  replyP95Ms: number;
  replyMaxMs: number;
  serverCpuPct: number;
  clientCpuPct: number;
  machineCpuPct: number;
  wallS: number;
  keepsUp: boolean;
  errors: string[];
}

async function chatLevel(server: TestServer, agentId: string, n: number): Promise<ChatRow> {
  const cpu = cpuMeter(server);
  const t0 = performance.now();
  const sessions = await Promise.all(Array.from({ length: n }, (_, i) => chatCaller(server, agentId, i, CHAT_TURNS, Math.round((i * 1000) / n))));
  const wallS = r1((performance.now() - t0) / 1000);
  const { serverPct, clientPct, machinePct } = cpu();
  const ms = sessions.flatMap((s) => s.replyMs);
  const failed = sessions.filter((s) => s.error);
  const p95 = quantile(ms, 0.95);
  return {
    sessions: n,
    turns: ms.length,
    failedSessions: failed.length,
    replyP50Ms: Math.round(quantile(ms, 0.5) * 100) / 100,
    replyP95Ms: Math.round(p95 * 100) / 100,
    replyMaxMs: Math.round((ms.length ? Math.max(...ms) : NaN) * 100) / 100,
    serverCpuPct: serverPct,
    clientCpuPct: clientPct,
    machineCpuPct: machinePct,
    wallS,
    keepsUp: failed.length === 0 && ms.length === n * CHAT_TURNS && p95 <= CHAT_P95_LIMIT_MS,
    errors: [...new Set(failed.map((s) => `#${s.index}: ${s.error}`))].slice(0, 10),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------------------
let store: StoreEnv | null = null;
let server: TestServer | null = null;
let failure: string | null = null;
let startupMs = NaN;
let serverExit: number | null = null;
let serverProblems: string[] = [];
const voiceRows: VoiceRow[] = [];
const voiceDetail: Record<string, VoiceSession[]> = {};
const chatRows: ChatRow[] = [];
let speechSet: Speech[] = [];
let voiceStop = '';
let warmup: VoiceRow | null = null;

try {
  store = freshStore('sqlite');
  const t = performance.now();
  server = await startServer({ store, env: SERVER_ENV });
  startupMs = performance.now() - t;
  const s = server;
  log(`server up in ${fmt(startupMs)} ms (port ${s.port}); synthesising ${CALLER_SENTENCES.length} caller sentences`);

  const agentId = await createBenchAgent(s, 'agent-sessions bench');

  for (const text of CALLER_SENTENCES) {
    const pcm = await speech(s, text, RATE);
    const trimmed = pcm.subarray(0, speechEndSamples(pcm, RATE) * 2);
    speechSet.push({ text, pcm: trimmed, audioMs: r1((trimmed.length / 2 / RATE) * 1000) });
  }

  if (LEVELS.length) {
    log('warm-up: one voice session, one turn (not reported)');
    warmup = (await voiceLevel(s, agentId, speechSet, 1, 1)).row;
    if (warmup.failedSessions) throw new Error(`warm-up session failed: ${warmup.errors.join('; ')}`);
  }

  const runVoice = async (n: number): Promise<VoiceRow> => {
    log(`voice: ${n} session(s) x ${TURNS} turns...`);
    const { row, sessions } = await voiceLevel(s, agentId, speechSet, n, TURNS);
    voiceRows.push(row);
    voiceDetail[String(n)] = sessions;
    log(`  ${row.refusedSessions ? `${row.refusedSessions} refused (503), ` : ''}e2e p50 ${fmt(row.e2eP50Ms)} p95 ${fmt(row.e2eP95Ms)} ms, overhead p95 ${fmt(row.overheadP95Ms, 1)} ms, underruns ${row.underrunTurns}/${row.agentTurns}, server CPU ${fmt(row.serverCpuPct)}%, machine CPU ${fmt(row.machineCpuPct)}% (${fmt(row.allUpCpuPct)}% while all were up), inference waiting ${fmt(row.inferenceWaitSharePct)}% (machine CPU ${fmt(row.queue.cpuWhileWaitingPct)}% while jobs wait), short window ${fmt(row.shortWindowPct)}% of live recognitions: ${row.keepsUp ? 'keeps up' : `falls behind (${row.why.join('; ')})`}`);
    return row;
  };
  const overBudget = (n: number) => {
    if (elapsedS() <= BUDGET_S) return false;
    voiceStop = `time budget (${BUDGET_S} s) spent before level ${n}`;
    log(voiceStop);
    return true;
  };
  let good = 0;
  let bad = 0;
  for (const n of LEVELS) {
    if (overBudget(n)) break;
    if ((await runVoice(n)).keepsUp) good = n;
    else if (ALL_LEVELS) bad ||= n;
    else {
      bad = n;
      voiceStop = `level ${n} did not keep up`;
      break;
    }
  }
  // Bisection between the last good and the first failing level.
  for (let step = 0; bad && !ALL_LEVELS && step < REFINE && bad - good > 1; step++) {
    const mid = Math.floor((good + bad) / 2);
    if (overBudget(mid)) break;
    if ((await runVoice(mid)).keepsUp) good = mid;
    else bad = mid;
  }
  voiceRows.sort((a, b) => a.sessions - b.sessions);
  const c1 = voiceRows.find((r) => r.sessions === 1);
  for (const r of voiceRows) r.e2eP50OverC1 = c1 && c1.e2eP50Ms > 0 ? Math.round((r.e2eP50Ms / c1.e2eP50Ms) * 100) / 100 : null;

  for (const n of CHAT_LEVELS) {
    log(`chat: ${n} session(s) x ${CHAT_TURNS} turns...`);
    const row = await chatLevel(s, agentId, n);
    chatRows.push(row);
    log(`  reply p50 ${fmt(row.replyP50Ms, 1)} p95 ${fmt(row.replyP95Ms, 1)} ms: ${row.keepsUp ? 'keeps up' : 'falls behind'}`);
    if (!row.keepsUp) break;
  }
} catch (err) {
  failure = err instanceof Error ? err.message : String(err);
  if (server) failure += `\nserver exit code ${server.exitCode}; last log lines:\n${server.logs.slice(-15).join('\n')}`;
} finally {
  if (server) ({ exit: serverExit, problems: serverProblems } = await stopAndCollectProblems(server));
  if (store) await store.cleanup();
}

// ---------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------
/** Largest level that kept up below the smallest level that did not. */
const lastKept = (rows: { sessions: number; keepsUp: boolean }[]) => {
  const failedAt = Math.min(...rows.filter((r) => !r.keepsUp).map((r) => r.sessions));
  return Math.max(0, ...rows.filter((r) => r.keepsUp && r.sessions < failedAt).map((r) => r.sessions));
};
const voiceFit = lastKept(voiceRows);
const chatFit = lastKept(chatRows);
const voiceFailedAt = voiceRows.filter((r) => !r.keepsUp).map((r) => r.sessions).sort((a, b) => a - b)[0] ?? null;
const chatFailedAt = chatRows.filter((r) => !r.keepsUp).map((r) => r.sessions).sort((a, b) => a - b)[0] ?? null;

console.log(
  `\nAgent sessions over WSS /atoms/v1/agent/connect (node ${process.version}, ${os.cpus().length} CPUs, ${TURNS} turns per voice caller, ` +
    `caller speech ${speechSet.map((x) => fmt(x.audioMs / 1000, 1)).join('/')} s, pause ${PAUSE_MS} ms, start spread ${STAGGER_MS} ms, jitter allowance ${JITTER_MS} ms; ` +
    `server start ${fmt(startupMs)} ms with ${Object.entries(SERVER_ENV).map(([k, v]) => `${k}=${v}`).join(' ')})`,
);

printTable(
  'Voice (webcall, 16 kHz): engine per-turn metrics (ms) from the call records, client e2e and output pacing measured by the callers',
  ['sessions', 'refused', 'turns', 'e2e p50', 'e2e p95', 'x c=1', 'client e2e p50', 'eou p50', 'recog p50', 'recog p95', 'brain tok p50', 'tts 1st p50', 'tts 1st p95', 'ovh p50', 'ovh p95', 'ovh max', 'underrun turns', 'max deficit', 'span/audio', 'short window', 'srv CPU', 'cli CPU', 'machine CPU', 'all up', 'keeps up'],
  voiceRows.map((r) => [
    String(r.sessions),
    String(r.refusedSessions),
    String(r.turns),
    fmt(r.e2eP50Ms),
    fmt(r.e2eP95Ms),
    r.e2eP50OverC1 === null ? 'n/a' : `${r.e2eP50OverC1.toFixed(2)}x`,
    fmt(r.clientE2eP50Ms),
    fmt(r.eouP50Ms),
    fmt(r.recognitionP50Ms),
    fmt(r.recognitionP95Ms),
    fmt(r.brainFirstTokenP50Ms, 1),
    fmt(r.ttsFirstByteP50Ms),
    fmt(r.ttsFirstByteP95Ms),
    fmt(r.overheadP50Ms, 1),
    fmt(r.overheadP95Ms, 1),
    fmt(r.overheadMaxMs, 1),
    `${r.underrunTurns}/${r.agentTurns}`,
    fmt(r.maxDeficitMs),
    fmt(r.spanOverAudioP50, 3),
    `${fmt(r.shortWindowPct)}%`,
    `${fmt(r.serverCpuPct)}%`,
    `${fmt(r.clientCpuPct)}%`,
    `${fmt(r.machineCpuPct)}%`,
    `${fmt(r.allUpCpuPct)}%`,
    r.keepsUp ? 'yes' : 'NO',
  ]),
  0,
);
printTable(
  `Voice: where inference time goes, per level and job kind (ms; server histograms differenced over the level, quantiles to within a bucket); machine CPU = whole ${os.cpus().length}-CPU machine busy`,
  ['sessions', 'kind', 'jobs', 'dropped', 'refused', 'wait p50', 'wait p95', 'run p50', 'run p95', 'wait s', 'run s', 'waiting', 'e2e p50', 'e2e p95', 'srv CPU', 'machine CPU'],
  voiceRows.flatMap((r) =>
    Object.entries(r.inference).map(([kind, k], i) => [
      i === 0 ? String(r.sessions) : '',
      kind,
      String(k.jobs),
      String(k.dropped),
      String(k.refused),
      bucketMs(k.waitP50Ms),
      bucketMs(k.waitP95Ms),
      bucketMs(k.runP50Ms),
      bucketMs(k.runP95Ms),
      fmt(k.waitTotalS, 1),
      fmt(k.runTotalS, 1),
      `${fmt(k.waitTotalS + k.runTotalS > 0 ? (k.waitTotalS / (k.waitTotalS + k.runTotalS)) * 100 : NaN)}%`,
      i === 0 ? fmt(r.e2eP50Ms) : '',
      i === 0 ? fmt(r.e2eP95Ms) : '',
      i === 0 ? `${fmt(r.serverCpuPct)}%` : '',
      i === 0 ? `${fmt(r.machineCpuPct)}%` : '',
    ]),
  ),
  2,
);
for (const r of voiceRows) {
  const bound = !(r.allUpCpuPct < 80)
    ? 'compute (machine CPU >= 80% while all were up)'
    : !(r.queue.cpuWhileWaitingPct < 90)
      ? 'compute in bursts (the machine is >= 90% busy whenever jobs wait, idle between the callers\' bursts)'
      : r.inferenceWaitSharePct >= 25
        ? 'waiting (jobs wait in line while CPU has room)'
        : 'neither yet';
  console.log(`  ${r.sessions} sessions: machine CPU ${fmt(r.machineCpuPct)}% (${fmt(r.allUpCpuPct)}% while all were up), server ${fmt(r.serverCpuPct)}%, ${fmt(r.inferenceWaitSharePct)}% of inference time waiting for a slot: bound by ${bound}; jobs in line in ${fmt(r.queue.waitingTicksPct)}% of 100 ms ticks, machine CPU ${fmt(r.queue.cpuWhileWaitingPct)}% in those, ${fmt(r.queue.cpuOtherwisePct)}% in the others`);
}
for (const r of voiceRows.filter((x) => !x.keepsUp)) console.log(`  ${r.sessions} sessions: ${r.why.join('; ')}`);
for (const r of voiceRows) for (const e of r.errors.slice(0, 3)) console.log(`  ${r.sessions} sessions: ${e.slice(0, 300)}`);
if (voiceStop) console.log(`  stopped: ${voiceStop}`);

printTable(
  `Chat (mode=chat, text in/out, no recognition or synthesis): input_text.send -> assistant transcript (ms), ${CHAT_TURNS} turns per caller`,
  ['sessions', 'turns', 'reply p50', 'reply p95', 'reply max', 'failed', 'srv CPU', 'cli CPU', 'machine CPU', `keeps up (p95 <= ${CHAT_P95_LIMIT_MS})`],
  chatRows.map((r) => [
    String(r.sessions),
    String(r.turns),
    fmt(r.replyP50Ms, 2),
    fmt(r.replyP95Ms, 2),
    fmt(r.replyMaxMs, 2),
    String(r.failedSessions),
    `${fmt(r.serverCpuPct)}%`,
    `${fmt(r.clientCpuPct)}%`,
    `${fmt(r.machineCpuPct)}%`,
    r.keepsUp ? 'yes' : 'NO',
  ]),
  0,
);
for (const r of chatRows) for (const e of r.errors.slice(0, 3)) console.log(`  ${r.sessions} sessions: ${e.slice(0, 300)}`);

const c1Row = voiceRows.find((r) => r.sessions === 1);
const overheadP95All = quantile(nums(Object.values(voiceDetail).flat().flatMap((s) => s.metrics.map((m) => m.engineOverheadMs))), 0.95);
const goals = {
  overheadP95AtC1Ms: c1Row?.overheadP95Ms ?? null,
  overheadP95AllLevelsMs: r1(overheadP95All),
  overheadGoalMs: GOAL_OVERHEAD_P95_MS,
  overheadMetAtC1: c1Row ? c1Row.overheadP95Ms <= GOAL_OVERHEAD_P95_MS : null,
  e2eP50AtC1Ms: c1Row?.e2eP50Ms ?? null,
  e2eGoalMs: GOAL_E2E_P50_MS,
  e2eMetAtC1: c1Row ? c1Row.e2eP50Ms <= GOAL_E2E_P50_MS : null,
  voiceSessionsFit: voiceFit,
  voiceFirstFailingLevel: voiceFailedAt,
  chatSessionsFit: chatFit,
  chatFirstFailingLevel: chatFailedAt,
};
const met = (x: boolean | null) => (x === null ? 'n/a' : x ? 'MET' : 'MISSED');
console.log('\nSummary against the goals');
console.log(`  engine overhead p95 <= ${GOAL_OVERHEAD_P95_MS} ms: c=1 ${fmt(goals.overheadP95AtC1Ms ?? NaN, 1)} ms ${met(goals.overheadMetAtC1)}; all levels pooled ${fmt(overheadP95All, 1)} ms`);
console.log(`  e2e p50 <= ${GOAL_E2E_P50_MS} ms at c=1 (workflow agent, built-in models): ${fmt(goals.e2eP50AtC1Ms ?? NaN)} ms ${met(goals.e2eMetAtC1)}`);
const fitText = (fit: number, failedAt: number | null, rows: unknown[], levels: number[]) =>
  !rows.length ? 'not run' : failedAt !== null ? `${fit} (level ${failedAt} fell behind)` : `>= ${fit} (highest level run${rows.length < levels.length ? '; stopped early' : ''})`;
console.log(`  sessions on this ${os.cpus().length}-CPU machine with recognition and synthesis: ${fitText(voiceFit, voiceFailedAt, voiceRows, LEVELS)}`);
console.log(`  sessions without (chat, p95 <= ${CHAT_P95_LIMIT_MS} ms): ${fitText(chatFit, chatFailedAt, chatRows, CHAT_LEVELS)}`);
console.log(`\nserver: exit code on SIGTERM ${serverExit}; ${serverProblems.length} log lines at warn or above / stderr`);
for (const l of serverProblems.slice(0, 15)) console.log(`  ${l.slice(0, 400)}`);
if (failure) console.log(`\nRUN FAILED: ${failure}`);

const outFile = resultPath('agent-sessions');
const result = {
  benchmark: 'agent-sessions',
  node: process.version,
  platform: `${process.platform}-${process.arch}`,
  cpus: os.cpus().length,
  timestamp: new Date().toISOString(),
  runSeconds: r1(elapsedS()),
  config: {
    levels: LEVELS,
    chatLevels: CHAT_LEVELS,
    turnsPerCaller: TURNS,
    chatTurnsPerCaller: CHAT_TURNS,
    pauseMs: PAUSE_MS,
    staggerMs: STAGGER_MS,
    jitterAllowanceMs: JITTER_MS,
    e2eP95LimitMs: E2E_P95_LIMIT_MS,
    chatP95LimitMs: CHAT_P95_LIMIT_MS,
    budgetS: BUDGET_S,
    refineSteps: REFINE,
    capped: CAPPED,
    allLevels: ALL_LEVELS,
    sampleRate: RATE,
    serverEnv: SERVER_ENV,
    agent: { workflowGraph: GRAPH, firstMessage: OPENING },
    callerSpeech: speechSet.map((x) => ({ text: x.text, audioMs: x.audioMs })),
    keepsUpRule: 'all sessions complete, underrun turns < 1% of agent turns, engine e2e p95 <= e2eP95LimitMs',
    underrunRule: 'a delta arriving when audio received before it < wall time since the turn\'s first delta - jitterAllowanceMs',
    clientE2e: 'last chunk of caller speech sent (sentences trimmed at -45 dBFS) -> first output_audio.delta of the reply',
  },
  goals,
  serverStartMs: r1(startupMs),
  warmup,
  voice: voiceRows,
  voiceStop,
  chat: chatRows,
  voiceSessions: voiceDetail,
  server: { exitCode: serverExit, problems: serverProblems },
  failure,
};
writeFileSync(outFile, `${JSON.stringify(result, null, 2)}\n`);
console.log(`\nwrote ${path.relative(process.cwd(), outFile)}`);
if (failure) process.exitCode = 1;
