// WSS /tts/live (and /streaming-tts/stream): text arrives in pieces (`continue`, `flush`), audio goes out as base64 PCM frames.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { HttpServer } from '../http/server.js';
import { ApiError } from '../../control-plane/errors.js';
import type { ModelRegistry } from '../../engine/models/registry.js';
import { PhraseChunker } from '../../engine/tts/chunker.js';
import { encodeOutput, OutputStream } from '../../engine/tts/output.js';
import { QueueFullError } from '../../engine/models/queue.js';
import { parseTts, isTtsModel, pronunciationRules, type TtsParams } from '../routes/tts-request.js';
import { speechTransform, type SpeechTextRules, type SpeechTransform } from '../../engine/tts/speech-text.js';
import type { Db } from '../../control-plane/store/db.js';
import { ttsErrorBody } from '../routes/inference-errors.js';
import { inferenceError } from '../http/auth.js';
import { ownerOf, type SessionLimits } from '../../calls/session-limits.js';
import type { AuthContext } from '../../control-plane/auth/keys.js';
import { wsRoute, type WsConnection, type WsSession } from './endpoint.js';
import { docs, type RouteDoc } from '../http/types.js';

/** Past this many queued bytes, synthesis waits for the client to read. */
const BACKPRESSURE_BYTES = 512 * 1024;

interface Options {
  idleSeconds: number;
}

class TtsLiveSession implements WsSession {
  private readonly sessionId = `ws_${randomUUID()}`;
  private requestId = `task_${randomUUID()}`;
  private params: TtsParams | null = null;
  private chunker = new PhraseChunker();
  private output: OutputStream | null = null;
  private work: Promise<void> = Promise.resolve();
  private lastSynthesis: Promise<unknown> = Promise.resolve();
  private idle: NodeJS.Timeout | null = null;
  private drained: (() => void) | null = null;
  private ended = false;
  private completeBackoffMs = 4000;
  /** `word_timestamps: true`: a `word_timestamp` frame per spoken word, before its phrase's audio. */
  private wordTimestamps = false;
  /** Words timed so far (the next frame's `id`) and seconds of audio produced so far (where the next phrase starts). */
  private wordsTimed = 0;
  private streamSeconds = 0;
  /** What phrases are said as: the pronunciation dictionaries the first message naming any names (pronunciation_dicts). */
  private say: Promise<SpeechTransform> | null = null;

  constructor(
    private readonly conn: WsConnection,
    private readonly registry: ModelRegistry,
    private readonly opts: Options,
    private readonly logger: Logger,
    private readonly rules: (dictIds: string[]) => Promise<SpeechTextRules | undefined> = async () => undefined,
  ) {
    this.armIdle();
  }

  onMessage(data: Buffer, isBinary: boolean): void {
    this.armIdle();
    if (this.ended) return;
    let message: Record<string, unknown>;
    try {
      if (isBinary) throw new Error('binary frames are not accepted; send JSON text frames');
      const parsed = JSON.parse(data.toString('utf8')) as unknown;
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('each message must be a JSON object');
      message = parsed as Record<string, unknown>;
    } catch (err) {
      this.error('invalid_request', err instanceof Error ? err.message : 'malformed message');
      return;
    }
    let params: TtsParams;
    try {
      // Later messages of one request may omit what the first one set.
      params = parseTts({ ...this.firstFields(), ...message, text: message.text ?? '' }, this.registry, { textMayBeEmpty: true });
    } catch (err) {
      this.error('invalid_request', err instanceof ApiError ? err.message : 'invalid message');
      return;
    }
    if (message.word_timestamps !== undefined) {
      if (typeof message.word_timestamps !== 'boolean') {
        this.error('invalid_request', 'word_timestamps: must be a boolean');
        return;
      }
      // Only engines that time their words can give them; a voice that cannot is refused rather than silent.
      if (message.word_timestamps && !this.registry.givesWordTimings(params.voiceId)) {
        const timed = this.registry.voices().map((v) => v.voiceId).filter((id) => this.registry.givesWordTimings(id));
        this.error('invalid_request', `word_timestamps: voice "${params.voiceId}" gives no word timings (${timed.length ? `voices that do: ${timed.join(', ')}` : 'no voice here does: RHVoice is not installed'})`);
        return;
      }
      this.wordTimestamps = message.word_timestamps;
    }
    if (typeof message.complete_backoff_ms === 'number' && message.complete_backoff_ms >= 0 && message.complete_backoff_ms <= 10_000) {
      this.completeBackoffMs = message.complete_backoff_ms;
    }
    if (!this.say && params.dictIds.length) {
      this.say = this.rules(params.dictIds).then(speechTransform);
      this.say.catch(() => {});
    }
    if (!this.params) {
      this.params = params;
      this.output = new OutputStream(params.sampleRate);
    }
    const last = message.continue !== true;
    const phrases = [...this.chunker.push(params.text), ...(message.flush === true || last ? this.chunker.flush() : [])];
    for (const phrase of phrases) this.enqueue(phrase);
    if (last) this.finish();
  }

  onClose(): void {
    this.ended = true;
    if (this.idle) clearTimeout(this.idle);
    this.drained?.();
  }

  onDrain(): void {
    if (this.conn.bufferedAmount() < BACKPRESSURE_BYTES) {
      this.drained?.();
      this.drained = null;
    }
  }

  private firstFields(): Record<string, unknown> {
    const p = this.params;
    return p ? { voice_id: p.voiceId, sample_rate: p.sampleRate, speed: p.speed, session_id: p.sessionId ?? undefined, request_id: p.requestId ?? undefined } : {};
  }

  /**
   * Phrases are synthesised one after another (a session holds at most one inference slot, however much text it
   * sends), each starting as soon as the previous one is synthesised, while the previous one is being sent.
   */
  private enqueue(phrase: string): void {
    const p = this.params as TtsParams;
    const say = this.say;
    const audio = this.lastSynthesis.then(async () => this.registry.synthesize(p.voiceId, say ? (await say)(phrase) : phrase, p.speed));
    this.lastSynthesis = audio.catch(() => {});
    this.work = this.work.then(async () => {
      if (this.ended) return;
      try {
        const a = await audio;
        if (this.wordTimestamps) this.sendWords(a.words ?? []);
        this.streamSeconds += a.samples.length / a.sampleRate;
        await this.send((this.output as OutputStream).push(a.samples, a.sampleRate));
      } catch (err) {
        if (err instanceof QueueFullError) this.error('server_busy', 'Speech models are busy; retry shortly');
        else if (err instanceof ApiError && err.status === 400) this.error('invalid_request', err.message);
        else {
          this.logger.error({ err: err instanceof Error ? err.message : String(err) }, 'live synthesis failed');
          this.error('synthesis_failed', 'Synthesis failed');
        }
        this.ended = true;
        this.conn.close(1011, 'synthesis failed');
      }
    });
  }

  /** The last input: after all audio, wait `complete_backoff_ms`, send `complete`, close. */
  private finish(): void {
    this.work = this.work.then(async () => {
      if (this.ended) return;
      await this.send((this.output as OutputStream).flush());
      await new Promise((r) => setTimeout(r, this.completeBackoffMs));
      if (this.ended) return;
      this.conn.sendJson({ ...this.ids(), status: 'complete' });
      this.ended = true;
      this.conn.close(1000, 'complete');
    });
  }

  private async send(samples: Float32Array): Promise<void> {
    if (!samples.length || this.ended) return;
    const p = this.params as TtsParams;
    this.conn.sendJson({ ...this.ids(), status: 'chunk', data: { audio: encodeOutput(samples, p.sampleRate, 'pcm').toString('base64') } });
    if (this.conn.bufferedAmount() >= BACKPRESSURE_BYTES) await new Promise<void>((r) => (this.drained = r));
  }

  /** A phrase's word timings as the wire's `word_timestamp` frames: `id` counts words over the stream, times from its start. */
  private sendWords(words: readonly { word: string; start: number; end: number }[]): void {
    const at = (t: number) => Math.round((this.streamSeconds + t) * 1000) / 1000;
    for (const w of words) {
      if (this.ended) return;
      this.conn.sendJson({ ...this.ids(), status: 'word_timestamp', data: { id: this.wordsTimed++, word: w.word, start: at(w.start), end: at(w.end) } });
    }
  }

  private ids(): Record<string, string> {
    const p = this.params;
    return {
      session_id: this.sessionId,
      request_id: this.requestId,
      ...(p?.sessionId ? { external_session_id: p.sessionId } : {}),
      ...(p?.requestId ? { external_request_id: p.requestId } : {}),
    };
  }

  private error(code: string, message: string): void {
    this.conn.sendJson({ ...this.ids(), status: 'error', error: { message, code } });
  }

  /** Closes after `timeout` seconds without a client message, unless audio is still being produced. */
  private armIdle(): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = setTimeout(() => {
      void this.work.then(() => {
        if (this.ended) return;
        this.conn.sendJson({ ...this.ids(), status: 'error', message: `timed out after ${this.opts.idleSeconds} seconds of inactivity` });
        this.ended = true;
        this.conn.close(1000, 'idle timeout');
      });
    }, this.opts.idleSeconds * 1000);
    this.idle.unref();
  }
}

/** Client text frames and server frames of a synthesis session (wire: inference-api.md). */
const TTS_LIVE: RouteDoc = docs('Speech synthesis')('Synthesize speech over a WebSocket (streamed text in, audio out)', {
  description:
    'Client: JSON `{text, voice_id, sample_rate?, speed?, continue?, flush?, word_timestamps?, request_id?}` messages; `continue: true` keeps ' +
    'the text open for more, `flush: true` synthesizes what is buffered. Server: `{status: "chunk", data: {audio}}` frames ' +
    '(base64 PCM16), with `word_timestamps: true` a `{status: "word_timestamp", data: {id, word, start, end}}` frame per word before ' +
    "its phrase's audio (seconds from the stream's start; RHVoice voices only, others refused), `{status: \"complete\"}` at the end of a " +
    'request, `{status: "error", error: {message, code}}`; an idle session is closed after `timeout` seconds.',
  query: [{ name: 'timeout', description: 'Idle seconds before the server closes (1-3600, default 60).', schema: { type: 'integer', minimum: 1, maximum: 3600 } }],
});

/** `db`: where `pronunciation_dicts` are looked up (without it, a message naming any is refused). */
export function ttsLiveSockets(server: HttpServer, prefix: string, registry: ModelRegistry, logger: Logger, limits: SessionLimits, db?: Db): void {
  const route = (legacy: boolean) => ({
    auth: 'inference' as const,
    maxPayloadBytes: 64 * 1024,
    errorBody: ttsErrorBody,
    prepare: (req: { query: URLSearchParams; params: Record<string, string>; path: string }) => {
      if (legacy) {
        const model = /\/([^/]+)\/get_speech\/stream$/.exec(req.path)?.[1] ?? '';
        if (!isTtsModel(model, registry)) throw inferenceError(404, `Unknown model "${model}"`);
      }
      const raw = req.query.get('timeout');
      const idleSeconds = raw === null ? 60 : Number(raw);
      if (!Number.isInteger(idleSeconds) || idleSeconds < 1 || idleSeconds > 3600) {
        throw inferenceError(400, 'timeout: whole seconds from 1 to 3600');
      }
      return { idleSeconds };
    },
    admit: (_opts: Options, auth: AuthContext | undefined) => limits.acquire('speech', ownerOf(auth)),
    open: (conn: WsConnection, opts: Options, auth: AuthContext | undefined) => new TtsLiveSession(conn, registry, opts, logger, (ids) => pronunciationRules(db, auth, ids)),
  });
  // The older unified path existing clients still use: the same route, messages and limits.
  const live = route(false);
  wsRoute(server, logger, `${prefix}/tts/live`, { ...live, doc: TTS_LIVE });
  wsRoute(server, logger, `${prefix}/streaming-tts/stream`, { ...live, doc: { ...TTS_LIVE, summary: `${TTS_LIVE.summary} (older path)` } });
  wsRoute(server, logger, `${prefix}/:model/get_speech/stream`, { ...route(true), doc: { ...TTS_LIVE, summary: `${TTS_LIVE.summary} (legacy per-model path)`, params: { model: 'A `<tts-model>-v3.1` id.' } } });
}
