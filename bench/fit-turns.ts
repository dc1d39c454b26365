// Fits the end-of-turn model (engine/turn/end-of-turn.ts) on speech synthesized here only: the turn corpus's `fit`
// split (espeak-ng voices, pauses placed at word boundaries). Human recordings are never read. Each pause the session
// would see is a sample: the true end of a turn is complete (1); a hesitation or natural pause before it that is not
// at a sentence end is incomplete (0). Logistic regression (L2, standardized features, gradient descent); then the
// threshold is the lowest one that keeps the simulated false cut-offs at mid-clause hesitations of the fit split at or
// under BENCH_FIT_CUTOFF (default 0.08). Writes engine/turn/eot-weights.ts.
//
//   npx tsx bench/fit-turns.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ModelRegistry } from '../engine/models/registry.js';
import { DEFAULT_MIN_DELAY_MS, FEATURE_NAMES, featureVector, type EotWeights } from '../engine/turn/end-of-turn.js';
import { buildTurnCorpus, readItemAudio } from './lib/turn-corpus.js';
import { calibrateRecognition, replayItem, toSessionRate, type ItemReplay } from './lib/turn-replay.js';
import { simulate, smartPolicy, summarize } from './lib/turn-policies.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CACHE = path.join(ROOT, 'bench/.cache/turn-replay');
const MAX_CUTOFF = Number(process.env.BENCH_FIT_CUTOFF ?? 0.08);

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

function fitLogistic(data: { x: number[]; y: number }[], l2 = 0.01, steps = 4000, rate = 0.3): { weights: number[]; bias: number; scale: number[] } {
  const d = FEATURE_NAMES.length;
  const scale = Array.from({ length: d }, (_, j) => {
    const col = data.map((s) => s.x[j] as number);
    const mean = col.reduce((a, b) => a + b, 0) / col.length;
    const sd = Math.sqrt(col.reduce((a, b) => a + (b - mean) ** 2, 0) / col.length);
    return sd > 1e-6 ? sd : 1;
  });
  // Balance the classes: each class weighs half.
  const pos = data.filter((s) => s.y === 1).length;
  const cw = (y: number) => (y === 1 ? data.length / (2 * pos) : data.length / (2 * (data.length - pos)));
  const w = new Array<number>(d).fill(0);
  let b = 0;
  for (let it = 0; it < steps; it++) {
    const g = new Array<number>(d).fill(0);
    let gb = 0;
    for (const s of data) {
      let z = b;
      for (let j = 0; j < d; j++) z += ((w[j] as number) * (s.x[j] as number)) / (scale[j] as number);
      const err = (1 / (1 + Math.exp(-z)) - s.y) * cw(s.y);
      for (let j = 0; j < d; j++) g[j] = (g[j] as number) + (err * (s.x[j] as number)) / (scale[j] as number);
      gb += err;
    }
    for (let j = 0; j < d; j++) w[j] = (w[j] as number) - rate * ((g[j] as number) / data.length + l2 * (w[j] as number));
    b -= (rate * gb) / data.length;
  }
  return { weights: w, bias: b, scale };
}

async function main(): Promise<void> {
  const items = (await buildTurnCorpus()).filter((i) => i.split === 'fit' && i.speechEnd / i.rate <= 27.5);
  if (items.some((i) => i.source !== 'synth')) throw new Error('the fit split must hold synthesized speech only');
  const registry = new ModelRegistry({ cacheDir: path.join(os.tmpdir(), 'parley-models'), concurrency: 2, maxWaiting: 64, synthesisWorkers: 1 });
  const replays: ItemReplay[] = [];
  for (const [i, item] of items.entries()) {
    replays.push(await replayItem(item, readItemAudio(item), registry, CACHE));
    if (i % 50 === 0) process.stdout.write(`replayed ${i + 1}/${items.length}\n`);
  }
  const clips = items.slice(0, 12).map((it) => toSessionRate(readItemAudio(it), it.rate));
  const cal = await calibrateRecognition(registry, clips);
  const questions = new Map(items.map((i) => [i.id, i.question]));
  const data = replays.flatMap((r) => labelled(r, questions.get(r.id)));
  console.log(`samples: ${data.length} (${data.filter((s) => s.y === 1).length} complete)`);
  const fit = fitLogistic(data);
  const weights: EotWeights = {
    features: FEATURE_NAMES,
    scale: fit.scale.map((v) => +v.toPrecision(4)),
    weights: fit.weights.map((v) => +v.toPrecision(4)),
    bias: +fit.bias.toPrecision(4),
    threshold: 0.5,
    fittedOn: `bench/fit-turns.ts on ${items.length} synthesized items (${data.length} pauses), ${new Date().toISOString().slice(0, 10)}`,
  };
  const recMs = (s: number) => cal.a + cal.b * s;
  let chosen = 0.95;
  for (let t = 0.05; t <= 0.951; t += 0.01) {
    const policy = smartPolicy(t, DEFAULT_MIN_DELAY_MS, 3000, weights);
    const s = summarize(policy, replays.map((r) => ({ replay: r, outcome: simulate(r, policy, recMs, questions.get(r.id)) })));
    if ((s.cutoff.mid_clause?.rate ?? 0) <= MAX_CUTOFF) {
      chosen = t;
      console.log(`threshold ${t.toFixed(2)}: mid-clause cut-offs ${(100 * (s.cutoff.mid_clause?.rate ?? 0)).toFixed(1)}%, delay p50 ${s.delayP50.toFixed(0)} ms`);
      break;
    }
  }
  weights.threshold = +chosen.toFixed(2);
  for (const [j, name] of FEATURE_NAMES.entries()) console.log(`${name.padEnd(18)} ${(weights.weights[j] as number).toFixed(3)} / ${weights.scale[j]}`);
  const body = `// Generated by bench/fit-turns.ts: do not edit by hand (rerun it). Fitted on synthesized speech only.
import type { EotWeights } from './end-of-turn.js';

export const FITTED: EotWeights = ${JSON.stringify(weights, null, 2)};
`;
  fs.writeFileSync(path.join(ROOT, 'engine/turn/eot-weights.ts'), body);
  console.log('wrote engine/turn/eot-weights.ts');
  await registry.close();
}

await main();
