// Fixed-window request rate limit per API key, reported with IETF RateLimit-* headers.

export interface RateDecision {
  allowed: boolean;
  headers: Record<string, string>;
  retryAfterSec: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly windowMs = 60_000) {}

  hit(key: string, limit: number, now = Date.now()): RateDecision {
    let win = this.windows.get(key);
    if (!win || now - win.start >= this.windowMs) {
      win = { start: now, count: 0 };
      this.windows.set(key, win);
    }
    const allowed = win.count < limit;
    if (allowed) win.count++;
    const resetSec = Math.max(1, Math.ceil((win.start + this.windowMs - now) / 1000));
    return {
      allowed,
      retryAfterSec: resetSec,
      headers: {
        'RateLimit-Limit': String(limit),
        'RateLimit-Remaining': String(Math.max(0, limit - win.count)),
        'RateLimit-Reset': String(resetSec),
      },
    };
  }
}
