// Bench output: aligned text tables and where each bench writes its JSON result.
import { mkdirSync } from 'node:fs';
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

/** `bench/results/<name>.json` (the directory is created). */
export function resultPath(name: string): string {
  mkdirSync(RESULTS, { recursive: true });
  return path.join(RESULTS, `${name}.json`);
}
