// Fits the end-of-turn model (engine/turn/end-of-turn.ts) on speech synthesized here only: the turn corpus's `fit`
// split (espeak-ng and Flite voices, pauses placed at word boundaries). Human recordings are never read. Each pause
// the session would see is a sample: the true end of a turn is complete (1); a hesitation or natural pause before it
// that is not at a sentence end is incomplete (0). Logistic regression (L2, standardized features, gradient descent);
// then the threshold is the highest one whose simulated wait at true ends stays within BENCH_FIT_WAIT_P50 (default
// 260 ms) in the median on the fit split: the fewest cut-offs within the latency budget. Writes
// engine/turn/eot-weights.ts.
//
//   npx tsx bench/fit-turns.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ModelRegistry } from '../engine/models/registry.js';
import { DEFAULT_MIN_DELAY_MS, FEATURE_NAMES, featureVector, type EotWeights } from '../engine/turn/end-of-turn.js';
import { buildTurnCorpus } from './lib/turn-corpus.js';
import { replayAll, type ItemReplay } from './lib/turn-replay.js';
import { simulate, smartPolicy, summarize } from './lib/turn-policies.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CACHE = path.join(ROOT, 'bench/.cache/turn-replay');
const WAIT_BUDGET = Number(process.env.BENCH_FIT_WAIT_P50 ?? 260);

function labelled(replay: ItemReplay, question?: string): { x: number[]; y: number }[] {
  const out: { x: number[]; y: number }[] = [];
  for (const rec of replay.records) {
    if (!rec.text) continue;
    const at = rec.pauseWindow * 32;
    const isEnd = at >= replay.speechEndMs - 150;
    const hes = replay.pauses.find((p) => at >= p.startMs - 250 && at <= p.endMs);
    if (!isEnd && hes?.kind === 'sentence_end') continue; // complete and yet not the end: neither label
    out.push({ x: featureVector({ text: rec.text, agentText: question, prosody: rec.prosody }), y: isEnd ? 1 : 0 });
    if (isEnd) break;
  }
  return out;
}

function fitLogistic(data: { x: number[]; y: number }[], l2 = 0.01, steps = 4000, rate = 0.3): { weights: number[]; bias: number; mean: number[]; scale: number[] } {
  const d = FEATURE_NAMES.length;
  const mean = Array.from({ length: d }, (_, j) => data.reduce((a, s) => a + (s.x[j] as number), 0) / data.length);
  const scale = Array.from({ length: d }, (_, j) => {
    const sd = Math.sqrt(data.reduce((a, s) => a + ((s.x[j] as number) - (mean[j] as number)) ** 2, 0) / data.length);
    return sd > 1e-6 ? sd : 1;
  });
  const std = data.map((s) => ({ x: s.x.map((v, j) => (v - (mean[j] as number)) / (scale[j] as number)), y: s.y }));
  // Balance the classes: each class weighs half.
  const pos = data.filter((s) => s.y === 1).length;
  const cw = (y: number) => (y === 1 ? data.length / (2 * pos) : data.length / (2 * (data.length - pos)));
  const w = new Array<number>(d).fill(0);
  let b = 0;
  for (let it = 0; it < steps; it++) {
    const g = new Array<number>(d).fill(0);
    let gb = 0;
    for (const s of std) {
      let z = b;
      for (let j = 0; j < d; j++) z += (w[j] as number) * (s.x[j] as number);
      const err = (1 / (1 + Math.exp(-z)) - s.y) * cw(s.y);
      for (let j = 0; j < d; j++) g[j] = (g[j] as number) + err * (s.x[j] as number);
      gb += err;
    }
    for (let j = 0; j < d; j++) w[j] = (w[j] as number) - rate * ((g[j] as number) / data.length + l2 * (w[j] as number));
    b -= (rate * gb) / data.length;
  }
  return { weights: w, bias: b, mean, scale };
}

async function main(): Promise<void> {
  const items = (await buildTurnCorpus()).filter((i) => i.split === 'fit' && i.speechEnd / i.rate <= 27.5);
  if (items.some((i) => i.source !== 'synth')) throw new Error('the fit split must hold synthesized speech only');
  const registry = new ModelRegistry({ cacheDir: path.join(os.tmpdir(), 'parley-models'), concurrency: 2, maxWaiting: 64, synthesisWorkers: 1 });
  const replays: ItemReplay[] = [];
  await replayAll(items, registry, CACHE, (r) => replays.push(r));
  const questions = new Map(items.map((i) => [i.id, i.question]));
  const data = replays.flatMap((r) => labelled(r, questions.get(r.id)));
  console.log(`samples: ${data.length} (${data.filter((s) => s.y === 1).length} complete)`);
  const fit = fitLogistic(data);
  const weights: EotWeights = {
    features: FEATURE_NAMES,
    mean: fit.mean.map((v) => +v.toPrecision(4)),
    scale: fit.scale.map((v) => +v.toPrecision(4)),
    weights: fit.weights.map((v) => +v.toPrecision(4)),
    bias: +fit.bias.toPrecision(4),
    threshold: 0.5,
    fittedOn: `bench/fit-turns.ts on ${items.length} synthesized items (${data.length} pauses), ${new Date().toISOString().slice(0, 10)}`,
  };
  // A fixed recognition time (a quiet 2-core machine, one session: about 150 ms + 30 ms per second of audio), so
  // the threshold does not depend on what else the machine runs; BENCH_FIT_REC="a,b" sets it.
  const [ra, rb] = (process.env.BENCH_FIT_REC ?? '150,30').split(',').map(Number) as [number, number];
  const recMs = (s: number) => ra + rb * s;
  // The fewest cut-offs within the latency budget: the highest threshold whose wait at true ends (recognition not
  // counted) stays at or under BENCH_FIT_WAIT_P50 ms in the median on the fit split.
  let chosen = 0.05;
  for (let t = 0.05; t <= 0.991; t += 0.01) {
    const policy = smartPolicy(t, DEFAULT_MIN_DELAY_MS, 3000, weights);
    const s = summarize(policy, replays.map((r) => ({ replay: r, outcome: simulate(r, policy, recMs, questions.get(r.id)) })));
    if (s.decisionP50 > WAIT_BUDGET) break;
    chosen = t;
    console.log(`threshold ${t.toFixed(2)}: mid-clause cut-offs ${(100 * (s.cutoff.mid_clause?.rate ?? 0)).toFixed(1)}%, wait p50 ${s.decisionP50.toFixed(0)} ms, p90 ${s.delayP90.toFixed(0)} ms`);
  }
  weights.threshold = +chosen.toFixed(2);
  for (const [j, name] of FEATURE_NAMES.entries()) console.log(`${name.padEnd(18)} ${(weights.weights[j] as number).toFixed(3)} / ${weights.scale[j]}`);
  const line = (k: keyof EotWeights) => `  ${k}: ${JSON.stringify(weights[k])},`;
  const body = [
    '// Generated by bench/fit-turns.ts: do not edit by hand (rerun it). Fitted on synthesized speech only.',
    "import type { EotWeights } from './end-of-turn.js';",
    '',
    'export const FITTED: EotWeights = {',
    ...(['features', 'mean', 'scale', 'weights', 'bias', 'threshold', 'fittedOn'] as const).map(line),
    '};',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(ROOT, 'engine/turn/eot-weights.ts'), body);
  console.log('wrote engine/turn/eot-weights.ts');
  await registry.close();
}

await main();
