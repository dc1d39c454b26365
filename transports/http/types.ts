// Request and response shapes shared by the HTTP server and every route handler.
import type { AuthContext } from '../../control-plane/auth/keys.js';

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
  body: Buffer;
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

export interface RouteOptions {
  auth: AuthMode;
  /** Largest body accepted (bytes); defaults to the server's limit. */
  maxBodyBytes?: number;
}

/** `{status:true, data}` envelope. */
export function ok(data: unknown, status = 200, headers?: Record<string, string>): HttpResponse {
  return { status, body: { status: true, data }, headers };
}
