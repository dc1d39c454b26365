// Bounded inference queue: at most `concurrency` jobs run, at most `maxWaiting` wait; beyond that callers are refused at once.
// Every job names its kind, and an optional observer is told how long each waited for a slot and how long it ran,
// so /metrics shows whether callers wait on compute or on the line in front of it (issue 15).
//
// Scheduling (issue 15 point 2). `fifo`: waiting jobs get a slot in arrival order. `priority` (the default): what a
// caller is waiting for right now goes first: live finals, then the first phrase of an agent's answer, then other
// synthesis, speculative finals, whole files, interims; equal classes in arrival order. A waiting job rises one
// class per `ageStepMs` it has waited (500 ms by default), so none starves: an interim waits at most 5 steps before
// it ranks with live finals, and among equals the older goes first. `split`: as `priority`, and synthesis has its
// own `concurrency` slots beside recognition's (Flite/Piper and Whisper run in separate workers), so neither waits
// for the other. A job whose AbortSignal fires while it waits leaves the line without running (AbortError).

/**
 * What an inference job is for. `live`: a live recognition final a caller waits for; `speculative`: a final
 * started in the trailing silence before the end of the turn is known (used if no speech follows); `interim`:
 * a live partial transcript (lowest priority, only started when the queue is idle); `file`: whole-file
 * recognition (POST /stt and friends); `synthesis_first`: the first phrase of an agent's turn (the caller hears
 * nothing until it is done); `synthesis`: any other text to speech.
 */
export type InferenceKind = 'live' | 'speculative' | 'interim' | 'file' | 'synthesis_first' | 'synthesis';
export const INFERENCE_KINDS: readonly InferenceKind[] = ['live', 'speculative', 'interim', 'file', 'synthesis_first', 'synthesis'];

export type InferenceScheduler = 'fifo' | 'priority' | 'split';
export const INFERENCE_SCHEDULERS: readonly InferenceScheduler[] = ['fifo', 'priority', 'split'];

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
  /** Default `priority`. */
  scheduler?: InferenceScheduler;
  /** Waiting this long raises a job one priority class, ms. Default 500. */
  ageStepMs?: number;
}

/** What a job is told when it gets its slot. */
export interface SlotInfo {
  /** Jobs of its lane still waiting when it started: someone is waiting for this job's slot. */
  waitingBehind: number;
}

export interface RunOptions {
  /** Aborted while the job waits: it leaves the line and `run` rejects with an AbortError (a running job runs on). */
  signal?: AbortSignal;
}

interface Lane {
  limit: number;
  running: number;
}

interface Waiter {
  kind: InferenceKind;
  lane: Lane;
  queued: number;
  seq: number;
  start(): void;
}

export class InferenceQueue {
  /** Told about every job; set once where the metrics registry is known (server/app.ts). */
  observer: InferenceObserver | undefined;
  readonly scheduler: InferenceScheduler;
  private readonly recognition: Lane;
  private readonly synthesis: Lane;
  private readonly waiting: Waiter[] = [];
  private readonly retryAfterSec: number;
  private readonly ageStepMs: number;
  private seq = 0;

  constructor(
    concurrency: number,
    private readonly maxWaiting: number,
    /** Suggested wait for a refused caller (or the options). */
    options: number | QueueOptions = {},
  ) {
    if (concurrency < 1 || maxWaiting < 0) throw new Error('queue needs concurrency >= 1 and maxWaiting >= 0');
    const opts = typeof options === 'number' ? { retryAfterSec: options } : options;
    this.retryAfterSec = opts.retryAfterSec ?? 1;
    this.scheduler = opts.scheduler ?? 'priority';
    this.ageStepMs = Math.max(1, opts.ageStepMs ?? 500);
    this.recognition = { limit: concurrency, running: 0 };
    this.synthesis = this.scheduler === 'split' ? { limit: concurrency, running: 0 } : this.recognition;
  }

  get depth(): { running: number; waiting: number } {
    const running = this.recognition.running + (this.synthesis === this.recognition ? 0 : this.synthesis.running);
    return { running, waiting: this.waiting.length };
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
    const lane = kind === 'synthesis' || kind === 'synthesis_first' ? this.synthesis : this.recognition;
    if (lane.running < lane.limit && !this.waiting.some((w) => w.lane === lane)) {
      lane.running++;
    } else {
      if (this.waiting.length >= this.maxWaiting) {
        this.observer?.refused?.(kind);
        throw new QueueFullError(this.retryAfterSec);
      }
      await this.wait(kind, lane, queued, signal);
    }
    const started = performance.now();
    let waitingBehind = 0;
    for (const w of this.waiting) if (w.lane === lane) waitingBehind++;
    try {
      return await job({ waitingBehind });
    } finally {
      const ran = performance.now() - started;
      lane.running--;
      this.dispatch(lane);
      this.observer?.job(kind, (started - queued) / 1000, ran / 1000);
    }
  }

  /** Resolves when `dispatch` gives the job a slot (already counted in lane.running). */
  private wait(kind: InferenceKind, lane: Lane, queued: number, signal: AbortSignal | undefined): Promise<void> {
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
        lane,
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

  /** Hands free slots of `lane` to its most urgent waiters. */
  private dispatch(lane: Lane): void {
    while (lane.running < lane.limit) {
      const i = this.next(lane);
      if (i < 0) return;
      const [waiter] = this.waiting.splice(i, 1) as [Waiter];
      lane.running++;
      waiter.start();
    }
  }

  /** Index of the waiter of `lane` to serve next: lowest aged class, then the oldest; -1 when none waits. */
  private next(lane: Lane): number {
    const now = performance.now();
    let best = -1;
    let bestRank = Infinity;
    let bestSeq = Infinity;
    for (let i = 0; i < this.waiting.length; i++) {
      const w = this.waiting[i] as Waiter;
      if (w.lane !== lane) continue;
      const rank = this.scheduler === 'fifo' ? 0 : Math.max(0, PRIORITY[w.kind] - Math.floor((now - w.queued) / this.ageStepMs));
      if (rank < bestRank || (rank === bestRank && w.seq < bestSeq)) {
        best = i;
        bestRank = rank;
        bestSeq = w.seq;
      }
    }
    return best;
  }
}
