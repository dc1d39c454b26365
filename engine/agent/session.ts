// One conversation: caller audio (or text) in -> the caller's turns (engine/turn/user-turn.ts: VAD, speech tracking,
// speculative recognition, the end-of-turn decision) -> brain -> one reply at a time (reply.ts: synthesis, paced
// audio out), with transport-neutral events. Knows nothing of HTTP, WebSockets or the store; this file coordinates
// the pieces.
//
// Turn-taking (all audio-clocked, 32 ms VAD windows):
// - User speech starts after `minSpeechWindows` windows; at the first silent window recognition starts
//   speculatively on the turn so far. Once it has the words, the end-of-turn decision (engine/turn/end-of-turn.ts:
//   the words, what the agent last asked, the prosody before the pause) sets how much silence to wait: minDelayMs
//   when the turn is confidently complete, up to maxDelayMs when not; speech resuming first discards the
//   speculation. An empty transcript (noise, or only Whisper's annotations) discards the turn. A committed turn is
//   committed once and answered.
// - Barge-in (allowInterruptions; barge-in.ts): speech over the agent holds its audio at once; more speech, or words
//   that are not a backchannel, interrupt it (queued audio dropped, the transcript cut to what was played); else it
//   plays on.
// - Idle (idle.ts): reprompts after the caller's silence, then `idle_timeout`; sessionTimeoutSeconds: `session_timeout`.
// - Audio options: muteUserUntilFirstBotResponse and denoise on the caller's audio (caller-input.ts); backgroundSound,
//   an ambience under the agent's audio and between its turns (call-output.ts).
// - Transfer: once the words before a transfer have played (or the caller has talked over them), the host
//   (opts.transfer) carries it out while caller input is ignored; done, the session ends `transferred`; refused, the
//   agent says why and the conversation goes on.
import { KEYPAD, keypressText } from './keypad.js';
import { QueueFullError } from '../models/queue.js';
import { realClock, sleep, type Clock, type Synthesizer } from '../ports.js';
import { spokenText, type SpeechState } from '../turn/speech-tracker.js';
import { SR, UserTurnRecognizer, WIN, WIN_MS, type HeardTurn } from '../turn/user-turn.js';
import { BargeIn } from './barge-in.js';
import { CallOutput } from './call-output.js';
import { CallerInput, callerTurns } from './caller-input.js';
import type { CloseReason, InterruptionRecord, SessionOptions, TranscriptEntry, TransferOutcome, TransferRequest, TurnMetrics } from './session-types.js';
import { handoffText, voiceClip } from './handoff.js';
import { CallTimers, idleSeconds } from './idle.js';
import { OutputPacer } from './pacer.js';
import { AgentReply, type BrainSource, type ReplyTimings } from './reply.js';
import type { HandoffOption } from './types.js';
import { speakingAs } from '../tts/speech-text.js';

export type { CloseReason, InterruptionRecord, SessionEvent, SessionModels, SessionOptions, TranscriptEntry, TransferOutcome, TransferRequest, TurnMetrics } from './session-types.js';

const PRE_ROLL = Math.round(0.3 * SR);
const MAX_TURN_SAMPLES = 28 * SR;

export class AgentSession {
  readonly transcript: TranscriptEntry[] = [];
  readonly turnMetrics: TurnMetrics[] = [];
  readonly interruptions: InterruptionRecord[] = [];
  endReason: CloseReason | null = null;
  readonly startedAt = new Date();

  private readonly clock: Clock;
  /** The caller's turns (voice sessions only). */
  private readonly turns: UserTurnRecognizer<HeardTurn> | null;
  private readonly pacer: OutputPacer | null;
  private readonly output: CallOutput | null;
  private readonly input: CallerInput;
  private readonly bargeIn: BargeIn | null;
  private readonly timers: CallTimers;
  /** What the agent said last (the question a reply answers). */
  private lastAgentText = '';
  private chain: Promise<void>;
  private reply: AgentReply | null = null;
  /** A drain that arrived while a barge-in held the audio; finished when the agent resumes. */
  private pendingDrain: AgentReply | null = null;
  private replySeq = 0;
  private userTurns = 0;
  private replyChain: Promise<void> = Promise.resolve();
  /** A transfer is under way: caller audio, text and keys are not turns meanwhile. */
  private transferring = false;
  private lastDelta = '';

  constructor(private readonly opts: SessionOptions) {
    const spec = opts.spec;
    const clock = (this.clock = opts.clock ?? realClock);
    this.input = new CallerInput({ mute: spec.muteUserUntilFirstBotResponse, denoise: spec.denoise });
    this.timers = new CallTimers({
      clock,
      idleSeconds: idleSeconds(spec, opts.mode, opts.conversationType),
      maxRetries: spec.idle.maxRetries,
      sessionSeconds: spec.sessionTimeoutSeconds,
      waiting: () => !this.ended && !this.reply && !this.turns?.turn,
      reprompt: (last) => this.reprompt(last),
      timedOut: () => this.end('session_timeout'),
    });
    if (opts.mode !== 'webcall') {
      this.turns = null;
      this.pacer = this.output = this.bargeIn = null;
      this.chain = Promise.resolve();
      return;
    }
    const turns = (this.turns = callerTurns(opts, clock, {
      alive: () => !this.ended,
      heard: (samples) => this.opts.tap?.input(samples),
      speechStarted: (onset) => this.onSpeechStarted(onset),
      paused: (w) => this.opts.emit({ type: 'user_speech_stopped', audioMs: Math.round(w * WIN_MS) }),
      window: (w, _p, _signal, before) => this.onWindow(w, before),
      mayEnd: () => !this.bargeIn?.holding,
      recognized: (turn) => {
        if (this.bargeIn?.judge(spokenText(turn.spec?.text ?? '')) !== false) turns.maybeEnd();
      },
      recognitionFailed: (err) => this.fail(err),
      noWords: () => this.discardNoise(),
      agentText: () => this.lastAgentText,
      ended: (turn, words) => this.commitHeard(turn, words),
    }));
    const pacer = (this.pacer = new OutputPacer({
      sampleRate: opts.outputRate,
      leadMs: opts.leadMs ?? 80,
      clock,
      send: (frame) => this.onFrame(frame),
      onDrained: () => void this.onAgentDrained(this.reply),
      backlogMs: spec.backgroundSound ? () => output.backlogMs : undefined,
    }));
    // The ambience goes out on its own while the agent's audio is neither queued nor held, and not during a transfer
    // (the host plays its hold sound then).
    const idle = () => !pacer.pendingSamples && !pacer.isPaused && !this.transferring;
    const output = (this.output = new CallOutput({ sampleRate: opts.outputRate, clock, sound: spec.backgroundSound, idle, send: (samples) => this.opts.emit({ type: 'audio', samples }) }));
    this.bargeIn = new BargeIn(
      {
        clock,
        triggerSeconds: spec.vad.triggerTimeInSecs,
        confirmMs: opts.confirmInterruptMs ?? 1000,
        falseInterruptionMs: opts.falseInterruptionMs ?? 2000,
        pacer: this.pacer,
        emit: (event) => this.opts.emit(event),
        interruptible: () => this.reply !== null && spec.allowInterruptions && clock.now() - this.reply.startedAt >= spec.interruptionBackoffSeconds * 1000,
        interrupt: (detectedAt, detectedIso) => {
          this.interruptAgent(detectedAt, detectedIso);
          turns.maybeEnd();
        },
        dismiss: (reason) => {
          const started = turns.turn !== null;
          turns.reset();
          if (reason && started) this.opts.emit({ type: 'user_turn_discarded', reason });
        },
        released: () => {
          const drained = this.pendingDrain;
          this.pendingDrain = null;
          if (drained && drained === this.reply) void this.onAgentDrained(drained);
        },
      },
      turns.tracker,
    );
    this.chain = Promise.all([opts.models.turn(), this.input.load()])
      .then(([models]) => turns.use(models))
      .catch((err: unknown) => this.fail(err));
  }

  get ended(): boolean {
    return this.endReason !== null;
  }

  /** True while the agent's current reply has speech being synthesised or not yet sent (read-only, for transports). */
  get speaking(): boolean {
    return this.reply?.speaking ?? false;
  }

  /** Starts the call: the opening line unless the agent waits for the user to speak first. */
  start(): void {
    this.timers.start();
    this.output?.start();
    if (this.opts.spec.waitForUserToSpeakFirst) {
      this.timers.arm();
      return;
    }
    this.input.opening();
    this.respond((ctx) => this.opts.brain.opening(ctx), null, 'opening');
  }

  /** Asks the brain to go on without new user input (after tool results, or for an initial response). */
  continueReply(): void {
    if (this.ended) return;
    this.cancelResponse();
    this.respond((ctx) => this.opts.brain.reply(null, ctx), null, 'continuation');
  }

  /** Stops the agent's current reply (client cancel): audio dropped, transcript cut to what was heard. False when idle. */
  cancelResponse(): boolean {
    if (!this.reply || this.ended) return false;
    this.stopReply(null);
    this.timers.arm();
    return true;
  }

  /** Caller audio in the session's input encoding and rate (webcall mode). */
  pushAudio(bytes: Uint8Array): void {
    const turns = this.turns;
    if (this.ended || this.transferring || !turns) return;
    let samples: Float32Array;
    try {
      samples = turns.decode(bytes);
    } catch (err) {
      this.opts.emit({ type: 'error', code: 'invalid_audio', message: err instanceof Error ? err.message : 'undecodable audio' });
      return;
    }
    if (!samples.length) return;
    if (this.input.muted) {
      // Before the first reply is over (muteUserUntilFirstBotResponse): recorded, not heard.
      this.opts.tap?.input(samples);
      return;
    }
    this.chain = this.chain.then(() => this.feed(turns, samples)).catch((err: unknown) => this.fail(err));
  }

  /** User text (chat mode, or typed input in a voice call): a committed user turn. */
  sendText(text: string): void {
    if (this.ended || this.transferring) return;
    const t = text.trim();
    if (!t) return;
    if (this.reply && this.opts.mode === 'webcall') this.interruptAgent(this.clock.now(), new Date().toISOString());
    this.commitUserText(t, null);
  }

  /** Keys the caller pressed (telephone keypad): a user turn `(pressed 1)`, answered like any other. */
  pressKeys(keys: string): void {
    if (KEYPAD.test(keys)) this.sendText(keypressText(keys));
  }

  /** Ends the call (idempotent): stops audio, recognition and the brain; emits `ended`. */
  end(reason: CloseReason): void {
    if (this.ended) return;
    this.endReason = reason;
    this.timers.close();
    this.bargeIn?.clear();
    const reply = this.reply;
    if (reply) {
      const heard = reply.stop();
      if (reply.started || reply.text) this.recordAgent(heard, heard !== reply.text.trim());
      this.opts.emit({ type: 'agent_turn_ended', turnId: reply.id, status: 'cancelled', text: heard });
    }
    this.reply = null;
    // A speculation still waiting for a slot would be wasted work now.
    this.turns?.stop();
    this.pacer?.close();
    this.output?.close();
    this.input.close();
    this.opts.emit({ type: 'ended', reason });
  }

  /** The agent's voice saying `text` as one clip at `rate` Hz, outside the conversation (a warm transfer's handoff). */
  synthesize(text: string, rate: number): Promise<Float32Array> {
    return voiceClip(this.opts, text, rate);
  }

  /** A transfer handoff's words (handoff.ts). */
  handoffText(handoff: HandoffOption | undefined): Promise<string> {
    return handoffText(this.opts, handoff);
  }

  // ------------------------------------------------------------------------------------------------ the caller's turns
  private async feed(turns: UserTurnRecognizer<HeardTurn>, samples: Float32Array): Promise<void> {
    if (this.ended || this.transferring) return;
    await turns.feed(this.input.clean(samples));
    if (this.ended) return;
    // Keep only the audio a turn may still need.
    const keepFrom = turns.turn ? turns.turn.start : turns.windows * WIN - PRE_ROLL - 8 * WIN;
    if (keepFrom - turns.audio.start > SR) turns.audio.dropBefore(keepFrom);
  }

  private onSpeechStarted(onset: number): HeardTurn | null {
    const turns = this.turns!;
    if (this.reply && !this.opts.spec.allowInterruptions) {
      // Interruptions are off: speech over the agent is not a turn.
      turns.tracker.reset();
      return null;
    }
    this.timers.clearIdle();
    this.opts.emit({ type: 'user_speech_started', audioMs: Math.round(onset * WIN_MS) });
    return { start: Math.max(turns.audio.start, onset * WIN - PRE_ROLL), firstWindow: onset };
  }

  private onWindow(w: number, before: SpeechState): void {
    const turns = this.turns!;
    this.bargeIn?.window(w, before);
    const turn = turns.turn;
    if (turn && turns.tracker.state === 'speech' && (w + 1) * WIN - turn.start >= MAX_TURN_SAMPLES) {
      // A monologue: take what there is as the turn.
      turn.stoppedAt = this.clock.now();
      turns.cutAt(w + 1, 'live');
    }
  }

  private commitHeard(turn: HeardTurn, words: string): void {
    const spec = turn.spec!;
    this.turns!.reset();
    const now = this.clock.now();
    const stoppedAt = turn.stoppedAt ?? now;
    this.commitUserText(words, {
      userStoppedAt: stoppedAt,
      committedAt: now,
      eouDelayMs: now - stoppedAt,
      recognitionMs: (spec.doneAt ?? now) - spec.startedAt,
      recognitionWait: 0,
      turn: 0,
    });
  }

  private discardNoise(): void {
    this.turns!.reset();
    this.opts.emit({ type: 'user_turn_discarded', reason: 'noise' });
    if (!this.reply) this.timers.arm();
  }

  // ------------------------------------------------------------------------------------------------ the agent's replies
  /**
   * Stops the agent's reply (a client's cancel, or with `detected` a barge-in or typed text over it): queued audio
   * dropped, the history (the brain's and the transcript) cut to what was heard.
   */
  private stopReply(detected: { at: number; iso: string } | null): void {
    const reply = this.reply!;
    const heard = reply.stop();
    this.reply = null;
    this.input.replyOver();
    if (detected) {
      // The transport drops what it had queued at an interruption: the output stream goes on from now.
      this.output?.flush();
      const stopMs = this.pacer ? (this.bargeIn?.stopMs ?? 0) : 0;
      this.interruptions.push({ detectedAt: detected.iso, stopMs: Math.round(stopMs * 100) / 100, heard, confirmedAfterMs: Math.round(this.clock.now() - detected.at) });
    }
    this.pendingDrain = null;
    this.opts.brain.truncateLastReply(heard);
    if (detected) this.opts.emit({ type: 'interruption' });
    if (reply.started) this.opts.emit({ type: 'agent_stop_talking', interrupted: true });
    if (heard || detected) this.recordAgent(heard, true);
    this.opts.emit({ type: 'agent_turn_ended', turnId: reply.id, status: detected ? 'interrupted' : 'cancelled', text: heard });
    this.lastDelta = '';
  }

  /** Stops the agent's turn: queued audio dropped, transcript cut to what was heard, `interruption` out. */
  private interruptAgent(detectedAt: number, detectedIso: string): void {
    const reply = this.reply;
    if (!reply) return;
    this.stopReply({ at: detectedAt, iso: detectedIso });
    // A transfer the agent has decided on goes ahead when the caller talks over its announcement ("Transferring you
    // now"): the words are cut, the decision is not. What the caller says meanwhile is not a turn (see transfer()).
    if (reply.transferTo) void this.transfer(reply.transferTo);
  }

  private commitUserText(heard: string, timings: ReplyTimings | null): void {
    const text = this.opts.privacy?.user(heard) ?? heard;
    if (this.transferring) {
      // Said while the transfer was being set up: kept in the history, not answered.
      this.opts.brain.noteUser?.(text);
      return;
    }
    this.timers.heard();
    this.userTurns++;
    this.opts.emit({ type: 'user_transcript_delta', text });
    this.opts.emit({ type: 'user_transcript', text });
    this.transcript.push({ role: 'user', content: text, timestamp: new Date().toISOString() });
    const unheard = this.reply;
    if (unheard) {
      // The agent had not started speaking its previous reply: drop it, answer this.
      unheard.stop();
      this.opts.brain.truncateLastReply('');
      this.opts.emit({ type: 'agent_turn_ended', turnId: unheard.id, status: 'cancelled', text: '' });
      this.reply = null;
    }
    if (timings) timings.turn = this.userTurns;
    this.respond((ctx) => this.opts.brain.reply(text, ctx), timings, 'reply');
  }

  private reprompt(last: boolean): void {
    const text = last ? (this.opts.idleGoodbyeText ?? "I haven't heard from you, so I'll end the call now. Goodbye.") : (this.opts.repromptText ?? 'Are you still there?');
    this.say(text, 'reprompt');
    if (last && this.reply) this.reply.endAfter = 'idle_timeout';
  }

  private say(text: string, kind: 'continuation' | 'reprompt'): void {
    this.respond(async function* () {
      yield { type: 'text' as const, text };
    }, null, kind);
  }

  private voiceOf: Synthesizer | undefined;
  /** The synthesizer saying the agent's words as its dictionaries and speechFormatting have them (compiled once). */
  private get voice(): Synthesizer {
    return (this.voiceOf ??= speakingAs(this.opts.models.synthesizer, this.opts.spec.speechText));
  }

  /** Runs one agent turn from a brain stream (plus tool-call continuations). */
  private respond(source: BrainSource, timings: ReplyTimings | null, kind: 'opening' | 'reply' | 'continuation' | 'reprompt'): void {
    const { spec } = this.opts;
    const onError = (err: unknown) => this.opts.emit({ type: 'error', code: 'synthesis_failed', message: err instanceof Error ? err.message : String(err) });
    const show = (text: string) => this.opts.emit({ type: 'agent_transcript_delta', text });
    const reply = new AgentReply(++this.replySeq, this.pacer, { synthesizer: this.voice, voiceId: spec.voiceId, speed: spec.speed, onError }, this.clock, timings, show);
    this.reply = reply;
    this.opts.emit({ type: 'agent_turn_started', turnId: reply.id, kind });
    this.lastDelta = '';
    this.pacer?.reset();
    this.replyChain = this.replyChain.then(() => this.runReply(reply, source)).catch((err: unknown) => this.fail(err));
  }

  private async runReply(reply: AgentReply, source: BrainSource): Promise<void> {
    const alive = () => this.reply === reply && !this.ended;
    await reply.write(source, this.opts, alive);
    if (!alive()) return;
    if (reply.speaker) {
      await reply.speaker.end();
      if (!alive()) return;
      if (!reply.text.trim()) this.finishReply(reply);
      // Otherwise the pacer's drain finishes the turn.
    } else {
      this.finishReply(reply);
    }
  }

  private onFrame(frame: Float32Array): void {
    const reply = this.reply;
    if (!reply) return;
    if (!reply.started) {
      reply.started = true;
      this.opts.emit({ type: 'agent_start_talking' });
      const metrics = reply.metricsAt(this.clock.now());
      if (metrics) {
        this.turnMetrics.push(metrics);
        this.opts.emit({ type: 'turn_metrics', metrics });
      }
    }
    this.opts.tap?.output(frame);
    this.output!.agent(frame);
    const heard = reply.heard();
    if (heard && heard !== this.lastDelta) {
      this.lastDelta = heard;
      this.opts.emit({ type: 'agent_transcript_delta', text: heard });
    }
  }

  private async onAgentDrained(reply: AgentReply | null): Promise<void> {
    if (!reply?.speaker) return;
    // The last frames were sent ahead of playback: the turn ends when the listener has heard them.
    const wait = this.pacer?.msUntilPlayed() ?? 0;
    if (wait > 0) await sleep(this.clock, wait);
    if (this.reply !== reply || this.ended || this.pacer?.isPaused) {
      if (this.reply === reply && this.pacer?.isPaused) this.pendingDrain = reply;
      return;
    }
    this.finishReply(reply);
  }

  private finishReply(reply: AgentReply): void {
    if (this.reply !== reply) return;
    this.reply = null;
    this.input.replyOver();
    const text = reply.text.trim();
    if (this.pacer && reply.started) {
      if (text && text !== this.lastDelta) this.opts.emit({ type: 'agent_transcript_delta', text });
      this.opts.emit({ type: 'agent_stop_talking', interrupted: false });
    }
    reply.stop();
    if (text) this.recordAgent(text, false);
    this.opts.emit({ type: 'agent_turn_ended', turnId: reply.id, status: 'completed', text });
    if (reply.transferTo) {
      void this.transfer(reply.transferTo);
      return;
    }
    if (reply.endAfter) {
      this.end(reply.endAfter);
      return;
    }
    if (!this.turns?.turn) this.timers.arm();
  }

  /** Hands the transfer to the host: transferred ends the session; refused, the agent says why and the call goes on. */
  private async transfer(req: TransferRequest): Promise<void> {
    this.transferring = true;
    this.timers.clearIdle();
    this.turns?.reset();
    let outcome: TransferOutcome;
    try {
      outcome = await this.opts.transfer!(req);
    } catch (err) {
      this.opts.emit({ type: 'error', code: 'transfer_failed', message: err instanceof Error ? err.message : String(err) });
      outcome = { ok: false, say: "Sorry, I couldn't transfer your call." };
    } finally {
      this.transferring = false;
    }
    if (this.ended) return;
    if (outcome.ok) {
      this.end('transferred');
      return;
    }
    this.opts.emit({ type: 'error', code: 'transfer_refused', message: `Transfer to ${req.number} did not happen: ${outcome.say}` });
    this.say(outcome.say, 'continuation');
  }

  private recordAgent(said: string, interrupted: boolean): void {
    this.lastAgentText = said;
    const text = this.opts.privacy?.agent(said) ?? said;
    this.opts.emit({ type: 'agent_transcript', text, interrupted });
    this.transcript.push({ role: 'agent', content: text, timestamp: new Date().toISOString(), ...(interrupted ? { interrupted: true } : {}) });
  }

  /** Ends the call on an error: an `error` event, then `ended`; `code` (else internal_error / error) names both. */
  fail(err: unknown, code?: string): void {
    if (this.ended) return;
    const message = err instanceof QueueFullError ? 'The server is at capacity' : err instanceof Error ? err.message : String(err);
    this.opts.emit({ type: 'error', code: code ?? 'internal_error', message });
    this.end(code ?? 'error');
  }
}
