// Sample-rate conversion: one-shot resample() and the streaming Resampler (polyphase Kaiser-windowed sinc).
//
// Choice: our own polyphase Kaiser-windowed sinc (sinc-filter.ts), 'high' preset, measured by bench/resampler.ts
// (5 s exponential sweep, 12 rate pairs among 8/16/22.05/24/44.1/48 kHz, SNR against the analytic band-limited sweep,
// 20 ms streaming chunks; 2-core shared box, Node 20; speed as a ratio against libsamplerate best run beside):
//
//   impl               min/median SNR dB  worst alias dB  stream ms per s audio  time vs lsr-best  stream latency
//   own 'high'         149.9 / 150.1      -151.6          8-34  (median 11)      0.26x             <= 14.5 ms (8 kHz)
//   own 'fast'         100.5 / 110.9      -114.2          6-19  (median 7)       0.14x             <= 8.3 ms
//   libsamplerate best 136.9 / 146.8      -146.3          27-126 (median 68)     1.00x             <= 18 ms
//   libsamplerate med   41.0 / 41.6       -118.0          (passband ends below 0.9 of Nyquist when downsampling)
//   speex q10          129.1 / 130.0      -131.5          1.3-27 (median 3.5)    0.07x             <= 16 ms
//   speex q7            99.7 / 107.3      -110.2          0.6-4  (median 0.9)    0.02x             <= 8 ms
//
// Why: quality first, and ours is the best measured (highest worst-case SNR and alias rejection, the lowest latency of
// the high-quality options) at about a quarter of libsamplerate-best's CPU: 0.2-0.7 ms per 20 ms frame, i.e. 1-3% of
// one core per stream, small next to recognition (Whisper runs at ~0.15 real time). It is synchronous, streams with an
// exact flush (the chunked output equals the one-shot output bit for bit, with zero signal delay), and needs no
// dependency. libsamplerate-js is 4x slower, is created asynchronously and its streaming call cannot signal end of
// input (the tail is lost). Speex q10 is 3-8x faster on integer ratios (WASM SIMD; about equal on 44.1/22.05 kHz) but
// ~20 dB worse, needs an async WASM instantiate plus manual malloc/free per stream and has untyped raw exports; it is
// the fallback if resampling ever dominates CPU. Both stay devDependencies (bench baselines only).
import { filterBank, type FilterBank, type ResampleQuality } from './sinc-filter.js';

export { RESAMPLE_QUALITIES, type ResampleQuality } from './sinc-filter.js';

/**
 * The quality for a stream to or from `rate`: 'fast' at telephone rates (8 kHz and below), whose G.711 audio carries
 * about 38 dB of signal to noise, so 'high''s 140 dB stopband buys nothing there and costs twice the CPU per call.
 */
export function qualityFor(rate: number): ResampleQuality {
  return rate <= 8000 ? 'fast' : 'high';
}

export interface ResamplerOptions {
  /** 'high' (default: 140 dB stopband, flat to 0.92 of the lower Nyquist) or 'fast' (100 dB, flat to 0.9; shorter filter, less latency). */
  quality?: ResampleQuality;
}

/**
 * Streaming resampler. push() any chunk sizes and get whatever output is ready; flush() at the end of the stream.
 * Output sample k sits exactly at input time k * fromRate / toRate (no delay in the signal), so the output
 * lags the input by `latency` input samples while the filter waits for look-ahead. The stream's total output
 * length is ceil(inputLength * toRate / fromRate), identical to resample() on the whole input, bit for bit,
 * however the input was chunked.
 */
export class Resampler {
  private readonly bank: FilterBank | null;
  private buf: Float64Array;
  private bufLen: number; // valid samples in buf
  private bufStart: number; // absolute input index of buf[0] (negative at the start: implicit zeros)
  private inCount = 0; // input samples received
  private outCount = 0; // output samples produced
  private pos = 0; // absolute input index i of the next output
  private phase = 0; // its phase p (0..up-1)

  constructor(
    readonly fromRate: number,
    readonly toRate: number,
    options: ResamplerOptions = {},
  ) {
    if (!Number.isInteger(fromRate) || !Number.isInteger(toRate) || fromRate <= 0 || toRate <= 0) {
      throw new RangeError(`sample rates must be positive integers, got ${fromRate} -> ${toRate}`);
    }
    this.bank = fromRate === toRate ? null : filterBank(fromRate, toRate, options.quality ?? 'high');
    const half = this.bank?.half ?? 1;
    this.buf = new Float64Array(Math.max(1024, 4 * half));
    this.bufLen = half - 1;
    this.bufStart = -(half - 1);
  }

  /** Look-ahead in input samples: how far output lags input during streaming. */
  get latency(): number {
    return this.bank ? this.bank.half : 0;
  }

  /** Feeds a chunk and returns the output it completes (possibly empty). */
  push(chunk: Float32Array): Float32Array {
    if (!this.bank) {
      this.inCount += chunk.length;
      this.outCount += chunk.length;
      return chunk.slice();
    }
    this.append(chunk);
    this.inCount += chunk.length;
    return this.produce(Infinity);
  }

  /** Ends the stream: pads with silence, returns the remaining output, and resets for reuse. */
  flush(): Float32Array {
    let out: Float32Array;
    if (!this.bank) out = new Float32Array(0);
    else {
      const { up, down, half } = this.bank;
      const total = Math.floor((this.inCount * up + down - 1) / down);
      this.append(new Float32Array(half));
      out = this.produce(total - this.outCount);
    }
    this.reset();
    return out;
  }

  /** Forgets all buffered input (for example after an interruption). */
  reset(): void {
    const half = this.bank?.half ?? 1;
    this.buf.fill(0, 0, half - 1);
    this.bufLen = half - 1;
    this.bufStart = -(half - 1);
    this.inCount = 0;
    this.outCount = 0;
    this.pos = 0;
    this.phase = 0;
  }

  private append(chunk: Float32Array): void {
    if (this.bufLen + chunk.length > this.buf.length) {
      // Drop what no future output needs, then grow if still short.
      const keepFrom = this.pos - this.bank!.half + 1 - this.bufStart;
      if (keepFrom > 0) {
        this.buf.copyWithin(0, keepFrom, this.bufLen);
        this.bufLen -= keepFrom;
        this.bufStart += keepFrom;
      }
      if (this.bufLen + chunk.length > this.buf.length) {
        const grown = new Float64Array(Math.max(2 * this.buf.length, this.bufLen + chunk.length));
        grown.set(this.buf.subarray(0, this.bufLen));
        this.buf = grown;
      }
    }
    this.buf.set(chunk, this.bufLen);
    this.bufLen += chunk.length;
  }

  /** Computes up to `limit` outputs whose taps are all buffered. */
  private produce(limit: number): Float32Array {
    const { up, down, taps, half, coefs } = this.bank!;
    const buf = this.buf;
    const lastIndex = this.bufStart + this.bufLen - 1; // newest buffered absolute input index
    // Outputs available: those with pos + half <= lastIndex.
    let n = 0;
    if (this.pos + half <= lastIndex) {
      // number of k >= outCount with i_k <= lastIndex - half, where i_k advances by down/up per output
      const maxPos = lastIndex - half;
      n = Math.floor(((maxPos - this.pos) * up + (up - 1 - this.phase)) / down) + 1;
    }
    if (n > limit) n = limit;
    if (n < 0) n = 0;
    const out = new Float32Array(n);
    let pos = this.pos;
    let phase = this.phase;
    const start0 = 1 - half - this.bufStart;
    for (let k = 0; k < n; k++) {
      const base = pos + start0;
      const c = phase * taps;
      // Four accumulators: the add chain, not memory, limits a single-accumulator loop (about 2.5x faster here).
      let a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      for (let j = 0; j < taps; j += 4) {
        const q = base + j, r = c + j;
        a0 += coefs[r]! * buf[q]!;
        a1 += coefs[r + 1]! * buf[q + 1]!;
        a2 += coefs[r + 2]! * buf[q + 2]!;
        a3 += coefs[r + 3]! * buf[q + 3]!;
      }
      out[k] = a0 + a1 + a2 + a3;
      phase += down;
      if (phase >= up) {
        pos += Math.floor(phase / up);
        phase %= up;
      }
    }
    this.pos = pos;
    this.phase = phase;
    this.outCount += n;
    return out;
  }
}

/** Resamples a whole signal; output length is ceil(samples.length * toRate / fromRate). */
export function resample(samples: Float32Array, fromRate: number, toRate: number, options: ResamplerOptions = {}): Float32Array {
  const r = new Resampler(fromRate, toRate, options);
  if (fromRate === toRate) return samples.slice();
  const a = r.push(samples);
  const b = r.flush();
  if (b.length === 0) return a;
  const out = new Float32Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
