// The agent's outgoing audio for one call: 8 kHz samples queued in any chunk sizes, taken out 20 ms at a time.

export class FrameQueue {
  private chunks: Int16Array[] = [];
  private offset = 0;
  private samples = 0;
  /** Samples ever taken out or dropped by clear(): with the samples ever pushed, what is still queued. */
  consumed = 0;

  constructor(readonly frameSamples = 160) {}

  /** Samples queued. */
  get length(): number {
    return this.samples;
  }

  /** Queues a copy of pcm. */
  push(pcm: Int16Array): void {
    if (pcm.length === 0) return;
    this.chunks.push(pcm.slice());
    this.samples += pcm.length;
  }

  /** Drops everything queued. */
  clear(): void {
    this.consumed += this.samples;
    this.chunks = [];
    this.offset = 0;
    this.samples = 0;
  }

  /**
   * The next frame, or null when nothing is queued. A shorter remainder comes out padded with silence: the engine's pacer
   * keeps a lead of several frames queued, so a remainder is the end of an utterance, not a producer running late.
   */
  take(): Int16Array | null {
    if (this.samples === 0) return null;
    const frame = new Int16Array(this.frameSamples);
    let o = 0;
    while (o < this.frameSamples && this.chunks.length > 0) {
      const head = this.chunks[0]!;
      const k = Math.min(this.frameSamples - o, head.length - this.offset);
      frame.set(head.subarray(this.offset, this.offset + k), o);
      o += k;
      this.offset += k;
      this.samples -= k;
      this.consumed += k;
      if (this.offset === head.length) {
        this.chunks.shift();
        this.offset = 0;
      }
    }
    return frame;
  }
}
