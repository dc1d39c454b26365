// Noise suppression for caller audio: RNNoise (@echogarden/rnnoise-wasm, 48 kHz, 480-sample frames) on 8 kHz 20 ms
// frames, resampled 8k -> 48k -> 8k with the engine's streaming resampler. One frame in, one frame out, at a constant delay.
import RNNoise from '@echogarden/rnnoise-wasm';
import { floatToInt16 } from '../../engine/audio/pcm.js';
import { Resampler, type ResampleQuality } from '../../engine/audio/resample.js';

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
  sampleRate?: number;
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

  /** Denoises one frame; returns one frame of the same length (the first few carry the pipeline's start-up silence). */
  process(frame: Int16Array): Int16Array {
    if (this.state === 0) throw new Error('noise suppressor destroyed');
    const x = new Float32Array(frame.length);
    for (let i = 0; i < frame.length; i++) x[i] = frame[i]! / 32768;
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
    const y = new Int16Array(this.frameSamples);
    let o = this.frameSamples - Math.min(this.frameSamples, this.outLength); // start-up: lead with silence
    while (o < this.frameSamples) {
      const head = this.out[0]!;
      const k = Math.min(this.frameSamples - o, head.length - this.outOffset);
      for (let i = 0; i < k; i++) y[o + i] = floatToInt16(head[this.outOffset + i]!);
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

  private queue(samples: Float32Array): void {
    if (samples.length === 0) return;
    this.out.push(samples);
    this.outLength += samples.length;
  }
}
