// OpenAPI 3.1 document of both APIs, built from the server's route table: each route's `doc`, its auth mode and its
// error shape. Request bodies a zod schema validates are that schema (zod-to-json-schema), so the two cannot drift.
import { zodToJsonSchema } from 'zod-to-json-schema';
import { ZodType } from 'zod';
import type { AuthMode, DocSchema, ErrorBody, RouteRecord } from './types.js';
import { chatErrorBody, dictErrorBody, legacySttErrorBody, s2sUpgradeErrorBody, sttErrorBody, tokenErrorBody, ttsErrorBody } from '../routes/inference-errors.js';

export interface OpenApiInfo {
  version: string;
  atomsPrefix: string;
  wavesPrefix: string;
}

type Json = Record<string, unknown>;

/** JSON Schema of a doc schema; zod schemas are converted (no $refs: each operation's schema stands alone). */
export function jsonSchema(schema: DocSchema): Json {
  if (!(schema instanceof ZodType)) return schema;
  const out = zodToJsonSchema(schema, { target: 'jsonSchema2019-09', $refStrategy: 'none' }) as Json;
  delete out.$schema;
  return out;
}

const errorList = { type: 'array', items: { type: 'string' }, description: 'One message per problem; validation errors name each field (`field.path: message`).' };
const message = { type: 'string' };

/** The error shapes, as components/schemas: the platform envelope and the inference API's per-route shapes (wire docs). */
const ERROR_SCHEMAS: Record<string, Json> = {
  PlatformError: {
    type: 'object',
    required: ['status', 'errors'],
    properties: {
      status: { const: false },
      errors: errorList,
      error_type: { type: 'string', description: 'On 409 (e.g. `draft_conflict`, `versioning_v2_migration_required`) and 423 (`config_freeze_active`).' },
      data: { description: 'Extra detail on some errors (403: `{message}`).' },
    },
  },
  InferenceError: { type: 'object', required: ['error'], properties: { error: message } },
  TtsError: {
    type: 'object',
    required: ['error', 'message'],
    properties: {
      error: { type: 'string', enum: ['InvalidRequest', 'Unauthorized', 'Forbidden', 'NotFound', 'Gone', 'PayloadTooLarge', 'TooManyRequests', 'InternalServerError', 'ServiceUnavailable'] },
      message,
    },
  },
  TtsModelRetired: {
    type: 'object',
    description: 'A retired legacy model (`<model>-v2`, `<model>-large`): 410.',
    required: ['status', 'error_code', 'message', 'recommended_endpoint'],
    properties: { status: { const: 'error' }, error_code: { const: 'MODEL_DEPRECATED' }, message, recommended_endpoint: { type: 'string' } },
  },
  SttError: { type: 'object', required: ['error'], properties: { error: message } },
  LegacySttError: {
    description: '400: `{status: "error", message, errors}`; 401: `{message}` without a credential, `{error: "unauthorized"}` with a bad one; else `{error}`.',
    oneOf: [
      { type: 'object', required: ['status', 'message', 'errors'], properties: { status: { const: 'error' }, message, errors: message } },
      { type: 'object', required: ['message'], properties: { message } },
      { type: 'object', required: ['error'], properties: { error: message } },
    ],
  },
  PronunciationDictError: {
    description: '400: `{error: "Invalid request body", details: [{code, expected, received, path, message}]}`; else `{error}` (401 adds `message`).',
    oneOf: [
      { type: 'object', required: ['error', 'details'], properties: { error: message, details: { type: 'array', items: { type: 'object', required: ['code', 'path', 'message'], properties: { code: message, message, path: { type: 'array', items: { type: ['string', 'integer'] } } } } } } },
      { type: 'object', required: ['error'], properties: { error: message } },
    ],
  },
  ChatCompletionError: {
    description: 'OpenAI\'s error object under the inference API\'s `error` key.',
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'object', required: ['message', 'type'], properties: { message, type: message, param: { type: ['string', 'null'] }, code: { type: ['string', 'null'] } } } },
  },
  TokenError: {
    description: 'Client faults (400, 413): `{status: "error", message, errors: [{code, message, path}]}`; other refusals `{error}`.',
    oneOf: [
      {
        type: 'object',
        required: ['status', 'message', 'errors'],
        properties: {
          status: { const: 'error' },
          message,
          errors: { type: 'array', items: { type: 'object', required: ['code', 'message', 'path'], properties: { code: message, message, path: { type: 'array', items: { type: 'string' } } } } },
        },
      },
      { type: 'object', required: ['error'], properties: { error: message } },
    ],
  },
};

/** Which error component a route's `errorBody` renders (routes without one: by auth mode). */
const ERROR_BODIES = new Map<ErrorBody, string>([
  [ttsErrorBody, 'TtsError'],
  [sttErrorBody, 'SttError'],
  [legacySttErrorBody, 'LegacySttError'],
  [tokenErrorBody, 'TokenError'],
  [s2sUpgradeErrorBody, 'InferenceError'],
  [dictErrorBody, 'PronunciationDictError'],
  [chatErrorBody, 'ChatCompletionError'],
]);

function errorComponent(route: RouteRecord): string {
  const named = route.errorBody && ERROR_BODIES.get(route.errorBody);
  if (named) return named;
  if (route.errorBody) throw new Error(`openapi: ${route.method} ${route.pattern} has an error shape the document does not know; add it to ERROR_BODIES`);
  return route.auth.startsWith('inference') ? 'InferenceError' : 'PlatformError';
}

const SECURITY: Record<AuthMode, Json[]> = {
  none: [],
  key: [{ apiKey: [] }, { session: [] }],
  inference: [{ apiKey: [] }, { accessToken: [] }],
  'inference-key-only': [{ apiKey: [] }],
};

/** WebSocket upgrades also take the key (or token) as `?api_key=` for clients that cannot set headers. */
function securityOf(route: RouteRecord): Json[] {
  if (!route.websocket || route.auth === 'none') return SECURITY[route.auth];
  return [...SECURITY[route.auth].filter((s) => !('session' in s)), { apiKeyQuery: [] }];
}

const SUCCESS = {
  type: 'object',
  required: ['status', 'data'],
  properties: { status: { const: true }, data: {} },
};

/** `/agent/:id` -> `/agent/{id}` and the path parameters in order. */
function openApiPath(pattern: string): { path: string; params: string[] } {
  const params = [...pattern.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1] as string);
  return { path: pattern.replace(/:([A-Za-z0-9_]+)/g, '{$1}'), params };
}

const operationId = (method: string, path: string) =>
  `${method.toLowerCase()}${path.replace(/[{}]/g, '').split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0]?.toUpperCase() + w.slice(1)).join('')}`;

/**
 * The client-error statuses a route answers: those its shape implies (credentials: 401 refused, 429 over the key's
 * rate; a path parameter: 404; a body or a query: 400; a body: 413 over the size limit) and those it declares. The
 * document lists each, then `4XX` for the rarer ones a route's domain code may answer (409, 403...) not listed yet;
 * test/openapi.test.ts checks the listed ones against real answers.
 */
export function errorStatuses(route: RouteRecord, hasParams: boolean): number[] {
  const doc = route.doc;
  const out = new Set<number>(doc?.errors ?? []);
  if (route.auth !== 'none') [401, 429].forEach((s) => out.add(s));
  if (hasParams) out.add(404);
  if (doc?.body || doc?.query?.length) out.add(400);
  if (doc?.body) out.add(413);
  return [...out].sort((a, b) => a - b);
}

function operation(route: RouteRecord): Json {
  const doc = route.doc;
  if (!doc) throw new Error('undocumented route');
  const { path, params } = openApiPath(route.pattern);
  const parameters: Json[] = params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' }, ...(doc.params?.[name] ? { description: doc.params[name] } : {}) }));
  for (const q of doc.query ?? []) {
    parameters.push({ name: q.name, in: 'query', required: q.required ?? false, schema: q.schema ?? { type: 'string' }, ...(q.description ? { description: q.description } : {}) });
  }
  const op: Json = { operationId: operationId(route.method, path), summary: doc.summary, tags: doc.tags };
  if (doc.description) op.description = doc.description;
  if (doc.deprecated) op.deprecated = true;
  if (parameters.length) op.parameters = parameters;
  if (doc.body) {
    const type = doc.body.contentType ?? 'application/json';
    op.requestBody = {
      required: doc.body.required ?? true,
      ...(doc.body.description ? { description: doc.body.description } : {}),
      content: { [type]: { schema: doc.body.schema ? jsonSchema(doc.body.schema) : {} } },
    };
  }
  const res = doc.response ?? {};
  const status = String(res.status ?? (route.websocket ? 101 : 200));
  const success: Json = { description: res.description ?? (route.websocket ? 'Switching Protocols: the WebSocket session starts.' : 'Success.') };
  if (!route.websocket) {
    const schema = res.schema ? jsonSchema(res.schema) : route.auth === 'key' ? { $ref: '#/components/schemas/Success' } : {};
    success.content = { [res.contentType ?? 'application/json']: { schema } };
  }
  const error = { $ref: `#/components/responses/${errorComponent(route)}` };
  const errors = errorStatuses(route, params.length > 0);
  op.responses = { [status]: success, ...Object.fromEntries((res.also ?? []).map((s) => [String(s), success])), ...Object.fromEntries(errors.map((s) => [String(s), error])), '4XX': error, '5XX': error };
  op.security = securityOf(route);
  if (route.websocket) op['x-websocket'] = true;
  return op;
}

/** The document; every route with a `doc` is in it (the route-coverage test names the ones without). */
export function buildOpenApi(routes: readonly RouteRecord[], info: OpenApiInfo): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const tags: string[] = [];
  const ids = new Set<string>();
  for (const route of routes) {
    if (!route.doc) continue;
    const { path } = openApiPath(route.pattern);
    const method = route.method.toLowerCase();
    const item = (paths[path] ??= {});
    if (item[method]) throw new Error(`openapi: ${route.method} ${route.pattern} is registered twice`);
    const op = operation(route);
    // Paths that differ only in punctuation (`/stt` and `/stt/`) get numbered ids.
    for (let n = 2; ids.has(op.operationId as string); n++) op.operationId = `${operationId(route.method, path)}${n}`;
    ids.add(op.operationId as string);
    item[method] = op;
    for (const t of route.doc.tags) if (!tags.includes(t)) tags.push(t);
  }
  const responses = Object.fromEntries(
    Object.keys(ERROR_SCHEMAS)
      .filter((name) => name !== 'TtsModelRetired')
      .map((name) => [name, { description: `Error (${name}).`, content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } } }]),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Parley API',
      version: info.version,
      description:
        `Both APIs of this server. The agent platform is under \`${info.atomsPrefix}\` (answers \`{status: true, data}\`, errors ` +
        `\`{status: false, errors: [...]}\`); the inference API (speech synthesis and recognition, speech to speech) is under ` +
        `\`${info.wavesPrefix}\` with its own error shapes. WebSocket routes are described as GET operations answered with ` +
        '`101 Switching Protocols` and marked `x-websocket: true`; their message protocol is in each description.',
    },
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      schemas: { Success: SUCCESS, ...ERROR_SCHEMAS },
      responses,
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'sk_...', description: 'An API key: `Authorization: Bearer sk_...`.' },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'parley_session',
          description:
            `A browser session (agent platform only), from \`POST ${info.atomsPrefix}/auth/session\`. State-changing requests made ` +
            'with it must come from this origin and carry its CSRF token as `X-CSRF-Token`.',
        },
        accessToken: { type: 'http', scheme: 'bearer', bearerFormat: 'wat_...', description: `A short-lived access token from \`POST ${info.wavesPrefix}/auth/token\` (inference routes that take them).` },
        apiKeyQuery: { type: 'apiKey', in: 'query', name: 'api_key', description: 'WebSocket upgrades: the key or token as a query parameter, for clients that cannot set headers.' },
      },
    },
  };
}
