// One conversation: caller audio (or text) in -> VAD -> turn detection -> recognition -> brain -> synthesis -> paced
// audio out, with transport-neutral events. Knows nothing of HTTP, WebSockets or the store.
//
// Turn-taking (all audio-clocked, 32 ms VAD windows):
// - User speech starts after `minSpeechWindows` windows; at the first silent window recognition starts
//   speculatively on the turn so far. Once it has the words, the end-of-turn decision (engine/turn/end-of-turn.ts:
//   the words, what the agent last asked, the prosody before the pause) sets how much silence to wait: minDelayMs
//   when the turn is confidently complete, up to maxDelayMs when not; speech resuming first discards the
//   speculation. An empty transcript (noise, or only Whisper's annotations) discards the turn. A committed turn is
//   committed once and answered.
// - Barge-in (allowInterruptions): speech over the agent lasting vad.triggerTimeInSecs (two windows by default, on
//   the first evidence of speech, before the turn is confirmed) holds the agent's audio at once (`agent_audio_paused`:
//   a phone leg stops sending what it queued). It becomes an interruption when the speech goes on past
//   `confirmInterruptMs` or recognition finds words that are not a backchannel: queued audio is dropped, the
//   assistant transcript is cut to what was played and `interruption` goes out. A backchannel, no words, a sound that
//   fades before it is speech, or no words within `falseInterruptionMs` resumes the agent (`agent_audio_resumed`).
// - Idle: after the agent's turn, user silence for the idle timeout gets a reprompt, up to maxRetries, then the call
//   ends with reason `idle_timeout`. sessionTimeoutSeconds ends it with `session_timeout`.
// - Transfer: once the words before a transfer have played (or the caller has talked over them), the host
//   (opts.transfer) carries it out while caller input is ignored; done, the session ends `transferred`; refused, the
//   agent says why and the conversation goes on.
import { KEYPAD, keypressText } from './keypad.js';
import { SampleDecoder, type Encoding } from '../audio/codecs.js';
import { Resampler, qualityFor } from '../audio/resample.js';
import { QueueFullError, type InferenceKind } from '../models/queue.js';
import type { ModelRegistry } from '../models/registry.js';
import { VAD_SAMPLE_RATE, VAD_WINDOW_SAMPLES, type SileroVad } from '../models/silero.js';
import { SampleBuffer } from '../stt/live.js';
import { SpeechTracker, isBackchannel, rms, spokenText } from '../turn/speech-tracker.js';
import { decide, type TurnConfig } from '../turn/end-of-turn.js';
import { ProsodyTracker, type ProsodyFeatures } from '../turn/prosody.js';
import { OutputPacer } from './pacer.js';
import { TurnSpeaker } from './speaker.js';
import type { AgentSpec, Brain, BrainEvent, HandoffOption, ToolCall, TransferOption, Vars } from './types.js';
import { resample } from '../audio/resample.js';

const SR = VAD_SAMPLE_RATE;
const WIN = VAD_WINDOW_SAMPLES;
const WIN_MS = (WIN * 1000) / SR;
const PRE_ROLL = Math.round(0.3 * SR);
const MAX_TURN_SAMPLES = 28 * SR;

export type CloseReason = 'client_requested' | 'websocket_closed' | 'ended' | 'idle_timeout' | 'session_timeout' | 'transfer_unavailable' | 'transferred' | 'error' | string;

/** A transfer the agent asked for, handed to the session's host. */
export interface TransferRequest {
  /** E.164 number to transfer to. */
  number: string;
  option: TransferOption;
}

/** The host's answer: transferred (the session ends `transferred`), or refused with what the agent says instead. */
export type TransferOutcome = { ok: true } | { ok: false; say: string };

export interface TurnMetrics {
  turn: number;
  /** User stopped speaking -> turn committed. */
  eouDelayMs: number;
  /** Speculative recognition run time. */
  recognitionMs: number;
  /** Commit -> first text from the brain. */
  brainFirstTokenMs: number | null;
  /** Commit -> first phrase complete (ready for synthesis). */
  brainFirstPhraseMs: number | null;
  /** First phrase synthesis time. */
  ttsFirstByteMs: number | null;
  /** User stopped speaking -> first agent audio frame sent. */
  e2eMs: number | null;
  /** e2e minus the model and wait parts above: what the engine itself adds. */
  engineOverheadMs: number | null;
  userEnd: string;
  botStart: string | null;
}

export type SessionEvent =
  | { type: 'user_speech_started'; audioMs: number }
  | { type: 'user_speech_stopped'; audioMs: number }
  | { type: 'user_turn_discarded'; reason: 'noise' | 'backchannel' }
  | { type: 'user_transcript_delta'; text: string }
  | { type: 'user_transcript'; text: string }
  /** The agent began a reply (before any text or audio); `kind` says why. */
  | { type: 'agent_turn_started'; turnId: number; kind: 'opening' | 'reply' | 'continuation' | 'reprompt' }
  /** The agent's reply ended: completed, interrupted by the user, or cancelled (cancelResponse, a newer turn). */
  | { type: 'agent_turn_ended'; turnId: number; status: 'completed' | 'interrupted' | 'cancelled'; text: string }
  | { type: 'agent_start_talking' }
  | { type: 'audio'; samples: Float32Array }
  | { type: 'agent_transcript_delta'; text: string }
  | { type: 'agent_transcript'; text: string; interrupted: boolean }
  | { type: 'agent_stop_talking'; interrupted: boolean }
  | { type: 'interruption' }
  /** The caller may be barging in: the agent's audio is held (a phone leg stops sending what it has queued). */
  | { type: 'agent_audio_paused' }
  /** A false barge-in (noise, a backchannel): the held audio plays on. */
  | { type: 'agent_audio_resumed' }
  | { type: 'variables'; values: Vars }
  | { type: 'turn_metrics'; metrics: TurnMetrics }
  | { type: 'error'; code: string; message: string }
  | { type: 'ended'; reason: CloseReason };

export interface TranscriptEntry {
  role: 'user' | 'agent';
  content: string;
  timestamp: string;
  interrupted?: boolean;
}

export interface InterruptionRecord {
  /** Wall-clock ISO time the barge-in was detected, and ms from detection until the agent's audio stopped. */
  detectedAt: string;
  stopMs: number;
  heard: string;
  confirmedAfterMs: number;
}

export interface SessionOptions {
  mode: 'webcall' | 'chat';
  /** `webcall`, `telephonyInbound`, `telephonyOutbound`: picks the idle timeout. */
  conversationType: string;
  spec: AgentSpec;
  brain: Brain;
  /** The call's variables (standard keys included); brains may add to it. */
  variables: Vars;
  registry: ModelRegistry;
  inputRate: number;
  inputEncoding?: Encoding;
  outputRate: number;
  emit(event: SessionEvent): void;
  /** Sees the caller's audio (16 kHz, as received) and the agent's (output rate, as sent): call recording. */
  tap?: { input(samples16k: Float32Array): void; output(samples: Float32Array): void };
  /** Runs a tool the brain called; null when it cannot run (a spoken fallback and an error event follow). */
  runTool?(call: ToolCall): Promise<string | null>;
  /**
   * Carries out a transfer once the agent's words before it have played (telephony). Caller input is ignored while it
   * runs. Without it a transfer ends the call with `transfer_unavailable` (web calls).
   */
  transfer?(req: TransferRequest): Promise<TransferOutcome>;
  /** A phrase to say while a tool call runs (client tools' fillerPhrases). */
  fillerFor?(call: ToolCall): string | undefined;
  /** Speech needed to start a user turn, ms. Default 96. */
  minSpeechMs?: number;
  /** Barge-in speech beyond which no backchannel check is made, ms. Default 1000. */
  confirmInterruptMs?: number;
  /** A paused agent resumes when no words are recognised within this, ms. Default 2000. */
  falseInterruptionMs?: number;
  /** Output lead, ms. Default 80. */
  leadMs?: number;
  /** Text of idle reprompts and of the idle goodbye. */
  repromptText?: string;
  idleGoodbyeText?: string;
}

interface UserTurn {
  /** Start of its audio (16 kHz index, pre-roll included). */
  start: number;
  onsetWindow: number;
  spec?: { pause: number; result: Promise<string>; text?: string; startedAt: number; doneAt?: number; abort: AbortController; waitMs?: number };
  /** Prosody of the speech before the current pause (taken at the pause). */
  prosody?: ProsodyFeatures;
  /** Wall time the user stopped speaking (performance.now()). */
  stoppedAt?: number;
}

interface AgentTurn {
  id: number;
  abort: AbortController;
  speaker?: TurnSpeaker;
  text: string;
  started: boolean;
  endAfter?: CloseReason;
  /** The host transfers the call once this turn has played. */
  transferTo?: TransferRequest;
  startedAt: number;
  metrics?: { userStoppedAt: number; committedAt: number; eouDelayMs: number; recognitionMs: number; recognitionWait: number; firstTextAt?: number; turn: number };
}

interface BargeIn {
  detectedAt: number;
  detectedIso: string;
  timer: NodeJS.Timeout;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class AgentSession {
  readonly transcript: TranscriptEntry[] = [];
  readonly turnMetrics: TurnMetrics[] = [];
  readonly interruptions: InterruptionRecord[] = [];
  endReason: CloseReason | null = null;
  readonly startedAt = new Date();

  private readonly decoder: SampleDecoder | null;
  private readonly resampler: Resampler | null;
  private readonly audio = new SampleBuffer();
  private readonly tracker: SpeechTracker;
  private readonly prosody = new ProsodyTracker();
  /** What the agent said last (the question a reply answers). */
  private lastAgentText = '';
  private readonly pacer: OutputPacer | null;
  private vad: SileroVad | undefined;
  private recognizer: Awaited<ReturnType<ModelRegistry['recognizer']>> | undefined;
  private chain: Promise<void>;
  private windows = 0;
  /** Wall-clock time (performance.now()) at which an input sample index was spoken. */
  private wallOf: (sample: number) => number = () => performance.now();
  private utt: UserTurn | null = null;
  private agent: AgentTurn | null = null;
  private turnSeq = 0;
  private userTurns = 0;
  private bargeIn: BargeIn | null = null;
  /** How long pausing the output took at the last barge-in detection, ms. */
  private stopMs = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  private idleRetries = 0;
  private sessionTimer: NodeJS.Timeout | null = null;
  private replyChain: Promise<void> = Promise.resolve();
  /** A transfer is under way: caller audio, text and keys are not turns meanwhile. */
  private transferring = false;
  private lastDelta = '';
  private readonly bargeWindows: number;
  private readonly confirmWindows: number;

  constructor(private readonly opts: SessionOptions) {
    const spec = opts.spec;
    const start = spec.vad.confidence > 0 ? spec.vad.confidence : 0.5;
    this.tracker = new SpeechTracker({
      startThreshold: start,
      endThreshold: Math.max(0.05, start - 0.15),
      minSpeechWindows: Math.max(1, Math.round((opts.minSpeechMs ?? 96) / WIN_MS)),
      minVolume: spec.vad.minVolume,
    });
    // triggerTimeInSecs of speech over the agent holds its audio: at least two VAD windows (64 ms).
    this.bargeWindows = Math.max(2, Math.round((spec.vad.triggerTimeInSecs * 1000) / WIN_MS));
    this.confirmWindows = Math.max(this.bargeWindows + 1, Math.round((opts.confirmInterruptMs ?? 1000) / WIN_MS));
    if (opts.mode === 'webcall') {
      this.decoder = new SampleDecoder(opts.inputEncoding ?? 'linear16');
      this.resampler = new Resampler(opts.inputRate, SR, { quality: qualityFor(opts.inputRate) });
      this.pacer = new OutputPacer({
        sampleRate: opts.outputRate,
        leadMs: opts.leadMs ?? 80,
        send: (frame) => this.onFrame(frame),
        onDrained: () => void this.onAgentDrained(this.agent),
      });
      this.chain = Promise.all([opts.registry.vad(), opts.registry.recognizer()]).then(([vad, rec]) => {
        this.vad = vad.createStream();
        this.recognizer = rec;
      });
    } else {
      this.decoder = null;
      this.resampler = null;
      this.pacer = null;
      this.chain = Promise.resolve();
    }
    this.chain = this.chain.catch((err: unknown) => this.fail(err));
  }

  get ended(): boolean {
    return this.endReason !== null;
  }

  /** True while the agent's current reply has speech being synthesised or not yet sent (read-only, for transports). */
  get speaking(): boolean {
    const agent = this.agent;
    return agent !== null && ((agent.speaker?.pendingPhrases ?? 0) > 0 || (this.pacer?.pendingSamples ?? 0) > 0);
  }

  /** Starts the call: the opening line unless the agent waits for the user to speak first. */
  start(): void {
    const timeout = this.opts.spec.sessionTimeoutSeconds;
    if (timeout > 0) this.sessionTimer = setTimeout(() => void this.end('session_timeout'), timeout * 1000);
    if (this.opts.spec.waitForUserToSpeakFirst) {
      this.armIdle();
      return;
    }
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
    const agent = this.agent;
    if (!agent || this.ended) return false;
    const heard = this.heardOf(agent);
    agent.abort.abort();
    agent.speaker?.cancel();
    this.pacer?.reset();
    this.agent = null;
    this.pendingDrain = null;
    this.opts.brain.truncateLastReply(heard);
    if (agent.started) this.opts.emit({ type: 'agent_stop_talking', interrupted: true });
    if (heard) this.recordAgent(heard, true);
    this.opts.emit({ type: 'agent_turn_ended', turnId: agent.id, status: 'cancelled', text: heard });
    this.lastDelta = '';
    this.armIdle();
    return true;
  }

  /** Caller audio in the session's input encoding and rate (webcall mode). */
  pushAudio(bytes: Uint8Array): void {
    if (this.ended || this.transferring || !this.decoder || !this.resampler) return;
    let samples: Float32Array;
    try {
      samples = this.resampler.push(this.decoder.push(bytes));
    } catch (err) {
      this.opts.emit({ type: 'error', code: 'invalid_audio', message: err instanceof Error ? err.message : 'undecodable audio' });
      return;
    }
    if (!samples.length) return;
    this.chain = this.chain.then(() => this.feed(samples)).catch((err: unknown) => this.fail(err));
  }

  /** User text (chat mode, or typed input in a voice call): a committed user turn. */
  sendText(text: string): void {
    if (this.ended || this.transferring) return;
    const t = text.trim();
    if (!t) return;
    if (this.agent && this.opts.mode === 'webcall') this.interruptAgent(performance.now(), new Date().toISOString());
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
    this.clearIdle();
    if (this.sessionTimer) clearTimeout(this.sessionTimer);
    if (this.bargeIn) clearTimeout(this.bargeIn.timer);
    this.bargeIn = null;
    const agent = this.agent;
    if (agent) {
      agent.abort.abort();
      agent.speaker?.cancel();
      const heard = this.heardOf(agent);
      if (agent.started || agent.text) this.recordAgent(heard, heard !== agent.text.trim());
      this.opts.emit({ type: 'agent_turn_ended', turnId: agent.id, status: 'cancelled', text: heard });
    }
    this.agent = null;
    // A speculation still waiting for a slot would be wasted work now.
    this.utt?.spec?.abort.abort();
    this.pacer?.close();
    this.vad?.reset();
    this.audio.clear();
    this.opts.emit({ type: 'ended', reason });
  }

  // ------------------------------------------------------------------------------------------------ audio input
  private async feed(samples: Float32Array): Promise<void> {
    const vad = this.vad;
    if (!vad || this.ended || this.transferring) return;
    this.audio.append(samples);
    this.opts.tap?.input(samples);
    // When the newest sample arrived: the wall time of any earlier sample follows (the caller streams in real time).
    const arrivedAt = performance.now();
    const arrivedEnd = this.audio.end;
    this.wallOf = (sample) => arrivedAt - ((arrivedEnd - sample) * 1000) / SR;
    const probs = await vad.process(samples);
    for (const p of probs) {
      if (this.ended) return;
      const w = this.windows;
      const from = w * WIN;
      const window = this.audio.slice(from, from + WIN);
      this.prosody.push(window);
      this.onWindow(w, p, rms(window));
      this.windows++;
    }
    // Keep only the audio a turn may still need.
    const keepFrom = this.utt ? this.utt.start : this.windows * WIN - PRE_ROLL - 8 * WIN;
    if (keepFrom - this.audio.start > SR) this.audio.dropBefore(keepFrom);
  }

  private onWindow(w: number, p: number, level: number): void {
    const before = this.tracker.state;
    const signal = this.tracker.push(w, p, level);
    const agentActive = this.agent !== null;
    // Barge-in starts on the first evidence of speech (before the turn is confirmed), and a candidate that fades
    // before it is speech resumes the agent at once.
    if (this.tracker.state === 'candidate' && !this.utt && w - this.tracker.onset + 1 >= this.bargeWindows) this.maybeStartBargeIn();
    else if (before === 'candidate' && this.tracker.state === 'quiet' && this.bargeIn && !this.utt) this.resumeAfterFalseInterruption(null);
    if (signal?.type === 'start') {
      if (agentActive && !this.opts.spec.allowInterruptions) {
        // Interruptions are off: speech over the agent is not a turn.
        this.tracker.reset();
        return;
      }
      this.clearIdle();
      this.utt = { start: Math.max(this.audio.start, signal.onset * WIN - PRE_ROLL), onsetWindow: signal.onset };
      this.opts.emit({ type: 'user_speech_started', audioMs: Math.round(signal.onset * WIN_MS) });
    }
    const utt = this.utt;
    if (!utt) return;
    if (signal?.type === 'pause') {
      utt.stoppedAt = this.wallOf(w * WIN);
      utt.prosody = this.prosody.features(utt.onsetWindow, w);
      this.opts.emit({ type: 'user_speech_stopped', audioMs: Math.round(w * WIN_MS) });
      this.speculate(utt, w, 'speculative');
    } else if (signal?.type === 'resume') {
      // Speech went on after the pause: the speculation is useless, and dropped if it has not started.
      const spec = utt.spec;
      utt.spec = undefined;
      spec?.abort.abort();
      utt.stoppedAt = undefined;
    }
    const state = this.tracker.state;
    if (state === 'speech') {
      const spoken = w - utt.onsetWindow + 1;
      if (spoken >= this.bargeWindows) this.maybeStartBargeIn();
      if (this.bargeIn && spoken >= this.confirmWindows) this.confirmBargeIn();
      if ((w + 1) * WIN - utt.start >= MAX_TURN_SAMPLES) {
        // A monologue: take what there is as the turn.
        utt.stoppedAt = performance.now();
        this.speculate(utt, w + 1, 'live');
        this.tracker.state = 'pause';
        this.tracker.pauseStart = w + 1;
      }
    }
    if (this.tracker.state === 'pause') this.maybeCommit();
  }

  private maybeStartBargeIn(): void {
    if (this.agent && !this.bargeIn && this.agentInterruptible()) this.startBargeIn();
  }

  private agentInterruptible(): boolean {
    const agent = this.agent;
    if (!agent || !this.opts.spec.allowInterruptions) return false;
    return performance.now() - agent.startedAt >= this.opts.spec.interruptionBackoffSeconds * 1000;
  }

  /** `speculative` at a pause (speech may resume and discard it); `live` when a monologue is cut (it is the turn). */
  private speculate(utt: UserTurn, pauseWindow: number, kind: InferenceKind): void {
    const end = Math.min(this.audio.end, (pauseWindow + 1) * WIN);
    const samples = this.audio.slice(utt.start, end);
    const startedAt = performance.now();
    const abort = new AbortController();
    const spec: NonNullable<UserTurn['spec']> = { pause: pauseWindow, result: this.recognize(samples, kind, abort.signal), startedAt, abort };
    const replaced = utt.spec;
    utt.spec = spec;
    replaced?.abort.abort();
    spec.result.then(
      (text) => {
        spec.text = text;
        spec.doneAt = performance.now();
        if (this.utt === utt && utt.spec === spec) this.onRecognized(utt);
      },
      (err: unknown) => {
        if (this.utt === utt && utt.spec === spec) this.fail(err);
      },
    );
  }

  private onRecognized(utt: UserTurn): void {
    const text = spokenText(utt.spec?.text ?? '');
    if (this.bargeIn) {
      if (!text.trim() || isBackchannel(text)) {
        this.resumeAfterFalseInterruption(text.trim() ? 'backchannel' : 'noise');
        return;
      }
      this.confirmBargeIn();
    }
    this.maybeCommit();
  }

  /** Commits the user's turn when the endpointing rules allow it. */
  private maybeCommit(): void {
    const utt = this.utt;
    const spec = utt?.spec;
    if (!utt || !spec || this.tracker.state !== 'pause' || this.bargeIn) return;
    const silenceMs = (this.windows - spec.pause + 1) * WIN_MS;
    const { minDelayMs } = this.opts.spec.endpointing;
    if (spec.text === undefined || silenceMs < minDelayMs) return;
    const text = spokenText(spec.text);
    if (!text) {
      this.discardTurn('noise');
      return;
    }
    spec.waitMs ??= decide({ text, agentText: this.lastAgentText, prosody: utt.prosody }, this.turnConfig()).waitMs;
    if (silenceMs < spec.waitMs) return;
    this.dropTurn();
    this.tracker.reset();
    const now = performance.now();
    const stoppedAt = utt.stoppedAt ?? now;
    this.commitUserText(text, {
      userStoppedAt: stoppedAt,
      committedAt: now,
      eouDelayMs: now - stoppedAt,
      recognitionMs: (spec.doneAt ?? now) - spec.startedAt,
      recognitionWait: 0,
      turn: 0,
    });
  }

  /** The end-of-turn settings: smartTurnConfig switches the adaptive decision, endpointingConfig bounds it. */
  private turnConfig(): TurnConfig {
    const { endpointing, smartTurn } = this.opts.spec;
    return { smartTurn: smartTurn.enabled, smartWaitMs: smartTurn.waitMs, minDelayMs: endpointing.minDelayMs, maxDelayMs: endpointing.maxDelayMs };
  }

  /** Forgets the user's turn; a speculation of it still waiting for a slot is dropped. */
  private dropTurn(): void {
    this.utt?.spec?.abort.abort();
    this.utt = null;
  }

  private discardTurn(reason: 'noise' | 'backchannel'): void {
    this.dropTurn();
    this.tracker.reset();
    this.opts.emit({ type: 'user_turn_discarded', reason });
    if (!this.agent) this.armIdle();
  }

  // ------------------------------------------------------------------------------------------------ barge-in
  private startBargeIn(): void {
    const detectedAt = performance.now();
    this.pacer?.pause();
    this.opts.emit({ type: 'agent_audio_paused' });
    this.stopMs = performance.now() - detectedAt;
    this.bargeIn = {
      detectedAt,
      detectedIso: new Date().toISOString(),
      timer: setTimeout(() => {
        if (this.bargeIn && this.tracker.state !== 'speech') this.resumeAfterFalseInterruption('noise');
      }, this.opts.falseInterruptionMs ?? 2000),
    };
  }

  private confirmBargeIn(): void {
    const b = this.bargeIn;
    if (!b) return;
    clearTimeout(b.timer);
    this.bargeIn = null;
    this.interruptAgent(b.detectedAt, b.detectedIso);
    this.maybeCommit();
  }

  /** The agent plays on: what held it was a backchannel, noise, or (null) a sound that never became speech. */
  private resumeAfterFalseInterruption(reason: 'noise' | 'backchannel' | null): void {
    const b = this.bargeIn;
    if (!b) return;
    clearTimeout(b.timer);
    this.bargeIn = null;
    const started = this.utt !== null;
    this.dropTurn();
    this.tracker.reset();
    if (reason && started) this.opts.emit({ type: 'user_turn_discarded', reason });
    this.pacer?.resume();
    this.opts.emit({ type: 'agent_audio_resumed' });
    const drained = this.pendingDrain;
    this.pendingDrain = null;
    if (drained && drained === this.agent) void this.onAgentDrained(drained);
  }

  /** Stops the agent's turn: queued audio dropped, transcript cut to what was heard, `interruption` out. */
  private interruptAgent(detectedAt: number, detectedIso: string): void {
    const agent = this.agent;
    if (!agent) return;
    const heard = this.heardOf(agent);
    agent.abort.abort();
    agent.speaker?.cancel();
    this.pacer?.reset();
    this.agent = null;
    const stopMs = this.pacer ? this.stopMs : 0;
    this.interruptions.push({ detectedAt: detectedIso, stopMs: Math.round(stopMs * 100) / 100, heard, confirmedAfterMs: Math.round(performance.now() - detectedAt) });
    this.pendingDrain = null;
    this.opts.brain.truncateLastReply(heard);
    this.opts.emit({ type: 'interruption' });
    if (agent.started) this.opts.emit({ type: 'agent_stop_talking', interrupted: true });
    this.recordAgent(heard, true);
    this.opts.emit({ type: 'agent_turn_ended', turnId: agent.id, status: 'interrupted', text: heard });
    this.lastDelta = '';
    // A transfer the agent has decided on goes ahead when the caller talks over its announcement ("Transferring you
    // now"): the words are cut, the decision is not. What the caller says meanwhile is not a turn (see transfer()).
    if (agent.transferTo) void this.transfer(agent.transferTo);
  }

  private heardOf(agent: AgentTurn): string {
    if (this.opts.mode === 'chat' || !this.pacer) return agent.text.trim();
    return this.pacer.heardText();
  }

  // ------------------------------------------------------------------------------------------------ replies
  private commitUserText(text: string, metrics: AgentTurn['metrics'] | null): void {
    if (this.transferring) {
      // Said while the transfer was being set up: kept in the history, not answered.
      this.opts.brain.noteUser?.(text);
      return;
    }
    this.idleRetries = 0;
    this.clearIdle();
    this.userTurns++;
    this.opts.emit({ type: 'user_transcript_delta', text });
    this.opts.emit({ type: 'user_transcript', text });
    this.transcript.push({ role: 'user', content: text, timestamp: new Date().toISOString() });
    if (this.agent) {
      // The agent had not started speaking its previous reply: drop it, answer this.
      this.agent.abort.abort();
      this.agent.speaker?.cancel();
      this.pacer?.reset();
      this.opts.brain.truncateLastReply('');
      this.opts.emit({ type: 'agent_turn_ended', turnId: this.agent.id, status: 'cancelled', text: '' });
      this.agent = null;
    }
    if (metrics) metrics.turn = this.userTurns;
    this.respond((ctx) => this.opts.brain.reply(text, ctx), metrics, 'reply');
  }

  /** Runs one agent turn from a brain stream (plus tool-call continuations). */
  private respond(
    source: (ctx: { variables: Vars; signal: AbortSignal }) => AsyncIterable<BrainEvent>,
    metrics: AgentTurn['metrics'] | null,
    kind: 'opening' | 'reply' | 'continuation' | 'reprompt',
    extraText?: string,
  ): void {
    const turn: AgentTurn = { id: ++this.turnSeq, abort: new AbortController(), text: '', started: false, startedAt: performance.now(), metrics: metrics ?? undefined };
    this.agent = turn;
    this.opts.emit({ type: 'agent_turn_started', turnId: turn.id, kind });
    this.lastDelta = '';
    if (this.pacer) {
      this.pacer.reset();
      turn.speaker = new TurnSpeaker(this.opts.registry, this.pacer, {
        voiceId: this.opts.spec.voiceId,
        speed: this.opts.spec.speed,
        onError: (err) => this.opts.emit({ type: 'error', code: 'synthesis_failed', message: err instanceof Error ? err.message : String(err) }),
      });
    }
    this.replyChain = this.replyChain.then(() => this.runTurn(turn, source, extraText)).catch((err: unknown) => this.fail(err));
  }

  private async runTurn(turn: AgentTurn, source: (ctx: { variables: Vars; signal: AbortSignal }) => AsyncIterable<BrainEvent>, extraText?: string): Promise<void> {
    const ctx = { variables: this.opts.variables, signal: turn.abort.signal };
    const alive = () => this.agent === turn && !this.ended;
    if (extraText) this.addText(turn, extraText);
    let next: (() => AsyncIterable<BrainEvent>) | null = () => source(ctx);
    for (let round = 0; next && round < 4 && alive(); round++) {
      const stream = next();
      next = null;
      const calls: ToolCall[] = [];
      let failed = false;
      for await (const ev of stream) {
        if (!alive()) return;
        if (ev.type === 'text') this.addText(turn, ev.text);
        else if (ev.type === 'tool_call') calls.push(ev.call);
        else if (ev.type === 'end_call') turn.endAfter = 'ended';
        else if (ev.type === 'transfer') {
          if (this.opts.transfer) turn.transferTo = { number: ev.number, option: ev.option ?? { type: 'cold_transfer' } };
          else {
            turn.endAfter = 'transfer_unavailable';
            this.opts.emit({ type: 'error', code: 'transfer_unavailable', message: `Transfer to ${ev.number} is not available on this call type; the call ends` });
          }
        } else if (ev.type === 'variables') this.opts.emit({ type: 'variables', values: ev.values });
        else if (ev.type === 'error') {
          failed = true;
          this.opts.emit({ type: 'error', code: ev.code, message: ev.message });
        }
      }
      if (!alive()) return;
      if (failed && !turn.text.trim()) this.addText(turn, "Sorry, I'm having trouble answering right now. Please try again in a moment.");
      for (const call of calls) {
        const filler = this.opts.fillerFor?.(call);
        if (filler) this.addText(turn, `${filler} `);
        const output = this.opts.runTool ? await this.opts.runTool(call).catch(() => null) : null;
        if (!alive()) return;
        if (output === null) {
          this.opts.emit({ type: 'error', code: 'tool_unavailable', message: `Tool "${call.name}" cannot run yet` });
          this.addText(turn, "Sorry, I can't do that right now.");
          this.opts.brain.addToolResult(call.id, JSON.stringify({ error: 'tool unavailable' }));
        } else {
          this.opts.brain.addToolResult(call.id, output);
          next = () => this.opts.brain.reply(null, ctx);
        }
      }
    }
    if (!alive()) return;
    if (turn.speaker) {
      await turn.speaker.end();
      if (!alive()) return;
      if (!turn.text.trim()) this.finishAgentTurn(turn);
      // Otherwise the pacer's drain finishes the turn.
    } else {
      this.finishAgentTurn(turn);
    }
  }

  private addText(turn: AgentTurn, text: string): void {
    if (!text) return;
    if (turn.metrics && turn.metrics.firstTextAt === undefined) turn.metrics.firstTextAt = performance.now();
    turn.text += text;
    if (turn.speaker) turn.speaker.pushText(text);
    else this.opts.emit({ type: 'agent_transcript_delta', text: turn.text.trim() });
  }

  private onFrame(frame: Float32Array): void {
    const turn = this.agent;
    if (!turn) return;
    if (!turn.started) {
      turn.started = true;
      this.opts.emit({ type: 'agent_start_talking' });
      this.recordMetrics(turn);
    }
    this.opts.tap?.output(frame);
    this.opts.emit({ type: 'audio', samples: frame });
    const heard = this.pacer?.heardText() ?? '';
    if (heard && heard !== this.lastDelta) {
      this.lastDelta = heard;
      this.opts.emit({ type: 'agent_transcript_delta', text: heard });
    }
  }

  private async onAgentDrained(turn: AgentTurn | null): Promise<void> {
    if (!turn?.speaker) return;
    // The last frames were sent ahead of playback: the turn ends when the listener has heard them.
    const wait = this.pacer?.msUntilPlayed() ?? 0;
    if (wait > 0) await sleep(wait);
    if (this.agent !== turn || this.ended || this.pacer?.isPaused) {
      if (this.agent === turn && this.pacer?.isPaused) this.pendingDrain = turn;
      return;
    }
    this.finishAgentTurn(turn);
  }

  /** A drain that arrived while a barge-in held the audio; finished when the agent resumes. */
  private pendingDrain: AgentTurn | null = null;

  private finishAgentTurn(turn: AgentTurn): void {
    if (this.agent !== turn) return;
    this.agent = null;
    const text = turn.text.trim();
    if (this.pacer && turn.started) {
      if (text && text !== this.lastDelta) this.opts.emit({ type: 'agent_transcript_delta', text });
      this.opts.emit({ type: 'agent_stop_talking', interrupted: false });
    }
    this.pacer?.reset();
    if (text) {
      this.opts.emit({ type: 'agent_transcript', text, interrupted: false });
      this.transcript.push({ role: 'agent', content: text, timestamp: new Date().toISOString() });
      this.lastAgentText = text;
    }
    this.opts.emit({ type: 'agent_turn_ended', turnId: turn.id, status: 'completed', text });
    if (turn.transferTo) {
      void this.transfer(turn.transferTo);
      return;
    }
    if (turn.endAfter) {
      this.end(turn.endAfter);
      return;
    }
    if (!this.utt) this.armIdle();
  }

  /** Hands the transfer to the host: transferred ends the session; refused, the agent says why and the call goes on. */
  private async transfer(req: TransferRequest): Promise<void> {
    this.transferring = true;
    this.clearIdle();
    this.dropTurn();
    this.tracker.reset();
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
    const say = outcome.say;
    this.respond(async function* () {
      yield { type: 'text' as const, text: say };
    }, null, 'continuation');
  }

  /**
   * The agent's voice saying `text` as one clip at `rate` Hz, outside the conversation (a warm transfer's handoff to
   * its target). Empty when the text is.
   */
  async synthesize(text: string, rate: number): Promise<Float32Array> {
    if (!text.trim()) return new Float32Array(0);
    const audio = await this.opts.registry.synthesize(this.opts.spec.voiceId, text, this.opts.spec.speed);
    return audio.sampleRate === rate ? audio.samples : resample(audio.samples, audio.sampleRate, rate);
  }

  /**
   * A transfer handoff's words: `static` (or no type) as written; `prompt` written by the agent's language model from
   * the prompt and the conversation so far. A brain without a model (workflow), or a model that fails, says the prompt
   * as written.
   */
  async handoffText(handoff: HandoffOption | undefined): Promise<string> {
    const text = (handoff?.prompt ?? '').trim();
    const brain = this.opts.brain;
    if (!text || handoff?.type !== 'prompt' || !brain.compose) return text;
    try {
      const written = await brain.compose(text, { variables: this.opts.variables, signal: AbortSignal.timeout(20_000) });
      if (written) return written;
    } catch {
      // the error names the endpoint's problem; the prompt said as written still hands the call over
    }
    this.opts.emit({ type: 'error', code: 'handoff_not_written', message: 'The language model did not write the transfer handoff; its prompt is said as written' });
    return text;
  }

  private recordAgent(text: string, interrupted: boolean): void {
    this.lastAgentText = text;
    this.opts.emit({ type: 'agent_transcript', text, interrupted });
    this.transcript.push({ role: 'agent', content: text, timestamp: new Date().toISOString(), ...(interrupted ? { interrupted: true } : {}) });
  }

  private recordMetrics(turn: AgentTurn): void {
    const m = turn.metrics;
    if (!m) return;
    const now = performance.now();
    const t = turn.speaker?.timings ?? {};
    const brainFirstTokenMs = m.firstTextAt !== undefined ? m.firstTextAt - m.committedAt : null;
    const brainFirstPhraseMs = t.firstPhraseAt !== undefined ? t.firstPhraseAt - m.committedAt : null;
    const ttsFirstByteMs = t.firstSynthStart !== undefined && t.firstSynthDone !== undefined ? t.firstSynthDone - t.firstSynthStart : null;
    const e2eMs = now - m.userStoppedAt;
    const parts = m.eouDelayMs + (brainFirstPhraseMs ?? 0) + (ttsFirstByteMs ?? 0);
    const r = (x: number | null) => (x === null ? null : Math.round(x * 10) / 10);
    const metrics: TurnMetrics = {
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
    this.turnMetrics.push(metrics);
    this.opts.emit({ type: 'turn_metrics', metrics });
  }

  // ------------------------------------------------------------------------------------------------ idle
  private idleSeconds(): number {
    const idle = this.opts.spec.idle;
    if (this.opts.mode === 'chat') return idle.chatSeconds;
    return this.opts.conversationType.startsWith('telephony') ? idle.telephonySeconds : idle.webcallSeconds;
  }

  private armIdle(): void {
    this.clearIdle();
    if (this.ended) return;
    const seconds = this.idleSeconds();
    if (!(seconds > 0)) return;
    this.idleTimer = setTimeout(() => this.onIdle(), seconds * 1000);
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  private onIdle(): void {
    this.idleTimer = null;
    if (this.ended || this.agent || this.utt) return;
    if (this.idleRetries < this.opts.spec.idle.maxRetries) {
      this.idleRetries++;
      const text = this.opts.repromptText ?? 'Are you still there?';
      this.respond(async function* () {
        yield { type: 'text' as const, text };
      }, null, 'reprompt');
      return;
    }
    const bye = this.opts.idleGoodbyeText ?? "I haven't heard from you, so I'll end the call now. Goodbye.";
    this.respond(async function* () {
      yield { type: 'text' as const, text: bye };
    }, null, 'reprompt');
    const turn = this.agent as AgentTurn | null;
    if (turn) turn.endAfter = 'idle_timeout';
  }

  // ------------------------------------------------------------------------------------------------ recognition
  /** Recognition through the queue; `signal` drops it while it waits (an AbortError), retries while the queue is full. */
  private async recognize(samples: Float32Array, kind: InferenceKind, signal: AbortSignal): Promise<string> {
    const recognizer = this.recognizer;
    if (!recognizer || this.ended) return '';
    const deadline = Date.now() + 10_000;
    let delay = 20;
    for (;;) {
      try {
        const registry = this.opts.registry;
        const { text } = await registry.queue.run((slot) => recognizer.transcribe(samples, registry.liveTranscribeOptions(slot, samples.length)), kind, { signal });
        return text.trim();
      } catch (err) {
        if (!(err instanceof QueueFullError) || Date.now() > deadline || this.ended || signal.aborted) throw err;
        await sleep(delay);
        delay = Math.min(400, delay * 2);
      }
    }
  }

  private fail(err: unknown): void {
    if (this.ended) return;
    const message = err instanceof QueueFullError ? 'The server is at capacity' : err instanceof Error ? err.message : String(err);
    this.opts.emit({ type: 'error', code: 'internal_error', message });
    this.end('error');
  }
}
