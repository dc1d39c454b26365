// What reading a large PDF into a knowledge base does to everyone else (issue 35): POST .../items/upload-media with a
// BENCH_PAGES-page PDF (300) made by Ghostscript, BENCH_REPEAT times (3), while GET /health is sent every
// BENCH_HEALTH_MS (10 ms), open loop. Reports /health latency during the uploads (p50, p99, max) and each upload's
// time. BENCH_ROOTS: comma-separated checkouts to run side by side, one server each in turn (default: this one).
//   npx tsx bench/kb-pdf.ts
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { sleep } from '../test/support/server.js';
import { intEnv } from './lib/harness.js';
import { printTable, quantile, resultPath } from './lib/report.js';
import { benchRoots, f0, healthSummary, perCheckout, pollHealth, rootLabel } from './lib/health.js';

const PAGES = intEnv('BENCH_PAGES', 300, 1);
const REPEAT = intEnv('BENCH_REPEAT', 3, 1);
const HEALTH_MS = intEnv('BENCH_HEALTH_MS', 10, 1);
const ROOTS = benchRoots();
const A = '/atoms/v1';

/** A PDF of `pages` pages of 40 lines of text each, by Ghostscript (Debian's ghostscript). */
function makePdf(pages: number): Buffer {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-pdf-'));
  try {
    const page = (p: number) => ['/Helvetica findfont 10 scalefont setfont', ...Array.from({ length: 40 }, (_, i) => `50 ${760 - i * 18} moveto (Page ${p} line ${i}: the clinic opens at nine and closes at six on weekdays.) show`), 'showpage'].join('\n');
    writeFileSync(path.join(dir, 'in.ps'), Array.from({ length: pages }, (_, p) => page(p + 1)).join('\n'));
    execFileSync('gs', ['-q', '-dNOPAUSE', '-dBATCH', '-dSAFER', '-sDEVICE=pdfwrite', `-sOutputFile=${path.join(dir, 'out.pdf')}`, path.join(dir, 'in.ps')]);
    return readFileSync(path.join(dir, 'out.pdf'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const pdf = makePdf(PAGES);
const runs = await perCheckout(ROOTS, 'sqlite', async (server) => {
  const kb = await server.request('POST', `${A}/knowledgebase`, { body: { name: 'Bench' } });
  const id = kb.body.data as string;
  const upload = async (bytes: Buffer, name: string) => {
    const form = new FormData();
    form.append('media', new Blob([new Uint8Array(bytes)], { type: 'application/pdf' }), name);
    const res = await fetch(`${server.base}${A}/knowledgebase/${id}/items/upload-media`, { method: 'POST', headers: { authorization: `Bearer ${server.key}` }, body: form });
    await res.arrayBuffer();
    const items = (await server.request('GET', `${A}/knowledgebase/${id}/items`)).body.data as { fileName: string; processingStatus: string }[];
    return `${res.status} ${items.find((i) => i.fileName === name)?.processingStatus}`;
  };
  await upload(makePdf(2), 'warm.pdf');
  for (let i = 0; i < 20; i++) await fetch(`${server.base}/health`).then((r) => r.arrayBuffer());
  const uploadMs: number[] = [];
  const statuses: string[] = [];
  const poll = pollHealth(server, HEALTH_MS);
  await sleep(200);
  for (let k = 0; k < REPEAT; k++) {
    const started = performance.now();
    statuses.push(await upload(pdf, `big-${k}.pdf`));
    uploadMs.push(performance.now() - started);
    await sleep(200);
  }
  return { during: await poll.stop(), uploadMs, statuses };
});

printTable(
  `A ${PAGES}-page PDF (${(pdf.length / 1024).toFixed(0)} KiB) uploaded ${REPEAT} times, /health every ${HEALTH_MS} ms (sqlite); ms`,
  ['build', 'statuses', 'upload p50', '/health p50', 'p99', 'max', 'problems'],
  runs.map((r) => [rootLabel(r.root), r.statuses.join(', '), f0(quantile(r.uploadMs, 0.5)), f0(quantile(r.during, 0.5)), f0(quantile(r.during, 0.99)), f0(Math.max(...r.during)), String(r.problems.length)]),
  1,
);
writeFileSync(resultPath('kb-pdf'), JSON.stringify({ pages: PAGES, bytes: pdf.length, repeat: REPEAT, runs: runs.map((r) => ({ ...r, during: healthSummary(r.during) })) }, null, 2));
