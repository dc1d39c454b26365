// Request and response shapes shared by the HTTP server and every route handler.
import type { AuthContext } from '../../control-plane/auth/keys.js';
import type { ApiError } from '../../control-plane/errors.js';
import type { Readable } from 'node:stream';
import type { ZodTypeAny } from 'zod';

export interface HttpRequest {
  method: string;
  /** Path as received, without the query string. */
  path: string;
  /** The route pattern that matched (used as the metrics label). */
  route: string;
  params: Record<string, string>;
  query: URLSearchParams;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The peer's IP address as text (HTTP routes; the proxy's address behind a proxy). */
  remoteAddress?: string;
  body: Buffer;
  /** The body as it arrives, on routes with `streamBody` (their `body` stays empty); fails if the client leaves or the body outgrows the limit. */
  stream?: Readable;
  /** Parsed JSON body; `{}` for an empty body. Throws a 400 ApiError on malformed JSON. */
  json(): unknown;
  /** Set by the auth step for routes that require a key. */
  auth?: AuthContext;
}

export interface HttpResponse {
  status: number;
  /** Objects are sent as JSON; Buffers and strings as they are. */
  body?: unknown;
  headers?: Record<string, string>;
  /** A body produced over time (SSE, streamed audio): status and headers go first, then each write. */
  stream?: (sink: ResponseSink) => Promise<void>;
}

export interface ResponseSink {
  /** Sends a piece of the body; resolves once the socket can take more. A no-op after the client left. */
  write(chunk: string | Uint8Array): Promise<void>;
  /** The client went away: stop producing. */
  readonly closed: boolean;
}

export type Handler = (req: HttpRequest) => Promise<HttpResponse> | HttpResponse;

/**
 * `key`: agent platform, API keys only, platform error envelope.
 * `inference`: inference API route that also takes access tokens; `inference-key-only`: one that refuses them (403).
 */
export type AuthMode = 'none' | 'key' | 'inference' | 'inference-key-only';

/**
 * Renders an error that carries no body of its own (credential refusals, malformed JSON, oversize bodies, bad
 * paths, handler errors without `rawBody`, internal errors) in the route's documented shape.
 */
export type ErrorBody = (err: ApiError) => unknown;

export interface RouteOptions {
  auth: AuthMode;
  /** Largest body accepted (bytes); defaults to the server's limit. */
  maxBodyBytes?: number;
  /** The route's error shape; default: the platform envelope on `key`/`none` routes, `{error}` on inference routes. */
  errorBody?: ErrorBody;
  /**
   * Hands the handler the body as a stream (`req.stream`) once the request is admitted, instead of buffering it
   * whole: memory is bounded by what the handler holds, not by the limit. The limit still applies as it arrives.
   */
  streamBody?: boolean;
  /** The status of a body over the limit: 413, or 400 where a route's wire says so. */
  oversizeStatus?: 400 | 413;
  /** The route in /openapi.json; a route without one is missing from the document (a test fails). */
  doc?: RouteDoc;
}

/** A JSON Schema (2020-12, as OpenAPI 3.1 takes it), or the zod schema that validates the value. */
export type DocSchema = ZodTypeAny | Record<string, unknown>;

/** A query parameter (path parameters are read from the pattern). */
export interface QueryDoc {
  name: string;
  description?: string;
  required?: boolean;
  /** Default `{type: 'string'}`. */
  schema?: Record<string, unknown>;
}

/** What /openapi.json says about a route (transports/http/openapi.ts renders it). */
export interface RouteDoc {
  summary: string;
  description?: string;
  tags: string[];
  /** Descriptions of path parameters, by name (each `:name` of the pattern is documented either way). */
  params?: Record<string, string>;
  query?: QueryDoc[];
  body?: {
    /** Where a zod schema validates the body, that very schema. */
    schema?: DocSchema;
    /** Default `application/json`. */
    contentType?: string;
    /** Default true; false where an empty body is accepted. */
    required?: boolean;
    description?: string;
  };
  /** The success answer; default 200, the `{status: true, data}` envelope on agent-platform routes. */
  /** `status`: the usual success; `also`: other success statuses the route answers with the same body schema (202). */
  response?: { status?: number; also?: number[]; description?: string; schema?: DocSchema; contentType?: string };
  /**
   * Error statuses this route answers beyond the ones its shape implies (every credentialed route: 401 and 429; a path
   * parameter: 404; a body or a query: 400; a body: 413): 403, 409, 503... Each is listed in the document (then `4XX`).
   */
  errors?: number[];
  deprecated?: boolean;
}

/** One row of the server's route table (HTTP routes and WebSocket upgrades): what /openapi.json is built from. */
export interface RouteRecord {
  method: string;
  pattern: string;
  auth: AuthMode;
  errorBody?: ErrorBody;
  doc?: RouteDoc;
  websocket?: boolean;
}

/** `docs('Agents')('Create an agent', {...})`: a route file's docs under its tag. */
export const docs = (tag: string) => (summary: string, more: Omit<Partial<RouteDoc>, 'summary'> = {}): RouteDoc => ({ summary, tags: [tag], ...more });

/** The inference API's plainest error body, used where a route declares no shape of its own. */
export const plainInferenceError: ErrorBody = (err) => ({ error: err.errors.join('; ') });

/** The body of an error on a route: its own `rawBody` if it has one, else the route's shape. */
export function renderError(err: ApiError, auth: AuthMode, errorBody?: ErrorBody): unknown {
  if (err.options.rawBody !== undefined) return err.options.rawBody;
  if (errorBody) return errorBody(err);
  return auth.startsWith('inference') ? plainInferenceError(err) : err.body();
}

/** `{status:true, data}` envelope. */
export function ok(data: unknown, status = 200, headers?: Record<string, string>): HttpResponse {
  return { status, body: { status: true, data }, headers };
}
