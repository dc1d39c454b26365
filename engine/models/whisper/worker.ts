// Worker thread body: one Whisper session, transcribing off the main thread (onnxruntime-node blocks its caller).
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { WhisperRecognizer, type TranscribeOptions } from './recognizer.js';

const { cacheDir, intraOpNumThreads, nice, shortWindow } = workerData as { cacheDir?: string; intraOpNumThreads: number; nice: number; shortWindow?: boolean };
// Before the model loads, so ONNX Runtime's threads inherit it (see WhisperPoolOptions.nice).
if (nice) {
  try {
    os.setPriority(0, nice);
  } catch {
    // Not permitted here: the default priority.
  }
}
const ready = WhisperRecognizer.load({ cacheDir, intraOpNumThreads, shortWindow });
ready.then(
  () => parentPort?.postMessage({ ready: true }),
  (err: unknown) => parentPort?.postMessage({ ready: false, error: err instanceof Error ? err.message : String(err) }),
);

parentPort?.on('message', (msg: { id: number; samples: Float32Array; opts?: TranscribeOptions }) => {
  void ready
    .then((r) => r.transcribe(msg.samples, msg.opts))
    .then(
      (result) => parentPort?.postMessage({ id: msg.id, result }),
      (err: unknown) => parentPort?.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) }),
    );
});
