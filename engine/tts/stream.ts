// Streaming synthesis: phrases are synthesised in order with one phrase of look-ahead, so speaking starts after the first.
import type { MonoAudio } from '../audio/types.js';
import type { ModelRegistry } from '../models/registry.js';
import { OutputStream } from './output.js';

export interface SynthesisRequest {
  voiceId: string;
  speed: number;
  /** Output rate. */
  sampleRate: number;
}

/**
 * Synthesises `phrases` and calls `onAudio` with output-rate samples as each phrase is ready (the next phrase is
 * already being synthesised meanwhile). Stops early when `cancelled()` turns true.
 */
export async function synthesizePhrases(
  registry: ModelRegistry,
  req: SynthesisRequest,
  phrases: readonly string[],
  onAudio: (samples: Float32Array) => Promise<void> | void,
  cancelled: () => boolean = () => false,
  /** The first phrase's audio when the caller already synthesised it (to answer errors before streaming). */
  first?: MonoAudio,
): Promise<void> {
  const out = new OutputStream(req.sampleRate);
  let next = phrases.length ? (first ? Promise.resolve(first) : registry.synthesize(req.voiceId, phrases[0] as string, req.speed)) : null;
  for (let i = 0; i < phrases.length && next; i++) {
    const current = next;
    next = i + 1 < phrases.length ? registry.synthesize(req.voiceId, phrases[i + 1] as string, req.speed) : null;
    // A failed look-ahead must not go unobserved while this phrase is delivered.
    next?.catch(() => {});
    const audio = await current;
    if (cancelled()) return;
    const samples = out.push(audio.samples, audio.sampleRate);
    if (samples.length) await onAudio(samples);
  }
  const tail = out.flush();
  if (tail.length && !cancelled()) await onAudio(tail);
}
