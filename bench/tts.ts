// Benchmark: speech synthesis over the real server (npx tsx bench/tts.ts).
//  1. time to first audio for one sentence over SSE (POST /tts/live) and the WebSocket (WSS /tts/live), at
//     concurrency 1 and 8;
//  2. real-time factor per voice (POST /tts, one paragraph, pcm at the voice's native rate);
//  3. round-trip WER: 50 agent sentences synthesised (pcm 16 kHz) and recognised by POST /stt/.
// Env: BENCH_ITERATIONS (timed requests per first-audio case, default 30), BENCH_WARMUP (default 3),
// BENCH_RTF_RUNS (default 5), BENCH_FIRST_AUDIO_VOICES (default: the server's default voice, slt, kal),
// BENCH_WER_VOICES (default: the default voice, slt, kal16, rms, pico-en-US where listed), BENCH_BUDGET_S (default
// 270: extra WER voices are skipped once the run has taken this long).
import { intEnv, stopAndCollectProblems, UNCAPPED_SESSIONS } from './lib/harness.js';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { ROOT, freshStore, startServer, type TestServer } from '../test/support/server.js';
import { AGENT_SENTENCES, GREETING, PARAGRAPH } from './lib/sentences.js';
import { errorCount, scoreText, sumErrors, wer, type WordErrors } from './lib/wer.js';
import { printTable, resultPath, quantile } from './lib/report.js';

const W = '/waves/v1';
const GOAL_FIRST_AUDIO_P50_MS = 150;
const GOAL_WER = 0.05;
const CONCURRENCIES = [1, 8] as const;
/** Besides the server's default voice (listed first): Flite's slt and kal, side by side with it. */
const FIRST_AUDIO_VOICES_ENV = process.env.BENCH_FIRST_AUDIO_VOICES;
const REQUEST_TIMEOUT_MS = 60_000;

const ITERATIONS = intEnv('BENCH_ITERATIONS', 30, 1);
const WARMUP = intEnv('BENCH_WARMUP', 3, 0);
const RTF_RUNS = intEnv('BENCH_RTF_RUNS', 5, 1);
const BUDGET_S = intEnv('BENCH_BUDGET_S', 270, 0);
const WER_VOICES_ENV = process.env.BENCH_WER_VOICES;
const list = (v: string) => v.split(',').map((x) => x.trim()).filter(Boolean);
let WER_VOICES: string[] = [];

const started = performance.now();
const elapsedS = () => (performance.now() - started) / 1000;
const log = (msg: string) => process.stderr.write(`[${elapsedS().toFixed(0).padStart(3)} s] ${msg}\n`);

// ---------------------------------------------------------------------------------------------------------
// Statistics and printing
// ---------------------------------------------------------------------------------------------------------
const r3 = (x: number) => Math.round(x * 1000) / 1000;
/** Nearest-rank quantile (as bench/publish-latency.ts). */
const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const fmt = (x: number, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');


// ---------------------------------------------------------------------------------------------------------
// One request of each kind
// ---------------------------------------------------------------------------------------------------------
interface Voice {
  voiceId: string;
  sampleRate: number;
}

/** One timed synthesis: `firstMs` from the start to the first audio; `error` set when it did not complete cleanly. */
interface Sample {
  firstMs: number;
  totalMs: number;
  /** WebSocket only: time to the `open` event, and first audio measured from sending the message. */
  connectMs?: number;
  firstFromSendMs?: number;
  audioBytes: number;
  error?: string;
}

function ttsBody(text: string, voice: Voice, format: 'pcm' | 'wav' = 'pcm') {
  return { text, voice_id: voice.voiceId, sample_rate: voice.sampleRate, output_format: format, speed: 1 };
}

/** POST /tts/live: time to the first `event: audio` frame with audio, then read to the done marker. */
async function sseOnce(server: TestServer, text: string, voice: Voice): Promise<Sample> {
  const t0 = performance.now();
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), REQUEST_TIMEOUT_MS);
  let firstMs = NaN;
  let audioBytes = 0;
  try {
    const res = await fetch(`${server.base}${W}/tts/live`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(ttsBody(text, voice)),
      signal: ac.signal,
    });
    if (res.status !== 200 || !res.body) {
      const body = await res.text();
      return { firstMs, totalMs: performance.now() - t0, audioBytes, error: `HTTP ${res.status} ${body.slice(0, 160)}` };
    }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    let done = false;
    for (;;) {
      const { value, done: eof } = await reader.read();
      if (value) buf += dec.decode(value, { stream: true });
      for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (data === undefined) continue;
        const msg = JSON.parse(data) as { audio?: string; done?: boolean; status?: string };
        if (event === 'audio' && msg.audio) {
          if (Number.isNaN(firstMs)) firstMs = performance.now() - t0;
          audioBytes += Buffer.from(msg.audio, 'base64').length;
        }
        if (msg.done === true) done = msg.status === '200';
      }
      if (eof) break;
    }
    const totalMs = performance.now() - t0;
    if (!done) return { firstMs, totalMs, audioBytes, error: 'stream ended without {"status":"200","done":true}' };
    if (!audioBytes) return { firstMs, totalMs, audioBytes, error: 'no audio frames' };
    return { firstMs, totalMs, audioBytes };
  } catch (err) {
    return { firstMs, totalMs: performance.now() - t0, audioBytes, error: err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * WSS /tts/live: connects, sends the message as soon as the socket is open, reads chunks until `complete` and
 * close. Gives first audio both from the send (socket already open) and from the connect.
 */
function wsOnce(server: TestServer, text: string, voice: Voice): Promise<Sample> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let tOpen = NaN;
    let tSend = NaN;
    let tFirst = NaN;
    let audioBytes = 0;
    let complete = false;
    let error: string | undefined;
    let settled = false;
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}${W}/tts/live`, { headers: { authorization: `Bearer ${server.key}` } });
    const finish = (extra?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const end = performance.now();
      if (!error && extra) error = extra;
      if (!error && !complete) error = 'closed without {status: "complete"}';
      if (!error && !audioBytes) error = 'no audio chunks';
      resolve({
        firstMs: tFirst - t0,
        totalMs: end - t0,
        connectMs: tOpen - t0,
        firstFromSendMs: tFirst - tSend,
        audioBytes,
        ...(error ? { error } : {}),
      });
    };
    const timer = setTimeout(() => {
      finish('timed out');
      ws.terminate();
    }, REQUEST_TIMEOUT_MS);
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => finish(`upgrade refused: HTTP ${res.statusCode} ${body.slice(0, 160)}`));
      res.on('error', () => finish(`upgrade refused: HTTP ${res.statusCode}`));
    });
    ws.once('error', (err) => finish(`socket error: ${err.message}`));
    ws.once('open', () => {
      tOpen = performance.now();
      ws.send(JSON.stringify({ voice_id: voice.voiceId, text, sample_rate: voice.sampleRate, continue: false, complete_backoff_ms: 0 }));
      tSend = performance.now();
    });
    ws.on('message', (raw) => {
      const now = performance.now();
      let msg: { status?: string; data?: { audio?: string }; error?: { code?: string; message?: string }; message?: string };
      try {
        msg = JSON.parse(raw.toString()) as typeof msg;
      } catch {
        error ??= 'non-JSON frame';
        return;
      }
      if (msg.status === 'chunk' && msg.data?.audio) {
        if (Number.isNaN(tFirst)) tFirst = now;
        audioBytes += Buffer.from(msg.data.audio, 'base64').length;
      } else if (msg.status === 'complete') complete = true;
      else if (msg.status === 'error') error ??= `error frame: ${msg.error?.code ?? ''} ${msg.error?.message ?? msg.message ?? ''}`.trim();
    });
    ws.once('close', (code, reason) => finish(code === 1000 ? undefined : `closed ${code} ${reason.toString()}`));
  });
}

async function ttsWhole(server: TestServer, text: string, voice: Voice): Promise<{ ms: number; pcm: Buffer }> {
  const t0 = performance.now();
  const res = await fetch(`${server.base}${W}/tts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(ttsBody(text, voice)),
  });
  const pcm = Buffer.from(await res.arrayBuffer());
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`POST /tts (${voice.voiceId}) -> ${res.status}: ${pcm.toString('utf8').slice(0, 200)}`);
  return { ms, pcm };
}

async function stt(server: TestServer, pcm16k: Buffer): Promise<{ ms: number; text: string }> {
  const t0 = performance.now();
  const res = await server.request('POST', `${W}/stt/?model=pulse&language=en&encoding=linear16&sample_rate=16000`, {
    raw: pcm16k,
    headers: { 'content-type': 'application/octet-stream' },
  });
  const ms = performance.now() - t0;
  if (res.status !== 200 || typeof res.body?.transcription !== 'string') throw new Error(`POST /stt/ -> ${res.status}: ${res.text.slice(0, 200)}`);
  return { ms, text: res.body.transcription as string };
}

/** Retries a call refused with 503 (busy queue), counting the refusals. */
async function with503Retry<T>(label: string, fn: () => Promise<T>, counter: { n: number }): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt < 5 && err instanceof Error && / -> 503/.test(err.message)) {
        counter.n++;
        log(`${label}: 503, retrying`);
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      throw err;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// 1. Time to first audio
// ---------------------------------------------------------------------------------------------------------
type Transport = 'sse' | 'ws';
interface FirstAudioRow {
  voice: string;
  sampleRate: number;
  metric: 'SSE POST /tts/live' | 'WS, socket open' | 'WS, incl. connect';
  concurrency: number;
  perClient: number;
  n: number;
  errors: number;
  errorSamples: string[];
  p50Ms: number;
  p95Ms: number;
  meanMs: number;
  maxMs: number;
  /** Time to the end of the stream (done / complete). */
  completeP50Ms: number;
  goalP50Ms: number | null;
  meetsGoal: boolean | null;
}

async function firstAudio(server: TestServer, voice: Voice, transport: Transport, concurrency: number): Promise<FirstAudioRow[]> {
  const once = transport === 'sse' ? sseOnce : wsOnce;
  for (let i = 0; i < WARMUP; i++) await once(server, GREETING, voice);
  // Concurrency 1: N sequential requests. Concurrency c: c clients in parallel, each ceil(N/c) sequential requests.
  const perClient = Math.ceil(ITERATIONS / concurrency);
  const clients = Array.from({ length: concurrency }, async () => {
    const out: Sample[] = [];
    for (let i = 0; i < perClient; i++) out.push(await once(server, GREETING, voice));
    return out;
  });
  const samples = (await Promise.all(clients)).flat();
  const ok = samples.filter((s) => !s.error);
  const errs = samples.filter((s) => s.error).map((s) => s.error as string);
  const errorSamples = [...new Set(errs)].slice(0, 5);
  const row = (metric: FirstAudioRow['metric'], ms: number[], completes: number[]): FirstAudioRow => {
    const p50 = quantile(ms, 0.5);
    const goal = concurrency === 1 && metric !== 'WS, incl. connect' ? GOAL_FIRST_AUDIO_P50_MS : null;
    return {
      voice: voice.voiceId,
      sampleRate: voice.sampleRate,
      metric,
      concurrency,
      perClient,
      n: ms.length,
      errors: errs.length,
      errorSamples,
      p50Ms: r3(p50),
      p95Ms: r3(quantile(ms, 0.95)),
      meanMs: r3(mean(ms)),
      maxMs: r3(Math.max(...ms)),
      completeP50Ms: r3(quantile(completes, 0.5)),
      goalP50Ms: goal,
      meetsGoal: goal === null ? null : p50 <= goal,
    };
  };
  const totals = ok.map((s) => s.totalMs);
  if (transport === 'sse') return [row('SSE POST /tts/live', ok.map((s) => s.firstMs), totals)];
  return [
    row('WS, socket open', ok.map((s) => s.firstFromSendMs ?? NaN), ok.map((s) => s.totalMs - (s.connectMs ?? 0))),
    row('WS, incl. connect', ok.map((s) => s.firstMs), totals),
  ];
}

// ---------------------------------------------------------------------------------------------------------
// 2. Real-time factor
// ---------------------------------------------------------------------------------------------------------
interface RtfRow {
  voice: string;
  sampleRate: number;
  runs: number;
  audioSec: number;
  synthMsMedian: number;
  synthMsMin: number;
  rtfMedian: number;
}

async function realTimeFactor(server: TestServer, voice: Voice, busy: { n: number }): Promise<RtfRow> {
  await with503Retry(`rtf ${voice.voiceId}`, () => ttsWhole(server, PARAGRAPH, voice), busy); // warm-up
  const ms: number[] = [];
  const rtf: number[] = [];
  let audioSec = NaN;
  for (let i = 0; i < RTF_RUNS; i++) {
    const r = await with503Retry(`rtf ${voice.voiceId}`, () => ttsWhole(server, PARAGRAPH, voice), busy);
    audioSec = r.pcm.length / 2 / voice.sampleRate;
    if (!(audioSec > 0)) throw new Error(`POST /tts (${voice.voiceId}) returned no audio`);
    ms.push(r.ms);
    rtf.push(r.ms / 1000 / audioSec);
  }
  return {
    voice: voice.voiceId,
    sampleRate: voice.sampleRate,
    runs: RTF_RUNS,
    audioSec: r3(audioSec),
    synthMsMedian: r3(quantile(ms, 0.5)),
    synthMsMin: r3(Math.min(...ms)),
    rtfMedian: Math.round(quantile(rtf, 0.5) * 10000) / 10000,
  };
}

// ---------------------------------------------------------------------------------------------------------
// 3. Round-trip WER
// ---------------------------------------------------------------------------------------------------------
interface SentenceResult {
  reference: string;
  hypothesis: string;
  audioSec: number;
  synthMs: number;
  sttMs: number;
  errors: WordErrors;
}
interface WerRow {
  voice: string;
  sentences: number;
  refWords: number;
  substitutions: number;
  deletions: number;
  insertions: number;
  wer: number;
  werPlain: number;
  sentencesWithErrors: number;
  synthMsP50: number;
  sttMsP50: number;
  audioSec: number;
  goal: number;
  meetsGoal: boolean;
}

async function roundTrip(server: TestServer, voiceId: string, busy: { n: number }): Promise<{ row: WerRow; results: SentenceResult[] }> {
  const voice: Voice = { voiceId, sampleRate: 16000 };
  const results: SentenceResult[] = new Array<SentenceResult>(AGENT_SENTENCES.length);
  let next = 0;
  // Two requests in flight (the server runs two inference jobs at once by default); this is accuracy, not latency.
  const worker = async () => {
    for (let i = next++; i < AGENT_SENTENCES.length; i = next++) {
      const reference = AGENT_SENTENCES[i] as string;
      const s = await with503Retry(`wer ${voiceId} tts`, () => ttsWhole(server, reference, voice), busy);
      const h = await with503Retry(`wer ${voiceId} stt`, () => stt(server, s.pcm), busy);
      results[i] = { reference, hypothesis: h.text.trim(), audioSec: s.pcm.length / 2 / 16000, synthMs: s.ms, sttMs: h.ms, errors: scoreText(reference, h.text) };
    }
  };
  await Promise.all([worker(), worker()]);
  const total = sumErrors(results.map((r) => r.errors));
  const plain = sumErrors(results.map((r) => scoreText(r.reference, r.hypothesis, 'plain')));
  const w = wer(total);
  return {
    results,
    row: {
      voice: voiceId,
      sentences: results.length,
      refWords: total.refWords,
      substitutions: total.substitutions,
      deletions: total.deletions,
      insertions: total.insertions,
      wer: Math.round(w * 10000) / 10000,
      werPlain: Math.round(wer(plain) * 10000) / 10000,
      sentencesWithErrors: results.filter((r) => errorCount(r.errors) > 0).length,
      synthMsP50: r3(quantile(results.map((r) => r.synthMs), 0.5)),
      sttMsP50: r3(quantile(results.map((r) => r.sttMs), 0.5)),
      audioSec: r3(results.reduce((a, r) => a + r.audioSec, 0)),
      goal: GOAL_WER,
      meetsGoal: w <= GOAL_WER,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------------------
const store = freshStore('sqlite');
let server: TestServer | null = null;
const firstRows: FirstAudioRow[] = [];
const rtfRows: RtfRow[] = [];
const werRows: WerRow[] = [];
const werDetail: Record<string, SentenceResult[]> = {};
const skipped: string[] = [];
const busy = { n: 0 };
let startupMs = NaN;
let serverExit: number | null = null;
let serverProblems: string[] = [];
let failure: string | null = null;

try {
  const t0 = performance.now();
  server = await startServer({
    store,
    env: { ...UNCAPPED_SESSIONS, PARLEY_WARM_MODELS: 'true', PARLEY_RATE_LIMIT_PER_MINUTE: '1000000', PARLEY_TOKEN_MINTS_PER_MINUTE: '100000' },
  });
  startupMs = performance.now() - t0;
  const s = server;
  log(`server listening on ${s.port} after ${startupMs.toFixed(0)} ms (models warmed)`);

  const listed = await s.request('GET', `${W}/voice/get-all-models`);
  if (listed.status !== 200) throw new Error(`GET /voice/get-all-models -> ${listed.status}: ${listed.text}`);
  const voices = (listed.body.voices as { voiceId: string; sampleRate: number }[]).map((v) => ({ voiceId: v.voiceId, sampleRate: v.sampleRate }));
  const byId = (id: string): Voice => {
    const v = voices.find((x) => x.voiceId === id);
    if (!v) throw new Error(`voice ${id} not listed (have ${voices.map((x) => x.voiceId).join(', ')})`);
    return v;
  };

  // The default voice (the catalog lists it first) and the optional engines' English voices where installed, beside
  // Flite's: the goals compare them.
  const listedIds = new Set(voices.map((v) => v.voiceId));
  const defaultVoice = voices[0]?.voiceId ?? 'slt';
  const FIRST_AUDIO_VOICES = FIRST_AUDIO_VOICES_ENV ? list(FIRST_AUDIO_VOICES_ENV) : [...new Set([defaultVoice, 'slt', 'kal'])];
  WER_VOICES = WER_VOICES_ENV ? list(WER_VOICES_ENV) : [...new Set([defaultVoice, 'slt', 'kal16', 'rms', 'pico-en-US'])].filter((v) => listedIds.has(v));
  for (const id of FIRST_AUDIO_VOICES) {
    for (const c of CONCURRENCIES) {
      for (const t of ['sse', 'ws'] as const) {
        log(`first audio: ${id} ${t} concurrency ${c}`);
        firstRows.push(...(await firstAudio(s, byId(id), t, c)));
      }
    }
  }

  for (const v of voices) {
    log(`real-time factor: ${v.voiceId}`);
    rtfRows.push(await realTimeFactor(s, v, busy));
  }

  for (const [i, id] of WER_VOICES.entries()) {
    if (i > 0 && elapsedS() > BUDGET_S) {
      skipped.push(`WER ${id}: skipped, run already took ${elapsedS().toFixed(0)} s (BENCH_BUDGET_S=${BUDGET_S})`);
      continue;
    }
    log(`round-trip WER: ${id} (${AGENT_SENTENCES.length} sentences)`);
    byId(id);
    const r = await roundTrip(s, id, busy);
    werRows.push(r.row);
    werDetail[id] = r.results;
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
const goalCell = (r: { meetsGoal: boolean | null }, goal: string) => (r.meetsGoal === null ? '' : `${goal} ${r.meetsGoal ? 'MET' : 'MISSED'}`);
console.log(`\nSpeech synthesis over the real server (node ${process.version}, ${process.platform}-${process.arch}); server start ${fmt(startupMs, 0)} ms with PARLEY_WARM_MODELS=true`);
printTable(
  `1. Time to first audio, "${GREETING}" (pcm at the voice's native rate). ${ITERATIONS} timed requests per case after ${WARMUP} warm-up; ` +
    `concurrency 8 = 8 clients in parallel, each ceil(N/8) = ${Math.ceil(ITERATIONS / 8)} sequential requests. ` +
    'WS: one socket per request (the server closes after complete); "socket open" times from send, "incl. connect" from new WebSocket().',
  ['voice', 'path', 'conc', 'n', 'err', 'p50 ms', 'p95 ms', 'mean ms', 'max ms', 'end p50 ms', 'goal (p50 <= 150 ms at conc 1)'],
  firstRows.map((r) => [
    `${r.voice} (${r.sampleRate / 1000} kHz)`,
    r.metric,
    String(r.concurrency),
    String(r.n),
    String(r.errors),
    fmt(r.p50Ms),
    fmt(r.p95Ms),
    fmt(r.meanMs),
    fmt(r.maxMs),
    fmt(r.completeP50Ms),
    goalCell(r, `${fmt(r.p50Ms)} <= 150`),
  ]),
  2,
);
const errored = firstRows.filter((r) => r.errors > 0);
for (const r of errored) console.log(`  ${r.voice} ${r.metric} conc ${r.concurrency}: ${r.errors} failed: ${r.errorSamples.join(' | ')}`);

printTable(
  `2. Real-time factor, POST /tts pcm at the native rate, a ${PARAGRAPH.length}-character 3-sentence paragraph; median of ${RTF_RUNS} runs after 1 warm-up (RTF = wall time / audio duration)`,
  ['voice', 'rate Hz', 'audio s', 'wall p50 ms', 'wall min ms', 'RTF p50', 'x real time'],
  rtfRows.map((r) => [r.voice, String(r.sampleRate), fmt(r.audioSec, 2), fmt(r.synthMsMedian), fmt(r.synthMsMin), fmt(r.rtfMedian, 4), fmt(1 / r.rtfMedian, 1)]),
  1,
);

printTable(
  `3. Round-trip WER: ${AGENT_SENTENCES.length} agent sentences -> POST /tts (pcm 16 kHz) -> POST /stt/ (linear16 16 kHz), corpus WER with full normalisation (bench/lib/wer.ts)`,
  ['voice', 'sent', 'ref words', 'S', 'D', 'I', 'WER', 'WER plain', 'sent w/ err', 'tts p50 ms', 'stt p50 ms', 'goal (WER <= 5%)'],
  werRows.map((r) => [
    r.voice,
    String(r.sentences),
    String(r.refWords),
    String(r.substitutions),
    String(r.deletions),
    String(r.insertions),
    `${(r.wer * 100).toFixed(2)}%`,
    `${(r.werPlain * 100).toFixed(2)}%`,
    String(r.sentencesWithErrors),
    fmt(r.synthMsP50),
    fmt(r.sttMsP50),
    `${(r.wer * 100).toFixed(2)}% <= 5% ${r.meetsGoal ? 'MET' : 'MISSED'}`,
  ]),
  1,
);
for (const [voice, results] of Object.entries(werDetail)) {
  const worst = [...results].filter((r) => errorCount(r.errors) > 0).sort((a, b) => errorCount(b.errors) - errorCount(a.errors)).slice(0, 6);
  if (!worst.length) continue;
  console.log(`\n  worst sentences, ${voice}:`);
  for (const r of worst) console.log(`    [${errorCount(r.errors)}/${r.errors.refWords}] ref: ${r.reference}\n${' '.repeat(4 + String(errorCount(r.errors)).length + String(r.errors.refWords).length + 4)}hyp: ${r.hypothesis}`);
}
for (const s of skipped) console.log(`\n${s}`);

console.log(`\nserver: ${busy.n} busy (503) refusals retried in sections 2-3; exit code on SIGTERM ${serverExit}; ${serverProblems.length} log lines at warn or above / stderr`);
for (const l of serverProblems.slice(0, 15)) console.log(`  ${l.slice(0, 400)}`);
if (failure) console.log(`\nRUN FAILED: ${failure}`);

const outFile = resultPath('tts');
const result = {
  benchmark: 'tts',
  node: process.version,
  platform: `${process.platform}-${process.arch}`,
  timestamp: new Date().toISOString(),
  runSeconds: r3(elapsedS()),
  config: {
    iterations: ITERATIONS,
    warmup: WARMUP,
    rtfRuns: RTF_RUNS,
    werVoices: WER_VOICES,
    concurrencyModel: 'concurrency c: c parallel clients, each ceil(iterations / c) sequential requests',
    wsModel: 'one socket per request; "WS, socket open" timed from send on the open socket, "WS, incl. connect" from new WebSocket()',
    greeting: GREETING,
    paragraph: PARAGRAPH,
    serverEnv: { PARLEY_WARM_MODELS: 'true', PARLEY_RATE_LIMIT_PER_MINUTE: '1000000', PARLEY_TOKEN_MINTS_PER_MINUTE: '100000' },
  },
  goals: { firstAudioP50MsAtConcurrency1: GOAL_FIRST_AUDIO_P50_MS, roundTripWer: GOAL_WER },
  serverStartMs: r3(startupMs),
  firstAudio: firstRows,
  realTimeFactor: rtfRows,
  roundTripWer: werRows,
  roundTripDetail: Object.fromEntries(
    Object.entries(werDetail).map(([v, rs]) => [v, rs.map((r) => ({ ...r, audioSec: r3(r.audioSec), synthMs: r3(r.synthMs), sttMs: r3(r.sttMs) }))]),
  ),
  skipped,
  server: { busy503Retried: busy.n, exitCode: serverExit, problems: serverProblems },
  failure,
};
writeFileSync(outFile, `${JSON.stringify(result, null, 2)}\n`);
console.log(`\nwrote ${path.relative(process.cwd(), outFile)}`);
if (failure) process.exitCode = 1;
