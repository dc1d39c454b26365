// GET /health sent open loop beside a bench's work: how long the server's event loop keeps others waiting.
import type { TestServer } from '../../test/support/server.js';

/** GET /health every `everyMs` (open loop) until stop(); each answered request's latency in ms. */
export function pollHealth(server: TestServer, everyMs: number): { stop: () => Promise<number[]> } {
  const pending: Promise<void>[] = [];
  const ms: number[] = [];
  const timer = setInterval(() => {
    const started = performance.now();
    pending.push(fetch(`${server.base}/health`).then(async (res) => void (await res.arrayBuffer(), ms.push(performance.now() - started)), () => undefined));
  }, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
      return ms;
    },
  };
}
