// Brain for `single_prompt` agents: streams replies from any OpenAI-compatible chat-completions endpoint (SSE).
import type { Brain, BrainContext, BrainEvent, ChatMessage, FunctionTool, LlmEndpoint, ToolCall } from '../types.js';
import { renderTemplate } from '../variables.js';

export { functionToolsFromAgentTools, type SystemTools } from './llm-tools.js';
import type { SystemTools } from './llm-tools.js';

export interface LlmBrainOptions {
  endpoint: LlmEndpoint;
  /** The name the call record gives the model (`modelName`); default the endpoint's model id. */
  modelName?: string;
  /** Rendered with the call's variables at every request. */
  systemPrompt: string;
  firstMessage?: string;
  /** Every function the model may call (system functions included). */
  tools?: FunctionTool[];
  /** Which of `tools` end or transfer the call instead of running. */
  systemTools?: SystemTools;
  /** Longest wait for the first byte of a reply, and between two pieces of it, ms. Default 15000. */
  timeoutMs?: number;
  fetchImpl?: typeof fetch;
}

class LlmError extends Error {
  constructor(
    readonly code: 'llm_unavailable' | 'llm_bad_response',
    message: string,
  ) {
    super(message);
  }
}

/** A tool call being assembled from streamed fragments. */
interface PendingCall {
  id: string;
  name: string;
  arguments: string;
}

/** OpenAI wire form of one history message. */
function toWire(m: ChatMessage): Record<string, unknown> {
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
  if (m.role === 'assistant' && m.toolCalls?.length) {
    return {
      role: 'assistant',
      content: m.content || null,
      tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    };
  }
  return { role: m.role, content: m.content };
}

/** Splits an SSE byte stream into the payloads of its `data:` fields, one per event. */
async function* sseData(body: ReadableStream<Uint8Array>, nextChunk: (read: () => Promise<ReadableStreamReadResult<Uint8Array>>) => Promise<ReadableStreamReadResult<Uint8Array>>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await nextChunk(() => reader.read());
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      const lines = buffer.split(/\r?\n/);
      buffer = done ? '' : (lines.pop() ?? '');
      for (const line of lines) {
        if (line === '') {
          if (data.length) yield data.join('\n');
          data = [];
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        }
        // Comments (":") and event/id/retry fields carry nothing we need.
      }
      if (done) {
        if (data.length) yield data.join('\n');
        return;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

export class LlmBrain implements Brain {
  /** The conversation without the system prompt (which is rendered per request). */
  readonly history: ChatMessage[] = [];
  readonly modelName: string;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;

  constructor(private readonly opts: LlmBrainOptions) {
    this.modelName = opts.modelName ?? opts.endpoint.model;
    this.fetchImpl = opts.fetchImpl ?? fetch;
    this.timeoutMs = opts.timeoutMs ?? 15_000;
  }

  async *opening(ctx: BrainContext): AsyncGenerator<BrainEvent> {
    const text = renderTemplate(this.opts.firstMessage ?? '', ctx.variables).trim();
    if (!text || ctx.signal.aborted) return;
    this.history.push({ role: 'assistant', content: text });
    yield { type: 'text', text };
  }

  async *reply(userText: string | null, ctx: BrainContext): AsyncGenerator<BrainEvent> {
    if (userText !== null) this.history.push({ role: 'user', content: userText });
    if (ctx.signal.aborted) return;
    yield* this.complete(ctx);
  }

  addToolResult(callId: string, output: string): void {
    this.history.push({ role: 'tool', toolCallId: callId, content: output });
  }

  truncateLastReply(heardText: string): void {
    const i = this.history.length - 1;
    const last = this.history[i];
    if (last?.role !== 'assistant') return;
    if (!heardText && !last.toolCalls?.length) this.history.splice(i, 1);
    else last.content = heardText;
  }

  noteUser(text: string): void {
    this.history.push({ role: 'user', content: text });
  }

  async compose(instruction: string, ctx: BrainContext): Promise<string> {
    const body = this.requestBody(ctx);
    delete body.tools;
    delete body.tool_choice;
    body.messages = [
      ...(body.messages as unknown[]),
      { role: 'system', content: `Write what to say now, following this instruction: ${instruction}\nAnswer with the words to speak only.` },
    ];
    let text = '';
    for await (const piece of this.stream(ctx, [], body)) text += piece;
    return text.trim();
  }

  /** The request body for the current history. */
  requestBody(ctx: BrainContext): Record<string, unknown> {
    const { endpoint, tools } = this.opts;
    const system = renderTemplate(this.opts.systemPrompt, ctx.variables).trim();
    const messages = [...(system ? [{ role: 'system', content: system }] : []), ...this.history.map(toWire)];
    const body: Record<string, unknown> = { model: endpoint.model, messages, stream: true };
    if (endpoint.temperature !== undefined) body.temperature = endpoint.temperature;
    if (tools?.length) {
      body.tools = tools.map((t) => ({ type: 'function', function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters ?? { type: 'object', properties: {} } } }));
      body.tool_choice = 'auto';
    }
    return body;
  }

  /**
   * One completion: text events as the pieces arrive, then the actions of any tool calls. The assistant message joins
   * the history with its first piece and grows with it, so a barge-in's truncateLastReply always finds it.
   */
  private async *complete(ctx: BrainContext): AsyncGenerator<BrainEvent> {
    const msg: Extract<ChatMessage, { role: 'assistant' }> = { role: 'assistant', content: '' };
    const ensureRecorded = () => {
      if (!this.history.includes(msg)) this.history.push(msg);
    };
    const pending: PendingCall[] = [];
    try {
      for await (const piece of this.stream(ctx, pending)) {
        if (ctx.signal.aborted) return;
        ensureRecorded();
        msg.content += piece;
        yield { type: 'text', text: piece };
      }
      const calls = pending.filter((c): c is PendingCall => c !== undefined).map((c, i) => ({ ...c, id: c.id || `call_${Date.now().toString(36)}_${i}` }));
      if (calls.some((c) => !c.name)) throw new LlmError('llm_bad_response', 'LLM called a tool without a name');
      const runnable = calls.filter((c) => !this.isSystem(c.name)).map((c) => ({ id: c.id, name: c.name, arguments: c.arguments || '{}' }));
      if (runnable.length) {
        ensureRecorded();
        msg.toolCalls = runnable;
      }
      for (const c of calls) {
        if (ctx.signal.aborted) return;
        yield this.action(c);
      }
    } catch (err) {
      if (ctx.signal.aborted) return;
      const e = err instanceof LlmError ? err : new LlmError('llm_bad_response', err instanceof Error ? err.message : String(err));
      yield { type: 'error', code: e.code, message: this.redact(e.message) };
    }
  }

  /** Sends the request and yields the reply's text pieces as they arrive; tool-call fragments gather in `calls`. */
  private async *stream(ctx: BrainContext, calls: PendingCall[], body = this.requestBody(ctx)): AsyncGenerator<string> {
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, this.timeoutMs);
    };
    try {
      arm();
      const res = await this.fetchImpl(`${this.opts.endpoint.baseUrl.replace(/\/+$/, '')}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...(this.opts.endpoint.apiKey ? { authorization: `Bearer ${this.opts.endpoint.apiKey}` } : {}) },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!res.ok) throw new LlmError('llm_unavailable', `LLM endpoint answered HTTP ${res.status}${await this.errorDetail(res)}`);
      if (!res.body) throw new LlmError('llm_bad_response', 'LLM endpoint answered with no body');
      if ((res.headers.get('content-type') ?? '').includes('application/json')) {
        // A server that ignored `stream: true` and answered with one chat.completion.
        let text = '';
        this.absorb(await res.json(), 'message', calls, (t) => (text += t));
        if (text) yield text;
        return;
      }
      const nextChunk = async (read: () => Promise<ReadableStreamReadResult<Uint8Array>>) => {
        arm();
        try {
          return await read();
        } finally {
          clearTimeout(timer);
        }
      };
      let finished = false;
      for await (const data of sseData(res.body, nextChunk)) {
        if (data.trim() === '[DONE]') {
          finished = true;
          break;
        }
        let chunk: unknown;
        try {
          chunk = JSON.parse(data);
        } catch {
          throw new LlmError('llm_bad_response', `LLM stream carried data that is not JSON: ${data.slice(0, 80)}`);
        }
        let piece = '';
        if (this.absorb(chunk, 'delta', calls, (t) => (piece += t))) finished = true;
        if (piece) yield piece;
      }
      if (!finished) throw new LlmError('llm_bad_response', 'LLM stream ended before the reply finished');
    } catch (err) {
      throw err instanceof LlmError || ctx.signal.aborted ? err : this.classify(err, timedOut);
    } finally {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      controller.abort();
    }
  }

  private isSystem(name: string): boolean {
    const s = this.opts.systemTools;
    return name === s?.endCall || (s?.transfers !== undefined && Object.hasOwn(s.transfers, name));
  }

  private action(c: PendingCall): BrainEvent {
    const s = this.opts.systemTools;
    if (c.name === s?.endCall) return { type: 'end_call', reason: 'agent_ended_call' };
    if (s?.transfers && Object.hasOwn(s.transfers, c.name)) {
      const { number, option } = s.transfers[c.name]!;
      return { type: 'transfer', number, ...(option ? { option } : {}) };
    }
    return { type: 'tool_call', call: { id: c.id, name: c.name, arguments: c.arguments || '{}' } satisfies ToolCall };
  }

  /**
   * Takes the text and tool-call fragments out of one chunk (`delta`) or one whole completion (`message`).
   * Returns whether the chunk finished the reply.
   */
  private absorb(chunk: unknown, field: 'delta' | 'message', calls: PendingCall[], onText: (t: string) => void): boolean {
    if (typeof chunk !== 'object' || chunk === null) throw new LlmError('llm_bad_response', 'LLM stream carried a chunk that is not an object');
    const c = chunk as { error?: { message?: unknown }; choices?: unknown };
    if (c.error) throw new LlmError('llm_unavailable', `LLM endpoint reported an error: ${String(c.error.message ?? 'unknown')}`);
    if (!Array.isArray(c.choices)) throw new LlmError('llm_bad_response', 'LLM chunk has no choices');
    const choice = c.choices[0] as { finish_reason?: unknown; delta?: unknown; message?: unknown } | undefined;
    if (!choice) return false; // e.g. a trailing usage chunk
    const part = (choice[field] ?? {}) as { content?: unknown; tool_calls?: unknown };
    if (typeof part.content === 'string' && part.content) onText(part.content);
    if (Array.isArray(part.tool_calls)) {
      for (const raw of part.tool_calls as { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } }[]) {
        // Fragments name their call by `index`; without one, a new id (or the first fragment) starts a new call.
        const last = calls.at(-1);
        const startsNew = field === 'message' || !last || (typeof raw.id === 'string' && raw.id !== '' && raw.id !== last.id);
        const index = typeof raw.index === 'number' ? raw.index : startsNew ? calls.length : calls.length - 1;
        const call = (calls[index] ??= { id: '', name: '', arguments: '' });
        if (typeof raw.id === 'string' && raw.id) call.id = raw.id;
        if (typeof raw.function?.name === 'string') call.name += raw.function.name;
        if (typeof raw.function?.arguments === 'string') call.arguments += raw.function.arguments;
      }
    }
    return field === 'message' || (typeof choice.finish_reason === 'string' && choice.finish_reason !== '');
  }

  private async errorDetail(res: Response): Promise<string> {
    const body = await res.text().catch(() => '');
    let detail = body;
    try {
      const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
      detail = String((typeof parsed.error === 'object' ? parsed.error?.message : parsed.error) ?? parsed.message ?? body);
    } catch {
      // not JSON: keep the text
    }
    detail = detail.replace(/\s+/g, ' ').trim().slice(0, 200);
    return detail ? `: ${detail}` : '';
  }

  private classify(err: unknown, timedOut: boolean): LlmError {
    if (timedOut) return new LlmError('llm_unavailable', `LLM endpoint did not answer within ${this.timeoutMs} ms`);
    const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
    const why = cause ? String(cause.code ?? cause.message ?? '') : err instanceof Error ? err.message : String(err);
    return new LlmError('llm_unavailable', `LLM endpoint unreachable${why ? `: ${why}` : ''}`);
  }

  /** Never let the API key (or a provider's masked echo of a key) into a message. */
  private redact(message: string): string {
    const key = this.opts.endpoint.apiKey;
    let out = key ? message.split(key).join('[redacted]') : message;
    out = out.replace(/\bsk-[A-Za-z0-9*_-]{4,}/g, '[redacted]');
    return out;
  }
}
