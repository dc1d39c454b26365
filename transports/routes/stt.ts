// Recognition over HTTP: POST /stt/ (bytes or {url}, optional webhook) and the legacy POST /<stt-model>/get_text.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { HttpServer } from '../http/server.js';
import { docs, type HttpRequest, type QueryDoc, type RouteDoc } from '../http/types.js';
import { inferenceError } from '../http/auth.js';
import { ApiError } from '../../control-plane/errors.js';
import { STT_ALIASES, STT_MODEL, type ModelRegistry } from '../../engine/models/registry.js';
import { decodeAudio } from '../../engine/audio/decode.js';
import { AudioFormatError } from '../../engine/audio/errors.js';
import { isEncoding } from '../../engine/audio/codecs.js';
import { WIRE_SAMPLE_RATES, type MonoAudio } from '../../engine/audio/types.js';
import { estimateWords, transcribe, type BatchTranscript } from '../../engine/stt/batch.js';
import { Redactor, type RedactorOptions } from '../../engine/privacy/redact.js';
import { redactQuery } from './redact-query.js';
import { QueueFullError } from '../../engine/models/queue.js';
import { fetchAudio, postJson } from './fetch-audio.js';
import { EgressError, checkEgressStatic, type EgressOptions } from '../../engine/net/egress.js';
import { legacySttErrorBody, sttErrorBody } from './inference-errors.js';

/** No diarization: every utterance is the one speaker, named as the wire's string speakers are ("speaker_0"). */
const SPEAKER = 'speaker_0';

/** English-only recognizer: codes and aggregators that include English are served, others refused. */
const LANGUAGES = new Set(['en', 'en-US', 'en-GB', 'en-IN', 'auto', 'multi-eu', 'multi-asian', 'multi-indic']);

export interface SttLimits {
  maxBodyBytes: number;
  maxAudioSeconds: number;
}

interface SttInput {
  audio: MonoAudio;
  bytes: number;
  fromUrl: string | null;
}

/** `egress`: the policy for `{url}` audio and `webhook_url` (private networks refused unless allowed). */
export function sttRoutes(server: HttpServer, prefix: string, registry: ModelRegistry, limits: SttLimits, logger: Logger, egress: EgressOptions = { allowPrivate: false }): void {
  // Errors are plain; each route renders them in its own shape (sttErrorBody, legacySttErrorBody).
  const bad = (message: string) => inferenceError(400, message);

  /** Reads the audio of a request: raw bytes (container detected, or `encoding` + `sample_rate`), or JSON `{url}`. */
  const readInput = async (req: HttpRequest): Promise<SttInput> => {
    const type = req.headers['content-type'] ?? '';
    let bytes: Buffer = req.body;
    let fromUrl: string | null = null;
    if (type.startsWith('application/json')) {
      const json = req.json();
      const url = json !== null && typeof json === 'object' ? (json as { url?: unknown }).url : undefined;
      if (typeof url !== 'string' || !/^https?:\/\//.test(url)) throw bad('url: required, an http(s) address of the audio');
      checkTarget('url', url);
      fromUrl = url;
      bytes = await fetchAudio(url, limits.maxBodyBytes, egress).catch((err: unknown) => {
        if (err instanceof EgressError) throw bad(`url: ${err.message}`);
        throw bad(`could not fetch url: ${err instanceof Error ? err.message : String(err)}`);
      });
    }
    if (bytes.length === 0) throw bad('no audio in the request body');
    const encoding = req.query.get('encoding') ?? undefined;
    const rate = req.query.get('sample_rate');
    if (encoding !== undefined && !isEncoding(encoding) && encoding !== 'opus' && encoding !== 'ogg_opus') throw bad(`encoding: unsupported "${encoding}"`);
    if (rate !== null && !WIRE_SAMPLE_RATES.includes(Number(rate) as never)) throw bad(`sample_rate: one of ${WIRE_SAMPLE_RATES.join(', ')}`);
    let audio: MonoAudio;
    try {
      audio = decodeAudio(bytes, { encoding, sampleRate: rate === null ? undefined : Number(rate) });
    } catch (err) {
      if (err instanceof AudioFormatError) throw bad(err.message);
      throw err;
    }
    const seconds = audio.samples.length / audio.sampleRate;
    if (seconds > limits.maxAudioSeconds) throw bad(`audio is ${seconds.toFixed(1)} s long; at most ${limits.maxAudioSeconds} s per request`);
    return { audio, bytes: bytes.length, fromUrl };
  };

  /** Refuses a URL the egress policy rules out without DNS (scheme, literal addresses, metadata and localhost names). */
  const checkTarget = (field: string, url: string) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw bad(`${field}: not a valid URL`);
    }
    try {
      checkEgressStatic(parsed, egress);
    } catch (err) {
      if (err instanceof EgressError) throw bad(`${field}: ${err.message}`);
      throw err;
    }
  };

  const checkLanguage = (req: HttpRequest) => {
    const language = req.query.get('language') ?? 'en';
    if (!LANGUAGES.has(language)) throw bad(`language: ${STT_MODEL} recognises English only (en, or an aggregate that includes it)`);
  };

  const recognise = async (input: SttInput, wordTimestamps: boolean, redact: RedactorOptions | null = null) => {
    const started = Date.now();
    const raw = await transcribe(registry, input.audio).catch((err: unknown) => {
      if (err instanceof QueueFullError) throw inferenceError(503, 'Speech models are busy; retry shortly', { 'Retry-After': String(err.retryAfterSec) });
      throw err;
    });
    const elapsed = Date.now() - started;
    const { result, entities } = redact ? redactBatch(raw, redact) : { result: raw, entities: undefined };
    return {
      entities,
      result,
      words: wordTimestamps ? estimateWords(result.segments) : [],
      utterances: wordTimestamps ? result.segments.map((s) => ({ text: s.text, start: s.start, end: s.end, speaker: SPEAKER })) : [],
      elapsed,
    };
  };

  const batch = async (req: HttpRequest) => {
    const model = req.query.get('model') ?? STT_MODEL;
    if (model !== STT_MODEL && !(STT_ALIASES as readonly string[]).includes(model)) throw bad(`model: unknown "${model}" (use ${STT_MODEL}, or pulse / pulse-pro)`);
    checkLanguage(req);
    const wordTimestamps = req.query.get('word_timestamps') === 'true';
    const redact = redactQuery(req.query, bad);
    const webhook = req.query.get('webhook_url');
    if (webhook !== null && !/^https?:\/\/\S+$/.test(webhook)) throw bad('webhook_url: an http(s) address');
    if (webhook !== null) checkTarget('webhook_url', webhook);
    const input = await readInput(req);
    const requestId = randomUUID();
    const respond = async () => {
      const { result, words, utterances, elapsed, entities } = await recognise(input, wordTimestamps, redact);
      return {
        status: 'success',
        transcription: result.text,
        ...(entities ? { redacted_entities: entities } : {}),
        words,
        utterances,
        language: 'en',
        request_id: requestId,
        totalBytes: input.bytes,
        metadata: {
          duration: round(result.duration),
          fileSize: input.bytes,
          processing_time_ms: elapsed,
          rtfx: elapsed ? round(result.duration / (elapsed / 1000)) : null,
          num_chunks: Math.max(1, result.segments.length),
        },
      };
    };
    if (webhook) {
      // Runs in the background; the result (or an error body) is posted to the webhook as JSON.
      const extra = parseExtra(req.query.get('webhook_extra'));
      void respond()
        .then((body) => postJson(webhook, { ...body, ...extra }, egress))
        .catch(async (err: unknown) => {
          logger.warn({ err: err instanceof Error ? err.message : String(err), requestId }, 'background transcription or its webhook failed');
          await postJson(webhook, { status: 'error', request_id: requestId, error: err instanceof ApiError ? err.message : 'transcription failed', ...extra }, egress).catch(() => {});
        });
      return { status: 200, body: { status: 'processing', request_id: requestId } };
    }
    return { status: 200, body: await respond() };
  };
  // The wire path has a trailing slash; both spellings are served.
  for (const path of [`${prefix}/stt/`, `${prefix}/stt`]) server.route('POST', path, batch, { auth: 'inference', maxBodyBytes: limits.maxBodyBytes, errorBody: sttErrorBody, doc: BATCH_DOC });

  server.route('POST', `${prefix}/:sttModel/get_text`, async (req) => {
    const model = req.params.sttModel as string;
    if (model !== STT_MODEL && !(STT_ALIASES as readonly string[]).includes(model)) throw inferenceError(404, `Unknown model "${model}"`);
    checkLanguage(req);
    const redact = redactQuery(req.query, bad);
    const input = await readInput(req);
    const { result, words, utterances, entities } = await recognise(input, req.query.get('word_timestamps') === 'true', redact);
    return {
      status: 200,
      body: {
        status: 'success',
        transcription: result.text,
        ...(entities ? { redacted_entities: entities } : {}),
        audio_length: round(result.duration),
        words,
        utterances,
        metadata: { duration: round(result.duration), fileSize: input.bytes, ...(input.fromUrl ? { filename: input.fromUrl.split('/').pop() ?? '' } : {}) },
      },
    };
  }, {
    auth: 'inference-key-only',
    maxBodyBytes: limits.maxBodyBytes,
    errorBody: legacySttErrorBody,
    oversizeStatus: 400,
    doc: d('Transcribe audio (legacy per-model route)', { params: { sttModel: `${STT_MODEL}, or pulse / pulse-pro` }, query: AUDIO_QUERY, body: AUDIO_BODY, response: { description: '`{status: "success", transcription, audio_length, words, utterances, metadata}`.' } }),
  });
}

/**
 * A transcript with redact_pii / redact_pci applied: each piece in order through one Redactor (a card number read across
 * two pieces is one token, the earlier piece revised), the text rebuilt from the redacted pieces.
 */
function redactBatch(raw: BatchTranscript, options: RedactorOptions): { result: BatchTranscript; entities: string[] } {
  const redactor = new Redactor(options);
  const segments = raw.segments.map((s) => ({ ...s }));
  const tokens = new Set<string>();
  segments.forEach((seg) => {
    // Turn indexes are the pieces' (one redactTurn per piece, in order).
    const r = redactor.redactTurn(seg.text, { role: 'user' });
    seg.text = r.text;
    for (const rev of r.revisions) if (segments[rev.turn]) segments[rev.turn]!.text = rev.text;
    for (const span of [...r.spans, ...r.revisions.flatMap((x) => x.spans)]) tokens.add(span.token);
  });
  const text = segments.length ? segments.map((s) => s.text.trim()).join(' ') : redactor.redact(raw.text).text;
  return { result: { ...raw, text, segments }, entities: [...tokens] };
}

function parseExtra(raw: string | null): Record<string, string> {
  if (!raw) return {};
  return Object.fromEntries(raw.split(',').map((kv) => kv.split(':')).filter((p) => p.length === 2 && p[0]).map(([k, v]) => [k as string, v as string]));
}

const round = (x: number) => Math.round(x * 1000) / 1000;

const d = docs('Speech recognition');
/** Audio in the body (raw, a container, or `{url}` as JSON), described by these query parameters. */
const AUDIO_QUERY: QueryDoc[] = [
  { name: 'language', description: 'en, or an aggregate that includes English (auto, multi-eu, ...).' },
  { name: 'encoding', description: 'Raw audio encoding (linear16, mulaw, alaw, opus, ...); containers are detected.' },
  { name: 'sample_rate', schema: { type: 'integer', enum: [...WIRE_SAMPLE_RATES] } },
  { name: 'word_timestamps', schema: { type: 'boolean' } },
  { name: 'redact_pii', description: 'Names, phone numbers, emails, SSNs, addresses, dates of birth become numbered tokens ([FIRSTNAME_1]...).', schema: { type: 'string', enum: ['true', 'false'] } },
  { name: 'redact_pci', description: 'Card numbers, expiry dates, security codes, account and routing numbers become numbered tokens.', schema: { type: 'string', enum: ['true', 'false'] } },
];
const AUDIO_BODY: RouteDoc['body'] = {
  description: 'The audio bytes (WAV, Ogg Opus, raw per `encoding`), or JSON `{url}` of the audio.',
  contentType: 'application/octet-stream',
  schema: { type: 'string', contentMediaType: 'application/octet-stream' },
};
const BATCH_DOC = d('Transcribe audio', {
  query: [{ name: 'model', description: `${STT_MODEL}, or pulse / pulse-pro` }, ...AUDIO_QUERY, { name: 'webhook_url', description: 'Answer `{status: "processing"}` at once and post the result here.' }, { name: 'webhook_extra', description: '`key:value,...` added to the webhook body.' }],
  body: AUDIO_BODY,
  response: { description: '`{status: "success", transcription, words, utterances, language, request_id, metadata}`.', schema: { type: 'object', properties: { status: { type: 'string' }, transcription: { type: 'string' }, request_id: { type: 'string' } } } },
});
