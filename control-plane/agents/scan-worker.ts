// Worker thread body: runs the security scan off the main event loop.
import { parentPort } from 'node:worker_threads';
import { scanConfig } from './security-scan.js';

parentPort?.on('message', (msg: { id: number; sections: Record<string, unknown> }) => {
  try {
    parentPort?.postMessage({ id: msg.id, findings: scanConfig(msg.sections) });
  } catch (err) {
    parentPort?.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) });
  }
});
