// The inference API's error bodies, one per kind of route (wire: inference-api.md), each route's `errorBody`.
import { ApiError } from '../../control-plane/errors.js';
import { InvalidBody } from '../../control-plane/pronunciation/dicts.js';
import type { ErrorBody } from '../http/types.js';
import { CREDENTIAL_MISSING } from '../http/auth.js';

const text = (err: ApiError) => err.errors.join('; ');

/** The `error` name of a synthesis error body, by status (the wire's TtsError: InvalidRequest, Unauthorized, ...). */
const TTS_ERROR_NAMES: Record<number, string> = {
  400: 'InvalidRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  410: 'Gone',
  413: 'PayloadTooLarge',
  429: 'TooManyRequests',
  500: 'InternalServerError',
  503: 'ServiceUnavailable',
};

/**
 * Synthesis (`POST /tts`, `POST /tts/live`, legacy `get_speech` and `stream`, the `WSS /tts/live` upgrades) and the
 * voice listings: `{error: <name by status>, message}`.
 */
export const ttsErrorBody: ErrorBody = (err) => ({
  error: TTS_ERROR_NAMES[err.status] ?? (err.status >= 500 ? 'InternalServerError' : 'InvalidRequest'),
  message: text(err),
});

/** Recognition (`POST /stt/`, the `WSS /stt/live` upgrade): the wire's SttErrorResponse, `{error}`. */
export const sttErrorBody: ErrorBody = (err) => ({ error: text(err) });

/**
 * Legacy `POST /<stt-model>/get_text` (and its WebSocket upgrade): the wire's shapes by status. Every client fault
 * (validation, bad body, malformed JSON, oversize: status 400 here, as the wire says) is the 400 body
 * `{status: "error", message, errors: "<detail>"}`; 401 is `{message}` without a credential, `{error: "unauthorized"}`
 * with a bad one; anything else `{error}`.
 */
export const legacySttErrorBody: ErrorBody = (err) => {
  if (err.status === 400 || err.status === 413) return { status: 'error', message: 'Error handling audio data', errors: text(err) };
  if (err.status === 401) return text(err) === CREDENTIAL_MISSING ? { message: 'no tokens provided' } : { error: 'unauthorized' };
  return { error: text(err) };
};

/** What a `POST /auth/token` 400 names: a machine code and the path of the offending field. */
interface TokenProblem {
  code: string;
  path: string[];
}

/** A client fault on `/auth/token` with its code and field path (rendered by tokenErrorBody). */
export const tokenRequestError = (message: string, code: string, path: string[]) => new ApiError(400, message, { data: { code, path } satisfies TokenProblem });

/**
 * `POST /auth/token`: client faults (400, and 413 for an oversize body) are `{status: "error", message,
 * errors: [{code, message, path}]}`; credential, rate and availability refusals (401/403/429/503) and internal
 * errors are `{error}`.
 */
export const tokenErrorBody: ErrorBody = (err) => {
  if (err.status !== 400 && err.status !== 413) return { error: text(err) };
  const problem = err.options.data as Partial<TokenProblem> | undefined;
  const code = problem?.code ?? (err.status === 413 ? 'body_too_large' : 'invalid_request');
  return { status: 'error', message: text(err), errors: [{ code, message: text(err), path: problem?.path ?? [] }] };
};

/** The `WSS /s2s` upgrade refusal (401, 400 for the model, 503 while draining): `{error}`; in-session errors are frames. */
export const s2sUpgradeErrorBody: ErrorBody = (err) => ({ error: text(err) });

/**
 * `/pronunciation-dicts`, as the wire has it: 400 `{error: "Invalid request body", details: [{code, expected,
 * received, path, message}]}` (details name each wrong field), 401 `{error: "Unauthorized", message}`, else `{error}`.
 */
export const dictErrorBody: ErrorBody = (err) => {
  if (err instanceof InvalidBody) return { error: 'Invalid request body', details: err.details };
  if (err.status === 400) return { error: 'Invalid request body', details: [{ code: 'custom', path: [], message: text(err) }] };
  if (err.status === 401) return { error: 'Unauthorized', message: text(err) };
  return { error: text(err) };
};

/** OpenAI's error `type` by status, for `POST /chat/completions`. */
const CHAT_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'invalid_request_error',
  413: 'invalid_request_error',
  429: 'rate_limit_error',
};

/**
 * `POST /chat/completions`: the inference API's `{error}`, holding OpenAI's error object so OpenAI clients read it:
 * `{error: {message, type, param: null, code}}` (`code` from the error's data, else null).
 */
export const chatErrorBody: ErrorBody = (err) => {
  const code = (err.options.data as { code?: unknown } | undefined)?.code;
  return { error: { message: text(err), type: CHAT_ERROR_TYPES[err.status] ?? (err.status >= 500 ? 'server_error' : 'invalid_request_error'), param: null, code: typeof code === 'string' ? code : null } };
};
