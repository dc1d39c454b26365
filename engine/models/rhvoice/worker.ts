// Worker thread body: one RHVoice engine, speaking one message at a time off the main thread (RHVoice_speak blocks).
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openRhvoice, type RhvoiceEngine } from './binding.js';

const { resourcePaths, profiles, nice } = workerData as { resourcePaths: string[]; profiles: string[]; nice: number };
if (nice) {
  try {
    os.setPriority(0, nice);
  } catch {
    // Not permitted here: the default priority.
  }
}

let engine: RhvoiceEngine | undefined;
try {
  engine = openRhvoice(resourcePaths, { preload: true });
  // Each voice speaks once now: its first message otherwise costs ~50 ms more (models read and set up).
  for (const profile of profiles) engine.speak('Hello.', profile, 1);
  parentPort?.postMessage({ ready: true, voices: engine.voices, version: engine.version });
} catch (err) {
  parentPort?.postMessage({ ready: false, error: err instanceof Error ? err.message : String(err) });
}

parentPort?.on('message', (msg: { id: number; text: string; profile: string; speed: number }) => {
  try {
    if (!engine) throw new Error('RHVoice engine did not start');
    const e = engine;
    // RHVoice_speak failed once in one bench run (bench/tts.ts: a POST /tts of one of its 50 sentences, after some
    // 400 messages; every one of them spoken without fault in four more runs, the cause not found): a failed message
    // is spoken once more before the job fails.
    let speech: ReturnType<RhvoiceEngine['speak']>;
    try {
      speech = e.speak(msg.text, msg.profile, msg.speed);
    } catch {
      speech = e.speak(msg.text, msg.profile, msg.speed);
    }
    parentPort?.postMessage({ id: msg.id, result: speech }, [speech.samples.buffer as ArrayBuffer]);
  } catch (err) {
    parentPort?.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) });
  }
});
