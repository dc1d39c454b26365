// The tools a call can run: library tools (toolRefs, resolved at call start) and inline api_call tools, executed with
// secrets from the vault and the egress policy; client tools are asked of the app over its WebSocket.
import type { SecretVault } from '../control-plane/secrets/vault.js';
import type { FunctionTool, ToolCall, Vars } from '../engine/agent/types.js';
import { executeApiCall, type ApiCallOptions } from '../engine/agent/tools/api-call.js';
import type { ApiCallToolDefinition, ClientToolDefinition, ToolDefinition } from '../engine/agent/tools/types.js';
import { checkEgress, safeFetch } from '../engine/net/egress.js';
import type { CallTrace, ToolSpan } from './tracing.js';

/** The app side of client tools: sends the call, resolves with the app's result (or null on timeout). */
export interface ClientToolChannel {
  call(call: ToolCall, opts: { timeoutMs: number; expectsResponse: boolean }): Promise<string | null>;
}

export interface CallToolsOptions {
  orgId: string;
  vault: SecretVault;
  allowPrivateEgress: boolean;
  /** Present on connections that can answer client tools (the agent WebSocket). */
  client?: ClientToolChannel;
  /** Called with variables a tool extracted (responseVariables). */
  onVariables(values: Vars): void;
  /** The call's span: each tool call gets one under it (name, kind, outcome; never the arguments or the answer). */
  trace?: CallTrace;
  /** Knowledge-base searches (`knowledge_base_search` tools, the agent's `globalKnowledgeBaseId`): calls/knowledge-tool.ts. */
  knowledge?: { has(name: string): boolean; run(call: ToolCall): Promise<string | null> };
  /** `extract_dynamic_variables` tools (calls/variables-tool.ts): their values go to `onVariables`. */
  extraction?: { has(name: string): boolean; run(call: ToolCall): { result: string; values: Vars | null } };
}

const PARAM_TYPES = { text: 'string', number: 'number', boolean: 'boolean', enum: 'string' } as const;

/** JSON Schema of an api_call tool's llmParameters. */
function parameters(def: ToolDefinition): Record<string, unknown> {
  if (def.type !== 'api_call' || !def.llmParameters?.length) return { type: 'object', properties: {} };
  const properties: Record<string, unknown> = {};
  for (const p of def.llmParameters) {
    properties[p.name] = { type: PARAM_TYPES[p.type], description: p.description, ...(p.type === 'enum' && p.values ? { enum: p.values } : {}) };
  }
  const required = def.llmParameters.filter((p) => p.required).map((p) => p.name);
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}

/** An inline agent tool of type api_call as a definition the executor takes (defaults as in the library). */
function inlineApiCall(t: Record<string, unknown>): ApiCallToolDefinition | null {
  if (t.type !== 'api_call' || t.enabled === false || typeof t.url !== 'string' || typeof t.name !== 'string') return null;
  return {
    ...(t as object),
    type: 'api_call',
    name: t.name,
    description: String(t.description ?? ''),
    enabled: true,
    url: t.url,
    method: (typeof t.method === 'string' ? t.method : 'GET') as ApiCallToolDefinition['method'],
    timeout: typeof t.timeout === 'number' ? t.timeout : 5000,
    responseVariables: Array.isArray(t.responseVariables) ? (t.responseVariables as ApiCallToolDefinition['responseVariables']) : [],
  } as ApiCallToolDefinition;
}

/** How a call's outgoing API requests (tools, the pre-call API) reach the network: the org's vault, the egress policy. */
export function orgRequestOptions(o: { orgId: string; vault: SecretVault; allowPrivateEgress: boolean }): Omit<ApiCallOptions, 'auth'> {
  return {
    secret: (name) => o.vault.get(o.orgId, name),
    checkUrl: (url) => checkEgress(url, { allowPrivate: o.allowPrivateEgress }),
    // Connects only to the address the egress policy checked (no DNS rebinding between check and connect).
    fetchImpl: ((input: string | URL, init: RequestInit = {}) =>
      safeFetch(
        input instanceof URL ? input : new URL(String(input)),
        { method: init.method, headers: Object.fromEntries(new Headers(init.headers).entries()), body: init.body as string | undefined, signal: init.signal ?? undefined },
        { allowPrivate: o.allowPrivateEgress, maxRedirects: 0 },
      )) as typeof fetch,
  };
}

export class CallTools {
  private readonly byName = new Map<string, ToolDefinition>();

  constructor(library: ToolDefinition[], inline: Record<string, unknown>[], private readonly opts: CallToolsOptions) {
    for (const t of inline) {
      const def = inlineApiCall(t);
      if (def) this.byName.set(def.name, def);
    }
    // Library tools win over inline tools of the same name.
    for (const def of library) if (def.enabled) this.byName.set(def.name, def);
  }

  /** Library tools as functions for the model (inline tools are offered by the brain from the agent's `tools`). */
  libraryFunctions(library: ToolDefinition[]): FunctionTool[] {
    return library.filter((d) => d.enabled).map((d) => ({ name: d.name, description: d.description, parameters: parameters(d) }));
  }

  /** A filler phrase to say while a client tool runs. */
  fillerFor(call: ToolCall): string | undefined {
    const def = this.byName.get(call.name);
    if (def?.type !== 'client_tool' || !def.fillerPhrases.length) return undefined;
    return def.fillerPhrases[Math.floor(Math.random() * def.fillerPhrases.length)];
  }

  /** Runs a call; null when no such tool can run here (the session speaks a fallback). */
  async run(call: ToolCall, vars: Vars): Promise<string | null> {
    const knowledge = this.opts.knowledge;
    if (knowledge?.has(call.name)) {
      const span = this.opts.trace?.tool(call.name, 'knowledge_base_search');
      try {
        const out = await knowledge.run(call);
        span?.end(out === null ? 'unavailable' : 'ok');
        return out;
      } catch (err) {
        span?.end('error');
        throw err;
      }
    }
    const extraction = this.opts.extraction;
    if (extraction?.has(call.name)) {
      const span = this.opts.trace?.tool(call.name, 'extract_dynamic_variables');
      const { result, values } = extraction.run(call);
      span?.end(values ? 'ok' : 'error');
      if (values) this.opts.onVariables(values);
      return result;
    }
    const def = this.byName.get(call.name);
    const span = this.opts.trace?.tool(call.name, def?.type ?? 'unknown');
    try {
      return await this.execute(def, call, vars, span);
    } catch (err) {
      span?.end('error');
      throw err;
    }
  }

  private async execute(def: ToolDefinition | undefined, call: ToolCall, vars: Vars, span: ToolSpan | undefined): Promise<string | null> {
    if (!def) {
      span?.end('unavailable');
      return null;
    }
    let args: Record<string, unknown> = {};
    try {
      const parsed = call.arguments ? (JSON.parse(call.arguments) as unknown) : {};
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
    } catch {
      span?.end('error');
      return JSON.stringify({ error: 'the arguments were not valid JSON' });
    }
    if (def.type === 'client_tool') return this.runClient(def, call, span);
    const { auth, ...visible } = def;
    const result = await executeApiCall(visible as ApiCallToolDefinition, args, vars, { auth, ...orgRequestOptions(this.opts) });
    span?.end(result.ok ? 'ok' : 'error', result.status);
    if (Object.keys(result.variables).length) this.opts.onVariables(result.variables);
    return result.ok ? result.text : JSON.stringify({ error: result.error ?? `HTTP ${result.status ?? 'error'}`, status: result.status ?? null, body: result.text });
  }

  private async runClient(def: ClientToolDefinition, call: ToolCall, span: ToolSpan | undefined): Promise<string | null> {
    const client = this.opts.client;
    if (!client) {
      span?.end('unavailable');
      return null;
    }
    const answer = await client.call(call, { timeoutMs: def.timeoutMs, expectsResponse: def.expectsResponse });
    if (!def.expectsResponse) {
      span?.end('sent');
      return JSON.stringify({ status: 'sent' });
    }
    span?.end(answer === null ? 'timeout' : 'ok');
    return answer ?? JSON.stringify({ error: `the app did not answer within ${def.timeoutMs} ms` });
  }
}
