// SIP's UDP socket and TCP server on one port: parsed messages in with the flow they came on, messages out to a flow
// (TCP reuses the peer's open connection, else connects), bounded connections, and nothing left open after close().
import dgram from 'node:dgram';
import net from 'node:net';
import type { Logger } from 'pino';
import type { RawMessage } from 'sip';
import { parseDatagram, serialize, StreamFramer, type Parsed } from './wire.js';
import { sendNow, udpSocket } from '../net/udp.js';

export type SipTransportName = 'udp' | 'tcp';

/** Where a message came from or goes to: one transport, one peer address and port. */
export interface Flow {
  transport: SipTransportName;
  address: string;
  port: number;
}

export interface SocketOptions {
  host: string;
  /** 0: an ephemeral port (the same one for UDP and TCP). */
  port: number;
  udp: boolean;
  tcp: boolean;
  /** A TCP connection with no traffic for this long is closed. */
  tcpIdleMs: number;
  maxTcpConnections: number;
  logger?: Logger;
}

/** A TCP connection that buffers more than this for a slow reader is dropped. */
const MAX_TCP_BACKLOG = 1024 * 1024;

const flowKey = (address: string, port: number) => `${address}|${port}`;
const plainAddress = (a: string | undefined) => (a ?? '').replace(/^::ffff:(?=\d+\.)/, '');

export class SipSockets {
  port = 0;
  private udp?: dgram.Socket;
  private server?: net.Server;
  private readonly conns = new Map<string, net.Socket>();
  private closed = false;

  constructor(
    private readonly opts: SocketOptions,
    private readonly onMessage: (parsed: Parsed, flow: Flow) => void,
  ) {}

  /** Binds UDP and TCP to the same port; with port 0 retries a few ephemeral ports until TCP gets UDP's. */
  async listen(): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.bind(this.opts.port);
        return this.port;
      } catch (err) {
        await this.unbind();
        if (this.opts.port !== 0 || attempt >= 8 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      }
    }
  }

  private async bind(port: number): Promise<void> {
    const { host } = this.opts;
    if (this.opts.udp) {
      const udp = udpSocket(host);
      this.udp = udp;
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(port, host, () => {
          udp.off('error', reject);
          resolve();
        });
      });
      udp.on('error', (err) => this.opts.logger?.warn({ err: err.message }, 'sip udp socket error'));
      udp.on('message', (data, rinfo) => this.deliver(() => parseDatagram(data), { transport: 'udp', address: plainAddress(rinfo.address), port: rinfo.port }));
      port = udp.address().port;
    }
    if (this.opts.tcp) {
      const server = net.createServer((socket) => this.adopt(socket));
      this.server = server;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      server.on('error', (err) => this.opts.logger?.warn({ err: err.message }, 'sip tcp server error'));
      port = (server.address() as net.AddressInfo).port;
    }
    this.port = port;
  }

  private async unbind(): Promise<void> {
    const udp = this.udp;
    const server = this.server;
    this.udp = undefined;
    this.server = undefined;
    if (udp) await new Promise<void>((r) => udp.close(() => r())).catch(() => undefined);
    if (server?.listening) await new Promise<void>((r) => server.close(() => r()));
  }

  /** Parses and hands over one message; a throw here would take the process down, so none escapes. */
  private deliver(parse: () => Parsed | null, flow: Flow): void {
    if (this.closed) return;
    try {
      const parsed = parse();
      if (parsed) this.onMessage(parsed, flow);
    } catch (err) {
      this.opts.logger?.error({ err: err instanceof Error ? err.stack : String(err), flow }, 'sip message handling failed');
    }
  }

  /** Serves one TCP connection (accepted, or opened by us): framing, keep-alive pongs, idle timeout. */
  private adopt(socket: net.Socket): void {
    const address = plainAddress(socket.remoteAddress);
    const port = socket.remotePort ?? 0;
    if (this.closed || this.conns.size >= this.opts.maxTcpConnections || !address) {
      socket.destroy();
      return;
    }
    this.track(socket, address, port);
  }

  private track(socket: net.Socket, address: string, port: number): void {
    const key = flowKey(address, port);
    this.conns.set(key, socket);
    const framer = new StreamFramer();
    const flow: Flow = { transport: 'tcp', address, port };
    socket.setNoDelay(true);
    socket.setTimeout(this.opts.tcpIdleMs, () => socket.destroy());
    socket.on('error', (err) => this.opts.logger?.debug({ err: err.message, flow }, 'sip tcp connection error'));
    socket.on('close', () => {
      if (this.conns.get(key) === socket) this.conns.delete(key);
    });
    socket.on('data', (chunk: Buffer) => {
      let fatal: string | undefined;
      this.deliver(() => {
        const out = framer.push(chunk);
        fatal = out.fatal;
        if (out.pings > 0 && !socket.destroyed) socket.write('\r\n');
        for (const frame of out.frames) this.onMessage(frame, flow);
        return null;
      }, flow);
      if (fatal) {
        // Unframeable from here on: flush what we answered (a 400), then close; the timeout ends a peer that lingers.
        this.opts.logger?.debug({ flow, why: fatal }, 'sip tcp stream closed');
        socket.pause();
        socket.end();
        socket.setTimeout(2000);
      }
    });
  }

  /** True when a TCP connection to that peer is open (in-dialog requests reuse it). */
  hasConnection(flow: Flow): boolean {
    return flow.transport === 'tcp' && this.conns.has(flowKey(flow.address, flow.port));
  }

  /**
   * Sends a message; `onError` hears of a failure to connect or write (UDP errors are rarely reported), `onSent` of its
   * bytes having left: a datagram the kernel took inside the call at once (sendNow), else at the UDP send's or the TCP
   * write's completion. Not at the call itself: a datagram queued (or a TCP connection still opening) leaves later.
   */
  send(flow: Flow, message: RawMessage, onError?: (err: Error) => void, onSent?: () => void): void {
    if (this.closed) return;
    const bytes = serialize(message);
    if (flow.transport === 'udp') {
      if (!this.udp) return onError?.(new Error('UDP is not enabled'));
      sendNow(this.udp, bytes, flow.port, flow.address, onSent, onError);
      return;
    }
    if (!this.server) return onError?.(new Error('TCP is not enabled'));
    let socket = this.conns.get(flowKey(flow.address, flow.port));
    if (!socket) {
      if (this.conns.size >= this.opts.maxTcpConnections) return onError?.(new Error('too many TCP connections'));
      socket = net.connect({ host: flow.address, port: flow.port });
      this.track(socket, flow.address, flow.port);
    }
    let left = false;
    const sent = (): void => {
      if (left) return;
      left = true;
      onSent?.();
    };
    if (onError) {
      let reported = false;
      const fail = (err: Error) => {
        if (reported) return;
        reported = true;
        onError(err);
      };
      const s = socket;
      s.once('error', fail);
      s.write(bytes, (err) => {
        s.off('error', fail);
        if (err) fail(err);
        else sent();
      });
    } else if (onSent) socket.write(bytes, (err) => !err && sent());
    else socket.write(bytes);
    // Written to the kernel inside write() (connected, nothing buffered): it left now, not at the callback's tick.
    if (onSent && !socket.connecting && socket.writableLength === 0) sent();
    if (socket.writableLength > MAX_TCP_BACKLOG) socket.destroy();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const socket of this.conns.values()) socket.destroy();
    this.conns.clear();
    await this.unbind();
  }
}
