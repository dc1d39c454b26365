// Worker thread body: reads one PDF at a time off the main thread (control-plane/knowledge/pdf.ts). A PDF that cannot
// be read is a result with its reason, not a worker failure.
import { parentPort } from 'node:worker_threads';
import { readPdf } from './pdf.js';

parentPort?.postMessage({ ready: true });
parentPort?.on('message', (msg: { id: number; bytes: Uint8Array }) => {
  readPdf(Buffer.from(msg.bytes.buffer, msg.bytes.byteOffset, msg.bytes.byteLength)).then(
    (read) => parentPort?.postMessage({ id: msg.id, result: read }),
    (err: unknown) => parentPort?.postMessage({ id: msg.id, result: { error: err instanceof Error ? err.message : String(err) } }),
  );
});
