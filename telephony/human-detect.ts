// Whether a person answered a transfer's target call (`transferOnlyIfHuman`), from voice activity on the target's
// audio: a person says a short greeting ("Hello?", "Sales, Anna speaking") and pauses for an answer; an answering
// machine or voicemail speaks a long greeting without pausing, or says nothing. Audio-clocked (32 ms VAD windows), so
// a loaded machine decides the same way; only the overall `detectionTimeout` runs on the wall clock.
import { loadSileroVad, VAD_WINDOW_SAMPLES, VAD_SAMPLE_RATE } from '../engine/models/silero.js';
import type { MediaLeg } from './media/leg.js';

export type HumanVerdict =
  /** A short greeting, then a pause. */
  | 'human'
  /** Speech going on past the longest greeting a person says before pausing. */
  | 'machine'
  /** No greeting (or one still going on) when the detection timeout came. */
  | 'timeout';

export interface HumanDetectOptions {
  /** Longest wait for a verdict, ms (the tool's detectionTimeout). */
  timeoutMs: number;
  /** Aborts the detection (the caller hung up): resolves `timeout`. */
  signal?: AbortSignal;
}

const WIN_MS = (VAD_WINDOW_SAMPLES * 1000) / VAD_SAMPLE_RATE;
/** Speech probability of a window that counts as speech. */
const SPEECH_PROB = 0.5;
/** Speech this long in a row starts the greeting (not a click or a breath). */
const ONSET_WINDOWS = 3;
/** A greeting still going on after this long is a machine's (a person's is 0.5-2 s). */
const MAX_GREETING_MS = 2800;
/** Silence this long after speech ends the greeting: a person waiting for an answer (pauses inside a recorded greeting are shorter). */
const PAUSE_MS = 800;

/**
 * Listens to the target's leg (taking its onAudio until it resolves) and says who answered. The leg's audio goes
 * nowhere else meanwhile: the target is not joined to anyone yet.
 */
export async function detectHuman(leg: MediaLeg, opts: HumanDetectOptions): Promise<{ verdict: HumanVerdict; greetingMs: number }> {
  const vad = (await loadSileroVad()).createStream();
  return new Promise((resolve) => {
    let window = 0;
    let run = 0;
    let start: number | null = null;
    let lastSpeech = 0;
    let settled = false;
    const finish = (verdict: HumanVerdict) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      leg.onAudio = null;
      vad.reset();
      resolve({ verdict, greetingMs: start === null ? 0 : Math.round((lastSpeech - start + 1) * WIN_MS) });
    };
    const onAbort = () => finish('timeout');
    const timer = setTimeout(() => finish('timeout'), opts.timeoutMs);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) return finish('timeout');
    const judge = (p: number) => {
      const w = window++;
      const speech = p >= SPEECH_PROB;
      run = speech ? run + 1 : 0;
      if (start === null) {
        if (run >= ONSET_WINDOWS) {
          start = w - ONSET_WINDOWS + 1;
          lastSpeech = w;
        }
        return;
      }
      if (speech) lastSpeech = w;
      if ((lastSpeech - start + 1) * WIN_MS > MAX_GREETING_MS) finish('machine');
      else if ((w - lastSpeech) * WIN_MS >= PAUSE_MS) finish('human');
    };
    leg.onAudio = (frame) => {
      if (settled) return;
      // 8 kHz to the VAD's 16 kHz: linear interpolation is plenty for voice activity.
      const x = new Float32Array(frame.length * 2);
      for (let i = 0; i < frame.length; i++) {
        const a = (frame[i] as number) / 32768;
        const b = i + 1 < frame.length ? (frame[i + 1] as number) / 32768 : a;
        x[2 * i] = a;
        x[2 * i + 1] = (a + b) / 2;
      }
      vad.process(x).then(
        (probs) => {
          for (const p of probs) if (!settled) judge(p);
        },
        () => finish('timeout'),
      );
    };
  });
}
