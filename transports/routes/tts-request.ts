// Parsing and validation of synthesis requests (HTTP body, SSE, WebSocket message); errors render as ttsErrorBody.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { checkField, says } from '../../control-plane/validation.js';
import { inferenceError } from '../http/auth.js';
import { OUTPUT_FORMATS, type OutputFormat } from '../../engine/tts/output.js';
import { TTS_ALIASES, type ModelRegistry } from '../../engine/models/registry.js';
import { QueueFullError } from '../../engine/models/queue.js';
import type { SpeechTextRules } from '../../engine/tts/speech-text.js';
import { resolveDicts } from '../../control-plane/pronunciation/dicts.js';
import type { Db } from '../../control-plane/store/db.js';

export const TTS_SAMPLE_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;
const LANGUAGES = new Set('auto en hi mr kn ta bn gu te ml pa or es de fr it nl sv pt ru el fi no pl ar zh id ja ko ms tr vi'.split(' '));
const CORRELATION = /^[a-zA-Z0-9_\-.]{1,128}$/;
export const MAX_TEXT_CHARS = 5000;
/** Pronunciation dictionaries one request may name. */
export const MAX_DICTS_PER_REQUEST = 20;

export interface TtsParams {
  text: string;
  /** The voice that speaks: `voice_id` when it is ours, else the voice the voice table maps it to (in `language`). */
  voiceId: string;
  /** Its engine (`rhvoice`, `flite`, `pico`, `piper`). */
  voiceModel: string;
  speed: number;
  sampleRate: number;
  format: OutputFormat;
  sessionId: string | null;
  requestId: string | null;
  /** `pronunciation_dicts`: dictionary ids (checked against the organization's by pronunciationRules). */
  dictIds: string[];
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

const rates = TTS_SAMPLE_RATES.map((r) => z.literal(r)) as unknown as [z.ZodLiteral<number>, z.ZodLiteral<number>, ...z.ZodLiteral<number>[]];
/** A message naming the value given (`unknown model "x"`). */
const naming = (prefix: string) => ({ errorMap: (_issue: unknown, ctx: { data: unknown }) => ({ message: `${prefix} ${JSON.stringify(ctx.data)}` }) });

/**
 * A synthesis request. Checked in code after it: the voice and model exist in this server's registry, and `text`
 * is not empty (except on the live WebSocket, where a `flush` may carry none).
 */
export const ttsBodySchema = z
  .object({
    text: z.string(says('required, a string')).max(MAX_TEXT_CHARS, `at most ${MAX_TEXT_CHARS} characters`).describe('Must not be empty.'),
    voice_id: z.string(says('required')).min(1).describe('A voice of `GET /voice/get-all-models`, or a hosted voice id of the voice table (docs/models.md), which speaks as the nearest voice here.'),
    model: z.string(naming('unknown model')).optional(),
    language: z.enum([...LANGUAGES] as [string, ...string[]], naming('unsupported code')).optional().describe('The language of `text`: picks the voice when `voice_id` is a hosted one; refused (400) when no voice here speaks it, or when `voice_id` is ours and speaks another language. `auto`: the voice\'s own.'),
    speed: z.number(says('a number from 0.5 to 2')).min(0.5).max(2).nullish().describe('Default 1.'),
    sample_rate: z.union(rates, says(`one of ${TTS_SAMPLE_RATES.join(', ')}`)).nullish().describe('Default 44100.'),
    output_format: z.enum(OUTPUT_FORMATS, says(`one of ${OUTPUT_FORMATS.join(', ')}`)).nullish().describe('Default: from the Accept header, else pcm.'),
    session_id: z.string(says('letters, digits, _ - . (at most 128)')).regex(CORRELATION).optional(),
    request_id: z.string(says('letters, digits, _ - . (at most 128)')).regex(CORRELATION).optional(),
    pronunciation_dicts: z.array(z.string().min(1).max(64), says(`an array of at most ${MAX_DICTS_PER_REQUEST} pronunciation dictionary ids`)).max(MAX_DICTS_PER_REQUEST).nullish().describe('Ids of `GET /pronunciation-dicts`: their words are said as their pronunciations.'),
  })
  .passthrough();
const field = ttsBodySchema.shape;

export function parseTts(body: unknown, registry: ModelRegistry, opts: { textMayBeEmpty?: boolean; acceptHeader?: string } = {}): TtsParams {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw inferenceError(400, 'Request body must be a JSON object');
  const b = body as Record<string, unknown>;
  const problems: string[] = [];
  // Field by field, in the order the messages have always come.
  const text = checkField(field, 'text', b.text, problems);
  if (text.ok && !opts.textMayBeEmpty && !(text.data as string).trim()) problems.push('text: must not be empty');
  const voiceId = checkField(field, 'voice_id', b.voice_id, problems);
  const language = checkField(field, 'language', b.language, problems);
  // The voice that speaks, from voice_id and language together (a hosted id maps to the nearest voice of the language).
  let voice: string | undefined;
  if (voiceId.ok && language.ok) {
    const choice = registry.chooseVoice({ voiceId: voiceId.data as string, language: language.data as string | undefined, mode: 'request' });
    if ('voiceId' in choice) voice = choice.voiceId;
    else problems.push(choice.message);
  }
  const model = checkField(field, 'model', b.model, problems);
  if (model.ok && model.data !== undefined && !isTtsModel(model.data, registry)) problems.push(`model: unknown model ${JSON.stringify(b.model)}`);
  const sampleRate = checkField(field, 'sample_rate', b.sample_rate, problems).data ?? 44100;
  const speed = checkField(field, 'speed', b.speed, problems).data ?? 1;
  const format = checkField(field, 'output_format', b.output_format, problems).data ?? formatFromAccept(opts.acceptHeader) ?? 'pcm';
  for (const id of ['session_id', 'request_id'] as const) checkField(field, id, b[id], problems);
  const dictIds = checkField(field, 'pronunciation_dicts', b.pronunciation_dicts, problems).data ?? [];
  if (problems.length) throw inferenceError(400, problems.join('; '));
  return {
    text: text.data as string,
    voiceId: voice as string,
    voiceModel: registry.voice(voice as string)?.model ?? '',
    speed,
    sampleRate,
    format,
    sessionId: (b.session_id as string | undefined) ?? null,
    requestId: (b.request_id as string | undefined) ?? null,
    dictIds,
  };
}

/**
 * What a request's text is said as: the entries of the dictionaries it names (the organization's), in order. An id
 * naming none of them is a 400 naming the field.
 */
export async function pronunciationRules(db: Db | undefined, auth: { orgId: string } | undefined, dictIds: readonly string[]): Promise<SpeechTextRules | undefined> {
  if (!dictIds.length) return undefined;
  if (!db || !auth) throw inferenceError(400, 'pronunciation_dicts: pronunciation dictionaries are not available here');
  const { entries, unknown } = await resolveDicts(db, auth.orgId, dictIds);
  if (unknown.length) throw inferenceError(400, `pronunciation_dicts: unknown pronunciation dictionary ${unknown.map((u) => JSON.stringify(u)).join(', ')} (see GET /pronunciation-dicts)`);
  return { pronunciations: entries };
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
    // Ours: the voice that spoke (after the voice table and `language`) and its engine.
    'X-Voice-Id': p.voiceId,
    'X-Voice-Model': p.voiceModel,
  };
}
