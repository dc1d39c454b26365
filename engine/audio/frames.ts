// Framing: turns chunks of any length into exact fixed-duration frames (20 ms by default), carrying the remainder.

export const FRAME_MS = 20;

/** Samples in one frame; throws if the rate does not divide into whole-sample frames. */
export function frameSize(sampleRate: number, frameMs: number = FRAME_MS): number {
  const n = (sampleRate * frameMs) / 1000;
  if (!Number.isInteger(n) || n <= 0) throw new RangeError(`${frameMs} ms at ${sampleRate} Hz is not a whole number of samples`);
  return n;
}

/** Accumulates samples and hands out whole frames; what is left waits for the next push. */
export class Framer {
  readonly frameSize: number;
  private buf: Float32Array;
  private fill = 0;

  constructor(
    readonly sampleRate: number,
    readonly frameMs: number = FRAME_MS,
  ) {
    this.frameSize = frameSize(sampleRate, frameMs);
    this.buf = new Float32Array(this.frameSize);
  }

  /** Samples waiting for a full frame. */
  get pending(): number {
    return this.fill;
  }

  /** Adds samples; returns every frame now complete (each a new array of exactly frameSize samples). */
  push(samples: Float32Array): Float32Array[] {
    const frames: Float32Array[] = [];
    let off = 0;
    while (off < samples.length) {
      const take = Math.min(this.frameSize - this.fill, samples.length - off);
      this.buf.set(samples.subarray(off, off + take), this.fill);
      this.fill += take;
      off += take;
      if (this.fill === this.frameSize) {
        frames.push(this.buf);
        this.buf = new Float32Array(this.frameSize);
        this.fill = 0;
      }
    }
    return frames;
  }

  /** Ends the stream: the remainder as a last frame zero-padded to full size (pad, the default), or as is, or null if empty. */
  flush(pad = true): Float32Array | null {
    if (this.fill === 0) return null;
    const last = pad ? this.buf : this.buf.slice(0, this.fill);
    this.buf = new Float32Array(this.frameSize);
    this.fill = 0;
    return last;
  }

  /** Drops the remainder (for example on interruption). */
  reset(): void {
    this.buf.fill(0);
    this.fill = 0;
  }
}

/** Splits a whole signal into frames; a short last frame is zero-padded (pad, the default) or kept short. */
export function splitFrames(samples: Float32Array, sampleRate: number, frameMs: number = FRAME_MS, pad = true): Float32Array[] {
  const size = frameSize(sampleRate, frameMs);
  const frames: Float32Array[] = [];
  for (let off = 0; off < samples.length; off += size) {
    const end = off + size;
    if (end <= samples.length) frames.push(samples.slice(off, end));
    else if (pad) {
      const f = new Float32Array(size);
      f.set(samples.subarray(off));
      frames.push(f);
    } else frames.push(samples.slice(off));
  }
  return frames;
}
