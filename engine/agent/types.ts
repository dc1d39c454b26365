// Contracts of the conversation runtime: the resolved agent it runs, the brains it asks, the tools it calls.
// The engine knows nothing of HTTP or the store: transports resolve an agent into an AgentSpec and hand it over.
import type { SpeechTextRules } from '../tts/speech-text.js';
import type { BackgroundSound } from '../audio/ambience.js';

/** Variable values: the 11 standard keys, the agent's defaultVariables, per-call variables, extracted values. */
export type Vars = Record<string, string | number | boolean>;

/** An OpenAI-compatible chat-completions endpoint (the agent's `model` block, or the server default). */
export interface LlmEndpoint {
  /** Base URL up to and including the version segment, e.g. `http://127.0.0.1:9000/v1`; `/chat/completions` is appended. */
  baseUrl: string;
  model: string;
  /** The resolved API key (never the secret's name); omitted when the endpoint needs none. */
  apiKey?: string;
  temperature?: number;
}

/** A function the language model may call (OpenAI `tools[].function`). */
export interface FunctionTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments. */
  parameters?: Record<string, unknown>;
}

/** The flat agent configuration the runtime reads (the `_resolvedConfig` fields it needs; everything optional). */
export interface AgentSpec {
  agentId: string;
  workflowType: 'single_prompt' | 'workflow_graph';
  prompt?: string;
  globalPrompt?: string;
  firstMessage?: string;
  /** workflow_graph agents only; see engine/agent/brains/workflow.ts for the shape. */
  workflowGraph?: unknown;
  /** single_prompt agents: the language model (apiKey already resolved from the vault). */
  llm?: LlmEndpoint;
  /** Agent tools (wire `Tool` objects: end_call, transfer_call, api_call, ...). */
  tools?: Record<string, unknown>[];
  voiceId: string;
  voiceGender?: string;
  speed: number;
  languageDefault: string;
  languagesSupported: string[];
  /** IANA zone name, or an offset in minutes east of UTC (wire `{label, offset}`). */
  timezone: string | { label: string; offset: number };
  defaultVariables: Vars;
  allowInterruptions: boolean;
  waitForUserToSpeakFirst: boolean;
  /** Seconds at the start of each agent turn during which the user cannot interrupt. */
  interruptionBackoffSeconds: number;
  vad: { confidence: number; minVolume: number; triggerTimeInSecs: number; releaseTimeInSecs: number };
  endpointing: { minDelayMs: number; maxDelayMs: number };
  /** smartTurnConfig: the adaptive end-of-turn decision on (default) or off (silence alone: minDelayMs), and its longest wait for an incomplete turn (0: maxDelayMs). */
  smartTurn: { enabled: boolean; waitMs: number };
  /** Seconds of user silence before a reprompt, per conversation kind, and reprompts before the call ends. */
  idle: { chatSeconds: number; webcallSeconds: number; telephonySeconds: number; maxRetries: number };
  sessionTimeoutSeconds: number;
  /** Voice calls: caller audio is ignored (no VAD, barge-in or turn) until the agent's first reply has played out. */
  muteUserUntilFirstBotResponse?: boolean;
  /** Voice calls: RNNoise on the caller's audio before the VAD (denoisingConfig.isEnabled). */
  denoise?: boolean;
  /** Voice calls: an ambience under the agent's audio for the whole call (engine/audio/ambience.ts); none when absent. */
  backgroundSound?: BackgroundSound;
  /** What the agent's words are said as: its pronunciation dictionaries' entries and `speechFormatting` (tts/speech-text.ts). */
  speechText?: SpeechTextRules;
}

/** One message of the conversation as the brains see it. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

export interface ToolCall {
  id: string;
  name: string;
  /** The JSON text of the arguments, as the model produced it. */
  arguments: string;
}

/** A handoff line of a warm transfer (wire `privateHandoffOption` / `publicHandoffOption`): `prompt` is the text. */
export interface HandoffOption {
  type?: 'prompt' | 'static';
  prompt?: string;
}

/** How a call is transferred (wire `transferOption`); cold when absent. */
export interface TransferOption {
  type: 'cold_transfer' | 'warm_transfer';
  /** Warm: said to the target alone before the caller joins. */
  privateHandoffOption?: HandoffOption;
  /** Warm: said to the caller and the target together once they are bridged. */
  publicHandoffOption?: HandoffOption;
  /** What the caller hears while the target rings (the tool's or node's `onHoldMusic`; `ringtone` when absent). */
  onHoldMusic?: 'ringtone' | 'relaxing_sound' | 'uplifting_beats' | 'none';
  /** Join the caller only to a person, not to voicemail (`transferOnlyIfHuman`; true when absent). */
  transferOnlyIfHuman?: boolean;
  /** Seconds to decide whether a person answered (`detectionTimeout`, 5-60; 30 when absent). */
  detectionTimeout?: number;
}

/** What a brain produces for one reply, in order. */
export type BrainEvent =
  /** A piece of the reply's text (streamed; concatenate). */
  | { type: 'text'; text: string }
  /** The model calls a function; the reply pauses until the caller gives a result (see Brain.addToolResult). */
  | { type: 'tool_call'; call: ToolCall }
  /** End the call after the text before it has been spoken; `endReason` is the session's end reason (default `ended`). */
  | { type: 'end_call'; reason: string; endReason?: string }
  /** Transfer the call to a number after the text before it has been spoken (cold when `option` is absent). */
  | { type: 'transfer'; number: string; option?: TransferOption }
  /** Variables set or extracted during this reply. */
  | { type: 'variables'; values: Vars }
  /** The brain could not answer (endpoint down, bad graph); any text already yielded stands. */
  | { type: 'error'; code: string; message: string };

export interface BrainContext {
  /** Live variable store of the call (brains may add to it). */
  variables: Vars;
  signal: AbortSignal;
}

export interface Brain {
  /** The language model that answers (the endpoint's model name); absent for brains that use none (a workflow graph). */
  readonly modelName?: string;
  /** The opening turn (firstMessage, or the graph's start node); may yield nothing. */
  opening(ctx: BrainContext): AsyncIterable<BrainEvent>;
  /**
   * A reply to what the user said; `userText` null continues after tool results were added (the model narrates them).
   * Aborting `ctx.signal` stops it (no more events).
   */
  reply(userText: string | null, ctx: BrainContext): AsyncIterable<BrainEvent>;
  /** The result of a tool call yielded by the last reply. */
  addToolResult(callId: string, output: string): void;
  /** The user heard only `heardText` of the last reply (barge-in): the history keeps only that. */
  truncateLastReply(heardText: string): void;
  /** A user message that got no reply of its own (for example the user spoke again before the agent answered). */
  noteUser?(text: string): void;
  /**
   * Words to say outside the conversation (a transfer's handoff of type `prompt`), written from `instruction` and the
   * conversation so far; the history is unchanged. Only brains with a language model have it.
   */
  compose?(instruction: string, ctx: BrainContext): Promise<string>;
}
