// Telephony input rules: E.164 numbers, peer IPs/CIDRs (and matching an address against them), carrier addresses, SIP headers.
import { z } from 'zod';
import { headerMapSchema, validateHeaderMap } from '../headers.js';
import { checkField, says } from '../validation.js';
import { BlockList, isIP } from 'node:net';
import { badRequest } from '../errors.js';

export const E164 = /^\+[1-9]\d{6,14}$/;
export const isE164 = (value: unknown): value is string => typeof value === 'string' && E164.test(value);

export const TRANSPORTS = ['udp', 'tcp', 'tls'] as const;
export type Transport = (typeof TRANSPORTS)[number];

/** An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) as the IPv4 address it carries; other input unchanged. */
function unmapped(address: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return m ? (m[1] as string) : address;
}

/** Why an allowed-address entry is not an IP or CIDR (v4 or v6), or null when it is one. */
export function addressEntryError(entry: unknown): string | null {
  if (typeof entry !== 'string' || entry.trim() === '') return 'must be an IP address or CIDR';
  const [ip, prefix, extra] = entry.trim().split('/');
  const family = isIP(ip as string);
  if (!family || extra !== undefined) return `"${entry}" is not an IP address or CIDR`;
  if (prefix === undefined) return null;
  const bits = Number(prefix);
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefix) || bits > max) return `"${entry}" has a prefix length outside 0-${max}`;
  return null;
}

/** A list of IPs/CIDRs (v4 or v6). */
export const addressListSchema = (max = 100) =>
  z
    .array(
      z.string(says('must be an IP address or CIDR')).superRefine((entry, ctx) => {
        const err = addressEntryError(entry);
        if (err) ctx.addIssue({ code: 'custom', message: err });
      }),
      says('must be an array of IP addresses or CIDRs'),
    )
    .max(max, `at most ${max} entries`);

/** Validates a list of IPs/CIDRs, pushing an error per bad entry under `field`; returns the trimmed list. */
export function validateAddressList(value: unknown, field: string, errors: string[], max = 100): string[] | undefined {
  const list = checkField({ [field]: addressListSchema(max) }, field, value, errors);
  return list.ok ? [...new Set((list.data as string[]).map((v) => v.trim()))] : undefined;
}

/**
 * Whether a peer address is allowed by a list of IPs and CIDRs (v4 and v6); an empty list allows any address.
 * IPv4-mapped IPv6 addresses on either side are matched as IPv4.
 */
export function addressAllowed(list: readonly string[], address: string): boolean {
  if (list.length === 0) return true;
  const ip = unmapped(address.trim().replace(/^\[(.*)\]$/, '$1'));
  const family = isIP(ip);
  if (!family) return false;
  const blocks = new BlockList();
  for (const entry of list) {
    const [rawIp, prefix] = entry.split('/');
    const net = unmapped(rawIp as string);
    const netFamily = isIP(net);
    if (!netFamily) continue;
    const type = netFamily === 4 ? 'ipv4' : 'ipv6';
    // A mapped IPv4 CIDR (`::ffff:10.0.0.0/104`) keeps its IPv4 part of the prefix.
    let bits = prefix === undefined ? undefined : Number(prefix);
    if (bits !== undefined && netFamily === 4 && isIP(rawIp as string) === 6) bits = Math.max(0, bits - 96);
    if (bits === undefined) blocks.addAddress(net, type);
    else blocks.addSubnet(net, bits, type);
  }
  return blocks.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

const HOSTNAME = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

export interface CarrierAddress {
  /** As stored and shown: the input without its `sip:`/`sips:` prefix. */
  address: string;
  host: string;
  port: number | null;
  /** Whether the input carried a `sips:` prefix. */
  secure: boolean;
}

/** Parses `host`, `host:port`, `[v6]` or `[v6]:port`, with an optional `sip:`/`sips:` prefix; null if malformed. */
export function parseCarrierAddress(raw: unknown): CarrierAddress | null {
  if (typeof raw !== 'string') return null;
  const trimmed = raw.trim();
  const scheme = /^sips?:/i.exec(trimmed);
  const rest = scheme ? trimmed.slice(scheme[0].length) : trimmed;
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]\s/@;?]+))(?::(\d{1,5}))?$/.exec(rest);
  if (!m) return null;
  const host = (m[1] ?? m[2]) as string;
  if (m[1] !== undefined ? isIP(host) !== 6 : !(isIP(host) === 4 || HOSTNAME.test(host))) return null;
  const port = m[3] === undefined ? null : Number(m[3]);
  if (port !== null && (port < 1 || port > 65535)) return null;
  return { address: rest, host, port, secure: Boolean(scheme && scheme[0].toLowerCase() === 'sips:') };
}

/** `transport:host:port` with a lower-case host and the default port (5060, 5061 for tls): one outbound trunk each. */
export function carrierAddressKey(address: CarrierAddress, transport: Transport): string {
  const host = address.host.toLowerCase().replace(/\.$/, '');
  const port = address.port ?? (transport === 'tls' ? 5061 : 5060);
  return `${transport}:${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/** A list of E.164 numbers without repeats. */
export const numberListSchema = (max = 100) =>
  z
    .array(z.string(says('must be an E.164 phone number such as +15550100')).regex(E164), says('must be an array of E.164 phone numbers'))
    .max(max, `at most ${max} numbers`)
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      list.forEach((n, i) => {
        if (!E164.test(n)) return;
        if (seen.has(n)) ctx.addIssue({ code: 'custom', path: [i], message: `${n} is listed twice` });
        seen.add(n);
      });
    });

/** Validates a list of E.164 numbers (no repeats) under `field`; returns it, or undefined after pushing errors. */
export function validateNumberList(value: unknown, field: string, errors: string[], max = 100): string[] | undefined {
  return checkField({ [field]: numberListSchema(max) }, field, value, errors).data as string[] | undefined;
}

/** RFC 3261 `token` characters. */
const TOKEN = /^[A-Za-z0-9\-.!%*_+`'~]+$/;
/** Headers the SIP leg writes itself (long and compact forms). */
const RESERVED_SIP_HEADERS = new Set([
  'via', 'v', 'from', 'f', 'to', 't', 'call-id', 'i', 'cseq', 'contact', 'm', 'content-length', 'l', 'content-type', 'c',
  'max-forwards', 'route', 'record-route', 'authorization', 'proxy-authorization', 'www-authenticate', 'proxy-authenticate',
  'allow', 'supported', 'k', 'require', 'content-encoding', 'e', 'expires', 'rseq', 'rack',
]);
const MAX_HEADERS = 20;
const MAX_HEADER_VALUE = 1024;

/** Extra SIP headers `{name: value}`: token names not written by the SIP leg, string values without CR/LF/NUL. */
export const sipHeadersSchema = headerMapSchema({
  token: TOKEN,
  reserved: RESERVED_SIP_HEADERS,
  maxHeaders: MAX_HEADERS,
  maxValue: MAX_HEADER_VALUE,
  notObject: 'must be an object of SIP header names to string values',
  badName: 'not a valid SIP header name',
  reservedName: 'reserved, written by the SIP leg itself',
});

export function validateSipHeaders(value: unknown, errors: string[]): Record<string, string> | undefined {
  return validateHeaderMap(value, errors, sipHeadersSchema);
}

/** A JSON object request body; a 400 otherwise. */
export function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  return body as Record<string, unknown>;
}

/** One `field: unknown field (expected ...)` error per key of `input` outside `allowed`. */
export function unknownFields(input: Record<string, unknown>, allowed: readonly string[]): string[] {
  return Object.keys(input).filter((k) => !allowed.includes(k)).map((k) => `${k}: unknown field (expected ${allowed.join(', ')})`);
}
