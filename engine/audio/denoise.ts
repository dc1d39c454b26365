// Noise suppression for caller audio: RNNoise (@echogarden/rnnoise-wasm, 48 kHz, 480-sample frames) at any rate,
// resampled rate -> 48k -> rate with the engine's streaming resampler. Samples in, as many samples out, at a constant
// delay (the first ones are the pipeline's start-up silence). Used by SIP trunks' noiseSuppression (8 kHz 20 ms frames,
// telephony/media/session.ts) and by agent sessions' denoisingConfig (16 kHz, before the VAD: engine/agent/session.ts).
import RNNoise from '@echogarden/rnnoise-wasm';
import { floatToInt16 } from './pcm.js';
import { Resampler, type ResampleQuality } from './resample.js';

interface RnnoiseModule {
  _rnnoise_create(model: number): number;
  _rnnoise_destroy(state: number): void;
  _rnnoise_process_frame(state: number, out: number, input: number): number;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  HEAPF32: Float32Array;
}

const RNNOISE_FRAME = 480;
const RNNOISE_RATE = 48000;

let modulePromise: Promise<RnnoiseModule> | null = null;

/** The WASM module, instantiated once per process (each suppressor has its own state inside it). */
function loadModule(): Promise<RnnoiseModule> {
  modulePromise ??= RNNoise() as Promise<RnnoiseModule>;
  return modulePromise;
}

export interface NoiseSuppressorOptions {
  /** Rate of the audio in and out. Default 8000. */
  sampleRate?: number;
  /** Samples per frame given to process() (Int16 frames). Default 160 (20 ms at 8 kHz). */
  frameSamples?: number;
  /** Resampler quality around RNNoise ('fast': 100 dB stopband, plenty for a denoiser's input and cheaper). */
  quality?: ResampleQuality;
}

export class NoiseSuppressor {
  private readonly up: Resampler;
  private readonly down: Resampler;
  private readonly pending = new Float32Array(RNNOISE_FRAME);
  private pendingLength = 0;
  private out: Float32Array[] = [];
  private outOffset = 0;
  private outLength = 0;
  private state: number;
  private readonly inPtr: number;
  private readonly outPtr: number;
  /** Voice probability RNNoise gave the last 10 ms processed. */
  lastVoiceProbability = 0;

  private constructor(
    private readonly mod: RnnoiseModule,
    private readonly rate: number,
    private readonly frameSamples: number,
    quality: ResampleQuality,
  ) {
    this.up = new Resampler(rate, RNNOISE_RATE, { quality });
    this.down = new Resampler(RNNOISE_RATE, rate, { quality });
    this.state = mod._rnnoise_create(0);
    this.inPtr = mod._malloc(RNNOISE_FRAME * 4);
    this.outPtr = mod._malloc(RNNOISE_FRAME * 4);
  }

  static async create(options: NoiseSuppressorOptions = {}): Promise<NoiseSuppressor> {
    return new NoiseSuppressor(await loadModule(), options.sampleRate ?? 8000, options.frameSamples ?? 160, options.quality ?? 'fast');
  }

  /** Denoises one frame; returns one frame of `frameSamples` (the first few carry the pipeline's start-up silence). */
  process(frame: Int16Array): Int16Array {
    const x = new Float32Array(frame.length);
    for (let i = 0; i < frame.length; i++) x[i] = frame[i]! / 32768;
    this.feed(x);
    const y = this.take(this.frameSamples);
    const out = new Int16Array(y.length);
    for (let i = 0; i < y.length; i++) out[i] = floatToInt16(y[i]!);
    return out;
  }

  /** Denoises samples ([-1, 1]) of any length; returns as many (the first ones carry the start-up silence). */
  processSamples(samples: Float32Array): Float32Array {
    this.feed(samples);
    return this.take(samples.length);
  }

  /** Frees the RNNoise state and buffers; safe to call twice. */
  destroy(): void {
    if (this.state === 0) return;
    this.mod._rnnoise_destroy(this.state);
    this.mod._free(this.inPtr);
    this.mod._free(this.outPtr);
    this.state = 0;
  }

  /** One 480-sample frame at 48 kHz through RNNoise (which works on 16-bit-scaled floats). */
  private denoise(frame: Float32Array): Float32Array {
    let heap = this.mod.HEAPF32;
    const inAt = this.inPtr >> 2;
    for (let i = 0; i < RNNOISE_FRAME; i++) heap[inAt + i] = frame[i]! * 32768;
    this.lastVoiceProbability = this.mod._rnnoise_process_frame(this.state, this.outPtr, this.inPtr);
    heap = this.mod.HEAPF32; // the memory may have grown
    const outAt = this.outPtr >> 2;
    const y = new Float32Array(RNNOISE_FRAME);
    for (let i = 0; i < RNNOISE_FRAME; i++) y[i] = heap[outAt + i]! / 32768;
    return y;
  }

  private feed(x: Float32Array): void {
    if (this.state === 0) throw new Error('noise suppressor destroyed');
    const hi = this.up.push(x);
    for (let off = 0; off < hi.length; ) {
      const k = Math.min(RNNOISE_FRAME - this.pendingLength, hi.length - off);
      this.pending.set(hi.subarray(off, off + k), this.pendingLength);
      this.pendingLength += k;
      off += k;
      if (this.pendingLength === RNNOISE_FRAME) {
        this.pendingLength = 0;
        this.queue(this.down.push(this.denoise(this.pending)));
      }
    }
  }

  /** `n` samples from the output queue; at start-up, short of them, led by silence. */
  private take(n: number): Float32Array {
    const y = new Float32Array(n);
    let o = n - Math.min(n, this.outLength);
    while (o < n) {
      const head = this.out[0]!;
      const k = Math.min(n - o, head.length - this.outOffset);
      y.set(head.subarray(this.outOffset, this.outOffset + k), o);
      o += k;
      this.outOffset += k;
      this.outLength -= k;
      if (this.outOffset === head.length) {
        this.out.shift();
        this.outOffset = 0;
      }
    }
    return y;
  }

  private queue(samples: Float32Array): void {
    if (samples.length === 0) return;
    this.out.push(samples);
    this.outLength += samples.length;
  }
}
