// What one flooding chat client does to everyone else: BENCH_FLOOD_MESSAGES (2000) input_text.send messages back to
// back on one agent session, while /health is polled every 25 ms and a second chat session sends a message a second.
// Reports /health and bystander latency (p50, p95, max) and what became of the flooder.
// BENCH_ROOTS: comma-separated checkouts to run side by side, one server each in turn (default: this one), e.g.
// BENCH_ROOTS=/path/to/old-checkout,. to compare a build before and after a change on the same machine.
// BENCH_DIALECT: sqlite (default) or postgres.
import path from 'node:path';
import { freshStore, startServer, type Dialect } from '../test/support/server.js';
import { chatFlood, type FloodResult } from '../test/support/chat-flood.js';
import { intEnv, stopAndCollectProblems } from './lib/harness.js';
import { writeFileSync } from 'node:fs';
import { printTable, quantile, resultPath } from './lib/report.js';

const MESSAGES = intEnv('BENCH_FLOOD_MESSAGES', 2000, 1);
const ROOTS = (process.env.BENCH_ROOTS ?? '.').split(',').map((r) => path.resolve(r.trim()));
const DIALECT = (process.env.BENCH_DIALECT ?? 'sqlite') as Dialect;

const runs: { root: string; result: FloodResult; problems: string[] }[] = [];
for (const root of ROOTS) {
  const store = freshStore(DIALECT);
  const server = await startServer({ store, root, env: { PARLEY_RATE_LIMIT_PER_MINUTE: '1000000' } });
  try {
    const created = await server.request('POST', '/atoms/v1/agent/from-template', { body: { templateId: 'parley-demo', name: 'Flood target' } });
    if (created.status >= 300) throw new Error(`could not create the demo agent: ${created.text}`);
    const result = await chatFlood(server, created.body.data as string, MESSAGES, 300_000);
    const { problems } = await stopAndCollectProblems(server);
    runs.push({ root, result, problems });
  } finally {
    await server.stop();
    await store.cleanup();
  }
}

const ms = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(1));
printTable(
  `Chat flood: ${MESSAGES} messages back to back on one session (${DIALECT})`,
  ['checkout', 'flood ms', 'health p50', 'health p95', 'health max', 'bystander p50', 'bystander max', 'flooder replies', 'flooder errors', 'flooder close'],
  runs.map(({ root, result: r }) => [
    path.relative(process.cwd(), root) || '.',
    ms(r.floodMs),
    ms(quantile(r.health, 0.5)),
    ms(quantile(r.health, 0.95)),
    ms(Math.max(...r.health)),
    ms(quantile(r.bystander, 0.5)),
    r.bystander.length ? ms(Math.max(...r.bystander)) : '-',
    String(r.flooder.replies),
    JSON.stringify(r.flooder.errors),
    `${r.flooder.closeCode ?? 'open'} ${r.flooder.closeReason}`,
  ]),
  1,
);
for (const run of runs) if (run.problems.length) console.log(`${run.root}: server problems:\n${run.problems.join('\n')}`);
const out = resultPath(`chat-flood-${DIALECT}`);
writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), messages: MESSAGES, dialect: DIALECT, runs: runs.map(({ root, result }) => ({ root, ...result })) }, null, 2));
console.log(`\nwrote ${out}`);
