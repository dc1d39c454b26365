// WebSocket endpoints on the uWS app: authentication and validation before the upgrade, then a session per connection.
import { STATUS_CODES } from 'node:http';
import uWS from 'uWebSockets.js';
import type { Logger } from 'pino';
import { ApiError } from '../../control-plane/errors.js';
import type { AuthContext } from '../../control-plane/auth/keys.js';
import { renderError, type AuthMode, type ErrorBody, type HttpRequest, type RouteDoc } from '../http/types.js';
import type { HttpServer } from '../http/server.js';
import type { Lease } from '../../calls/session-limits.js';

/** What a handler sends on: JSON text frames, binary frames, close. Sends after close are dropped. */
export interface WsConnection {
  sendJson(message: unknown): void;
  sendBinary(data: Uint8Array): void;
  /** Bytes queued in the socket's send buffer (backpressure). */
  bufferedAmount(): number;
  /** Sends a WebSocket ping; the peer's pong reaches WsSession.onPong. */
  ping(): void;
  /** Closes with a code (1000 normal, 1008 policy, 1011 server error, 1013 try again later). */
  close(code?: number, reason?: string): void;
  readonly closed: boolean;
}

export interface WsSession {
  onMessage(data: Buffer, isBinary: boolean): void;
  onClose(code: number): void;
  /** The send buffer drained below the backpressure limit. */
  onDrain?(): void;
  /** The peer answered a ping. */
  onPong?(): void;
}

export interface WsRoute<P> {
  auth: Exclude<AuthMode, 'key'>;
  maxPayloadBytes?: number;
  /** The shape of an upgrade refusal (see RouteOptions.errorBody). */
  errorBody?: ErrorBody;
  /** The upgrade in /openapi.json (a GET answered 101); its message protocol goes in the description. */
  doc?: RouteDoc;
  /** Checks the upgrade request (query, headers); throw an ApiError to answer it with HTTP instead of upgrading. */
  prepare(req: HttpRequest): P | Promise<P>;
  /**
   * Takes the session's place under the concurrent-session caps (after `prepare`, before the upgrade); throw an
   * ApiError (503/429 with Retry-After) to refuse. The place is given back when the socket closes.
   */
  admit?(prepared: P, auth: AuthContext | undefined): Lease | Promise<Lease>;
  open(conn: WsConnection, prepared: P, auth: AuthContext | undefined): WsSession;
}

/** Per-socket state. uWS copies the user-data object's properties at upgrade, so the state hangs off one shared reference. */
interface SocketState {
  lease?: Lease;
  session?: WsSession;
  conn?: Connection;
  start?: () => void;
}
interface SocketData {
  state: SocketState;
}

class Connection implements WsConnection {
  closed = false;
  constructor(private readonly ws: uWS.WebSocket<SocketData>) {}
  sendJson(message: unknown): void {
    if (!this.closed) this.ws.send(JSON.stringify(message), false);
  }
  sendBinary(data: Uint8Array): void {
    if (!this.closed) this.ws.send(data, true);
  }
  bufferedAmount(): number {
    return this.closed ? 0 : this.ws.getBufferedAmount();
  }
  ping(): void {
    if (!this.closed) this.ws.ping();
  }
  close(code = 1000, reason = ''): void {
    if (this.closed) return;
    this.closed = true;
    this.ws.end(code, reason.slice(0, 120));
  }
}

export function wsRoute<P>(server: HttpServer, logger: Logger, pattern: string, route: WsRoute<P>): void {
  server.record({ method: 'GET', pattern, auth: route.auth, errorBody: route.errorBody, doc: route.doc, websocket: true });
  server.app.ws<SocketData>(pattern, {
    maxPayloadLength: route.maxPayloadBytes ?? 1024 * 1024,
    idleTimeout: 0,
    maxBackpressure: 4 * 1024 * 1024,
    upgrade: (res, req, context) => {
      const headers: Record<string, string> = {};
      req.forEach((k, v) => {
        headers[k] = v;
      });
      const query = new URLSearchParams(req.getQuery() ?? '');
      // WebSockets may carry the credential as `api_key` when the client cannot set headers.
      const apiKey = query.get('api_key');
      if (!headers.authorization && apiKey) headers.authorization = `Bearer ${apiKey}`;
      const request: HttpRequest = { method: 'GET', path: req.getUrl(), route: pattern, params: {}, query, headers, body: Buffer.alloc(0), json: () => ({}) };
      const key = headers['sec-websocket-key'] ?? '';
      const protocol = headers['sec-websocket-protocol'] ?? '';
      const extensions = headers['sec-websocket-extensions'] ?? '';
      let aborted = false;
      res.onAborted(() => {
        aborted = true;
      });
      void (async () => {
        try {
          if (route.auth !== 'none') await server.authenticate(request, route.auth);
          const prepared = await route.prepare(request);
          const lease = await route.admit?.(prepared, request.auth);
          if (aborted) {
            lease?.release();
            return;
          }
          const state: SocketState = { lease };
          state.start = () => {
            state.session = route.open(state.conn as Connection, prepared, request.auth);
          };
          res.cork(() => res.upgrade<SocketData>({ state }, key, protocol, extensions, context));
        } catch (err) {
          if (aborted) return;
          if (!(err instanceof ApiError)) logger.error({ err: err instanceof Error ? err.message : String(err), route: pattern }, 'websocket upgrade failed');
          const error = err instanceof ApiError ? err : new ApiError(500, 'Internal server error');
          const status = error.status;
          const body = JSON.stringify(renderError(error, route.auth === 'none' ? 'key' : route.auth, route.errorBody));
          res.cork(() => {
            res.writeStatus(`${status} ${STATUS_CODES[status] ?? 'Error'}`);
            for (const [k, v] of Object.entries(error.options.headers ?? {})) res.writeHeader(k, v);
            res.writeHeader('Content-Type', 'application/json');
            res.end(body);
          });
        }
      })();
    },
    open: (ws) => {
      const data = ws.getUserData().state;
      data.conn = new Connection(ws);
      try {
        data.start?.();
      } catch (err) {
        logger.error({ err: err instanceof Error ? err.message : String(err), route: pattern }, 'websocket session failed to open');
        data.lease?.release();
        data.conn.close(1011, 'internal error');
      }
    },
    message: (ws, message, isBinary) => {
      const data = ws.getUserData().state;
      // The ArrayBuffer is only valid during this callback: copy it.
      const copy = Buffer.from(message.slice(0));
      try {
        data.session?.onMessage(copy, isBinary);
      } catch (err) {
        logger.error({ err: err instanceof Error ? err.message : String(err), route: pattern }, 'websocket message handler failed');
        data.conn?.close(1011, 'internal error');
      }
    },
    drain: (ws) => ws.getUserData().state.session?.onDrain?.(),
    pong: (ws) => ws.getUserData().state.session?.onPong?.(),
    close: (ws, code) => {
      const data = ws.getUserData().state;
      if (data.conn) data.conn.closed = true;
      data.lease?.release();
      data.session?.onClose(code);
    },
  });
}
