// Egress policy for server-side requests to user-given URLs (audio by URL, webhooks): which addresses may be reached.
//
// Always refused: schemes other than http(s), link-local (169.254.0.0/16, fe80::/10), cloud metadata endpoints
// (169.254.169.254, fd00:ec2::254, 100.100.100.200, 168.63.129.16, metadata.google.internal, ...), multicast and
// reserved ranges. Refused unless `allowPrivate`: private (10/8, 172.16/12, 192.168/16, 100.64/10, 198.18/15,
// 192.0.0/24, fc00::/7, fec0::/10), loopback (127/8, ::1, localhost) and unspecified (0.0.0.0/8, ::) addresses.
// IPv6 forms that carry an IPv4 address (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4
// 2002::/16) are judged by that IPv4 address.
//
// `checkEgress` resolves a hostname (every address) and checks each. `safeFetch` goes further: it checks the
// addresses inside the connection's own DNS lookup, so the address connected to is the address checked, and it
// re-checks every redirect hop (each hop is a new connection through the same checked lookup). That closes the
// DNS-rebinding window between "check" and "connect" (a name that answers public to the check and private to the
// connect). Connections are not pooled: every request connects (and so is checked) anew, and a one-attempt
// delivery never fails on a kept-alive socket the receiver closed meanwhile. What remains outside this check: a
// transparent proxy or NAT on the network path, which no client-side check can see.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Readable } from 'node:stream';

export type AddressKind = 'public' | 'private' | 'loopback' | 'unspecified' | 'link-local' | 'metadata' | 'non-unicast';

export type EgressReason = 'scheme' | 'credentials' | Exclude<AddressKind, 'public'>;

export class EgressError extends Error {
  override readonly name = 'EgressError';
  constructor(
    message: string,
    readonly reason: EgressReason,
    /** The refused address or host name (never the full URL, which may carry credentials). */
    readonly target: string,
  ) {
    super(message);
  }
}

/** Resolves a host name to every address it has (for tests: stands in for DNS). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export interface EgressOptions {
  /** Allow private, loopback and unspecified addresses (never link-local or metadata). */
  allowPrivate: boolean;
  /** DNS stand-in; defaults to `dns.lookup(host, {all: true})`. */
  resolve?: Resolver;
}

const ALWAYS_REFUSED: ReadonlySet<AddressKind> = new Set(['link-local', 'metadata', 'non-unicast']);
const PRIVATE_KINDS: ReadonlySet<AddressKind> = new Set(['private', 'loopback', 'unspecified']);

/** Host names of cloud metadata services (refused whatever they resolve to). */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal', 'metadata.tencentyun.com', 'metadata.platformequinix.com']);
/** Metadata addresses outside the link-local range. */
const METADATA_V4 = new Set(['100.100.100.200', '168.63.129.16']);

const DESCRIBE: Record<Exclude<AddressKind, 'public'>, string> = {
  private: 'a private network address',
  loopback: 'a loopback address',
  unspecified: 'an unspecified address',
  'link-local': 'a link-local address (never allowed)',
  metadata: 'a cloud metadata address (never allowed)',
  'non-unicast': 'a multicast or reserved address (never allowed)',
};

// ---------------------------------------------------------------------------------------------- address parsing

function parseIPv4(text: string): number | null {
  if (!net.isIPv4(text)) return null;
  return text.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

/** Eight 16-bit groups, or null when not an IPv6 address. A zone (`%eth0`) is ignored. */
function parseIPv6(input: string): number[] | null {
  let text = input;
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  if (!net.isIPv6(text)) return null;
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseIPv4(tail);
    if (v4 === null) return null;
    text = `${text.slice(0, lastColon + 1)}${((v4 >>> 16) & 0xffff).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = text.split('::');
  const groups = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const head = groups(halves[0]);
  const rest = halves.length > 1 ? groups(halves[1]) : [];
  const fill = halves.length > 1 ? 8 - head.length - rest.length : 0;
  const all = [...head, ...Array<number>(fill).fill(0), ...rest];
  return all.length === 8 && all.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? all : null;
}

const inV4 = (ip: number, base: string, bits: number): boolean => {
  const b = parseIPv4(base) as number;
  const size = 2 ** (32 - bits);
  return Math.floor(ip / size) === Math.floor(b / size);
};

function classifyV4(ip: number, text: string): AddressKind {
  if (METADATA_V4.has(text) || text === '169.254.169.254') return 'metadata';
  if (inV4(ip, '169.254.0.0', 16)) return 'link-local';
  if (inV4(ip, '224.0.0.0', 4) || inV4(ip, '240.0.0.0', 4)) return 'non-unicast';
  if (inV4(ip, '0.0.0.0', 8)) return 'unspecified';
  if (inV4(ip, '127.0.0.0', 8)) return 'loopback';
  if (inV4(ip, '10.0.0.0', 8) || inV4(ip, '172.16.0.0', 12) || inV4(ip, '192.168.0.0', 16) || inV4(ip, '100.64.0.0', 10) || inV4(ip, '198.18.0.0', 15) || inV4(ip, '192.0.0.0', 24)) {
    return 'private';
  }
  return 'public';
}

const v4Text = (hi: number, lo: number): string => `${hi >>> 8}.${hi & 0xff}.${lo >>> 8}.${lo & 0xff}`;

function classifyV6(g: number[]): AddressKind {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number];
  const zeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  const embedded = (hi: number, lo: number) => {
    const text = v4Text(hi, lo);
    return classifyV4(parseIPv4(text) as number, text);
  };
  if (zeroTo(8)) return 'unspecified';
  if (zeroTo(7) && g7 === 1) return 'loopback';
  if (zeroTo(5) && g5 === 0xffff) return embedded(g6, g7); // IPv4-mapped
  if (zeroTo(6)) return embedded(g6, g7); // IPv4-compatible (deprecated)
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return embedded(g6, g7); // NAT64
  if (g0 === 0x2002) return embedded(g1, g2); // 6to4
  if (g0 === 0xfd00 && g1 === 0x0ec2 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && g6 === 0 && g7 === 0x254) return 'metadata';
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local';
  if ((g0 & 0xff00) === 0xff00) return 'non-unicast';
  if ((g0 & 0xfe00) === 0xfc00 || (g0 & 0xffc0) === 0xfec0) return 'private'; // unique local, old site-local
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return 'private'; // local-use NAT64
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return 'private'; // discard-only
  return 'public';
}

/** What kind of address an IP literal is; null when the text is not an IP address. */
export function classifyAddress(address: string): AddressKind | null {
  const v4 = parseIPv4(address);
  if (v4 !== null) return classifyV4(v4, address);
  const v6 = parseIPv6(address);
  return v6 ? classifyV6(v6) : null;
}

function refusal(kind: AddressKind, target: string, opts: EgressOptions, via?: string): EgressError | null {
  if (kind === 'public') return null;
  if (!ALWAYS_REFUSED.has(kind) && opts.allowPrivate && PRIVATE_KINDS.has(kind)) return null;
  const hint = PRIVATE_KINDS.has(kind) ? '; this server does not allow requests to private networks' : '';
  const subject = via ? `${via} resolves to ${target}, which is` : `${target} is`;
  return new EgressError(`refused by the egress policy: ${subject} ${DESCRIBE[kind]}${hint}`, kind, target);
}

// ---------------------------------------------------------------------------------------------- checks

const bareHost = (url: URL): string => url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();

/**
 * The checks that need no DNS: scheme, embedded credentials, IP literals, metadata and localhost names.
 * Returns the bare host when it is a name still to be resolved, null when it was an IP literal.
 */
export function checkEgressStatic(url: URL, opts: EgressOptions): string | null {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new EgressError(`refused by the egress policy: only http and https URLs are allowed, not ${url.protocol.replace(/:$/, '')}`, 'scheme', url.protocol);
  }
  const host = bareHost(url);
  const kind = classifyAddress(host);
  if (kind !== null) {
    const refused = refusal(kind, host, opts);
    if (refused) throw refused;
    return null;
  }
  if (METADATA_HOSTS.has(host)) throw new EgressError(`refused by the egress policy: ${host} is ${DESCRIBE.metadata}`, 'metadata', host);
  if (host === 'localhost' || host.endsWith('.localhost')) {
    const refused = refusal('loopback', host, opts);
    if (refused) throw refused;
  }
  return host;
}

const systemResolver: Resolver = async (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** Checks every address a resolved name has; throws EgressError naming the first refused one. */
function checkResolved(host: string, addresses: { address: string }[], opts: EgressOptions): void {
  for (const { address } of addresses) {
    const kind = classifyAddress(address);
    const refused = refusal(kind ?? 'non-unicast', address, opts, host);
    if (refused) throw refused;
  }
}

/**
 * Throws EgressError when the URL may not be requested under the policy. Host names are resolved and every
 * address is checked. A name that does not resolve rejects with the resolver's error (for example ENOTFOUND).
 */
export async function checkEgress(url: URL, opts: EgressOptions): Promise<void> {
  const host = checkEgressStatic(url, opts);
  if (host === null) return;
  const addresses = await (opts.resolve ?? systemResolver)(host);
  if (addresses.length === 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  checkResolved(host, addresses, opts);
}

// ---------------------------------------------------------------------------------------------- safe fetch

export interface SafeFetchInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  signal?: AbortSignal;
}

export interface SafeFetchOptions extends EgressOptions {
  /** Redirects followed, each hop checked again (default 3; 0 returns the 3xx response itself). */
  maxRedirects?: number;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/** A `lookup` for net.connect that refuses the connection when any resolved address is refused by the policy. */
function checkedLookup(opts: EgressOptions) {
  const resolve = opts.resolve ?? systemResolver;
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        try {
          if (addresses.length === 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
          checkResolved(hostname, addresses, opts);
        } catch (err) {
          callback(err as NodeJS.ErrnoException, '');
          return;
        }
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        const usable = wanted.length ? wanted : addresses;
        if (options.all) callback(null, usable);
        else callback(null, (usable[0] as dns.LookupAddress).address, (usable[0] as dns.LookupAddress).family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

function requestOnce(url: URL, init: SafeFetchInit, opts: SafeFetchOptions): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const body = init.body === undefined ? undefined : typeof init.body === 'string' ? Buffer.from(init.body, 'utf8') : init.body;
    const headers: Record<string, string> = { ...init.headers };
    if (body !== undefined && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-length')) headers['Content-Length'] = String(body.byteLength);
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(url, {
      method: init.method ?? 'GET',
      headers,
      // No pooling: each request opens (and checks) its own connection.
      agent: false,
      // Checked at connect time: the address connected to is the one the policy saw.
      lookup: checkedLookup(opts) as unknown as net.LookupFunction,
      signal: init.signal,
    });
    req.once('response', resolve);
    req.once('error', (err) => reject(init.signal?.aborted ? abortError(init.signal) : err));
    req.end(body);
  });
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'TimeoutError') return Object.assign(new Error('timed out'), { name: 'TimeoutError' });
  return reason instanceof Error ? reason : Object.assign(new Error('aborted'), { name: 'AbortError' });
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([204, 205, 304]);

function toResponse(res: http.IncomingMessage, method: string): Response {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 599) {
    res.destroy();
    throw new Error(`invalid HTTP status ${status}`);
  }
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string);
  if (NULL_BODY.has(status) || method === 'HEAD') {
    res.resume();
    return new Response(null, { status, statusText: res.statusMessage, headers });
  }
  return new Response(Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>, { status, statusText: res.statusMessage, headers });
}

/**
 * A fetch for user-given URLs under the egress policy: checks the URL, connects only to checked addresses, and
 * follows at most `maxRedirects` redirects (default 3), checking each hop as a new request. Returns a standard
 * Response whose body the caller must consume or cancel. Rejects with EgressError on a refusal, with the socket's
 * error on network failures (ECONNREFUSED, ENOTFOUND, TLS), and with a TimeoutError/AbortError when `signal` fires.
 */
export async function safeFetch(url: string | URL, init: SafeFetchInit, opts: SafeFetchOptions): Promise<Response> {
  const maxRedirects = opts.maxRedirects ?? 3;
  let current = typeof url === 'string' ? new URL(url) : url;
  let request: SafeFetchInit = { ...init, method: (init.method ?? 'GET').toUpperCase() };
  for (let hop = 0; ; hop++) {
    if (current.username || current.password) {
      throw new EgressError('refused by the egress policy: URLs with embedded credentials are not allowed', 'credentials', current.hostname);
    }
    checkEgressStatic(current, opts);
    if (init.signal?.aborted) throw abortError(init.signal);
    const res = await requestOnce(current, request, opts);
    const location = res.headers.location;
    if (maxRedirects > 0 && REDIRECTS.has(res.statusCode ?? 0) && location) {
      res.resume();
      if (hop >= maxRedirects) throw new Error(`too many redirects (more than ${maxRedirects})`);
      const next = new URL(location, current);
      const status = res.statusCode as number;
      if (status === 303 || ((status === 301 || status === 302) && request.method === 'POST')) {
        const headers = Object.fromEntries(Object.entries(request.headers ?? {}).filter(([k]) => !/^content-(type|length|encoding|language)$/i.test(k)));
        request = { ...request, method: request.method === 'HEAD' ? 'HEAD' : 'GET', body: undefined, headers };
      }
      if (next.origin !== current.origin) {
        const headers = Object.fromEntries(Object.entries(request.headers ?? {}).filter(([k]) => !/^(authorization|cookie|proxy-authorization)$/i.test(k)));
        request = { ...request, headers };
      }
      current = next;
      continue;
    }
    return toResponse(res, request.method as string);
  }
}
