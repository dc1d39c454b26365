// SDP parsing (RFC 4566) for offer/answer: session and media lines, connection addresses, rtpmap, crypto, ssrc, direction.
// Tolerant of LF-only line ends and unknown lines; anything structurally wrong gives an error string, never a throw.
// Bounded (SDP_LIMITS): an SDP longer, or with more streams, formats or attributes than a call needs, is refused (488).
import { isIPv4, isIPv6 } from 'node:net';

export type MediaDirection = 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';

export interface SdpMedia {
  media: string;
  port: number;
  proto: string;
  formats: string[];
  /** Connection address of this stream (its own c= or the session's); null when neither gives one. */
  address: string | null;
  /** a= lines of this stream: name and value (null for flags like `sendrecv`). */
  attributes: Array<[string, string | null]>;
  direction: MediaDirection;
}

export interface ParsedSdp {
  media: SdpMedia[];
  /** The address of every c= line, session-level and per stream, in order (including streams' overridden ones). */
  connections: string[];
}

export interface RtpMap {
  name: string;
  clockRate: number;
  channels: number;
}

export interface CryptoLine {
  tag: string;
  suite: string;
  keyParams: string;
  sessionParams: string[];
}

/** Why an SDP cannot be used: 400 when it is not well-formed, 488 when it is but asks for what we cannot do. */
export interface SdpError {
  status: 400 | 488;
  reason: string;
}

/** Longest SDP we read (a real offer is well under 2 KB). */
export const MAX_SDP_LENGTH = 16_384;

/**
 * What one SDP may hold; beyond, it is refused with 488 (it is well-formed, only more than we take). A real offer has
 * one to three streams, under 20 formats per stream and under 40 attributes in all.
 */
export const SDP_LIMITS = {
  /** Characters (MAX_SDP_LENGTH). */
  length: MAX_SDP_LENGTH,
  /** m= lines. */
  media: 8,
  /** Formats (payload types) on one m= line. */
  formats: 64,
  /** a= lines in all, session-level and per stream. */
  attributes: 256,
} as const;

const DIRECTIONS = new Set<string>(['sendrecv', 'sendonly', 'recvonly', 'inactive']);
const STATIC_PAYLOADS: Record<number, RtpMap> = {
  0: { name: 'PCMU', clockRate: 8000, channels: 1 },
  8: { name: 'PCMA', clockRate: 8000, channels: 1 },
};

/** Parses an SDP body; an SdpError naming the problem when it cannot be used. */
export function parseSdp(text: unknown): ParsedSdp | SdpError {
  const bad = (reason: string): SdpError => ({ status: 400, reason });
  const tooMany = (reason: string): SdpError => ({ status: 488, reason });
  if (typeof text !== 'string' || text.trim() === '') return bad('empty SDP');
  if (text.length > SDP_LIMITS.length) return tooMany(`SDP longer than ${SDP_LIMITS.length} characters`);
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (lines[0]?.trim() !== 'v=0') return bad('SDP must start with v=0');
  let sessionAddress: string | null = null;
  let sessionDirection: MediaDirection = 'sendrecv';
  const media: SdpMedia[] = [];
  const connections: string[] = [];
  let attributes = 0;
  for (const line of lines.slice(1)) {
    const m = /^([a-z])=(.*)$/.exec(line.trimEnd());
    if (!m) return bad(`malformed SDP line: ${JSON.stringify(line.slice(0, 80))}`);
    const [, type, value] = m as unknown as [string, string, string];
    const current = media[media.length - 1];
    if (type === 'm') {
      const parts = value.trim().split(/\s+/);
      const port = /^\d{1,5}(\/\d+)?$/.test(parts[1] ?? '') ? Number(parts[1]!.split('/')[0]) : NaN;
      if (parts.length < 4 || !(port >= 0 && port <= 65535)) return bad(`malformed m= line: ${JSON.stringify(value.slice(0, 80))}`);
      if (media.length >= SDP_LIMITS.media) return tooMany(`more than ${SDP_LIMITS.media} media streams (m= lines)`);
      if (parts.length - 3 > SDP_LIMITS.formats) return tooMany(`more than ${SDP_LIMITS.formats} formats on one m= line (${parts.length - 3})`);
      media.push({ media: parts[0]!, port, proto: parts[2]!, formats: parts.slice(3), address: null, attributes: [], direction: sessionDirection });
      continue;
    }
    if (type === 'c') {
      const c = parseConnection(value);
      if ('status' in c) return c;
      connections.push(c.address);
      if (current) current.address = c.address;
      else sessionAddress = c.address;
      continue;
    }
    if (type === 'a') {
      if (++attributes > SDP_LIMITS.attributes) return tooMany(`more than ${SDP_LIMITS.attributes} attributes (a= lines)`);
      const colon = value.indexOf(':');
      const name = colon < 0 ? value.trim() : value.slice(0, colon).trim();
      const attr = colon < 0 ? null : value.slice(colon + 1).trim();
      if (DIRECTIONS.has(name)) {
        if (current) current.direction = name as MediaDirection;
        else sessionDirection = name as MediaDirection;
      }
      if (current) current.attributes.push([name, attr]);
    }
  }
  for (const m of media) m.address ??= sessionAddress;
  return { media, connections };
}

/** The address of a c= line (`IN IP4 addr[/ttl]`); an error when malformed or not an IP address (no DNS for media). */
function parseConnection(value: string): { address: string } | SdpError {
  const parts = value.trim().split(/\s+/);
  if (parts.length !== 3 || parts[0] !== 'IN' || (parts[1] !== 'IP4' && parts[1] !== 'IP6')) {
    return { status: 400, reason: `malformed c= line: ${JSON.stringify(value.slice(0, 80))}` };
  }
  const address = parts[2]!.split('/')[0]!;
  if (parts[1] === 'IP4' ? !isIPv4(address) : !isIPv6(address)) {
    return { status: 488, reason: `connection address must be an IP address, got ${JSON.stringify(address.slice(0, 80))}` };
  }
  return { address };
}

/** The payload format of a payload type in a stream: its rtpmap, or the static assignment (0 PCMU, 8 PCMA). */
export function rtpMapOf(m: SdpMedia, pt: number): RtpMap | null {
  for (const [name, value] of m.attributes) {
    if (name !== 'rtpmap' || value === null) continue;
    const r = /^(\d+)\s+([^/\s]+)\/(\d+)(?:\/(\d+))?/.exec(value);
    if (r && Number(r[1]) === pt) return { name: r[2]!, clockRate: Number(r[3]), channels: r[4] ? Number(r[4]) : 1 };
  }
  return STATIC_PAYLOADS[pt] ?? null;
}

/** The fmtp parameters of a payload type, or null. */
export function fmtpOf(m: SdpMedia, pt: number): string | null {
  for (const [name, value] of m.attributes) {
    if (name !== 'fmtp' || value === null) continue;
    const r = /^(\d+)\s+(.*)$/.exec(value);
    if (r && Number(r[1]) === pt) return r[2]!.trim();
  }
  return null;
}

/** The a=crypto lines of a stream (RFC 4568: `tag suite key-params [session-params]`), malformed ones left out. */
export function cryptoLinesOf(m: SdpMedia): CryptoLine[] {
  const out: CryptoLine[] = [];
  for (const [name, value] of m.attributes) {
    if (name !== 'crypto' || value === null) continue;
    const parts = value.split(/\s+/);
    if (parts.length < 3 || !/^\d{1,9}$/.test(parts[0]!)) continue;
    out.push({ tag: parts[0]!, suite: parts[1]!, keyParams: parts[2]!, sessionParams: parts.slice(3) });
  }
  return out;
}

/** The SSRC the stream announces (first a=ssrc), or null. */
export function ssrcOf(m: SdpMedia): number | null {
  for (const [name, value] of m.attributes) {
    if (name !== 'ssrc' || value === null) continue;
    const r = /^(\d{1,10})(\s|$)/.exec(value);
    if (r && Number(r[1]) <= 0xffffffff) return Number(r[1]);
  }
  return null;
}

/** Payload types of a stream's formats (non-numeric formats left out). */
export function payloadTypesOf(m: SdpMedia): number[] {
  return m.formats.filter((f) => /^\d{1,3}$/.test(f) && Number(f) <= 127).map(Number);
}

/** The direction seen from the other side (what we answer to an offer's direction). */
export function reverseDirection(d: MediaDirection): MediaDirection {
  return d === 'sendonly' ? 'recvonly' : d === 'recvonly' ? 'sendonly' : d;
}
