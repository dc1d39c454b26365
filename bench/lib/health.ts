// GET /health sent open loop beside a bench's work: how long the server's event loop keeps others waiting. And the
// scaffolding of the benches built on it (bench/campaign-create.ts, audience-members.ts, kb-pdf.ts): one server per
// checkout of BENCH_ROOTS in turn, its problems collected, and the columns they print.
import path from 'node:path';
import { freshStore, startServer, type Dialect, type TestServer } from '../../test/support/server.js';
import { stopAndCollectProblems } from './harness.js';
import { quantile } from './report.js';

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

/** BENCH_ROOTS: comma-separated checkouts to run side by side (default: this one). */
export const benchRoots = (): string[] => (process.env.BENCH_ROOTS ?? '.').split(',').map((r) => path.resolve(r.trim()));

/**
 * `work` on a fresh server of each checkout in turn (its own store), with the server's warnings and errors after it;
 * the store and server are removed whatever happens.
 */
export async function perCheckout<T>(roots: readonly string[], dialect: Dialect, work: (server: TestServer) => Promise<T>): Promise<(T & { root: string; problems: string[] })[]> {
  const out: (T & { root: string; problems: string[] })[] = [];
  for (const root of roots) {
    const store = freshStore(dialect);
    const server = await startServer({ store, root, env: { PARLEY_RATE_LIMIT_PER_MINUTE: '1000000' } });
    try {
      const result = await work(server);
      const { problems } = await stopAndCollectProblems(server);
      out.push({ ...result, root, problems });
    } finally {
      await server.stop();
      await store.cleanup();
    }
  }
  return out;
}

/** Whole milliseconds ('-' for none). */
export const f0 = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(0));
/** A checkout as the table names it. */
export const rootLabel = (root: string): string => path.relative(process.cwd(), root) || '.';
/** /health latency during the work: p50, p99 and max (ms). */
export const healthSummary = (ms: number[]) => ({ p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), max: Math.max(...ms) });
