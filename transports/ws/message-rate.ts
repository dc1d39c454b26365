// How fast one WebSocket client may send: token buckets per class of message, and the point where refusals have
// gone on long enough that the session is closed instead of answered message by message.

/** A token bucket: `burst` messages at once, refilled at `perSecond`. */
export class TokenBucket {
  private tokens: number;
  private last = performance.now();

  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
  ) {
    this.tokens = burst;
  }

  take(): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** Counts refusals in a sliding window; `persistent` once more than `max` fell within `windowMs`. */
export class RefusalWindow {
  private readonly times: number[] = [];

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}

  /** Records a refusal; true when refusals have persisted past the limit. */
  note(): boolean {
    const now = performance.now();
    this.times.push(now);
    while ((this.times[0] as number) < now - this.windowMs) this.times.shift();
    return this.times.length > this.max;
  }
}
