// A pool of Whisper worker threads: transcription never blocks the event loop; each worker has its own session.
import { Worker } from 'node:worker_threads';
import { prepareWhisperModel } from './prepare.js';
import type { TranscribeOptions, Transcript } from './recognizer.js';
import { WHISPER_MAX_SAMPLES, WHISPER_SAMPLE_RATE } from './recognizer.js';

interface Slot {
  worker: Worker;
  busy: number;
}

export interface WhisperPoolOptions {
  size: number;
  cacheDir?: string;
  /** Threads per worker's session. */
  intraOpNumThreads?: number;
  /**
   * Nice value of the recognizer worker threads (0-19, default 10; 0 keeps the server's own). Recognition and synthesis are
   * batch work; the event loop (the RTP send clock, voice activity detection, the sockets) is real time, and on a
   * busy machine it must not wait for a core behind them. Linux keeps a nice value per thread, and the threads ONNX
   * Runtime starts inside a worker inherit it.
   */
  nice?: number;
  /** Shorter encoder window for short clips (default true; see encoderWindow in recognizer.ts). */
  shortWindow?: boolean;
}

export class WhisperPool {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (t: Transcript) => void; reject: (e: Error) => void; slot: Slot }>();

  private constructor(private readonly slots: Slot[]) {
    for (const slot of slots) {
      slot.worker.on('message', (msg: { id?: number; result?: Transcript; error?: string }) => {
        if (msg.id === undefined) return;
        const job = this.pending.get(msg.id);
        if (!job) return;
        this.pending.delete(msg.id);
        job.slot.busy--;
        if (msg.error !== undefined) job.reject(new Error(msg.error));
        else job.resolve(msg.result as Transcript);
      });
      slot.worker.on('error', (err) => this.failSlot(slot, err.message));
      slot.worker.on('exit', () => this.failSlot(slot, 'recognizer worker exited'));
    }
  }

  /** Prepares the model once (the graph edit is cached), then starts the workers and waits until each has loaded it. */
  static async start(opts: WhisperPoolOptions): Promise<WhisperPool> {
    await prepareWhisperModel({ cacheDir: opts.cacheDir });
    const slots = await Promise.all(
      Array.from({ length: Math.max(1, opts.size) }, async () => {
        const worker = new Worker(new URL('./worker-entry.mjs', import.meta.url), {
          workerData: { cacheDir: opts.cacheDir, intraOpNumThreads: opts.intraOpNumThreads ?? 1, nice: opts.nice ?? 0, shortWindow: opts.shortWindow ?? true },
        });
        worker.unref();
        await new Promise<void>((resolve, reject) => {
          worker.once('message', (msg: { ready?: boolean; error?: string }) => (msg.ready ? resolve() : reject(new Error(msg.error ?? 'recognizer failed to load'))));
          worker.once('error', reject);
        });
        return { worker, busy: 0 };
      }),
    );
    return new WhisperPool(slots);
  }

  /** Transcribes at most 30 s of 16 kHz audio on the least busy worker. */
  transcribe(samples16k: Float32Array, opts?: TranscribeOptions): Promise<Transcript> {
    if (samples16k.length > WHISPER_MAX_SAMPLES) {
      return Promise.reject(new RangeError(`whisper: ${(samples16k.length / WHISPER_SAMPLE_RATE).toFixed(1)} s of audio; at most 30 s per call`));
    }
    const slot = this.slots.reduce((a, b) => (b.busy < a.busy ? b : a));
    const id = this.nextId++;
    slot.busy++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, slot });
      const copy = samples16k.slice();
      slot.worker.postMessage({ id, samples: copy, opts }, [copy.buffer]);
    });
  }

  private failSlot(slot: Slot, message: string): void {
    for (const [id, job] of this.pending) {
      if (job.slot !== slot) continue;
      this.pending.delete(id);
      job.reject(new Error(message));
    }
    slot.busy = 0;
  }

  async close(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}
