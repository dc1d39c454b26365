// What the caller hears: the agent's paced frames (pacer.ts) and, when the agent has a background sound, the ambience
// (engine/audio/ambience.ts) under them and on its own between them, for the whole call.
//
// Without a background sound this is a pass-through: the agent's frames go out as the pacer sends them, nothing in
// between (the transport's silence), exactly as before.
//
// With one, the output is one continuous stream on its own timeline (sample 0 plays when it is sent, then real time):
// - the agent's frames get the ambience added (a copy; the call's recording gets the agent's own frames);
// - whenever the pacer has nothing to send (the agent silent, synthesis late) and is not holding the agent's audio, a
//   timer sends ambience-only frames so that the stream stays FILL_LEAD_MS ahead of what has been played: less than
//   the pacer's lead, so while the agent talks the pacer's frames keep the stream ahead and no ambience frame slips in
//   between them;
// - `backlogMs` says how much of what was sent is still to be played: the pacer starts a turn's playback clock that far
//   in the future (its first frame plays after the ambience already queued), so what the caller heard, the end of a
//   turn and the first message's end stay exact;
// - while a barge-in holds the agent's audio, or a transfer runs (the host plays its hold sound), nothing is sent (a
//   phone leg sends silence then); after an interruption the transport drops what it had queued: `flush()` restarts
//   the timeline at now. (A phone leg keeps the audio it held and plays it on after a false barge-in, while the
//   timeline restarted when the hold ended: the backlog is then under-counted by at most the pacer's lead, once.)
//
// The ambience's loop is rendered on a kind's first use at a rate (ambience.ts; up to ~150 ms at 48 kHz, once per
// process), then shared.
import { Ambience, type BackgroundSound } from '../audio/ambience.js';
import type { Clock, ClockTimer } from '../ports.js';

/** How far ahead of playback ambience-only frames are sent, ms (below any pacer lead: 80 web, 200 phone). */
export const FILL_LEAD_MS = 40;
const FRAME_MS = 20;

export interface CallOutputOptions {
  sampleRate: number;
  clock: Clock;
  sound?: BackgroundSound | '';
  /** True when the ambience may go out on its own: the pacer has nothing queued nor held, no transfer runs. */
  idle(): boolean;
  send(frame: Float32Array): void;
}

export class CallOutput {
  private readonly ambience: Ambience | null;
  private readonly frame: number;
  /** Clock time at which sample 0 of the stream plays (moved when the stream ran dry: it went on from then). */
  private origin = 0;
  private sent = 0;
  private timer: ClockTimer | null = null;
  private closed = false;

  constructor(private readonly o: CallOutputOptions) {
    this.ambience = o.sound ? new Ambience(o.sound, o.sampleRate) : null;
    this.frame = Math.round((o.sampleRate * FRAME_MS) / 1000);
  }

  /** Milliseconds of audio sent and not yet played (0 without a background sound: the pacer's own model holds). */
  get backlogMs(): number {
    if (!this.ambience) return 0;
    return Math.max(0, (this.sent * 1000) / this.o.sampleRate - (this.o.clock.now() - this.origin));
  }

  /** The call is on: the ambience starts. */
  start(): void {
    if (!this.ambience || this.timer || this.closed) return;
    this.origin = this.o.clock.now();
    this.fill();
  }

  /** One frame of the agent's audio. */
  agent(frame: Float32Array): void {
    if (!this.ambience) {
      this.o.send(frame);
      return;
    }
    this.catchUp();
    this.sent += frame.length;
    this.o.send(this.ambience.next(frame.length, frame));
  }

  /** What was sent and not yet played has been dropped (an interruption): the stream goes on from now. */
  flush(): void {
    if (!this.ambience) return;
    this.origin = this.o.clock.now();
    this.sent = 0;
  }

  close(): void {
    this.closed = true;
    if (this.timer) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  /** A stream that ran dry (nothing sent for a while: a hold, a stalled loop) goes on from now, without a burst. */
  private catchUp(): void {
    const playedMs = this.o.clock.now() - this.origin;
    if (playedMs > (this.sent * 1000) / this.o.sampleRate) this.flush();
  }

  private fill = (): void => {
    this.timer = null;
    if (this.closed) return;
    if (this.o.idle()) {
      this.catchUp();
      while (this.backlogMs < FILL_LEAD_MS) {
        this.sent += this.frame;
        this.o.send(this.ambience!.next(this.frame));
      }
    }
    this.timer = this.o.clock.setTimeout(this.fill, FRAME_MS);
  };
}
