// One agent reply: the brain's stream that writes it (with tool calls and their continuations, a transfer or the end
// of the call it asks for), its synthesis (TurnSpeaker) and pacing (the session's OutputPacer, which the reply has to
// itself while it lasts), what the listener has heard of it, its metrics, and the one way to stop it (stop():
// however the reply ends, completed, cancelled, interrupted or cut by the end of the call, its audio path is
// released there).
import type { Clock, Synthesizer } from '../ports.js';
import type { CloseReason, SessionOptions, TransferRequest, TurnMetrics } from './session-types.js';
import type { OutputPacer } from './pacer.js';
import { TurnSpeaker } from './speaker.js';
import type { BrainEvent, ToolCall, Vars } from './types.js';

export type BrainSource = (ctx: { variables: Vars; signal: AbortSignal }) => AsyncIterable<BrainEvent>;

/** What writing a reply needs of its session's options. */
export type ReplyHost = Pick<SessionOptions, 'brain' | 'variables' | 'emit' | 'runTool' | 'fillerFor' | 'transfer'>;

/** The timings of the user turn a reply answers (clock ms), completed when its first audio goes out. */
export interface ReplyTimings {
  userStoppedAt: number;
  committedAt: number;
  eouDelayMs: number;
  recognitionMs: number;
  recognitionWait: number;
  firstTextAt?: number;
  turn: number;
}

export interface ReplyVoice {
  synthesizer: Synthesizer;
  voiceId: string;
  speed: number;
  onError(err: unknown): void;
}

export class AgentReply {
  readonly abort = new AbortController();
  /** Null in a text-only session. */
  readonly speaker: TurnSpeaker | null;
  text = '';
  /** Its first audio has been sent. */
  started = false;
  endAfter?: CloseReason;
  /** The host transfers the call once this reply has played. */
  transferTo?: TransferRequest;
  readonly startedAt: number;

  constructor(
    readonly id: number,
    private readonly pacer: OutputPacer | null,
    voice: ReplyVoice,
    private readonly clock: Clock,
    readonly timings: ReplyTimings | null,
    private readonly show: (text: string) => void,
  ) {
    this.startedAt = clock.now();
    this.speaker = pacer ? new TurnSpeaker(voice.synthesizer, pacer, { voiceId: voice.voiceId, speed: voice.speed, onError: voice.onError, clock }) : null;
  }

  /** True while speech is being synthesised or not yet sent. */
  get speaking(): boolean {
    return (this.speaker?.pendingPhrases ?? 0) > 0 || (this.pacer?.pendingSamples ?? 0) > 0;
  }

  /** Text the brain wrote: spoken, or shown (`show`, the whole text so far) in a text-only session. */
  add(text: string): void {
    if (!text) return;
    if (this.timings && this.timings.firstTextAt === undefined) this.timings.firstTextAt = this.clock.now();
    this.text += text;
    if (this.speaker) this.speaker.pushText(text);
    else this.show(this.text.trim());
  }

  /**
   * Runs the brain's stream and up to three tool-call continuations; returns once the brain is done, or as soon as
   * `alive` says the reply is over.
   */
  async write(source: BrainSource, host: ReplyHost, alive: () => boolean): Promise<void> {
    const ctx = { variables: host.variables, signal: this.abort.signal };
    let next: (() => AsyncIterable<BrainEvent>) | null = () => source(ctx);
    for (let round = 0; next && round < 4 && alive(); round++) {
      const stream = next();
      next = null;
      const calls: ToolCall[] = [];
      let failed = false;
      for await (const ev of stream) {
        if (!alive()) return;
        if (ev.type === 'text') this.add(ev.text);
        else if (ev.type === 'tool_call') calls.push(ev.call);
        else if (ev.type === 'end_call') this.endAfter = ev.endReason ?? 'ended';
        else if (ev.type === 'transfer') {
          if (host.transfer) this.transferTo = { number: ev.number, option: ev.option ?? { type: 'cold_transfer' } };
          else {
            this.endAfter = 'transfer_unavailable';
            host.emit({ type: 'error', code: 'transfer_unavailable', message: `Transfer to ${ev.number} is not available on this call type; the call ends` });
          }
        } else if (ev.type === 'variables') host.emit({ type: 'variables', values: ev.values });
        else if (ev.type === 'error') {
          failed = true;
          host.emit({ type: 'error', code: ev.code, message: ev.message });
        }
      }
      if (!alive()) return;
      if (failed && !this.text.trim()) this.add("Sorry, I'm having trouble answering right now. Please try again in a moment.");
      for (const call of calls) {
        const filler = host.fillerFor?.(call);
        if (filler) this.add(`${filler} `);
        const output = host.runTool ? await host.runTool(call).catch(() => null) : null;
        if (!alive()) return;
        if (output === null) {
          host.emit({ type: 'error', code: 'tool_unavailable', message: `Tool "${call.name}" cannot run yet` });
          this.add("Sorry, I can't do that right now.");
          host.brain.addToolResult(call.id, JSON.stringify({ error: 'tool unavailable' }));
        } else {
          host.brain.addToolResult(call.id, output);
          next = () => host.brain.reply(null, ctx);
        }
      }
    }
  }

  /** What the listener has heard so far (all of it in a text-only session). */
  heard(): string {
    return this.pacer ? this.pacer.heardText() : this.text.trim();
  }

  /** Stops the brain and the synthesis, drops the audio not yet sent; returns what the listener heard. */
  stop(): string {
    const heard = this.heard();
    this.abort.abort();
    this.speaker?.cancel();
    this.pacer?.reset();
    return heard;
  }

  /** The turn's metrics at its first audio frame (`now`), when it answers a spoken turn. */
  metricsAt(now: number): TurnMetrics | null {
    const m = this.timings;
    if (!m) return null;
    const t = this.speaker?.timings ?? {};
    const brainFirstTokenMs = m.firstTextAt !== undefined ? m.firstTextAt - m.committedAt : null;
    const brainFirstPhraseMs = t.firstPhraseAt !== undefined ? t.firstPhraseAt - m.committedAt : null;
    const ttsFirstByteMs = t.firstSynthStart !== undefined && t.firstSynthDone !== undefined ? t.firstSynthDone - t.firstSynthStart : null;
    const e2eMs = now - m.userStoppedAt;
    const parts = m.eouDelayMs + (brainFirstPhraseMs ?? 0) + (ttsFirstByteMs ?? 0);
    const r = (x: number | null) => (x === null ? null : Math.round(x * 10) / 10);
    return {
      turn: m.turn,
      eouDelayMs: r(m.eouDelayMs) as number,
      recognitionMs: r(m.recognitionMs) as number,
      brainFirstTokenMs: r(brainFirstTokenMs),
      brainFirstPhraseMs: r(brainFirstPhraseMs),
      ttsFirstByteMs: r(ttsFirstByteMs),
      e2eMs: r(e2eMs),
      engineOverheadMs: r(Math.max(0, e2eMs - parts)),
      userEnd: new Date(Date.now() - (now - m.userStoppedAt)).toISOString(),
      botStart: new Date().toISOString(),
    };
  }
}
