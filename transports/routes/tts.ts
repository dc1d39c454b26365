// Synthesis over HTTP: POST /tts (one body), POST /tts/live (SSE), and the legacy per-model routes.
import type { HttpServer } from '../http/server.js';
import { docs, type HttpRequest, type HttpResponse } from '../http/types.js';
import type { ModelRegistry } from '../../engine/models/registry.js';
import { splitPhrases } from '../../engine/tts/chunker.js';
import { CONTENT_TYPES, encodeOutput } from '../../engine/tts/output.js';
import { synthesizePhrases } from '../../engine/tts/stream.js';
import { concatSamples } from '../../engine/audio/types.js';
import { ApiError } from '../../control-plane/errors.js';
import { inferenceError } from '../http/auth.js';
import { correlationHeaders, inferenceFailure, isTtsModel, parseTts, pronunciationRules, ttsBodySchema, type TtsParams } from './tts-request.js';
import { ttsErrorBody } from './inference-errors.js';
import { speechTransform } from '../../engine/tts/speech-text.js';
import type { Db } from '../../control-plane/store/db.js';

const options = { auth: 'inference' as const, maxBodyBytes: 64 * 1024, errorBody: ttsErrorBody };
const d = docs('Speech synthesis');
/** Retired legacy families (`<tts-model>-v2`, `<tts-model>-large`): the wire's fast 410 with its own body. */
const RETIRED = /^([a-z0-9_]+)-(?:v2|large)$/;

/** `db`: where `pronunciation_dicts` are looked up (without it, a request naming any is refused). */
export function ttsRoutes(server: HttpServer, prefix: string, registry: ModelRegistry, db?: Db): void {
  /** The request's phrases, said as its pronunciation dictionaries have them. */
  const phrasesOf = async (req: HttpRequest, p: TtsParams) => splitPhrases(speechTransform(await pronunciationRules(db, req.auth, p.dictIds))(p.text));

  const whole = async (req: HttpRequest): Promise<HttpResponse> => {
    const p = parseTts(req.json(), registry, { acceptHeader: req.headers.accept });
    const chunks: Float32Array[] = [];
    await synthesizePhrases(registry, p, await phrasesOf(req, p), (s) => {
      chunks.push(s);
    }).catch(inferenceFailure);
    const body = encodeOutput(concatSamples(chunks), p.sampleRate, p.format);
    return { status: 200, body, headers: { 'Content-Type': CONTENT_TYPES[p.format], ...correlationHeaders(p) } };
  };

  const sse = (legacy: boolean) => async (req: HttpRequest): Promise<HttpResponse> => {
    const p = parseTts(req.json(), registry, { acceptHeader: req.headers.accept });
    const phrases = await phrasesOf(req, p);
    // The first phrase is synthesised before answering, so a busy queue is still a clean 503.
    const first = await registry.synthesize(p.voiceId, phrases[0] ?? '', p.speed).catch(inferenceFailure);
    return {
      status: 200,
      headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', ...correlationHeaders(p) },
      stream: async (sink) => {
        const frame = (audio: Float32Array) =>
          sink.write(`event: audio\ndata: ${JSON.stringify(legacy ? { audio: b64(audio, p) } : { audio: b64(audio, p), done: false, status: '206' })}\n\n`);
        try {
          await synthesizePhrases(registry, p, phrases, frame, () => sink.closed, first);
        } catch {
          // Mid-stream failures have no documented frame: end the stream without the done marker.
          return;
        }
        await sink.write(`data: ${JSON.stringify(legacy ? { done: true } : { status: '200', done: true })}\n\n`);
      },
    };
  };

  /** `<tts-model>-v3.1` path segments name the built-in synthesis. */
  const legacy = (handler: (req: HttpRequest) => Promise<HttpResponse>) => async (req: HttpRequest) => {
    const model = req.params.model as string;
    const retired = RETIRED.exec(model);
    if (retired) {
      const message = `Model "${model}" is retired; use ${retired[1]}-v3.1`;
      const recommended = `${prefix}/${retired[1]}-v3.1/get_speech`;
      throw new ApiError(410, message, { rawBody: { status: 'error', error_code: 'MODEL_DEPRECATED', message, recommended_endpoint: recommended } });
    }
    if (!isTtsModel(model, registry)) throw inferenceError(404, `Unknown model "${model}"`);
    return handler(req);
  };

  server.route('POST', `${prefix}/tts`, whole, { ...options, doc: d('Synthesize speech (one body)', { body: { schema: ttsBodySchema }, response: { description: 'The audio in `output_format`.', contentType: 'application/octet-stream', schema: { type: 'string' } } }) });
  server.route('POST', `${prefix}/tts/live`, sse(false), { ...options, doc: d('Synthesize speech as server-sent events', { body: { schema: ttsBodySchema }, response: { description: '`event: audio` frames `{audio (base64), done: false, status: "206"}`, then `{status: "200", done: true}`.', contentType: 'text/event-stream', schema: { type: 'string' } } }) });
  server.route('POST', `${prefix}/:model/get_speech`, legacy(whole), { ...options, doc: d('Synthesize speech (legacy per-model route)', { params: { model: 'A `<tts-model>-v3.1` id; retired `-v2`/`-large` families answer 410.' }, body: { schema: ttsBodySchema }, response: { description: 'The audio.', contentType: 'application/octet-stream', schema: { type: 'string' } } }) });
  server.route('POST', `${prefix}/:model/stream`, legacy(sse(true)), { ...options, doc: d('Synthesize speech as server-sent events (legacy per-model route)', { params: { model: 'A `<tts-model>-v3.1` id.' }, body: { schema: ttsBodySchema }, response: { description: '`event: audio` frames `{audio}`, then `{done: true}`.', contentType: 'text/event-stream', schema: { type: 'string' } } }) });
}

function b64(samples: Float32Array, p: TtsParams): string {
  return encodeOutput(samples, p.sampleRate, p.format).toString('base64');
}
