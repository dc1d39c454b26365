// Helpers for tests that compare 8 kHz audio frames as they come out of RTP sessions: G.711 quantisation, joining
// frames, finding a clip in what was heard, and waiting for a condition.
import { ALAW_TO_LINEAR, MULAW_TO_LINEAR, linearToALaw, linearToMuLaw } from '../../engine/audio/g711.js';
import type { Codec } from '../../telephony/media/sdp.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 10 ms; throws after `timeoutMs`. */
export async function waitFor(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await sleep(10);
  }
}

/** Float samples (-1..1) as 16-bit PCM. */
export const toInt16 = (x: Float32Array) => Int16Array.from(x, (v) => Math.max(-32768, Math.min(32767, Math.round(v * 32768))));

/** What `pcm` becomes after a G.711 encode and decode. */
export const g711RoundTrip = (pcm: Int16Array, codec: Codec) =>
  codec === 'PCMU' ? pcm.map((v) => MULAW_TO_LINEAR[linearToMuLaw(v)]!) : pcm.map((v) => ALAW_TO_LINEAR[linearToALaw(v)]!);

/** Frames joined into one buffer. */
export const concat = (frames: Int16Array[]) => {
  const out = new Int16Array(frames.reduce((n, f) => n + f.length, 0));
  let o = 0;
  for (const f of frames) out.set(f, (o += f.length) - f.length);
  return out;
};

/** Frame-aligned offset (in samples) where `needle` occurs exactly in `hay`, or -1. */
export function findExact(hay: Int16Array, needle: Int16Array, step = 160): number {
  outer: for (let at = 0; at + needle.length <= hay.length; at += step) {
    for (let i = 0; i < needle.length; i++) if (hay[at + i] !== needle[i]) continue outer;
    return at;
  }
  return -1;
}
