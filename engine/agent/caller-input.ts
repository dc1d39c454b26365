// The caller's audio on its way to the turn-taking of a voice session (session.ts): the agent's detection settings as
// the turn recognizer's options (voiceDetectionConfig, smartTurnConfig, endpointingConfig), and the two audio options
// applied before the VAD:
// - muteUserUntilFirstBotResponse: while `muted`, caller audio is not heard at all (no VAD, no barge-in, no turn; it
//   is still recorded). The session mutes when the agent opens the call and unmutes when that first reply is over:
//   played out (the pacer's notion of playout, as for the end of any turn) or cut (a cancel, typed text over it). An
//   agent that waits for the user to speak first has no first reply to wait for: the option does nothing then.
// - denoise (denoisingConfig): RNNoise (engine/audio/denoise.ts) on the 16 kHz audio, whatever the call's input rate.
//   A phone call whose trunk denoises already has it off (calls/runtime.ts).
import { NoiseSuppressor } from '../audio/denoise.js';
import { qualityFor } from '../audio/resample.js';
import type { Clock } from '../ports.js';
import { spokenText } from '../turn/speech-tracker.js';
import { SR, UserTurnRecognizer, WIN, WIN_MS, type HeardTurn, type UserTurnHooks } from '../turn/user-turn.js';
import type { SessionOptions } from './session-types.js';

/** The caller's turn recognizer, configured from the agent. */
export function callerTurns(opts: SessionOptions, clock: Clock, hooks: UserTurnHooks<HeardTurn>): UserTurnRecognizer<HeardTurn> {
  const spec = opts.spec;
  const start = spec.vad.confidence > 0 ? spec.vad.confidence : 0.5;
  return new UserTurnRecognizer<HeardTurn>({
    encoding: opts.inputEncoding ?? 'linear16',
    sampleRate: opts.inputRate,
    quality: qualityFor(opts.inputRate),
    clock,
    tracker: {
      startThreshold: start,
      endThreshold: Math.max(0.05, start - 0.15),
      minSpeechWindows: Math.max(1, Math.round((opts.minSpeechMs ?? 96) / WIN_MS)),
      minVolume: spec.vad.minVolume,
    },
    // smartTurnConfig switches the adaptive decision, endpointingConfig bounds it.
    policy: {
      config: { smartTurn: spec.smartTurn.enabled, smartWaitMs: spec.smartTurn.waitMs, minDelayMs: spec.endpointing.minDelayMs, maxDelayMs: spec.endpointing.maxDelayMs },
      tailSamples: WIN,
      countArriving: true,
      words: (text) => spokenText(text) || null,
    },
    hooks,
  });
}

export class CallerInput {
  /** Caller audio is not heard (muteUserUntilFirstBotResponse, until the first reply is over). */
  muted = false;
  private denoiser: NoiseSuppressor | null = null;
  private closed = false;

  constructor(private readonly opts: { mute?: boolean; denoise?: boolean }) {}

  /** Loads what the input needs (RNNoise's WASM, when denoising) before the first audio is heard. */
  async load(): Promise<void> {
    if (!this.opts.denoise) return;
    const denoiser = await NoiseSuppressor.create({ sampleRate: SR });
    if (this.closed) denoiser.destroy();
    else this.denoiser = denoiser;
  }

  /** The agent opens the call: the caller is muted until that reply is over, when the agent says so. */
  opening(): void {
    this.muted = this.opts.mute === true;
  }

  /** A reply is over (played out, cut or cancelled): the first one unmutes the caller. */
  replyOver(): void {
    this.muted = false;
  }

  /** 16 kHz caller audio as the VAD gets it. */
  clean(samples: Float32Array): Float32Array {
    return this.denoiser ? this.denoiser.processSamples(samples) : samples;
  }

  close(): void {
    this.closed = true;
    this.denoiser?.destroy();
    this.denoiser = null;
  }
}
