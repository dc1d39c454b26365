// uWebSockets.js HTTP server: routing, bounded body reading, abort handling, envelopes, metrics and graceful drain.
import { STATUS_CODES } from 'node:http';
import { Readable } from 'node:stream';
import uWS from 'uWebSockets.js';
import type { Logger } from 'pino';
import { ApiError } from '../../control-plane/errors.js';
import { renderError, type AuthMode, type Handler, type HttpRequest, type HttpResponse, type ResponseSink, type RouteOptions, type RouteRecord } from './types.js';
import type { HttpMetrics } from './metrics.js';
import { whenClear, type LoopClearance } from './loop-reservations.js';

export interface HttpServerOptions {
  logger: Logger;
  metrics: HttpMetrics;
  maxBodyBytes: number;
  /** Sets `req.auth` for routes whose options ask for a credential; throws ApiError to refuse. */
  authenticate(req: HttpRequest, mode: Exclude<AuthMode, 'none'>): Promise<void>;
  /** Sends the event loop is kept free for (the outbound dialer's): a request starts after one that is near. */
  clearance?: LoopClearance;
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'del';
const EMPTY = Buffer.alloc(0);
/** The metrics label of requests no route matched. */
const UNMATCHED = 'unmatched';
const METHOD_NAMES: Record<string, Method> = { GET: 'get', POST: 'post', PUT: 'put', PATCH: 'patch', DELETE: 'del' };
/** What a streamed body (RouteOptions.streamBody) holds before reading pauses until the handler takes more. */
const STREAM_HIGH_WATER = 64 * 1024;

export class HttpServer {
  readonly app: uWS.TemplatedApp = uWS.App();
  private listenSocket: uWS.us_listen_socket | null = null;
  private inFlight = 0;
  private draining = false;
  private drainWaiters: (() => void)[] = [];
  private readonly table: RouteRecord[] = [];

  constructor(private readonly opts: HttpServerOptions) {}

  /** Undefined (no tick) unless a reserved send is near: then it resolves once the loop is clear of it. */
  private clearance(): Promise<void> | undefined {
    const first = this.opts.clearance?.clear();
    return first ? whenClear(this.opts.clearance as LoopClearance, first) : undefined;
  }

  /** The credential check of HTTP routes, for WebSocket upgrades. */
  /** True once drain() began: new sessions are refused. */
  get isDraining(): boolean {
    return this.draining;
  }

  authenticate(req: HttpRequest, mode: Exclude<AuthMode, 'none'>): Promise<void> {
    return this.opts.authenticate(req, mode);
  }

  /** Every route registered so far (HTTP and WebSocket), in registration order: what /openapi.json describes. */
  get routes(): readonly RouteRecord[] {
    return this.table;
  }

  /** Adds a route to the table; `route()` does it for HTTP routes, the WebSocket endpoint for its upgrades. */
  record(entry: RouteRecord): void {
    this.table.push(entry);
  }

  route(method: string, pattern: string, handler: Handler, options: RouteOptions): void {
    const name = METHOD_NAMES[method];
    if (!name) throw new Error(`unsupported method ${method}`);
    this.record({ method, pattern, auth: options.auth, errorBody: options.errorBody, doc: options.doc });
    const paramNames = [...pattern.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1] as string);
    this.app[name](pattern, (res, req) => this.accept(res, req, method, pattern, paramNames, handler, options));
  }

  /** Installs the 404 fallback; call after every route is registered. */
  finish(): void {
    this.app.any('/*', (res, req) => {
      const method = req.getMethod().toUpperCase();
      this.accept(res, req, method, UNMATCHED, [], () => {
        throw new ApiError(404, 'Resource not found');
      }, { auth: 'none' });
    });
  }

  private accept(
    res: uWS.HttpResponse,
    req: uWS.HttpRequest,
    method: string,
    pattern: string,
    paramNames: string[],
    handler: Handler,
    options: RouteOptions,
  ): void {
    const started = process.hrtime.bigint();
    const unmatched = pattern === UNMATCHED;
    // uWS request data is only valid synchronously: copy everything now.
    const headers: Record<string, string> = {};
    req.forEach((k, v) => {
      headers[k] = v;
    });
    const params: Record<string, string> = {};
    let malformedPath = false;
    paramNames.forEach((n, i) => {
      try {
        params[n] = decodeURIComponent(req.getParameter(i) ?? '');
      } catch {
        malformedPath = true;
      }
    });
    const path = req.getUrl();
    const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
    const query = new URLSearchParams(req.getQuery() ?? '');
    const declared = headers['content-length'];
    const hasBody = (declared !== undefined && declared !== '0') || headers['transfer-encoding'] !== undefined;
    let aborted = false;
    let handling = false;
    let finished = false;
    /** A streamed body still arriving when the answer goes: reading resumes (and the rest is dropped). */
    let releaseBody: (() => void) | null = null;
    this.inFlight++;

    const done = (status: number): void => {
      this.inFlight--;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.opts.metrics.observe(method, pattern, status, seconds);
      this.opts.logger.info({ method, route: pattern, status, ms: Math.round(seconds * 1000 * 10) / 10 }, 'request');
      // uWS flushes writes made outside its own callbacks at the end of the loop iteration: release drain waiters after that.
      if (this.inFlight === 0 && this.draining) setImmediate(() => this.drainWaiters.splice(0).forEach((w) => w()));
    };

    const writeHead = (response: HttpResponse, contentType?: string): void => {
      res.writeStatus(`${response.status} ${STATUS_CODES[response.status] ?? ''}`);
      if (contentType && !hasHeader(response.headers, 'content-type')) res.writeHeader('Content-Type', contentType);
      for (const [k, v] of Object.entries(response.headers ?? {})) res.writeHeader(k, v);
    };

    const send = (response: HttpResponse, closeConnection = false): void => {
      if (finished) return;
      finished = true;
      releaseBody?.();
      if (response.stream && !aborted) {
        const produce = response.stream;
        res.cork(() => writeHead(response));
        void this.stream(res, produce, () => aborted).then(
          () => done(response.status),
          (err: unknown) => {
            this.opts.logger.error({ err: describeError(err), route: pattern }, 'streaming response failed');
            done(response.status);
          },
        );
        return;
      }
      if (!aborted) {
        const { body, contentType } = encodeBody(response.body);
        res.cork(() => {
          writeHead(response, contentType);
          res.end(body, closeConnection || this.draining);
        });
      }
      done(response.status);
    };

    const fail = (err: unknown): void => {
      if (!(err instanceof ApiError)) this.opts.logger.error({ err: describeError(err), route: pattern }, 'handler failed');
      const error = err instanceof ApiError ? err : new ApiError(500, 'Internal server error');
      send({ status: error.status, body: renderError(error, options.auth, options.errorBody), headers: error.options.headers });
    };

    // A client gone before its body arrived is counted (499, as proxies log it) and no longer in flight;
    // one gone while its handler runs lets the handler finish, and only the answer is dropped.
    res.onAborted(() => {
      aborted = true;
      bodyStream?.destroy(new Error('the client went away before its body ended'));
      if (!handling) send({ status: 499 });
    });
    let bodyStream: Readable | null = null;

    const request: HttpRequest = {
      method,
      path,
      route: pattern,
      params,
      query,
      headers,
      remoteAddress,
      body: EMPTY,
      json: () => parseJson(request.body),
    };
    const refuse = (err: unknown): void => {
      if (err instanceof ApiError && request.auth?.rateHeaders) {
        err.options.headers = { ...request.auth.rateHeaders, ...err.options.headers };
      }
      fail(err);
    };
    const run = async (): Promise<void> => {
      handling = true;
      try {
        await this.clearance();
        const response = await handler(request);
        response.headers = { ...request.auth?.rateHeaders, ...response.headers };
        send(response);
      } catch (err) {
        refuse(err);
      }
    };
    /** The path, the credential and the declared size: everything checked before a byte of the body is kept. */
    const admit = async (): Promise<ApiError | null> => {
      try {
        await this.clearance();
        if (malformedPath) throw new ApiError(400, 'Malformed percent-encoding in the request path');
        if (unmatched) throw new ApiError(404, 'Resource not found');
        if (options.auth !== 'none') await this.opts.authenticate(request, options.auth);
        if (declared !== undefined && Number(declared) > limit) throw new ApiError(options.oversizeStatus ?? 413, `Request body exceeds ${limit} bytes`);
        return null;
      } catch (err) {
        if (err instanceof ApiError) return err;
        throw err;
      }
    };

    const limit = unmatched ? 0 : (options.maxBodyBytes ?? this.opts.maxBodyBytes);
    const tooLarge = () => new ApiError(options.oversizeStatus ?? 413, `Request body exceeds ${limit} bytes`);
    if (!hasBody) {
      if (options.streamBody) request.stream = Readable.from([]);
      void admit().then((refusal) => {
        if (aborted) return; // gone while its credential was checked: counted (499), not run
        if (refusal) refuse(refusal);
        else void run();
      }, refuse);
      return;
    }
    // The body is not buffered until the request is admitted: reading pauses while the path, credential and
    // declared size are checked. A refusal is answered at once; uWS then reads the rest of that body and drops it
    // (nothing is kept), so the client gets the answer, not a reset, and the connection stays usable.
    let admitted = false;
    let bodyEnded = false;
    let size = 0;
    let paused = false;
    const chunks: Buffer[] = [];
    // A streamed body goes to the handler as it arrives, at the handler's pace: reading pauses while STREAM_HIGH_WATER
    // bytes wait unread, and resumes when the handler reads on (never before the request is admitted).
    const stream = options.streamBody ? new Readable({ highWaterMark: STREAM_HIGH_WATER, read: () => admitted && resume() }) : null;
    bodyStream = stream;
    // Its failures (the client left, the limit) reach whoever reads it; unread, they must not go unhandled.
    stream?.on('error', () => {});
    const complete = (): void => {
      if (size > limit) refuse(tooLarge());
      else if (stream) {
        request.stream = stream;
        void run();
      } else if (bodyEnded) {
        request.body = Buffer.concat(chunks, size);
        void run();
      }
    };
    res.onData((chunk, isLast) => {
      if (finished) return;
      if (isLast) bodyEnded = true;
      size += chunk.byteLength;
      if (stream) {
        if (stream.destroyed) return;
        if (size > limit) {
          // The handler reading it fails with the 413 (and answers once it has undone its work); the rest is dropped.
          // Not yet admitted: the admission step answers.
          stream.destroy(tooLarge());
          return;
        }
        if (!stream.push(Buffer.from(chunk.slice(0))) && !isLast) pause();
        if (isLast) stream.push(null);
        return;
      }
      // While checking, only what arrived before the pause took effect (a socket read or two) is kept, within the limit.
      if (size <= limit) chunks.push(Buffer.from(chunk.slice(0)));
      else chunks.length = 0;
      if (admitted) complete();
    });
    const pause = (): void => {
      if (paused) return;
      paused = true;
      res.pause();
    };
    pause();
    // Resumed before any answer: the response may not be touched once ended, and a refused body must still be read
    // (and dropped) for the connection to serve its next request.
    const resume = (): void => {
      if (finished || aborted || !paused) return;
      paused = false;
      res.resume();
    };
    if (stream) {
      releaseBody = () => {
        if (paused && !bodyEnded && !aborted) {
          paused = false;
          res.resume();
        }
        if (!stream.readableEnded) stream.destroy();
      };
    }
    void admit().then(
      (refused) => {
        resume();
        if (finished || aborted) return;
        if (refused) refuse(refused);
        else {
          admitted = true;
          complete();
        }
      },
      (err: unknown) => {
        resume();
        refuse(err);
      },
    );
  }

  /** Runs a streaming body: writes go out as they come, waiting for the socket when it is backed up. */
  private async stream(res: uWS.HttpResponse, produce: NonNullable<HttpResponse['stream']>, isAborted: () => boolean): Promise<void> {
    let waiting: (() => void) | null = null;
    res.onWritable(() => {
      waiting?.();
      waiting = null;
      return true;
    });
    const sink: ResponseSink = {
      get closed() {
        return isAborted();
      },
      write: async (chunk) => {
        if (isAborted()) return;
        let ok = true;
        res.cork(() => {
          ok = res.write(chunk);
        });
        if (!ok && !isAborted()) await new Promise<void>((resolve) => (waiting = resolve));
      },
    };
    try {
      await produce(sink);
    } finally {
      if (!isAborted()) res.cork(() => res.end());
    }
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(host, port, (socket) => {
        if (!socket) {
          reject(new Error(`could not listen on ${host}:${port}`));
          return;
        }
        this.listenSocket = socket;
        resolve(uWS.us_socket_local_port(socket));
      });
    });
  }

  /** Stops accepting connections and resolves once in-flight requests have been answered (or the timeout passes). */
  async drain(timeoutMs: number): Promise<void> {
    this.draining = true;
    if (this.listenSocket) {
      uWS.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.drainWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Closes remaining (keep-alive) connections; this uWS build has close() though its typings lack it. */
  close(): void {
    (this.app as unknown as { close?: () => void }).close?.();
  }
}

/** Deepest nesting of arrays and objects a request body may have (configurations need a handful of levels). */
const MAX_JSON_DEPTH = 32;

function parseJson(body: Buffer): unknown {
  if (body.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ApiError(400, 'Malformed JSON in request body');
  }
  if (nestingExceeds(value, MAX_JSON_DEPTH)) throw new ApiError(400, `JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  return value;
}

function nestingExceeds(root: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (value === null || typeof value !== 'object') continue;
    if (depth >= max) return true;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return false;
}

function encodeBody(body: unknown): { body: string | Buffer; contentType?: string } {
  if (body === undefined) return { body: '' };
  if (Buffer.isBuffer(body)) return { body };
  if (typeof body === 'string') return { body, contentType: 'text/plain; charset=utf-8' };
  return { body: JSON.stringify(body), contentType: 'application/json' };
}

function hasHeader(headers: Record<string, string> | undefined, name: string): boolean {
  return Object.keys(headers ?? {}).some((k) => k.toLowerCase() === name);
}

function describeError(err: unknown): { message: string; stack?: string } {
  return err instanceof Error ? { message: err.message, stack: err.stack } : { message: String(err) };
}
