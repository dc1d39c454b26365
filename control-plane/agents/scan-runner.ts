// Runs security scans on a worker thread with a hard timeout; the publish path races it against a budget.
import { Worker } from 'node:worker_threads';
import type { ScanFinding } from './security-scan.js';

export type ScanOutcome = { ok: true; findings: ScanFinding[] } | { ok: false; error: string };

export interface ScanRunnerOptions {
  /** A scan running longer than this is abandoned and reported as an error (the revision can be retried). */
  hardTimeoutMs: number;
}

interface PendingScan {
  resolve: (o: ScanOutcome) => void;
  timer: NodeJS.Timeout;
  worker: Worker;
}

export class ScanRunner {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, PendingScan>();

  constructor(private readonly opts: ScanRunnerOptions) {}

  private settle(id: number, outcome: ScanOutcome): void {
    const entry = this.pending.get(id);
    if (!entry) return;
    this.pending.delete(id);
    clearTimeout(entry.timer);
    entry.resolve(outcome);
  }

  /** Retires a worker: fails only the scans that were running on it, and forgets it if it is the current one. */
  private retire(worker: Worker, error: string): void {
    if (this.worker === worker) this.worker = null;
    for (const [id, entry] of this.pending) if (entry.worker === worker) this.settle(id, { ok: false, error });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    // Worker threads do not inherit the tsx loader of the main thread: the entry registers it.
    const worker = new Worker(new URL('./scan-worker-entry.mjs', import.meta.url));
    worker.unref();
    worker.on('message', (msg: { id: number; findings?: ScanFinding[]; error?: string }) => {
      this.settle(msg.id, msg.error !== undefined ? { ok: false, error: msg.error } : { ok: true, findings: msg.findings ?? [] });
    });
    worker.on('error', (err) => this.retire(worker, `scanner crashed: ${err.message}`));
    worker.on('exit', () => this.retire(worker, 'scanner exited'));
    this.worker = worker;
    return worker;
  }

  scan(sections: Record<string, unknown>): Promise<ScanOutcome> {
    const id = this.nextId++;
    const worker = this.ensureWorker();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        // A scan that runs away (it should not: the rules are linear) takes its worker down with it.
        this.retire(worker, `scan exceeded ${this.opts.hardTimeoutMs} ms`);
        void worker.terminate();
      }, this.opts.hardTimeoutMs);
      timer.unref();
      this.pending.set(id, { resolve, timer, worker });
      worker.postMessage({ id, sections });
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}
