// Bench output: aligned text tables and where each bench writes its JSON result.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const RESULTS = path.resolve(import.meta.dirname, '..', 'results');

/** Prints a titled table; the first `leftCols` columns are left-aligned, the rest right-aligned. */
export function printTable(title: string, header: string[], rows: string[][], leftCols: number): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((t) => (t[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i < leftCols ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ').trimEnd();
  console.log(`\n${title}\n`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

/**
 * `bench/results/<name>.json` (the directory is created), or `<BENCH_RESULTS_DIR>/<name>.json` when that is set (the
 * one bench command, bench/run.ts, gives each run a directory of its own).
 */
export function resultPath(name: string): string {
  const dir = process.env.BENCH_RESULTS_DIR ? path.resolve(process.env.BENCH_RESULTS_DIR) : RESULTS;
  mkdirSync(dir, { recursive: true });
  return path.join(dir, `${name}.json`);
}

/** The q-quantile (0..1) of xs by the nearest-rank method; NaN for no values. */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN;
}

let clkTck = 0;
/** CPU seconds (user + system) a process has used so far, from /proc; NaN when unreadable. */
export function procCpuSeconds(pid: number | undefined): number {
  if (!pid) return NaN;
  if (!clkTck) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clkTck;
  } catch {
    return NaN;
  }
}
