// Ogg page demuxer (RFC 3533): streaming page parsing with CRC check and packet reassembly across pages.
import { AudioFormatError } from './errors.js';

export interface OggPacket {
  serial: number;
  data: Uint8Array;
  /** Set on the first packet of each logical stream (serial number). */
  bos: boolean;
  /** Set on the last packet completed on an EOS page. */
  eos: boolean;
  /** Granule position of the page this packet completes on, when it is the last packet completed there; else -1. */
  granule: bigint;
}

const HEADER = 27;
const CONTINUED = 0x01;
const EOS = 0x04;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let k = 0; k < 8; k++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    t[i] = r >>> 0;
  }
  return t;
})();

/** Ogg's CRC-32 (polynomial 0x04C11DB7, no reflection, initial value 0) over a page with its CRC field zeroed. */
export function oggCrc(page: Uint8Array): number {
  let crc = 0;
  for (let i = 0; i < page.length; i++) {
    const b = i >= 22 && i < 26 ? 0 : page[i]!;
    crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ b) & 0xff]!) >>> 0;
  }
  return crc;
}

function fail(message: string): never {
  throw new AudioFormatError(`invalid Ogg stream: ${message}`, 'ogg');
}

/** Push bytes as they arrive; get back every packet completed so far. Pages may be split across pushes anywhere. */
export class OggDemuxer {
  private pending: Uint8Array = new Uint8Array(0);
  private partial = new Map<number, Uint8Array[]>(); // serial -> segments of a packet continuing on the next page
  private seen = new Set<number>();
  private pages = 0;

  /** Bytes of an incomplete page waiting for more input. */
  get pendingBytes(): number {
    return this.pending.length;
  }

  /** Whole pages parsed so far. */
  get pageCount(): number {
    return this.pages;
  }

  push(chunk: Uint8Array): OggPacket[] {
    let buf = chunk;
    if (this.pending.length > 0) {
      buf = new Uint8Array(this.pending.length + chunk.length);
      buf.set(this.pending, 0);
      buf.set(chunk, this.pending.length);
    }
    const packets: OggPacket[] = [];
    let off = 0;
    for (;;) {
      const size = this.pageSize(buf, off);
      if (size === 0) break;
      this.readPage(buf.subarray(off, off + size), packets);
      off += size;
    }
    this.pending = buf.slice(off);
    return packets;
  }

  /** Total size of the page at `off`, or 0 if it is not all here yet. Throws on bytes that are not a page. */
  private pageSize(buf: Uint8Array, off: number): number {
    const avail = buf.length - off;
    const magic = Math.min(avail, 4);
    for (let i = 0; i < magic; i++) if (buf[off + i] !== 'OggS'.charCodeAt(i)) fail(`no page capture pattern "OggS" at byte ${off} of page ${this.pages}`);
    if (avail < HEADER) return 0;
    if (buf[off + 4] !== 0) fail(`unsupported page version ${buf[off + 4]}`);
    const nseg = buf[off + 26]!;
    if (avail < HEADER + nseg) return 0;
    let body = 0;
    for (let i = 0; i < nseg; i++) body += buf[off + HEADER + i]!;
    const size = HEADER + nseg + body;
    return avail < size ? 0 : size;
  }

  private readPage(page: Uint8Array, out: OggPacket[]): void {
    const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
    const flags = page[5]!;
    const granule = view.getBigInt64(6, true);
    const serial = view.getUint32(14, true);
    const crc = view.getUint32(22, true);
    if (oggCrc(page) !== crc) fail(`CRC mismatch on page ${this.pages}`);
    this.pages++;
    const nseg = page[26]!;
    let pos = HEADER + nseg;
    let segs = this.partial.get(serial) ?? [];
    this.partial.delete(serial);
    if (!(flags & CONTINUED)) segs = []; // a dangling partial packet is dropped, as the spec says
    const done: OggPacket[] = [];
    for (let i = 0; i < nseg; i++) {
      const lace = page[HEADER + i]!;
      segs.push(page.subarray(pos, pos + lace));
      pos += lace;
      if (lace < 255) {
        const bos = !this.seen.has(serial);
        this.seen.add(serial);
        done.push({ serial, data: concatBytes(segs), bos, eos: false, granule: -1n });
        segs = [];
      }
    }
    if (segs.length > 0) this.partial.set(serial, segs);
    const last = done[done.length - 1];
    if (last) {
      last.granule = granule;
      last.eos = (flags & EOS) !== 0;
    }
    out.push(...done);
  }
}

function concatBytes(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!.slice();
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
