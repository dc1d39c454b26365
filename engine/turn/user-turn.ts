// The caller's side of turn-taking, shared by agent sessions (engine/agent/session.ts) and the /stt/live recognizer
// (engine/stt/live.ts): wire bytes -> decoder and resampler (16 kHz) -> VAD on 32 ms windows -> speech tracking
// (speech-tracker.ts) and prosody (prosody.ts) -> speculative recognition of the turn so far at each pause -> the
// end-of-turn decision (end-of-turn.ts: the words, what the agent last asked, the prosody before the pause), all on the
// audio clock. Each consumer brings its policy (the agent's endpointing; /stt/live's early end and end-of-utterance
// silence) and its own turn bookkeeping, and hears the turn through hooks: speech start, every window (barge-in,
// interims, length limits), the pause, the speculation's words, the silence limit, the end of the turn.
//
// Models sit behind ports (engine/ports.ts) and time behind a Clock, so scripted ones can drive it in tests.
import type { WireEncoding } from '../audio/decode.js';
import type { ResampleQuality } from '../audio/resample.js';
import { SampleBuffer } from '../audio/sample-buffer.js';
import { StreamInput } from '../audio/stream-decoder.js';
import { QueueFullError, type InferenceKind } from '../models/queue.js';
import { VAD_SAMPLE_RATE, VAD_WINDOW_SAMPLES } from '../models/silero.js';
import { realClock, sleep, type Clock, type TurnModels } from '../ports.js';
import { decide, type TurnConfig } from './end-of-turn.js';
import { ProsodyTracker, type ProsodyFeatures } from './prosody.js';
import { SpeechTracker, rms, type SpeechSignal, type SpeechState, type SpeechTrackerOptions } from './speech-tracker.js';

export const SR = VAD_SAMPLE_RATE;
export const WIN = VAD_WINDOW_SAMPLES;
export const WIN_MS = (WIN * 1000) / SR;
/** How long a full inference queue is retried before the recognition fails. */
const RETRY_MS = 10_000;

/** Recognition of the turn up to a pause, started before anyone knows whether the pause ends the turn. */
export interface Speculation {
  /** First silent window of the pause it was made at. */
  pause: number;
  /** End of its audio (16 kHz sample index). */
  end: number;
  result: Promise<string>;
  /** The words, once recognised. */
  text?: string;
  startedAt: number;
  doneAt?: number;
  /** Drops the job while it still waits for a slot (speech resumed, a newer speculation, the turn is over). */
  abort: AbortController;
  /** The silence the end-of-turn decision asked for, ms (decided once, when the words are known). */
  waitMs?: number;
}

/** The turn being heard; consumers add their own bookkeeping. */
export interface HeardTurn {
  /** Start of its audio (16 kHz sample index, pre-roll included). */
  start: number;
  /** First window of the speech whose prosody the decision reads. */
  firstWindow: number;
  spec?: Speculation;
  /** Prosody of the speech before the current pause (taken at the pause). */
  prosody?: ProsodyFeatures;
  /** Clock time the caller stopped speaking (the current pause). */
  stoppedAt?: number;
}

export interface TurnPolicy {
  /** The decision's bounds: no end before minDelayMs of silence, a wait of up to maxDelayMs for an unfinished turn. */
  config: TurnConfig;
  /** Silence that ends the speech whatever the words, windows (/stt/live's end of utterance); none when absent. */
  silenceLimitWindows?: number;
  /** Audio after the pause's start given to its speculation, samples; it starts once that much has been heard. */
  tailSamples: number;
  /** Between windows, count the window now arriving as silence too (the session's count; /stt/live's does not). */
  countArriving: boolean;
  /** The words the decision reads in a transcript; null when there are none. */
  words(text: string): string | null;
}

export interface UserTurnHooks<T extends HeardTurn> {
  /** Speech confirmed, begun at window `onset` (confirmed at `w`): the turn it opens, or null to ignore the speech. */
  speechStarted(onset: number, w: number): T | null;
  /** The caller paused at window `w`. */
  paused?(w: number): void;
  /** The policy's silence limit was reached (the tracker is still in the pause). */
  silenceLimit?(): void;
  /** Every window, after the tracking above; `false` skips this window's speculation and decision. */
  window?(w: number, p: number, signal: SpeechSignal | null, before: SpeechState): boolean | void;
  /** False holds the decision (a barge-in being judged, a closing stream). */
  mayEnd?(): boolean;
  /** False: no speculation at this pause (/stt/live: a continuation after a finalize with no speech of its own). */
  maySpeculate?(turn: T): boolean;
  /** The current turn's speculation has its words. */
  recognized?(turn: T): void;
  /** The current turn's speculation failed. */
  recognitionFailed?(err: unknown): void;
  /** The decision ends the turn with these words (nothing is reset yet: the consumer does what ending means to it). */
  ended(turn: T, words: string): void;
  /** The speculation heard no words. */
  noWords?(turn: T): void;
  /** What the agent last said: the question a reply answers. */
  agentText?(): string;
  /** A recognition ran for `ms` (the wait for a slot left out). */
  ran?(ms: number): void;
  /** The 16 kHz input as it arrives (recording). */
  heard?(samples: Float32Array): void;
  /** False once the consumer is over: windows stop, recognition returns nothing. */
  alive(): boolean;
}

export interface UserTurnOptions<T extends HeardTurn> {
  encoding: WireEncoding;
  sampleRate: number;
  quality?: ResampleQuality;
  tracker: SpeechTrackerOptions;
  policy: TurnPolicy;
  hooks: UserTurnHooks<T>;
  clock?: Clock;
}

export class UserTurnRecognizer<T extends HeardTurn> {
  readonly audio = new SampleBuffer();
  readonly tracker: SpeechTracker;
  /** Windows run through the VAD (the one being handled included). */
  windows = 0;
  turn: T | null = null;
  /** Recognitions running or waiting for a slot. */
  jobs = 0;
  speculations = 0;
  private readonly input: StreamInput;
  private readonly prosody = new ProsodyTracker();
  private readonly policy: TurnPolicy;
  private readonly hooks: UserTurnHooks<T>;
  private readonly clock: Clock;
  private models: TurnModels | undefined;
  /** Clock time at which an input sample index was spoken. */
  private timeOf: (sample: number) => number;

  constructor(opts: UserTurnOptions<T>) {
    this.input = new StreamInput(opts.encoding, opts.sampleRate, SR, opts.quality);
    this.tracker = new SpeechTracker(opts.tracker);
    this.policy = opts.policy;
    this.hooks = opts.hooks;
    this.clock = opts.clock ?? realClock;
    this.timeOf = () => this.clock.now();
  }

  use(models: TurnModels): void {
    this.models = models;
  }

  /** Wire bytes to 16 kHz samples; undecodable input throws. */
  decode(bytes: Uint8Array): Float32Array {
    return this.input.push(bytes);
  }

  /** End of input: what the decoder and resampler still held. */
  endInput(): Float32Array {
    return this.input.end();
  }

  async feed(samples: Float32Array): Promise<void> {
    const vad = this.models?.vad;
    if (!vad) return;
    this.audio.append(samples);
    this.hooks.heard?.(samples);
    // When the newest sample arrived: the time of any earlier sample follows (the caller streams in real time).
    const arrivedAt = this.clock.now();
    const arrivedEnd = this.audio.end;
    this.timeOf = (sample) => arrivedAt - ((arrivedEnd - sample) * 1000) / SR;
    this.steps(await vad.process(samples));
  }

  /** Completes the last VAD window with zeros (the end of the input). */
  async flushWindow(): Promise<void> {
    const vad = this.models?.vad;
    if (vad && vad.bufferedSamples > 0) this.steps(await vad.process(new Float32Array(WIN - vad.bufferedSamples)));
  }

  /** Forgets the turn; its speculation, if still waiting for a slot, is dropped. */
  private dropTurn(): void {
    this.turn?.spec?.abort.abort();
    this.turn = null;
  }

  /** Forgets the turn and the speech (committed, discarded, or heard no more). */
  reset(): void {
    this.dropTurn();
    this.tracker.reset();
  }

  /** The consumer is over: work waiting is dropped, the VAD stream and the audio forgotten. */
  stop(): void {
    this.dropTurn();
    this.models?.vad.reset();
    this.audio.clear();
  }

  dropSpeculation(turn: T | null): void {
    const spec = turn?.spec;
    if (!turn || !spec) return;
    turn.spec = undefined;
    spec.abort.abort();
  }

  prosodyOf(fromWindow: number, toWindow: number): ProsodyFeatures {
    return this.prosody.features(fromWindow, toWindow);
  }

  /** Speech still going on ends here, at window `w`: what there is becomes the turn, recognised as `kind`. */
  cutAt(w: number, kind: InferenceKind): void {
    if (!this.turn) return;
    this.speculate(this.turn, w, kind);
    this.tracker.pauseAt(w);
  }

  /** The decision between windows: after a recognition, or once a barge-in no longer holds it. */
  maybeEnd(): void {
    this.decideEnd(this.policy.countArriving ? 1 : 0);
  }

  /** Recognition of input [from, to); a full queue is retried for a while (not for interims, which give way). */
  recognize(from: number, to: number, kind: InferenceKind, signal?: AbortSignal): Promise<string> {
    const samples = this.audio.slice(from, to);
    this.jobs++;
    return this.transcribe(samples, kind, signal).finally(() => {
      this.jobs--;
    });
  }

  // ---------------------------------------------------------------------------------------------------------------
  private steps(probs: number[]): void {
    for (const p of probs) {
      if (!this.hooks.alive()) return;
      const w = this.windows++;
      const window = this.audio.slice(w * WIN, (w + 1) * WIN);
      this.prosody.push(window);
      this.step(w, p, rms(window));
    }
  }

  private step(w: number, p: number, level: number): void {
    const tracker = this.tracker;
    const before = tracker.state;
    const signal = tracker.push(w, p, level);
    if (signal?.type === 'start') {
      const opened = this.hooks.speechStarted(signal.onset, w);
      if (!opened) return;
      this.turn = opened;
    }
    const turn = this.turn;
    if (turn && signal?.type === 'pause') {
      turn.stoppedAt = this.timeOf(w * WIN);
      turn.prosody = this.prosody.features(turn.firstWindow, w);
      this.hooks.paused?.(w);
    } else if (turn && signal?.type === 'resume') {
      // The speculation is useless now, and dropped if it has not started.
      this.dropSpeculation(turn);
      turn.stoppedAt = undefined;
    }
    const limit = this.policy.silenceLimitWindows;
    if (limit !== undefined && tracker.state === 'pause' && this.windows - tracker.pauseStart >= limit) this.hooks.silenceLimit?.();
    if (this.hooks.window?.(w, p, signal, before) === false) return;
    const current = this.turn;
    if (!current || tracker.state !== 'pause') return;
    const silenceAt = tracker.pauseStart * WIN;
    if (
      current.spec?.pause !== tracker.pauseStart &&
      silenceAt > current.start &&
      this.windows * WIN >= silenceAt + this.policy.tailSamples &&
      (this.hooks.maySpeculate?.(current) ?? true)
    ) {
      this.speculate(current, tracker.pauseStart, 'speculative');
    }
    this.decideEnd(0);
  }

  private speculate(turn: T, pause: number, kind: InferenceKind): void {
    const end = Math.min(this.audio.end, pause * WIN + this.policy.tailSamples);
    const startedAt = this.clock.now();
    const abort = new AbortController();
    const spec: Speculation = { pause, end, result: this.recognize(turn.start, end, kind, abort.signal), startedAt, abort };
    this.dropSpeculation(turn);
    turn.spec = spec;
    this.speculations++;
    spec.result.then(
      (text) => {
        spec.text = text;
        spec.doneAt = this.clock.now();
        if (this.turn === turn && turn.spec === spec) this.hooks.recognized?.(turn);
      },
      (err: unknown) => {
        if (this.turn === turn && turn.spec === spec) this.hooks.recognitionFailed?.(err);
      },
    );
  }

  private decideEnd(arriving: number): void {
    const turn = this.turn;
    const spec = turn?.spec;
    if (!turn || !spec || this.tracker.state !== 'pause' || this.hooks.mayEnd?.() === false) return;
    const silenceMs = (this.windows - spec.pause + arriving) * WIN_MS;
    const config = this.policy.config;
    if (spec.text === undefined || silenceMs < config.minDelayMs) return;
    const words = this.policy.words(spec.text);
    if (words === null) {
      this.hooks.noWords?.(turn);
      return;
    }
    spec.waitMs ??= decide({ text: words, agentText: this.hooks.agentText?.(), prosody: turn.prosody }, config).waitMs;
    if (silenceMs >= spec.waitMs) this.hooks.ended(turn, words);
  }

  private async transcribe(samples: Float32Array, kind: InferenceKind, signal?: AbortSignal): Promise<string> {
    const recognizer = this.models?.recognizer;
    if (!recognizer || !this.hooks.alive()) return '';
    const deadline = this.clock.now() + RETRY_MS;
    let delay = 20;
    for (;;) {
      try {
        const { text, runMs } = await recognizer.transcribe(samples, kind, signal);
        this.hooks.ran?.(runMs);
        return text;
      } catch (err) {
        if (!(err instanceof QueueFullError) || kind === 'interim' || this.clock.now() > deadline || !this.hooks.alive() || signal?.aborted) throw err;
        await sleep(this.clock, delay);
        delay = Math.min(400, delay * 2);
      }
    }
  }
}
