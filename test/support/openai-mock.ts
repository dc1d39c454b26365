// Scripted stand-in for an OpenAI-compatible chat-completions server: real HTTP, real SSE wire format.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MockRequest {
  /** The parsed JSON body (model, messages, stream, tools, ...). */
  body: Record<string, unknown> & { messages?: Record<string, unknown>[] };
  headers: IncomingMessage['headers'];
  path: string;
}

export interface MockReply {
  text?: string;
  toolCalls?: { name: string; arguments: string }[];
  /** Pause before each streamed chunk, ms. */
  chunkDelayMs?: number;
  /** Streamed: the last piece of text waits for this (a test holds the model's end back until it saw what it wants). */
  holdLastPiece?: Promise<void>;
  /** Answer with this HTTP status and an OpenAI error body instead. */
  status?: number;
}

export interface OpenAiMockOptions {
  /** When set, requests must carry `Authorization: Bearer <apiKey>` (else 401). */
  apiKey?: string;
  respond: (req: MockRequest) => MockReply | Promise<MockReply>;
}

/** Small pieces of streamed text: a word (with its leading space) at a time, long words cut into 6-character pieces. */
export function textPieces(text: string): string[] {
  return (text.match(/\s*\S+/g) ?? (text ? [text] : [])).flatMap((w) => w.match(/[\s\S]{1,6}/g) ?? []);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class OpenAiMock {
  readonly requests: MockRequest[] = [];
  /** Times (performance.now()) each SSE chunk was written, per request, in order; for latency assertions. */
  readonly chunkTimes: number[][] = [];
  private server: Server | null = null;
  private seq = 0;

  constructor(private readonly opts: OpenAiMockOptions) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.fail(res, 500, err instanceof Error ? err.message : String(err), 'server_error');
        else res.destroy();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/v1`;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (req.method !== 'POST' || path !== '/v1/chat/completions') return this.fail(res, 404, `Unknown request: ${req.method} ${path}`, 'invalid_request_error');
    if (this.opts.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.opts.apiKey}`) {
      // Like OpenAI: the message echoes a masked form of the key sent.
      const sent = (req.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
      const masked = sent ? `${sent.slice(0, 3)}*****${sent.slice(-4)}` : '';
      return this.fail(res, 401, `Incorrect API key provided: ${masked}.`, 'invalid_request_error', 'invalid_api_key');
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: MockRequest['body'];
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as MockRequest['body'];
    } catch {
      return this.fail(res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
    }
    const request: MockRequest = { body, headers: req.headers, path };
    this.requests.push(request);
    const reply = await this.opts.respond(request);
    if (reply.status && reply.status >= 400) return this.fail(res, reply.status, `Scripted failure (HTTP ${reply.status})`, 'server_error');
    const id = `chatcmpl-mock${++this.seq}`;
    const created = Math.floor(Date.now() / 1000);
    const model = typeof body.model === 'string' ? body.model : 'mock-model';
    const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({ id: `call_mock${this.seq}_${i}`, ...c }));
    const finishReason = toolCalls.length ? 'tool_calls' : 'stop';
    if (body.stream !== true) return this.complete(res, { id, created, model, text: reply.text ?? '', toolCalls, finishReason });

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const times: number[] = [];
    this.chunkTimes.push(times);
    const send = async (delta: Record<string, unknown>, finish: string | null) => {
      if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
      if (res.destroyed) throw new Error('client went away');
      const chunk = { id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_mock', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      times.push(performance.now());
    };
    try {
      await send({ role: 'assistant', content: '' }, null);
      const pieces = textPieces(reply.text ?? '');
      for (const [k, piece] of pieces.entries()) {
        if (k === pieces.length - 1 && reply.holdLastPiece) await reply.holdLastPiece;
        await send({ content: piece }, null);
      }
      for (const [index, call] of toolCalls.entries()) {
        await send({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }, null);
        for (const frag of call.arguments.match(/[\s\S]{1,5}/g) ?? []) await send({ tool_calls: [{ index, function: { arguments: frag } }] }, null);
      }
      await send({}, finishReason);
      res.end('data: [DONE]\n\n');
    } catch {
      res.destroy();
    }
  }

  private complete(res: ServerResponse, r: { id: string; created: number; model: string; text: string; toolCalls: { id: string; name: string; arguments: string }[]; finishReason: string }): void {
    const message: Record<string, unknown> = { role: 'assistant', content: r.text || null, refusal: null };
    if (r.toolCalls.length) message.tool_calls = r.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    const body = {
      id: r.id,
      object: 'chat.completion',
      created: r.created,
      model: r.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: r.finishReason }],
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private fail(res: ServerResponse, status: number, message: string, type: string, code: string | null = null): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message, type, param: null, code } }));
  }
}
