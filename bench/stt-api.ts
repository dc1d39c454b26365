// Benchmark: speech recognition through the real server, side by side with the raw model (npx tsx bench/stt-api.ts).
// Corpus: the Asterisk English speech prompts (8 kHz human speech with transcripts, bench/lib/asterisk-corpus.ts).
//  1. raw model: WhisperRecognizer in this process on the same audio (16 kHz, > 30 s split at pauses, as
//     bench/stt-wer-raw.ts), run before the server starts so neither disturbs the other;
//  2. POST /stt/: the original 8 kHz WAV bytes (audio/wav), BENCH_POST_CONCURRENCY requests in flight;
//  3. WSS /stt/live: the WAV's samples as linear16 at 8 kHz in 20 ms chunks at real-time pace (drift-corrected),
//     then 1 s of digital silence at real-time pace (the VAD ends the utterance), then {"type":"close_stream"}.
//     Hypothesis = all non-empty finals in order. Run with BENCH_CONCURRENCY sockets at once over all prompts (WER
//     and latency under that load), and with one socket over BENCH_LATENCY_N prompts of <= 5 s (latency alone).
// Latency (WSS): from sending the last audio chunk of the prompt (before the added silence) to the arrival of the
// first non-empty final after it. Also given from the chunk holding the end of speech (last 20 ms frame above
// -45 dBFS in the file), which adds the prompt's own trailing silence (median ~135 ms in this corpus).
// Scoring: corpus WER with both 'plain' and 'full' normalisation (bench/lib/wer.ts).
// Env: BENCH_LIMIT (prompts, default all 551 speech prompts; a subset is taken evenly spaced over the sorted list),
// BENCH_PROMPTS (only these names, comma-separated), BENCH_CONCURRENCY (sockets, default 6: keeps the default run
// near 15 min on 2 cores; latency depends on it), BENCH_POST_CONCURRENCY (default 2 = the server's inference slots),
// BENCH_LATENCY_N (default 40; 0 skips), BENCH_SILENCE_MS (default 1000), BENCH_EOU_MS (optional eou_timeout_ms),
// BENCH_PARTS (default raw,post,ws1,ws: which parts run), BENCH_BEAMS (default 5: the raw model and PARLEY_STT_BEAMS),
// BENCH_LIVE_BEAMS (default 1: PARLEY_STT_LIVE_BEAMS, the server default), BENCH_SHORT_WINDOW (PARLEY_STT_SHORT_WINDOW:
// busy, the server's default, Whisper's shorter encoder window only for a live recognition others wait behind, the
// raw model keeping 30 s; false, the 30 s window every time; true, the shorter window for every greedy clip up to 5 s,
// also for the raw model; the share of live recognitions that ran short is printed), BENCH_EOU_COMPARE_MS (optional: the
// one-socket part also streams every prompt with eou_timeout_ms set to this, alternating with the run without it,
// so the adaptive end of utterance and a fixed silence are compared side by side).
import { intEnv, stopAndCollectProblems, UNCAPPED_SESSIONS } from './lib/harness.js';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { encodeLinear16 } from '../engine/audio/codecs.js';
import { readWav } from '../engine/audio/wav.js';
import { WHISPER_MAX_SAMPLES, WhisperRecognizer } from '../engine/models/whisper/index.js';
import { ROOT, freshStore, startServer, type TestServer } from '../test/support/server.js';
import { shortWindowMeter } from './lib/prom.js';
import { asteriskCorpusAvailable, listAsteriskPrompts, loadPrompt16k, splitAtPauses, type AsteriskPrompt } from './lib/asterisk-corpus.js';
import { errorCount, scoreText, sumErrors, wer, type NormalizeMode, type WordErrors } from './lib/wer.js';
import { printTable, resultPath, quantile } from './lib/report.js';

const W = '/waves/v1';
const CHUNK_MS = 20;
const SHORT_S = 5;
const GOAL_LATENCY_P50_MS = 300;
const GOAL_STREAM_VS_BATCH_POINTS = 1;
/** Beam width for the raw model and for the server's whole-file path (its default is 5; live stays greedy). */
const BEAMS = intEnv('BENCH_BEAMS', 5, 1);
/** Beam width for live recognition (server default 1, greedy). */
const LIVE_BEAMS = intEnv('BENCH_LIVE_BEAMS', 1, 1);
/** Whisper's shorter encoder window for short clips (the server's default) or, when false, the 30 s window always. */
const WINDOW_SETTING = (process.env.BENCH_SHORT_WINDOW ?? 'busy').trim().toLowerCase();
if (!['true', 'false', 'busy'].includes(WINDOW_SETTING)) throw new Error('BENCH_SHORT_WINDOW must be true, false or busy');
/** The raw model's window (it has no queue: `busy` never applies there). */
const SHORT_WINDOW = WINDOW_SETTING === 'true';
const SERVER_ENV = { ...UNCAPPED_SESSIONS, PARLEY_WARM_MODELS: 'true', PARLEY_RATE_LIMIT_PER_MINUTE: '1000000', PARLEY_INFERENCE_QUEUE: '64', PARLEY_STT_BEAMS: String(BEAMS), PARLEY_STT_LIVE_BEAMS: String(LIVE_BEAMS), PARLEY_STT_SHORT_WINDOW: WINDOW_SETTING };

const CONCURRENCY = intEnv('BENCH_CONCURRENCY', 6, 1);
const POST_CONCURRENCY = intEnv('BENCH_POST_CONCURRENCY', 2, 1);
const LATENCY_N = intEnv('BENCH_LATENCY_N', 40, 0);
const SILENCE_MS = intEnv('BENCH_SILENCE_MS', 1000, 0);
const EOU_MS = process.env.BENCH_EOU_MS ? intEnv('BENCH_EOU_MS', 600, 100) : undefined;
const EOU_COMPARE_MS = process.env.BENCH_EOU_COMPARE_MS ? intEnv('BENCH_EOU_COMPARE_MS', 300, 100) : undefined;
const PARTS = new Set((process.env.BENCH_PARTS ?? 'raw,post,ws1,ws').split(',').map((p) => p.trim()).filter(Boolean));
for (const p of PARTS) if (!['raw', 'post', 'ws1', 'ws'].includes(p)) throw new Error(`BENCH_PARTS: unknown part "${p}" (raw, post, ws1, ws)`);

const started = performance.now();
const elapsedS = () => (performance.now() - started) / 1000;
const log = (msg: string) => process.stderr.write(`[${elapsedS().toFixed(0).padStart(4)} s] ${msg}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------------------
// Statistics and printing (as bench/tts.ts)
// ---------------------------------------------------------------------------------------------------------
const r1 = (x: number) => Math.round(x * 10) / 10;
const r4 = (x: number) => Math.round(x * 10000) / 10000;
/** Nearest-rank quantile (as bench/publish-latency.ts). */
const fmt = (x: number, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(2)}%` : 'n/a');
const points = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)}` : 'n/a');


// ---------------------------------------------------------------------------------------------------------
// Corpus
// ---------------------------------------------------------------------------------------------------------
interface Prompt {
  name: string;
  reference: string;
  wav: Buffer;
  /** The WAV's samples as linear16 at its own rate (the WebSocket payload). */
  pcm: Buffer;
  sampleRate: number;
  audioSec: number;
  /** End of the last 20 ms frame above -45 dBFS, seconds from the start. */
  speechEndSec: number;
}

function speechEnd(samples: Float32Array, rate: number): number {
  const frame = Math.round((rate * CHUNK_MS) / 1000);
  let last = 0;
  for (let f = 0; f + frame <= samples.length; f += frame) {
    let e = 0;
    for (let i = f; i < f + frame; i++) e += (samples[i] as number) ** 2;
    if (10 * Math.log10(e / frame + 1e-12) > -45) last = f + frame;
  }
  return last / rate;
}

function loadPrompt(p: AsteriskPrompt): Prompt {
  const wav = readFileSync(p.file);
  const audio = readWav(wav);
  if (audio.sampleRate !== 8000) throw new Error(`${p.name}: expected 8 kHz, got ${audio.sampleRate} Hz`);
  return {
    name: p.name,
    reference: p.text,
    wav,
    pcm: encodeLinear16(audio.samples),
    sampleRate: audio.sampleRate,
    audioSec: audio.samples.length / audio.sampleRate,
    speechEndSec: speechEnd(audio.samples, audio.sampleRate),
  };
}

/** `n` items spread evenly over the list (all of it when n >= length). */
function spread<T>(xs: readonly T[], n: number): T[] {
  if (n >= xs.length) return [...xs];
  return Array.from({ length: n }, (_, i) => xs[Math.floor((i * xs.length) / n)] as T);
}

/** Runs `fn` over the items with `n` workers pulling from a shared index; results in input order. */
async function pool<T, R>(items: readonly T[], n: number, fn: (item: T, i: number) => Promise<R>, progress?: (done: number) => void): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) {
      out[i] = await fn(items[i] as T, i);
      progress?.(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}

const every = (n: number, total: number, label: string) => (done: number) => {
  if (done % n === 0 || done === total) log(`  ${label}: ${done}/${total}`);
};

// ---------------------------------------------------------------------------------------------------------
// 1. Raw model
// ---------------------------------------------------------------------------------------------------------
interface RawResult {
  hypothesis: string;
  ms: number;
  pieces: number;
}

async function runRaw(prompts: Prompt[], files: AsteriskPrompt[]): Promise<{ results: RawResult[]; loadMs: number }> {
  const cacheDir = process.env.PARLEY_DATA_DIR ? path.join(process.env.PARLEY_DATA_DIR, 'models-cache') : undefined;
  const t0 = performance.now();
  const rec = await WhisperRecognizer.load({ cacheDir, intraOpNumThreads: 2, shortWindow: SHORT_WINDOW });
  const loadMs = performance.now() - t0;
  try {
    const first = files[0];
    if (first) await rec.transcribe(loadPrompt16k(first.file), { beams: BEAMS }); // warm-up
    const results: RawResult[] = [];
    for (const [i, f] of files.entries()) {
      const audio = loadPrompt16k(f.file);
      const t = performance.now();
      const texts: string[] = [];
      const pieces = splitAtPauses(audio, WHISPER_MAX_SAMPLES);
      for (const piece of pieces) texts.push((await rec.transcribe(piece, { beams: BEAMS })).text);
      results.push({ hypothesis: texts.join(' ').trim(), ms: performance.now() - t, pieces: pieces.length });
      every(100, prompts.length, 'raw')(i + 1);
    }
    return { results, loadMs };
  } finally {
    await rec.release();
  }
}

// ---------------------------------------------------------------------------------------------------------
// 2. POST /stt/
// ---------------------------------------------------------------------------------------------------------
interface PostResult {
  hypothesis: string;
  ms: number;
  processingMs: number;
  chunks: number;
  retries503: number;
  error?: string;
}

async function postOnce(server: TestServer, p: Prompt): Promise<PostResult> {
  let retries503 = 0;
  for (;;) {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), 120_000);
    const t0 = performance.now();
    try {
      const res = await fetch(`${server.base}${W}/stt/?model=pulse&language=en`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.key}`, 'content-type': 'audio/wav' },
        body: new Uint8Array(p.wav),
        signal: ac.signal,
      });
      const text = await res.text();
      const ms = performance.now() - t0;
      if (res.status === 503 && retries503 < 10) {
        retries503++;
        await sleep(500);
        continue;
      }
      let body: { transcription?: unknown; metadata?: { processing_time_ms?: number; num_chunks?: number } } = {};
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        /* reported below */
      }
      if (res.status !== 200 || typeof body.transcription !== 'string') {
        return { hypothesis: '', ms, processingMs: NaN, chunks: 0, retries503, error: `HTTP ${res.status} ${text.slice(0, 160)}` };
      }
      return { hypothesis: body.transcription.trim(), ms, processingMs: body.metadata?.processing_time_ms ?? NaN, chunks: body.metadata?.num_chunks ?? 0, retries503 };
    } catch (err) {
      return { hypothesis: '', ms: performance.now() - t0, processingMs: NaN, chunks: 0, retries503, error: ac.signal.aborted ? 'timed out (120 s)' : err instanceof Error ? err.message : String(err) };
    } finally {
      clearTimeout(timer);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// 3. WSS /stt/live
// ---------------------------------------------------------------------------------------------------------
interface Final {
  atMs: number;
  text: string;
  isLast: boolean;
}
interface WsResult {
  hypothesis: string;
  finals: number;
  interims: number;
  /** Last audio chunk sent -> first non-empty final after it; NaN when none followed. */
  latencyMs: number;
  /** Chunk holding the end of speech sent -> that same final. */
  fromSpeechEndMs: number;
  /** 'ok': a final followed the last chunk; 'early': all speech was finalised before it; 'none': no non-empty final. */
  latencyKind: 'ok' | 'early' | 'none';
  /** The final that gave the latency was the answer to close_stream (the VAD had not ended the utterance). */
  viaClose: boolean;
  /** Sending fell behind real time by at most this much (client pacing check). */
  maxLagMs: number;
  error?: string;
}

function wsUrl(server: TestServer, p: Prompt, eouMs: number | undefined): string {
  const q = `model=pulse&language=en&sample_rate=${p.sampleRate}&encoding=linear16${eouMs === undefined ? '' : `&eou_timeout_ms=${eouMs}`}`;
  return `ws://127.0.0.1:${server.port}${W}/stt/live?${q}`;
}

function streamOnce(server: TestServer, p: Prompt, eouMs = EOU_MS): Promise<WsResult> {
  return new Promise((resolve) => {
    const chunkBytes = Math.round((p.sampleRate * CHUNK_MS) / 1000) * 2;
    const audioChunks: Buffer[] = [];
    for (let o = 0; o < p.pcm.length; o += chunkBytes) audioChunks.push(p.pcm.subarray(o, Math.min(p.pcm.length, o + chunkBytes)));
    const silenceChunks = Math.ceil(SILENCE_MS / CHUNK_MS);
    const silence = Buffer.alloc(chunkBytes);
    const speechEndChunk = Math.max(0, Math.ceil((p.speechEndSec * 1000) / CHUNK_MS) - 1);
    const finals: Final[] = [];
    let interims = 0;
    let tLastAudio = NaN;
    let tSpeechEnd = NaN;
    let maxLagMs = 0;
    let gotLast = false;
    let error: string | undefined;
    let settled = false;
    let sending = true;

    const ws = new WebSocket(wsUrl(server, p, eouMs), { headers: { authorization: `Bearer ${server.key}` }, perMessageDeflate: false });
    const finish = (extra?: string) => {
      if (settled) return;
      settled = true;
      sending = false;
      clearTimeout(timer);
      if (!error && extra) error = extra;
      if (!error && !gotLast) error = 'closed without a final with is_last';
      const spoken = finals.filter((f) => f.text);
      const after = spoken.find((f) => f.atMs >= tLastAudio);
      const lastSpoken = spoken[spoken.length - 1];
      const kind: WsResult['latencyKind'] = after ? 'ok' : lastSpoken ? 'early' : 'none';
      const ref = after ?? lastSpoken;
      resolve({
        hypothesis: spoken.map((f) => f.text.trim()).join(' ').trim(),
        finals: spoken.length,
        interims,
        latencyMs: after ? after.atMs - tLastAudio : NaN,
        fromSpeechEndMs: ref ? ref.atMs - tSpeechEnd : NaN,
        latencyKind: kind,
        viaClose: after?.isLast ?? false,
        maxLagMs,
        ...(error ? { error } : {}),
      });
    };
    const timer = setTimeout(() => {
      finish('timed out');
      ws.terminate();
    }, (p.audioSec * 1000 + SILENCE_MS) * 1.5 + 60_000);

    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => finish(`upgrade refused: HTTP ${res.statusCode} ${body.slice(0, 160)}`));
      res.on('error', () => finish(`upgrade refused: HTTP ${res.statusCode}`));
    });
    ws.on('error', (err) => finish(`socket error: ${err.message}`));
    ws.on('message', (raw, isBinary) => {
      const now = performance.now();
      if (isBinary) return;
      let msg: { type?: string; transcript?: string; is_final?: boolean; is_last?: boolean; message?: string };
      try {
        msg = JSON.parse(raw.toString()) as typeof msg;
      } catch {
        error ??= 'non-JSON frame';
        return;
      }
      if (msg.type === 'transcription') {
        if (msg.is_final) {
          finals.push({ atMs: now, text: msg.transcript ?? '', isLast: msg.is_last === true });
          if (msg.is_last) gotLast = true;
        } else interims++;
      } else if (msg.type === 'error') error ??= `error frame: ${msg.message ?? ''}`;
    });
    ws.once('close', (code, reason) => finish(code === 1000 ? undefined : `closed ${code} ${reason.toString()}`));
    ws.once('open', () => {
      void (async () => {
        // One chunk every 20 ms against a fixed schedule (drift-corrected): chunk k goes at t0 + k * 20 ms.
        const t0 = performance.now();
        const total = audioChunks.length + silenceChunks;
        for (let k = 0; k < total && sending; k++) {
          const due = t0 + k * CHUNK_MS;
          const wait = due - performance.now();
          if (wait > 0) await sleep(wait);
          if (!sending || ws.readyState !== WebSocket.OPEN) return;
          maxLagMs = Math.max(maxLagMs, performance.now() - due);
          ws.send(k < audioChunks.length ? (audioChunks[k] as Buffer) : silence);
          const sentAt = performance.now();
          if (k === speechEndChunk) tSpeechEnd = sentAt;
          if (k === audioChunks.length - 1) tLastAudio = sentAt;
        }
        if (sending && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'close_stream' }));
      })();
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// Summaries
// ---------------------------------------------------------------------------------------------------------
interface Scored {
  plain: WordErrors;
  full: WordErrors;
}
const score = (ref: string, hyp: string): Scored => ({ plain: scoreText(ref, hyp, 'plain'), full: scoreText(ref, hyp, 'full') });

interface WerRow {
  path: string;
  prompts: number;
  refWords: number;
  werPlain: number;
  werFull: number;
  substitutions: number;
  deletions: number;
  insertions: number;
  promptsWithErrors: number;
  errors: number;
  wallS: number;
}
function werRow(label: string, scored: Scored[], errors: number, wallS: number): WerRow {
  const full = sumErrors(scored.map((s) => s.full));
  const plain = sumErrors(scored.map((s) => s.plain));
  return {
    path: label,
    prompts: scored.length,
    refWords: full.refWords,
    werPlain: r4(wer(plain)),
    werFull: r4(wer(full)),
    substitutions: full.substitutions,
    deletions: full.deletions,
    insertions: full.insertions,
    promptsWithErrors: scored.filter((s) => errorCount(s.full) > 0).length,
    errors,
    wallS: r1(wallS),
  };
}

interface LatencyRow {
  run: string;
  concurrency: number;
  subset: string;
  prompts: number;
  withLatency: number;
  early: number;
  none: number;
  viaClose: number;
  errors: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  speechEndP50Ms: number;
  speechEndP95Ms: number;
  goalP50Ms: number | null;
  meetsGoal: boolean | null;
}
function latencyRow(run: string, concurrency: number, subset: string, ps: Prompt[], rs: WsResult[], goal: boolean): LatencyRow {
  const ok = rs.filter((r) => !r.error);
  const lat = ok.filter((r) => r.latencyKind === 'ok').map((r) => r.latencyMs);
  const fromEnd = ok.filter((r) => r.latencyKind === 'ok').map((r) => r.fromSpeechEndMs);
  const p50 = quantile(lat, 0.5);
  return {
    run,
    concurrency,
    subset,
    prompts: ps.length,
    withLatency: lat.length,
    early: ok.filter((r) => r.latencyKind === 'early').length,
    none: ok.filter((r) => r.latencyKind === 'none').length,
    viaClose: ok.filter((r) => r.latencyKind === 'ok' && r.viaClose).length,
    errors: rs.length - ok.length,
    p50Ms: r1(p50),
    p95Ms: r1(quantile(lat, 0.95)),
    maxMs: r1(lat.length ? Math.max(...lat) : NaN),
    speechEndP50Ms: r1(quantile(fromEnd, 0.5)),
    speechEndP95Ms: r1(quantile(fromEnd, 0.95)),
    goalP50Ms: goal ? GOAL_LATENCY_P50_MS : null,
    meetsGoal: goal ? p50 <= GOAL_LATENCY_P50_MS : null,
  };
}

function gitState(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(3));
    return dirty.length ? `${head} + uncommitted changes in ${dirty.join(', ')}` : head;
  } catch {
    return 'unknown';
  }
}

// ---------------------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------------------
if (!asteriskCorpusAvailable()) {
  console.error('Asterisk prompts not installed (apt-get install asterisk-core-sounds-en-wav asterisk-core-sounds-en)');
  process.exit(1);
}
const allSpeech = listAsteriskPrompts().filter((p) => p.speech);
/** BENCH_PROMPTS: only these prompt names (comma-separated; for looking at particular prompts). */
const ONLY = (process.env.BENCH_PROMPTS ?? '').split(',').map((n) => n.trim()).filter(Boolean);
for (const n of ONLY) if (!allSpeech.some((p) => p.name === n)) throw new Error(`BENCH_PROMPTS: no speech prompt "${n}"`);
const chosen = ONLY.length ? allSpeech.filter((p) => ONLY.includes(p.name)) : allSpeech;
const LIMIT = intEnv('BENCH_LIMIT', chosen.length, 1);
const files = spread(chosen, LIMIT);
const subsetNote = [ONLY.length ? 'BENCH_PROMPTS' : '', LIMIT < chosen.length ? 'BENCH_LIMIT, evenly spaced over the sorted speech prompts' : ''].filter(Boolean).join('; ');
const prompts = files.map(loadPrompt);
const latencySet = spread(prompts.map((p, i) => ({ p, i })).filter(({ p }) => p.audioSec <= SHORT_S), LATENCY_N);
const audioTotal = prompts.reduce((a, p) => a + p.audioSec, 0);
const code = gitState();
/** 1-minute load average at the start and the end (other processes on the machine skew latency). */
const loadAvg: { start: number; end?: number } = { start: r1(os.loadavg()[0] ?? NaN) };
log(
  `${prompts.length} of ${allSpeech.length} speech prompts (${r1(audioTotal)} s of audio, ${prompts.filter((p) => p.audioSec <= SHORT_S).length} <= ${SHORT_S} s); ` +
    `code ${code}; parts ${[...PARTS].join(',')}`,
);

const store = freshStore('sqlite');
let server: TestServer | null = null;
let raw: RawResult[] | null = null;
let rawLoadMs = NaN;
let post: PostResult[] | null = null;
let ws: WsResult[] | null = null;
let ws1: WsResult[] | null = null;
/** With BENCH_EOU_COMPARE_MS: the same one-socket prompts with that fixed eou_timeout_ms. */
let ws1Compare: WsResult[] | null = null;
/** Share of the many-socket part's live recognitions that ran with the short encoder window, %. */
let wsShortWindowPct = NaN;
const wall: Record<string, number> = {};
let startupMs = NaN;
let serverExit: number | null = null;
let serverProblems: string[] = [];
let failure: string | null = null;

try {
  if (PARTS.has('raw')) {
    log(`raw model: ${prompts.length} prompts in this process (intraOpNumThreads 2, beams ${BEAMS})`);
    const t = performance.now();
    const r = await runRaw(prompts, files);
    wall.raw = (performance.now() - t) / 1000;
    raw = r.results;
    rawLoadMs = r.loadMs;
  }
  if (PARTS.has('post') || PARTS.has('ws') || PARTS.has('ws1')) {
    const t0 = performance.now();
    server = await startServer({ store, env: SERVER_ENV });
    startupMs = performance.now() - t0;
    const s = server;
    log(`server listening on ${s.port} after ${startupMs.toFixed(0)} ms (models warmed)`);
    // One request of each kind so that neither measured run pays for first use.
    const warm = prompts.find((p) => p.audioSec <= SHORT_S) ?? prompts[0];
    if (warm) {
      const w1 = await postOnce(s, warm);
      if (w1.error) throw new Error(`warm-up POST /stt/ failed: ${w1.error}`);
      const w2 = await streamOnce(s, warm);
      if (w2.error) throw new Error(`warm-up WSS /stt/live failed: ${w2.error}`);
    }

    if (PARTS.has('post')) {
      log(`POST /stt/: ${prompts.length} prompts, ${POST_CONCURRENCY} in flight`);
      const t = performance.now();
      post = await pool(prompts, POST_CONCURRENCY, (p) => postOnce(s, p), every(100, prompts.length, 'POST'));
      wall.post = (performance.now() - t) / 1000;
    }
    if (PARTS.has('ws1') && latencySet.length) {
      log(`WSS /stt/live, 1 socket: ${latencySet.length} prompts <= ${SHORT_S} s`);
      const t = performance.now();
      if (EOU_COMPARE_MS === undefined) {
        ws1 = await pool(latencySet, 1, ({ p }) => streamOnce(s, p), every(10, latencySet.length, 'WSS x1'));
      } else {
        // Side by side: each prompt with both settings, the order alternating from prompt to prompt.
        const a: WsResult[] = [];
        const b: WsResult[] = [];
        for (const [k, { p }] of latencySet.entries()) {
          if (k % 2 === 0) {
            a.push(await streamOnce(s, p));
            b.push(await streamOnce(s, p, EOU_COMPARE_MS));
          } else {
            b.push(await streamOnce(s, p, EOU_COMPARE_MS));
            a.push(await streamOnce(s, p));
          }
          if ((k + 1) % 10 === 0) log(`  WSS x1 (both settings): ${k + 1}/${latencySet.length}`);
        }
        ws1 = a;
        ws1Compare = b;
      }
      wall.ws1 = (performance.now() - t) / 1000;
    }
    if (PARTS.has('ws')) {
      log(`WSS /stt/live, ${CONCURRENCY} sockets: ${prompts.length} prompts (~${fmt((audioTotal + (prompts.length * SILENCE_MS) / 1000) / CONCURRENCY / 60)} min at real-time pace)`);
      const t = performance.now();
      const windowsSince = await shortWindowMeter(async () => (await s.request('GET', '/metrics', { key: null })).text);
      ws = await pool(prompts, CONCURRENCY, (p) => streamOnce(s, p), every(50, prompts.length, `WSS x${CONCURRENCY}`));
      wall.ws = (performance.now() - t) / 1000;
      wsShortWindowPct = await windowsSince();
    }
  }
} catch (err) {
  failure = err instanceof Error ? err.message : String(err);
} finally {
  if (server) {
    ({ exit: serverExit, problems: serverProblems } = await stopAndCollectProblems(server));
  }
  await store.cleanup();
}

// ---------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------
loadAvg.end = r1(os.loadavg()[0] ?? NaN);
const scoredOf = (hyps: string[] | null) => (hyps ? prompts.map((p, i) => score(p.reference, hyps[i] ?? '')) : null);
const rawScored = scoredOf(raw?.map((r) => r.hypothesis) ?? null);
const postScored = scoredOf(post?.map((r) => r.hypothesis) ?? null);
const wsScored = scoredOf(ws?.map((r) => r.hypothesis) ?? null);

const werRows: WerRow[] = [];
if (raw && rawScored) werRows.push(werRow('raw model (in-process)', rawScored, 0, wall.raw ?? NaN));
if (post && postScored) werRows.push(werRow(`POST /stt/ (x${POST_CONCURRENCY})`, postScored, post.filter((r) => r.error).length, wall.post ?? NaN));
if (ws && wsScored) werRows.push(werRow(`WSS /stt/live (x${CONCURRENCY})`, wsScored, ws.filter((r) => r.error).length, wall.ws ?? NaN));

// The one-socket run covers only its latency subset: its WER beside the other paths on that same subset.
const subsetRows: WerRow[] = [];
if (ws1) {
  const idx = latencySet.map((x) => x.i);
  const on = (sc: Scored[] | null) => (sc ? idx.map((i) => sc[i] as Scored) : null);
  const rs = on(rawScored);
  const ps = on(postScored);
  const ws6 = on(wsScored);
  if (rs) subsetRows.push(werRow('raw model (in-process)', rs, 0, NaN));
  if (ps) subsetRows.push(werRow(`POST /stt/ (x${POST_CONCURRENCY})`, ps, idx.filter((i) => post?.[i]?.error).length, NaN));
  if (ws6) subsetRows.push(werRow(`WSS /stt/live (x${CONCURRENCY})`, ws6, idx.filter((i) => ws?.[i]?.error).length, NaN));
  subsetRows.push(werRow('WSS /stt/live (x1)', latencySet.map(({ p }, k) => score(p.reference, ws1?.[k]?.hypothesis ?? '')), ws1.filter((r) => r.error).length, wall.ws1 ?? NaN));
  if (ws1Compare) {
    const cmp = ws1Compare;
    subsetRows.push(werRow(`WSS /stt/live (x1, eou ${EOU_COMPARE_MS} ms)`, latencySet.map(({ p }, k) => score(p.reference, cmp[k]?.hypothesis ?? '')), cmp.filter((r) => r.error).length, NaN));
  }
}
const rowOf = (prefix: string) => werRows.find((r) => r.path.startsWith(prefix));
const diff = (a: WerRow | undefined, b: WerRow | undefined, m: NormalizeMode) => (a && b ? r4(m === 'full' ? a.werFull - b.werFull : a.werPlain - b.werPlain) : NaN);
const rawRow = rowOf('raw');
const postRow = rowOf('POST');
const wsRow = rowOf('WSS');
const comparisons = [
  // Goals are judged on the 'full' WER: the issue asks for numbers normalised ("one" = "1"); 'plain' is shown beside it.
  { comparison: 'POST /stt/ - raw', plain: diff(postRow, rawRow, 'plain'), full: diff(postRow, rawRow, 'full'), goal: 'API no worse than raw (full <= 0)', met: postRow && rawRow ? postRow.werFull <= rawRow.werFull : null },
  { comparison: 'WSS /stt/live - raw', plain: diff(wsRow, rawRow, 'plain'), full: diff(wsRow, rawRow, 'full'), goal: 'for information (streaming is held to batch + 1 point)', met: null },
  {
    comparison: 'WSS /stt/live - POST /stt/',
    plain: diff(wsRow, postRow, 'plain'),
    full: diff(wsRow, postRow, 'full'),
    goal: `streaming within ${GOAL_STREAM_VS_BATCH_POINTS} point of batch (full)`,
    met: wsRow && postRow ? wsRow.werFull - postRow.werFull <= GOAL_STREAM_VS_BATCH_POINTS / 100 : null,
  },
];

const latencyRows: LatencyRow[] = [];
if (ws1) latencyRows.push(latencyRow('WSS x1', 1, `<= ${SHORT_S} s`, latencySet.map((x) => x.p), ws1, true));
if (ws1Compare) latencyRows.push(latencyRow(`WSS x1 eou ${EOU_COMPARE_MS}`, 1, `<= ${SHORT_S} s`, latencySet.map((x) => x.p), ws1Compare, false));
if (ws) {
  const short = prompts.map((p, i) => ({ p, r: ws?.[i] as WsResult })).filter(({ p }) => p.audioSec <= SHORT_S);
  latencyRows.push(latencyRow(`WSS x${CONCURRENCY}`, CONCURRENCY, `<= ${SHORT_S} s`, short.map((x) => x.p), short.map((x) => x.r), true));
  latencyRows.push(latencyRow(`WSS x${CONCURRENCY}`, CONCURRENCY, 'all', prompts, ws, false));
}

const exact = (a: string[] | undefined, b: string[] | undefined) => (a && b ? a.filter((x, i) => x === b[i]).length : null);
const sameText = {
  postEqualsRaw: exact(post?.map((r) => r.hypothesis), raw?.map((r) => r.hypothesis)),
  wsEqualsPost: exact(ws?.map((r) => r.hypothesis), post?.map((r) => r.hypothesis)),
};
const wsLag = ws ? Math.max(0, ...ws.map((r) => r.maxLagMs)) : NaN;
const ws1Lag = ws1 ? Math.max(0, ...ws1.map((r) => r.maxLagMs)) : NaN;
const wsInterims = ws ? ws.reduce((a, r) => a + r.interims, 0) : 0;
const post503 = post ? post.reduce((a, r) => a + r.retries503, 0) : 0;

console.log(
  `\nSpeech recognition through the real server vs the raw model (node ${process.version}, ${process.platform}-${process.arch}); ` +
    `${prompts.length}${prompts.length < allSpeech.length ? ` of ${allSpeech.length} (${subsetNote})` : ''} Asterisk speech prompts, ` +
    `${r1(audioTotal)} s of 8 kHz audio; code ${code}; server start ${fmt(startupMs, 0)} ms with ${Object.entries(SERVER_ENV).map(([k, v]) => `${k}=${v}`).join(' ')}`,
);
printTable(
  `1. Corpus WER over the same prompts (bench/lib/wer.ts; S/D/I with full normalisation). raw: in-process, > 30 s split at pauses; ` +
    `POST: original WAV bytes, ${POST_CONCURRENCY} in flight; WSS: linear16 8 kHz at real-time pace, 20 ms chunks, + ${SILENCE_MS} ms silence, ${CONCURRENCY} sockets at once`,
  ['path', 'prompts', 'ref words', 'WER plain', 'WER full', 'S', 'D', 'I', 'prompts w/ err', 'errors', 'wall s'],
  werRows.map((r) => [r.path, String(r.prompts), String(r.refWords), pct(r.werPlain), pct(r.werFull), String(r.substitutions), String(r.deletions), String(r.insertions), String(r.promptsWithErrors), String(r.errors), fmt(r.wallS)]),
  1,
);
if (subsetRows.length) {
  printTable(
    `   WER on the one-socket latency subset (${latencySet.length} prompts <= ${SHORT_S} s)`,
    ['path', 'prompts', 'ref words', 'WER plain', 'WER full', 'S', 'D', 'I', 'prompts w/ err', 'errors'],
    subsetRows.map((r) => [r.path, String(r.prompts), String(r.refWords), pct(r.werPlain), pct(r.werFull), String(r.substitutions), String(r.deletions), String(r.insertions), String(r.promptsWithErrors), String(r.errors)]),
    1,
  );
}
printTable(
  '2. WER differences (percentage points)',
  ['comparison', 'plain', 'full', 'goal', ''],
  comparisons.map((c) => [c.comparison, points(c.plain), points(c.full), c.goal, c.met === null ? 'n/a' : c.met ? 'MET' : 'MISSED']),
  1,
);
console.log(`\n  identical text: POST = raw on ${sameText.postEqualsRaw ?? 'n/a'} prompts, WSS = POST on ${sameText.wsEqualsPost ?? 'n/a'} prompts (of ${prompts.length})`);
printTable(
  `3. WSS /stt/live latency: last audio chunk sent -> first non-empty final after it (ms). "from speech end": from the chunk holding the end of speech ` +
    `(-45 dBFS). early = speech finalised before the last chunk; none = no non-empty final; via close = the final answering close_stream${EOU_MS === undefined ? '' : `; eou_timeout_ms=${EOU_MS}`}`,
  ['run', 'sockets', 'prompts', 'n', 'p50 ms', 'p95 ms', 'max ms', 'speech end p50', 'speech end p95', 'early', 'none', 'via close', 'errors', `goal (p50 <= ${GOAL_LATENCY_P50_MS} ms, <= ${SHORT_S} s)`],
  latencyRows.map((r) => [
    r.run,
    String(r.concurrency),
    `${r.subset} (${r.prompts})`,
    String(r.withLatency),
    fmt(r.p50Ms),
    fmt(r.p95Ms),
    fmt(r.maxMs),
    fmt(r.speechEndP50Ms),
    fmt(r.speechEndP95Ms),
    String(r.early),
    String(r.none),
    String(r.viaClose),
    String(r.errors),
    r.meetsGoal === null ? '' : `${fmt(r.p50Ms)} ${r.meetsGoal ? 'MET' : 'MISSED'}`,
  ]),
  1,
);
for (const [label, rs, ps] of [['x1', ws1, latencySet.map((x) => x.p)], [`x${CONCURRENCY}`, ws, prompts]] as const) {
  const none = (rs ?? []).map((r, i) => ({ r, p: ps[i] as Prompt, i })).filter(({ r }) => !r.error && r.latencyKind === 'none');
  if (!none.length) continue;
  const postText = (p: Prompt) => {
    const i = prompts.indexOf(p);
    return post?.[i] ? ` (POST: ${JSON.stringify(post[i].hypothesis)})` : '';
  };
  console.log(`\n  WSS ${label}: no non-empty final at all for ${none.length} prompts: ${none.map(({ p }) => `${p.name} ${p.audioSec.toFixed(2)} s${postText(p)}`).join(', ')}`);
}
console.log(`\n  PARLEY_STT_SHORT_WINDOW=${WINDOW_SETTING}: ${fmt(wsShortWindowPct)}% of the live recognitions with ${CONCURRENCY} sockets ran with the short window`);
console.log(`\n  client pacing: worst send lag behind the 20 ms schedule ${fmt(ws1Lag)} ms (x1), ${fmt(wsLag)} ms (x${CONCURRENCY}); interim frames received (x${CONCURRENCY}): ${wsInterims}`);
if (post) {
  const ms = post.filter((r) => !r.error).map((r) => r.ms);
  console.log(`  POST /stt/ round trip p50 ${fmt(quantile(ms, 0.5))} ms, p95 ${fmt(quantile(ms, 0.95))} ms; 503 retries ${post503}`);
}
if (raw) console.log(`  raw model: load ${fmt(rawLoadMs, 0)} ms; per prompt p50 ${fmt(quantile(raw.map((r) => r.ms), 0.5))} ms, p95 ${fmt(quantile(raw.map((r) => r.ms), 0.95))} ms`);

const errorLines = [
  ...(post ?? []).map((r, i) => (r.error ? `POST ${prompts[i]?.name}: ${r.error}` : '')),
  ...(ws1 ?? []).map((r, i) => (r.error ? `WSS x1 ${latencySet[i]?.p.name}: ${r.error}` : '')),
  ...(ws ?? []).map((r, i) => (r.error ? `WSS x${CONCURRENCY} ${prompts[i]?.name}: ${r.error}` : '')),
].filter(Boolean);
if (errorLines.length) {
  console.log(`\n  ${errorLines.length} failed requests/sockets:`);
  for (const l of errorLines.slice(0, 15)) console.log(`    ${l}`);
}

// Where the paths disagree most: prompts by (WSS errors - POST errors), then (POST errors - raw errors).
interface Detail {
  name: string;
  audioSec: number;
  reference: string;
  raw?: string;
  post?: string;
  ws?: string;
  errorsFull: { raw?: number; post?: number; ws?: number };
}
const details: Detail[] = prompts.map((p, i) => ({
  name: p.name,
  audioSec: Math.round(p.audioSec * 1000) / 1000,
  reference: p.reference,
  ...(raw ? { raw: raw[i]?.hypothesis } : {}),
  ...(post ? { post: post[i]?.hypothesis } : {}),
  ...(ws ? { ws: ws[i]?.hypothesis } : {}),
  errorsFull: {
    ...(rawScored?.[i] ? { raw: errorCount(rawScored[i].full) } : {}),
    ...(postScored?.[i] ? { post: errorCount(postScored[i].full) } : {}),
    ...(wsScored?.[i] ? { ws: errorCount(wsScored[i].full) } : {}),
  },
}));
const showWorst = (title: string, key: (d: Detail) => number) => {
  const worst = details.filter((d) => key(d) > 0).sort((a, b) => key(b) - key(a)).slice(0, 8);
  if (!worst.length) return;
  console.log(`\n  ${title}:`);
  for (const d of worst) {
    console.log(`    ${d.name} (${d.audioSec.toFixed(1)} s) full errors raw ${d.errorsFull.raw ?? '-'} / POST ${d.errorsFull.post ?? '-'} / WSS ${d.errorsFull.ws ?? '-'}`);
    console.log(`      ref:  ${d.reference}`);
    if (d.raw !== undefined) console.log(`      raw:  ${d.raw}`);
    if (d.post !== undefined) console.log(`      POST: ${d.post}`);
    if (d.ws !== undefined) console.log(`      WSS:  ${d.ws}`);
  }
};
if (wsScored && postScored) showWorst('WSS worse than POST', (d) => (d.errorsFull.ws ?? 0) - (d.errorsFull.post ?? 0));
if (postScored && rawScored) showWorst('POST worse than raw', (d) => (d.errorsFull.post ?? 0) - (d.errorsFull.raw ?? 0));

console.log(`\nserver: exit code on SIGTERM ${serverExit}; ${serverProblems.length} log lines at warn or above / stderr`);
for (const l of serverProblems.slice(0, 15)) console.log(`  ${l.slice(0, 400)}`);
if (failure) console.log(`\nRUN FAILED: ${failure}`);
console.log(`\ntotal run ${fmt(elapsedS() / 60)} min on ${os.cpus().length} CPUs; 1-min load average ${fmt(loadAvg.start, 2)} at the start, ${fmt(loadAvg.end ?? NaN, 2)} at the end`);

// A run with another window setting keeps its own file, to compare with the default's.
const outFile = resultPath(WINDOW_SETTING === 'busy' ? 'stt-api' : `stt-api-window-${WINDOW_SETTING}`);
const result = {
  benchmark: 'stt-api',
  node: process.version,
  platform: `${process.platform}-${process.arch}`,
  timestamp: new Date().toISOString(),
  code,
  runSeconds: r1(elapsedS()),
  cpus: os.cpus().length,
  loadAvg,
  config: {
    prompts: prompts.length,
    speechPromptsAvailable: allSpeech.length,
    subset: prompts.length < allSpeech.length ? subsetNote : 'all speech prompts',
    only: ONLY.length ? ONLY : undefined,
    audioSec: r1(audioTotal),
    parts: [...PARTS],
    wsConcurrency: CONCURRENCY,
    postConcurrency: POST_CONCURRENCY,
    latencyN: latencySet.length,
    shortSeconds: SHORT_S,
    chunkMs: CHUNK_MS,
    trailingSilenceMs: SILENCE_MS,
    eouTimeoutMs: EOU_MS ?? null,
    eouCompareMs: EOU_COMPARE_MS ?? null,
    raw: `WhisperRecognizer.load (intraOpNumThreads 2, beams ${BEAMS}, shortWindow ${SHORT_WINDOW}), loadPrompt16k + splitAtPauses(30 s), as bench/stt-wer-raw.ts`,
    post: 'POST /waves/v1/stt/?model=pulse&language=en, original WAV bytes, content-type audio/wav, 503 retried after 500 ms',
    ws: 'WSS /waves/v1/stt/live?model=pulse&language=en&sample_rate=8000&encoding=linear16; 20 ms linear16 chunks at real-time pace (drift-corrected), then silence, then close_stream; hypothesis = non-empty finals joined',
    latency: 'last audio chunk sent -> first non-empty final arriving after it; speechEnd variant from the chunk holding the last frame above -45 dBFS',
    serverEnv: SERVER_ENV,
  },
  goals: { apiNoWorseThanRaw: true, streamWithinPointsOfBatch: GOAL_STREAM_VS_BATCH_POINTS, latencyP50MsShort: GOAL_LATENCY_P50_MS },
  serverStartMs: r1(startupMs),
  rawLoadMs: r1(rawLoadMs),
  wer: werRows,
  werLatencySubset: subsetRows,
  comparisons,
  sameText,
  latency: latencyRows,
  pacing: { worstLagMsX1: r1(ws1Lag), worstLagMsConcurrent: r1(wsLag) },
  interimsConcurrent: wsInterims,
  wsShortWindowPct: r1(wsShortWindowPct),
  post503Retries: post503,
  errors: errorLines,
  prompts: details.map((d, i) => ({
    ...d,
    rawMs: raw ? r1(raw[i]?.ms ?? NaN) : undefined,
    postMs: post ? r1(post[i]?.ms ?? NaN) : undefined,
    ws: ws ? { ...ws[i], hypothesis: undefined, latencyMs: r1(ws[i]?.latencyMs ?? NaN), fromSpeechEndMs: r1(ws[i]?.fromSpeechEndMs ?? NaN), maxLagMs: r1(ws[i]?.maxLagMs ?? NaN) } : undefined,
    wsText: d.ws,
  })),
  latencyRunX1: ws1 ? ws1.map((r, i) => ({ name: latencySet[i]?.p.name, ...r, latencyMs: r1(r.latencyMs), fromSpeechEndMs: r1(r.fromSpeechEndMs), maxLagMs: r1(r.maxLagMs) })) : null,
  latencyRunX1Compare: ws1Compare ? ws1Compare.map((r, i) => ({ name: latencySet[i]?.p.name, ...r, latencyMs: r1(r.latencyMs), fromSpeechEndMs: r1(r.fromSpeechEndMs), maxLagMs: r1(r.maxLagMs) })) : null,
  server: { exitCode: serverExit, problems: serverProblems },
  failure,
};
writeFileSync(outFile, `${JSON.stringify(result, null, 2)}\n`);
console.log(`wrote ${path.relative(process.cwd(), outFile)}`);
if (failure) process.exitCode = 1;
