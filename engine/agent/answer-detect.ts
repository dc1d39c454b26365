// Who answered an outbound call: a person, a voicemail or answering machine, an IVR or call-screening greeting, or
// nobody, from the callee's audio as it arrives (issue 33). Three kinds of evidence, all on the audio clock (samples
// pushed, never the wall clock, so a replay decides the same way):
// - the greeting's length and continuity (Silero VAD through the turn-taking's speech tracker): a person says a short
//   greeting ("Hello?", "Hi, this is Anna") and waits for an answer; a machine talks on;
// - a beep (engine/audio/tone.ts): a machine's "record after the tone";
// - the words (Whisper through the inference queue, answer-detect-words.ts), recognized at a few moments of the
//   greeting (after `checkpointsMs` of it, and at each pause), never every frame.
// Rules, in order, each time the audio or the words move on (the first verdict is final, `onDecision` once):
// 1. a beep: a voicemail (or what the greeting's words say: a screening service beeps too), then the greeting's end;
// 2. a strong phrase in the words: voicemail or IVR by the phrases' scores;
// 3. no speech for `silenceMs`: silence (the agent speaks first);
// 4. a greeting of at most `maxHumanGreetingMs` followed by `humanSilenceMs` of silence: a person, once the words of
//    that greeting are known and say nothing of a machine (or `wordsWaitMs` later without them); words that are
//    empty make the "greeting" a noise, forgotten;
// 5. a greeting longer than `maxHumanGreetingMs`: a machine, named at `machineDeadlineMs` after the answer by the
//    weak phrases heard by then (a voicemail when there are none; `tieWaitMs` more when they point both ways).
// After a machine verdict `onGreetingEnd` says when to leave the message: at the end of a beep, or after
// `greetingEndSilenceMs` of silence following the greeting.
import { Resampler } from '../audio/resample.js';
import { SampleBuffer } from '../audio/sample-buffer.js';
import { ToneDetector, type Tone, type ToneOptions } from '../audio/tone.js';
import { isAbortError, type InferenceKind } from '../models/queue.js';
import { VAD_SAMPLE_RATE, VAD_WINDOW_SAMPLES } from '../models/silero.js';
import type { SpeechRecognizer, VoiceActivity } from '../ports.js';
import { SpeechTracker, rms, spokenText } from '../turn/speech-tracker.js';
import { decisive, machineKind, machineLike, phraseFor, wordEvidence, type WordEvidence } from './answer-detect-words.js';

export type AnswerVerdict = 'human' | 'voicemail' | 'ivr' | 'silence';

export interface AnswerDecision {
  verdict: AnswerVerdict;
  /** Audio ms since the answer at which the verdict was reached. */
  atMs: number;
  /** Why: 'short greeting then silence', 'words: leave a message', 'beep', 'long greeting', 'nothing heard', ... */
  reason: string;
  /** The greeting's words recognized so far ('' when none). */
  words: string;
}

export interface GreetingEnd {
  /** Audio ms since the answer at which the end was known (just after the beep, or after the silence). */
  atMs: number;
  beep: boolean;
}

export interface AnswerDetectorOptions {
  /** Sample rate of the pushed audio. Default 8000 (telephony). */
  rate?: 8000 | 16000;
  /** Nothing heard for this long: 'silence'. Default 3000 ms. */
  silenceMs?: number;
  /** Silence after a short greeting that makes it a person's. Default 700 ms. */
  humanSilenceMs?: number;
  /** How much longer a person's verdict waits for the words of their greeting. Default 500 ms. */
  wordsWaitMs?: number;
  /** The longest greeting (first speech to the pause, shorter pauses included) a person says. Default 2600 ms. */
  maxHumanGreetingMs?: number;
  /** A greeting too long for a person and without telling words is named by this much audio. Default 4000 ms. */
  machineDeadlineMs?: number;
  /** After a machine verdict, silence this long after the greeting ends it (no beep came). Default 1500 ms. */
  greetingEndSilenceMs?: number;
  /** A long greeting whose weak phrases point to voicemail and IVR alike waits this much longer for words. Default 2000 ms. */
  tieWaitMs?: number;
  /** After a beep, how long the verdict waits for the words before it (a screening service beeps too). Default 800 ms. */
  beepWordsWaitMs?: number;
  /** Recognize the greeting once it is this long, ms (and at each pause). Default [1200, 2400, 3500, 4700, 6000]. */
  checkpointsMs?: number[];
  /** Silence after speech before the pause's recognition starts (its last word's tail). Default 96 ms. */
  pauseRecognizeMs?: number;
  /** Speech in which no words were recognized still counts as a person's greeting from this long. Default 300 ms. */
  minUnrecognizedSpeechMs?: number;
  /** The inference kind of the recognitions (engine/models/queue.ts). Default 'live': someone waits on the verdict. */
  kind?: InferenceKind;
  /** Speech tracking on the VAD's probabilities (engine/turn/speech-tracker.ts). */
  speechThreshold?: number;
  /**
   * A tone shorter than `vadFreeBeepMs` is a beep only if the VAD's mean speech probability over it stays under
   * `beepMaxVoice` (a high voice's steady vowel can look like a short tone). Default 250 ms and 0.5.
   */
  vadFreeBeepMs?: number;
  beepMaxVoice?: number;
  /** The beep detector's options (engine/audio/tone.ts). */
  tone?: Omit<ToneOptions, 'rate'>;
  /** Diagnostics: each step of the evidence as it happens (speech, pauses, beeps, recognitions), with its audio ms. */
  trace?: (atMs: number, event: string) => void;
}

const WIN = VAD_WINDOW_SAMPLES;
const WIN_MS = (WIN * 1000) / VAD_SAMPLE_RATE;
/** Audio before the speech onset given to recognition (Silero confirms speech a little late). */
const PREROLL_MS = 300;
/** Whisper's input limit is 30 s. */
const MAX_RECOGNIZE_MS = 28_000;

const DEFAULTS = {
  silenceMs: 3000,
  humanSilenceMs: 700,
  wordsWaitMs: 500,
  maxHumanGreetingMs: 2600,
  machineDeadlineMs: 4000,
  greetingEndSilenceMs: 1500,
  beepWordsWaitMs: 800,
  tieWaitMs: 2000,
  vadFreeBeepMs: 250,
  beepMaxVoice: 0.5,
  pauseRecognizeMs: 96,
  minUnrecognizedSpeechMs: 300,
};

/** Recognized words and how much of the greeting they cover. */
interface Heard {
  evidence: WordEvidence;
  raw: string;
  /** Audio ms up to which the recognition ran. */
  endMs: number;
}

export class AnswerDetector {
  /** The first verdict, once. */
  onDecision?: (d: AnswerDecision) => void;
  /** After a machine verdict: the greeting ended (its beep, or a long silence after it): the moment to leave a message. */
  onGreetingEnd?: (g: GreetingEnd) => void;
  /** The verdict, once reached. */
  decision: AnswerDecision | null = null;
  greetingEnd: GreetingEnd | null = null;

  private readonly rate: number;
  private readonly trace: AnswerDetectorOptions['trace'];
  private readonly o: typeof DEFAULTS & { checkpointsMs: number[]; kind: InferenceKind };
  private readonly tone: ToneDetector;
  private readonly resampler: Resampler | null;
  private readonly tracker: SpeechTracker;
  private readonly audio = new SampleBuffer();
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Input samples handled (tone detector and resampler). */
  private samples = 0;
  /** VAD windows handled. */
  private windows = 0;
  /** Greeting: first speech onset, ms (null before any speech). */
  private onsetMs: number | null = null;
  /** Start of the current pause, ms (null while speaking or before speech). */
  private pauseMs: number | null = null;
  /** End of the speech so far: the current pause's start, or now while speaking. */
  private lastSpeechMs = 0;
  private nextCheckpoint = 0;
  private pauseRecognized = false;
  private heard: Heard | null = null;
  /** A recognition in flight, and whether a newer one is wanted when it is done. */
  private inFlight: AbortController | null = null;
  private wanted: InferenceKind | null = null;
  private inFlightDone: Promise<void> = Promise.resolve();
  /** A beep heard before the verdict, waiting for the words before it. */
  private beep: Tone | null = null;
  /** Speech probability of every VAD window, and tones found but not yet checked against them. */
  private readonly probs: number[] = [];
  private readonly tones: Tone[] = [];
  /** VAD windows of the greeting in speech. */
  private speechWindows = 0;
  /** Recognitions that failed (not dropped): the verdicts were reached without their words. */
  recognitionErrors = 0;

  constructor(
    private readonly models: { vad: VoiceActivity; recognizer: SpeechRecognizer },
    opts: AnswerDetectorOptions = {},
  ) {
    this.rate = opts.rate ?? 8000;
    this.trace = opts.trace;
    const defined = Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined));
    this.o = { ...DEFAULTS, checkpointsMs: [1200, 2400, 3500, 4700, 6000], kind: 'live', ...defined } as typeof this.o;
    this.tone = new ToneDetector({ rate: this.rate, ...opts.tone });
    this.resampler = this.rate === VAD_SAMPLE_RATE ? null : new Resampler(this.rate, VAD_SAMPLE_RATE, { quality: 'fast' });
    const start = opts.speechThreshold ?? 0.5;
    this.tracker = new SpeechTracker({ startThreshold: start, endThreshold: Math.max(0.05, start - 0.15), minSpeechWindows: 3, minVolume: 0 });
  }

  /** Audio handled so far, ms since the answer. */
  get heardMs(): number {
    return (this.samples * 1000) / this.rate;
  }

  /** The greeting's words recognized so far. */
  get words(): string {
    return this.heard ? spokenText(this.heard.raw) : '';
  }

  /** Nothing more to do: stopped, or the verdict (and for a machine the greeting's end) reached. */
  get done(): boolean {
    return this.stopped || (this.decision !== null && (this.decision.verdict === 'human' || this.decision.verdict === 'silence' || this.greetingEnd !== null));
  }

  /** Caller audio in order (mono float at the rate given, any frame size, as it arrives). */
  push(frame: Float32Array): Promise<void> {
    const copy = frame.slice();
    const run = this.chain.then(() => this.handle(copy));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Resolves when the audio pushed so far is handled and no recognition is running (tests, offline replays). */
  async idle(): Promise<void> {
    for (;;) {
      await this.chain;
      const flight = this.inFlightDone;
      await flight;
      if (flight === this.inFlightDone && !this.inFlight) return;
    }
  }

  /** Stops: no more callbacks; recognitions still waiting for a slot are dropped. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.inFlight?.abort();
    this.wanted = null;
    this.models.vad.reset();
    this.audio.clear();
  }

  private async handle(frame: Float32Array): Promise<void> {
    if (this.done) return;
    this.tones.push(...this.tone.push(frame));
    this.samples += frame.length;
    const x = this.resampler ? this.resampler.push(frame) : frame;
    if (x.length) {
      this.audio.append(x);
      const probs = await this.models.vad.process(x);
      for (const p of probs) {
        if (this.done) return;
        this.window(p);
      }
    }
    if (!this.done) this.evaluate();
  }

  /** One 32 ms VAD window. */
  private window(p: number): void {
    const w = this.windows++;
    this.probs.push(p);
    // Tones that ended before this window's end: a beep unless the VAD heard a voice through a short one.
    while (this.tones.length && (this.tones[0] as Tone).endMs <= (w + 1) * WIN_MS) this.toneEnded(this.tones.shift() as Tone);
    const startSample = w * WIN;
    const endMs = (w + 1) * WIN_MS;
    const signal = this.tracker.push(w, p, rms(this.audio.slice(startSample, startSample + WIN)));
    if (signal?.type === 'start') {
      this.onsetMs ??= signal.onset * WIN_MS;
      this.pauseMs = null;
    } else if (signal?.type === 'pause') {
      this.pauseMs = w * WIN_MS;
      this.pauseRecognized = false;
    } else if (signal?.type === 'resume') {
      this.pauseMs = null;
    }
    if (signal) this.trace?.(endMs, `speech ${signal.type}`);
    const speaking = this.tracker.state === 'speech';
    if (speaking) {
      this.lastSpeechMs = endMs;
      this.speechWindows++;
    }
    if (this.onsetMs === null) {
      // Keep only what a greeting starting now would need.
      this.audio.dropBefore(this.audio.end - (PREROLL_MS + 200) * 16);
      return;
    }
    if (this.decision) {
      // Nothing more to recognize: only the level of the window being heard is needed.
      this.audio.dropBefore(startSample + WIN);
      return;
    }
    this.audio.dropBefore(this.audio.end - MAX_RECOGNIZE_MS * 16);
    const span = this.lastSpeechMs - this.onsetMs;
    if (speaking && this.nextCheckpoint < this.o.checkpointsMs.length && span >= (this.o.checkpointsMs[this.nextCheckpoint] as number)) {
      this.nextCheckpoint++;
      this.recognize('speculative');
    }
    if (this.pauseMs !== null && !this.pauseRecognized && endMs - this.pauseMs >= this.o.pauseRecognizeMs) {
      this.pauseRecognized = true;
      this.recognize(this.o.kind);
    }
    this.evaluate(endMs);
  }

  private toneEnded(t: Tone): void {
    const first = Math.ceil(t.startMs / WIN_MS);
    const last = Math.max(first + 1, Math.floor(t.endMs / WIN_MS));
    const inside = this.probs.slice(first, last);
    const voice = inside.reduce((a, v) => a + v, 0) / Math.max(1, inside.length);
    if (t.endMs - t.startMs < this.o.vadFreeBeepMs && voice >= this.o.beepMaxVoice) {
      this.trace?.(t.endMs, `tone ${t.hz} Hz ${t.startMs}-${t.endMs} ms heard as voice (${voice.toFixed(2)}): no beep`);
      return;
    }
    this.trace?.(t.endMs, `beep ${t.hz} Hz ${t.startMs}-${t.endMs} ms, ratio ${t.ratio.toFixed(2)}, voice ${voice.toFixed(2)}`);
    if (this.decision) {
      if (this.decision.verdict === 'voicemail' || this.decision.verdict === 'ivr') this.endGreeting(true);
      return;
    }
    this.beep = t;
    // The words before the beep may name a screening service: recognize them if they are not known yet.
    if (this.onsetMs !== null && (!this.heard || this.heard.endMs < this.lastSpeechMs)) this.recognize(this.o.kind);
  }

  /** The rules, at audio time `now` (ms). */
  private evaluate(now = this.heardMs): void {
    if (this.stopped) return;
    if (this.decision) {
      this.watchGreetingEnd(now);
      return;
    }
    const ev = this.heard?.evidence;
    // 1. A beep: the words before it, if they are known or do not come soon, then voicemail.
    if (this.beep) {
      const wordsKnown = this.onsetMs === null || (this.heard !== null && this.heard.endMs >= this.lastSpeechMs);
      if (ev?.strong && wordsKnown) return this.decide(machineKind(ev), `beep, words: ${phraseFor(ev, machineKind(ev))}`, true);
      if (wordsKnown || now - this.beep.endMs >= this.o.beepWordsWaitMs || (!this.inFlight && !this.wanted)) return this.decide('voicemail', 'beep', true);
      return;
    }
    // 2. Telling words.
    if (ev?.strong) return this.decide(machineKind(ev), `words: ${phraseFor(ev, machineKind(ev))}`);
    // 3. Nothing heard.
    if (this.onsetMs === null) {
      if (now >= this.o.silenceMs && !this.tone.active && this.tracker.state !== 'candidate') this.decide('silence', 'nothing heard');
      return;
    }
    const span = this.lastSpeechMs - this.onsetMs;
    const silent = this.pauseMs !== null && !this.tone.active ? now - this.pauseMs : 0;
    // 4. A short greeting, then silence.
    if (span <= this.o.maxHumanGreetingMs && silent >= this.o.humanSilenceMs) {
      const covered = this.heard !== null && this.heard.endMs >= (this.pauseMs as number);
      if (covered && !ev?.spoken) {
        // No words: a noise, not a greeting (forgotten), unless there was enough speech to be someone's mumble.
        if (this.speechWindows * WIN_MS >= this.o.minUnrecognizedSpeechMs) return this.decide('human', 'short greeting then silence (no words recognized)');
        this.forgetGreeting();
        return this.evaluate(now);
      }
      if (covered && ev && machineLike(ev)) {
        if (silent >= this.o.greetingEndSilenceMs) this.decide(machineKind(ev), `short greeting, words: ${phraseFor(ev, machineKind(ev))}`);
        return;
      }
      if (covered) return this.decide('human', 'short greeting then silence');
      if (silent >= this.o.humanSilenceMs + this.o.wordsWaitMs) return this.decide('human', 'short greeting then silence (words not ready)');
      return;
    }
    // 5. A greeting too long for a person: a machine; which one, the words heard by the deadline say (weak phrases
    // that point both ways wait a little longer for more words).
    if (span > this.o.maxHumanGreetingMs && now >= this.o.machineDeadlineMs) {
      if (!ev || !machineLike(ev)) return this.decide('voicemail', 'long greeting');
      if (decisive(ev) || now >= this.o.machineDeadlineMs + this.o.tieWaitMs) return this.decide(machineKind(ev), `long greeting, words: ${phraseFor(ev, machineKind(ev))}`);
    }
  }

  private decide(verdict: AnswerVerdict, reason: string, beep = false): void {
    const atMs = Math.round(this.heardMs);
    this.decision = { verdict, atMs, reason, words: this.words };
    this.inFlight?.abort();
    this.wanted = null;
    this.onDecision?.(this.decision);
    if (this.stopped) return;
    if (beep) this.endGreeting(true);
    else this.watchGreetingEnd(this.heardMs);
  }

  private watchGreetingEnd(now: number): void {
    const v = this.decision?.verdict;
    if (this.greetingEnd || (v !== 'voicemail' && v !== 'ivr')) return;
    if (this.tracker.state !== 'speech' && !this.tone.active && now - this.lastSpeechMs >= this.o.greetingEndSilenceMs) this.endGreeting(false);
  }

  private endGreeting(beep: boolean): void {
    if (this.greetingEnd || this.stopped) return;
    this.greetingEnd = { atMs: Math.round(this.heardMs), beep };
    this.onGreetingEnd?.(this.greetingEnd);
  }

  /** A "greeting" whose words were empty: back to nothing heard. */
  private forgetGreeting(): void {
    this.trace?.(this.heardMs, 'no words: the greeting was a noise, forgotten');
    this.onsetMs = null;
    this.pauseMs = null;
    this.heard = null;
    this.nextCheckpoint = 0;
    this.speechWindows = 0;
    this.tracker.reset();
  }

  /** Recognizes the greeting so far (one job at a time; a request while one runs is done after it, on newer audio). */
  private recognize(kind: InferenceKind): void {
    if (this.decision || this.stopped || this.onsetMs === null) return;
    if (this.inFlight) {
      if (this.wanted !== 'live') this.wanted = kind;
      return;
    }
    const endSample = this.audio.end;
    const from = Math.max((this.onsetMs - PREROLL_MS) * 16, endSample - MAX_RECOGNIZE_MS * 16);
    const clip = this.audio.slice(from, endSample);
    const endMs = endSample / 16;
    const onset = this.onsetMs;
    const abort = new AbortController();
    this.inFlight = abort;
    this.inFlightDone = this.models.recognizer.transcribe(clip, kind, abort.signal).then(
      (t) => {
        if (abort.signal.aborted || this.stopped || this.onsetMs !== onset) return;
        this.heard = { raw: t.text, evidence: wordEvidence(t.text), endMs };
        this.trace?.(this.heardMs, `words (${kind}, audio to ${Math.round(endMs)} ms): ${JSON.stringify(t.text)}`);
      },
      (err: unknown) => {
        // A dropped job, a full queue, a failed run: the rules go on without these words (a person's verdict waits
        // wordsWaitMs for them, a beep's beepWordsWaitMs); the next checkpoint or pause tries again.
        if (!isAbortError(err)) this.recognitionErrors++;
        this.trace?.(this.heardMs, `recognition failed: ${String(err)}`);
      },
    ).finally(() => {
      if (this.inFlight === abort) this.inFlight = null;
      if (this.stopped || this.decision) return;
      const next = this.wanted;
      this.wanted = null;
      if (next) this.recognize(next);
      this.evaluate();
    });
  }
}
