// WSS /stt/live (and the legacy /<stt-model>/get_text socket): binary audio in, transcription frames out.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { HttpServer } from '../http/server.js';
import { docs, type RouteDoc, type HttpRequest } from '../http/types.js';
import { STT_ALIASES, STT_MODEL, type ModelRegistry } from '../../engine/models/registry.js';
import { LiveTranscriber, isLiveEncoding, type LiveEvent } from '../../engine/stt/live.js';
import { WIRE_SAMPLE_RATES } from '../../engine/audio/types.js';
import { wsRoute, type WsConnection, type WsSession } from './endpoint.js';
import { inferenceError } from '../http/auth.js';
import { legacySttErrorBody, sttErrorBody } from '../routes/inference-errors.js';
import { ownerOf, type SessionLimits } from '../../calls/session-limits.js';
import type { AuthContext } from '../../control-plane/auth/keys.js';
import { Redactor, redactText, type RedactorOptions } from '../../engine/privacy/redact.js';
import { redactQuery } from '../routes/redact-query.js';

const LANGUAGES = new Set(['en', 'en-US', 'en-GB', 'en-IN', 'auto', 'multi-asian', 'north_indic', 'multi-south-indic']);

interface Prepared {
  sampleRate: number;
  encoding: string;
  vadEvents: boolean;
  eouSilenceMs: number | undefined;
  legacy: boolean;
  /** redact_pii / redact_pci: null when neither. */
  redact: RedactorOptions | null;
}

const reject = (message: string) => inferenceError(400, message);

function prepare(req: HttpRequest, legacy: boolean): Prepared {
  const q = req.query;
  if (!legacy) {
    const model = q.get('model') ?? STT_MODEL;
    if (model !== STT_MODEL && !(STT_ALIASES as readonly string[]).includes(model)) throw reject(`model: unknown "${model}" (use ${STT_MODEL}, or pulse)`);
  }
  const language = q.get('language') ?? 'en';
  if (!LANGUAGES.has(language)) throw reject(`language: ${STT_MODEL} recognises English only`);
  const sampleRate = Number(q.get('sample_rate') ?? 16000);
  if (!WIRE_SAMPLE_RATES.includes(sampleRate as never)) throw reject(`sample_rate: one of ${WIRE_SAMPLE_RATES.join(', ')}`);
  const encoding = q.get('encoding') ?? 'linear16';
  if (!isLiveEncoding(encoding)) throw reject(`encoding: one of linear16, linear32, alaw, mulaw, opus, ogg_opus`);
  const eou = q.get('eou_timeout_ms');
  const eouSilenceMs = eou === null ? undefined : Number(eou);
  if (eouSilenceMs !== undefined && (!Number.isInteger(eouSilenceMs) || eouSilenceMs < 100 || eouSilenceMs > 10_000)) throw reject('eou_timeout_ms: 100 to 10000');
  const vad = q.get('vad_events') ?? q.get('vad');
  const redact = redactQuery(q, reject);
  // The legacy route's documented default is 800 ms; the unified route uses the engine's (300 ms).
  return { sampleRate, encoding, vadEvents: vad === 'true', eouSilenceMs: eouSilenceMs ?? (legacy ? 800 : undefined), legacy, redact };
}

/** Digits of every run of 6 or more (spaces, dots, commas and dashes between them allowed) as `*`. */
export function maskDigitRuns(text: string): string {
  return text.replace(/\d(?:[\s.,-]{0,2}\d)+/g, (run) => (run.replace(/\D/g, '').length >= 6 ? run.replace(/\d/g, '*') : run));
}

/** A timer this late means the process stalled (see armIdle). */
const IDLE_STALL_MS = 500;

class SttLiveSession implements WsSession {
  private readonly sessionId = randomUUID();
  private readonly transcriber: LiveTranscriber;
  /** The stream's redactor (finals, in order: a card number dictated across finals is one token). */
  private readonly redactor: Redactor | null;
  private closing = false;
  private idle: NodeJS.Timeout | null = null;

  constructor(private readonly conn: WsConnection, registry: ModelRegistry, private readonly p: Prepared, private readonly logger: Logger, private readonly idleSeconds: number) {
    this.redactor = p.redact ? new Redactor(p.redact) : null;
    this.transcriber = new LiveTranscriber(registry, { sampleRate: p.sampleRate, encoding: p.encoding, vadEvents: p.vadEvents, eouSilenceMs: p.eouSilenceMs }, (e) => this.emit(e));
    this.armIdle();
  }

  /**
   * No audio and no message for idleSeconds: an error frame, then close 1000 idle_timeout. A timer that fires well
   * after its time means this process stalled, and the client's messages may be waiting behind the stall: it gets
   * a short grace instead of being blamed for the server's pause.
   */
  private armIdle(delayMs = this.idleSeconds * 1000, grace = true): void {
    if (this.idle) clearTimeout(this.idle);
    const due = Date.now() + delayMs;
    this.idle = setTimeout(() => {
      if (this.closing) return;
      if (grace && Date.now() - due > IDLE_STALL_MS) {
        this.armIdle(IDLE_STALL_MS, false);
        return;
      }
      this.conn.sendJson({ type: 'error', status: 'error', message: `timed out after ${this.idleSeconds} seconds without audio or messages` });
      this.closing = true;
      this.transcriber.abort();
      this.conn.close(1000, 'idle_timeout');
    }, this.idleSeconds * 1000);
    this.idle.unref();
  }

  onMessage(data: Buffer, isBinary: boolean): void {
    if (this.closing) return;
    this.armIdle();
    if (isBinary) {
      this.transcriber.push(data);
      return;
    }
    let type: unknown;
    try {
      type = (JSON.parse(data.toString('utf8')) as { type?: unknown }).type;
    } catch {
      this.fail('messages must be binary audio or JSON {"type": "finalize" | "close_stream"}');
      return;
    }
    if (type === 'finalize') void this.transcriber.finalize();
    else if (type === 'close_stream') {
      this.closing = true;
      void this.transcriber.close().then(() => this.conn.close(1000, 'stream closed'));
    } else this.fail(`unknown message type ${JSON.stringify(type)}`);
  }

  onClose(): void {
    if (this.idle) clearTimeout(this.idle);
    this.transcriber.abort();
  }

  private emit(e: LiveEvent): void {
    if (e.type === 'transcript') {
      // Redacted: finals with the stream's tokens; interims too (stricter than the wire, which lets partials show raw
      // text), each on its own (their numbering may differ from the final's).
      let transcript = e.transcript;
      let entities: string[] | undefined;
      if (this.redactor) {
        const r = e.isFinal ? this.redactor.redactTurn(transcript, { role: 'user' }) : redactText(transcript, this.redactor.options);
        // An interim may hold the first digits of a card the final will complete: with redact_pci its remaining runs
        // of 6 or more digits are masked (the final is redacted with its tokens).
        transcript = !e.isFinal && this.p.redact?.pci ? maskDigitRuns(r.text) : r.text;
        entities = [...new Set(r.spans.map((x) => x.token))];
      }
      this.conn.sendJson({
        ...(this.p.legacy ? {} : { type: 'transcription', status: 'success', transcription: transcript }),
        session_id: this.sessionId,
        transcript,
        ...(entities ? { redacted_entities: entities } : {}),
        is_final: e.isFinal,
        ...(e.isLast ? { is_last: true } : {}),
        ...(e.fromFinalize ? { from_finalize: true } : {}),
        language: e.isFinal ? 'en' : null,
      });
    } else if (e.type === 'speech_started' || e.type === 'speech_ended') {
      this.conn.sendJson({ type: e.type, session_id: this.sessionId, timestamp: e.timestamp });
    } else {
      this.logger.warn({ message: e.message }, 'live transcription failed');
      this.fail(e.message);
    }
  }

  private fail(message: string): void {
    this.conn.sendJson({ type: 'error', status: 'error', message });
    this.closing = true;
    this.transcriber.abort();
    this.conn.close(1011, 'error');
  }
}

/** The live recognition protocol (wire: inference-api.md). */
const STT_LIVE: RouteDoc = docs('Speech recognition')('Transcribe audio live over a WebSocket', {
  description:
    'Client: binary frames of audio (per `encoding` and `sample_rate`), and JSON `{type: "finalize"}` (transcribe what ' +
    'is buffered now) or `{type: "close_stream"}` (finish and close). Server: `{type: "transcription", status: "success", ' +
    'transcription, is_final, ...}` messages, `speech_started`/`speech_ended` with `vad_events=true`, and ' +
    '`{type: "error", status: "error", message}`; an idle session is closed.',
  query: [
    { name: 'model' },
    { name: 'language' },
    { name: 'encoding', description: 'linear16 (default), mulaw, alaw, opus, ...' },
    { name: 'sample_rate', schema: { type: 'integer' } },
    { name: 'vad', schema: { type: 'boolean' } },
    { name: 'vad_events', schema: { type: 'boolean' } },
    { name: 'eou_timeout_ms', description: 'Silence that ends an utterance.', schema: { type: 'integer' } },
  ],
});

export function sttLiveSockets(server: HttpServer, prefix: string, registry: ModelRegistry, logger: Logger, limits: SessionLimits, idleSeconds: number): void {
  const route = (legacy: boolean) => ({
    // The legacy route is for API keys only, like its HTTP form.
    auth: legacy ? ('inference-key-only' as const) : ('inference' as const),
    maxPayloadBytes: 1024 * 1024,
    // The same shapes as the HTTP forms of these paths.
    errorBody: legacy ? legacySttErrorBody : sttErrorBody,
    prepare: (req: HttpRequest) => {
      if (legacy) {
        const model = /\/([^/]+)\/get_text$/.exec(req.path)?.[1] ?? '';
        if (model !== STT_MODEL && !(STT_ALIASES as readonly string[]).includes(model)) throw inferenceError(404, `Unknown model "${model}"`);
      }
      return prepare(req, legacy);
    },
    admit: (_p: Prepared, auth: AuthContext | undefined) => limits.acquire('speech', ownerOf(auth)),
    open: (conn: WsConnection, p: Prepared) => new SttLiveSession(conn, registry, p, logger, idleSeconds),
  });
  wsRoute(server, logger, `${prefix}/stt/live`, { ...route(false), doc: STT_LIVE });
  wsRoute(server, logger, `${prefix}/:sttModel/get_text`, { ...route(true), doc: { ...STT_LIVE, summary: `${STT_LIVE.summary} (legacy per-model path, API keys only)` } });
}
