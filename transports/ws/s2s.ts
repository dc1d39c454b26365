// WSS /s2s (speech-to-speech; wire: inference-api.md §10): JSON frames only. PCM16 16 kHz base64 in, the engine's
// AgentSession in the middle (VAD turns, Whisper, the server's default language model, Flite), PCM16 48 kHz base64 out.
//
// Decisions where the wire doc is silent or inconsistent:
// - Connect: `model` is required (`hydra-v1.1`, `hydra-v1.0`, `hydra`); missing/unknown -> HTTP 400 `{error}` before the
//   upgrade. Auth (API key or `wat_` access token, `api_key` query or Authorization header) is checked first: 401
//   `{error}`. While the server drains: 503. Each session is a speech session (PARLEY_MAX_SPEECH_SESSIONS and
//   PARLEY_MAX_SPEECH_SESSIONS_PER_KEY): past either cap, 503 or 429 with Retry-After before the upgrade.
// - No call record: s2s is a usage of the engine, not an agent call; nothing is written to the store.
// - `session.configure`: the first one that is *applied* counts; one rejected by validation does not, so the client can
//   correct it; after one is applied later ones are ignored without a frame. Without a default language model
//   (PARLEY_LLM_BASE_URL unset) every configure is refused (`model_not_configured`) and the session stays unconfigured.
//   Audio before `session.configured` is dropped without validation or reply.
// - Voices: the model's own voice table plus the documented default `sterling` (accepted on every model). Anything
//   else -> `error` invalid_request_error, param `session.configure.session.voice` (the spec's side of the
//   inconsistency). Each hydra name speaks as the nearest voice here by the voice table (HOSTED_VOICES in
//   engine/models/voice-table.ts: gender and accent): RHVoice's when installed, else Flite's.
// - Instructions are the system prompt verbatim (no `{{variable}}` rendering). Tools become functions of the model;
//   `session.update` replaces the list in place (the brain reads it at every request). A patch equal to the current
//   tools, or without `tools`, is a no-op and gets no frame.
// - Turn events follow §10 point 6. `speech_stopped` is sent when the engine commits (or discards) the user turn, so
//   each user item gets exactly one; `audio_end_ms` is where the speech ended. Times are ms of input audio since
//   `session.configured` (the audio clock; silence the client streams counts). The assistant item is added with the
//   response's first text or audio. Audio items carry `text: null` and the words in `transcript`.
// - Tools: the engine hands over each call after the model's reply finished, so a call's arguments go out as one
//   `response.function_call_arguments.delta` (with `name`) and `.done`; `conversation.item.added/done` frame the
//   function_call item. What the model said before the call is spoken in that same response (the brain ends the
//   phrase being gathered with a line break so it is synthesised now), and the response ends (`response.done`,
//   completed, message + function_call items in `output`) once that speech has been sent (AgentSession.speaking).
//   The client then sends `conversation.item.create` (function_call_output, acknowledged with item.added/done) and
//   `response.create`: the narration is a new response of the same engine turn. A call without an output at `response.create` gets `{"error": ...}` as its result. No
//   `response.create` within the tool window (default 15 s, env PARLEY_S2S_TOOL_TIMEOUT_MS, counted from that
//   `response.done`) -> `error` tool_response_timeout; the turn is abandoned (the model is told the tools timed out).
// - `response.create` without pending tool calls starts a response when none is in flight (error otherwise);
//   its `response` object is ignored. Only function_call_output items can be created.
// - `response.cancel`: no-op when nothing is in flight or `response_id` names another response; it also abandons a
//   turn waiting for tool outputs. `response.done` statuses: completed; cancelled with reason `client_cancelled` or
//   `interrupted` (barge-in, or a newer user turn superseding an unspoken reply); failed when the language model
//   failed (the spoken apology stays in the response; `status_details.error` carries the engine's code).
// - Usage is an estimate: tokens = ceil(chars / 4) of the request text (messages and tools) and of the generated
//   text and arguments; audio is not counted.
// - Error frames: `error.type` is `invalid_request_error` for client faults, `server_error` for ours. Bad JSON, a
//   binary frame, a missing/unknown `type`, or a strict `session.update` failure -> invalid_frame; engine failures ->
//   internal_error (close 1011), or server_full (close 1013) when the inference queue refused the work.
// - Liveness: ping every 2 s; no pong for 8 s, or output backing up beyond ~3 s of audio -> close 1008
//   (client_too_slow). No frame either way for 30 s -> close 1000 (idle_timeout). Session timeout 1800 s -> 1000.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { LlmBrain, type LlmBrainOptions } from '../../engine/agent/brains/llm.js';
import { AgentSession, type SessionEvent } from '../../engine/agent/session.js';
import type { BrainContext, BrainEvent, FunctionTool, LlmEndpoint, ToolCall } from '../../engine/agent/types.js';
import { encodeLinear16 } from '../../engine/audio/codecs.js';
import type { ModelRegistry } from '../../engine/models/registry.js';
import { registryModels } from '../../engine/models/turn-models.js';
import { DEFAULT_LLM_SETTING } from '../../calls/brains.js';
import { inferenceError } from '../http/auth.js';
import type { HttpServer } from '../http/server.js';
import { docs, type HttpRequest } from '../http/types.js';
import { wsRoute, type WsConnection, type WsSession } from './endpoint.js';
import { parseS2sClientFrame } from './s2s-messages.js';
import { s2sUpgradeErrorBody } from '../routes/inference-errors.js';
import { ownerOf, type SessionLimits } from '../../calls/session-limits.js';
import { CURRENT_MODEL, DEFAULT_VOICE, S2S_MODELS, S2S_VOICES, isObject, parseTools, s2sSpec, toFunction, tokens, words, type S2sModel, type WireTool } from './s2s-protocol.js';
import { pronunciationRules } from '../routes/tts-request.js';
import type { SpeechTextRules } from '../../engine/tts/speech-text.js';
import type { AuthContext } from '../../control-plane/auth/keys.js';
import type { Db } from '../../control-plane/store/db.js';

const IN_RATE = 16000;
const OUT_RATE = 48000;
/** Smallest audio frame accepted: 10 ms of PCM16 at 16 kHz. */
const MIN_AUDIO_BYTES = 320;
/** Output queued in the socket beyond this many seconds of (base64) audio means the client is not keeping up. */
const MAX_BUFFER_SECONDS = 3;
const PING_MS = 2000;
const STALL_MS = 8000;
const IDLE_MS = 30_000;
const DEFAULT_TOOL_TIMEOUT_MS = 15_000;
/** The message AgentSession reports when the inference queue refused its work. */
const CAPACITY_MESSAGE = 'The server is at capacity';
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface S2sDeps {
  registry: ModelRegistry;
  logger: Logger;
  /** The server's default language model (PARLEY_LLM_*); undefined: every session.configure is refused. */
  llm?: LlmEndpoint;
  /** True while the server drains (new sessions get 503). */
  draining(): boolean;
  /** Window for function_call_output + response.create after a function-call response, ms. Default 15000. */
  toolTimeoutMs?: number;
  /** The server's concurrent-session caps (a speech session each; refused before the upgrade). */
  limits: SessionLimits;
  /** Where `session.pronunciation_dicts` are looked up (without it, a configure naming any is refused). */
  db?: Db;
}

export function s2sSocket(server: HttpServer, prefix: string, deps: S2sDeps): void {
  wsRoute<S2sModel>(server, deps.logger, `${prefix}/s2s`, {
    auth: 'inference',
    maxPayloadBytes: 1024 * 1024,
    errorBody: s2sUpgradeErrorBody,
    doc: docs('Speech to speech')('Speech-to-speech session (OpenAI Realtime-style events)', {
      description:
        'Client events: `session.configure`/`session.update` (instructions, voice, tools), `input_audio_buffer.append` ' +
        '(base64 audio), `conversation.item.create` (text, `function_call_output`), `response.create`, `response.cancel`. ' +
        'Server events: `session.created`, `session.configured`/`session.updated`, `input_audio_buffer.speech_started`/' +
        '`speech_stopped`, `conversation.item.added`/`done`, `response.created`, `response.output_audio.delta`/`done`, ' +
        '`response.function_call_arguments.delta`/`done`, `response.done`, `warning` and `error` (`server_full` closes ' +
        'with 1013).',
      query: [{ name: 'model', required: true, schema: { type: 'string', enum: [...S2S_MODELS] } }],
    }),
    prepare: (req) => prepare(req, deps),
    admit: (_model, auth) => deps.limits.acquire('speech', ownerOf(auth)),
    open: (conn, model, auth) => new S2sConnection(conn, model, deps, auth),
  });
}

function prepare(req: HttpRequest, deps: S2sDeps): S2sModel {
  if (deps.draining()) throw inferenceError(503, 'Server is draining; retry with backoff');
  const model = req.query.get('model');
  if (!model) throw inferenceError(400, `model: required (${S2S_MODELS.join(', ')})`);
  if (!(S2S_MODELS as readonly string[]).includes(model)) throw inferenceError(400, `model: unknown "${model}" (use ${S2S_MODELS.join(', ')})`);
  return model as S2sModel;
}

// ------------------------------------------------------------------------------------------------------------------
interface Applied {
  instructions: string;
  voice: string;
  tools: WireTool[];
  generate_initial_response: boolean;
}

interface AssistantOut {
  kind: 'message';
  id: string;
  prev: string | null;
}
interface CallOut {
  kind: 'call';
  id: string;
  prev: string | null;
  call: ToolCall;
}

/** One wire response: an engine turn has one, plus one more per tool round. */
interface WireResponse {
  id: string;
  turnId: number;
  closed: boolean;
  outputs: (AssistantOut | CallOut)[];
  assistant: AssistantOut | null;
  /** Text the model produced in this response. */
  text: string;
  inputChars: number;
  failed: { code: string; message: string } | null;
}

/** Function calls of one response, waiting for the client's outputs and response.create. */
interface ToolRound {
  turnId: number;
  resp: WireResponse;
  calls: Map<string, CallOut>;
  outputs: Map<string, string>;
  released: boolean;
  ended: boolean;
  waitStarted: boolean;
  waiters: { callId: string; resolve: (output: string | null) => void }[];
  poll: NodeJS.Timeout | null;
  timer: NodeJS.Timeout | null;
}

interface BrainHooks {
  current(): WireResponse | null;
  event(resp: WireResponse, ev: BrainEvent): void;
  request(resp: WireResponse, chars: number): void;
}

/** The OpenAI-compatible brain with the client's instructions verbatim, reporting what it produces to the socket. */
class S2sBrain extends LlmBrain {
  private target: WireResponse | null = null;

  constructor(
    opts: Omit<LlmBrainOptions, 'systemPrompt'>,
    private readonly instructions: string,
    private readonly hooks: BrainHooks,
  ) {
    super({ ...opts, systemPrompt: '' });
  }

  override async *reply(userText: string | null, ctx: BrainContext): AsyncGenerator<BrainEvent> {
    const target = this.hooks.current();
    this.target = target;
    let spoke = false;
    let broke = false;
    for await (const ev of super.reply(userText, ctx)) {
      if (ev.type === 'text') spoke = true;
      else if (ev.type === 'tool_call' && spoke && !broke) {
        // A line break ends the phrase being gathered for synthesis, so what the model said before calling a tool
        // is spoken now, in the function-call response, not after the tool output arrives.
        broke = true;
        yield { type: 'text', text: '\n' };
      }
      if (target && !ctx.signal.aborted) this.hooks.event(target, ev);
      yield ev;
    }
  }

  override requestBody(ctx: BrainContext): Record<string, unknown> {
    const body = super.requestBody(ctx);
    const messages = body.messages as Record<string, unknown>[];
    if (this.instructions.trim()) messages.unshift({ role: 'system', content: this.instructions });
    if (this.target) {
      let chars = body.tools ? JSON.stringify(body.tools).length : 0;
      for (const m of messages) chars += (typeof m.content === 'string' ? m.content.length : 0) + (m.tool_calls ? JSON.stringify(m.tool_calls).length : 0);
      this.hooks.request(this.target, chars);
    }
    return body;
  }
}

class S2sConnection implements WsSession {
  private readonly sessionId = randomUUID();
  private readonly idBase = randomBytes(6).toString('hex');
  private seq = 0;
  private readonly maxBuffered: number;
  private readonly toolTimeoutMs: number;
  private session: AgentSession | null = null;
  private brain: S2sBrain | null = null;
  /** The brain's function list: replaced in place by session.update. */
  private readonly functions: FunctionTool[] = [];
  private applied: Applied | null = null;
  /** A session.configure waiting for its pronunciation dictionaries (later configures are ignored meanwhile). */
  private configuring = false;
  private lastItemId: string | null = null;
  private user: { id: string; prev: string | null; startMs: number; stopMs: number | null } | null = null;
  private resp: WireResponse | null = null;
  private round: ToolRound | null = null;
  /** The engine turn in progress, and how many of its words earlier responses of it already carried. */
  private turnId: number | null = null;
  private priorWords = 0;
  private cancelling = false;
  private closing = false;
  private closeCode: number | null = null;
  private fatal: 'server_full' | 'internal_error' | null = null;
  /** Input audio since session.configured, ms (the clock of speech events). */
  private inputMs = 0;
  private lastPong = Date.now();
  private lastActivity = Date.now();
  private readonly pinger: NodeJS.Timeout;

  constructor(
    private readonly conn: WsConnection,
    private readonly model: S2sModel,
    private readonly deps: S2sDeps,
    private readonly auth?: AuthContext,
  ) {
    this.toolTimeoutMs = deps.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    // PCM16 at 48 kHz, base64 (4/3), plus JSON framing.
    this.maxBuffered = Math.max(256 * 1024, Math.round(MAX_BUFFER_SECONDS * OUT_RATE * 2 * (4 / 3) * 1.1));
    this.pinger = setInterval(() => this.tick(), PING_MS);
    if (model === 'hydra') this.send('warning', { code: 'model_deprecated', message: `Model "hydra" is deprecated; use ${CURRENT_MODEL}` });
    this.send('session.created', { session_id: this.sessionId });
  }

  // ---------------------------------------------------------------------------------------------------- socket
  onMessage(data: Buffer, isBinary: boolean): void {
    if (this.closing) return;
    this.lastActivity = Date.now();
    if (isBinary) {
      this.error('invalid_frame', 'binary frames are not used; send JSON text frames', { param: null });
      return;
    }
    let msg: Record<string, unknown>;
    try {
      const parsed = JSON.parse(data.toString('utf8')) as unknown;
      if (!isObject(parsed)) throw new Error('not an object');
      msg = parsed;
    } catch {
      this.error('invalid_frame', 'each frame must be a JSON object with a type');
      return;
    }
    const eventId = typeof msg.event_id === 'string' ? msg.event_id : null;
    // Routed by the client-frame union (s2s-messages.ts); each handler checks its frame's fields.
    const frame = parseS2sClientFrame(msg);
    try {
      switch (frame?.type) {
        case 'session.configure':
          return this.configure(msg, eventId);
        case 'session.update':
          return this.update(msg, eventId);
        case 'input_audio_buffer.append':
          return this.append(msg, eventId);
        case 'conversation.item.create':
          return this.createItem(msg, eventId);
        case 'response.create':
          return this.responseCreate(eventId);
        case 'response.cancel':
          return this.responseCancel(msg);
        default:
          this.error('invalid_frame', `unknown frame type ${JSON.stringify(msg.type ?? null)}`, { param: 'type', eventId });
      }
    } catch (err) {
      this.deps.logger.error({ err: err instanceof Error ? err.message : String(err), sessionId: this.sessionId }, 's2s frame handling failed');
      this.fatal = 'internal_error';
      this.error('internal_error', 'Internal server error', { type: 'server_error', eventId });
      this.shutdown(1011, 'internal_error');
    }
  }

  onPong(): void {
    this.lastPong = Date.now();
  }

  onClose(): void {
    clearInterval(this.pinger);
    this.closing = true;
    if (this.round) this.endRound(this.round, 'the session closed');
    this.session?.end('websocket_closed');
  }

  private tick(): void {
    if (this.closing || this.conn.closed) return;
    const now = Date.now();
    if (now - this.lastPong > STALL_MS) {
      this.deps.logger.info({ sessionId: this.sessionId }, 's2s client stopped reading; disconnecting');
      this.shutdown(1008, 'client_too_slow');
      return;
    }
    if (now - this.lastActivity > IDLE_MS) {
      this.shutdown(1000, 'idle_timeout');
      return;
    }
    this.conn.ping();
  }

  /** Ends the session (if any) and closes with `code`. */
  private shutdown(code: number, reason: string): void {
    if (this.closeCode !== null) return;
    this.closeCode = code;
    if (this.session && !this.session.ended) {
      this.session.end(reason); // its `ended` event closes the socket
      return;
    }
    clearInterval(this.pinger);
    this.closing = true;
    this.conn.close(code, reason);
  }

  private nextId(prefix: string): string {
    return `${prefix}_${this.idBase}${(++this.seq).toString(36).padStart(4, '0')}`;
  }

  private send(type: string, fields: Record<string, unknown>): void {
    if (this.closing || this.conn.closed) return;
    if (this.conn.bufferedAmount() > this.maxBuffered) {
      this.deps.logger.info({ sessionId: this.sessionId, buffered: this.conn.bufferedAmount() }, 's2s client too slow; disconnecting');
      this.shutdown(1008, 'client_too_slow');
      return;
    }
    this.lastActivity = Date.now();
    this.conn.sendJson({ type, event_id: this.nextId('sv'), ...fields });
  }

  private error(code: string, message: string, opts: { type?: 'invalid_request_error' | 'server_error'; param?: string | null; eventId?: string | null } = {}): void {
    this.send('error', { error: { type: opts.type ?? 'invalid_request_error', code, message, param: opts.param ?? null, event_id: opts.eventId ?? null } });
  }

  // ---------------------------------------------------------------------------------------------------- client frames
  private configure(msg: Record<string, unknown>, eventId: string | null): void {
    if (this.applied || this.configuring) return; // exactly one configure is applied; later ones are ignored
    const fail = (param: string | null, message: string, code = 'invalid_request_error') => this.error(code, message, { param, eventId });
    const llm = this.deps.llm;
    if (!llm) {
      fail(null, `No language model is configured on this server: set ${DEFAULT_LLM_SETTING} (and PARLEY_LLM_MODEL) to an OpenAI-compatible endpoint`, 'model_not_configured');
      return;
    }
    const P = 'session.configure.session';
    const raw = msg.session ?? {};
    if (!isObject(raw)) return fail(P, `${P} must be an object`);
    if (raw.instructions !== undefined && typeof raw.instructions !== 'string') return fail(`${P}.instructions`, `${P}.instructions must be a string`);
    if (raw.generate_initial_response !== undefined && typeof raw.generate_initial_response !== 'boolean') {
      return fail(`${P}.generate_initial_response`, `${P}.generate_initial_response must be a boolean`);
    }
    const voice = raw.voice === undefined ? DEFAULT_VOICE : raw.voice;
    const table = S2S_VOICES[this.model];
    // The model's names and the default; each speaks as the nearest voice here (the voice table, voice-table.ts).
    const spoken = typeof voice === 'string' && (table.includes(voice) || voice === DEFAULT_VOICE) ? this.deps.registry.chooseVoice({ voiceId: voice, mode: 'request' }) : undefined;
    if (typeof voice !== 'string' || !spoken || !('voiceId' in spoken)) {
      return fail(`${P}.voice`, `${P}.voice: unknown voice ${JSON.stringify(voice)} for ${this.model} (one of ${table.join(', ')})`);
    }
    let tools: WireTool[] = [];
    if (raw.tools !== undefined) {
      const parsed = parseTools(raw.tools, `${P}.tools`, false);
      if (!Array.isArray(parsed)) return fail(parsed.param, parsed.message);
      tools = parsed;
    }
    const instructions = typeof raw.instructions === 'string' ? raw.instructions : '';
    const generate = raw.generate_initial_response === true;
    // Our extension, as on POST /tts: pronunciation dictionary ids whose words the voice says as their pronunciation.
    const dicts = raw.pronunciation_dicts;
    if (dicts !== undefined) {
      if (!Array.isArray(dicts) || dicts.length > 20 || !dicts.every((d) => typeof d === 'string' && d.length > 0 && d.length <= 64)) {
        return fail(`${P}.pronunciation_dicts`, `${P}.pronunciation_dicts must be an array of at most 20 pronunciation dictionary ids`);
      }
      this.configuring = true;
      void pronunciationRules(this.deps.db, this.auth, dicts as string[]).then(
        (rules) => {
          this.configuring = false;
          if (!this.closing) this.begin(llm, spoken.voiceId, voice, tools, instructions, generate, rules);
        },
        (err: unknown) => {
          this.configuring = false;
          fail(`${P}.pronunciation_dicts`, `${P}.${err instanceof Error ? err.message : String(err)}`);
        },
      );
      return;
    }
    this.begin(llm, spoken.voiceId, voice, tools, instructions, generate);
  }

  /** Starts the configured session (`rules`: what its words are said as). */
  private begin(llm: LlmEndpoint, localVoice: string, voice: string, tools: WireTool[], instructions: string, generate: boolean, rules?: SpeechTextRules): void {
    this.functions.splice(0, this.functions.length, ...tools.map(toFunction));
    this.brain = new S2sBrain({ endpoint: llm, tools: this.functions }, instructions, {
      current: () => this.resp,
      event: (resp, ev) => this.onBrainEvent(resp, ev),
      request: (resp, chars) => {
        resp.inputChars += chars;
      },
    });
    this.applied = { instructions, voice, tools, generate_initial_response: generate };
    this.session = new AgentSession({
      mode: 'webcall',
      conversationType: 'webcall',
      spec: { ...s2sSpec(localVoice, instructions), speechText: rules },
      brain: this.brain,
      variables: {},
      models: registryModels(this.deps.registry),
      inputRate: IN_RATE,
      inputEncoding: 'linear16',
      outputRate: OUT_RATE,
      emit: (e) => this.onEvent(e),
      runTool: (call) => this.awaitToolOutput(call),
    });
    this.session.start();
    this.send('session.configured', { session: { ...this.applied, tools: [...tools] } });
    if (generate) this.session.continueReply();
  }

  private update(msg: Record<string, unknown>, eventId: string | null): void {
    const bad = (param: string, message: string) => this.error('invalid_frame', message, { param, eventId });
    const extra = Object.keys(msg).find((k) => !['type', 'event_id', 'session'].includes(k));
    if (extra) return bad(extra, `session.update: unknown field "${extra}"`);
    const P = 'session.update.session';
    if (!isObject(msg.session)) return bad(P, `${P} must be an object`);
    const unknown = Object.keys(msg.session).find((k) => k !== 'tools');
    if (unknown) return bad(`${P}.${unknown}`, `session.update applies only tools; unknown field "${unknown}"`);
    if (!this.applied) {
      this.error('invalid_request_error', 'session.update needs a configured session: send session.configure first', { eventId });
      return;
    }
    if (!('tools' in msg.session)) return; // a no-op patch
    const parsed = parseTools(msg.session.tools, `${P}.tools`, true);
    if (!Array.isArray(parsed)) return bad(parsed.param, parsed.message);
    if (JSON.stringify(parsed) === JSON.stringify(this.applied.tools)) return;
    this.applied.tools = parsed;
    this.functions.splice(0, this.functions.length, ...parsed.map(toFunction));
    this.send('session.updated', { session: { tools: [...parsed] } });
  }

  private append(msg: Record<string, unknown>, eventId: string | null): void {
    const session = this.session;
    if (!session) return; // audio before session.configured is dropped
    const audio = msg.audio;
    const bad = (message: string) => this.error('invalid_audio', message, { param: 'audio', eventId });
    if (typeof audio !== 'string' || audio.length % 4 === 1 || !BASE64.test(audio)) return bad('audio must be base64 of PCM16 mono 16 kHz samples');
    const bytes = Buffer.from(audio, 'base64');
    if (bytes.length < MIN_AUDIO_BYTES) return bad(`audio frame too short: ${bytes.length} bytes (at least ${MIN_AUDIO_BYTES}: 10 ms of PCM16 at 16 kHz; send 20-40 ms)`);
    if (bytes.length % 2 !== 0) return bad(`audio must be whole 16-bit samples (got an odd ${bytes.length} bytes)`);
    this.inputMs += bytes.length / 2 / (IN_RATE / 1000);
    session.pushAudio(bytes);
  }

  private createItem(msg: Record<string, unknown>, eventId: string | null): void {
    const fail = (param: string | null, message: string) => this.error('invalid_request_error', message, { param, eventId });
    if (!this.session) return fail(null, 'conversation.item.create needs a configured session');
    const item = msg.item;
    if (!isObject(item)) return fail('item', 'item must be an object');
    if (item.type !== 'function_call_output') return fail('item.type', 'only function_call_output items can be created');
    if (typeof item.call_id !== 'string' || !item.call_id) return fail('item.call_id', 'item.call_id is required');
    if (typeof item.output !== 'string') return fail('item.output', 'item.output must be a string');
    if (item.id !== undefined && (typeof item.id !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(item.id))) return fail('item.id', 'item.id must be 1-64 characters of letters, digits, _ . -');
    const round = this.round;
    if (!round || round.released || round.ended || !round.calls.has(item.call_id)) {
      return fail('item.call_id', `no function call ${JSON.stringify(item.call_id)} is waiting for an output`);
    }
    if (round.outputs.has(item.call_id)) return fail('item.call_id', `function call ${JSON.stringify(item.call_id)} already has an output`);
    round.outputs.set(item.call_id, item.output);
    const id = typeof item.id === 'string' ? item.id : this.nextId('item');
    const prev = this.lastItemId;
    this.lastItemId = id;
    const out = { id, type: 'function_call_output', status: 'completed', call_id: item.call_id, output: item.output };
    this.send('conversation.item.added', { previous_item_id: prev, item: out });
    this.send('conversation.item.done', { previous_item_id: prev, item: out });
  }

  private responseCreate(eventId: string | null): void {
    const session = this.session;
    if (!session) {
      this.error('invalid_request_error', 'response.create needs a configured session', { eventId });
      return;
    }
    const round = this.round;
    if (round && !round.released && !round.ended) {
      this.release(round);
      return;
    }
    if (this.turnId !== null) {
      this.error('invalid_request_error', 'A response is already in progress; send response.cancel first', { eventId });
      return;
    }
    session.continueReply();
  }

  private responseCancel(msg: Record<string, unknown>): void {
    const session = this.session;
    if (!session || this.turnId === null) return; // nothing in flight
    if (typeof msg.response_id === 'string' && msg.response_id !== this.resp?.id) return;
    this.cancelling = true;
    try {
      session.cancelResponse();
    } finally {
      this.cancelling = false;
    }
  }

  // ---------------------------------------------------------------------------------------------------- engine events
  private onEvent(e: SessionEvent): void {
    switch (e.type) {
      case 'user_speech_started':
        this.userStarted(e.audioMs);
        break;
      case 'user_speech_stopped':
        if (this.user) this.user.stopMs = e.audioMs;
        break;
      case 'user_transcript':
        this.userDone('completed', e.text);
        break;
      case 'user_turn_discarded':
        this.userDone('incomplete', null);
        break;
      case 'agent_turn_started':
        this.turnStarted(e.turnId);
        break;
      case 'agent_turn_ended':
        this.turnEnded(e.turnId, e.status, e.text);
        break;
      case 'audio':
        this.audioOut(e.samples);
        break;
      case 'error':
        this.sessionError(e.code, e.message);
        break;
      case 'ended':
        this.sessionEnded(e.reason);
        break;
      default:
        break;
    }
  }

  private userStarted(audioMs: number): void {
    if (this.user) this.userDone('incomplete', null);
    const id = this.nextId('item');
    const prev = this.lastItemId;
    this.lastItemId = id;
    this.user = { id, prev, startMs: audioMs, stopMs: null };
    this.send('input_audio_buffer.speech_started', { audio_start_ms: Math.round(audioMs), item_id: id });
    this.send('conversation.item.added', { previous_item_id: prev, item: { id, type: 'message', role: 'user', status: 'in_progress', content: [{ type: 'input_audio', text: null, transcript: null }] } });
  }

  private userDone(status: 'completed' | 'incomplete', transcript: string | null): void {
    let u = this.user;
    if (!u) {
      if (status === 'incomplete') return;
      // A user turn without speech events (not produced by this socket today): add the item first.
      const id = this.nextId('item');
      u = { id, prev: this.lastItemId, startMs: this.inputMs, stopMs: this.inputMs };
      this.lastItemId = id;
      this.send('conversation.item.added', { previous_item_id: u.prev, item: { id, type: 'message', role: 'user', status: 'in_progress', content: [{ type: 'input_audio', text: null, transcript: null }] } });
    } else {
      this.send('input_audio_buffer.speech_stopped', { audio_end_ms: Math.round(u.stopMs ?? this.inputMs), item_id: u.id });
    }
    this.user = null;
    this.send('conversation.item.done', { previous_item_id: u.prev, item: { id: u.id, type: 'message', role: 'user', status, content: [{ type: 'input_audio', text: null, transcript }] } });
  }

  private turnStarted(turnId: number): void {
    if (this.resp) this.closeResponse(this.resp, 'cancelled', this.resp.text.trim(), 'interrupted');
    this.turnId = turnId;
    this.priorWords = 0;
    this.openResponse(turnId);
  }

  private openResponse(turnId: number): WireResponse {
    const resp: WireResponse = { id: this.nextId('resp'), turnId, closed: false, outputs: [], assistant: null, text: '', inputChars: 0, failed: null };
    this.resp = resp;
    this.send('response.created', { response: { id: resp.id } });
    return resp;
  }

  private turnEnded(turnId: number, status: 'completed' | 'interrupted' | 'cancelled', text: string): void {
    if (this.turnId === turnId) this.turnId = null;
    const resp = this.resp;
    if (resp && resp.turnId === turnId) {
      if (this.session?.ended) {
        // The socket is closing: no response.done.
        resp.closed = true;
        this.resp = null;
      } else {
        const transcript = this.priorWords ? words(text).slice(this.priorWords).join(' ') : text.trim();
        if (status === 'completed') this.closeResponse(resp, resp.failed ? 'failed' : 'completed', transcript);
        else this.closeResponse(resp, 'cancelled', transcript, status === 'cancelled' && this.cancelling ? 'client_cancelled' : 'interrupted');
      }
    }
    const round = this.round;
    if (round && round.turnId === turnId) {
      this.endRound(round, status === 'interrupted' ? 'the user interrupted before the tool output arrived' : this.cancelling ? 'the client cancelled the response' : 'the turn was abandoned before the tool output arrived');
    }
  }

  private ensureAssistant(resp: WireResponse): AssistantOut {
    if (resp.assistant) return resp.assistant;
    const a: AssistantOut = { kind: 'message', id: this.nextId('item'), prev: this.lastItemId };
    this.lastItemId = a.id;
    resp.assistant = a;
    resp.outputs.push(a);
    this.send('conversation.item.added', { previous_item_id: a.prev, item: { id: a.id, type: 'message', role: 'assistant', status: 'in_progress', content: [] } });
    return a;
  }

  private audioOut(samples: Float32Array): void {
    const resp = this.resp;
    if (!resp || resp.closed) return;
    const a = this.ensureAssistant(resp);
    this.send('response.output_audio.delta', {
      response_id: resp.id,
      item_id: a.id,
      output_index: resp.outputs.indexOf(a),
      content_index: 0,
      delta: encodeLinear16(samples).toString('base64'),
    });
  }

  private callItem(c: CallOut, status: 'in_progress' | 'completed'): Record<string, unknown> {
    return { id: c.id, type: 'function_call', status, call_id: c.call.id, name: c.call.name, arguments: status === 'completed' ? c.call.arguments : '' };
  }

  private closeResponse(resp: WireResponse, status: 'completed' | 'cancelled' | 'failed', transcript: string, reason?: 'client_cancelled' | 'interrupted'): void {
    if (resp.closed) return;
    resp.closed = true;
    if (this.resp === resp) this.resp = null;
    const output: Record<string, unknown>[] = [];
    let outChars = resp.text.length;
    for (const [index, o] of resp.outputs.entries()) {
      if (o.kind === 'message') {
        this.send('response.output_audio.done', { response_id: resp.id, item_id: o.id, output_index: index, content_index: 0 });
        const item = { id: o.id, type: 'message', role: 'assistant', status: status === 'completed' ? 'completed' : 'incomplete', content: [{ type: 'output_audio', text: null, transcript }] };
        this.send('conversation.item.done', { previous_item_id: o.prev, item });
        output.push(item);
      } else {
        outChars += o.call.arguments.length + o.call.name.length;
        output.push(this.callItem(o, 'completed'));
      }
    }
    const details =
      status === 'completed'
        ? null
        : status === 'cancelled'
          ? { type: 'cancelled', reason: reason ?? 'interrupted' }
          : { type: 'failed', reason: null, error: { type: 'server_error', code: resp.failed?.code ?? 'internal_error', message: resp.failed?.message ?? '' } };
    const input = tokens(resp.inputChars);
    const out = tokens(outChars);
    this.send('response.done', { response: { id: resp.id, status, status_details: details, output, usage: { input_tokens: input, output_tokens: out, total_tokens: input + out } } });
  }

  private sessionError(code: string, message: string): void {
    if (code === 'internal_error') {
      this.fatal = message === CAPACITY_MESSAGE ? 'server_full' : 'internal_error';
      if (this.fatal === 'internal_error') this.deps.logger.warn({ sessionId: this.sessionId, message }, 's2s session failed');
      this.error(this.fatal, this.fatal === 'server_full' ? 'The server is at capacity; reconnect with backoff' : `Internal error: ${message}`, { type: 'server_error' });
      return;
    }
    if (this.resp?.failed?.code === code) return; // reported by the response's response.done (failed)
    if (code === 'tool_unavailable') return;
    if (code === 'invalid_audio') {
      this.error('invalid_audio', message, { param: 'audio' });
      return;
    }
    this.error(code, message, { type: 'server_error' });
  }

  private sessionEnded(reason: string): void {
    clearInterval(this.pinger);
    if (this.round) this.endRound(this.round, 'the session ended');
    if (reason === 'websocket_closed') return;
    const code = this.fatal === 'server_full' ? 1013 : this.fatal === 'internal_error' || reason === 'error' ? 1011 : (this.closeCode ?? 1000);
    this.closing = true;
    this.conn.close(code, reason);
  }

  // ---------------------------------------------------------------------------------------------------- tools
  private onBrainEvent(resp: WireResponse, ev: BrainEvent): void {
    if (resp.closed) return;
    if (ev.type === 'text') {
      resp.text += ev.text;
      this.ensureAssistant(resp);
    } else if (ev.type === 'tool_call') {
      this.functionCall(resp, ev.call);
    } else if (ev.type === 'error') {
      resp.failed ??= { code: ev.code, message: ev.message };
    }
  }

  private functionCall(resp: WireResponse, call: ToolCall): void {
    let round = this.round;
    if (!round || round.resp !== resp) {
      if (round) this.endRound(round, 'a newer response replaced it');
      round = { turnId: resp.turnId, resp, calls: new Map(), outputs: new Map(), released: false, ended: false, waitStarted: false, waiters: [], poll: null, timer: null };
      this.round = round;
    }
    const c: CallOut = { kind: 'call', id: this.nextId('item'), prev: this.lastItemId, call };
    this.lastItemId = c.id;
    resp.outputs.push(c);
    round.calls.set(call.id, c);
    const output_index = resp.outputs.length - 1;
    this.send('conversation.item.added', { previous_item_id: c.prev, item: this.callItem(c, 'in_progress') });
    this.send('response.function_call_arguments.delta', { response_id: resp.id, item_id: c.id, output_index, call_id: call.id, name: call.name, delta: call.arguments });
    this.send('response.function_call_arguments.done', { response_id: resp.id, item_id: c.id, output_index, call_id: call.id, name: call.name, arguments: call.arguments });
    this.send('conversation.item.done', { previous_item_id: c.prev, item: this.callItem(c, 'completed') });
  }

  /** The session's runTool: resolves with the client's output once it sent response.create; null when abandoned. */
  private awaitToolOutput(call: ToolCall): Promise<string | null> {
    const round = this.round;
    if (!round || round.ended || !round.calls.has(call.id)) return Promise.resolve(null);
    if (round.released) return Promise.resolve(this.outputFor(round, call.id));
    return new Promise((resolve) => {
      round.waiters.push({ callId: call.id, resolve });
      this.beginToolWait(round);
    });
  }

  private outputFor(round: ToolRound, callId: string): string {
    return round.outputs.get(callId) ?? JSON.stringify({ error: 'The client returned no output for this call' });
  }

  /** Ends the function-call response once the speech before the call has been sent, then starts the tool window. */
  private beginToolWait(round: ToolRound): void {
    if (round.waitStarted) return;
    round.waitStarted = true;
    const check = () => {
      round.poll = null;
      if (round.ended || round.released) return;
      if (this.session?.speaking) {
        round.poll = setTimeout(check, 20);
        return;
      }
      this.closeForTools(round);
      round.timer = setTimeout(() => this.toolTimeout(round), this.toolTimeoutMs);
    };
    check();
  }

  private closeForTools(round: ToolRound): void {
    const resp = round.resp;
    if (resp.closed) return;
    this.priorWords += words(resp.text).length;
    this.closeResponse(resp, 'completed', resp.text.trim());
  }

  private release(round: ToolRound): void {
    round.released = true;
    if (round.poll) clearTimeout(round.poll);
    if (round.timer) clearTimeout(round.timer);
    round.poll = round.timer = null;
    this.closeForTools(round);
    this.openResponse(round.turnId);
    for (const w of round.waiters.splice(0)) w.resolve(this.outputFor(round, w.callId));
  }

  private toolTimeout(round: ToolRound): void {
    round.timer = null;
    if (round.released || round.ended) return;
    this.error('tool_response_timeout', `No function_call_output and response.create within ${this.toolTimeoutMs / 1000} s; the turn is abandoned`);
    // The results go into the history first, so the cancel keeps the reply the user fully heard.
    this.endRound(round, 'the tool output did not arrive in time');
    this.session?.cancelResponse();
  }

  /** The round is over without (or after) release: the model is told the outcome of calls it never got, waiters freed. */
  private endRound(round: ToolRound, why: string): void {
    if (round.ended) return;
    round.ended = true;
    if (round.poll) clearTimeout(round.poll);
    if (round.timer) clearTimeout(round.timer);
    round.poll = round.timer = null;
    if (!round.released) {
      // Keeps the model's history valid: every tool call it made is followed by a result.
      for (const id of round.calls.keys()) this.brain?.addToolResult(id, round.outputs.get(id) ?? JSON.stringify({ error: `No result: ${why}` }));
    }
    for (const w of round.waiters.splice(0)) w.resolve(null);
    if (this.round === round) this.round = null;
  }
}
