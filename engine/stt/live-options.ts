// What a live recognition session (live.ts) takes and gives: the wire encodings it decodes, its options, its events
// (transcripts, speech_started / speech_ended, errors) and its work counters.
import { WIRE_ENCODINGS, type WireEncoding } from '../audio/decode.js';

/** Encodings a live session decodes: linear16, linear32, mulaw, alaw, opus (one packet per push), ogg_opus. */
export const LIVE_ENCODINGS: readonly WireEncoding[] = WIRE_ENCODINGS;

export function isLiveEncoding(x: unknown): x is WireEncoding {
  return typeof x === 'string' && (WIRE_ENCODINGS as readonly string[]).includes(x);
}

export type LiveEvent =
  | {
      type: 'transcript';
      transcript: string;
      isFinal: boolean;
      /** Finals only: the final answering close(). */
      isLast?: boolean;
      /** Finals only: the final answering finalize(). */
      fromFinalize?: boolean;
      /** Seconds since the first audio. */
      start: number;
      end: number;
    }
  | { type: 'speech_started'; timestamp: number }
  | { type: 'speech_ended'; timestamp: number }
  | { type: 'error'; message: string };

export interface LiveTranscriberOptions {
  /** Rate of the incoming audio (any positive integer rate; resampled to 16 kHz). */
  sampleRate: number;
  /** linear16 | linear32 | mulaw | alaw | opus | ogg_opus (anything else: the constructor throws AudioFormatError). */
  encoding: string;
  /** Emit speech_started / speech_ended. */
  vadEvents: boolean;
  /** New speech audio between interims, ms. Default 700; 0 disables interims. */
  interimIntervalMs?: number;
  /**
   * Silence that ends an utterance, ms. Default 300: with the speculative final started 32 ms into the silence, the
   * final is ready when the silence ends (bench/stt-api.ts: end of audio to final p50 272 ms at 300 vs 520 at 600,
   * same WER; 200 split sentences and cost 2 WER points without being faster).
   */
  eouSilenceMs?: number;
  /**
   * Adaptive end of utterance, used only when eouSilenceMs is not given: after this much trailing silence an
   * utterance whose speculative final reads as a finished sentence ends as soon as that final is ready. Default 150;
   * 0 disables.
   */
  eouEarlyMs?: number;
  /** Longer utterances are finalised at their quietest point before this length. Default 28 (at most 29). */
  maxUtteranceSeconds?: number;
  /** Audio kept before the VAD onset, ms. Default 300. */
  preRollMs?: number;
  /**
   * Trailing silence given to Whisper after speech, ms; also how long after the silence began the speculative final
   * starts. Default 32 (32, 100 and 200 gave the same WER on 36 Asterisk prompts, and 32 vs 100 the same on 80:
   * Silero's own hangover suffices).
   */
  tailMs?: number;
  /** VAD probability that starts speech (default 0.5) and below which silence counts (default 0.35). */
  startThreshold?: number;
  endThreshold?: number;
  /** Speech needed before speech_started, ms. Default 96 (three VAD windows: a short word such as "three" counts). */
  minSpeechMs?: number;
  /** Audio received but not yet processed beyond which the session fails (the client outruns the CPU). Default 60 s. */
  maxBacklogSeconds?: number;
}

/** Work done so far: Whisper runs by kind, and finals emitted. */
export interface LiveStats {
  interims: number;
  interimsEmitted: number;
  speculations: number;
  speculationsUsed: number;
  earlyEnds: number;
  finals: number;
}
