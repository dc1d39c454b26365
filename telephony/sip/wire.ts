// SIP bytes in and out, safely: framing, size limits, the checks the `sip` package's parser skips, and a 400 for a
// broken request that can still be answered. The package's parser has quadratic regular expressions on long runs of
// whitespace and long lists, so a message reaches it only rebuilt from bounded, whitespace-collapsed header lines.
import { randomBytes } from 'node:crypto';
import sip, { type RawMessage } from 'sip';

export const WIRE_LIMITS = {
  /** Start line plus headers. */
  headBytes: 16 * 1024,
  /** One header line (an Identity header is about 1 KiB). */
  lineBytes: 4096,
  headerLines: 128,
  /** Comma-separated items in one line of a list header the package parses (Via, Contact, Route...). */
  listItems: 64,
  bodyBytes: 64 * 1024,
};

/** Header names in long form, lower case. */
const COMPACT: Record<string, string> = {
  i: 'call-id', m: 'contact', e: 'content-encoding', l: 'content-length', c: 'content-type', f: 'from', s: 'subject',
  k: 'supported', t: 'to', v: 'via', o: 'event', r: 'refer-to', b: 'referred-by', u: 'allow-events', x: 'session-expires',
};
/** Headers that may appear once. */
const SINGLE = new Set(['call-id', 'cseq', 'from', 'to', 'content-length', 'max-forwards', 'content-type']);
/** Headers the package splits into lists with its own regular expressions. */
const LISTS = new Set(['via', 'contact', 'route', 'record-route', 'path', 'www-authenticate', 'proxy-authenticate', 'authorization', 'proxy-authorization']);
/** What a 400 is built from when the rest of a message is broken. */
const ESSENTIAL = new Set(['via', 'from', 'to', 'call-id', 'cseq']);

const REQUEST_LINE = /^([A-Za-z][A-Za-z0-9._!%*+`'~-]{0,31}) ([^\s]{1,2048}) SIP\/2\.0$/;
const STATUS_LINE = /^SIP\/2\.0 ([1-6]\d\d) ([^\r\n\0]{0,256})$/;
const HEADER_LINE = /^([A-Za-z0-9!%*_+`'~.-]{1,64})[ \t]*:([^]*)$/;

export interface HeaderLine {
  /** Long form, lower case. */
  name: string;
  value: string;
}

export type Parsed =
  | { kind: 'message'; msg: RawMessage; lines: HeaderLine[]; body: Buffer }
  /** `reply`: a 400 to send when the request can be answered (it has a Via and is not an ACK); else it is dropped. */
  | { kind: 'reject'; why: string; reply: RawMessage | null };

const reject = (why: string, reply: RawMessage | null = null): Parsed => ({ kind: 'reject', why, reply });

/** Splits the head (latin1 text, no final blank line) into checked lines; a reason string when it is unusable. */
function splitHead(head: string): { start: string; lines: HeaderLine[]; problem?: string } | string {
  if (head.length > WIRE_LIMITS.headBytes) return 'headers too large';
  const raw = head.split(/\r\n(?![ \t])/);
  const start = raw[0] ?? '';
  if (!REQUEST_LINE.test(start) && !STATUS_LINE.test(start)) return 'not a SIP start line';
  if (raw.length - 1 > WIRE_LIMITS.headerLines) return 'too many header lines';
  const lines: HeaderLine[] = [];
  const seen = new Set<string>();
  let problem: string | undefined;
  for (let i = 1; i < raw.length; i++) {
    const line = raw[i]!.replace(/\r\n[ \t]+/g, ' ');
    const m = HEADER_LINE.exec(line);
    if (!m || /[\r\n\0]/.test(line)) {
      problem ??= 'malformed header line';
      continue;
    }
    const short = m[1]!.toLowerCase();
    const name = COMPACT[short] ?? short;
    if (line.length > WIRE_LIMITS.lineBytes) {
      problem ??= `${name} header too long`;
      continue;
    }
    // Whitespace runs of two or more are where the package's regular expressions go quadratic; one space means the same.
    const value = m[2]!.replace(/\s{2,}/g, ' ').trim();
    if (SINGLE.has(name)) {
      if (seen.has(name)) problem ??= `duplicate ${name} header`;
      seen.add(name);
    }
    if (LISTS.has(name) && value.split(',').length > WIRE_LIMITS.listItems) {
      problem ??= `too many items in ${name}`;
      continue;
    }
    lines.push({ name, value });
  }
  return { start, lines, problem };
}

/** The package's parse of a start line and already checked header lines; never throws. */
function parseLines(start: string, lines: HeaderLine[]): RawMessage | undefined {
  const text = `${start}\r\n${lines.map((l) => `${l.name}: ${l.value}`).join('\r\n')}\r\n\r\n`;
  try {
    return sip.parse(text);
  } catch {
    return undefined;
  }
}

function isAor(v: unknown): boolean {
  const aor = v as { uri?: unknown } | undefined;
  return typeof aor?.uri === 'string' && aor.uri.length > 0;
}

/** The 400 for a request that can be answered (a Via, not an ACK), or null. */
function badRequest(msg: RawMessage | undefined, why: string): RawMessage | null {
  if (!msg?.method || msg.method === 'ACK') return null;
  const h = msg.headers;
  if (!Array.isArray(h.via) || !h.via[0]?.host || !h.via[0].protocol) return null;
  const reply = sip.makeResponse(msg, 400, 'Bad Request', { headers: { warning: `399 parley "${why}"` } });
  if (!isAor(h.from)) delete reply.headers.from;
  if (!isAor(h.to)) delete reply.headers.to;
  else if (!h.to!.params.tag) reply.headers.to = { ...h.to!, params: { ...h.to!.params, tag: randomBytes(6).toString('hex') } };
  if (typeof h['call-id'] !== 'string') delete reply.headers['call-id'];
  if (typeof h.cseq?.seq !== 'number') delete reply.headers.cseq;
  return reply;
}

/** What is missing or wrong in the headers every message needs; undefined when it is whole. */
function checkEssentials(msg: RawMessage): string | undefined {
  const h = msg.headers;
  if (!Array.isArray(h.via) || h.via.length === 0 || !h.via[0]?.host || !h.via[0].protocol) return 'missing or malformed Via';
  if (typeof h['call-id'] !== 'string' || h['call-id'].length === 0 || h['call-id'].length > 256) return 'missing or malformed Call-ID';
  const cseq = h.cseq;
  if (!cseq || !Number.isInteger(cseq.seq) || cseq.seq < 0 || cseq.seq > 0x7fffffff) return 'missing or malformed CSeq';
  if (msg.method && cseq.method !== msg.method) return 'CSeq method does not match the request';
  if (!isAor(h.from)) return 'missing or malformed From';
  if (!isAor(h.to)) return 'missing or malformed To';
  const mf = h['max-forwards'];
  if (mf !== undefined && (typeof mf !== 'string' || !/^\d{1,3}$/.test(mf) || Number(mf) > 255)) return 'malformed Max-Forwards';
  if (msg.method && !sip.parseUri(msg.uri as string)) return 'unsupported Request-URI';
  return undefined;
}

/** Content-Length from the head's lines: a number, undefined when absent, or NaN when malformed or too large. */
function declaredLength(lines: HeaderLine[]): number | undefined {
  const line = lines.find((l) => l.name === 'content-length');
  if (!line) return undefined;
  if (!/^\d{1,9}$/.test(line.value)) return NaN;
  const n = Number(line.value);
  return n > WIRE_LIMITS.bodyBytes ? NaN : n;
}

/**
 * Parses one message: `head` is the latin1 text before the blank line, `body` the bytes after it (a datagram's rest,
 * or exactly Content-Length bytes on a stream).
 */
export function parseMessage(head: string, body: Buffer, datagram: boolean): Parsed {
  const split = splitHead(head);
  if (typeof split === 'string') return reject(split);
  const { start, lines } = split;
  let problem = split.problem;
  const declared = declaredLength(lines);
  if (declared !== undefined && Number.isNaN(declared)) problem ??= 'malformed Content-Length';
  else if (datagram && declared !== undefined && declared > body.length) problem ??= 'Content-Length is larger than the body';
  const msg = problem ? undefined : parseLines(start, lines);
  problem = msg ? checkEssentials(msg) : problem ?? 'unparseable headers';
  if (problem !== undefined || !msg) {
    const why = problem ?? 'unparseable headers';
    const essentials = parseLines(start, lines.filter((l) => ESSENTIAL.has(l.name)));
    return reject(why, badRequest(essentials, why));
  }
  const content = declared === undefined ? body : body.subarray(0, declared);
  if (content.length > WIRE_LIMITS.bodyBytes) return reject('body too large', badRequest(msg, 'body too large'));
  msg.content = content.toString('latin1');
  return { kind: 'message', msg, lines, body: content };
}

const CRLF2 = Buffer.from('\r\n\r\n');

/** One datagram: null for a keep-alive (only CR/LF), else the parse. */
export function parseDatagram(data: Buffer): Parsed | null {
  let start = 0;
  while (start < data.length && (data[start] === 13 || data[start] === 10)) start++;
  if (start === data.length) return null;
  const end = data.indexOf(CRLF2, start);
  if (end < 0) return reject('no end of headers');
  return parseMessage(data.toString('latin1', start, end), data.subarray(end + 4), true);
}

/** Cuts a TCP byte stream into messages by Content-Length, with bounded buffering. */
export class StreamFramer {
  private buf: Buffer = Buffer.alloc(0);
  private scanned = 0;

  /**
   * Adds bytes and returns what they completed: messages (or rejects), `pings` (a CRLFCRLF keep-alive, RFC 5626: answer
   * with CRLF), and `fatal` when the stream cannot be framed any more (the connection should close).
   */
  push(chunk: Buffer): { frames: Parsed[]; pings: number; fatal?: string } {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const frames: Parsed[] = [];
    let pings = 0;
    for (;;) {
      let lead = 0;
      while (lead < this.buf.length && (this.buf[lead] === 13 || this.buf[lead] === 10)) lead++;
      if (lead > 0) {
        if (lead >= 4 && this.buf.subarray(0, 4).equals(CRLF2)) pings++;
        this.buf = this.buf.subarray(lead);
        this.scanned = 0;
      }
      if (this.buf.length === 0) break;
      const end = this.buf.indexOf(CRLF2, Math.max(0, this.scanned - 3));
      if (end < 0) {
        this.scanned = this.buf.length;
        if (this.buf.length > WIRE_LIMITS.headBytes) return { frames, pings, fatal: 'headers too large' };
        break;
      }
      if (end > WIRE_LIMITS.headBytes) return { frames, pings, fatal: 'headers too large' };
      const head = this.buf.toString('latin1', 0, end);
      const split = splitHead(head);
      const declared = typeof split === 'string' ? 0 : declaredLength(split.lines) ?? 0;
      if (Number.isNaN(declared)) {
        frames.push(parseMessage(head, Buffer.alloc(0), false));
        return { frames, pings, fatal: 'malformed Content-Length' };
      }
      if (this.buf.length < end + 4 + declared) {
        this.scanned = end;
        break;
      }
      frames.push(parseMessage(head, this.buf.subarray(end + 4, end + 4 + declared), false));
      this.buf = this.buf.subarray(end + 4 + declared);
      this.scanned = 0;
    }
    if (this.buf.length > 0 && this.buf.byteOffset > 64 * 1024) this.buf = Buffer.from(this.buf);
    return { frames, pings };
  }
}

/** Bytes of a message to send. Header values and content are latin1 strings of the wire bytes. */
export function serialize(m: RawMessage): Buffer {
  return Buffer.from(sip.stringify(m), 'latin1');
}

/** A UTF-8 string as the latin1 string of its bytes (how message text is held here). */
export function toWire(s: string): string {
  return Buffer.from(s, 'utf8').toString('latin1');
}

/** The reverse of toWire. */
export function fromWire(s: string): string {
  return Buffer.from(s, 'latin1').toString('utf8');
}
