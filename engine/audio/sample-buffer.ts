// Growable mono buffer addressed by absolute sample index, whose oldest samples can be dropped: the recent input a
// turn may still need (its pre-roll, its speech until recognised).

/** Samples a fresh buffer holds before it grows (4 s at 16 kHz). */
const INITIAL = 4 * 16000;

export class SampleBuffer {
  private data = new Float32Array(INITIAL);
  private len = 0;
  /** Absolute index of the oldest kept sample. */
  start = 0;

  get end(): number {
    return this.start + this.len;
  }

  append(x: Float32Array): void {
    if (this.len + x.length > this.data.length) {
      const grown = new Float32Array(Math.max(2 * this.data.length, this.len + x.length));
      grown.set(this.data.subarray(0, this.len));
      this.data = grown;
    }
    this.data.set(x, this.len);
    this.len += x.length;
  }

  /** A copy of [from, to), clamped to what is kept. */
  slice(from: number, to: number): Float32Array {
    const a = Math.max(0, Math.min(this.len, Math.round(from) - this.start));
    const b = Math.max(a, Math.min(this.len, Math.round(to) - this.start));
    return this.data.slice(a, b);
  }

  dropBefore(index: number): void {
    const n = Math.min(this.len, Math.floor(index) - this.start);
    if (n <= 0) return;
    this.data.copyWithin(0, n, this.len);
    this.len -= n;
    this.start += n;
    // Give back the memory of a long utterance once idle.
    if (this.data.length > 2 * INITIAL && this.len < this.data.length / 4) this.data = this.data.slice(0, Math.max(INITIAL, 2 * this.len));
  }

  clear(): void {
    this.data = new Float32Array(0);
    this.start += this.len;
    this.len = 0;
  }
}
