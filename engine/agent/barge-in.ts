// Barge-in: the caller talking over the agent. Speech over it lasting `holdWindows` (vad.triggerTimeInSecs, on the
// first evidence of speech, before the turn is confirmed) holds the agent's audio at once (`agent_audio_paused`: a
// phone leg stops sending what it queued). The hold becomes an interruption when the speech goes on past
// `confirmWindows` or recognition finds words that are not a backchannel. A backchannel, no words, a sound that fades
// before it is speech, or no words within `falseInterruptionMs` resume the agent (`agent_audio_resumed`).
import type { Clock, ClockTimer } from '../ports.js';
import { isBackchannel, type SpeechState, type SpeechTracker } from '../turn/speech-tracker.js';
import { WIN_MS } from '../turn/user-turn.js';
import type { OutputPacer } from './pacer.js';
import type { SessionEvent } from './session-types.js';

export interface BargeInOptions {
  clock: Clock;
  /** Speech over the agent this long holds its audio (vad.triggerTimeInSecs), s. */
  triggerSeconds: number;
  /** Speech over the agent this long interrupts it without waiting for words, ms. */
  confirmMs: number;
  falseInterruptionMs: number;
  /** The agent's audio (none in a text-only session). */
  pacer: OutputPacer | null;
  emit(event: SessionEvent): void;
  /** The agent is speaking and may be interrupted now. */
  interruptible(): boolean;
  /** The hold became an interruption, detected at `detectedAt` (clock ms; `detectedIso` on the wall clock). */
  interrupt(detectedAt: number, detectedIso: string): void;
  /** The hold was false: the caller's turn is forgotten, `reason` said when one had started (null: it never became speech). */
  dismiss(reason: 'noise' | 'backchannel' | null): void;
  /** The held audio plays on. */
  released(): void;
}

export class BargeIn {
  /** How long holding the audio took at the last hold, ms. */
  stopMs = 0;
  private held: { detectedAt: number; detectedIso: string; timer: ClockTimer } | null = null;
  private readonly holdWindows: number;
  private readonly confirmWindows: number;

  constructor(
    private readonly o: BargeInOptions,
    private readonly tracker: SpeechTracker,
  ) {
    // At least two VAD windows (64 ms): one loud window is not speech.
    this.holdWindows = Math.max(2, Math.round((o.triggerSeconds * 1000) / WIN_MS));
    this.confirmWindows = Math.max(this.holdWindows + 1, Math.round(o.confirmMs / WIN_MS));
  }

  get holding(): boolean {
    return this.held !== null;
  }

  /** After each VAD window (`before`: the tracker's state before it): holds, confirms, or lets go of a candidate that faded. */
  window(w: number, before: SpeechState): void {
    const state = this.tracker.state;
    const spoken = w - this.tracker.onset + 1;
    if (state === 'candidate') {
      if (spoken >= this.holdWindows) this.maybeHold();
    } else if (state === 'quiet') {
      if (before === 'candidate') this.resume(null);
    } else if (state === 'speech') {
      if (spoken >= this.holdWindows) this.maybeHold();
      if (spoken >= this.confirmWindows) this.confirm();
    }
  }

  /** Judges the words heard over the agent: none or a backchannel let it play on. False when they did. */
  judge(words: string): boolean {
    if (!this.held) return true;
    if (!words.trim() || isBackchannel(words)) {
      this.resume(words.trim() ? 'backchannel' : 'noise');
      return false;
    }
    this.confirm();
    return true;
  }

  clear(): void {
    if (this.held) this.o.clock.clearTimeout(this.held.timer);
    this.held = null;
  }

  private maybeHold(): void {
    if (this.held || !this.o.interruptible()) return;
    const clock = this.o.clock;
    const detectedAt = clock.now();
    this.o.pacer?.pause();
    this.o.emit({ type: 'agent_audio_paused' });
    this.stopMs = clock.now() - detectedAt;
    this.held = {
      detectedAt,
      detectedIso: new Date().toISOString(),
      timer: clock.setTimeout(() => {
        if (this.tracker.state !== 'speech') this.resume('noise');
      }, this.o.falseInterruptionMs),
    };
  }

  private confirm(): void {
    const held = this.held;
    if (!held) return;
    this.clear();
    this.o.interrupt(held.detectedAt, held.detectedIso);
  }

  /** The agent plays on: what held it was a backchannel, noise, or (null) a sound that never became speech. */
  private resume(reason: 'noise' | 'backchannel' | null): void {
    if (!this.held) return;
    this.clear();
    this.o.dismiss(reason);
    this.o.pacer?.resume();
    this.o.emit({ type: 'agent_audio_resumed' });
    this.o.released();
  }
}
