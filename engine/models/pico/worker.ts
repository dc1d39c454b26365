// Worker thread body: the SVOX Pico WASM module with every installed voice loaded, speaking one job at a time.
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openPico, type PicoEngine } from './binding.js';
import type { PicoVoiceInfo } from './catalog.js';

const { dir, voices, nice } = workerData as { dir: string; voices: PicoVoiceInfo[]; nice: number };
if (nice) {
  try {
    os.setPriority(0, nice);
  } catch {
    // Not permitted here: the default priority.
  }
}

let engine: PicoEngine | undefined;
try {
  engine = await openPico(dir, voices);
  // Each voice speaks once now, so that the first phrase of a call is not the one that pays for setting up.
  for (const v of voices) engine.speak('Hello.', v.id);
  parentPort?.postMessage({ ready: true });
} catch (err) {
  parentPort?.postMessage({ ready: false, error: err instanceof Error ? err.message : String(err) });
}

parentPort?.on('message', (msg: { id: number; text: string; voiceId: string }) => {
  try {
    if (!engine) throw new Error('SVOX Pico did not start');
    const result = engine.speak(msg.text, msg.voiceId);
    parentPort?.postMessage({ id: msg.id, result }, [result.buffer as ArrayBuffer]);
  } catch (err) {
    parentPort?.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) });
  }
});
