// RHVoice speech synthesis (Debian's librhvoice5 + rhvoice-english, through koffi) on a pool of worker threads, as
// Flite runs: each worker holds one engine with our four voices loaded, and speaks one phrase at a time (RHVoice_speak
// blocks its thread for ~2-5% of the audio's duration). Audio comes at 24 kHz, with word timings from the engine's
// word_starts/word_ends callbacks; callers resample it to their rate (engine/tts/output.ts) as they do Flite's.
import { Worker } from 'node:worker_threads';
import type { MonoAudio } from '../../audio/types.js';
import { speakableText } from '../flite-text.js';
import { RHVOICE_DATA_DIR, RHVOICE_SAMPLE_RATE, rhvoiceResourcePaths, type RhvoiceVoiceInfo, type WordTiming } from './catalog.js';
import type { RhvoiceSpeech } from './binding.js';

export { RHVOICE_VOICES, RHVOICE_DATA_DIR, RHVOICE_SAMPLE_RATE, findRhvoice, type RhvoiceVoiceInfo, type WordTiming } from './catalog.js';

/** Synthesised speech and, where the engine tells them, each word's place in it. */
export interface TimedSpeech extends MonoAudio {
  words?: WordTiming[];
}

export interface RhvoiceSynthesizerOptions {
  /** The voices to load (those findRhvoice found). */
  voices: readonly RhvoiceVoiceInfo[];
  dataDir?: string;
  /** Worker threads (started at the first phrase or at warmup; kept idle and unref'd). Default 1. */
  workers?: number;
  /** Nice value of the worker threads (see FliteSynthesizerOptions.nice). */
  nice?: number;
  /** Cap on characters per phrase (the streaming layer sends sentences). Default 2000. */
  maxChars?: number;
}

export class RhvoiceError extends Error {
  override name = 'RhvoiceError';
}

/** Text as RHVoice gets it: the written forms Flite's front end rewrites (dates, addresses, #5, £/€), no control characters, capped. */
export function rhvoiceText(text: string, maxChars: number): string {
  let s = speakableText(text.normalize('NFC')).replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cn}]/gu, ' ').replace(/\s+/g, ' ').trim();
  if (s.length > maxChars) {
    const cut = s.slice(0, maxChars);
    const space = cut.lastIndexOf(' ');
    s = (space > maxChars * 0.8 ? cut.slice(0, space) : cut).trim();
  }
  return s;
}

interface Job {
  text: string;
  profile: string;
  speed: number;
  resolve: (s: RhvoiceSpeech) => void;
  reject: (e: Error) => void;
}

interface PoolWorker {
  worker: Worker;
  ready: Promise<void>;
  /** It has loaded the voices and listens. */
  started: boolean;
  busy: Job | undefined;
}

export class RhvoiceSynthesizer {
  private readonly size: number;
  private readonly maxChars: number;
  private readonly resourcePaths: string[];
  private readonly workers: PoolWorker[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly opts: RhvoiceSynthesizerOptions) {
    this.size = Math.max(1, Math.floor(opts.workers ?? 1));
    this.maxChars = opts.maxChars ?? 2000;
    this.resourcePaths = rhvoiceResourcePaths(opts.dataDir ?? RHVOICE_DATA_DIR, opts.voices);
  }

  voices(): RhvoiceVoiceInfo[] {
    return this.opts.voices.map((v) => ({ ...v }));
  }

  hasVoice(voiceId: string): boolean {
    return this.opts.voices.some((v) => v.id === voiceId);
  }

  /** Starts every worker and waits until each has loaded the voices and spoken once with each (the first phrase is not slower). */
  async warmup(): Promise<void> {
    while (this.workers.length < this.size) this.spawn();
    await Promise.all(this.workers.map((w) => w.ready));
  }

  async synthesize(text: string, opts: { voice: string; speed?: number }): Promise<TimedSpeech> {
    const voice = this.opts.voices.find((v) => v.id === opts.voice);
    if (!voice) throw new RhvoiceError(`unknown RHVoice voice "${opts.voice}" (available: ${this.opts.voices.map((v) => v.id).join(', ')})`);
    const clean = rhvoiceText(text, this.maxChars);
    if (!/[\p{L}\p{N}]/u.test(clean)) return { sampleRate: RHVOICE_SAMPLE_RATE, samples: new Float32Array(0), words: [] };
    return this.run(clean, voice.profile, opts.speed ?? 1);
  }

  private run(text: string, profile: string, speed: number): Promise<RhvoiceSpeech> {
    if (this.closed) return Promise.reject(new RhvoiceError('RHVoice synthesizer is closed'));
    return new Promise<RhvoiceSpeech>((resolve, reject) => {
      this.queue.push({ text, profile, speed, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0) {
      const w = this.workers.find((x) => x.started && !x.busy);
      if (!w) {
        // Another worker while one starts or all speak; the phrase goes to the first that is free.
        if (this.workers.length < this.size && !this.workers.some((x) => !x.started)) this.spawn();
        return;
      }
      const job = this.queue.shift() as Job;
      w.busy = job;
      w.worker.ref();
      w.worker.postMessage({ id: this.nextId++, text: job.text, profile: job.profile, speed: job.speed });
    }
  }

  private spawn(): PoolWorker {
    const worker = new Worker(new URL('./worker-entry.mjs', import.meta.url), { workerData: { resourcePaths: this.resourcePaths, profiles: this.opts.voices.map((v) => v.profile), nice: this.opts.nice ?? 0 } });
    let readyResolve!: () => void;
    let readyReject!: (e: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      readyResolve = resolve;
      readyReject = reject;
    });
    ready.catch(() => undefined);
    const pw: PoolWorker = { worker, ready, started: false, busy: undefined };
    worker.on('message', (msg: { ready?: boolean; error?: string; id?: number; speech?: RhvoiceSpeech }) => {
      if (msg.id === undefined) {
        if (msg.ready) {
          pw.started = true;
          worker.unref();
          readyResolve();
          this.pump();
        }
        else fail(new RhvoiceError(`RHVoice worker failed to start: ${msg.error ?? 'unknown error'}`));
        return;
      }
      const job = pw.busy;
      pw.busy = undefined;
      worker.unref();
      if (job) {
        if (msg.speech) job.resolve(msg.speech);
        else job.reject(new RhvoiceError(`RHVoice failed: ${msg.error ?? 'unknown error'}`));
      }
      this.pump();
    });
    const fail = (err: Error) => {
      readyReject(err);
      const i = this.workers.indexOf(pw);
      if (i >= 0) this.workers.splice(i, 1);
      const job = pw.busy;
      pw.busy = undefined;
      if (job) job.reject(err instanceof RhvoiceError ? err : new RhvoiceError(`RHVoice worker failed: ${err.message}`));
      void worker.terminate();
      if (this.closed) return;
      // A worker that could not start fails the phrases that wait rather than starting another forever; after a
      // crash of a running one, another takes the waiting phrases.
      if (!pw.started) for (const waiting of this.queue.splice(0)) waiting.reject(err instanceof RhvoiceError ? err : new RhvoiceError(err.message));
      else this.pump();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new RhvoiceError(`RHVoice worker exited with code ${code}`)));
    // Referenced while it starts (someone waits for it), then only while it speaks.
    this.workers.push(pw);
    return pw;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new RhvoiceError('RHVoice synthesizer is closed'));
    await Promise.all(this.workers.splice(0).map((w) => w.worker.terminate()));
  }
}
