// Live (streaming) recognition session, transport neutral: raw wire audio in; VAD-segmented utterances to Whisper;
// interim and final transcripts, and optional speech_started / speech_ended events, out (inference-api.md section 8).
//
// Pipeline, strictly in order on one promise chain: bytes -> the caller's-turn recognizer the agents use too
// (engine/turn/user-turn.ts: decoder and resampler to 16 kHz, Silero VAD per 512-sample window on this thread, speech
// tracking, speculation, the end-of-turn decision) -> utterances -> Whisper through registry.queue (worker threads).
//
// Utterances: opened by a VAD start (padded with a short pre-roll), closed by a VAD end (silence >= eouSilenceMs), a
// client finalize, close, or when they reach maxUtteranceSeconds (cut at the quietest window of their second half).
// Whisper sees an utterance from its pre-roll to `tailMs` after the start of its trailing silence.
// Latency: once the trailing silence has lasted tailMs (less than eouSilenceMs), the final's audio is already fixed,
// so it is transcribed speculatively then; when the VAD end fires the result is usually ready or nearly so. Speech
// resuming discards the speculation.
// Adaptive end of utterance (when the client sets no eou_timeout_ms): once eouEarlyMs of silence has passed and the
// speculative final is ready, the agents' end-of-turn decision (engine/turn/end-of-turn.ts: the words, not Whisper's
// period, and the prosody before the pause; bounded by eouEarlyMs and eouSilenceMs) may end the utterance then,
// without waiting for the rest of eouSilenceMs; an utterance it judges unfinished waits the full silence.
// Interims: every interimIntervalMs of new utterance audio while speech continues, Whisper runs on the utterance so
// far. They are the lowest priority and never pile up: skipped while any transcription of this session is running,
// while the inference queue has any job running or waiting (a free worker stays for finals), and for as long after
// an inference of this session as that inference took (interims use at most about half of one worker).
// Finals are emitted in utterance order, exactly once each; an empty final (noise) is dropped unless it answers a
// finalize or close; a full queue delays a final (retries for up to 10 s) rather than dropping it. Audio outside
// utterances is kept only for ~1 s (pre-roll plus VAD confirmation time); unprocessed input is capped (backlog).
import { WIRE_ENCODINGS } from '../audio/decode.js';
import { AudioFormatError } from '../audio/errors.js';
import { QueueFullError } from '../models/queue.js';
import type { ModelRegistry } from '../models/registry.js';
import { VAD_WINDOW_SECONDS } from '../models/silero.js';
import { loadTurnModels } from '../models/turn-models.js';
import { WHISPER_MAX_SAMPLES } from '../models/whisper/index.js';
import type { TurnConfig } from '../turn/end-of-turn.js';
import type { SpeechSignal } from '../turn/speech-tracker.js';
import { SR, UserTurnRecognizer, WIN, WIN_MS, type HeardTurn } from '../turn/user-turn.js';
import { isLiveEncoding, type LiveEvent, type LiveStats, type LiveTranscriberOptions } from './live-options.js';

export { LIVE_ENCODINGS, isLiveEncoding, type LiveEvent, type LiveStats, type LiveTranscriberOptions } from './live-options.js';

const SPEECH_PAD_MS = 30;
/** speech_started / speech_ended times are padded like offline speech segments (silero.ts VadSegmenter), s. */
const PAD_S = SPEECH_PAD_MS / 1000;

interface Utterance extends HeardTurn {
  id: number;
  /** Reported start, seconds. */
  t0: number;
  /** Any window at or above the start threshold (a continuation after finalize may have none). */
  hasSpeech: boolean;
  /** Sample index when the last interim was started. */
  lastInterim: number;
  lastInterimText: string;
  /** Probabilities of windows firstWindow, firstWindow + 1, ... (for cutting long utterances). */
  probs: number[];
}

interface FinalFlags {
  isLast: boolean;
  fromFinalize: boolean;
}

const round3 = (s: number) => Math.round(s * 1000) / 1000;
/** Event times at the offline segments' precision (µs) before the wire's ms: the same audio gives the same times. */
const round6 = (s: number) => Math.round(s * 1e6) / 1e6;
/** Windows of a duration, counted as for offline segments. */
const windowsOf = (ms: number) => Math.max(1, Math.round(ms / 1000 / VAD_WINDOW_SECONDS));

export class LiveTranscriber {
  private readonly turns: UserTurnRecognizer<Utterance>;
  private readonly startThreshold: number;
  private readonly interimSamples: number;
  private readonly tailSamples: number;
  /** Trailing-silence windows after which a finished-sounding utterance may end early (0: never). */
  private readonly earlyWindows: number;
  private readonly maxUttSamples: number;
  private readonly preRollSamples: number;
  private readonly idleKeepSamples: number;
  private readonly maxBacklogSamples: number;

  private state: 'open' | 'closing' | 'closed' | 'failed' | 'aborted' = 'open';
  private chain: Promise<void>;
  private finals: Promise<void> = Promise.resolve();
  private closeP: Promise<void> | undefined;
  private lastEmitted = false;

  private nextId = 1;
  /** Where the last speech segment ended (padded), s: the next one never starts before it. */
  private lastEnd = 0;
  /** Where the last finalised audio ended (the next utterance never reaches back before it). */
  private lastCut = 0;
  private pendingFinals = 0;
  private backlog = 0;
  private readonly counters = { interims: 0, interimsEmitted: 0, speculationsUsed: 0, earlyEnds: 0, finals: 0 };
  /** performance.now() before which no interim starts (keeps interims to at most half of the wall time). */
  private interimNotBefore = 0;

  constructor(
    private readonly registry: ModelRegistry,
    private readonly opts: LiveTranscriberOptions,
    private readonly emitFn: (event: LiveEvent) => void,
  ) {
    if (!isLiveEncoding(opts.encoding)) {
      throw new AudioFormatError(`unknown encoding "${opts.encoding}"; supported: ${WIRE_ENCODINGS.join(', ')}`, opts.encoding);
    }
    if (!Number.isInteger(opts.sampleRate) || opts.sampleRate < 1000 || opts.sampleRate > 384_000) {
      throw new AudioFormatError(`unsupported sample rate ${opts.sampleRate}`, opts.encoding);
    }
    const eouMs = Math.max(100, Math.min(10_000, opts.eouSilenceMs ?? 300));
    const minSpeechWindows = windowsOf(opts.minSpeechMs ?? 96);
    const silenceWindows = windowsOf(eouMs);
    const eou = silenceWindows * WIN_MS;
    this.startThreshold = opts.startThreshold ?? 0.5;
    const interimMs = opts.interimIntervalMs ?? 700;
    this.interimSamples = Number.isFinite(interimMs) && interimMs > 0 ? Math.round((interimMs * SR) / 1000) : 0;
    // The speculative final must be started before the end of the utterance can fire.
    this.tailSamples = Math.round((Math.max(0, Math.min(opts.tailMs ?? 32, eou)) * SR) / 1000);
    const earlyMs = opts.eouSilenceMs === undefined ? Math.max(0, opts.eouEarlyMs ?? 150) : 0;
    const earlyWindows = Math.ceil((earlyMs * SR) / 1000 / WIN);
    this.earlyWindows = earlyMs > 0 && earlyWindows < silenceWindows ? earlyWindows : 0;
    const maxUtt = Math.min(Math.max(2, opts.maxUtteranceSeconds ?? 28), 29);
    this.maxUttSamples = Math.min(Math.round(maxUtt * SR), WHISPER_MAX_SAMPLES - SR);
    this.preRollSamples = Math.round((Math.max(0, opts.preRollMs ?? 300) * SR) / 1000);
    this.idleKeepSamples = this.preRollSamples + (minSpeechWindows + 2) * WIN + Math.round((SPEECH_PAD_MS * SR) / 1000);
    this.maxBacklogSamples = Math.round((opts.maxBacklogSeconds ?? 60) * SR);
    // Early: the decision may end an utterance between eouEarlyMs and the end-of-utterance silence. Otherwise the
    // silence alone ends it (the limit below comes first).
    const config: TurnConfig =
      this.earlyWindows > 0
        ? { smartTurn: true, smartWaitMs: 0, minDelayMs: this.earlyWindows * WIN_MS, maxDelayMs: eou }
        : { smartTurn: false, smartWaitMs: 0, minDelayMs: eou, maxDelayMs: eou };
    this.turns = new UserTurnRecognizer<Utterance>({
      encoding: opts.encoding,
      sampleRate: opts.sampleRate,
      tracker: { startThreshold: this.startThreshold, endThreshold: Math.min(opts.endThreshold ?? 0.35, this.startThreshold), minSpeechWindows, minVolume: 0 },
      policy: { config, silenceLimitWindows: silenceWindows, tailSamples: this.tailSamples, countArriving: false, words: (text) => text },
      hooks: {
        alive: () => !this.dead(),
        speechStarted: (onset, w) => this.openUtterance(onset, w),
        silenceLimit: () => this.endSpeech(),
        window: (w, p, signal) => this.onWindow(w, p, signal),
        maySpeculate: (utt) => utt.hasSpeech,
        mayEnd: () => this.state === 'open',
        // Chain-ordered, so the decision sees the audio that arrived while Whisper ran.
        recognized: () => {
          if (this.earlyWindows > 0) void this.enqueue(() => this.turns.maybeEnd());
        },
        ended: () => {
          this.counters.earlyEnds++;
          this.endSpeech();
        },
        ran: (ms) => {
          this.interimNotBefore = Math.max(this.interimNotBefore, performance.now() + ms);
        },
      },
    });

    // Models load (or are already loaded) before the first audio is processed.
    this.chain = loadTurnModels(registry).then(
      (models) => this.turns.use(models),
      (err: unknown) => this.fail(err),
    );
  }

  /** Work done so far (for metrics and tests): Whisper runs by kind, and finals emitted. */
  get stats(): Readonly<LiveStats> {
    const c = this.counters;
    return { interims: c.interims, interimsEmitted: c.interimsEmitted, speculations: this.turns.speculations, speculationsUsed: c.speculationsUsed, earlyEnds: c.earlyEnds, finals: c.finals };
  }

  /** Audio received but not yet run through the VAD, seconds. */
  get backlogSeconds(): number {
    return this.backlog / SR;
  }

  /**
   * Audio in the session's encoding: raw codecs and ogg_opus in chunks of any size (partial samples or pages wait
   * for the next chunk); opus as exactly one packet per call. Undecodable input ends the session with an error event.
   */
  push(bytes: Uint8Array): void {
    if (this.state !== 'open') return;
    let samples: Float32Array;
    try {
      samples = this.turns.decode(bytes);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (samples.length === 0) return;
    this.backlog += samples.length;
    if (this.backlog > this.maxBacklogSamples) {
      this.fail(new Error('audio arrives faster than it can be processed'));
      return;
    }
    void this.enqueue(async () => {
      this.backlog -= samples.length;
      await this.turns.feed(samples);
    });
  }

  /** Client finalize: emits one final (fromFinalize) for what is buffered, possibly empty; resolves once it is sent. */
  finalize(): Promise<void> {
    if (this.state !== 'open') return Promise.resolve();
    let sent: Promise<void> = Promise.resolve();
    return this.enqueue(() => {
      sent = this.flushUtterance({ isLast: false, fromFinalize: true });
    }).then(() => sent);
  }

  /** Client close_stream: processes everything, emits the final with isLast (exactly one), then resolves. */
  close(): Promise<void> {
    if (this.closeP) return this.closeP;
    if (this.state !== 'open') return Promise.resolve();
    this.state = 'closing';
    let sent: Promise<void> = Promise.resolve();
    this.closeP = this.enqueue(async () => {
      const rest = this.turns.endInput();
      if (rest.length > 0) await this.turns.feed(rest);
      // Complete the last VAD window with zeros (the audio buffer keeps only real samples).
      await this.turns.flushWindow();
      if (this.dead()) return;
      // Speech still open ends at the last window, or where its trailing silence began.
      const tracker = this.turns.tracker;
      const time = this.turns.windows * VAD_WINDOW_SECONDS;
      if (tracker.state === 'speech') this.speechEnded(time);
      else if (tracker.state === 'pause') this.speechEnded(Math.min(tracker.pauseStart * VAD_WINDOW_SECONDS + PAD_S, time));
      sent = this.flushUtterance({ isLast: true, fromFinalize: false });
      this.turns.turn = null;
    })
      .then(() => sent)
      .then(() => {
        if (this.state === 'closing') this.state = 'closed';
      });
    return this.closeP;
  }

  /** The socket is gone: stop all work and emit nothing more. */
  abort(): void {
    if (this.state === 'aborted') return;
    this.state = 'aborted';
    this.turns.stop();
  }

  // -------------------------------------------------------------------------------------------------------------
  private dead(): boolean {
    return this.state === 'failed' || this.state === 'aborted';
  }

  /** Runs `step` after everything queued before it; never rejects (failures end the session with an error event). */
  private enqueue(step: () => void | Promise<void>): Promise<void> {
    const next = this.chain.then(async () => {
      if (this.dead()) return;
      try {
        await step();
      } catch (err) {
        this.fail(err);
      }
    });
    this.chain = next;
    return next;
  }

  private emit(event: LiveEvent): void {
    if (this.dead() || this.lastEmitted) return;
    if (event.type === 'transcript' && event.isLast) this.lastEmitted = true;
    try {
      this.emitFn(event);
    } catch {
      // A failing transport callback must not break the pipeline.
    }
  }

  private fail(err: unknown): void {
    if (this.dead()) return;
    const message =
      err instanceof AudioFormatError
        ? err.message
        : err instanceof QueueFullError
          ? 'The inference queue is full; retry shortly'
          : `recognition failed: ${err instanceof Error ? err.message : String(err)}`;
    try {
      this.emitFn({ type: 'error', message });
    } catch {
      // ignore
    }
    this.state = 'failed';
    this.turns.stop();
  }

  private vadEvent(type: 'speech_started' | 'speech_ended', seconds: number): void {
    if (this.opts.vadEvents) this.emit({ type, timestamp: round3(round6(seconds)) });
  }

  /** Speech ended at `end` seconds (padded). */
  private speechEnded(end: number): void {
    this.lastEnd = end;
    this.vadEvent('speech_ended', end);
  }

  /** Speech ends in its trailing silence (the end-of-utterance silence, or an early end): speech_ended, the final. */
  private endSpeech(): void {
    const tracker = this.turns.tracker;
    const pause = tracker.pauseStart;
    this.speechEnded(pause * VAD_WINDOW_SECONDS + PAD_S);
    this.endUtterance(pause);
    tracker.reset();
  }

  private onWindow(w: number, p: number, signal: SpeechSignal | null): boolean {
    const now = (w + 1) * WIN;
    const utt = this.turns.turn;
    const audio = this.turns.audio;
    if (!utt) {
      const keepFrom = now - this.idleKeepSamples;
      if (keepFrom - audio.start > SR) audio.dropBefore(keepFrom);
      return true;
    }
    if (signal?.type !== 'start') utt.probs.push(p);
    if (p >= this.startThreshold) utt.hasSpeech = true;

    if (now - utt.start >= this.maxUttSamples) {
      this.cutLong(utt, w);
      return false;
    }
    if (
      this.turns.tracker.state === 'speech' &&
      this.state === 'open' &&
      this.interimSamples > 0 &&
      p >= this.startThreshold &&
      now - utt.lastInterim >= this.interimSamples &&
      this.turns.jobs === 0 &&
      this.pendingFinals === 0 &&
      performance.now() >= this.interimNotBefore
    ) {
      // Interims are the lowest priority: only when no inference job of anyone runs or waits.
      const depth = this.registry.queue.depth;
      if (depth.running === 0 && depth.waiting === 0) this.startInterim(utt, now);
    }
    return true;
  }

  /** Speech confirmed, begun at window `onsetWindow`: speech_started (padded), and its utterance. */
  private openUtterance(onsetWindow: number, w: number): Utterance {
    const time = round6(Math.max(this.lastEnd, onsetWindow * VAD_WINDOW_SECONDS - PAD_S, 0));
    this.vadEvent('speech_started', time);
    const onset = Math.round(time * SR);
    const start = Math.max(onset - this.preRollSamples, this.lastCut, this.turns.audio.start);
    // Speech that began before a finalize cut was already answered: wait for new speech windows.
    const utt = this.newUtterance(start, onset >= start ? time : start / SR, w, onset >= this.lastCut);
    utt.probs.push(NaN); // the window that confirmed speech (index alignment only)
    return utt;
  }

  private newUtterance(start: number, t0: number, firstWindow: number, hasSpeech: boolean): Utterance {
    return { id: this.nextId++, start, t0, hasSpeech, lastInterim: start, lastInterimText: '', firstWindow, probs: [] };
  }

  /** The end of the utterance paused at window `pause`: the final covers it up to tailMs into its trailing silence. */
  private endUtterance(pause: number): void {
    const utt = this.turns.turn;
    this.turns.turn = null;
    if (!utt) return;
    const end = Math.min(pause * WIN + this.tailSamples, this.turns.audio.end);
    this.lastCut = Math.max(this.lastCut, end);
    const usable = utt.hasSpeech && end - utt.start >= WIN;
    const spec = usable && utt.spec && utt.spec.pause === pause && utt.spec.end === end ? utt.spec.result : undefined;
    if (!spec) this.turns.dropSpeculation(utt);
    if (!usable) return;
    if (spec) this.counters.speculationsUsed++;
    const t1 = (pause * WIN) / SR + SPEECH_PAD_MS / 1000;
    this.issueFinal(spec ?? this.transcribeFinal(utt.start, end), utt.t0, t1, { isLast: false, fromFinalize: false });
  }

  /** An utterance reached the length limit: finalise it at the quietest window of its second half, keep going. */
  private cutLong(utt: Utterance, w: number): void {
    const lo = Math.max(utt.firstWindow + 1, Math.ceil((utt.start + this.maxUttSamples / 2) / WIN));
    const hi = w - 1;
    const prob = (k: number) => {
      const v = utt.probs[k - utt.firstWindow];
      return v === undefined || Number.isNaN(v) ? 1 : v;
    };
    let best = hi;
    let bestScore = Infinity;
    for (let k = lo; k <= hi; k++) {
      const score = prob(k - 1) + 2 * prob(k) + prob(k + 1);
      if (score < bestScore) {
        bestScore = score;
        best = k;
      }
    }
    const cut = Math.max(utt.start + WIN, best * WIN + WIN / 2);
    this.turns.dropSpeculation(utt);
    if (utt.hasSpeech) this.issueFinal(this.transcribeFinal(utt.start, cut), utt.t0, cut / SR, { isLast: false, fromFinalize: false });
    this.lastCut = Math.max(this.lastCut, cut);
    const rest = utt.probs.slice(best + 1 - utt.firstWindow);
    const next = this.newUtterance(cut, cut / SR, best + 1, rest.some((p) => p >= this.startThreshold));
    next.probs = rest;
    next.lastInterim = (w + 1) * WIN;
    // Cut during a pause: the decision at that pause reads the new utterance's speech before it.
    const tracker = this.turns.tracker;
    if (tracker.state === 'pause') next.prosody = this.turns.prosodyOf(best + 1, tracker.pauseStart);
    this.turns.turn = next;
  }

  /** finalize / close: one final for everything buffered (empty if there is nothing). */
  private flushUtterance(flags: FinalFlags): Promise<void> {
    const tracker = this.turns.tracker;
    const end = this.turns.audio.end;
    const utt = this.turns.turn;
    if (utt) {
      let sent: Promise<void>;
      if (utt.hasSpeech && end - utt.start >= WIN) {
        // In trailing silence with the speculation done for it: that is the answer (no speech came after).
        const pause = tracker.pauseStart;
        const spec = tracker.state === 'pause' && utt.spec?.pause === pause ? utt.spec : undefined;
        if (spec) this.counters.speculationsUsed++;
        else this.turns.dropSpeculation(utt);
        const t1 = spec ? (pause * WIN) / SR + SPEECH_PAD_MS / 1000 : end / SR;
        sent = this.issueFinal(spec?.result ?? this.transcribeFinal(utt.start, end), utt.t0, t1, flags);
      } else {
        this.turns.dropSpeculation(utt);
        sent = this.issueFinal(Promise.resolve(''), utt.t0, end / SR, flags);
      }
      this.lastCut = Math.max(this.lastCut, end);
      // Speech may go on (the VAD has not ended it): what follows is a new utterance with no speech yet.
      const speaking = tracker.state === 'speech' || tracker.state === 'pause';
      this.turns.turn = speaking ? this.newUtterance(end, end / SR, this.turns.windows, false) : null;
      return sent;
    }
    if (tracker.state === 'candidate') {
      // Speech began but is not confirmed yet (shorter than minSpeechMs so far).
      const candidate = tracker.onset;
      const start = Math.max(candidate * WIN - this.preRollSamples, this.lastCut, this.turns.audio.start);
      const t0 = Math.max(start, candidate * WIN - (SPEECH_PAD_MS * SR) / 1000) / SR;
      this.lastCut = Math.max(this.lastCut, end);
      return this.issueFinal(this.transcribeFinal(start, end), t0, end / SR, flags);
    }
    const t = Math.max(this.lastCut, Math.min(end, this.turns.windows * WIN)) / SR;
    return this.issueFinal(Promise.resolve(''), t, t, flags);
  }

  /** Queues a final for emission in order; resolves once emitted (or dropped). */
  private issueFinal(result: Promise<string>, t0: number, t1: number, flags: FinalFlags): Promise<void> {
    this.pendingFinals++;
    const sent = this.finals.then(async () => {
      let text: string;
      try {
        text = await result;
      } catch (err) {
        this.fail(err);
        return;
      } finally {
        this.pendingFinals--;
      }
      if (!text && !flags.isLast && !flags.fromFinalize) return;
      if (!this.dead() && !this.lastEmitted) this.counters.finals++;
      this.emit({
        type: 'transcript',
        transcript: text,
        isFinal: true,
        isLast: flags.isLast,
        fromFinalize: flags.fromFinalize,
        start: round3(t0),
        end: round3(Math.max(t0, t1)),
      });
    });
    this.finals = sent;
    return sent;
  }

  /** Whisper on [from, to) now, as a final a caller waits for; pre-handled (no unhandled rejection before it is issued). */
  private transcribeFinal(from: number, to: number): Promise<string> {
    const result = this.turns.recognize(from, to, 'live');
    result.catch(() => undefined);
    return result;
  }

  private startInterim(utt: Utterance, now: number): void {
    utt.lastInterim = now;
    this.counters.interims++;
    this.turns.recognize(utt.start, now, 'interim').then(
      (text) => {
        if (!text || this.turns.turn?.id !== utt.id || this.pendingFinals > 0 || this.state !== 'open') return;
        if (text === utt.lastInterimText) return;
        utt.lastInterimText = text;
        this.counters.interimsEmitted++;
        this.emit({ type: 'transcript', transcript: text, isFinal: false, start: round3(utt.t0), end: round3(now / SR) });
      },
      (err: unknown) => {
        if (!(err instanceof QueueFullError)) this.fail(err);
      },
    );
  }
}
