// RTP port allocation over a range (the server's: PARLEY_RTP_PORTS, default 10000-20000): even ports for RTP (the odd one above stays reserved
// for RTCP), round-robin so a freed port is not reused at once, retrying the next one when another process holds it.
import type dgram from 'node:dgram';
import { udpSocket } from '../net/udp.js';

export const DEFAULT_RTP_PORTS = '10000-20000';

export interface PortRange {
  min: number;
  max: number;
}

/** Parses `min-max` (both 1024-65535, min < max, at least one even RTP port with its RTCP port). Throws a clear error. */
export function parsePortRange(spec: string = DEFAULT_RTP_PORTS): PortRange {
  const m = /^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$/.exec(spec);
  const min = m ? Number(m[1]) : NaN;
  const max = m ? Number(m[2]) : NaN;
  if (!m || min < 1024 || max > 65535 || min + (min % 2) + 1 > max) {
    throw new RangeError(`PARLEY_RTP_PORTS must be "min-max" with 1024 <= min < max <= 65535 and room for an even/odd pair, got "${spec}"`);
  }
  return { min, max };
}

export interface BoundPort {
  socket: dgram.Socket;
  port: number;
  /** Closes the socket (if still open) and frees the port; safe to call twice. */
  release(): void;
}

export class PortAllocator {
  private readonly first: number;
  private readonly count: number;
  private readonly inUse = new Set<number>();
  private cursor: number;

  constructor(readonly range: PortRange = parsePortRange()) {
    this.first = range.min + (range.min % 2);
    this.count = Math.floor((range.max - this.first - 1) / 2) + 1;
    this.cursor = Math.floor(Math.random() * this.count);
  }

  /** Ports currently handed out. */
  get used(): number {
    return this.inUse.size;
  }

  /** Even ports in the range. */
  get capacity(): number {
    return this.count;
  }

  /** Binds a UDP socket on the next free even port at `address`; throws when every port is taken. */
  async bind(address: string): Promise<BoundPort> {
    for (let tries = 0; tries < this.count; tries++) {
      const port = this.first + 2 * this.cursor;
      this.cursor = (this.cursor + 1) % this.count;
      if (this.inUse.has(port)) continue;
      this.inUse.add(port);
      const socket = udpSocket(address); // a packet leaves inside send(), not after the queued promise continuations
      try {
        await new Promise<void>((resolve, reject) => {
          socket.once('error', reject);
          socket.bind(port, address, () => {
            socket.off('error', reject);
            resolve();
          });
        });
      } catch (err) {
        this.inUse.delete(port);
        try {
          socket.close();
        } catch {
          // never bound
        }
        if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') continue;
        throw err;
      }
      let released = false;
      return {
        socket,
        port,
        release: () => {
          if (released) return;
          released = true;
          try {
            socket.close();
          } catch {
            // already closed
          }
          this.inUse.delete(port);
        },
      };
    }
    throw new Error(`no free RTP port in ${this.range.min}-${this.range.max} (${this.inUse.size} in use)`);
  }
}

let shared: PortAllocator | null = null;

/**
 * A process-wide allocator over the default range, for an RtpSession bound without one. The server passes its own
 * (Settings.sip.rtpPorts, read from PARLEY_RTP_PORTS by server/settings-schema.ts) to the media worker.
 */
export function rtpPorts(): PortAllocator {
  shared ??= new PortAllocator(parsePortRange(DEFAULT_RTP_PORTS));
  return shared;
}
