// Media legs run by a worker thread: the only way the server runs calls' RTP. One worker owns every call's RTP socket
// and send clock (worker.ts); the main thread keeps a RemoteMediaLeg per call that forwards the agent's audio and
// commands to it and gets the caller's frames and digits back. Measured with `npm run bench:telephony` before the
// main-thread option was removed (issue 37): there the 20 ms send clock shared the event loop with voice activity
// detection, resampling and garbage collection and its inter-packet deviation grew with the number of calls; the
// worker's loop has nothing else to do.
import { Worker } from 'node:worker_threads';
import { isDtmfString } from './dtmf.js';
import type { MediaLeg, MediaLegs } from './leg.js';
import type { PortRange } from './ports.js';
import { DEFAULT_MEDIA_PRIORITY, type MediaPriority, type MediaPriorityOutcome } from './priority.js';
import { DEFAULT_RTP_SENDERS, DEFAULT_SEND_LEAD_MS } from './sendpool.js';
import { deliverTo, SAMPLE_RATE, type RtpSessionStats, type RtpStartParams } from './session.js';

export type ToMediaWorker =
  | { op: 'bind'; id: number; localAddress: string }
  | { op: 'start'; id: number; params: RtpStartParams }
  | { op: 'send'; id: number; pcm: Int16Array }
  | { op: 'speaking'; id: number; on: boolean }
  | { op: 'peerSending'; id: number; on: boolean }
  | { op: 'clear'; id: number }
  | { op: 'hold'; id: number; on: boolean }
  | { op: 'dtmf'; id: number; digits: string }
  | { op: 'finish'; id: number };

export type FromMediaWorker =
  | { op: 'bound'; id: number; port: number }
  | { op: 'started'; id: number }
  | { op: 'failed'; id: number; message: string }
  | { op: 'audio'; id: number; frame: Int16Array }
  | { op: 'dtmf'; id: number; digit: string }
  | { op: 'error'; id: number; message: string }
  | { op: 'consumed'; id: number; samples: number }
  | { op: 'mediaTimeout'; id: number }
  | { op: 'finished'; id: number; stats: RtpSessionStats | null }
  | ({ op: 'ready'; id: 0 } & MediaPriorityOutcome & SendersOutcome);

/** The send pool the media worker runs (PARLEY_RTP_SENDERS): sender threads, their CPUs, and why fewer than asked. */
export interface SendersOutcome {
  senders: number;
  senderCpus: number[];
  sendersReason?: string;
}

/** How the media worker sends: PARLEY_RTP_SENDERS sender threads (0: the media thread itself), built this far ahead. */
export interface SendOptions {
  senders: number;
  leadMs: number;
}

/** The counters of a leg whose worker died before it could report them. */
const NO_STATS: RtpSessionStats = {
  received: 0, frames: 0, lost: 0, late: 0, duplicate: 0, concealed: 0, trimmedSamples: 0, underruns: 0, packetsIn: 0, packetsOut: 0,
  bytesIn: 0, bytesOut: 0, malformed: 0, srtpFailures: 0, ignored: 0, rtcpIn: 0, dtmfIn: 0, dtmfOut: 0, sendErrors: 0, underrunFrames: 0,
  skippedTicks: 0, sendDeviation: { counts: [], sumMs: 0 }, latched: false, lastPacketAt: null,
};

type Waiter = { resolve: () => void; reject: (err: Error) => void };

/** The media worker thread and the legs it runs. Started on the first bind; restarted on the next bind if it dies. */
export class MediaWorker implements MediaLegs {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly legs = new Map<number, RemoteMediaLeg>();
  private readonly ready = new WeakMap<Worker, Promise<void>>();
  /** The scheduling the worker runs at, once it is ready (PARLEY_MEDIA_PRIORITY; latency or realtime only where available). */
  priority: MediaPriorityOutcome | null = null;
  /** The send pool it runs, once it is ready. */
  sending: SendersOutcome | null = null;

  constructor(
    private readonly range: PortRange,
    private readonly wantedPriority: MediaPriority = DEFAULT_MEDIA_PRIORITY,
    private readonly send: SendOptions = { senders: DEFAULT_RTP_SENDERS, leadMs: DEFAULT_SEND_LEAD_MS },
  ) {}

  /** Legs up now. */
  get size(): number {
    return this.legs.size;
  }

  /** Starts the worker now and waits until it runs (else the first call's bind pays for loading it, about a second). */
  async start(): Promise<void> {
    const worker = this.spawn();
    await this.ready.get(worker);
  }

  async bind(localAddress: string): Promise<MediaLeg> {
    const id = this.nextId++;
    const leg = new RemoteMediaLeg(id, (msg, transfer) => this.post(msg, transfer));
    this.legs.set(id, leg);
    try {
      await leg.request({ op: 'bind', id, localAddress });
    } catch (err) {
      this.legs.delete(id);
      throw err;
    }
    return leg;
  }

  /** Finishes every leg (waiting at most 2 s for the worker's answers), then stops the worker. */
  async close(): Promise<void> {
    const legs = [...this.legs.values()];
    const finished = Promise.all(legs.map((leg) => leg.finish()));
    await Promise.race([finished, new Promise((r) => setTimeout(r, 2000).unref())]);
    const worker = this.worker;
    this.worker = null;
    this.legs.clear();
    for (const leg of legs) leg.lost('media worker stopped');
    await worker?.terminate();
  }

  private post(msg: ToMediaWorker, transfer?: ArrayBuffer[]): void {
    this.spawn().postMessage(msg, transfer ?? []);
  }

  private spawn(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./worker-entry.mjs', import.meta.url), {
      workerData: { range: this.range, priority: this.wantedPriority, senders: this.send.senders, sendLeadMs: this.send.leadMs },
    });
    worker.unref();
    const ready = new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`media worker exited (${code})`)));
      // Calls may bind before it (their messages are served at once); 'ready' comes once the thread's priority is set.
      const onReady = (msg: FromMediaWorker) => {
        if (msg.op !== 'ready') return;
        worker.off('message', onReady);
        this.priority = { priority: msg.priority, ...(msg.reason ? { reason: msg.reason } : {}) };
        this.sending = { senders: msg.senders, senderCpus: msg.senderCpus, ...(msg.sendersReason ? { sendersReason: msg.sendersReason } : {}) };
        resolve();
      };
      worker.on('message', onReady);
    });
    ready.catch(() => undefined); // a death before start() is reported to the legs (below), not as an unhandled rejection
    this.ready.set(worker, ready);
    worker.on('message', (msg: FromMediaWorker) => {
      this.legs.get(msg.id)?.receive(msg);
      if (msg.op === 'finished') this.legs.delete(msg.id);
    });
    const died = (reason: string) => {
      if (this.worker !== worker) return;
      this.worker = null;
      const legs = [...this.legs.values()];
      this.legs.clear();
      for (const leg of legs) leg.lost(reason);
    };
    worker.on('error', (err) => died(`media worker failed: ${err.message}`));
    worker.on('exit', (code) => died(`media worker exited (${code})`));
    this.worker = worker;
    return worker;
  }
}

/** One call's leg in the media worker, seen from the main thread. */
export class RemoteMediaLeg implements MediaLeg {
  onAudio: ((frame: Int16Array) => void) | null = null;
  onDtmf: ((digit: string) => void) | null = null;
  onError: ((err: Error) => void) | null = null;
  onMediaTimeout: (() => void) | null = null;

  private port = 0;
  private dtmfPayloadType: number | null = null;
  private started = false;
  private closed = false;
  /** The worker has let the leg go (finished), or the worker is gone: nothing more will come for it. */
  private gone = false;
  private waiter: Waiter | null = null;
  private finished: Promise<RtpSessionStats> | null = null;
  private resolveFinished: ((stats: RtpSessionStats) => void) | null = null;
  /** Samples given to send(), the worker's count of those sent or dropped, and the count when clear() was last called. */
  private pushed = 0;
  private consumed = 0;
  private clearedAt = 0;

  constructor(
    private readonly id: number,
    private readonly post: (msg: ToMediaWorker, transfer?: ArrayBuffer[]) => void,
  ) {}

  get localPort(): number {
    return this.port;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async start(params: RtpStartParams): Promise<void> {
    if (this.closed) throw new Error('RTP session closed');
    if (this.started) throw new Error('RTP session already started');
    await this.request({ op: 'start', id: this.id, params });
    this.started = true;
    this.dtmfPayloadType = params.dtmfPayloadType;
  }

  send(pcm: Int16Array): void {
    if (this.closed || pcm.length === 0) return;
    this.pushed += pcm.length;
    const copy = pcm.slice();
    this.post({ op: 'send', id: this.id, pcm: copy }, [copy.buffer]);
  }

  set speaking(on: boolean) {
    if (!this.closed) this.post({ op: 'speaking', id: this.id, on });
  }

  set peerSending(on: boolean) {
    if (!this.closed) this.post({ op: 'peerSending', id: this.id, on });
  }

  /** Holds the agent's audio queued on the worker (barge-in pending), or plays it on. See RtpSession.held. */
  hold(on: boolean): void {
    if (!this.closed) this.post({ op: 'hold', id: this.id, on });
  }

  clear(): void {
    this.clearedAt = this.pushed;
    if (!this.closed) this.post({ op: 'clear', id: this.id });
  }

  queuedMs(): number {
    if (this.closed) return 0;
    return ((this.pushed - Math.max(this.consumed, this.clearedAt)) * 1000) / SAMPLE_RATE;
  }

  sendDtmf(digits: string): void {
    if (!isDtmfString(digits)) throw new RangeError(`not DTMF digits: ${JSON.stringify(digits)}`);
    if (!this.started) throw new Error('RTP session not started');
    if (this.dtmfPayloadType === null) throw new Error('the peer did not negotiate telephone-event');
    if (!this.closed) this.post({ op: 'dtmf', id: this.id, digits });
  }

  finish(): Promise<RtpSessionStats> {
    if (this.finished) return this.finished;
    this.finished = new Promise((r) => (this.resolveFinished = r));
    if (this.closed) this.resolveFinished!(NO_STATS);
    else {
      this.closed = true;
      this.post({ op: 'finish', id: this.id });
    }
    return this.finished;
  }

  /** Posts a bind or start and waits for its answer. */
  request(msg: ToMediaWorker): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.post(msg);
    });
  }

  /** A message from the worker about this leg. */
  receive(msg: FromMediaWorker): void {
    switch (msg.op) {
      case 'audio':
        if (!this.closed) this.deliver(() => this.onAudio?.(msg.frame));
        break;
      case 'dtmf':
        if (!this.closed) this.deliver(() => this.onDtmf?.(msg.digit));
        break;
      case 'consumed':
        this.consumed = msg.samples;
        break;
      case 'mediaTimeout':
        if (!this.closed) this.deliver(() => this.onMediaTimeout?.());
        break;
      case 'bound':
        this.port = msg.port;
        this.settle();
        break;
      case 'started':
        this.settle();
        break;
      case 'failed':
        this.settle(new Error(msg.message));
        break;
      case 'error':
        this.onError?.(new Error(msg.message));
        break;
      case 'finished':
        this.settle(new Error('RTP session closed')); // a leg finished while it was still binding
        this.gone = true;
        this.resolveFinished?.(msg.stats ?? NO_STATS);
        break;
    }
  }

  /** The worker died: the leg is gone. */
  lost(reason: string): void {
    if (this.gone) return;
    this.gone = true;
    const err = new Error(reason);
    this.settle(err);
    this.closed = true;
    this.resolveFinished?.(NO_STATS);
    this.onError?.(err);
  }

  private settle(err?: Error): void {
    const w = this.waiter;
    this.waiter = null;
    if (!w) return;
    if (err) w.reject(err);
    else w.resolve();
  }

  /** A consumer callback's error goes to onError, as on the main-thread RtpSession. */
  private deliver(fn: () => void): void {
    deliverTo(fn, this.onError);
  }
}
