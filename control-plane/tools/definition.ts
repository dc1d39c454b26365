// Validation of a library tool's `definition` (spec "Tool (library record)"): every rule, defaults filled, errors naming each field.
import { z } from 'zod';
import type { ApiCallToolDefinition, ClientToolDefinition, ToolDefinition } from '../../engine/agent/tools/types.js';

export type { ApiCallToolDefinition, ClientToolDefinition, ToolAuth, ToolDefinition } from '../../engine/agent/tools/types.js';

export const TOOL_TYPES = ['api_call', 'client_tool'] as const;
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;
/** Same rule as the secrets vault's names. */
export const secretName = z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, 'must be a secret name from the vault (1-100 letters, digits, _ . or -), never a value');
/** RFC 9110 token: what a header name may be. */
export const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/, 'must be a valid HTTP header name');
export const headerValue = z.string().max(4000).regex(/^[^\r\n\0]*$/, 'must not contain line breaks');
/** Placeholders the executor fills: `{{ name }}`. */
export const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

const name = z.string().min(1).max(64).regex(/^\S+$/, 'must not contain spaces');
const description = z.string().min(1).max(2000);

export const templatedUrl = z
  .string()
  .max(2000)
  .refine((raw) => {
    try {
      return ['http:', 'https:'].includes(new URL(raw.replace(PLACEHOLDER, 'x')).protocol);
    } catch {
      return false;
    }
  }, 'must be an http or https URL');

/** `responseVariables`: where in a JSON answer each variable is read. */
export const responseVariablesSchema = z
  .array(
    z
      .object({
        variableName: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must start with a letter or _ and hold up to 64 letters, digits or _'),
        jsonPath: z.string().min(1).max(500).regex(/^\$/, 'must be a JSONPath starting with $'),
      })
      .strict(),
  )
  .max(50);

const keyValue = z.object({ key: z.string().min(1).max(200), value: z.string().max(4000) }).strict();
const headerPair = z.object({ key: headerName, value: headerValue }).strict();

const llmParameter = z
  .object({
    name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/, 'must start with a letter or _ and hold up to 64 letters, digits, _ or -'),
    description: z.string().min(1).max(1000),
    type: z.enum(['text', 'number', 'boolean', 'enum']),
    values: z.array(z.string().min(1).max(200)).min(1).max(100).optional(),
    required: z.boolean().default(false),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.type === 'enum' && !p.values) ctx.addIssue({ code: 'custom', path: ['values'], message: 'required when type is enum' });
  });

export const toolAuthSchema = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('none') }).strict(),
    z.object({ type: z.literal('bearer'), token: secretName }).strict(),
    z.object({ type: z.literal('api_key'), name: z.string().min(1).max(100).regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be a header or query-parameter name'), location: z.enum(['header', 'query']), value: secretName }).strict(),
    z.object({ type: z.literal('basic'), username: secretName, password: secretName }).strict(),
  ],
  { errorMap: (issue, ctx) => (issue.code === 'invalid_union_discriminator' ? { message: 'must be one of none, bearer, api_key, basic' } : { message: ctx.defaultError }) },
);

const common = { name, description, enabled: z.boolean().default(true) };

const apiCall = z
  .object({
    type: z.literal('api_call'),
    ...common,
    url: templatedUrl,
    method: z.enum(HTTP_METHODS),
    timeout: z.number().int().min(1000).max(30000).default(5000),
    headers: z.record(headerName, headerValue).optional(),
    headersArray: z.array(headerPair).max(50).optional(),
    queryParams: z.array(keyValue).max(50).optional(),
    requestBody: z.string().max(100_000).refine(parsesAsTemplatedJson, 'must be JSON text (with {{name}} placeholders inside strings or as whole values)').optional(),
    llmParameters: z
      .array(llmParameter)
      .max(50)
      .superRefine((params, ctx) => {
        const seen = new Set<string>();
        params.forEach((p, i) => {
          if (seen.has(p.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate parameter name ${p.name}` });
          seen.add(p.name);
        });
      })
      .optional(),
    responseVariables: responseVariablesSchema.default([]),
    auth: toolAuthSchema.optional(),
  })
  .strict()
  .superRefine((d, ctx) => {
    if (d.requestBody !== undefined && d.method === 'GET') ctx.addIssue({ code: 'custom', path: ['requestBody'], message: 'a GET request cannot carry a body' });
  });

/** Client timeouts: at least 100 ms (a round trip to the app), at most 2 minutes (a caller will not wait longer in silence). */
const clientTool = z
  .object({
    type: z.literal('client_tool'),
    ...common,
    timeoutMs: z.number().int().min(100).max(120_000).default(1000),
    expectsResponse: z.boolean().default(true),
    fillerPhrases: z.array(z.string().min(1).max(500)).max(20).default([]),
  })
  .strict();

/** The schemas parseDefinition validates with, as /openapi.json documents them. */
export { apiCall as apiCallToolSchema, clientTool as clientToolSchema };

const FIELDS_OF: Record<(typeof TOOL_TYPES)[number], Set<string>> = {
  api_call: new Set(Object.keys(apiCall.innerType().shape)),
  client_tool: new Set(Object.keys(clientTool.shape)),
};

/** Every placeholder replaced by `0` (valid both inside a JSON string and as a whole value) must leave valid JSON. */
function parsesAsTemplatedJson(text: string): boolean {
  try {
    JSON.parse(text.replace(PLACEHOLDER, '0'));
    return true;
  } catch {
    return false;
  }
}

// The parsed output must be exactly the engine's plain types.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const apiCallMatches: Same<z.output<typeof apiCall>, ApiCallToolDefinition> = true;
const clientToolMatches: Same<z.output<typeof clientTool>, ClientToolDefinition> = true;
void apiCallMatches;
void clientToolMatches;

function messages(error: z.ZodError, prefix: string, type: string | undefined): string[] {
  const out: string[] = [];
  for (const issue of error.issues) {
    const path = [prefix, ...issue.path].join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const other = TOOL_TYPES.find((t) => t !== type && FIELDS_OF[t].has(key));
        out.push(`${path}.${key}: ${issue.path.length === 0 && other ? `a field of ${other} tools, not of ${type} tools` : 'unknown field'}`);
      }
    } else if (issue.code === 'invalid_type' && issue.received === 'undefined') {
      out.push(`${path}: required`);
    } else {
      out.push(`${path}: ${issue.message}`);
    }
  }
  return out;
}

const commonOnly = z.object({ type: z.enum(TOOL_TYPES, { errorMap: () => ({ message: 'must be api_call or client_tool' }) }), ...common }).passthrough();

/**
 * Validates a definition and fills its defaults. Fields of the other tool type, and unknown fields, are refused.
 * Errors name each field under `prefix` (`definition.timeout: ...`).
 */
export function parseDefinition(input: unknown, prefix = 'definition'): { definition: ToolDefinition; errors: [] } | { definition: null; errors: string[] } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return { definition: null, errors: [`${prefix}: required, an object`] };
  const type = (input as Record<string, unknown>).type;
  if (type !== 'api_call' && type !== 'client_tool') {
    const result = commonOnly.safeParse(input);
    return { definition: null, errors: result.success ? [`${prefix}.type: must be api_call or client_tool`] : messages(result.error, prefix, undefined) };
  }
  const result = (type === 'api_call' ? apiCall : clientTool).safeParse(input);
  if (!result.success) return { definition: null, errors: messages(result.error, prefix, type) };
  return { definition: result.data, errors: [] };
}

/** The definition without its `auth` block: what the runtime, logs, caches and call records may see. */
export function stripAuth<T extends ToolDefinition>(definition: T): Omit<T, 'auth'> {
  if (!('auth' in definition)) return definition;
  const { auth: _auth, ...rest } = definition;
  return rest;
}
