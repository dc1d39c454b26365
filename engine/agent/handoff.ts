// The agent's words outside the conversation, for a warm transfer: the handoff said to the transfer's target, written
// as configured or by the agent's language model, and spoken in the agent's voice as one clip.
import { resample } from '../audio/resample.js';
import { speakingAs } from '../tts/speech-text.js';
import type { SessionOptions } from './session-types.js';
import type { HandoffOption } from './types.js';

/** The agent's voice saying `text` as one clip at `rate` Hz. Empty when the text is. */
export async function voiceClip(opts: Pick<SessionOptions, 'models' | 'spec'>, text: string, rate: number): Promise<Float32Array> {
  if (!text.trim()) return new Float32Array(0);
  const audio = await speakingAs(opts.models.synthesizer, opts.spec.speechText).synthesize(opts.spec.voiceId, text, opts.spec.speed);
  return audio.sampleRate === rate ? audio.samples : resample(audio.samples, audio.sampleRate, rate);
}

/**
 * A transfer handoff's words: `static` (or no type) as written; `prompt` written by the agent's language model from
 * the prompt and the conversation so far. A brain without a model (workflow), or a model that fails, says the prompt
 * as written.
 */
export async function handoffText(opts: Pick<SessionOptions, 'brain' | 'variables' | 'emit'>, handoff: HandoffOption | undefined): Promise<string> {
  const text = (handoff?.prompt ?? '').trim();
  const brain = opts.brain;
  if (!text || handoff?.type !== 'prompt' || !brain.compose) return text;
  try {
    const written = await brain.compose(text, { variables: opts.variables, signal: AbortSignal.timeout(20_000) });
    if (written) return written;
  } catch {
    // the error names the endpoint's problem; the prompt said as written still hands the call over
  }
  opts.emit({ type: 'error', code: 'handoff_not_written', message: 'The language model did not write the transfer handoff; its prompt is said as written' });
  return text;
}
