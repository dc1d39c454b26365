// A local HTTP endpoint that receives call webhooks in tests: each request's headers, raw bytes (for the signature)
// and parsed body, looked up by call id and event type.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedHook {
  headers: IncomingHttpHeaders;
  raw: Buffer;
  body: any;
}

export class WebhookReceiver {
  readonly got: ReceivedHook[] = [];
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        this.got.push({ headers: req.headers, raw, body: JSON.parse(raw.toString('utf8')) });
        res.writeHead(200).end('ok');
      });
    });
    this.server = server;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  }

  /** The deliveries of one call's event, in arrival order. */
  of(callId: string, eventType: string): ReceivedHook[] {
    return this.got.filter((r) => r.body.metadata?.callId === callId && r.body.metadata?.eventType === eventType);
  }

  /** The body of the first delivery of one call's event, once it arrives. */
  async waitFor(callId: string, eventType: string, timeoutMs = 15_000): Promise<any> {
    const until = Date.now() + timeoutMs;
    while (this.of(callId, eventType).length === 0) {
      if (Date.now() > until) throw new Error(`no ${eventType} for ${callId}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.of(callId, eventType)[0]!.body;
  }

  /** Stops listening; a no-op when it never started (a suite whose set-up failed still cleans up). */
  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r()));
  }
}
