// Typed views of SIP messages for applications: a received request, the response we send to it, a received response,
// and SipError for a request that failed.
import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import sip, { type RawAor, type RawMessage, type ServerTransaction } from 'sip';
import { fromWire, toWire, type HeaderLine } from './wire.js';
import type { SipTransportName } from './transport.js';
import type { SipStack } from './stack.js';

export type { SipTransportName };

export interface SipSource {
  address: string;
  port: number;
  transport: SipTransportName;
}

export interface SipUri {
  scheme: 'sip' | 'sips' | 'tel';
  /** Percent-decoded user part (the number of a `tel:` URI). */
  user?: string;
  host: string;
  port?: number;
  params: Record<string, string | null>;
}

/** A From/To/Contact value. */
export interface SipNameAddr {
  name?: string;
  uri: string;
  user?: string;
  host?: string;
  port?: number;
  tag?: string;
  params: Record<string, string | null>;
}

export interface SipVia {
  transport: string;
  host: string;
  port?: number;
  branch?: string;
  params: Record<string, string | null>;
}

export interface SipHeaders {
  from: SipNameAddr;
  to: SipNameAddr;
  callId: string;
  cseq: { seq: number; method: string };
  via: SipVia[];
  contact: SipNameAddr[];
  contentType?: string;
}

/** Extra headers to send: name -> value (an array sends one comma-separated line). */
export type SipHeaderMap = Record<string, string | string[]>;

const REASONS: Record<number, string> = {
  100: 'Trying', 180: 'Ringing', 181: 'Call Is Being Forwarded', 182: 'Queued', 183: 'Session Progress', 200: 'OK', 202: 'Accepted',
  400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
  406: 'Not Acceptable', 407: 'Proxy Authentication Required', 408: 'Request Timeout', 410: 'Gone', 413: 'Request Entity Too Large',
  415: 'Unsupported Media Type', 416: 'Unsupported URI Scheme', 420: 'Bad Extension', 480: 'Temporarily Unavailable',
  481: 'Call/Transaction Does Not Exist', 482: 'Loop Detected', 483: 'Too Many Hops', 484: 'Address Incomplete', 486: 'Busy Here',
  487: 'Request Terminated', 488: 'Not Acceptable Here', 491: 'Request Pending', 500: 'Server Internal Error', 501: 'Not Implemented',
  502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Server Time-out', 600: 'Busy Everywhere', 603: 'Decline',
  604: 'Does Not Exist Anywhere', 606: 'Not Acceptable',
};

export function reasonPhrase(status: number): string {
  return REASONS[status] ?? (status < 200 ? 'Progress' : status < 300 ? 'OK' : 'Error');
}

/** What a dialog accepts from the peer (Allow on our INVITEs and 200s). */
export const DIALOG_ALLOW = 'INVITE, ACK, BYE, CANCEL, OPTIONS, INFO, UPDATE';

/** Headers only the stack writes. */
const RESERVED = new Set(['via', 'from', 'to', 'call-id', 'cseq', 'content-length', 'i', 'f', 't', 'v', 'l']);

/** Copies application headers onto a raw message (UTF-8 values to wire bytes); throws TypeError on a bad name or value. */
export function applyHeaders(raw: RawMessage, headers: SipHeaderMap | undefined): void {
  for (const [name, value] of Object.entries(headers ?? {})) {
    const key = name.toLowerCase();
    if (!/^[A-Za-z0-9!%*_+`'~.-]{1,64}$/.test(name)) throw new TypeError(`invalid SIP header name "${name}"`);
    if (RESERVED.has(key)) throw new TypeError(`the ${name} header is set by the SIP stack`);
    const values = Array.isArray(value) ? value : [value];
    if (values.some((v) => typeof v !== 'string' || /[\r\n\0]/.test(v))) throw new TypeError(`invalid value for SIP header ${name}`);
    raw.headers[key] = values.map(toWire).join(', ');
  }
}

export function randomTag(): string {
  return randomBytes(8).toString('hex');
}

function decodeUser(user: string | undefined): string | undefined {
  if (user === undefined) return undefined;
  try {
    return decodeURIComponent(user);
  } catch {
    return user;
  }
}

/** Parses a sip:, sips: or tel: URI; undefined when it is none of them. */
export function parseSipUri(uri: string): SipUri | undefined {
  const tel = /^tel:([^;]+)((?:;[^;]*)*)$/i.exec(uri);
  if (tel) return { scheme: 'tel', user: decodeUser(tel[1]), host: '', params: {} };
  const parsed = sip.parseUri(uri);
  if (!parsed) return undefined;
  return {
    scheme: parsed.schema === 'sips' ? 'sips' : 'sip',
    user: decodeUser(parsed.user),
    host: parsed.host,
    port: parsed.port || undefined,
    params: parsed.params,
  };
}

function nameAddr(aor: RawAor): SipNameAddr {
  const uri = typeof aor.uri === 'string' ? aor.uri : sip.stringifyUri(aor.uri);
  const parsed = parseSipUri(uri);
  const name = aor.name ? fromWire(aor.name.replace(/^"|"$/g, '')) : undefined;
  const tag = aor.params.tag ?? undefined;
  return { name, uri: fromWire(uri), user: parsed?.user && fromWire(parsed.user), host: parsed?.host, port: parsed?.port, tag, params: aor.params };
}

function typedHeaders(raw: RawMessage): SipHeaders {
  const h = raw.headers;
  const contact = Array.isArray(h.contact) ? h.contact.map(nameAddr) : [];
  return {
    from: nameAddr(h.from!),
    to: nameAddr(h.to!),
    callId: h['call-id']!,
    cseq: { seq: h.cseq!.seq, method: h.cseq!.method },
    via: (h.via ?? []).map((v) => ({ transport: v.protocol, host: v.host, port: v.port, branch: v.params.branch ?? undefined, params: v.params })),
    contact,
    contentType: typeof h['content-type'] === 'string' ? h['content-type'] : undefined,
  };
}

/** What requests and responses we receive share: parsed headers, raw header access, the body. */
class Received<S extends SipSource | null> {
  readonly headers: SipHeaders;
  /** The body as text (UTF-8). */
  readonly body: string;

  constructor(
    /** @internal The package's message. */
    readonly raw: RawMessage,
    private readonly lines: HeaderLine[],
    /** Null for a response the stack made up itself (a timeout, a transport failure). */
    readonly source: S,
  ) {
    this.headers = typedHeaders(raw);
    this.body = fromWire(raw.content ?? '');
  }

  /** The first value of a header as received (case-insensitive name, long form), or undefined. */
  get(name: string): string | undefined {
    const key = name.toLowerCase();
    const line = this.lines.find((l) => l.name === key);
    return line && fromWire(line.value);
  }

  /** Every line of a header, in order. */
  getAll(name: string): string[] {
    const key = name.toLowerCase();
    return this.lines.filter((l) => l.name === key).map((l) => fromWire(l.value));
  }
}

/** A request we received. An INVITE emits `cancel` when the caller cancels it before the final response. */
export class SipRequest extends Received<SipSource> {
  readonly method: string;
  /** The Request-URI as received. */
  readonly uri: string;
  readonly ruri: SipUri;
  canceled = false;
  private readonly events = new EventEmitter();

  constructor(
    /** The stack that received it (createUAS and responses go through it). */
    readonly stack: SipStack,
    raw: RawMessage,
    lines: HeaderLine[],
    source: SipSource,
  ) {
    super(raw, lines, source);
    this.method = raw.method!;
    this.uri = fromWire(typeof raw.uri === 'string' ? raw.uri : sip.stringifyUri(raw.uri!));
    this.ruri = parseSipUri(typeof raw.uri === 'string' ? raw.uri : sip.stringifyUri(raw.uri!))!;
  }

  /** `cancel`: the caller canceled this INVITE (the stack already answered 200 to the CANCEL and 487 to the INVITE). */
  on(event: 'cancel', listener: () => void): this {
    this.events.on(event, listener);
    return this;
  }

  once(event: 'cancel', listener: () => void): this {
    this.events.once(event, listener);
    return this;
  }

  off(event: 'cancel', listener: () => void): this {
    this.events.off(event, listener);
    return this;
  }

  /** @internal */
  markCanceled(): void {
    if (this.canceled) return;
    this.canceled = true;
    this.events.emit('cancel');
  }
}

/** A response we received (or one the stack made up: `source` null). */
export class SipIncomingResponse extends Received<SipSource | null> {
  readonly status: number;
  readonly reason: string;

  constructor(raw: RawMessage, lines: HeaderLine[], source: SipSource | null) {
    super(raw, lines, source);
    this.status = raw.status!;
    this.reason = raw.reason || reasonPhrase(this.status);
  }
}

export interface SendOptions {
  headers?: SipHeaderMap;
  body?: string;
}

/** The response side of a received request (its server transaction). */
export class SipResponse {
  /** Our To tag: on every response but 100 (the dialog's local tag for an INVITE). */
  readonly toTag = randomTag();
  /** The last status sent, 0 before any. */
  status = 0;
  /** @internal The last message sent (a 2xx to an INVITE is retransmitted from it). */
  lastSent?: RawMessage;
  private readonly finalListeners: ((status: number) => void)[] = [];

  constructor(
    private readonly req: SipRequest,
    private readonly transaction: ServerTransaction,
  ) {}

  get finalSent(): boolean {
    return this.status >= 200;
  }

  /**
   * Sends a response; returns false (and sends nothing) once a final response went out, e.g. after a CANCEL answered
   * the INVITE with 487. Throws TypeError for a status outside 100-699 or a bad header.
   */
  send(status: number, reason?: string, opts: SendOptions = {}): boolean {
    if (!Number.isInteger(status) || status < 100 || status > 699) throw new TypeError(`invalid SIP status ${status}`);
    if (this.finalSent) return false;
    const raw = sip.makeResponse(this.req.raw, status, toWire(reason ?? reasonPhrase(status)));
    const to = raw.headers.to!;
    if (status > 100 && !to.params.tag) raw.headers.to = { ...to, params: { ...to.params, tag: this.toTag } };
    const stack = this.req.stack;
    if (this.req.method === 'INVITE' && status > 100 && status < 300) {
      raw.headers.contact = stack.contactHeader(this.req.source.transport);
      // RFC 3261 12.1.1: the dialog's route set goes back to the caller's proxies.
      if (this.req.raw.headers['record-route']) raw.headers['record-route'] = this.req.raw.headers['record-route'];
    }
    raw.headers['user-agent'] = stack.userAgent;
    applyHeaders(raw, opts.headers);
    if (opts.body) raw.content = toWire(opts.body);
    this.status = status;
    this.lastSent = raw;
    this.transaction.send(raw);
    if (status >= 200) for (const l of this.finalListeners.splice(0)) l(status);
    return true;
  }

  /** @internal Sends the last response again (2xx retransmission). */
  resend(): void {
    if (this.lastSent) this.transaction.send(this.lastSent);
  }

  /** @internal */
  onFinal(listener: (status: number) => void): void {
    this.finalListeners.push(listener);
  }
}

/** A request that ended without success: the final status (408 for a timeout, 503 for a transport failure, 487 canceled). */
export class SipError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly response?: SipIncomingResponse,
  ) {
    super(`SIP ${status} ${reason}`);
    this.name = 'SipError';
  }
}
