// Worker-thread entry: renders one background ambience loop off the event loop (engine/audio/ambience.ts
// prepareAmbience) and hands its samples back (transferred, not copied).
import { parentPort, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { ambienceLoop } = await import('./ambience.ts');
const loop = ambienceLoop(workerData.kind, workerData.rate);
parentPort.postMessage(loop, [loop.buffer]);
