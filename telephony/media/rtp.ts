// RTP packets (RFC 3550): encode a 12-byte header, decode safely (CSRC, extension, padding skipped; malformed -> null).

export const RTP_HEADER_SIZE = 12;

export interface RtpPacket {
  marker: boolean;
  payloadType: number;
  /** 16-bit sequence number. */
  sequence: number;
  /** 32-bit media timestamp. */
  timestamp: number;
  ssrc: number;
  /** The payload, without CSRCs, header extension or padding (a view into the datagram). */
  payload: Buffer;
}

/** Parses one RTP datagram; null when it is not a well-formed version 2 RTP packet. */
export function decodeRtp(buf: Buffer): RtpPacket | null {
  if (buf.length < RTP_HEADER_SIZE) return null;
  const b0 = buf[0]!;
  if (b0 >> 6 !== 2) return null;
  let offset = RTP_HEADER_SIZE + (b0 & 0x0f) * 4;
  if (b0 & 0x10) {
    if (buf.length < offset + 4) return null;
    offset += 4 + buf.readUInt16BE(offset + 2) * 4;
  }
  let end = buf.length;
  if (b0 & 0x20) {
    const pad = buf[end - 1]!;
    if (pad === 0) return null;
    end -= pad;
  }
  if (offset > end) return null;
  const b1 = buf[1]!;
  return {
    marker: (b1 & 0x80) !== 0,
    payloadType: b1 & 0x7f,
    sequence: buf.readUInt16BE(2),
    timestamp: buf.readUInt32BE(4),
    ssrc: buf.readUInt32BE(8),
    payload: buf.subarray(offset, end),
  };
}

/** Serialises a packet with a plain 12-byte header (no CSRC, extension or padding). */
export function encodeRtp(p: RtpPacket): Buffer {
  const out = Buffer.allocUnsafe(RTP_HEADER_SIZE + p.payload.length);
  out[0] = 0x80;
  out[1] = (p.marker ? 0x80 : 0) | (p.payloadType & 0x7f);
  out.writeUInt16BE(p.sequence & 0xffff, 2);
  out.writeUInt32BE(p.timestamp >>> 0, 4);
  out.writeUInt32BE(p.ssrc >>> 0, 8);
  p.payload.copy(out, RTP_HEADER_SIZE);
  return out;
}

/** True for RTCP multiplexed on the RTP port (RFC 5761: second byte 192-223, i.e. packet types 200-204 and friends). */
export function isRtcp(buf: Buffer): boolean {
  return buf.length >= 2 && buf[0]! >> 6 === 2 && buf[1]! >= 192 && buf[1]! <= 223;
}

/** Signed distance from sequence number b to a, modulo 2^16 (positive when a is after b). */
export function seqDiff(a: number, b: number): number {
  return ((((a - b) & 0xffff) + 0x8000) & 0xffff) - 0x8000;
}

/** Signed distance from timestamp b to a, modulo 2^32 (positive when a is after b). */
export function tsDiff(a: number, b: number): number {
  return (a - b) | 0;
}
