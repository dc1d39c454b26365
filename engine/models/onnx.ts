// Shared onnxruntime-node session creation with CPU defaults suited to small shared machines.
import os from 'node:os';
import ort from 'onnxruntime-node';

export { ort };

export interface CpuSessionOptions {
  /** Threads used inside one operator. Defaults to min(2, available cores). */
  intraOpNumThreads?: number;
  /** Threads used across independent operators (parallel mode only). Defaults to 1. */
  interOpNumThreads?: number;
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
  /** onnxruntime log level: 0 verbose .. 4 fatal. Defaults to 3 (errors only). */
  logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
  /**
   * Let idle intra-op threads spin waiting for work (onnxruntime's default). Defaults to false: on a shared
   * 2-core machine spinning threads steal the CPU other sessions need (measured with Whisper: same best case,
   * much better median under contention).
   */
  allowSpinning?: boolean;
}

/** Default intra-op thread count: two threads, or one on a single-core machine. */
export function defaultIntraOpThreads(): number {
  const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return Math.max(1, Math.min(2, cores));
}

/** Create a CPU InferenceSession from a model path or bytes. */
export async function createCpuSession(
  model: string | Uint8Array,
  opts: CpuSessionOptions = {},
): Promise<ort.InferenceSession> {
  const options: ort.InferenceSession.SessionOptions = {
    executionProviders: ['cpu'],
    intraOpNumThreads: opts.intraOpNumThreads ?? defaultIntraOpThreads(),
    interOpNumThreads: opts.interOpNumThreads ?? 1,
    executionMode: 'sequential',
    graphOptimizationLevel: opts.graphOptimizationLevel ?? 'all',
    enableCpuMemArena: true,
    enableMemPattern: true,
    logSeverityLevel: opts.logSeverityLevel ?? 3,
    extra: { session: { intra_op: { allow_spinning: opts.allowSpinning ? '1' : '0' } } },
  };
  return typeof model === 'string'
    ? ort.InferenceSession.create(model, options)
    : ort.InferenceSession.create(model, options);
}
