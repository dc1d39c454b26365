// The engine's seams to time and to its models: what turn-taking and the agent's replies need of the clock, of voice
// activity detection, of recognition and of synthesis, as small interfaces. The real clock, Silero and Whisper through
// the inference queue (models/turn-models.ts) and the registry's voices implement them; the behaviour tests
// (test/turn_behaviour.test.ts) run sessions on scripted ones and a fake clock.
import type { MonoAudio } from './audio/types.js';
import type { InferenceKind } from './models/queue.js';

/** A timer the clock handed out (only ever given back to its clearTimeout). */
export type ClockTimer = unknown;

export interface Clock {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  setTimeout(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer): void;
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

export const sleep = (clock: Clock, ms: number): Promise<void> => new Promise<void>((resolve) => void clock.setTimeout(resolve, ms));

/** One stream of voice activity detection at 16 kHz. */
export interface VoiceActivity {
  /** Speech probability of each 32 ms window (512 samples) the samples complete; a remainder waits for the next call. */
  process(samples16k: Float32Array): Promise<number[]>;
  /** Samples waiting for a complete window. */
  readonly bufferedSamples: number;
  /** Forgets the stream (calls in flight return no windows). */
  reset(): void;
}

export interface Transcription {
  text: string;
  /** How long the model ran, ms (the wait for an inference slot left out). */
  runMs: number;
}

export interface SpeechRecognizer {
  /**
   * The words of 16 kHz speech, run as `kind` by the inference queue; `signal` drops it while it still waits for a
   * slot. Throws QueueFullError when the queue is full.
   */
  transcribe(samples16k: Float32Array, kind: InferenceKind, signal?: AbortSignal): Promise<Transcription>;
}

/** What the caller's side of a turn needs: a VAD stream of its own and a recognizer. */
export interface TurnModels {
  vad: VoiceActivity;
  recognizer: SpeechRecognizer;
}

export interface Synthesizer {
  /** One phrase in a voice. `first`: the first phrase of a reply (served first); `signal` drops it while it waits. */
  synthesize(voiceId: string, text: string, speed: number, opts?: { first?: boolean; signal?: AbortSignal }): Promise<MonoAudio>;
}
