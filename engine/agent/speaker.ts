// The agent's voice for one turn: reply text in, phrases synthesised in order (one of look-ahead), paced audio out.
import { PhraseChunker } from '../tts/chunker.js';
import { OutputStream } from '../tts/output.js';
import { realClock, type Clock, type Synthesizer } from '../ports.js';
import type { OutputPacer } from './pacer.js';

/** Phrases synthesised ahead of the one being delivered. */
const LOOK_AHEAD = 2;

export interface SpeakerOptions {
  voiceId: string;
  speed: number;
  /** Synthesis failed for a phrase (the phrase is skipped, the turn goes on). */
  onError(err: unknown): void;
  clock?: Clock;
}

/** Timings of the first phrase (clock ms), for the turn's metrics. */
export interface SpeakerTimings {
  firstPhraseAt?: number;
  firstSynthStart?: number;
  firstSynthDone?: number;
}

export class TurnSpeaker {
  private readonly chunker = new PhraseChunker({ firstPhraseMin: 16 });
  private readonly out: OutputStream;
  private chain: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private readonly waiting: string[] = [];
  private cancelled = false;
  /** Drops this turn's phrases still waiting for synthesis when the turn is cancelled. */
  private readonly abort = new AbortController();
  readonly timings: SpeakerTimings = {};
  /** Everything of the turn synthesised and handed to the pacer. */
  private endP: Promise<void> | null = null;
  private resolveEnd: (() => void) | null = null;
  private readonly clock: Clock;

  constructor(
    private readonly synthesizer: Synthesizer,
    private readonly pacer: OutputPacer,
    private readonly opts: SpeakerOptions,
  ) {
    this.out = new OutputStream(pacer.sampleRate);
    this.clock = opts.clock ?? realClock;
  }

  pushText(text: string): void {
    if (this.cancelled || this.endP) return;
    for (const phrase of this.chunker.push(text)) this.say(phrase);
  }

  /** No more text: resolves once all audio is in the pacer (the pacer is told the turn is finished). */
  end(): Promise<void> {
    if (!this.endP) {
      this.endP = new Promise((resolve) => {
        this.resolveEnd = resolve;
      });
      for (const phrase of this.chunker.flush()) this.say(phrase);
      this.checkDone();
    }
    return this.endP;
  }

  private checkDone(): void {
    if (!this.resolveEnd || this.inFlight > 0 || this.waiting.length > 0) return;
    const resolve = this.resolveEnd;
    this.resolveEnd = null;
    if (!this.cancelled) {
      const tail = this.out.flush();
      if (tail.length) this.pacer.push(tail);
      this.pacer.finish();
    }
    resolve();
  }

  cancel(): void {
    this.cancelled = true;
    this.waiting.length = 0;
    this.abort.abort();
    this.checkDone();
  }

  get pendingPhrases(): number {
    return this.inFlight + this.waiting.length;
  }

  private say(phrase: string): void {
    if (this.timings.firstPhraseAt === undefined) this.timings.firstPhraseAt = this.clock.now();
    this.waiting.push(phrase);
    this.pump();
  }

  /** Starts synthesis of waiting phrases while fewer than LOOK_AHEAD are synthesised but not yet delivered. */
  private pump(): void {
    while (!this.cancelled && this.inFlight < LOOK_AHEAD && this.waiting.length) {
      const phrase = this.waiting.shift() as string;
      const t = this.timings;
      const first = t.firstSynthStart === undefined;
      const started = this.clock.now();
      if (first) t.firstSynthStart = started;
      this.inFlight++;
      // The first phrase is what the caller waits for: it goes before other synthesis in the queue.
      const audio = this.synthesizer.synthesize(this.opts.voiceId, phrase, this.opts.speed, { first, signal: this.abort.signal }).finally(() => {
        if (first) t.firstSynthDone = this.clock.now();
      });
      audio.catch(() => undefined);
      this.chain = this.chain.then(async () => {
        try {
          const a = await audio;
          if (this.cancelled) return;
          const samples = await this.out.pushYielding(a.samples, a.sampleRate);
          if (this.cancelled) return;
          this.pacer.push(samples, phrase);
        } catch (err) {
          if (!this.cancelled) this.opts.onError(err);
        } finally {
          this.inFlight--;
          this.pump();
          this.checkDone();
        }
      });
    }
  }
}
