// How fast one WebSocket client may send: token buckets per class of message, and the point where refusals have
// gone on long enough that the session is closed instead of answered message by message.

/** A token bucket: `burst` units at once (messages, or seconds of audio), refilled at `perSecond`. */
export class TokenBucket {
  private tokens: number;
  private last = performance.now();

  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
  ) {
    this.tokens = burst;
  }

  /** Takes `cost` units if there are that many; false (nothing taken) otherwise. */
  take(cost = 1): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < cost) return false;
    this.tokens -= cost;
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
