// Live (streaming) recognition session, transport neutral: raw wire audio in; VAD-segmented utterances to Whisper;
// interim and final transcripts, and optional speech_started / speech_ended events, out (inference-api.md section 8).
//
// Pipeline, strictly in order on one promise chain: bytes -> decoder (SampleDecoder, OpusPacketDecoder or
// OggOpusDecoder) -> Resampler (to 16 kHz) -> audio buffer + Silero VAD (one probability per 512-sample window, on
// this thread) -> VadSegmenter (start / end events) -> utterances -> Whisper through registry.queue (worker threads).
//
// Utterances: opened by a VAD start (padded with a short pre-roll), closed by a VAD end (silence >= eouSilenceMs), a
// client finalize, close, or when they reach maxUtteranceSeconds (cut at the quietest window of their second half).
// Whisper sees an utterance from its pre-roll to `tailMs` after the start of its trailing silence.
// Latency: once the trailing silence has lasted tailMs (less than eouSilenceMs), the final's audio is already fixed,
// so it is transcribed speculatively then; when the VAD end fires the result is usually ready or nearly so. Speech
// resuming discards the speculation.
// Adaptive end of utterance (when the client sets no eou_timeout_ms): once eouEarlyMs of silence has passed and the
// speculative final is ready, the agents' end-of-turn decision (engine/turn/end-of-turn.ts: the words, not Whisper's
// period, and the prosody before the pause) may end the utterance then, without waiting for the rest of eouSilenceMs;
// an utterance it judges unfinished waits the full silence.
// Interims: every interimIntervalMs of new utterance audio while speech continues, Whisper runs on the utterance so
// far. They are the lowest priority and never pile up: skipped while any transcription of this session is running,
// while the inference queue has any job running or waiting (a free worker stays for finals), and for as long after
// an inference of this session as that inference took (interims use at most about half of one worker).
// Finals are emitted in utterance order, exactly once each; an empty final (noise) is dropped unless it answers a
// finalize or close; a full queue delays a final (retries for up to 10 s) rather than dropping it. Audio outside
// utterances is kept only for ~1 s (pre-roll plus VAD confirmation time); unprocessed input is capped (backlog).
import { SampleDecoder, isEncoding } from '../audio/codecs.js';
import { WIRE_ENCODINGS, type WireEncoding } from '../audio/decode.js';
import { AudioFormatError } from '../audio/errors.js';
import { OggOpusDecoder, OpusPacketDecoder, OPUS_RATE } from '../audio/opus.js';
import { Resampler } from '../audio/resample.js';
import { QueueFullError, type InferenceKind } from '../models/queue.js';
import type { ModelRegistry } from '../models/registry.js';
import { VAD_SAMPLE_RATE, VAD_WINDOW_SAMPLES, VadSegmenter, type SileroVad, type VadEvent } from '../models/silero.js';
import { WHISPER_MAX_SAMPLES } from '../models/whisper/index.js';
import { decide } from '../turn/end-of-turn.js';
import { ProsodyTracker } from '../turn/prosody.js';

/** Encodings a live session decodes: linear16, linear32, mulaw, alaw, opus (one packet per push), ogg_opus. */
export const LIVE_ENCODINGS: readonly WireEncoding[] = WIRE_ENCODINGS;

export function isLiveEncoding(x: unknown): x is WireEncoding {
  return typeof x === 'string' && (WIRE_ENCODINGS as readonly string[]).includes(x);
}

/** Bytes in, mono samples at `rate` out. */
interface StreamDecoder {
  readonly rate: number;
  push(bytes: Uint8Array): Float32Array;
  /** End of input; may throw for a stream that never became valid. */
  end(): void;
}

/**
 * The streaming decoder of an encoding. Raw codecs run at `sampleRate` and take chunks split anywhere; `opus` takes
 * exactly one Opus packet per push (one WebSocket message); `ogg_opus` takes an Ogg Opus byte stream split anywhere.
 * Opus always decodes at 48 kHz, whatever `sampleRate` says.
 */
function createDecoder(encoding: WireEncoding, sampleRate: number): StreamDecoder {
  if (encoding === 'opus') {
    const d = new OpusPacketDecoder();
    return { rate: OPUS_RATE, push: (b) => d.decode(b), end: () => undefined };
  }
  if (encoding === 'ogg_opus') {
    const d = new OggOpusDecoder();
    let any = false;
    return {
      rate: OPUS_RATE,
      push: (b) => {
        any ||= b.length > 0;
        return d.push(b);
      },
      end: () => {
        if (any) d.end();
      },
    };
  }
  if (!isEncoding(encoding)) throw new AudioFormatError(`unknown encoding "${String(encoding)}"`, String(encoding));
  const d = new SampleDecoder(encoding);
  return { rate: sampleRate, push: (b) => d.push(b), end: () => void d.end() };
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

const SR = VAD_SAMPLE_RATE;
const WIN = VAD_WINDOW_SAMPLES;
const SPEECH_PAD_MS = 30;
/** Final retries when the inference queue is full, before the session fails. */
const FINAL_RETRY_MS = 10_000;

interface Speculation {
  /** Window index where the trailing silence began. */
  silence: number;
  end: number;
  result: Promise<string>;
  /** The result, once it is ready. */
  text?: string;
  /** Drops the job while it still waits for a slot (speech resumed, a newer speculation, the session ended). */
  abort: AbortController;
}

interface Utterance {
  id: number;
  /** Absolute 16 kHz sample index where its audio starts (pre-roll included). */
  start: number;
  /** Reported start, seconds. */
  t0: number;
  /** Any window at or above the start threshold (a continuation after finalize may have none). */
  hasSpeech: boolean;
  /** Sample index when the last interim was started. */
  lastInterim: number;
  lastInterimText: string;
  /** Probabilities of windows probBase, probBase + 1, ... (for cutting long utterances). */
  probBase: number;
  probs: number[];
  spec?: Speculation;
}

interface FinalFlags {
  isLast: boolean;
  fromFinalize: boolean;
}

/** Growable mono 16 kHz buffer addressed by absolute sample index; the oldest samples can be dropped. */
export class SampleBuffer {
  private data = new Float32Array(4 * SR);
  private len = 0;
  /** Absolute index of the oldest kept sample. */
  start = 0;

  get end(): number {
    return this.start + this.len;
  }

  append(x: Float32Array): void {
    if (this.len + x.length > this.data.length) {
      const grown = new Float32Array(Math.max(2 * this.data.length, this.len + x.length));
      grown.set(this.data.subarray(0, this.len));
      this.data = grown;
    }
    this.data.set(x, this.len);
    this.len += x.length;
  }

  /** A copy of [from, to), clamped to what is kept. */
  slice(from: number, to: number): Float32Array {
    const a = Math.max(0, Math.min(this.len, Math.round(from) - this.start));
    const b = Math.max(a, Math.min(this.len, Math.round(to) - this.start));
    return this.data.slice(a, b);
  }

  dropBefore(index: number): void {
    const n = Math.min(this.len, Math.floor(index) - this.start);
    if (n <= 0) return;
    this.data.copyWithin(0, n, this.len);
    this.len -= n;
    this.start += n;
    // Give back the memory of a long utterance once idle.
    if (this.data.length > 8 * SR && this.len < this.data.length / 4) this.data = this.data.slice(0, Math.max(4 * SR, 2 * this.len));
  }

  clear(): void {
    this.data = new Float32Array(0);
    this.start += this.len;
    this.len = 0;
  }
}


const round3 = (s: number) => Math.round(s * 1000) / 1000;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class LiveTranscriber {
  private readonly decoder: StreamDecoder;
  private readonly resampler: Resampler;
  private readonly segmenter: VadSegmenter;
  private readonly audio = new SampleBuffer();
  private readonly prosody = new ProsodyTracker();
  private vad: SileroVad | undefined;
  private recognizer: Awaited<ReturnType<ModelRegistry['recognizer']>> | undefined;

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

  private windows = 0;
  private utt: Utterance | undefined;
  private nextId = 1;
  /** Mirrors of the segmenter's private state: trailing-silence start and unconfirmed speech start (window indexes). */
  private silenceStart = -1;
  private candidate = -1;
  /** Where the last finalised audio ended (the next utterance never reaches back before it). */
  private lastCut = 0;
  private interimRunning = false;
  private finalJobs = 0;
  private pendingFinals = 0;
  private backlog = 0;
  private readonly counters = { interims: 0, interimsEmitted: 0, speculations: 0, speculationsUsed: 0, earlyEnds: 0, finals: 0 };
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
    this.decoder = createDecoder(opts.encoding, opts.sampleRate);
    this.resampler = new Resampler(this.decoder.rate, SR);
    const eouMs = Math.max(100, Math.min(10_000, opts.eouSilenceMs ?? 300));
    this.segmenter = new VadSegmenter({
      startThreshold: opts.startThreshold,
      endThreshold: opts.endThreshold,
      minSpeechMs: opts.minSpeechMs ?? 96,
      minSilenceMs: eouMs,
      speechPadMs: SPEECH_PAD_MS,
    });
    const interimMs = opts.interimIntervalMs ?? 700;
    this.interimSamples = Number.isFinite(interimMs) && interimMs > 0 ? Math.round((interimMs * SR) / 1000) : 0;
    // The speculative final must be started before the VAD end can fire.
    const minSilenceMs = this.segmenter.minSilenceWindows * WIN * (1000 / SR);
    this.tailSamples = Math.round((Math.max(0, Math.min(opts.tailMs ?? 32, minSilenceMs)) * SR) / 1000);
    const earlyMs = opts.eouSilenceMs === undefined ? Math.max(0, opts.eouEarlyMs ?? 150) : 0;
    const earlyWindows = Math.ceil((earlyMs * SR) / 1000 / WIN);
    this.earlyWindows = earlyMs > 0 && earlyWindows < this.segmenter.minSilenceWindows ? earlyWindows : 0;
    const maxUtt = Math.min(Math.max(2, opts.maxUtteranceSeconds ?? 28), 29);
    this.maxUttSamples = Math.min(Math.round(maxUtt * SR), WHISPER_MAX_SAMPLES - SR);
    this.preRollSamples = Math.round((Math.max(0, opts.preRollMs ?? 300) * SR) / 1000);
    this.idleKeepSamples = this.preRollSamples + (this.segmenter.minSpeechWindows + 2) * WIN + Math.round((SPEECH_PAD_MS * SR) / 1000);
    this.maxBacklogSamples = Math.round((opts.maxBacklogSeconds ?? 60) * SR);

    // Models load (or are already loaded) before the first audio is processed.
    this.chain = Promise.all([registry.vad(), registry.recognizer()]).then(
      ([vad, recognizer]) => {
        this.vad = vad.createStream();
        this.recognizer = recognizer;
      },
      (err: unknown) => this.fail(err),
    );
  }

  /** Work done so far (for metrics and tests): Whisper runs by kind, and finals emitted. */
  get stats(): Readonly<LiveTranscriber['counters']> {
    return { ...this.counters };
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
      samples = this.resampler.push(this.decoder.push(bytes));
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
      await this.feed(samples);
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
      this.decoder.end();
      const rest = this.resampler.flush();
      if (rest.length > 0) await this.feed(rest);
      // Complete the last VAD window with zeros (the audio buffer keeps only real samples).
      const vad = this.vad;
      if (vad && vad.bufferedSamples > 0) {
        const probs = await vad.process(new Float32Array(WIN - vad.bufferedSamples));
        for (const p of probs) this.onWindow(p);
      }
      if (this.dead()) return;
      for (const e of this.segmenter.flush()) this.vadEvent(e);
      sent = this.flushUtterance({ isLast: true, fromFinalize: false });
      this.utt = undefined;
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
    this.vad?.reset();
    this.audio.clear();
    this.dropSpeculation(this.utt);
    this.utt = undefined;
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
    this.vad?.reset();
    this.audio.clear();
    this.dropSpeculation(this.utt);
    this.utt = undefined;
  }

  private async feed(samples: Float32Array): Promise<void> {
    const vad = this.vad;
    if (!vad) return;
    this.audio.append(samples);
    const probs = await vad.process(samples);
    for (const p of probs) {
      if (this.dead()) return;
      const from = this.windows * WIN;
      this.prosody.push(this.audio.slice(from, from + WIN));
      this.onWindow(p);
    }
  }

  private vadEvent(e: VadEvent): void {
    if (!this.opts.vadEvents) return;
    if (e.type === 'start') this.emit({ type: 'speech_started', timestamp: round3(e.time) });
    else this.emit({ type: 'speech_ended', timestamp: round3(e.end) });
  }

  private onWindow(p: number): void {
    const w = this.windows++;
    const now = (w + 1) * WIN;
    const seg = this.segmenter;
    const wasSpeaking = seg.inSpeech;
    const events = seg.push(p);
    if (wasSpeaking) {
      if (p >= seg.startThreshold) {
        // Speech resumed: a speculation for the silence that just ended can no longer be the final.
        if (this.silenceStart >= 0) this.dropSpeculation(this.utt);
        this.silenceStart = -1;
      } else if (p < seg.endThreshold && this.silenceStart < 0) this.silenceStart = w;
    } else if (this.candidate < 0) {
      if (p >= seg.startThreshold) this.candidate = w;
    } else if (p < seg.endThreshold) {
      this.candidate = -1;
    }
    for (const e of events) {
      this.vadEvent(e);
      if (e.type === 'start') {
        this.candidate = -1;
        this.silenceStart = -1;
        this.openUtterance(e.time, w);
      } else {
        this.endUtterance(now);
        this.silenceStart = -1;
      }
    }

    const utt = this.utt;
    if (!utt) {
      const keepFrom = now - this.idleKeepSamples;
      if (keepFrom - this.audio.start > SR) this.audio.dropBefore(keepFrom);
      return;
    }
    if (events.length === 0) utt.probs.push(p);
    if (p >= seg.startThreshold) utt.hasSpeech = true;

    if (now - utt.start >= this.maxUttSamples) {
      this.cutLong(utt, w);
      return;
    }
    if (this.silenceStart >= 0) {
      const silenceAt = this.silenceStart * WIN;
      if (utt.hasSpeech && utt.spec?.silence !== this.silenceStart && silenceAt > utt.start && now >= silenceAt + this.tailSamples) {
        const end = silenceAt + this.tailSamples;
        const abort = new AbortController();
        const result = this.transcribeFinal(utt.start, end, 'speculative', abort.signal);
        const spec: Speculation = { silence: this.silenceStart, end, result, abort };
        this.dropSpeculation(utt);
        utt.spec = spec;
        this.counters.speculations++;
        if (this.earlyWindows > 0) {
          result.then(
            (text) => {
              spec.text = text;
              // Chain-ordered, so it sees the audio that arrived while Whisper ran.
              if (this.utt?.spec === spec) void this.enqueue(() => this.endEarly());
            },
            () => undefined,
          );
        }
      }
      if (utt.spec?.text !== undefined) this.endEarly();
    } else if (
      this.state === 'open' &&
      this.interimSamples > 0 &&
      p >= seg.startThreshold &&
      now - utt.lastInterim >= this.interimSamples &&
      !this.interimRunning &&
      this.finalJobs === 0 &&
      this.pendingFinals === 0 &&
      performance.now() >= this.interimNotBefore
    ) {
      // Interims are the lowest priority: only when no inference job of anyone runs or waits.
      const depth = this.registry.queue.depth;
      if (depth.running === 0 && depth.waiting === 0) this.startInterim(utt, now);
    }
  }

  private openUtterance(onsetSeconds: number, window: number): void {
    const onset = Math.round(onsetSeconds * SR);
    const start = Math.max(onset - this.preRollSamples, this.lastCut, this.audio.start);
    // Speech that began before a finalize cut was already answered: wait for new speech windows.
    this.utt = this.newUtterance(start, onset >= start ? onsetSeconds : start / SR, window, onset >= this.lastCut);
    this.utt.probs.push(NaN); // the window that confirmed speech (index alignment only)
  }

  private newUtterance(start: number, t0: number, probBase: number, hasSpeech: boolean): Utterance {
    return { id: this.nextId++, start, t0, hasSpeech, lastInterim: start, lastInterimText: '', probBase, probs: [] };
  }

  /** VAD end: the final covers the utterance up to tailMs into its trailing silence. */
  private endUtterance(now: number): void {
    const utt = this.utt;
    this.utt = undefined;
    if (!utt) return;
    const end = Math.min(this.silenceStart >= 0 ? this.silenceStart * WIN + this.tailSamples : now, this.audio.end);
    this.lastCut = Math.max(this.lastCut, end);
    const usable = utt.hasSpeech && end - utt.start >= WIN;
    const spec = usable && utt.spec && utt.spec.silence === this.silenceStart && utt.spec.end === end ? utt.spec.result : undefined;
    if (!spec) this.dropSpeculation(utt);
    if (!usable) return;
    if (spec) this.counters.speculationsUsed++;
    const t1 = this.silenceStart >= 0 ? this.silenceStart * WIN / SR + SPEECH_PAD_MS / 1000 : end / SR;
    this.issueFinal(spec ?? this.transcribeFinal(utt.start, end), utt.t0, t1, { isLast: false, fromFinalize: false });
  }

  /**
   * Adaptive end of utterance: ends the open utterance now if it has been silent for earlyWindows, and its
   * speculative final (for this same silence) is ready and reads as a finished sentence.
   */
  private endEarly(): void {
    const utt = this.utt;
    const spec = utt?.spec;
    if (!utt || !spec || spec.text === undefined || this.earlyWindows === 0 || this.state !== 'open') return;
    if (this.silenceStart < 0 || spec.silence !== this.silenceStart || this.windows - this.silenceStart < this.earlyWindows) return;
    // The agents' end-of-turn decision (words and prosody, not Whisper's period): early only when it would commit a
    // turn at the shortest wait.
    const windowMs = (WIN * 1000) / SR;
    const early = this.earlyWindows * windowMs;
    const eou = this.segmenter.minSilenceWindows * windowMs;
    const prosody = this.prosody.features(utt.probBase, spec.silence);
    const { waitMs } = decide({ text: spec.text, prosody }, { smartTurn: true, smartWaitMs: 0, minDelayMs: early, maxDelayMs: eou });
    if ((this.windows - this.silenceStart) * windowMs < waitMs) return;
    const e = this.segmenter.endInSilence();
    if (!e) return;
    this.counters.earlyEnds++;
    this.vadEvent(e);
    this.endUtterance(this.windows * WIN);
    this.silenceStart = -1;
  }

  /** An utterance reached the length limit: finalise it at the quietest window of its second half, keep going. */
  private cutLong(utt: Utterance, w: number): void {
    const lo = Math.max(utt.probBase + 1, Math.ceil((utt.start + this.maxUttSamples / 2) / WIN));
    const hi = w - 1;
    const prob = (k: number) => {
      const v = utt.probs[k - utt.probBase];
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
    this.dropSpeculation(utt);
    if (utt.hasSpeech) this.issueFinal(this.transcribeFinal(utt.start, cut), utt.t0, cut / SR, { isLast: false, fromFinalize: false });
    this.lastCut = Math.max(this.lastCut, cut);
    const rest = utt.probs.slice(best + 1 - utt.probBase);
    const next = this.newUtterance(cut, cut / SR, best + 1, rest.some((p) => p >= this.segmenter.startThreshold));
    next.probs = rest;
    next.lastInterim = (w + 1) * WIN;
    this.utt = next;
  }

  /** finalize / close: one final for everything buffered (empty if there is nothing). */
  private flushUtterance(flags: FinalFlags): Promise<void> {
    const end = this.audio.end;
    const utt = this.utt;
    if (utt) {
      let sent: Promise<void>;
      if (utt.hasSpeech && end - utt.start >= WIN) {
        // In trailing silence with the speculation done for it: that is the answer (no speech came after).
        const spec = this.silenceStart >= 0 && utt.spec?.silence === this.silenceStart ? utt.spec : undefined;
        if (spec) this.counters.speculationsUsed++;
        else this.dropSpeculation(utt);
        const t1 = spec ? this.silenceStart * WIN / SR + SPEECH_PAD_MS / 1000 : end / SR;
        sent = this.issueFinal(spec?.result ?? this.transcribeFinal(utt.start, end), utt.t0, t1, flags);
      } else {
        this.dropSpeculation(utt);
        sent = this.issueFinal(Promise.resolve(''), utt.t0, end / SR, flags);
      }
      this.lastCut = Math.max(this.lastCut, end);
      // Speech may go on (the VAD has not ended it): what follows is a new utterance with no speech yet.
      this.utt = this.segmenter.inSpeech ? this.newUtterance(end, end / SR, this.windows, false) : undefined;
      return sent;
    }
    if (this.candidate >= 0) {
      // Speech began but is not confirmed yet (shorter than minSpeechMs so far).
      const start = Math.max(this.candidate * WIN - this.preRollSamples, this.lastCut, this.audio.start);
      const t0 = Math.max(start, this.candidate * WIN - (SPEECH_PAD_MS * SR) / 1000) / SR;
      this.lastCut = Math.max(this.lastCut, end);
      return this.issueFinal(this.transcribeFinal(start, end), t0, end / SR, flags);
    }
    const t = Math.max(this.lastCut, Math.min(end, this.windows * WIN)) / SR;
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

  /**
   * Starts Whisper on [from, to) now; retries while the queue is full. The promise is pre-handled (no unhandled
   * rejection). `speculative` when started in trailing silence before the end of the utterance is known (the
   * result is used only if no speech follows); every other final is `live`, a caller waits for it.
   */
  private transcribeFinal(from: number, to: number, kind: 'live' | 'speculative' = 'live', signal?: AbortSignal): Promise<string> {
    const samples = this.audio.slice(from, to);
    this.finalJobs++;
    const result = this.recognize(samples, true, kind, signal).finally(() => {
      this.finalJobs--;
    });
    result.catch(() => undefined);
    return result;
  }

  private startInterim(utt: Utterance, now: number): void {
    utt.lastInterim = now;
    this.counters.interims++;
    const samples = this.audio.slice(utt.start, now);
    this.interimRunning = true;
    this.recognize(samples, false, 'interim')
      .then(
        (text) => {
          if (!text || this.utt?.id !== utt.id || this.pendingFinals > 0 || this.state !== 'open') return;
          if (text === utt.lastInterimText) return;
          utt.lastInterimText = text;
          this.counters.interimsEmitted++;
          this.emit({ type: 'transcript', transcript: text, isFinal: false, start: round3(utt.t0), end: round3(now / SR) });
        },
        (err: unknown) => {
          if (!(err instanceof QueueFullError)) this.fail(err);
        },
      )
      .finally(() => {
        this.interimRunning = false;
      });
  }

  /** A speculation that will not be used: forgotten, and dropped from the queue if it has not started. */
  private dropSpeculation(utt: Utterance | undefined): void {
    const spec = utt?.spec;
    if (!utt || !spec) return;
    utt.spec = undefined;
    spec.abort.abort();
  }

  private async recognize(samples: Float32Array, retryWhenFull: boolean, kind: InferenceKind, signal?: AbortSignal): Promise<string> {
    const recognizer = this.recognizer;
    if (!recognizer || this.dead()) return '';
    const deadline = Date.now() + FINAL_RETRY_MS;
    let delay = 20;
    for (;;) {
      try {
        const { text } = await this.registry.queue.run(async (slot) => {
          const t = performance.now();
          try {
            return await recognizer.transcribe(samples, this.registry.liveTranscribeOptions(slot, samples.length));
          } finally {
            const done = performance.now();
            this.interimNotBefore = Math.max(this.interimNotBefore, done + (done - t));
          }
        }, kind, { signal });
        return text;
      } catch (err) {
        if (!(err instanceof QueueFullError) || !retryWhenFull || Date.now() > deadline || this.dead() || signal?.aborted) throw err;
        await sleep(delay);
        delay = Math.min(400, delay * 2);
      }
    }
  }
}
