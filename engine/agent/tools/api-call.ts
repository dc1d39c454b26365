// Runs one api_call tool: templated request, credentials injected at call time, egress-checked redirects, JSONPath extraction.
import { JSONPath } from 'jsonpath-plus';
import type { Vars } from '../types.js';
import type { ApiCallToolDefinition, ToolAuth } from './types.js';
import { fillJson, fillText, type Values } from './template.js';
import { CredentialError, resolveAuth, scrub, type ResolvedAuth, type SecretLookup } from './credentials.js';

export interface ApiCallOptions {
  /** Decrypts a secret of the organization by name (undefined when there is none). */
  secret: SecretLookup;
  /** The tool's `auth` block (secret names); defaults to `def.auth`. The runtime keeps it out of what it logs. */
  auth?: ToolAuth;
  fetchImpl?: typeof fetch;
  /** Egress policy: throws to refuse a target. Checked before the request and before following each redirect. */
  checkUrl?(url: URL): Promise<void>;
  /** Largest response body read (bytes); the rest is dropped. Default 1 MiB. */
  maxResponseBytes?: number;
}

export interface ApiCallResult {
  ok: boolean;
  status?: number;
  /** The response body: parsed JSON when it is JSON, else text. */
  body?: unknown;
  /** What the model is told, at most TEXT_LIMIT characters. */
  text: string;
  /** `responseVariables` extracted from a 2xx JSON body. */
  variables: Vars;
  error?: string;
  latencyMs: number;
}

export const TEXT_LIMIT = 4096;
const MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const WITH_ARGS_BODY = new Set(['POST', 'PUT', 'PATCH']);

class CallError extends Error {
  constructor(message: string, readonly status?: number) {
    super(message);
  }
}

const truncate = (s: string): string => (s.length > TEXT_LIMIT ? `${s.slice(0, TEXT_LIMIT - 14)}… [truncated]` : s);

/**
 * Calls the tool's API with the model's arguments and the call's variables (`{{name}}`: arguments win).
 * Never throws: failures come back as `ok: false` with `error`. Secret values appear only in the outgoing request;
 * every returned field is scrubbed of them (a server may echo a credential back).
 */
export async function executeApiCall(def: ApiCallToolDefinition, args: Record<string, unknown>, vars: Vars, opts: ApiCallOptions): Promise<ApiCallResult> {
  const started = performance.now();
  let sensitive: string[] = [];
  const finish = (r: Omit<ApiCallResult, 'latencyMs'>): ApiCallResult =>
    ({ ...scrub({ ...r, text: truncate(r.text) }, sensitive), ...(r.status !== undefined ? { status: r.status } : {}), latencyMs: Math.round(performance.now() - started) });
  try {
    const missing = (def.llmParameters ?? []).filter((p) => p.required && (args[p.name] === undefined || args[p.name] === null)).map((p) => p.name);
    if (missing.length) throw new CallError(`missing required argument(s): ${missing.join(', ')}`);
    const values: Values = { ...vars, ...args };
    const creds = await resolveAuth(opts.auth ?? def.auth, opts.secret);
    sensitive = creds.sensitive;
    const target = buildUrl(def, values);
    await egress(opts, target);
    const headers = buildHeaders(def, values);
    let body: string | undefined;
    if (def.requestBody !== undefined && def.method !== 'GET') body = fillJson(def.requestBody, values);
    else if (WITH_ARGS_BODY.has(def.method)) body = JSON.stringify(args ?? {});
    if (body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');

    const res = await send(def, target, headers, body, creds, opts);
    const raw = await readLimited(res, opts.maxResponseBytes ?? 1024 * 1024);
    const parsed = parseJson(raw);
    const ok = res.status >= 200 && res.status < 300;
    const shown = raw === '' ? `(no content, HTTP ${res.status})` : raw;
    return finish({
      ok,
      status: res.status,
      ...(raw === '' ? {} : { body: parsed === undefined ? raw : parsed }),
      text: ok ? shown : `HTTP ${res.status}: ${shown}`,
      variables: ok && parsed !== undefined ? extract(def, parsed) : {},
      ...(ok ? {} : { error: `the API answered HTTP ${res.status}` }),
    });
  } catch (err) {
    const error = describe(err, def.timeout);
    return finish({ ok: false, ...(err instanceof CallError && err.status !== undefined ? { status: err.status } : {}), text: `The tool call failed: ${error}`, variables: {}, error });
  }
}

function buildUrl(def: ApiCallToolDefinition, values: Values): URL {
  let url: URL;
  try {
    url = new URL(fillText(def.url, values, encodeURIComponent));
  } catch {
    throw new CallError('url: not a valid URL once its placeholders are filled');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CallError('url: must be http or https');
  for (const q of def.queryParams ?? []) url.searchParams.append(q.key, fillText(q.value, values));
  return url;
}

function buildHeaders(def: ApiCallToolDefinition, values: Values): Headers {
  const headers = new Headers();
  const pairs = [...Object.entries(def.headers ?? {}), ...(def.headersArray ?? []).map((h) => [h.key, h.value] as const)];
  for (const [name, template] of pairs) {
    // A value from the model cannot add a header line.
    const value = fillText(template, values).replace(/[\r\n\0]+/g, ' ');
    try {
      headers.set(name, value);
    } catch {
      throw new CallError(`header ${name}: the filled value is not a valid header value`);
    }
  }
  return headers;
}

async function egress(opts: ApiCallOptions, url: URL, status?: number): Promise<void> {
  if (!opts.checkUrl) return;
  try {
    await opts.checkUrl(new URL(url));
  } catch (err) {
    throw new CallError(`request to ${url.host} refused by the egress policy${err instanceof Error && err.message ? `: ${err.message}` : ''}`, status);
  }
}

/** Sends the request; redirects are followed by hand (at most 3), each target egress-checked, credentials kept to the first origin. */
async function send(def: ApiCallToolDefinition, target: URL, headers: Headers, body: string | undefined, creds: ResolvedAuth, opts: ApiCallOptions): Promise<Response> {
  const signal = AbortSignal.timeout(def.timeout);
  const fetchImpl = opts.fetchImpl ?? fetch;
  let method: string = def.method;
  let url = target;
  for (let hop = 0; ; hop++) {
    const h = new Headers(headers);
    const u = new URL(url);
    if (url.origin === target.origin) {
      if (creds.header) h.set(creds.header[0], creds.header[1]);
      if (creds.query) u.searchParams.set(creds.query[0], creds.query[1]);
    }
    const res = await fetchImpl(u, { method, headers: h, body, redirect: 'manual', signal });
    const location = res.headers.get('location');
    if (!REDIRECTS.has(res.status) || location === null) return res;
    await res.body?.cancel().catch(() => undefined);
    if (hop >= MAX_REDIRECTS) throw new CallError(`more than ${MAX_REDIRECTS} redirects`, res.status);
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      throw new CallError('the API redirected to an invalid location', res.status);
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new CallError('the API redirected to a non-http location', res.status);
    await egress(opts, next, res.status);
    if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
      method = 'GET';
      body = undefined;
      headers.delete('content-type');
    }
    url = next;
  }
}

async function readLimited(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.byteLength > limit) {
      chunks.push(value.subarray(0, limit - size));
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    size += value.byteLength;
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** First JSONPath match of each response variable; objects and arrays as JSON text; no match or null leaves it unset. */
function extract(def: ApiCallToolDefinition, json: unknown): Vars {
  const out: Vars = {};
  for (const { variableName, jsonPath } of def.responseVariables) {
    let first: unknown;
    try {
      // `eval: 'safe'`: filter expressions run in jsonpath-plus's sandboxed evaluator, never as JavaScript.
      first = (JSONPath({ path: jsonPath, json: json as object, wrap: true, eval: 'safe' }) as unknown[])[0];
    } catch {
      continue;
    }
    if (first === undefined || first === null) continue;
    if (typeof first === 'string' || typeof first === 'boolean' || (typeof first === 'number' && Number.isFinite(first))) out[variableName] = first;
    else out[variableName] = JSON.stringify(first);
  }
  return out;
}

function describe(err: unknown, timeoutMs: number): string {
  if (err instanceof CallError || err instanceof CredentialError) return err.message;
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `timed out after ${timeoutMs} ms`;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return `request failed${cause ? `: ${cause}` : e?.message ? `: ${e.message}` : ''}`;
}
