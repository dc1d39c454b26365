// Turn-taking benchmark (`npm run bench:turns`): false cut-offs at hesitations against the end-of-turn delay at true
// ends, as a curve over each policy's setting (the way LiveKit's eot-bench reports it), the operating point of the
// defaults, and barge-in (time to stop, false barge-ins) on web and phone calls.
//
// Corpus (bench/lib/turn-corpus.ts): human recordings (Asterisk prompts, one speaker, a natural inner pause stretched
// to 600 ms; evaluation only) and espeak-ng speech with a 600 ms pause at a word boundary (its `fit` split is what
// bench/fit-turns.ts fits on; the `eval` split and the human set are only evaluated). Each item is replayed once
// through the session's own input path (bench/lib/turn-replay.ts, cached), then every policy is simulated on the
// audio clock with this machine's recognition time (bench/lib/turn-policies.ts).
//
// Env: BENCH_BARGE=0 skips barge-in (BENCH_BARGE_TRIALS, BENCH_BARGE_FALSE per kind); BENCH_SETS=human,synth.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ModelRegistry } from '../engine/models/registry.js';
import { DEFAULT_MIN_DELAY_MS, DEFAULT_WEIGHTS } from '../engine/turn/end-of-turn.js';
import { svgPlot, type Series } from './lib/plot.js';
import { printTable, resultPath } from './lib/report.js';
import { buildTurnCorpus, readItemAudio, type TurnItem } from './lib/turn-corpus.js';
import { punctuationPolicy, simulate, smartPolicy, summarize, vadPolicy, type Policy, type Summary } from './lib/turn-policies.js';
import { calibrateRecognition, replayItem, toSessionRate, type ItemReplay } from './lib/turn-replay.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CACHE = path.join(ROOT, 'bench/.cache/turn-replay');
const VAD_DELAYS = [200, 300, 400, 500, 600, 700, 800, 1000, 1200, 1500, 2000, 2500];
const MAX_TURN_S = 27.5;
const MIN_DELAYS = [100, 150, 200, 250, 300, 400];
const THRESHOLDS = [0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95];

interface Set {
  name: string;
  items: TurnItem[];
}

const pctf = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '-' : `${(100 * x).toFixed(1)}%`);
const msf = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');

function run(policy: Policy, replays: Map<string, ItemReplay>, items: TurnItem[], recMs: (s: number) => number): Summary {
  return summarize(policy, items.map((it) => {
    const replay = replays.get(it.id) as ItemReplay;
    return { replay, outcome: simulate(replay, policy, recMs, it.question) };
  }));
}

function row(set: string, s: Summary): string[] {
  const c = s.cutoff;
  return [set, s.policy, String(s.setting), String(s.items), pctf(c.mid_clause?.rate), pctf(c.clause_end?.rate), pctf(c.sentence_end?.rate), pctf(c.no_pause?.rate), msf(s.delayP50), msf(s.delayP90), String(s.missed)];
}

async function main(): Promise<void> {
  const t0 = performance.now();
  // A turn over 28 s is cut by the session as a monologue whatever the policy: such items (three long Asterisk
  // prompts) are left out.
  const all = (await buildTurnCorpus()).filter((i) => i.speechEnd / i.rate <= MAX_TURN_S);
  const wanted = (process.env.BENCH_SETS ?? 'human,synth').split(',');
  const sets: Set[] = [];
  if (wanted.includes('human')) {
    for (const rate of [8000, 16000]) sets.push({ name: `human ${rate / 1000}k`, items: all.filter((i) => i.source === 'human' && i.rate === rate) });
  }
  if (wanted.includes('synth')) {
    sets.push({ name: 'synth eval', items: all.filter((i) => i.source === 'synth' && i.split === 'eval') });
    sets.push({ name: 'synth fit', items: all.filter((i) => i.source === 'synth' && i.split === 'fit') });
  }
  const registry = new ModelRegistry({ cacheDir: path.join(os.tmpdir(), 'parley-models'), concurrency: 2, maxWaiting: 64, synthesisWorkers: 1 });
  const replays = new Map<string, ItemReplay>();
  const todo = sets.flatMap((s) => s.items);
  for (const [i, item] of todo.entries()) {
    replays.set(item.id, await replayItem(item, readItemAudio(item), registry, CACHE));
    if ((i + 1) % 100 === 0) console.log(`replayed ${i + 1}/${todo.length}`);
  }
  const calItems = all.filter((i) => i.source === 'synth').slice(0, 16);
  const cal = await calibrateRecognition(registry, calItems.map((it) => toSessionRate(readItemAudio(it), it.rate)));
  const recMs = (s: number) => Math.max(0, cal.a + cal.b * s);
  console.log(`recognition time on this machine (one at a time, full window): ${cal.a.toFixed(0)} ms + ${cal.b.toFixed(1)} ms per second of audio`);
  await registry.close();

  const header = ['set', 'policy', 'setting', 'items', 'mid-clause', 'clause end', 'sentence end', 'no pause', 'delay p50', 'p90', 'never'];
  const rows: string[][] = [];
  const results: Record<string, { before: Summary; defaults: Summary; vad: Summary[]; smart: Summary[]; minDelay: Summary[] }> = {};
  const threshold = DEFAULT_WEIGHTS.threshold;
  for (const set of sets) {
    const before = run(punctuationPolicy(400, 3000), replays, set.items, recMs);
    const defaults = run({ ...smartPolicy(threshold, DEFAULT_MIN_DELAY_MS), name: 'smart turn (defaults)' }, replays, set.items, recMs);
    const vad = VAD_DELAYS.map((d) => run(vadPolicy(d), replays, set.items, recMs));
    const smart = THRESHOLDS.map((t) => run(smartPolicy(t, DEFAULT_MIN_DELAY_MS), replays, set.items, recMs));
    const minDelay = MIN_DELAYS.map((m) => run({ ...smartPolicy(threshold, m), name: 'smart, minDelayMs', setting: m }, replays, set.items, recMs));
    results[set.name] = { before, defaults, vad, smart, minDelay };
    rows.push(row(set.name, before), row(set.name, defaults));
  }
  printTable('Operating points: false cut-offs by where the hesitation was (share of items), end-of-turn delay at true ends (ms)', header, rows, 2);
  for (const set of sets) {
    const r = results[set.name]!;
    printTable(`Curve, ${set.name}`, header, [...r.vad, ...r.smart, ...r.minDelay].map((s) => row(set.name, s)), 2);
  }

  // The plot: mid-clause false cut-offs against the delay at true ends, one panel's worth of series per set.
  const colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];
  const series: Series[] = [];
  sets.forEach((set, k) => {
    const r = results[set.name]!;
    const color = colors[k % colors.length] as string;
    const pt = (s: Summary): [number, number] => [s.delayP50, 100 * (s.cutoff.mid_clause?.rate ?? NaN)];
    series.push({ name: `${set.name}: smart turn`, color, points: r.smart.map(pt), marks: [{ at: pt(r.defaults), label: 'default' }, { at: pt(r.before), label: 'before' }] });
    series.push({ name: `${set.name}: VAD only`, color, dashed: true, points: r.vad.map(pt) });
  });
  const svg = svgPlot(series, { title: 'False cut-offs at 600 ms mid-clause hesitations vs end-of-turn delay', xLabel: 'end-of-turn delay at true ends, p50 (ms)', yLabel: 'false cut-offs (%)', xMax: 2000, yMax: 100 });
  const plotFile = resultPath('turns-curve').replace(/\.json$/, '.svg');
  fs.writeFileSync(plotFile, svg);

  let barge: unknown = null;
  if (process.env.BENCH_BARGE !== '0') {
    const { runBargeInBench } = await import('./barge-in.js');
    barge = await runBargeInBench();
  }
  const out = resultPath(`turns-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  fs.writeFileSync(out, JSON.stringify({ recognition: cal, threshold, minDelayMs: DEFAULT_MIN_DELAY_MS, weights: DEFAULT_WEIGHTS.fittedOn, results, barge }, null, 2));
  console.log(`\nplot: ${plotFile}\nresults: ${out}\n(${((performance.now() - t0) / 1000).toFixed(0)} s)`);
}

await main();
