// A tiny libpcap reader for tests: the UDP datagrams of a capture (Ethernet, Linux cooked or raw IPv4/IPv6).
import { readFileSync } from 'node:fs';

export interface UdpDatagram {
  /** Capture time in seconds. */
  time: number;
  src: string;
  srcPort: number;
  dst: string;
  dstPort: number;
  payload: Buffer;
}

const LINK_ETHERNET = 1;
const LINK_RAW = 101;
const LINK_LINUX_SLL = 113;

/** Every UDP datagram in a pcap file (IPv4 or IPv6, no fragments), in capture order. */
export function readPcapUdp(path: string): UdpDatagram[] {
  const buf = readFileSync(path);
  const magic = buf.readUInt32LE(0);
  const le = magic === 0xa1b2c3d4 || magic === 0xa1b23c4d;
  if (!le && buf.readUInt32BE(0) !== 0xa1b2c3d4 && buf.readUInt32BE(0) !== 0xa1b23c4d) throw new Error(`${path}: not a pcap file`);
  const nano = (le ? magic : buf.readUInt32BE(0)) === 0xa1b23c4d;
  const u32 = (o: number) => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const link = u32(20);
  const out: UdpDatagram[] = [];
  for (let off = 24; off + 16 <= buf.length; ) {
    const time = u32(off) + u32(off + 4) / (nano ? 1e9 : 1e6);
    const capLen = u32(off + 8);
    const frame = buf.subarray(off + 16, off + 16 + capLen);
    off += 16 + capLen;
    let ip = 0;
    let etherType = 0x0800;
    if (link === LINK_ETHERNET) {
      etherType = frame.readUInt16BE(12);
      ip = 14;
      if (etherType === 0x8100) {
        etherType = frame.readUInt16BE(16);
        ip = 18;
      }
    } else if (link === LINK_LINUX_SLL) {
      etherType = frame.readUInt16BE(14);
      ip = 16;
    } else if (link === LINK_RAW) {
      etherType = frame[0]! >> 4 === 6 ? 0x86dd : 0x0800;
    } else throw new Error(`${path}: link type ${link} not supported`);
    let udp: number;
    let src: string;
    let dst: string;
    if (etherType === 0x0800) {
      if (frame[ip + 9] !== 17) continue;
      udp = ip + (frame[ip]! & 0x0f) * 4;
      src = [...frame.subarray(ip + 12, ip + 16)].join('.');
      dst = [...frame.subarray(ip + 16, ip + 20)].join('.');
    } else if (etherType === 0x86dd) {
      if (frame[ip + 6] !== 17) continue;
      udp = ip + 40;
      const v6 = (o: number) => Array.from({ length: 8 }, (_, i) => frame.readUInt16BE(o + 2 * i).toString(16)).join(':');
      src = v6(ip + 8);
      dst = v6(ip + 24);
    } else continue;
    const len = frame.readUInt16BE(udp + 4);
    out.push({ time, src, srcPort: frame.readUInt16BE(udp), dst, dstPort: frame.readUInt16BE(udp + 2), payload: frame.subarray(udp + 8, udp + len) });
  }
  return out;
}
