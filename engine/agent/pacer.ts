// Output audio paced in real time with a small lead, so an interruption can stop it at once and discard the rest.
//
// The pacer holds the agent's synthesised audio (output rate) and hands it to `send` in frames, never more than
// `leadMs` ahead of what the listener has played (playback is assumed to start when the first frame is sent and to
// run in real time; pauses stop the clock). It knows which text each stretch of audio speaks, so it can tell what
// the listener actually heard.
import { realClock, type Clock, type ClockTimer } from '../ports.js';

export interface PacedSegment {
  text: string;
  samples: number;
}

export interface PacerOptions {
  sampleRate: number;
  /** Frame length handed to `send`. Default 20 ms. */
  frameMs?: number;
  /** How far ahead of playback audio is sent. Default 80 ms. */
  leadMs?: number;
  send(frame: Float32Array): void;
  /** Called once each time the queue runs empty after `finish()` (everything of the turn has been sent). */
  onDrained?(): void;
  /**
   * Audio sent before this turn's that is still to be played, ms (a continuous output: the call's ambience between
   * turns, call-output.ts): a turn's playback starts that much after its first frame is sent. Absent: nothing is sent
   * between turns, playback starts with the first frame.
   */
  backlogMs?: () => number;
  /** Its time and timers; `now` alone replaces just the time. */
  clock?: Clock;
  now?: () => number;
}

export class OutputPacer {
  private readonly rate: number;
  private readonly frame: number;
  private readonly lead: number;
  private readonly clock: Clock;
  private readonly now: () => number;
  private queue: Float32Array[] = [];
  /** Samples queued and not yet sent; read position inside queue[0]. */
  private pending = 0;
  private offset = 0;
  private sent = 0;
  /** Playback clock: ms of real time played (excluding pauses) up to `clockAt`. */
  private playedMs = 0;
  private clockAt = 0;
  private running = false;
  private paused = false;
  private finished = false;
  private timer: ClockTimer | null = null;
  private segments: { text: string; from: number; to: number }[] = [];
  private total = 0;

  readonly sampleRate: number;

  constructor(private readonly opts: PacerOptions) {
    this.sampleRate = opts.sampleRate;
    this.rate = opts.sampleRate;
    this.frame = Math.max(1, Math.round((opts.sampleRate * (opts.frameMs ?? 20)) / 1000));
    this.lead = Math.round((opts.sampleRate * (opts.leadMs ?? 80)) / 1000);
    this.clock = opts.clock ?? realClock;
    this.now = opts.now ?? (() => this.clock.now());
  }

  /** Samples handed to `send` since the last reset. */
  get sentSamples(): number {
    return this.sent;
  }

  /** Samples waiting to be sent. */
  get pendingSamples(): number {
    return this.pending;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** True while audio of the current turn is queued or the turn is not finished. */
  get active(): boolean {
    return this.total > 0 && (!this.finished || this.pendingSamples > 0);
  }

  /** Samples the listener has heard: real time since playback began (pauses excluded), at most what was sent. */
  heardSamples(): number {
    return Math.max(0, Math.min(this.sent, Math.floor((this.playedNow() * this.rate) / 1000)));
  }

  /** Milliseconds until everything sent so far has been played. */
  msUntilPlayed(): number {
    return Math.max(0, (this.sent * 1000) / this.rate - this.playedNow());
  }

  /** Adds audio speaking `text` (text may be empty for audio that continues the previous segment). */
  push(samples: Float32Array, text = ''): void {
    if (samples.length === 0 && !text) return;
    this.segments.push({ text, from: this.total, to: this.total + samples.length });
    this.total += samples.length;
    if (samples.length) {
      // After an underrun the listener heard silence (or the ambience sent meanwhile): playback resumes from what was
      // sent (after that backlog), not from the clock.
      if (this.running && !this.paused && this.pending === 0) {
        const sentMs = (this.sent * 1000) / this.rate;
        const backlog = this.opts.backlogMs?.();
        if (backlog !== undefined || this.playedNow() > sentMs) {
          this.playedMs = sentMs - (backlog ?? 0);
          this.clockAt = this.now();
        }
      }
      this.queue.push(samples);
      this.pending += samples.length;
    }
    this.start();
  }

  /** No more audio for this turn: `onDrained` fires once the queue is empty. */
  finish(): void {
    this.finished = true;
    this.start();
  }

  pause(): void {
    if (this.paused) return;
    this.advanceClock();
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.clockAt = this.now();
    this.start();
  }

  /** The text heard so far, cut at a word boundary inside the segment being played. */
  heardText(): string {
    const heard = this.heardSamples();
    const parts: string[] = [];
    for (const s of this.segments) {
      if (!s.text) continue;
      if (heard >= s.to) {
        parts.push(s.text);
        continue;
      }
      if (heard > s.from && s.to > s.from) {
        const words = s.text.split(/\s+/).filter(Boolean);
        const n = Math.floor((words.length * (heard - s.from)) / (s.to - s.from));
        if (n > 0) parts.push(words.slice(0, n).join(' '));
      }
      break;
    }
    return parts.join(' ').trim();
  }

  /** Text of every segment pushed (what the turn would say if played out). */
  fullText(): string {
    return this.segments.map((s) => s.text).filter(Boolean).join(' ').trim();
  }

  /** Drops everything not yet sent and forgets the turn; the pacer is ready for the next turn. */
  reset(): void {
    this.stopTimer();
    this.queue = [];
    this.pending = 0;
    this.offset = 0;
    this.sent = 0;
    this.playedMs = 0;
    this.running = false;
    this.paused = false;
    this.finished = false;
    this.segments = [];
    this.total = 0;
  }

  close(): void {
    this.reset();
  }

  // ---------------------------------------------------------------------------------------------------------------
  private playedNow(): number {
    if (!this.running || this.paused) return this.playedMs;
    return this.playedMs + (this.now() - this.clockAt);
  }

  private advanceClock(): void {
    const t = this.now();
    if (this.running && !this.paused) this.playedMs += t - this.clockAt;
    this.clockAt = t;
  }

  private start(): void {
    if (this.paused || this.timer) return;
    if (!this.running && this.pendingSamples > 0) {
      this.running = true;
      this.clockAt = this.now();
      this.playedMs = -(this.opts.backlogMs?.() ?? 0);
    }
    this.tick();
  }

  private stopTimer(): void {
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private tick = (): void => {
    this.timer = null;
    if (this.paused) return;
    const allowed = Math.floor((this.playedNow() * this.rate) / 1000) + this.lead;
    while (this.pendingSamples > 0 && this.sent < allowed) {
      const n = Math.min(this.frame, this.pendingSamples);
      const frame = this.take(n);
      this.sent += frame.length;
      this.opts.send(frame);
      if (this.paused || this.total === 0) return; // send() may have paused or reset us
    }
    if (this.pendingSamples > 0) {
      const aheadMs = ((this.sent - allowed + this.frame) * 1000) / this.rate;
      this.timer = this.clock.setTimeout(this.tick, Math.max(1, Math.min(20, aheadMs)));
      return;
    }
    if (this.finished && this.total > 0) {
      this.finished = false;
      this.opts.onDrained?.();
    }
  };

  private take(n: number): Float32Array {
    const out = new Float32Array(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.queue[0] as Float32Array;
      const k = Math.min(n - filled, chunk.length - this.offset);
      out.set(chunk.subarray(this.offset, this.offset + k), filled);
      filled += k;
      this.offset += k;
      this.pending -= k;
      if (this.offset >= chunk.length) {
        this.queue.shift();
        this.offset = 0;
      }
    }
    return out;
  }
}
