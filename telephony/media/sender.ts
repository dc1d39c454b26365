// An RTP sender thread of the send pool (sendpool.ts): pinned to its CPU, at the media thread's scheduling, it sleeps
// until the next packet is due and sends it. It tells the media thread once it runs, then never returns to its event loop
// until the pool stops.
import { parentPort, workerData } from 'node:worker_threads';
import { applyMediaPriority, pinThread, type MediaPriority } from './priority.js';
import { loadSendTo, PoolViews, runSender, type SendPoolShared } from './sendpool.js';

const port = parentPort;
if (!port) throw new Error('RTP sender: no parent port');
const data = workerData as { shared: SendPoolShared; index: number; cpu: number | null; priority: MediaPriority };
const pinned = data.cpu === null ? 'not pinned' : pinThread(data.cpu);
const outcome = await applyMediaPriority(data.priority);
const sendto = loadSendTo();
port.postMessage({ ready: true, pinned, ...outcome });
runSender(new PoolViews(data.shared), sendto, data.index);
