// The SIP user agent core, shaped after drachtio-srf: UDP and TCP on one port, middleware per SIP method, the `sip`
// package's transaction state machines, CANCEL of a pending INVITE, in-dialog routing, OPTIONS 200 and 405 defaults,
// out-of-dialog requests, and createUAS/createUAC for dialogs.
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import sip, { type Connection, type RawMessage, type RawVia, type ResolvedAddress, type TransactionLayer } from 'sip';
import { SipSockets, type Flow, type SipTransportName } from './transport.js';
import type { HeaderLine, Parsed } from './wire.js';
import { SipIncomingResponse, SipRequest, SipResponse, type SipSource } from './message.js';
import { createUAS, type Dialog, type UasOptions } from './dialog.js';
import { createUAC, type UacOptions } from './uac.js';
import { sendOutOfDialog, type SipRequestOptions } from './request.js';
import { defaultPublicAddress } from './address.js';

export interface SipStackOptions {
  /** Bind address (default 0.0.0.0). */
  host?: string;
  /** UDP and TCP port (default 5060; 0: an ephemeral port, read it from `stack.port`). */
  port?: number;
  /** The address put in Via, Contact and (by the media layer) SDP; default: the host, or the first external IPv4. */
  publicAddress?: string;
  udp?: boolean;
  tcp?: boolean;
  logger?: Logger;
  userAgent?: string;
  /** RFC 3261 T1 and T2 for our 2xx retransmission and the ACK wait of 64*T1 (defaults 500 ms and 4 s). */
  t1Ms?: number;
  t2Ms?: number;
  tcpIdleMs?: number;
  maxTcpConnections?: number;
  /** An INVITE the application leaves without a final response this long is answered 408 (default 180 s). */
  inviteTimeoutMs?: number;
}

export type SipNext = (err?: unknown) => void;
export type SipHandler = (req: SipRequest, res: SipResponse, next: SipNext) => unknown;

/** Where to send a request instead of its Request-URI or Route (an outbound proxy, a carrier's address). */
export interface SipTarget {
  address: string;
  port: number;
  transport?: SipTransportName;
}

/** @internal How dialogs and the UAC send: the response callback hears every response (1xx, and each 2xx to an INVITE). */
export interface OutgoingOptions {
  target?: SipTarget;
  routes?: string[];
  /** Put our Contact on the request. */
  contact?: boolean;
  onFlow?: (flow: Flow) => void;
  /** The request's first transmission has left (its send completed); not called when it could not be sent. */
  onSent?: () => void;
  onResponse: (res: SipIncomingResponse) => void;
}

/** The flow to a target given by address. */
function flowOf(target: SipTarget): Flow {
  return { transport: target.transport ?? 'udp', address: target.address, port: target.port };
}

const NOT_IN_DIALOG = new Set(['BYE', 'INFO', 'UPDATE', 'PRACK']);

/**
 * The package's transaction layer replaces our Via branch with "z9hG4bK" and a number below a million, which two
 * concurrent transactions can share. These params append a random suffix to whatever branch is set on them.
 */
function strongBranchParams(params: Record<string, string | null>): Record<string, string | null> {
  let branch: string | null = null;
  Object.defineProperty(params, 'branch', {
    enumerable: true,
    get: () => branch,
    set: (v: string | null) => {
      branch = v ? `${v}.${randomBytes(6).toString('hex')}` : v;
    },
  });
  return params;
}

export class SipStack {
  readonly host: string;
  readonly publicAddress: string;
  readonly userAgent: string;
  readonly t1Ms: number;
  readonly t2Ms: number;
  readonly logger?: Logger;
  private readonly inviteTimeoutMs: number;
  private readonly sockets: SipSockets;
  private readonly transactions: TransactionLayer = sip.makeTransactionLayer({});
  private readonly handlers: { method?: string; fn: SipHandler }[] = [];
  private readonly dialogMap = new Map<string, Dialog>();
  private readonly pendingInvites = new Map<string, { req: SipRequest; res: SipResponse; guard: NodeJS.Timeout }>();
  /** Completions of our requests still waiting for a final response: called with a made-up 503 on close(). */
  private readonly pendingClients = new Set<() => void>();
  private readonly received = new WeakMap<RawMessage, { lines: HeaderLine[]; flow: Flow }>();
  /** Response handlers running now (a request they make is left to the package's first send: see sendRequest). */
  private answering = 0;
  private closing?: Promise<void>;

  private constructor(opts: SipStackOptions) {
    this.host = opts.host ?? '0.0.0.0';
    this.publicAddress = opts.publicAddress ?? defaultPublicAddress(this.host);
    this.userAgent = opts.userAgent ?? 'Parley';
    this.t1Ms = opts.t1Ms ?? 500;
    this.t2Ms = opts.t2Ms ?? 4000;
    this.inviteTimeoutMs = opts.inviteTimeoutMs ?? 180_000;
    this.logger = opts.logger;
    this.sockets = new SipSockets(
      {
        host: this.host,
        port: opts.port ?? 5060,
        udp: opts.udp ?? true,
        tcp: opts.tcp ?? true,
        tcpIdleMs: opts.tcpIdleMs ?? 10 * 60_000,
        maxTcpConnections: opts.maxTcpConnections ?? 1024,
        logger: opts.logger,
      },
      (parsed, flow) => this.dispatch(parsed, flow),
    );
  }

  /** Binds UDP and TCP and starts serving. Rejects on a bind failure (EADDRINUSE names the port). */
  static async start(opts: SipStackOptions = {}): Promise<SipStack> {
    const stack = new SipStack(opts);
    await stack.sockets.listen();
    return stack;
  }

  get port(): number {
    return this.sockets.port;
  }

  /** Adds middleware for one SIP method (`INVITE`, `OPTIONS`...), or for every method when only a handler is given. */
  use(method: string | SipHandler, handler?: SipHandler): this {
    if (typeof method === 'function') this.handlers.push({ fn: method });
    else if (handler) this.handlers.push({ method: method.toUpperCase(), fn: handler });
    else throw new TypeError('use(method, handler) needs a handler');
    return this;
  }

  /** Answers an INVITE with 200 and our SDP; resolves with the dialog when the ACK arrives. */
  createUAS(req: SipRequest, res: SipResponse, opts: UasOptions): Promise<Dialog> {
    return createUAS(req, res, opts);
  }

  /** Places a call: INVITE, provisional responses, one digest retry, ACK; resolves with the dialog on a 2xx. */
  createUAC(uri: string, opts: UacOptions): Promise<Dialog> {
    return createUAC(this, uri, opts);
  }

  /** Dialogs that are up (or waiting for their ACK). */
  get dialogs(): Dialog[] {
    return [...this.dialogMap.values()];
  }

  /** Methods we accept, for Allow. */
  get allow(): string {
    const methods = new Set<string>();
    if (this.handlers.some((h) => h.method === 'INVITE')) methods.add('INVITE');
    for (const m of ['ACK', 'BYE', 'CANCEL', 'OPTIONS', 'INFO', 'UPDATE']) methods.add(m);
    for (const h of this.handlers) if (h.method) methods.add(h.method);
    return [...methods].join(', ');
  }

  /** Our Contact for a transport (the value of the header, wire text). */
  contactHeader(transport: SipTransportName): string {
    return `<sip:${this.publicAddress}:${this.port}${transport === 'tcp' ? ';transport=tcp' : ''}>`;
  }

  /** A URI for From: a full sip/sips/tel URI as given, else a user part at our public address. */
  localUri(userOrUri: string | undefined): string {
    if (!userOrUri) return `sip:parley@${this.publicAddress}`;
    return /^(sips?|tel):/i.test(userOrUri) ? userOrUri : `sip:${userOrUri}@${this.publicAddress}`;
  }

  newCallId(): string {
    return `${randomBytes(12).toString('hex')}@${this.publicAddress}`;
  }

  /**
   * Sends an out-of-dialog request (not INVITE: createUAC) and resolves with its final response (408 on timeout, 503
   * when it cannot be sent); rejects with TypeError for a bad method, URI or header.
   */
  request(uri: string, opts: SipRequestOptions): Promise<SipIncomingResponse> {
    return sendOutOfDialog(this, uri, opts);
  }

  /** @internal Sends a request we built: picks the flow, sets Via (and Contact), runs a client transaction (not for ACK). */
  sendRequest(raw: RawMessage, opts: OutgoingOptions): void {
    const fail = (status: number, reason: string) => {
      if (raw.method === 'ACK') return this.logger?.debug({ reason }, 'sip ACK not sent');
      const rs = sip.makeResponse(raw, status, reason);
      opts.onResponse(new SipIncomingResponse(rs, [], null));
    };
    const dispatch = (flow: Flow | null): void => {
      if (this.closing) return fail(503, 'SIP stack closed');
      if (!flow) return fail(503, 'No route to the destination');
      opts.onFlow?.(flow);
      const via = raw.method === 'CANCEL' && raw.headers.via?.length ? raw.headers.via : [this.via(flow)];
      const { via: _old, ...rest } = raw.headers;
      raw.headers = { via, ...rest };
      if (opts.contact) raw.headers.contact = this.contactHeader(flow.transport);
      raw.headers['max-forwards'] ??= '70';
      raw.headers['user-agent'] ??= this.userAgent;
      if (opts.routes?.length) raw.headers.route = opts.routes.join(', ');
      if (raw.method === 'ACK') {
        via[0]!.params.branch = `z9hG4bK${randomBytes(10).toString('hex')}`;
        return this.sockets.send(flow, raw);
      }
      let finished = false;
      const onClose = () => {
        finished = true;
        fail(503, 'SIP stack closed');
      };
      this.pendingClients.add(onClose);
      let firstSend = opts.onSent;
      /** The package's first transmission, already sent by us (below), is skipped once. */
      let sentFirst = false;
      const cn: Connection = {
        protocol: flow.transport.toUpperCase(),
        send: (m) => {
          if (sentFirst && m === raw) {
            sentFirst = false;
            return;
          }
          const onSent = firstSend;
          firstSend = undefined; // retransmissions are not reported
          this.sockets.send(
            flow,
            m,
            (err) => {
              this.logger?.debug({ err: err.message, flow }, 'sip send failed');
              tx.message(sip.makeResponse(raw, 503, 'Service Unavailable'));
            },
            onSent,
          );
        },
        release: () => undefined,
      };
      const tx = this.transactions.createClientTransaction(cn, raw, (m) => {
        if (finished && (m.status ?? 0) >= 300) return;
        const meta = this.received.get(m);
        const view = new SipIncomingResponse(m, meta?.lines ?? [], meta?.flow ?? null);
        if (view.status >= 200) {
          finished = true;
          this.pendingClients.delete(onClose);
        }
        this.answering++;
        try {
          opts.onResponse(view);
        } finally {
          this.answering--;
        }
      });
      // The package sends a new transaction's first request on process.nextTick, which runs only after every promise
      // continuation already queued: a paced INVITE left 2 ms after its slot, and 10-15 ms while the server answered a
      // burst of POSTs (bench:outbound). It is sent here, now, and the package's own first send of it is skipped;
      // except for a request made while a response is handled (a digest retry): the package ACKs a final response
      // after its handler returns, and the retry goes after that ACK.
      if (!this.answering) {
        cn.send(raw);
        sentFirst = true;
      }
    };
    // A known target is sent to at once: a paced INVITE leaves at its slot, not after the promise queue.
    if (opts.target) return dispatch(flowOf(opts.target));
    this.resolveFlow(raw, opts).then(dispatch, (err) => {
      this.logger?.warn({ err: err instanceof Error ? err.message : String(err) }, 'sip request routing failed');
      fail(503, 'No route to the destination');
    });
  }

  /** @internal Sends a message as it is, outside any transaction (a re-sent ACK). */
  sendRaw(flow: Flow, raw: RawMessage): void {
    this.sockets.send(flow, raw);
  }

  /** @internal True when a TCP connection to that peer is open. */
  hasConnection(flow: Flow): boolean {
    return this.sockets.hasConnection(flow);
  }

  /** @internal */
  registerDialog(d: Dialog): void {
    this.dialogMap.set(`${d.callId};${d.localTag}`, d);
  }

  /** @internal */
  unregisterDialog(d: Dialog): void {
    const key = `${d.callId};${d.localTag}`;
    if (this.dialogMap.get(key) === d) this.dialogMap.delete(key);
  }

  /** Stops serving: dialogs end without BYE (destroy them first for a clean hang-up), timers and sockets close. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const d of [...this.dialogMap.values()]) d.shutdown();
      this.dialogMap.clear();
      for (const p of this.pendingInvites.values()) clearTimeout(p.guard);
      this.pendingInvites.clear();
      // Transactions created in this tick start on the next one; let them, so shutting them down clears their timers.
      await new Promise((r) => setImmediate(r));
      this.transactions.destroy();
      for (const done of [...this.pendingClients]) done();
      this.pendingClients.clear();
      await this.sockets.close();
    })();
    return this.closing;
  }

  private via(flow: Flow): RawVia {
    return {
      version: '2.0',
      protocol: flow.transport.toUpperCase(),
      host: this.publicAddress,
      port: this.port,
      params: strongBranchParams(flow.transport === 'udp' ? { rport: null } : {}),
    };
  }

  /** The flow for a request: the explicit target, else the first Route, else the Request-URI (DNS for hostnames). */
  private async resolveFlow(raw: RawMessage, opts: OutgoingOptions): Promise<Flow | null> {
    if (opts.target) return flowOf(opts.target);
    const hop = opts.routes?.[0] ? /<([^>]*)>/.exec(opts.routes[0])?.[1] ?? opts.routes[0] : (raw.uri as string);
    const uri = sip.parseUri(hop);
    if (!uri) return null;
    const wanted = uri.params.transport?.toLowerCase() ?? (uri.schema === 'sips' ? 'tls' : undefined);
    if (wanted && wanted !== 'udp' && wanted !== 'tcp') return null;
    if (net.isIP(uri.host)) return { transport: (wanted as SipTransportName) ?? 'udp', address: uri.host, port: uri.port || 5060 };
    const found = await new Promise<ResolvedAddress[]>((resolve) => sip.resolve(uri, resolve));
    const usable = found.find((a) => (wanted ? a.protocol.toLowerCase() === wanted : ['udp', 'tcp'].includes(a.protocol.toLowerCase())));
    return usable ? { transport: usable.protocol.toLowerCase() as SipTransportName, address: usable.address, port: usable.port } : null;
  }

  private dispatch(parsed: Parsed, flow: Flow): void {
    if (parsed.kind === 'reject') {
      this.logger?.debug({ flow, why: parsed.why }, 'sip message rejected');
      const reply = parsed.reply;
      if (reply) {
        const via = reply.headers.via?.[0];
        if (via) this.markReceived(via, flow);
        this.sockets.send(flow, reply);
      }
      return;
    }
    const m = parsed.msg;
    this.received.set(m, { lines: parsed.lines, flow });
    if (!m.method) {
      const t = this.transactions.getClient(m);
      if (t) t.message(m, flow);
      else this.strayResponse(new SipIncomingResponse(m, parsed.lines, flow));
      return;
    }
    this.markReceived(m.headers.via![0]!, flow);
    const t = this.transactions.getServer(m);
    if (t) return t.message(m);
    const source: SipSource = { ...flow };
    const req = new SipRequest(this, m, parsed.lines, source);
    if (m.method === 'ACK') {
      const tag = m.headers.to?.params.tag;
      if (tag) this.dialogMap.get(`${m.headers['call-id']};${tag}`)?.handleAck(req);
      return;
    }
    const cn: Connection = { protocol: flow.transport.toUpperCase(), send: (msg) => this.sockets.send(flow, msg), release: () => undefined };
    const res = new SipResponse(req, this.transactions.createServerTransaction(m, cn));
    this.handle(req, res);
  }

  /** RFC 3261 18.2.1 and RFC 3581: where the request really came from, for the responses. */
  private markReceived(via: RawVia, flow: Flow): void {
    via.params.received = flow.address;
    if ('rport' in via.params) via.params.rport = String(flow.port);
  }

  private handle(req: SipRequest, res: SipResponse): void {
    const { callId } = req.headers;
    if (req.method === 'CANCEL') return this.cancel(req, res);
    const toTag = req.headers.to.tag;
    if (toTag) {
      const dialog = this.dialogMap.get(`${callId};${toTag}`);
      if (dialog) dialog.handleRequest(req, res);
      else res.send(481);
      return;
    }
    if (req.method === 'INVITE') {
      const key = `${callId}|${req.headers.via[0]?.branch}`;
      const guard = setTimeout(() => {
        this.logger?.warn({ callId }, 'sip: INVITE left without a final response; answering 408');
        res.send(408);
      }, this.inviteTimeoutMs);
      this.pendingInvites.set(key, { req, res, guard });
      res.onFinal(() => {
        clearTimeout(guard);
        this.pendingInvites.delete(key);
      });
      res.send(100);
    }
    this.runMiddleware(req, res);
  }

  /** CANCEL of a pending INVITE: 200 to the CANCEL, 487 to the INVITE, `cancel` on the request. */
  private cancel(req: SipRequest, res: SipResponse): void {
    const branch = req.headers.via[0]?.branch;
    const pending = this.pendingInvites.get(`${req.headers.callId}|${branch}`);
    if (pending && !pending.res.finalSent) {
      res.send(200);
      pending.res.send(487);
      pending.req.markCanceled();
      return;
    }
    // Already answered: the INVITE's transaction still exists, and the CANCEL has no effect.
    const probe: RawMessage = { method: 'INVITE', headers: { 'call-id': req.headers.callId, cseq: { seq: 0, method: 'INVITE' }, via: req.raw.headers.via } };
    res.send(this.transactions.getServer(probe) ? 200 : 481);
  }

  private runMiddleware(req: SipRequest, res: SipResponse): void {
    const chain = this.handlers.filter((h) => !h.method || h.method === req.method);
    let i = 0;
    const fail = (err: unknown) => {
      this.logger?.error({ err: err instanceof Error ? err.stack : String(err), method: req.method }, 'sip handler failed');
      if (!res.finalSent) res.send(500);
    };
    const next: SipNext = (err) => {
      if (err !== undefined && err !== null) return fail(err);
      const h = chain[i++];
      if (!h) return this.fallback(req, res);
      try {
        const r = h.fn(req, res, next) as Promise<unknown> | undefined;
        if (r && typeof r.then === 'function') r.then(undefined, fail);
      } catch (e) {
        fail(e);
      }
    };
    next();
  }

  /** What no middleware answered: OPTIONS 200 (carriers ping), stray in-dialog methods 481, anything else 405. */
  private fallback(req: SipRequest, res: SipResponse): void {
    if (res.finalSent) return;
    if (req.method === 'OPTIONS') res.send(200, undefined, { headers: { Allow: this.allow, Accept: 'application/sdp' } });
    else if (NOT_IN_DIALOG.has(req.method)) res.send(481);
    else res.send(405, undefined, { headers: { Allow: this.allow } });
  }

  /** A response no transaction claims: a 2xx to an INVITE retransmitted after its transaction ended (re-ACK). */
  private strayResponse(rs: SipIncomingResponse): void {
    if (rs.headers.cseq.method !== 'INVITE' || rs.status < 200 || rs.status >= 300) return;
    this.dialogMap.get(`${rs.headers.callId};${rs.headers.from.tag}`)?.handleStrayResponse(rs);
  }
}

