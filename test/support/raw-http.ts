// HTTP over a bare socket, for what fetch hides: when the answer arrives relative to the body being sent.
import net from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Body bytes written before the answer arrived. */
  sent: number;
}

/**
 * Sends a request declaring `declaredBytes` of body, writes the body in 64 KiB pieces until the answer arrives
 * (then stops), and resolves with the answer. `sendBody: false` writes only the head.
 */
export function rawRequest(port: number, method: string, path: string, headers: Record<string, string>, declaredBytes: number, sendBody = true): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const piece = Buffer.alloc(64 * 1024, 1);
    let received = Buffer.alloc(0);
    let sent = 0;
    let done = false;
    const finish = (answer: RawAnswer | Error) => {
      if (done) return;
      done = true;
      socket.destroy();
      if (answer instanceof Error) reject(answer);
      else resolve(answer);
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const text = received.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const head: Record<string, string> = {};
      for (const l of lines) head[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
      const length = Number(head['content-length'] ?? 0);
      if (received.length < end + 4 + length) return;
      finish({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(statusLine ?? '')?.[1]), headers: head, body: received.subarray(end + 4, end + 4 + length).toString('utf8'), sent });
    });
    socket.on('error', (err) => finish(new Error(`socket error after ${sent} body bytes: ${err.message}`)));
    socket.on('close', () => finish(new Error(`closed without an answer after ${sent} body bytes`)));
    const head = Object.entries({ host: '127.0.0.1', 'content-length': String(declaredBytes), ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.write(`${method} ${path} HTTP/1.1\r\n${head}\r\n`);
    if (!sendBody) return;
    const pump = () => {
      while (!done && sent < declaredBytes) {
        const n = Math.min(piece.length, declaredBytes - sent);
        sent += n;
        if (!socket.write(n === piece.length ? piece : piece.subarray(0, n))) return void socket.once('drain', pump);
      }
    };
    pump();
  });
}

/** Resident memory of a process in MiB (Linux /proc). */
export async function rssMiB(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024;
}
