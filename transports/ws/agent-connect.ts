// WSS /agent/connect: the realtime agent session (wire: agent-session-ws.md). Auth by single-use wct_ token or API key
// plus agent_id, checked before the upgrade; then engine session events <-> JSON frames, with backpressure.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ApiError, badRequest, unauthorized } from '../../control-plane/errors.js';
import { consumeCallToken, isCallTokenShaped, restoreCallToken, type CallTokenClaims } from '../../control-plane/calls/call-tokens.js';
import { callTargetOfClaims, resolveCallConfig, type ResolvedCallConfig } from '../../control-plane/calls/call-config.js';
import { parseCallVariables } from '../../control-plane/calls/variables.js';
import type { Db } from '../../control-plane/store/db.js';
import type { SessionEvent } from '../../engine/agent/session.js';
import { encodeLinear16 } from '../../engine/audio/codecs.js';
import type { HttpServer } from '../http/server.js';
import { docs, type HttpRequest } from '../http/types.js';
import { bearerToken } from '../http/auth.js';
import type { CallRuntime, RunningCall } from '../../calls/runtime.js';
import { wsRoute, type WsConnection, type WsSession } from './endpoint.js';
import { RefusalWindow, TokenBucket } from './message-rate.js';
import { MAX_AUDIO_BYTES, parseAgentClientMessage } from './agent-messages.js';
import { ownerOf, type SessionLimits } from '../../calls/session-limits.js';

export const AGENT_SAMPLE_RATES = [8000, 16000, 24000, 48000] as const;
const MODES = ['webcall', 'chat'] as const;
type Mode = (typeof MODES)[number];

/** Output queued in the socket beyond this many seconds of audio means the client is not keeping up. */
const MAX_BUFFER_SECONDS = 3;
/**
 * Liveness: a ping every PING_MS; a pong missing for STALL_MS means the client stopped reading (its pong waits behind
 * everything queued for it, kernel buffers included, which can hold tens of seconds of audio before the server's own
 * send buffer grows) or is gone.
 */
const PING_MS = 2000;
const STALL_MS = 8000;
/** Decoded audio per append message (16 s at 48 kHz) and text per message. */
/**
 * Inbound rate per session. Messages of any kind: 1000 a second (bursts of 2000), far above any audio framing (a
 * 128-sample frame at 48 kHz is 375 a second). Audio by its duration: twice real time, with bursts of 20 s (one
 * append may carry 16 s). Text turns: a person types a few a minute, a test script a few a second. Excess gets
 * `error` rate_limited; more than REFUSALS_BEFORE_CLOSE refusals within REFUSAL_WINDOW_MS end the session with
 * reason rate_limited (close 1008).
 */
export const MESSAGE_RATE = { burst: 2000, perSecond: 1000 };
export const AUDIO_RATE = { burstSeconds: 20, secondsPerSecond: 2 };
export const TEXT_RATE = { burst: 10, perSecond: 2 };
const REFUSALS_BEFORE_CLOSE = 50;
const REFUSAL_WINDOW_MS = 10_000;
/** Messages kept while the session is being created (its first second); more are refused with `session_not_ready`. */
const MAX_EARLY = 64;

interface Prepared {
  /** Whom the session counts against under the session caps: its key, or the organization of its wct_ token. */
  owner: string;
  /** The wct_ token redeemed for this session, given back if the session is refused a place. */
  token?: string;
  resolved: ResolvedCallConfig;
  mode: Mode;
  sampleRate: number;
  variables: Record<string, string | number | boolean>;
  callId: string;
}

export interface AgentConnectDeps {
  db: Db;
  runtime: CallRuntime;
  logger: Logger;
  /** True while the server drains (new sessions get 503). */
  draining(): boolean;
  /** Concurrent-session caps: a voice session is a speech session, a text one a chat session. */
  limits: SessionLimits;
}

export interface AgentSockets {
  /** Ends every open session (server shutdown); resolves once their call records are written. */
  endAll(reason: string): Promise<void>;
}

export function agentConnectSocket(server: HttpServer, prefix: string, deps: AgentConnectDeps): AgentSockets {
  const open = new Set<AgentConnection>();
  wsRoute<Prepared>(server, deps.logger, `${prefix}/agent/connect`, {
    auth: 'none',
    maxPayloadBytes: 2 * 1024 * 1024,
    doc: docs('Agent sessions')('Talk to an agent (voice or chat) over a WebSocket', {
      description:
        'Credential: a single-use `wct_` call token (from register-call or a test call) as `token` or `Authorization: ' +
        'Bearer`, or an API key with `agent_id`. Client: `input_audio_buffer.append` (base64 PCM16 at `sample_rate`), ' +
        '`input_text.send` (chat), `function_call.result`, `session.close`. Server: `session.created`, `transcript.delta`/' +
        '`transcript` (user and assistant), `agent_start_talking`, `output_audio.delta` (base64 PCM16), ' +
        '`agent_stop_talking`, `interruption`, `function_call` (client tools), `error`, `session.closed`.',
      query: [
        { name: 'token', description: 'A `wct_` call token (single use).' },
        { name: 'agent_id', description: 'With an API key instead of a token.' },
        { name: 'mode', schema: { type: 'string', enum: ['webcall', 'chat'] } },
        { name: 'sample_rate', schema: { type: 'integer', default: 24000 } },
        { name: 'variables', description: 'JSON object of call variables (with an API key).' },
      ],
    }),
    prepare: (req) => prepare(server, deps, req),
    admit: async (prepared) => {
      try {
        const { agent } = prepared.resolved;
        return deps.limits.acquire(prepared.mode === 'chat' ? 'chat' : 'speech', prepared.owner, { orgId: agent.org_id, agentId: agent.id, channel: prepared.mode === 'chat' ? 'chat' : 'webcall' });
      } catch (err) {
        // Refused a place: the single-use token stays usable for the retry the refusal asks for.
        if (prepared.token) await restoreCallToken(deps.db, prepared.token);
        throw err;
      }
    },
    open: (conn, prepared) => new AgentConnection(conn, prepared, deps, open),
  });
  return {
    async endAll(reason) {
      await Promise.all([...open].map((c) => c.end(reason)));
    },
  };
}

async function prepare(server: HttpServer, deps: AgentConnectDeps, req: HttpRequest): Promise<Prepared> {
  if (deps.draining()) throw new ApiError(503, 'Server is draining; retry with backoff');
  const queryToken = req.query.get('token');
  const headerToken = bearerToken(req);
  if (queryToken && headerToken) throw unauthorized('Send the token as the token query parameter or the Authorization header, not both');
  const presented = queryToken ?? headerToken;
  if (!presented) throw unauthorized('Unauthorized: missing token (token=wct_... or an API key)');

  if (isCallTokenShaped(presented)) {
    const claims = await consumeCallToken(deps.db, presented);
    if (!claims) throw unauthorized('Session token is invalid, expired or already used');
    const resolved = await resolveClaims(deps.db, claims);
    return { owner: `org:${claims.orgId}`, token: presented, resolved, mode: claims.mode, sampleRate: claims.sampleRate, variables: claims.variables, callId: claims.callId ?? deps.runtime.newCallId() };
  }

  // An API key: the session parameters come from the query.
  req.headers.authorization = `Bearer ${presented}`;
  await server.authenticate(req, 'key');
  const auth = req.auth;
  if (!auth) throw unauthorized();
  const agentId = req.query.get('agent_id');
  if (!agentId) throw unauthorized('agent_id is required with an API key');
  const mode = (req.query.get('mode') ?? 'webcall') as Mode;
  if (!MODES.includes(mode)) throw badRequest(`mode: must be one of ${MODES.join(', ')}`);
  const rateText = req.query.get('sample_rate') ?? '24000';
  const sampleRate = Number(rateText);
  if (!/^\d+$/.test(rateText) || !(AGENT_SAMPLE_RATES as readonly number[]).includes(sampleRate)) {
    throw badRequest(`sample_rate: must be one of ${AGENT_SAMPLE_RATES.join(', ')}`);
  }
  let variables: Record<string, string | number | boolean> = {};
  const rawVars = req.query.get('variables');
  if (rawVars) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawVars);
    } catch {
      throw badRequest('variables: must be URL-encoded JSON');
    }
    const result = parseCallVariables(parsed);
    if (result.errors.length) throw badRequest(result.errors);
    variables = result.variables;
  }
  const resolved = await resolveCallConfig(deps.db, { orgId: auth.orgId, name: auth.keyName }, agentId, { kind: 'live' }).catch((err: unknown) => {
    // The wire answers an unknown (or foreign) agent_id before the upgrade with 401.
    if (err instanceof ApiError && (err.status === 404 || err.status === 403)) throw unauthorized(`Unknown agent_id "${agentId}"`);
    throw err;
  });
  return { owner: ownerOf(auth), resolved, mode, sampleRate, variables, callId: deps.runtime.newCallId() };
}

async function resolveClaims(db: Db, claims: CallTokenClaims): Promise<ResolvedCallConfig> {
  try {
    return await resolveCallConfig(db, { orgId: claims.orgId, name: 'session token' }, claims.agentId, callTargetOfClaims(claims));
  } catch (err) {
    if (err instanceof ApiError && (err.status === 404 || err.status === 403)) throw unauthorized('The agent or configuration of this session token no longer exists');
    throw err;
  }
}

class AgentConnection implements WsSession {
  private call: RunningCall | null = null;
  private readonly sessionId = randomUUID();
  private readonly maxBuffered: number;
  private closing = false;
  /** Client tool calls waiting for `function_call.result`, by call id. */
  private readonly toolCalls = new Map<string, (result: string) => void>();
  private lastPong: number;
  private readonly pinger: NodeJS.Timeout;
  /** Messages that arrived while the session was being created, replayed in order once it is. */
  private early: Record<string, unknown>[] = [];
  private readonly messages = new TokenBucket(MESSAGE_RATE.burst, MESSAGE_RATE.perSecond);
  private readonly texts = new TokenBucket(TEXT_RATE.burst, TEXT_RATE.perSecond);
  private readonly audioSeconds = new TokenBucket(AUDIO_RATE.burstSeconds, AUDIO_RATE.secondsPerSecond);
  /** Set once the session is being ended for its rate: later messages are ignored. */
  private ratedOut = false;
  private readonly refusals = new RefusalWindow(REFUSALS_BEFORE_CLOSE, REFUSAL_WINDOW_MS);

  constructor(
    private readonly conn: WsConnection,
    private readonly prepared: Prepared,
    private readonly deps: AgentConnectDeps,
    private readonly registry: Set<AgentConnection>,
  ) {
    registry.add(this);
    this.lastPong = Date.now();
    this.pinger = setInterval(() => this.checkAlive(), PING_MS);
    this.maxBuffered = Math.max(256 * 1024, Math.round(MAX_BUFFER_SECONDS * prepared.sampleRate * 2 * 1.4));
    conn.sendJson({ type: 'session.created', session_id: this.sessionId, call_id: prepared.callId, sample_rate: prepared.sampleRate, channels: 1 });
    void deps.runtime
      .start(
        {
          resolved: prepared.resolved,
          mode: prepared.mode,
          type: 'webcall',
          isTest: prepared.resolved.configSource !== 'live',
          variables: prepared.variables,
          inputRate: prepared.sampleRate,
          outputRate: prepared.sampleRate,
          callId: prepared.callId,
          clientTools: { call: (toolCall, opts) => this.callClientTool(toolCall, opts) },
        },
        (event) => this.onEvent(event),
      )
      .then(
        (call) => {
          this.call = call;
          if (this.conn.closed) {
            call.session.end(this.ratedOut ? 'rate_limited' : 'websocket_closed');
            return;
          }
          const early = this.early;
          this.early = [];
          for (const m of early) this.handle(m);
        },
        (err: unknown) => {
          const message = err instanceof Error ? err.message : String(err);
          deps.logger.warn({ err: message, callId: prepared.callId }, 'agent session failed to start');
          // A fatal setup failure: an error frame, then close 4000 (no session.closed).
          this.conn.sendJson({ type: 'error', code: err instanceof ApiError ? String(err.status) : 'internal_error', message });
          this.conn.close(4000, 'session setup failed');
        },
      );
  }

  onMessage(data: Buffer, isBinary: boolean): void {
    if (this.closing || this.ratedOut) return;
    if (!this.messages.take()) {
      this.refuse('rate_limited', `more than ${MESSAGE_RATE.perSecond} messages a second`);
      return;
    }
    if (isBinary) {
      this.error('invalid_event', 'binary frames are not accepted; send JSON text frames');
      return;
    }
    let msg: Record<string, unknown>;
    try {
      const parsed = JSON.parse(data.toString('utf8')) as unknown;
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      msg = parsed as Record<string, unknown>;
    } catch {
      this.error('invalid_event', 'each message must be a JSON object with a type');
      return;
    }
    if (msg.type === 'input_text.send' && !this.texts.take()) {
      this.refuse('rate_limited', `more than ${TEXT_RATE.perSecond} text messages a second (bursts of ${TEXT_RATE.burst})`);
      return;
    }
    // Audio by duration (base64: 4 characters for 3 bytes; 16-bit samples at the session rate).
    if (msg.type === 'input_audio_buffer.append' && typeof msg.audio === 'string') {
      const seconds = (msg.audio.length * 3) / 4 / 2 / this.prepared.sampleRate;
      if (!this.audioSeconds.take(seconds)) {
        this.refuse('rate_limited', `audio faster than ${AUDIO_RATE.secondsPerSecond}x real time (bursts of ${AUDIO_RATE.burstSeconds} s)`);
        return;
      }
    }
    if (!this.call) {
      // Kept until the session is ready, or refused: never dropped silently.
      if (this.early.length < MAX_EARLY) this.early.push(msg);
      else this.error('session_not_ready', `the session is starting; at most ${MAX_EARLY} messages are held until it is ready`);
      return;
    }
    this.handle(msg);
  }

  /** A refused message: an error frame; refusals that persist end the session. */
  private refuse(code: string, message: string): void {
    if (!this.refusals.note()) {
      this.error(code, message);
      return;
    }
    this.deps.logger.info({ callId: this.prepared.callId }, 'agent session client kept exceeding its message rate; disconnecting');
    this.ratedOut = true;
    this.error(code, `${message}; the session is closed`);
    if (this.call) this.call.session.end('rate_limited');
    else this.conn.close(1008, 'rate_limited');
  }

  /** Asks the app to run a client tool: `function_call` out, `function_call.result` with the same call_id back. */
  private callClientTool(call: { id: string; name: string; arguments: string }, opts: { timeoutMs: number; expectsResponse: boolean }): Promise<string | null> {
    this.send({ type: 'function_call', call_id: call.id, name: call.name, arguments: call.arguments, expects_response: opts.expectsResponse });
    if (!opts.expectsResponse) return Promise.resolve(null);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.toolCalls.delete(call.id);
        resolve(null);
      }, opts.timeoutMs);
      this.toolCalls.set(call.id, (result) => {
        clearTimeout(timer);
        resolve(result);
      });
    });
  }

  onPong(): void {
    this.lastPong = Date.now();
  }

  private checkAlive(): void {
    if (this.closing || this.conn.closed) return;
    if (Date.now() - this.lastPong > STALL_MS) {
      this.deps.logger.info({ callId: this.prepared.callId }, 'agent session client stopped reading; disconnecting');
      if (this.call) this.call.session.end('client_too_slow');
      else this.conn.close(1008, 'client_too_slow');
      return;
    }
    this.conn.ping();
  }

  onClose(): void {
    clearInterval(this.pinger);
    this.closing = true;
    this.registry.delete(this);
    this.call?.session.end('websocket_closed');
  }

  /** Ends the session with a reason; resolves once the call record is written. */
  async end(reason: string): Promise<void> {
    const call = this.call;
    if (!call) {
      this.conn.close(1001, reason);
      return;
    }
    call.session.end(reason);
    await call.finished;
  }

  private handle(raw: Record<string, unknown>): void {
    const session = this.call?.session;
    if (!session) {
      this.error('no_session', 'the session is not ready');
      return;
    }
    const parsed = parseAgentClientMessage(raw);
    if (!parsed.ok) {
      this.error('invalid_event', parsed.error);
      return;
    }
    const { msg } = parsed;
    switch (msg.type) {
      case 'input_audio_buffer.append': {
        if (this.prepared.mode === 'chat') {
          this.error('invalid_event', 'audio is not accepted in chat mode; send input_text.send');
          return;
        }
        const bytes = Buffer.from(msg.audio, 'base64');
        if (bytes.length === 0 || bytes.length > MAX_AUDIO_BYTES || bytes.length % 2 !== 0) {
          this.error('invalid_event', 'audio must be base64 of 16-bit PCM samples (an even, non-zero number of bytes)');
          return;
        }
        session.pushAudio(bytes);
        return;
      }
      case 'input_audio_buffer.commit':
      case 'session.update':
        return; // accepted, reserved
      case 'input_text.send':
        session.sendText(msg.text);
        return;
      case 'session.close':
        session.end('client_requested');
        return;
      case 'function_call.result': {
        const id = msg.call_id;
        const pending = typeof id === 'string' ? this.toolCalls.get(id) : undefined;
        if (!pending) {
          this.error('invalid_event', `function_call.result: no pending call with call_id ${JSON.stringify(id ?? null)}`);
          return;
        }
        const result = msg.result ?? msg.output;
        this.toolCalls.delete(id as string);
        pending(typeof result === 'string' ? result : JSON.stringify(result ?? null));
        return;
      }
    }
  }

  private onEvent(e: SessionEvent): void {
    if (this.conn.closed) return;
    switch (e.type) {
      case 'user_transcript_delta':
        this.send({ type: 'transcript.delta', role: 'user', text: e.text });
        break;
      case 'user_transcript':
        this.send({ type: 'transcript', role: 'user', text: e.text });
        break;
      case 'agent_start_talking':
        this.send({ type: 'agent_start_talking', timestamp: timestamp() });
        break;
      case 'audio':
        this.send({ type: 'output_audio.delta', audio: encodeLinear16(e.samples).toString('base64') });
        break;
      case 'agent_transcript_delta':
        this.send({ type: 'transcript.delta', role: 'assistant', text: e.text });
        break;
      case 'agent_transcript':
        this.send({ type: 'transcript', role: 'assistant', text: e.text });
        break;
      case 'agent_stop_talking':
        this.send({ type: 'agent_stop_talking', timestamp: timestamp() });
        break;
      case 'interruption':
        this.send({ type: 'interruption' });
        break;
      case 'error':
        this.send({ type: 'error', code: e.code, message: e.message });
        break;
      case 'ended':
        clearInterval(this.pinger);
        this.closing = true;
        this.conn.sendJson({ type: 'session.closed', reason: e.reason });
        // A session ended for breaking the socket's rules closes as a policy violation.
        this.conn.close(e.reason === 'rate_limited' ? 1008 : 1000, e.reason);
        break;
      default:
        break;
    }
  }

  /** Sends a frame unless the client has fallen too far behind; then the session ends with a reason. */
  private send(message: unknown): void {
    if (this.closing) return;
    if (this.conn.bufferedAmount() > this.maxBuffered) {
      this.deps.logger.info({ callId: this.prepared.callId, buffered: this.conn.bufferedAmount() }, 'agent session client too slow; disconnecting');
      this.call?.session.end('client_too_slow');
      return;
    }
    this.conn.sendJson(message);
  }

  private error(code: string, message: string): void {
    this.conn.sendJson({ type: 'error', code, message });
  }
}

/** The wire's timestamp style: ISO without a zone suffix, microseconds (UTC). */
function timestamp(): string {
  return `${new Date().toISOString().slice(0, 23)}000`;
}
