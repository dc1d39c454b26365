// POST /chat/completions (the hosted SDK's "Electron"): OpenAI's chat-completions wire, forwarded to one of the
// operator's models (calls/llm-models.ts): the one `model` names, else the server default. Streamed answers are the
// upstream's SSE chunks passed through as they arrive; keys never leave the server.
import type { Logger } from 'pino';
import { z } from 'zod';
import type { HttpServer } from '../http/server.js';
import { docs, type HttpRequest, type HttpResponse } from '../http/types.js';
import { ApiError } from '../../control-plane/errors.js';
import { bodyObject, parseBody, says } from '../../control-plane/validation.js';
import type { ChosenLlm, LlmModels } from '../../calls/llm-models.js';
import { chatErrorBody } from './inference-errors.js';

/** Longest wait for the model's answer to begin, and (streaming) between two pieces of it. */
const IDLE_MS = 60_000;
/** Longest a whole (not streamed) answer may take. */
const WHOLE_MS = 180_000;

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;
const chatMessage = z
  .object(
    {
      role: z.enum(ROLES, says(`must be one of ${ROLES.join(', ')}`)),
      content: z.union([z.string(), z.array(z.record(z.unknown())), z.null()], says('must be a string, an array of content parts, or null')).optional(),
    },
    says('must be a message object {role, content}'),
  )
  .passthrough();

/** The request as OpenAI defines it; fields beyond these (temperature, tools, max_tokens, ...) are passed on as sent. */
export const chatCompletionBody = bodyObject({
  model: z.string(says('must be a model name (a string)')).min(1).max(200).optional().describe('A configured model name (`PARLEY_LLM_MODELS`); unset or not configured: the server default model.'),
  messages: z.array(chatMessage, says('required, a non-empty array of messages')).min(1, 'required, a non-empty array of messages').max(2000).describe('The conversation, as OpenAI\'s chat-completions API takes it.'),
  stream: z.boolean(says('must be true or false')).optional().describe('true: server-sent events, OpenAI\'s `chat.completion.chunk` objects, then `data: [DONE]`.'),
});

/** An error with OpenAI's `code` (rendered by chatErrorBody). */
const chatError = (status: number, message: string, code: string) => new ApiError(status, message, { data: { code } });

/** `text` without the key (and the last 4 characters OpenAI-style masks keep of it), for messages passed on. */
function scrub(text: string, key: string | undefined): string {
  if (!key) return text;
  let out = text.split(key).join('[redacted]');
  if (key.length >= 8) out = out.split(key.slice(-4)).join('****');
  return out;
}

export function chatCompletionRoutes(server: HttpServer, prefix: string, models: LlmModels, logger: Logger): void {
  const choose = (name: string | undefined): ChosenLlm => {
    const chosen = models.choose(name);
    if (chosen) return chosen;
    if (!models.names().length) throw chatError(503, 'No language model is configured on this server (PARLEY_LLM_MODELS, PARLEY_LLM_BASE_URL)', 'model_not_configured');
    throw chatError(404, `The model "${name ?? ''}" is not configured on this server (configured: ${models.names().join(', ')}), and there is no default model`, 'model_not_found');
  };

  /** The model's answer has begun (or failed); throws the error the client gets. */
  const ask = async (chosen: ChosenLlm, body: Record<string, unknown>, stream: boolean, signal: AbortSignal): Promise<Response> => {
    const { endpoint, label } = chosen;
    let res: Response;
    try {
      res = await fetch(`${endpoint.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json', ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}) },
        body: JSON.stringify({ ...body, model: endpoint.model }),
        signal,
      });
    } catch (err) {
      const timedOut = signal.aborted;
      logger.warn({ model: label, err: timedOut ? 'timeout' : err instanceof Error ? err.message : String(err) }, 'chat completions: the model could not be reached');
      throw chatError(timedOut ? 504 : 502, timedOut ? `The model "${label}" did not answer in time` : `The model "${label}" could not be reached`, timedOut ? 'upstream_timeout' : 'upstream_unreachable');
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => '');
    logger.warn({ model: label, status: res.status }, 'chat completions: the model refused the request');
    // A request the model found wrong is the client's to fix: its message is passed on (without the key). Anything
    // else (the key refused, the model down) is this server's problem and says only what happened.
    if (res.status === 400 || res.status === 404 || res.status === 422) {
      let message = `The model "${label}" refused the request (HTTP ${res.status})`;
      try {
        const upstream = (JSON.parse(text) as { error?: { message?: unknown } | string }).error;
        const m = typeof upstream === 'string' ? upstream : upstream?.message;
        if (typeof m === 'string' && m) message = `${message}: ${scrub(m, endpoint.apiKey)}`;
      } catch {
        /* no JSON: the plain message */
      }
      throw chatError(400, message, 'upstream_invalid_request');
    }
    if (res.status === 429) throw chatError(429, `The model "${label}" is rate limited; retry later`, 'upstream_rate_limited');
    throw chatError(502, `The model "${label}" answered HTTP ${res.status}`, 'upstream_error');
  };

  const handle = async (req: HttpRequest): Promise<HttpResponse> => {
    const body = parseBody(chatCompletionBody, req.json()) as Record<string, unknown> & z.output<typeof chatCompletionBody>;
    const chosen = choose(body.model);
    const stream = body.stream === true;
    const started = Date.now();
    // A header value must be visible ASCII: other model ids go percent-encoded.
    const headers = { 'X-Parley-Model': /^[\x21-\x7e]+$/.test(chosen.label) ? chosen.label : encodeURIComponent(chosen.label) };
    if (!stream) {
      const res = await ask(chosen, body, false, AbortSignal.timeout(WHOLE_MS));
      let text: string;
      try {
        text = await res.text();
      } catch {
        throw chatError(504, `The model "${chosen.label}" did not finish its answer in time`, 'upstream_timeout');
      }
      logger.debug({ model: chosen.label, stream, ms: Date.now() - started }, 'chat completion');
      return { status: 200, body: Buffer.from(text), headers: { ...headers, 'Content-Type': res.headers.get('content-type') ?? 'application/json' } };
    }
    const abort = new AbortController();
    let idle = setTimeout(() => abort.abort(), IDLE_MS);
    const res = await ask(chosen, body, true, abort.signal).finally(() => clearTimeout(idle));
    return {
      status: 200,
      headers: { ...headers, 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' },
      stream: async (sink) => {
        const reader = (res.body as ReadableStream<Uint8Array>).getReader();
        try {
          for (;;) {
            idle = setTimeout(() => abort.abort(), IDLE_MS);
            const { done, value } = await reader.read().finally(() => clearTimeout(idle));
            if (done) break;
            if (sink.closed) return;
            await sink.write(value);
          }
          logger.debug({ model: chosen.label, stream, ms: Date.now() - started }, 'chat completion');
        } catch (err) {
          if (sink.closed) return;
          logger.warn({ model: chosen.label, err: abort.signal.aborted ? 'timeout' : err instanceof Error ? err.message : String(err) }, 'chat completions: the model\'s stream broke');
          // As OpenAI reports an error in a stream: an event whose data is the error object.
          await sink.write(`data: ${JSON.stringify(chatErrorBody(chatError(502, `The model "${chosen.label}" stopped answering`, 'upstream_error')))}\n\n`);
        } finally {
          reader.cancel().catch(() => {});
        }
      },
    };
  };

  server.route('POST', `${prefix}/chat/completions`, handle, {
    auth: 'inference',
    errorBody: chatErrorBody,
    doc: docs('Language model')('Chat completions (OpenAI-compatible; the SDK\'s "Electron")', {
      description:
        'OpenAI\'s chat-completions request, forwarded to the operator\'s model named by `model` (`PARLEY_LLM_MODELS`), else to the server default (`PARLEY_LLM_BASE_URL`); the `model` sent on is the configured model id, and other fields go as sent. '
        + 'The answer is the model\'s, passed through: a `chat.completion` object, or with `stream: true` server-sent `chat.completion.chunk` events ending `data: [DONE]`. `X-Parley-Model` names the configured model that answered. '
        + 'Errors are `{error: {message, type, code}}` (OpenAI\'s shape): 404 `model_not_found` (no such model and no default), 503 `model_not_configured` (none at all), 502/504 when the model fails or is slow, 400 `upstream_invalid_request` with the model\'s own message.',
      body: { schema: chatCompletionBody },
      response: { description: 'The model\'s `chat.completion`, or (`stream: true`) its `chat.completion.chunk` events.', contentType: 'application/json', schema: { type: 'object' } },
      errors: [404, 502, 503, 504],
    }),
  });
}
