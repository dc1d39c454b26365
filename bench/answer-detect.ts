// Answering-machine detection (engine/agent/answer-detect.ts) on the greetings of bench/lib/greetings.ts with the real
// models (Silero VAD, Whisper tiny.en through the inference queue; no server): every greeting streamed in 20 ms
// frames paced by its audio time (real time, so recognition costs what it costs on this machine), one at a time.
// Prints accuracy per class and overall, the confusion matrix, decision times per class (people: from the end of
// their speech; machines and silence: from the answer) and when the greeting's end was reported, separately for the
// synthesized (tuning) set and the Asterisk recordings (evaluation only), and writes bench/results/answer-detect.json.
//
//   npx tsx bench/answer-detect.ts
//   BENCH_SETS=synth BENCH_PACE=instant npx tsx bench/answer-detect.ts   (recognition takes no audio time)
//   BENCH_WORDS=off ...   (every recognition fails: voice activity and beeps only)
//   BENCH_ONLY=h01,v03 BENCH_TRACE=v03 ...   (some greetings; the detector's trace of one)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AnswerDetector, type AnswerDecision, type AnswerDetectorOptions, type AnswerVerdict, type GreetingEnd } from '../engine/agent/answer-detect.js';
import { QueueFullError } from '../engine/models/queue.js';
import { ModelRegistry } from '../engine/models/registry.js';
import { loadTurnModels } from '../engine/models/turn-models.js';
import { asteriskGreetings, synthGreetings, type Greeting } from './lib/greetings.js';
import { printTable, quantile, resultPath } from './lib/report.js';

const FRAME_MS = 20;
const CLASSES: AnswerVerdict[] = ['human', 'voicemail', 'ivr', 'silence'];
/** What the agent needs after a person's verdict to be heard (first phrase synthesized and on the wire). */
const AGENT_START_MS = 300;
const PACE = process.env.BENCH_PACE === 'instant' ? 'instant' : 'realtime';

export interface Outcome {
  id: string;
  set: string;
  expected: AnswerVerdict;
  what: string;
  voice: string;
  decision: AnswerDecision | null;
  greetingEnd: GreetingEnd | null;
  /** People: decision ms after the end of the speech before it; others: decision ms after the answer. */
  decisionMs: number | null;
  /** Machines: greeting end reported ms after the beep's end (or after the last speech when there is no beep). */
  endLagMs: number | null;
  recognitionErrors: number;
}

/** Streams one greeting through a detector; stops a little after it has nothing more to say. */
export async function runGreeting(g: Greeting, models: Awaited<ReturnType<typeof loadTurnModels>>, opts: AnswerDetectorOptions = {}, pace = PACE): Promise<Outcome> {
  const trace = process.env.BENCH_TRACE?.split(',').includes(g.id) ? (ms: number, e: string) => console.log(`  ${g.id} ${Math.round(ms)} ms: ${e}`) : undefined;
  const det = new AnswerDetector(models, { rate: 8000, trace, ...opts });
  const n = Math.round((g.rate * FRAME_MS) / 1000);
  const t0 = performance.now();
  let doneAt: number | null = null;
  for (let i = 0; i + n <= g.samples.length; i += n) {
    const audioMs = ((i + n) * 1000) / g.rate;
    if (pace === 'realtime') {
      const wait = t0 + audioMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    await det.push(g.samples.subarray(i, i + n));
    if (pace === 'instant') await det.idle();
    if (det.done) doneAt ??= audioMs;
    if (doneAt !== null && audioMs - doneAt >= 200) break;
  }
  if (pace === 'realtime') await det.idle();
  det.stop();
  const d = det.decision;
  let decisionMs: number | null = null;
  if (d) {
    if (g.expected === 'human') {
      const before = g.speech.filter((s) => s.endMs <= d.atMs);
      decisionMs = before.length ? d.atMs - (before[before.length - 1] as { endMs: number }).endMs : null;
    } else decisionMs = d.atMs;
  }
  let endLagMs: number | null = null;
  if (det.greetingEnd) {
    const ref = g.beep?.endMs ?? g.speech[g.speech.length - 1]?.endMs;
    if (ref !== undefined) endLagMs = det.greetingEnd.atMs - ref;
  }
  return { id: g.id, set: g.set, expected: g.expected, what: g.what, voice: g.voice, decision: d, greetingEnd: det.greetingEnd, decisionMs, endLagMs, recognitionErrors: det.recognitionErrors };
}

const pctf = (x: number) => `${(100 * x).toFixed(1)}%`;
const msf = (x: number) => (Number.isFinite(x) ? `${Math.round(x)}` : '-');

function report(name: string, out: Outcome[]): Record<string, unknown> {
  const ok = (o: Outcome) => o.decision?.verdict === o.expected;
  const rows = CLASSES.map((c) => {
    const of = out.filter((o) => o.expected === c);
    const times = of.filter(ok).map((o) => o.decisionMs).filter((x): x is number => x !== null);
    return [c, String(of.length), of.length ? pctf(of.filter(ok).length / of.length) : '-', msf(quantile(times, 0.5)), msf(quantile(times, 0.95)), c === 'human' ? 'from end of speech' : 'from answer'];
  });
  rows.push(['all', String(out.length), pctf(out.filter(ok).length / Math.max(1, out.length)), '', '', '']);
  printTable(`${name}: ${out.length} greetings, ${out.filter(ok).length} correct (${PACE} pacing${process.env.BENCH_WORDS === 'off' ? ', no words' : ''})`, ['class', 'items', 'correct', 'decision p50 ms', 'p95 ms', 'measured'], rows, 1);
  const conf = CLASSES.map((c) => [c, ...[...CLASSES, 'none'].map((v) => String(out.filter((o) => o.expected === c && (o.decision?.verdict ?? 'none') === v).length))]);
  printTable(`${name}: confusion (rows: truth, columns: verdict)`, ['truth', ...CLASSES, 'none'], conf, 1);
  const humans = out.filter((o) => o.expected === 'human' && ok(o) && o.decisionMs !== null).map((o) => (o.decisionMs as number) + AGENT_START_MS);
  console.log(`people hear the agent (decision + ~${AGENT_START_MS} ms to start speaking) after their speech ends: p50 ${msf(quantile(humans, 0.5))} ms, p95 ${msf(quantile(humans, 0.95))} ms`);
  const beeped = out.filter((o) => o.greetingEnd?.beep && o.endLagMs !== null).map((o) => o.endLagMs as number);
  const silent = out.filter((o) => o.greetingEnd && !o.greetingEnd.beep && o.endLagMs !== null).map((o) => o.endLagMs as number);
  const machines = out.filter((o) => o.expected === 'voicemail' || o.expected === 'ivr');
  console.log(`greeting end after a machine verdict: ${out.filter((o) => o.greetingEnd).length}/${machines.length} machines; at a beep ${beeped.length} (after the beep's end p50 ${msf(quantile(beeped, 0.5))} ms, max ${msf(Math.max(...beeped))}), after silence ${silent.length} (after the last speech p50 ${msf(quantile(silent, 0.5))} ms)`);
  const beepsMissed = out.filter((o) => o.decision && o.decision.verdict !== 'human' && o.greetingEnd && !o.greetingEnd.beep && o.expected !== 'silence');
  if (beepsMissed.length) console.log(`  greeting ends without a beep: ${beepsMissed.map((o) => o.id).join(', ')}`);
  const wrong = out.filter((o) => !ok(o));
  if (wrong.length) {
    printTable(`${name}: wrong verdicts`, ['id', 'what', 'truth', 'verdict', 'at ms', 'reason', 'words'], wrong.map((o) => [o.id, o.what, o.expected, o.decision?.verdict ?? 'none', String(o.decision?.atMs ?? '-'), o.decision?.reason ?? '', (o.decision?.words ?? '').slice(0, 60)]), 7);
  }
  const errs = out.reduce((a, o) => a + o.recognitionErrors, 0);
  if (errs) console.log(`recognition errors: ${errs}`);
  return {
    items: out.length,
    correct: out.filter(ok).length,
    perClass: Object.fromEntries(rows.map((r) => [r[0], { items: Number(r[1]), correct: r[2], p50: r[3], p95: r[4] }])),
    confusion: Object.fromEntries(conf.map((r) => [r[0], r.slice(1)])),
  };
}

async function main(): Promise<void> {
  const sets = (process.env.BENCH_SETS ?? 'synth,asterisk').split(',');
  const registry = new ModelRegistry({ cacheDir: path.join(os.tmpdir(), 'parley-models'), concurrency: 2, maxWaiting: 64, synthesisWorkers: 1 });
  await Promise.all([registry.recognizer(), registry.vad()]);
  // Warm the recognizer (its first run is slower).
  const warm = await loadTurnModels(registry);
  await warm.recognizer.transcribe(new Float32Array(16000), 'live');
  const results: Record<string, unknown> = { pace: PACE, words: process.env.BENCH_WORDS !== 'off', date: new Date().toISOString(), cpus: os.cpus().length };
  const all: Outcome[] = [];
  const only = process.env.BENCH_ONLY?.split(',');
  for (const set of sets) {
    let items = set === 'synth' ? await synthGreetings() : set === 'asterisk' ? await asteriskGreetings() : [];
    if (only) items = items.filter((g) => only.includes(g.id));
    if (!items.length) continue;
    const out: Outcome[] = [];
    for (const g of items) {
      const models = await loadTurnModels(registry);
      // BENCH_WORDS=off: every recognition fails (a full queue): the rules on voice activity and beeps alone.
      if (process.env.BENCH_WORDS === 'off') models.recognizer = { transcribe: () => Promise.reject(new QueueFullError(1)) };
      const o = await runGreeting(g, models);
      out.push(o);
      if (process.env.BENCH_VERBOSE) console.log(o.id, o.expected, o.decision?.verdict, o.decision?.atMs, o.decision?.reason, '|', o.decision?.words, '| end', o.greetingEnd?.atMs, o.greetingEnd?.beep);
    }
    results[set] = report(set === 'synth' ? 'Synthesized set (tuning: espeak-ng, Flite, generated beeps and noise)' : 'Asterisk set (evaluation: human recordings)', out);
    all.push(...out);
  }
  await registry.close();
  results.outcomes = all;
  const file = resultPath(process.env.BENCH_WORDS === 'off' || PACE === 'instant' ? `answer-detect-${PACE}${process.env.BENCH_WORDS === 'off' ? '-nowords' : ''}` : 'answer-detect');
  fs.writeFileSync(file, JSON.stringify(results, null, 2));
  console.log(`\nwrote ${path.relative(process.cwd(), file)}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
