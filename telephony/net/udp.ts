// UDP sockets that send at once. Node's dgram resolves every destination through dns.lookup, which answers even an IP
// literal on process.nextTick, and that tick runs only after every promise continuation already queued: on a server
// answering a burst of POSTs an INVITE sat there 10-20 ms after its send() (bench:outbound). Our destinations are IP
// literals (SIP targets and RTP peers come resolved), so they are answered in the same call, and the datagram is
// handed to the kernel inside send().
import dgram from 'node:dgram';
import dns from 'node:dns';
import net from 'node:net';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string, family: number) => void;

/** dgram's `lookup`: an IP literal at once (no tick), a host name through dns.lookup. */
export function literalLookup(host: string, options: dns.LookupOneOptions | number | LookupCallback, callback?: LookupCallback): void {
  const cb = (typeof options === 'function' ? options : callback) as LookupCallback;
  const family = net.isIP(host);
  if (family) return cb(null, host, family);
  const opts: dns.LookupOneOptions = typeof options === 'number' ? { family: options } : typeof options === 'function' ? {} : options;
  dns.lookup(host, opts, cb);
}

/** A UDP socket of the family of `address` whose sends to IP literals leave inside send(). */
export function udpSocket(address: string): dgram.Socket {
  return dgram.createSocket({ type: net.isIPv6(address) ? 'udp6' : 'udp4', lookup: literalLookup as unknown as dgram.SocketOptions['lookup'] });
}

/**
 * Sends `bytes` and tells `onSent` when they left: at once when the kernel took them inside send() (its completion
 * callback would come only after the queued promise continuations), else on the completion. `onError` hears of a
 * failure.
 */
export function sendNow(socket: dgram.Socket, bytes: Uint8Array, port: number, address: string, onSent?: () => void, onError?: (err: Error) => void): void {
  let left = false;
  socket.send(bytes, port, address, (err) => {
    if (err) onError?.(err);
    else if (!left) onSent?.();
  });
  if (onSent && socket.getSendQueueCount() === 0) {
    left = true;
    onSent();
  }
}
