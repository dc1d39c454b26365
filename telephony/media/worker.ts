// The media worker thread: runs every call's RtpSession (UDP socket, jitter buffer, SRTP, RNNoise, the 20 ms send
// clock) on an event loop of its own, so the main thread's work (voice activity detection, resampling, garbage
// collection, the store) never delays a packet. Driven by messages from MediaWorker (remote.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { PortAllocator, type PortRange } from './ports.js';
import { RtpSession } from './session.js';
import type { FromMediaWorker, ToMediaWorker } from './remote.js';
import { applyMediaPriority, type MediaPriority } from './priority.js';
import { startSendPool } from './sendpool.js';

const port = parentPort;
if (!port) throw new Error('media worker: no parent port');
const data = workerData as { range: PortRange; priority: MediaPriority; senders: number; sendLeadMs: number };
const allocator = new PortAllocator(data.range);
const sessions = new Map<number, RtpSession>();
/** Legs still binding, and those of them the main thread has finished already (they close once bound). */
const binding = new Set<number>();
const finishedEarly = new Set<number>();
const post = (msg: FromMediaWorker, transfer?: ArrayBuffer[]) => port.postMessage(msg, transfer ?? []);
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));
// The send pool's threads start first (PARLEY_RTP_SENDERS; a bind waits for them).
const started = startSendPool(data.senders, data.priority);

async function bind(id: number, localAddress: string): Promise<void> {
  binding.add(id);
  try {
    const { pool } = await started;
    const s = await RtpSession.bind({ localAddress, ports: allocator, pool: pool ? { pool, leadMs: data.sendLeadMs } : null });
    binding.delete(id);
    if (finishedEarly.delete(id)) {
      void s.finish().then((stats) => post({ op: 'finished', id, stats }));
      return;
    }
    sessions.set(id, s);
    s.onAudio = (frame) => {
      const copy = frame.slice();
      post({ op: 'audio', id, frame: copy }, [copy.buffer]);
    };
    s.onDtmf = (digit) => post({ op: 'dtmf', id, digit });
    s.onError = (err) => post({ op: 'error', id, message: err.message });
    s.onConsumed = (samples) => post({ op: 'consumed', id, samples });
    s.onMediaTimeout = () => post({ op: 'mediaTimeout', id });
    post({ op: 'bound', id, port: s.localPort });
  } catch (err) {
    binding.delete(id);
    if (finishedEarly.delete(id)) post({ op: 'finished', id, stats: null });
    else post({ op: 'failed', id, message: message(err) });
  }
}

async function start(s: RtpSession, id: number, params: Parameters<RtpSession['start']>[0]): Promise<void> {
  try {
    await s.start(params);
    post({ op: 'started', id });
  } catch (err) {
    post({ op: 'failed', id, message: message(err) });
  }
}

port.on('message', (msg: ToMediaWorker) => {
  if (msg.op === 'bind') {
    void bind(msg.id, msg.localAddress);
    return;
  }
  const s = sessions.get(msg.id);
  if (!s) {
    if (msg.op === 'finish' && binding.has(msg.id)) finishedEarly.add(msg.id);
    return;
  }
  switch (msg.op) {
    case 'start':
      void start(s, msg.id, msg.params);
      break;
    case 'send':
      s.send(msg.pcm);
      break;
    case 'speaking':
      s.speaking = msg.on;
      break;
    case 'peerSending':
      s.peerSending = msg.on;
      break;
    case 'clear':
      s.clear();
      break;
    case 'hold':
      s.hold(msg.on);
      break;
    case 'dtmf':
      try {
        s.sendDtmf(msg.digits);
      } catch (err) {
        post({ op: 'error', id: msg.id, message: message(err) });
      }
      break;
    case 'finish':
      sessions.delete(msg.id);
      void s.finish().then((stats) => post({ op: 'finished', id: msg.id, stats }));
      break;
  }
});

// Ready once its scheduling is set (the main thread waits for this before the first call).
const priority = await applyMediaPriority(data.priority);
const pool = await started;
post({ op: 'ready', id: 0, ...priority, senders: pool.senders, senderCpus: pool.cpus, ...(pool.reason ? { sendersReason: pool.reason } : {}) });
