// A session's contract with its host: what it is given (SessionOptions: the agent, its brain, the models, the audio
// formats, the host's callbacks), the events it emits, the transcript and interruption records it keeps, the per-turn
// metrics, and the shape of a transfer the agent asks for.
import type { Encoding } from '../audio/codecs.js';
import type { Clock, Synthesizer, TurnModels } from '../ports.js';
import type { AgentSpec, Brain, ToolCall, TransferOption, Vars } from './types.js';

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

/** The models a session runs on: the registry's (models/turn-models.ts), or scripted ones in tests. */
export interface SessionModels {
  /** A VAD stream and a recognizer for the caller's turns (loaded before the first audio of a voice session). */
  turn(): Promise<TurnModels>;
  synthesizer: Synthesizer;
}

export interface SessionOptions {
  mode: 'webcall' | 'chat';
  /** `webcall`, `telephonyInbound`, `telephonyOutbound`: picks the idle timeout. */
  conversationType: string;
  spec: AgentSpec;
  brain: Brain;
  /** The call's variables (standard keys included); brains may add to it. */
  variables: Vars;
  models: SessionModels;
  /** Time and timers; the real clock by default. */
  clock?: Clock;
  inputRate: number;
  inputEncoding?: Encoding;
  outputRate: number;
  emit(event: SessionEvent): void;
  /** Sees the caller's audio (16 kHz, as received) and the agent's (output rate, as sent): call recording. */
  tap?: { input(samples16k: Float32Array): void; output(samples: Float32Array): void };
  /**
   * Redaction (the agent's redactionConfig): what the caller said, as the transcript, its events and the brain get it;
   * what the agent said, as the transcript and its final event keep it. Absent: the words as they are.
   */
  privacy?: { user(text: string): string; agent(text: string): string };
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
