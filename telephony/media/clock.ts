// Drift-corrected send clock: ticks every 20 ms against absolute performance.now() targets (t0 + k * interval), so timer
// lateness never accumulates; after a stall it catches up with at most `maxBurst` ticks at once and skips the rest.

export interface SendClockOptions {
  /** Tick interval (20 ms). */
  intervalMs?: number;
  /** Most ticks delivered at one wake-up after a stall; older overdue ticks are skipped (3). */
  maxBurst?: number;
  /** A tick this close to its target counts as due, so a timer that fires a little early does not cost a wake-up (1 ms). */
  earlyMs?: number;
  /** Time source in milliseconds (performance.now). */
  now?: () => number;
  /**
   * Start on the shared grid (multiples of the interval on the time source's scale) instead of at start(): every clock
   * of a thread then ticks at the same instants, so one timer wake-up serves every call (FreeSWITCH's soft timer
   * shares one timer per interval the same way), and the send pool's threads wake once per 20 ms, not once per call.
   * The first tick comes up to one interval later.
   */
  aligned?: boolean;
}

/**
 * Calls onTick(due, skipped) at each wake-up: `due` ticks are to be served now (1 normally, up to maxBurst after a stall)
 * and `skipped` ticks were dropped before them (the caller advances its media timestamps over them). The first tick is
 * due at start() (or at the next grid instant, `aligned`).
 */
export class SendClock {
  readonly intervalMs: number;
  private readonly maxBurst: number;
  private readonly earlyMs: number;
  private readonly now: () => number;
  private readonly aligned: boolean;
  private t0 = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Ticks accounted for since start (served and skipped). */
  ticks = 0;
  /** Ticks skipped after stalls. */
  skipped = 0;

  constructor(
    private readonly onTick: (due: number, skipped: number) => void,
    options: SendClockOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 20;
    this.maxBurst = Math.max(1, options.maxBurst ?? 3);
    this.earlyMs = options.earlyMs ?? 1;
    this.now = options.now ?? (() => performance.now());
    this.aligned = options.aligned ?? false;
  }

  get running(): boolean {
    return this.timer !== null;
  }

  start(): void {
    if (this.timer) return;
    const now = this.now();
    this.t0 = this.aligned ? Math.ceil(now / this.intervalMs) * this.intervalMs : now;
    this.ticks = 0;
    this.skipped = 0;
    this.timer = setTimeout(() => this.wake(), Math.max(0, this.t0 - this.earlyMs - now));
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Absolute time (now() scale) of tick k. */
  targetOf(k: number): number {
    return this.t0 + k * this.intervalMs;
  }

  private wake(): void {
    const now = this.now();
    let due = Math.floor((now + this.earlyMs - this.t0) / this.intervalMs) + 1 - this.ticks;
    let skipped = 0;
    if (due > this.maxBurst) {
      skipped = due - this.maxBurst;
      due = this.maxBurst;
    }
    try {
      if (due > 0) {
        this.ticks += skipped + due;
        this.skipped += skipped;
        this.onTick(due, skipped);
      }
    } finally {
      if (this.timer) {
        const delay = this.targetOf(this.ticks) - this.earlyMs - this.now();
        this.timer = setTimeout(() => this.wake(), Math.max(0, delay));
      }
    }
  }
}
