// Runs security scans on a worker thread with a hard timeout; the publish path races it against a budget.
import { Worker } from 'node:worker_threads';
import type { ScanFinding } from './security-scan.js';

export type ScanOutcome = { ok: true; findings: ScanFinding[] } | { ok: false; error: string };

export interface ScanRunnerOptions {
  /** A scan running longer than this is abandoned and reported as an error (the revision can be retried). */
  hardTimeoutMs: number;
}

export class ScanRunner {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (o: ScanOutcome) => void; timer: NodeJS.Timeout }>();

  constructor(private readonly opts: ScanRunnerOptions) {}

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    // Worker threads do not inherit the tsx loader of the main thread: the entry registers it.
    const worker = new Worker(new URL('./scan-worker-entry.mjs', import.meta.url));
    worker.unref();
    worker.on('message', (msg: { id: number; findings?: ScanFinding[]; error?: string }) => {
      const entry = this.pending.get(msg.id);
      if (!entry) return;
      this.pending.delete(msg.id);
      clearTimeout(entry.timer);
      entry.resolve(msg.error !== undefined ? { ok: false, error: msg.error } : { ok: true, findings: msg.findings ?? [] });
    });
    const failAll = (error: string) => {
      this.worker = null;
      for (const [id, entry] of this.pending) {
        clearTimeout(entry.timer);
        entry.resolve({ ok: false, error });
        this.pending.delete(id);
      }
    };
    worker.on('error', (err) => failAll(`scanner crashed: ${err.message}`));
    worker.on('exit', () => failAll('scanner exited'));
    this.worker = worker;
    return worker;
  }

  scan(sections: Record<string, unknown>): Promise<ScanOutcome> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ ok: false, error: `scan exceeded ${this.opts.hardTimeoutMs} ms` });
        void this.worker?.terminate();
        this.worker = null;
      }, this.opts.hardTimeoutMs);
      timer.unref();
      this.pending.set(id, { resolve, timer });
      this.ensureWorker().postMessage({ id, sections });
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}
