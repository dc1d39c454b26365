// Prometheus metrics for HTTP traffic (count and latency by route and status) plus process metrics, and the
// inference queue's wait and run time per job kind.
import client from 'prom-client';
import type { InferenceKind, InferenceObserver, InferenceQueue } from '../../engine/models/queue.js';

export class HttpMetrics {
  readonly registry = new client.Registry();
  private readonly requests: client.Counter<'method' | 'route' | 'status'>;
  private readonly latency: client.Histogram<'method' | 'route' | 'status'>;

  constructor() {
    client.collectDefaultMetrics({ register: this.registry });
    this.requests = new client.Counter({
      name: 'parley_http_requests_total',
      help: 'HTTP requests by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.latency = new client.Histogram({
      name: 'parley_http_request_duration_seconds',
      help: 'HTTP request latency by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [this.registry],
    });
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.requests.inc(labels);
    this.latency.observe(labels, seconds);
  }

  /** Inference wait/run histograms and queue depth on this registry, fed by `queue`. */
  watchInference(queue: InferenceQueue): void {
    queue.observer = new InferenceMetrics(this.registry, queue);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** 1 ms to 10 s, about 1.5x apart, so the bench can read p50/p95 from the buckets to within a bucket's width. */
const INFERENCE_BUCKETS = [0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 5, 7.5, 10];

/**
 * Per inference job kind, seconds waiting for a slot in the queue and seconds running in it: when waits grow
 * while the machine's CPU has room, the limit is scheduling, not compute (issue 15).
 */
export class InferenceMetrics implements InferenceObserver {
  private readonly wait: client.Histogram<'kind'>;
  private readonly runTime: client.Histogram<'kind'>;
  private readonly refusals: client.Counter<'kind'>;
  private readonly drops: client.Counter<'kind'>;
  private readonly windows: client.Counter<'window'>;

  constructor(registry: client.Registry, queue: InferenceQueue) {
    const registers = [registry];
    this.wait = new client.Histogram({
      name: 'parley_inference_wait_seconds',
      help: 'Inference jobs: time from queued to a free slot, by kind (live, speculative, interim, file, synthesis_first, synthesis)',
      labelNames: ['kind'],
      buckets: INFERENCE_BUCKETS,
      registers,
    });
    this.runTime = new client.Histogram({
      name: 'parley_inference_run_seconds',
      help: 'Inference jobs: time running in their slot, by kind (live, speculative, interim, file, synthesis_first, synthesis)',
      labelNames: ['kind'],
      buckets: INFERENCE_BUCKETS,
      registers,
    });
    this.refusals = new client.Counter({ name: 'parley_inference_refused_total', help: 'Inference jobs refused at once because the queue was full, by kind', labelNames: ['kind'], registers });
    this.drops = new client.Counter({
      name: 'parley_inference_dropped_total',
      help: 'Inference jobs dropped while waiting, never run, because a newer result made them useless (speech resumed, a newer speculation, the session ended), by kind',
      labelNames: ['kind'],
      registers,
    });
    this.windows = new client.Counter({
      name: 'parley_stt_live_recognitions_total',
      help: 'Live recognitions (finals, interims, agent turns) by the Whisper encoder window they ran with: full (30 s) or short (PARLEY_STT_SHORT_WINDOW)',
      labelNames: ['window'],
      registers,
    });
    new client.Gauge({
      name: 'parley_inference_queue_jobs',
      help: 'Inference jobs in the queue now, by state (running, waiting)',
      labelNames: ['state'],
      registers,
      collect() {
        const { running, waiting } = queue.depth;
        this.set({ state: 'running' }, running);
        this.set({ state: 'waiting' }, waiting);
      },
    });
  }

  job(kind: InferenceKind, waitSeconds: number, runSeconds: number): void {
    this.wait.observe({ kind }, waitSeconds);
    this.runTime.observe({ kind }, runSeconds);
  }

  refused(kind: InferenceKind): void {
    this.refusals.inc({ kind });
  }

  dropped(kind: InferenceKind): void {
    this.drops.inc({ kind });
  }

  liveWindow(short: boolean): void {
    this.windows.inc({ window: short ? 'short' : 'full' });
  }
}
