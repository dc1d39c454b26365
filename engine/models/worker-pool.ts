// A pool of synthesis worker threads speaking one job at a time each (SVOX Pico's and RHVoice's). A worker posts `{ready: true}` or `{ready: false, error}` once it has loaded, then answers each
// `{id, ...job}` with `{id, result}` or `{id, error}`. Workers start at the first job or at warmup, are referenced while
// they start or speak and unref'd while idle; one that fails to start fails the waiting jobs, one that crashes later is
// replaced for the jobs that wait.
import { Worker } from 'node:worker_threads';

interface Job<Req, Res> {
  req: Req;
  resolve: (r: Res) => void;
  reject: (e: Error) => void;
}

interface PoolWorker<Req, Res> {
  worker: Worker;
  ready: Promise<void>;
  started: boolean;
  busy: Job<Req, Res> | undefined;
}

export interface WorkerPoolOptions {
  /** What the errors say the pool is (`SVOX Pico`). */
  name: string;
  /** The worker's entry module. */
  entry: URL;
  workerData: unknown;
  /** Worker threads, at least 1. */
  size: number;
  /** The error class of the engine (default Error). */
  makeError?: (message: string) => Error;
}

export class SpeechWorkerPool<Req extends object, Res> {
  private readonly workers: PoolWorker<Req, Res>[] = [];
  private readonly queue: Job<Req, Res>[] = [];
  private readonly size: number;
  private nextId = 1;
  private closed = false;

  constructor(private readonly opts: WorkerPoolOptions) {
    this.size = Math.max(1, Math.floor(opts.size));
  }

  private error(message: string): Error {
    return this.opts.makeError ? this.opts.makeError(message) : new Error(message);
  }

  /** Starts every worker and waits until each has loaded. */
  async warmup(): Promise<void> {
    while (this.workers.length < this.size) this.spawn();
    await Promise.all(this.workers.map((w) => w.ready));
  }

  run(req: Req): Promise<Res> {
    if (this.closed) return Promise.reject(this.error(`${this.opts.name} synthesizer is closed`));
    return new Promise<Res>((resolve, reject) => {
      this.queue.push({ req, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0) {
      const w = this.workers.find((x) => x.started && !x.busy);
      if (!w) {
        if (this.workers.length < this.size && !this.workers.some((x) => !x.started)) this.spawn();
        return;
      }
      const job = this.queue.shift() as Job<Req, Res>;
      w.busy = job;
      w.worker.ref();
      w.worker.postMessage({ ...job.req, id: this.nextId++ });
    }
  }

  private spawn(): void {
    const worker = new Worker(this.opts.entry, { workerData: this.opts.workerData });
    let readyResolve!: () => void;
    let readyReject!: (e: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      readyResolve = resolve;
      readyReject = reject;
    });
    ready.catch(() => undefined);
    const pw: PoolWorker<Req, Res> = { worker, ready, started: false, busy: undefined };
    const fail = (err: Error) => {
      readyReject(err);
      const i = this.workers.indexOf(pw);
      if (i >= 0) this.workers.splice(i, 1);
      const job = pw.busy;
      pw.busy = undefined;
      job?.reject(err);
      void worker.terminate();
      if (this.closed) return;
      if (!pw.started) for (const waiting of this.queue.splice(0)) waiting.reject(err);
      else this.pump();
    };
    worker.on('message', (msg: { ready?: boolean; error?: string; id?: number; result?: Res }) => {
      if (msg.id === undefined) {
        if (msg.ready) {
          pw.started = true;
          worker.unref();
          readyResolve();
          this.pump();
        } else fail(this.error(`${this.opts.name} worker failed to start: ${msg.error ?? 'unknown error'}`));
        return;
      }
      const job = pw.busy;
      pw.busy = undefined;
      worker.unref();
      if (job) {
        if (msg.result !== undefined) job.resolve(msg.result);
        else job.reject(this.error(`${this.opts.name} failed: ${msg.error ?? 'unknown error'}`));
      }
      this.pump();
    });
    worker.on('error', (e) => fail(this.error(`${this.opts.name} worker failed: ${e.message}`)));
    worker.on('exit', (code) => fail(this.error(`${this.opts.name} worker exited with code ${code}`)));
    this.workers.push(pw);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(this.error(`${this.opts.name} synthesizer is closed`));
    await Promise.all(this.workers.splice(0).map((w) => w.worker.terminate()));
  }
}
