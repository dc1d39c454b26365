// The agent's pre-call API (`preCallAPI`, wire §2.3): before the agent speaks, one request to the customer's endpoint
// (a CRM lookup, say) whose `responseVariables` fill the call's variables. It runs through the same executor as
// api_call tools: `{{variable}}` templates, credentials from the vault by secret name, the egress policy, a timeout.
// A failure never stops the call: it goes on with its defaults and the record says why.
import type { Vars } from '../engine/agent/types.js';
import { executeApiCall, type ApiCallOptions } from '../engine/agent/tools/api-call.js';
import type { ApiCallToolDefinition, HttpMethod, ResponseVariable, ToolAuth } from '../engine/agent/tools/types.js';

/** What the call record keeps of the request (no URL, headers or body: they may carry customer data). */
export interface PreCallOutcome {
  ok: boolean;
  /** The endpoint's HTTP status, when it answered. */
  status: number | null;
  latencyMs: number;
  /** Why it failed (timeout, refused address, HTTP status, bad JSON), scrubbed of credentials. */
  error: string | null;
  /** Names of the variables it set. */
  variables: string[];
}

interface PreCallConfig {
  isEnabled?: boolean;
  url: string;
  method: HttpMethod;
  headers?: Record<string, string>;
  body?: unknown;
  timeout?: number;
  queryParams?: Record<string, string | number | boolean>;
  responseVariables?: ResponseVariable[];
  auth?: ToolAuth;
}

/** Default timeout (seconds), as the wire gives it. */
export const PRE_CALL_TIMEOUT_S = 5;

/** The configuration when the agent has an enabled pre-call API (`isEnabled: true`, as the wire's default is false). */
export function enabledPreCall(config: unknown): PreCallConfig | null {
  if (!config || typeof config !== 'object') return null;
  const c = config as Partial<PreCallConfig>;
  if (c.isEnabled !== true || typeof c.url !== 'string' || typeof c.method !== 'string') return null;
  return c as PreCallConfig;
}

/** The request as an api_call definition: the body's `{{variables}}` filled; without a body, POST/PUT/PATCH send the call's variables. */
export function preCallDefinition(c: PreCallConfig): { def: ApiCallToolDefinition; sendsVariables: boolean } {
  const hasBody = c.body !== undefined && c.body !== null && c.method !== 'GET';
  const def: ApiCallToolDefinition = {
    type: 'api_call',
    name: 'preCallAPI',
    description: 'pre-call API',
    enabled: true,
    url: c.url,
    method: c.method,
    timeout: Math.round((c.timeout ?? PRE_CALL_TIMEOUT_S) * 1000),
    headers: c.headers ?? {},
    queryParams: Object.entries(c.queryParams ?? {}).map(([key, value]) => ({ key, value: String(value) })),
    ...(hasBody ? { requestBody: JSON.stringify(c.body) } : {}),
    responseVariables: c.responseVariables ?? [],
  };
  return { def, sendsVariables: !hasBody };
}

/** What a pre-call API gave: its outcome (for the record) and the variables it filled. */
export interface PreCallResult { outcome: PreCallOutcome; variables: Vars }

/**
 * Calls the agent's pre-call API with the call's variables; null when it has none enabled. Never throws: a failed
 * request comes back with `ok: false` and no variables.
 */
export async function runPreCall(config: unknown, vars: Vars, opts: Omit<ApiCallOptions, 'auth'>): Promise<PreCallResult | null> {
  const c = enabledPreCall(config);
  if (!c) return null;
  const { def, sendsVariables } = preCallDefinition(c);
  const result = await executeApiCall(def, sendsVariables ? { ...vars } : {}, vars, { ...opts, auth: c.auth });
  return {
    outcome: { ok: result.ok, status: result.status ?? null, latencyMs: result.latencyMs, error: result.ok ? null : (result.error ?? 'failed'), variables: Object.keys(result.variables) },
    variables: result.variables,
  };
}
