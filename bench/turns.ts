// Turn-taking benchmark (`npm run bench:turns`): false cut-offs at hesitations against the end-of-turn delay at true
// ends, as a curve over each policy's setting (the way LiveKit's eot-bench reports it), the operating point of the
// defaults, and barge-in (time to stop, false barge-ins) on web and phone calls.
//
// Corpus (bench/lib/turn-corpus.ts): human recordings (Asterisk prompts, one speaker, a natural inner pause stretched
// to 600 ms; evaluation only), the same recordings with a 600 ms hesitation spliced in at a word boundary inside a
// sentence (bench/lib/turn-human-inserted.ts; evaluation only), and espeak-ng and Flite speech with a 600 ms pause at a word boundary (its `fit` split
// is what bench/fit-turns.ts fits on; the `eval` split and the human set are only evaluated). Each item is replayed once
// through the session's own input path (bench/lib/turn-replay.ts, cached), then every policy is simulated on the
// audio clock with this machine's recognition time (bench/lib/turn-policies.ts).
//
// Env: BENCH_BARGE=0 skips barge-in (BENCH_BARGE_TRIALS, BENCH_BARGE_FALSE per kind); BENCH_SETS (default
// human8,inserted,synth; also human16 and fit); BENCH_MAX_TURN_S (15); BENCH_LIVE=N streams N items to a real server too;
// BENCH_WEIGHTS=file.json evaluates other end-of-turn weights (an EotWeights object) in place of the shipped ones.
// BENCH_CACHE_DIR puts the corpus and replay caches elsewhere than bench/.cache (e.g. to time a cold run).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ModelRegistry } from '../engine/models/registry.js';
import { DEFAULT_MIN_DELAY_MS, DEFAULT_WEIGHTS, type EotWeights } from '../engine/turn/end-of-turn.js';
import { lexicalFeatures } from '../engine/turn/lexical.js';
import { freshStore, startServer } from '../test/support/server.js';
import { svgPlot, type Series } from './lib/plot.js';
import { liveCheck } from './lib/turn-live.js';
import { printTable, resultPath } from './lib/report.js';
import { buildTurnCorpus, readItemAudio, type TurnItem } from './lib/turn-corpus.js';
import { buildInsertedHuman } from './lib/turn-human-inserted.js';
import { pct, punctuationPolicy, simulate, smartPolicy, summarize, vadPolicy, type Policy, type Summary } from './lib/turn-policies.js';
import { calibrateRecognition, replayAll, toSessionRate, type ItemReplay } from './lib/turn-replay.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CACHE = path.join(process.env.BENCH_CACHE_DIR ? path.resolve(process.env.BENCH_CACHE_DIR) : path.join(ROOT, 'bench/.cache'), 'turn-replay');
const VAD_DELAYS = [200, 300, 400, 500, 600, 700, 800, 1000, 1200, 1500, 2000, 2500];
const MAX_TURN_S = Number(process.env.BENCH_MAX_TURN_S ?? 15);
const MIN_DELAYS = [100, 150, 200, 250, 300, 400];
const WEIGHTS: EotWeights = process.env.BENCH_WEIGHTS ? (JSON.parse(fs.readFileSync(process.env.BENCH_WEIGHTS, 'utf8')) as EotWeights) : DEFAULT_WEIGHTS;
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
  return [set, s.policy, String(s.setting), String(s.items), pctf(c.mid_clause?.rate), pctf(c.clause_end?.rate), pctf(c.sentence_end?.rate), pctf(c.no_pause?.rate), msf(s.delayP50), msf(s.delayP90), msf(s.decisionP50), String(s.missed)];
}

/** BENCH_LIVE: the defaults on a real server at real-time pace, human 8 kHz items spread over the pause kinds. */
async function liveRun(all: TurnItem[], n: number): Promise<unknown> {
  const pool = all.filter((i) => i.source === 'human' && i.rate === 8000);
  const byKind = new Map<string, TurnItem[]>();
  for (const i of pool) byKind.set(i.pauses[0]?.kind ?? 'no_pause', [...(byKind.get(i.pauses[0]?.kind ?? 'no_pause') ?? []), i]);
  const picked: TurnItem[] = [];
  for (let k = 0; picked.length < Math.min(n, pool.length); k++) for (const list of byKind.values()) if (list[k] && picked.length < n) picked.push(list[k] as TurnItem);
  const store = freshStore('sqlite');
  const server = await startServer({ store, env: { PARLEY_WARM_MODELS: 'true', PARLEY_RATE_LIMIT_PER_MINUTE: '1000000' } });
  try {
    const out = await liveCheck(server, picked, 2);
    const rows = [...new Set(out.map((o) => o.kind))].map((kind) => {
      const of = out.filter((o) => o.kind === kind && !o.error);
      const ends = of.filter((o) => !o.cutoff).map((o) => o.delayMs as number);
      return [kind, String(of.length), pctf(of.filter((o) => o.cutoff).length / Math.max(1, of.length)), msf(pct(ends, 0.5)), msf(pct(ends, 0.9))];
    });
    printTable(`Live: ${picked.length} human 8 kHz items streamed to the agent WebSocket at real-time pace, 2 at a time (errors: ${out.filter((o) => o.error).length})`, ['hesitation', 'items', 'cut off', 'delay p50', 'p90'], rows, 1);
    return out;
  } finally {
    await server.stop();
    await store.cleanup();
  }
}

async function main(): Promise<void> {
  const t0 = performance.now();
  // Items whose speech runs past BENCH_MAX_TURN_S (default 15 s: the long multi-sentence Asterisk prompts) are left
  // out: replaying them costs most of the run, and past 28 s the session cuts any turn as a monologue.
  const all = (await buildTurnCorpus()).filter((i) => i.speechEnd / i.rate <= MAX_TURN_S);
  const wanted = (process.env.BENCH_SETS ?? 'human8,inserted,synth').split(',');
  const sets: Set[] = [];
  const human = (rate: number) => all.filter((i) => i.source === 'human' && i.rate === rate);
  if (wanted.includes('human8')) {
    sets.push({ name: 'human 8k', items: human(8000) });
    // The read prompts' hesitations split by the reference words before them: an ending that cannot end a sentence
    // ("separated by", "to the") or a phrase that could ("please enter your password").
    const mid = human(8000).filter((i) => i.pauses[0]?.kind === 'mid_clause');
    const open = (i: TurnItem) => lexicalFeatures((i.pauses[0]?.before ?? '').replace(/\*/g, ' star').replace(/#/g, ' pound')).openEnding === 1;
    sets.push({ name: 'human 8k, open word', items: mid.filter(open) });
    sets.push({ name: 'human 8k, whole phrase', items: mid.filter((i) => !open(i)) });
  }
  if (wanted.includes('human16')) sets.push({ name: 'human 16k', items: human(16000) });
  if (wanted.includes('inserted')) {
    // The same recordings with a 600 ms hesitation spliced in at a word boundary inside a sentence
    // (bench/lib/turn-human-inserted.ts): after a function word (mid-clause), or after another word.
    const ins = (await buildInsertedHuman({ maxSpeechS: MAX_TURN_S })).items;
    const cat = (c: string) => ins.filter((i) => i.pauses[0]?.category === c);
    sets.push({ name: 'human 8k inserted, after function word', items: cat('after_function_word') });
    sets.push({ name: 'human 8k inserted, after other word', items: cat('after_other_word') });
  }
  if (wanted.includes('synth')) {
    const synth = all.filter((i) => i.source === 'synth' && i.split === 'eval');
    sets.push({ name: 'synth eval', items: synth });
    for (const engine of ['espeak', 'flite']) sets.push({ name: `synth eval, ${engine}`, items: synth.filter((i) => i.voice.startsWith(`${engine}:`)) });
  }
  if (wanted.includes('fit')) sets.push({ name: 'synth fit', items: all.filter((i) => i.source === 'synth' && i.split === 'fit') });
  const registry = new ModelRegistry({ cacheDir: path.join(os.tmpdir(), 'parley-models'), concurrency: 2, maxWaiting: 64, synthesisWorkers: 1 });
  const replays = new Map<string, ItemReplay>();
  const todo = sets.flatMap((s) => s.items);
  await replayAll(todo, registry, CACHE, (r) => replays.set(r.id, r));
  const calItem = all.find((i) => i.source === 'human' && i.rate === 8000) ?? (all[0] as TurnItem);
  // BENCH_REC="a,b" (ms, ms per second) uses a recognition time measured before instead of calibrating now (a busy
  // machine inflates it).
  const fixed = process.env.BENCH_REC?.split(',').map(Number);
  const cal = fixed?.length === 2 ? { a: fixed[0] as number, b: fixed[1] as number, samples: [] as [number, number][] } : await calibrateRecognition(registry, toSessionRate(readItemAudio(calItem), calItem.rate).subarray(0, Math.round((calItem.speechEnd / calItem.rate) * 16000)));
  const recMs = (s: number) => Math.max(0, cal.a + cal.b * s);
  console.log(`recognition time on this machine (one at a time, full window): ${cal.a.toFixed(0)} ms + ${cal.b.toFixed(1)} ms per second of audio (${cal.samples.map(([s, ms]) => `${s} s: ${ms.toFixed(0)} ms`).join(', ')})`);
  await registry.close();

  const header = ['set', 'policy', 'setting', 'items', 'mid-clause', 'clause end', 'sentence end', 'no pause', 'delay p50', 'p90', 'wait p50', 'never'];
  const rows: string[][] = [];
  const results: Record<string, { before: Summary; defaults: Summary; vad: Summary[]; smart: Summary[]; minDelay: Summary[] }> = {};
  const threshold = WEIGHTS.threshold;
  for (const set of sets) {
    const before = run(punctuationPolicy(400, 3000), replays, set.items, recMs);
    const defaults = run({ ...smartPolicy(threshold, DEFAULT_MIN_DELAY_MS, 3000, WEIGHTS), name: 'smart turn (defaults)' }, replays, set.items, recMs);
    const vad = VAD_DELAYS.map((d) => run(vadPolicy(d), replays, set.items, recMs));
    const smart = THRESHOLDS.map((t) => run(smartPolicy(t, DEFAULT_MIN_DELAY_MS, 3000, WEIGHTS), replays, set.items, recMs));
    const minDelay = MIN_DELAYS.map((m) => run({ ...smartPolicy(threshold, m, 3000, WEIGHTS), name: 'smart, minDelayMs', setting: m }, replays, set.items, recMs));
    results[set.name] = { before, defaults, vad, smart, minDelay };
    rows.push(row(set.name, before), row(set.name, defaults));
  }
  const synthEval = sets.find((s) => s.name === 'synth eval');
  if (synthEval) {
    const cats = [...new Set(synthEval.items.map((i) => i.pauses[0]?.category ?? i.category ?? 'none'))];
    const policies = [punctuationPolicy(400, 3000), smartPolicy(threshold, DEFAULT_MIN_DELAY_MS, 3000, WEIGHTS)];
    const catRows = cats.map((cat) => {
      const items = synthEval.items.filter((i) => (i.pauses[0]?.category ?? i.category ?? 'none') === cat);
      return [cat, String(items.length), ...policies.map((p) => pctf(items.filter((it) => simulate(replays.get(it.id) as ItemReplay, p, recMs, it.question).kind === 'cutoff').length / items.length))];
    });
    printTable('Synthesized eval set by where the 600 ms hesitation falls: share cut off, before and with the defaults', ['category', 'items', 'before', 'smart turn'], catRows, 1);
  }
  printTable('Operating points: false cut-offs by where the hesitation was (share of items); end-of-turn delay at true ends (ms; every item), with this machine\'s recognition and (wait) with instant recognition', header, rows, 2);
  for (const set of sets) {
    const r = results[set.name]!;
    printTable(`Curve, ${set.name}`, header, [...r.vad, ...r.smart, ...r.minDelay].map((s) => row(set.name, s)), 2);
  }

  // The plot: mid-clause false cut-offs against the delay at true ends, one panel's worth of series per set.
  const colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];
  const series: Series[] = [];
  sets.filter((s) => ['human 8k', 'human 8k inserted, after function word', 'synth eval'].includes(s.name)).forEach((set, k) => {
    const r = results[set.name]!;
    const color = colors[k % colors.length] as string;
    const pt = (s: Summary): [number, number] => [s.decisionP50, 100 * (s.cutoff.mid_clause?.rate ?? NaN)];
    series.push({ name: `${set.name}: smart turn`, color, points: r.smart.map(pt), marks: [{ at: pt(r.defaults), label: 'default' }, { at: pt(r.before), label: 'before' }] });
    series.push({ name: `${set.name}: VAD only`, color, dashed: true, points: r.vad.map(pt) });
  });
  const svg = svgPlot(series, { title: 'False cut-offs at 600 ms mid-clause hesitations vs end-of-turn delay', xLabel: 'end-of-turn wait at true ends, p50 (ms; recognition time not counted)', yLabel: 'false cut-offs (%)', xMax: 2000, yMax: 100 });
  const plotFile = resultPath('turns-curve').replace(/\.json$/, '.svg');
  fs.writeFileSync(plotFile, svg);

  let live: unknown = null;
  const liveN = Number(process.env.BENCH_LIVE ?? 0);
  if (liveN > 0) live = await liveRun(all, liveN);

  let barge: unknown = null;
  if (process.env.BENCH_BARGE !== '0') {
    const { runBargeInBench } = await import('./barge-in.js');
    barge = await runBargeInBench();
  }
  const out = resultPath(`turns-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  fs.writeFileSync(out, JSON.stringify({ recognition: cal, threshold, minDelayMs: DEFAULT_MIN_DELAY_MS, weights: WEIGHTS.fittedOn, results, live, barge }, null, 2));
  console.log(`\nplot: ${plotFile}\nresults: ${out}\n(${((performance.now() - t0) / 1000).toFixed(0)} s)`);
}

await main();
