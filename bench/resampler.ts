// Benchmark: resampler quality (SNR against an analytic sweep) and speed, ours vs libsamplerate-js and speex (npx tsx bench/resampler.ts).
//
// Signal: exponential sine sweep, amplitude 0.5, 5 s, from 20 Hz to 0.45 x the input rate (so downsampling also
// shows how well content above the new Nyquist is removed). Reference: the same sweep computed analytically at the
// output instants, band-limited to the lower Nyquist: equal to the sweep while its instantaneous frequency is at most
// 0.45 x the lower rate ("pass"), zero once it is at least 0.55 x the lower rate ("stop", only when downsampling),
// and not scored in between (transition band) nor in the first and last 100 ms.
//   snr   = 10 log10(sum ref^2 / sum (out - ref)^2) over pass + stop  (in-band error, images and aliases together)
//   pass  = the same over pass only;  alias = output energy in stop relative to the input sweep's energy there
// Each implementation's output is aligned by the fractional delay (in output samples) that maximises snr; the delay
// is reported. Latency: output still owed when a 20 ms-chunked stream's input ends (before any flush), in ms.
// Speed: ms of CPU per second of audio (median and p95 of BENCH_RUNS runs after one warm-up), one-shot
// on the whole 5 s and streaming in 20 ms chunks. Ratios are against libsamplerate SINC_BEST_QUALITY run beside.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import { RESAMPLE_QUALITIES, Resampler, resample, type ResampleQuality } from '../engine/audio/resample.js';
import { concatSamples } from '../engine/audio/types.js';

const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 7));
const SECONDS = 5;
const AMP = 0.5;
const EDGE_S = 0.1;
// BENCH_PAIRS="48000:16000,8000:16000" and BENCH_IMPLS="own-high,lsr-best,speex-q10" narrow a run (the baseline always runs).
const PAIRS: [number, number][] = process.env.BENCH_PAIRS
  ? process.env.BENCH_PAIRS.split(',').map((p) => p.split(':').map(Number) as [number, number])
  : [
      [8000, 16000], [16000, 8000], [16000, 48000], [48000, 16000], [44100, 16000], [22050, 16000],
      [24000, 8000], [16000, 24000], [24000, 16000], [22050, 44100], [16000, 44100], [24000, 48000],
    ];
const ONLY = process.env.BENCH_IMPLS?.split(',');
const BASELINE = 'lsr-best';
// libsamplerate-js is a webpack UMD bundle: Node's ESM loader sees no named exports, so load it with require().
const { create: createSrc, ConverterType } = createRequire(import.meta.url)(
  '@alexanderolsen/libsamplerate-js',
) as typeof import('@alexanderolsen/libsamplerate-js');
type ConverterTypeValue = (typeof ConverterType)[keyof typeof ConverterType];

/** One resampler under test: one-shot and (where it has one) a streaming form. */
interface Impl {
  name: string;
  streaming: string; // how it streams, for the table note
  oneShot(x: Float32Array, from: number, to: number): Promise<{ out: Float32Array; ms: number }>;
  /** `held`: output samples still owed when the input ends (before any flush) = the streaming latency. */
  stream?(x: Float32Array, from: number, to: number, chunk: number): Promise<{ out: Float32Array; ms: number; held: number }>;
}

// ---------- ours ----------
function ownImpl(quality: ResampleQuality): Impl {
  return {
    name: `own-${quality}`,
    streaming: 'sync push/flush, exact tail',
    async oneShot(x, from, to) {
      const t0 = performance.now();
      const out = resample(x, from, to, { quality });
      return { out, ms: performance.now() - t0 };
    },
    async stream(x, from, to, chunk) {
      const r = new Resampler(from, to, { quality });
      const parts: Float32Array[] = [];
      const t0 = performance.now();
      for (let i = 0; i < x.length; i += chunk) parts.push(r.push(x.subarray(i, i + chunk)));
      const before = parts.reduce((n, p) => n + p.length, 0);
      parts.push(r.flush());
      const ms = performance.now() - t0;
      return { out: concat(parts), ms, held: Math.ceil((x.length * to) / from) - before };
    },
  };
}

// ---------- libsamplerate-js (async create; simple() one-shot; full() streams but cannot signal end of input) ----------
function lsrImpl(label: string, type: ConverterTypeValue): Impl {
  return {
    name: `lsr-${label}`,
    streaming: 'async create, sync full(); no end-of-input flush (tail lost)',
    async oneShot(x, from, to) {
      const src = await createSrc(1, from, to, { converterType: type });
      const t0 = performance.now();
      const out = src.simple(x);
      const ms = performance.now() - t0;
      src.destroy();
      return { out, ms };
    },
    async stream(x, from, to, chunk) {
      const src = await createSrc(1, from, to, { converterType: type });
      const parts: Float32Array[] = [];
      const t0 = performance.now();
      for (let i = 0; i < x.length; i += chunk) parts.push(src.full(x.subarray(i, i + chunk)));
      const ms = performance.now() - t0;
      src.destroy();
      const out = concat(parts);
      return { out, ms, held: Math.ceil((x.length * to) / from) - out.length };
    },
  };
}

// ---------- speex (raw WASM exports; async instantiate, sync process) ----------
interface SpeexModule {
  HEAPF32: Float32Array;
  HEAPU32: Uint32Array;
  _malloc(n: number): number;
  _free(p: number): void;
  _speex_resampler_init(ch: number, inRate: number, outRate: number, quality: number, errPtr: number): number;
  _speex_resampler_process_float(st: number, ch: number, inPtr: number, inLenPtr: number, outPtr: number, outLenPtr: number): number;
  _speex_resampler_skip_zeros(st: number): number;
  _speex_resampler_get_input_latency(st: number): number;
  _speex_resampler_destroy(st: number): void;
}
const SPEEX_PKG = '@echogarden/speex-resampler-wasm/simd';
let speexModule: Promise<SpeexModule> | undefined;
async function loadSpeex(): Promise<SpeexModule> {
  speexModule ??= import(SPEEX_PKG).then((m: { default: () => Promise<SpeexModule> }) => m.default());
  return speexModule;
}

class SpeexStream {
  private static readonly CAP = 16384;
  private readonly st: number;
  private readonly inPtr: number;
  private readonly outPtr: number;
  private readonly lenPtr: number;
  private readonly outCap: number;

  constructor(private readonly m: SpeexModule, from: number, to: number, quality: number) {
    const err = m._malloc(4);
    this.st = m._speex_resampler_init(1, from, to, quality, err);
    m._free(err);
    if (!this.st) throw new Error('speex_resampler_init failed');
    m._speex_resampler_skip_zeros(this.st);
    this.outCap = Math.ceil((SpeexStream.CAP * to) / from) + 64;
    this.inPtr = m._malloc(SpeexStream.CAP * 4);
    this.outPtr = m._malloc(this.outCap * 4);
    this.lenPtr = m._malloc(8);
  }

  get latency(): number {
    return this.m._speex_resampler_get_input_latency(this.st);
  }

  push(x: Float32Array): Float32Array {
    const m = this.m;
    const parts: Float32Array[] = [];
    for (let off = 0; off < x.length; ) {
      const n = Math.min(x.length - off, SpeexStream.CAP);
      m.HEAPF32.set(x.subarray(off, off + n), this.inPtr >> 2);
      m.HEAPU32[this.lenPtr >> 2] = n;
      m.HEAPU32[(this.lenPtr >> 2) + 1] = this.outCap;
      m._speex_resampler_process_float(this.st, 0, this.inPtr, this.lenPtr, this.outPtr, this.lenPtr + 4);
      const used = m.HEAPU32[this.lenPtr >> 2]!;
      const made = m.HEAPU32[(this.lenPtr >> 2) + 1]!;
      parts.push(m.HEAPF32.slice(this.outPtr >> 2, (this.outPtr >> 2) + made));
      off += used;
      if (used === 0 && made === 0) break;
    }
    return concat(parts);
  }

  destroy(): void {
    const m = this.m;
    m._speex_resampler_destroy(this.st);
    m._free(this.inPtr);
    m._free(this.outPtr);
    m._free(this.lenPtr);
  }
}

function speexImpl(quality: number): Impl {
  return {
    name: `speex-q${quality}`,
    streaming: 'async instantiate, sync process; flush by feeding latency zeros',
    async oneShot(x, from, to) {
      const s = new SpeexStream(await loadSpeex(), from, to, quality);
      const t0 = performance.now();
      const out = concat([s.push(x), s.push(new Float32Array(s.latency))]).subarray(0, Math.ceil((x.length * to) / from));
      const ms = performance.now() - t0;
      s.destroy();
      return { out, ms };
    },
    async stream(x, from, to, chunk) {
      const s = new SpeexStream(await loadSpeex(), from, to, quality);
      const parts: Float32Array[] = [];
      const t0 = performance.now();
      for (let i = 0; i < x.length; i += chunk) parts.push(s.push(x.subarray(i, i + chunk)));
      const before = parts.reduce((n, p) => n + p.length, 0);
      parts.push(s.push(new Float32Array(s.latency)));
      const ms = performance.now() - t0;
      s.destroy();
      return { out: concat(parts), ms, held: Math.ceil((x.length * to) / from) - before };
    },
  };
}

// ---------- signal and scoring ----------
const concat = concatSamples;

interface Sweep { f0: number; f1: number; phase(t: number): number; freq(t: number): number }
function sweep(f1: number): Sweep {
  const f0 = 20;
  const k = Math.log(f1 / f0) / SECONDS;
  return { f0, f1, phase: (t) => ((2 * Math.PI * f0) / k) * (Math.exp(k * t) - 1), freq: (t) => f0 * Math.exp(k * t) };
}

function sweepSamples(s: Sweep, rate: number): Float32Array {
  const x = new Float32Array(SECONDS * rate);
  for (let n = 0; n < x.length; n++) x[n] = AMP * Math.sin(s.phase(n / rate));
  return x;
}

interface Score { snr: number; pass: number; alias: number | null; delay: number }

/** Scores `out` at `rate` against the band-limited sweep delayed by `delay` output samples; `step` subsamples. */
function scoreAt(out: Float32Array, s: Sweep, rate: number, lowRate: number, delay: number, step = 1): Score {
  const passMax = 0.45 * lowRate;
  const stopMin = 0.55 * lowRate;
  let sig = 0, errPass = 0, errStop = 0, outStop = 0, refStop = 0;
  const k0 = Math.ceil(EDGE_S * rate);
  const k1 = Math.min(out.length, Math.floor((SECONDS - EDGE_S) * rate));
  for (let k = k0; k < k1; k += step) {
    const t = (k - delay) / rate;
    const f = s.freq(t);
    const y = out[k]!;
    if (f <= passMax) {
      const r = AMP * Math.sin(s.phase(t));
      sig += r * r;
      errPass += (y - r) * (y - r);
    } else if (f >= stopMin) {
      errStop += y * y;
      outStop += y * y;
      refStop += AMP * AMP * 0.5;
    }
  }
  return {
    snr: 10 * Math.log10(sig / (errPass + errStop)),
    pass: 10 * Math.log10(sig / errPass),
    alias: refStop > 0 ? 10 * Math.log10(Math.max(outStop, 1e-30) / refStop) : null,
    delay,
  };
}

/** Finds the delay (output samples, |d| <= 8) that maximises snr: coarse grid on a subsample, then golden section. */
function score(out: Float32Array, s: Sweep, rate: number, lowRate: number): Score {
  let best = -Infinity, bestD = 0;
  for (let d = -8; d <= 8; d += 0.125) {
    const v = scoreAt(out, s, rate, lowRate, d, 5).snr;
    if (v > best) [best, bestD] = [v, d];
  }
  let a = bestD - 0.125, b = bestD + 0.125;
  const g = (Math.sqrt(5) - 1) / 2;
  let c = b - g * (b - a), d = a + g * (b - a);
  let fc = scoreAt(out, s, rate, lowRate, c).snr, fd = scoreAt(out, s, rate, lowRate, d).snr;
  for (let i = 0; i < 30; i++) {
    if (fc > fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - g * (b - a);
      fc = scoreAt(out, s, rate, lowRate, c).snr;
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + g * (b - a);
      fd = scoreAt(out, s, rate, lowRate, d).snr;
    }
  }
  return scoreAt(out, s, rate, lowRate, (a + b) / 2);
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

interface Row {
  impl: string; from: number; to: number; outLen: number; expectedLen: number;
  snrDb: number; passDb: number; aliasDb: number | null; delaySamples: number;
  oneShotMsPerS: { p50: number; p95: number }; streamMsPerS: { p50: number; p95: number } | null; latencyMs: number | null;
  oneShotRatio: number; streamRatio: number | null; snrVsBaselineDb: number;
}

async function main(): Promise<void> {
  const impls: Impl[] = [
    ...(Object.keys(RESAMPLE_QUALITIES) as ResampleQuality[]).map(ownImpl),
    lsrImpl('best', ConverterType.SRC_SINC_BEST_QUALITY), lsrImpl('medium', ConverterType.SRC_SINC_MEDIUM_QUALITY),
    lsrImpl('fastest', ConverterType.SRC_SINC_FASTEST),
    speexImpl(3), speexImpl(5), speexImpl(7), speexImpl(10),
  ].filter((i) => !ONLY || ONLY.includes(i.name) || i.name === BASELINE);
  const rows: Row[] = [];
  for (const [from, to] of PAIRS) {
    const s = sweep(0.45 * from);
    const x = sweepSamples(s, from);
    const chunk = from / 50; // 20 ms
    const pairRows: Omit<Row, 'oneShotRatio' | 'streamRatio' | 'snrVsBaselineDb'>[] = [];
    for (const impl of impls) {
      const first = await impl.oneShot(x, from, to); // warm-up, and the output we score
      const sc = score(first.out, s, to, Math.min(from, to));
      const one: number[] = [];
      for (let r = 0; r < RUNS; r++) one.push(((await impl.oneShot(x, from, to)).ms / SECONDS));
      let str: number[] | null = null;
      let latencyMs: number | null = null;
      if (impl.stream) {
        latencyMs = ((await impl.stream(x, from, to, chunk)).held / to) * 1000;
        str = [];
        for (let r = 0; r < RUNS; r++) str.push((await impl.stream(x, from, to, chunk)).ms / SECONDS);
      }
      pairRows.push({
        impl: impl.name, from, to, outLen: first.out.length, expectedLen: Math.ceil((x.length * to) / from),
        snrDb: sc.snr, passDb: sc.pass, aliasDb: sc.alias, delaySamples: sc.delay,
        oneShotMsPerS: { p50: pct(one, 50), p95: pct(one, 95) },
        streamMsPerS: str ? { p50: pct(str, 50), p95: pct(str, 95) } : null,
        latencyMs,
      });
    }
    const base = pairRows.find((r) => r.impl === BASELINE)!;
    for (const r of pairRows) {
      rows.push({
        ...r,
        oneShotRatio: r.oneShotMsPerS.p50 / base.oneShotMsPerS.p50,
        streamRatio: r.streamMsPerS && base.streamMsPerS ? r.streamMsPerS.p50 / base.streamMsPerS.p50 : null,
        snrVsBaselineDb: r.snrDb - base.snrDb,
      });
    }
    printPair(rows.filter((r) => r.from === from && r.to === to));
  }
  const summary = impls.map((impl) => {
    const mine = rows.filter((r) => r.impl === impl.name);
    const geo = (xs: number[]) => Math.exp(xs.reduce((a, b) => a + Math.log(b), 0) / xs.length);
    return {
      impl: impl.name, streaming: impl.streaming,
      minSnrDb: Math.min(...mine.map((r) => r.snrDb)), medianSnrDb: pct(mine.map((r) => r.snrDb), 50),
      worstAliasDb: Math.max(...mine.flatMap((r) => (r.aliasDb === null ? [] : [r.aliasDb]))),
      medianStreamMsPerS: pct(mine.map((r) => r.streamMsPerS?.p50 ?? NaN), 50),
      maxLatencyMs: Math.max(...mine.map((r) => r.latencyMs ?? NaN)),
      maxStreamMsPerS: Math.max(...mine.map((r) => r.streamMsPerS?.p50 ?? NaN)),
      geoStreamRatio: geo(mine.map((r) => r.streamRatio ?? NaN)), geoOneShotRatio: geo(mine.map((r) => r.oneShotRatio)),
    };
  });
  console.log('\nSummary over all pairs (stream = 20 ms chunks; ratio = geometric mean of time vs lsr-best)');
  console.log(
    pad('impl', 12) + pad('min SNR', 9) + pad('med SNR', 9) + pad('worst alias', 12) + pad('stream ms/s med', 16) +
      pad('max', 7) + pad('ratio', 7) + pad('max lat ms', 11) + 'streaming',
  );
  for (const s of summary) {
    console.log(
      pad(s.impl, 12) + pad(s.minSnrDb.toFixed(1), 9) + pad(s.medianSnrDb.toFixed(1), 9) + pad(s.worstAliasDb.toFixed(1), 12) +
        pad(s.medianStreamMsPerS.toFixed(2), 16) + pad(s.maxStreamMsPerS.toFixed(2), 7) + pad(s.geoStreamRatio.toFixed(2), 7) +
        pad(s.maxLatencyMs.toFixed(1), 11) + s.streaming,
    );
  }
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'resampler.json');
  writeFileSync(
    file,
    JSON.stringify({ date: new Date().toISOString(), node: process.version, runs: RUNS, seconds: SECONDS, baseline: BASELINE, summary, rows }, null, 2),
  );
  console.log(`\nwrote ${path.relative(process.cwd(), file)}`);
}

function pad(s: string, n: number): string {
  return s.length >= n ? s + ' ' : s + ' '.repeat(n - s.length);
}

function printPair(rows: Row[]): void {
  const r0 = rows[0]!;
  console.log(`\n${r0.from} -> ${r0.to} Hz   (SNR/pass/alias dB; ms per s of audio, median [p95]; ratio = time / ${BASELINE})`);
  console.log(
    pad('impl', 12) + pad('SNR', 7) + pad('pass', 7) + pad('alias', 8) + pad('delay', 7) + pad('len', 7) +
      pad('one-shot ms/s', 16) + pad('ratio', 7) + pad('stream ms/s', 16) + pad('ratio', 7) + 'lat ms',
  );
  for (const r of rows) {
    console.log(
      pad(r.impl, 12) + pad(r.snrDb.toFixed(1), 7) + pad(r.passDb.toFixed(1), 7) + pad(r.aliasDb === null ? '-' : r.aliasDb.toFixed(1), 8) +
        pad(r.delaySamples.toFixed(2), 7) + pad(String(r.outLen - r.expectedLen), 7) +
        pad(`${r.oneShotMsPerS.p50.toFixed(2)} [${r.oneShotMsPerS.p95.toFixed(2)}]`, 16) + pad(r.oneShotRatio.toFixed(2), 7) +
        pad(r.streamMsPerS ? `${r.streamMsPerS.p50.toFixed(2)} [${r.streamMsPerS.p95.toFixed(2)}]` : '-', 16) +
        pad(r.streamRatio === null ? '-' : r.streamRatio.toFixed(2), 7) + (r.latencyMs === null ? '-' : r.latencyMs.toFixed(1)),
    );
  }
}

await main();
