// Bounded inference queue: at most `concurrency` jobs run, at most `maxWaiting` wait; beyond that callers are refused at once.
// Every job names its kind, and an optional observer is told how long each waited for a slot and how long it ran,
// so /metrics shows whether callers wait on compute or on the line in front of it (issue 15).
//
// Scheduling (issue 15 point 2): what a caller is waiting for right now goes first: live finals, then the first phrase
// of an agent's answer, then other synthesis, speculative finals, whole files, interims; equal classes in arrival
// order. A waiting job rises one class per `ageStepMs` it has waited (500 ms by default), so none starves: an interim
// waits at most 5 steps before it ranks with live finals, and among equals the older goes first. (Arrival order, and
// synthesis on slots of its own, were measured against this and not adopted; issue 37.) A job whose AbortSignal fires
// while it waits leaves the line without running (AbortError).

/**
 * What an inference job is for. `live`: a live recognition final a caller waits for; `speculative`: a final
 * started in the trailing silence before the end of the turn is known (used if no speech follows); `interim`:
 * a live partial transcript (lowest priority, only started when the queue is idle); `file`: whole-file
 * recognition (POST /stt and friends); `synthesis_first`: the first phrase of an agent's turn (the caller hears
 * nothing until it is done); `synthesis`: any other text to speech.
 */
export type InferenceKind = 'live' | 'speculative' | 'interim' | 'file' | 'synthesis_first' | 'synthesis';
export const INFERENCE_KINDS: readonly InferenceKind[] = ['live', 'speculative', 'interim', 'file', 'synthesis_first', 'synthesis'];

/** Lower is served first. */
const PRIORITY: Record<InferenceKind, number> = { live: 0, synthesis_first: 1, synthesis: 2, speculative: 3, file: 4, interim: 5 };

export interface InferenceObserver {
  /** One job that got a slot: seconds from `run` to its slot, and seconds it ran (until it resolved or threw). */
  job(kind: InferenceKind, waitSeconds: number, runSeconds: number): void;
  /** A job refused at once because the queue was full. */
  refused?(kind: InferenceKind): void;
  /** A job dropped before it ran: its AbortSignal fired (a newer result made it useless). */
  dropped?(kind: InferenceKind): void;
  /** A live recognition about to run with the short encoder window (true) or the full one (ModelRegistry). */
  liveWindow?(short: boolean): void;
}

export class QueueFullError extends Error {
  constructor(readonly retryAfterSec: number) {
    super('The inference queue is full; retry shortly');
  }
}

/** The rejection of a job dropped before it ran (a DOMException named AbortError, as fetch and timers use). */
export function droppedError(): DOMException {
  return new DOMException('The inference job was dropped before it ran', 'AbortError');
}

export function isAbortError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

export interface QueueOptions {
  /** Suggested wait for a refused caller, seconds. Default 1. */
  retryAfterSec?: number;
  /** Waiting this long raises a job one priority class, ms. Default 500. */
  ageStepMs?: number;
}

/** What a job is told when it gets its slot. */
export interface SlotInfo {
  /** Jobs still waiting when it started: someone is waiting for this job's slot. */
  waitingBehind: number;
}

export interface RunOptions {
  /** Aborted while the job waits: it leaves the line and `run` rejects with an AbortError (a running job runs on). */
  signal?: AbortSignal;
}

interface Waiter {
  kind: InferenceKind;
  queued: number;
  seq: number;
  start(): void;
}

export class InferenceQueue {
  /** Told about every job; set once where the metrics registry is known (server/app.ts). */
  observer: InferenceObserver | undefined;
  private running = 0;
  private readonly waiting: Waiter[] = [];
  private readonly retryAfterSec: number;
  private readonly ageStepMs: number;
  private seq = 0;

  constructor(
    private readonly concurrency: number,
    private readonly maxWaiting: number,
    /** Suggested wait for a refused caller (or the options). */
    options: number | QueueOptions = {},
  ) {
    if (concurrency < 1 || maxWaiting < 0) throw new Error('queue needs concurrency >= 1 and maxWaiting >= 0');
    const opts = typeof options === 'number' ? { retryAfterSec: options } : options;
    this.retryAfterSec = opts.retryAfterSec ?? 1;
    this.ageStepMs = Math.max(1, opts.ageStepMs ?? 500);
  }

  get depth(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /**
   * Runs `job` when a slot is free; throws QueueFullError without waiting when the queue is full, and an AbortError
   * without running when `signal` fires first. The job is told how many wait behind it (a recognizer may then run
   * cheaper: PARLEY_STT_SHORT_WINDOW=busy).
   */
  async run<T>(job: (slot: SlotInfo) => Promise<T>, kind: InferenceKind, opts: RunOptions = {}): Promise<T> {
    const queued = performance.now();
    const { signal } = opts;
    if (signal?.aborted) {
      this.observer?.dropped?.(kind);
      throw droppedError();
    }
    if (this.running < this.concurrency && this.waiting.length === 0) {
      this.running++;
    } else {
      if (this.waiting.length >= this.maxWaiting) {
        this.observer?.refused?.(kind);
        throw new QueueFullError(this.retryAfterSec);
      }
      await this.wait(kind, queued, signal);
    }
    const started = performance.now();
    try {
      return await job({ waitingBehind: this.waiting.length });
    } finally {
      const ran = performance.now() - started;
      this.running--;
      this.dispatch();
      this.observer?.job(kind, (started - queued) / 1000, ran / 1000);
    }
  }

  /** Resolves when `dispatch` gives the job a slot (already counted in `running`). */
  private wait(kind: InferenceKind, queued: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter);
        if (i < 0) return;
        this.waiting.splice(i, 1);
        this.observer?.dropped?.(kind);
        reject(droppedError());
      };
      const waiter: Waiter = {
        kind,
        queued,
        seq: this.seq++,
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Hands free slots to the most urgent waiters. */
  private dispatch(): void {
    while (this.running < this.concurrency) {
      const i = this.next();
      if (i < 0) return;
      const [waiter] = this.waiting.splice(i, 1) as [Waiter];
      this.running++;
      waiter.start();
    }
  }

  /** Index of the waiter to serve next: lowest aged class, then the oldest; -1 when none waits. */
  private next(): number {
    const now = performance.now();
    let best = -1;
    let bestRank = Infinity;
    let bestSeq = Infinity;
    for (let i = 0; i < this.waiting.length; i++) {
      const w = this.waiting[i] as Waiter;
      const rank = Math.max(0, PRIORITY[w.kind] - Math.floor((now - w.queued) / this.ageStepMs));
      if (rank < bestRank || (rank === bestRank && w.seq < bestSeq)) {
        best = i;
        bestRank = rank;
        bestSeq = w.seq;
      }
    }
    return best;
  }
}
