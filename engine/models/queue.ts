// Bounded inference queue: at most `concurrency` jobs run, at most `maxWaiting` wait; beyond that callers are refused at once.

export class QueueFullError extends Error {
  constructor(readonly retryAfterSec: number) {
    super('The inference queue is full; retry shortly');
  }
}

export class InferenceQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly maxWaiting: number,
    /** Suggested wait for a refused caller. */
    private readonly retryAfterSec = 1,
  ) {
    if (concurrency < 1 || maxWaiting < 0) throw new Error('queue needs concurrency >= 1 and maxWaiting >= 0');
  }

  get depth(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /** Runs `job` when a slot is free; throws QueueFullError without waiting when the queue is full. */
  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.maxWaiting) throw new QueueFullError(this.retryAfterSec);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await job();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so `running` only drops when nobody waits.
      if (next) next();
      else this.running--;
    }
  }
}
