// Builds (or loads) the end-of-turn corpus and prints its counts and a sanity check of pause regions.
// Usage: npx tsx bench/build-turn-corpus.ts [--rebuild] [--pause-ms N] [--dir DIR] [--check-all]
import { buildTurnCorpus, corpusStats, readItemAudio, segmentSpeech, type TurnItem } from './lib/turn-corpus.js';
import { printTable } from './lib/report.js';

const args = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const opts = { rebuild: args.includes('--rebuild'), pauseMs: Number(arg('pause-ms') ?? 600), dir: arg('dir') };

const t0 = performance.now();
const items = await buildTurnCorpus(opts);
console.log(`${items.length} items in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
console.log('build stats:', JSON.stringify(corpusStats(opts)));

function countBy(title: string, key: (i: TurnItem) => string): void {
  const counts = new Map<string, Map<string, number>>();
  for (const i of items) {
    const row = counts.get(key(i)) ?? new Map<string, number>();
    const col = `${i.source}/${i.rate / 1000}k`;
    row.set(col, (row.get(col) ?? 0) + 1);
    counts.set(key(i), row);
  }
  const cols = [...new Set(items.map((i) => `${i.source}/${i.rate / 1000}k`))].sort();
  const rows = [...counts.entries()].sort(([a], [b]) => a.localeCompare(b));
  printTable(title, [title, ...cols, 'total'], rows.map(([k, r]) => [k, ...cols.map((c) => String(r.get(c) ?? 0)), String([...r.values()].reduce((a, b) => a + b, 0))]), 1);
}
countBy('kind', (i) => i.pauses[0]?.kind ?? '(no pause)');
countBy('category', (i) => i.pauses[0]?.category ?? `(none) ${i.category ?? ''}`);
countBy('split', (i) => i.split);

/** Pause region below the speech threshold (+1 dB for resampling), speech within 150 ms on both sides, 3.5 s after speechEnd. */
function check(item: TurnItem): string[] {
  const x = readItemAudio(item);
  const seg = segmentSpeech(x, item.rate, 0.05);
  const problems: string[] = [];
  if (x.length - item.speechEnd < 3.5 * item.rate) problems.push('tail shorter than 3.5 s');
  if (Math.abs(seg.speechEnd - item.speechEnd) > 0.02 * item.rate) problems.push(`speechEnd ${item.speechEnd} vs measured ${seg.speechEnd}`);
  const near = 0.15 * item.rate;
  for (const p of item.pauses) {
    const frame = Math.round(item.rate * 0.01);
    for (let f = p.start; f + frame <= p.end; f += frame) {
      let e = 0;
      for (let i = f; i < f + frame; i++) e += x[i]! ** 2;
      if (Math.sqrt(e / frame) > seg.threshold * 1.12) {
        problems.push(`loud frame in pause at ${f}`);
        break;
      }
    }
    const inside = seg.silences.find((s) => s.start <= p.start + near && s.end >= p.end - near);
    if (!inside) problems.push('pause not found as a silence');
    else if (p.start - inside.start > near || inside.end - p.end > near) problems.push('no speech within 150 ms of the pause');
  }
  return problems;
}
const sample = process.argv.includes('--check-all') ? items : items.filter((_, i) => i % 7 === 0);
let bad = 0;
for (const item of sample) {
  const problems = check(item);
  if (problems.length) {
    bad++;
    console.log(`  ${item.id}: ${problems.join('; ')}`);
  }
}
console.log(`\nsanity check: ${sample.length - bad}/${sample.length} sampled items pass`);
process.exitCode = bad ? 1 : 0;
