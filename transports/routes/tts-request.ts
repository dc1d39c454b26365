// Parsing and validation of synthesis requests (HTTP body, SSE, WebSocket message); errors render as ttsErrorBody.
import { randomUUID } from 'node:crypto';
import { inferenceError } from '../http/auth.js';
import { OUTPUT_FORMATS, type OutputFormat } from '../../engine/tts/output.js';
import { TTS_ALIASES, type ModelRegistry } from '../../engine/models/registry.js';
import { QueueFullError } from '../../engine/models/queue.js';

export const TTS_SAMPLE_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;
const LANGUAGES = new Set('auto en hi mr kn ta bn gu te ml pa or es de fr it nl sv pt ru el fi no pl ar zh id ja ko ms tr vi'.split(' '));
const CORRELATION = /^[a-zA-Z0-9_\-.]{1,128}$/;
export const MAX_TEXT_CHARS = 5000;

export interface TtsParams {
  text: string;
  voiceId: string;
  speed: number;
  sampleRate: number;
  format: OutputFormat;
  sessionId: string | null;
  requestId: string | null;
}

/** Maps engine errors to answers: a full queue is a 503 with Retry-After, not unbounded latency. */
export function inferenceFailure(err: unknown): never {
  if (err instanceof QueueFullError) throw inferenceError(503, 'Speech models are busy; retry shortly', { 'Retry-After': String(err.retryAfterSec) });
  throw err;
}

/** A model id existing clients send, a `<family>-v3.1` path segment, or ours. */
export function isTtsModel(model: string, registry: ModelRegistry): boolean {
  return (TTS_ALIASES as readonly string[]).includes(model) || /^[a-z0-9_]+[-_]v3\.1(?:[-_]pro)?$/.test(model) || registry.models().some((m) => m.kind === 'tts' && m.id === model);
}

export function parseTts(body: unknown, registry: ModelRegistry, opts: { textMayBeEmpty?: boolean; acceptHeader?: string } = {}): TtsParams {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw inferenceError(400, 'Request body must be a JSON object');
  const b = body as Record<string, unknown>;
  const problems: string[] = [];
  const text = b.text;
  if (typeof text !== 'string') problems.push('text: required, a string');
  else if (!opts.textMayBeEmpty && !text.trim()) problems.push('text: must not be empty');
  else if (text.length > MAX_TEXT_CHARS) problems.push(`text: at most ${MAX_TEXT_CHARS} characters`);
  const voiceId = b.voice_id;
  if (typeof voiceId !== 'string' || !voiceId) problems.push('voice_id: required');
  else if (!registry.voice(voiceId)) problems.push(`voice_id: unknown voice "${voiceId}" (see GET /voice/get-all-models)`);
  if (b.model !== undefined && (typeof b.model !== 'string' || !isTtsModel(b.model, registry))) problems.push(`model: unknown model ${JSON.stringify(b.model)}`);
  const sampleRate = b.sample_rate ?? 44100;
  if (!TTS_SAMPLE_RATES.includes(sampleRate as never)) problems.push(`sample_rate: one of ${TTS_SAMPLE_RATES.join(', ')}`);
  const speed = b.speed ?? 1;
  if (typeof speed !== 'number' || !(speed >= 0.5 && speed <= 2)) problems.push('speed: a number from 0.5 to 2');
  if (b.language !== undefined && (typeof b.language !== 'string' || !LANGUAGES.has(b.language))) problems.push(`language: unsupported code ${JSON.stringify(b.language)}`);
  const format = b.output_format ?? formatFromAccept(opts.acceptHeader) ?? 'pcm';
  if (!OUTPUT_FORMATS.includes(format as never)) problems.push(`output_format: one of ${OUTPUT_FORMATS.join(', ')}`);
  for (const id of ['session_id', 'request_id'] as const) {
    if (b[id] !== undefined && (typeof b[id] !== 'string' || !CORRELATION.test(b[id] as string))) problems.push(`${id}: letters, digits, _ - . (at most 128)`);
  }
  if (problems.length) throw inferenceError(400, problems.join('; '));
  return {
    text: text as string,
    voiceId: voiceId as string,
    speed: speed as number,
    sampleRate: sampleRate as number,
    format: format as OutputFormat,
    sessionId: (b.session_id as string | undefined) ?? null,
    requestId: (b.request_id as string | undefined) ?? null,
  };
}

/** Without `output_format`, an Accept header naming a served audio type picks it. */
function formatFromAccept(accept: string | undefined): OutputFormat | undefined {
  if (!accept) return undefined;
  if (/audio\/(wav|wave|x-wav)/.test(accept)) return 'wav';
  if (/audio\/(basic|x-mulaw|pcmu)/.test(accept)) return 'ulaw';
  if (/audio\/(x-alaw-basic|pcma)/.test(accept)) return 'alaw';
  if (/audio\/(mpeg|mp3)/.test(accept)) return 'mp3';
  return undefined;
}

/** Response headers every synthesis answer carries. */
export function correlationHeaders(p: TtsParams): Record<string, string> {
  return {
    'X-Session-Id': randomUUID(),
    'X-Request-Id': randomUUID(),
    'X-External-Session-Id': p.sessionId ?? '',
    'X-External-Request-Id': p.requestId ?? '',
  };
}
