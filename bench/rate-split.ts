// Benchmark: does narrowband speech get a slower answer? (npx tsx bench/rate-split.ts) One server (SQLite, models
// warmed; it inherits this process's environment, so PARLEY_* settings reach it) and the voice benches' agent. Web
// callers over the agent WebSocket say the same sentences, synthesised at 8 and at 16 kHz and trimmed at -45 dBFS, in
// 20 ms chunks at real-time pace: one caller at 8 kHz, one at 16, one at 16, one at 8 (so neither rate always goes
// first), BENCH_TURNS/2 turns each (BENCH_TURNS per rate, default 12). Per rate: the p50 of the call records' turn
// metrics and of the client's voice to voice (speech end -> first output_audio.delta), and what the recognizer heard.
// Writes bench/results/rate-split.json.
import { writeFileSync } from 'node:fs';
import type { TurnMetrics } from '../engine/agent/session.js';
import { AgentCaller, connectUrl, endedCall, speech } from '../test/support/agent-client.js';
import { freshStore, startServer, type TestServer } from '../test/support/server.js';
import { intEnv, stopAndCollectProblems, UNCAPPED_SESSIONS } from './lib/harness.js';
import { printTable, quantile, resultPath } from './lib/report.js';
import { CALLER_SENTENCES, closeCaller, createBenchAgent, isAssistantFinal, speechEndSamples } from './lib/voice-agent.js';

const TURNS = intEnv('BENCH_TURNS', 12, 2);
const PAUSE_MS = 1000;
const CHUNK_MS = 20;
const RATES = [8000, 16000] as const;
const METRICS = ['eouDelayMs', 'recognitionMs', 'brainFirstPhraseMs', 'ttsFirstByteMs', 'e2eMs', 'engineOverheadMs'] as const;
type Turn = TurnMetrics & { v2vMs: number };

/** One caller at `rate`: `turns` sentences, each answered; its turns with the client's voice to voice, and what was heard. */
async function caller(s: TestServer, agentId: string, rate: number, sentences: Buffer[], turns: number): Promise<{ turns: Turn[]; heard: string[] }> {
  const c = new AgentCaller(connectUrl(s, { token: s.key, agent_id: agentId, sample_rate: String(rate) }), rate, {}, CHUNK_MS);
  try {
    await c.opened;
    const created = await c.nextFrame((f) => f.type === 'session.created', 0, 15_000, 'session.created');
    c.startMic();
    await c.nextFrame(isAssistantFinal, 0, 60_000, 'opening');
    const v2v: number[] = [];
    for (let k = 0; k < turns; k++) {
      const mark = c.frames.length;
      await c.say(sentences[k % sentences.length] as Buffer);
      const endedAt = c.lastSpeechEndAt;
      v2v.push((await c.nextFrame((f) => f.type === 'output_audio.delta', mark, 60_000, `reply ${k + 1}`)).at - endedAt);
      await c.nextFrame(isAssistantFinal, mark, 60_000, `reply ${k + 1} end`);
      await new Promise((r) => setTimeout(r, PAUSE_MS));
    }
    const heard = c.of('transcript', (f) => f.role === 'user').map((f) => String(f.text));
    await closeCaller(c);
    const call = await endedCall(s, created.call_id as string);
    return { turns: ((call.turnMetrics ?? []) as TurnMetrics[]).map((m, i) => ({ ...m, v2vMs: v2v[i] as number })), heard };
  } finally {
    c.close();
  }
}

const store = freshStore('sqlite');
const s = await startServer({ store, env: { ...UNCAPPED_SESSIONS, PARLEY_WARM_MODELS: 'true', PARLEY_RATE_LIMIT_PER_MINUTE: '1000000' } });
const byRate = new Map<number, { turns: Turn[]; heard: string[] }>(RATES.map((r) => [r, { turns: [], heard: [] }]));
let problems: string[] = [];
try {
  const agentId = await createBenchAgent(s, 'rate split bench');
  const sentences = new Map<number, Buffer[]>();
  for (const rate of RATES) {
    const set: Buffer[] = [];
    for (const text of CALLER_SENTENCES) {
      const pcm = await speech(s, text, rate);
      set.push(pcm.subarray(0, speechEndSamples(pcm, rate) * 2));
    }
    sentences.set(rate, set);
  }
  for (const rate of [...RATES, ...[...RATES].reverse()]) {
    const got = await caller(s, agentId, rate, sentences.get(rate) as Buffer[], TURNS / 2);
    const into = byRate.get(rate) as { turns: Turn[]; heard: string[] };
    into.turns.push(...got.turns);
    into.heard.push(...got.heard);
  }
} finally {
  problems = (await stopAndCollectProblems(s)).problems;
  await store.cleanup();
}

const p50 = (xs: Array<number | null>) => quantile(xs.filter((x): x is number => typeof x === 'number'), 0.5);
const rows = RATES.map((rate) => {
  const turns = (byRate.get(rate) as { turns: Turn[] }).turns;
  return { rate, turns: turns.length, v2vP50Ms: p50(turns.map((t) => t.v2vMs)), ...Object.fromEntries(METRICS.map((m) => [`${m}P50`, p50(turns.map((t) => t[m]))])) };
});
printTable(
  `Narrowband vs wideband over the agent WebSocket (${TURNS} turns per rate, ${CHUNK_MS} ms chunks), p50 ms`,
  ['rate Hz', 'turns', 'v2v', ...METRICS],
  rows.map((r) => [String(r.rate), String(r.turns), r.v2vP50Ms.toFixed(0), ...METRICS.map((m) => Number((r as Record<string, number>)[`${m}P50`]).toFixed(0))]),
  0,
);
for (const rate of RATES) console.log(`\nheard at ${rate} Hz: ${(byRate.get(rate) as { heard: string[] }).heard.map((t) => JSON.stringify(t)).join(', ')}`);
for (const p of problems.slice(0, 10)) console.log(`  server: ${p.slice(0, 300)}`);
const outFile = resultPath('rate-split');
writeFileSync(outFile, `${JSON.stringify({ benchmark: 'rate-split', node: process.version, timestamp: new Date().toISOString(), config: { turns: TURNS, chunkMs: CHUNK_MS, pauseMs: PAUSE_MS }, rows, byRate: Object.fromEntries(byRate), problems }, null, 2)}\n`);
console.log(`\nwrote ${outFile}`);
