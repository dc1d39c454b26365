// Benchmark: barge-in on the real server (npx tsx bench/barge-in.ts). One server (SQLite in a temp dir, models warmed,
// SIP on 127.0.0.2), one call at a time, web calls (agent WebSocket, 16 kHz) and phone calls (SIP/RTP, PCMU): how fast
// the agent's audio stops at the caller when the caller talks over its opening, and how often backchannels, coughs,
// breaths and noises interrupt or pause it (definitions in bench/lib/barge-in.ts). Prints tables and writes
// bench/results/barge-in.json.
// Run alone, or through runBargeInBench() (bench/turns.ts, `npm run bench:turns`), which returns what it wrote.
// A default run (20 + 4 x 5 trials per side) takes about 10.5 minutes: each call waits 1.5-4 s into the opening, then
// watches 3 s or more after the caller's sound, one call at a time (about 7.5 s a barge-in trial, 6.5 s a false one).
// Env: BENCH_BARGE_TRIALS (20 per side), BENCH_BARGE_FALSE (5 per sound kind per side), BENCH_BARGE_SIDES (web,phone),
// BENCH_BARGE_SEED (1: the delays and the made sounds), BENCH_BARGE_ROOT (the checkout whose server is measured, e.g. an
// export of the commit before a change; default this one).
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { freshStore, startServer, type TestServer } from '../test/support/server.js';
import { STACK_HOST } from '../test/support/sip-peers.js';
import { FALSE_KINDS, LONG_OPENING, runBargeIn, type BargeInResult, type Side, type SideResult } from './lib/barge-in.js';
import { intEnv, stopAndCollectProblems, UNCAPPED_SESSIONS } from './lib/harness.js';
import { printTable, quantile, resultPath } from './lib/report.js';

const TRIALS = intEnv('BENCH_BARGE_TRIALS', 20, 0);
const FALSE_TRIALS = intEnv('BENCH_BARGE_FALSE', 5, 0);
const ROOT = process.env.BENCH_BARGE_ROOT ? path.resolve(process.env.BENCH_BARGE_ROOT) : undefined;
const SEED = intEnv('BENCH_BARGE_SEED', 1, 0);
const SIDES = (process.env.BENCH_BARGE_SIDES ?? 'web,phone').split(',').map((s) => s.trim()) as Side[];
if (!SIDES.length || SIDES.some((s) => s !== 'web' && s !== 'phone')) throw new Error('BENCH_BARGE_SIDES must be a comma list of web and phone');
const SERVER_ENV = {
  ...UNCAPPED_SESSIONS,
  PARLEY_WARM_MODELS: 'true',
  PARLEY_RATE_LIMIT_PER_MINUTE: '1000000',
  PARLEY_SIP_HOST: STACK_HOST,
  PARLEY_RTP_PORTS: '10000-19999',
};

/** Starts a server, runs the barge-in trials, prints the tables, writes bench/results/barge-in.json and returns its content. */
export async function runBargeInBench(): Promise<Record<string, unknown>> {
  const started = performance.now();
  const loadBefore = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const log = (msg: string) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${msg}\n`);
  const fmt = (x: number | null | undefined, digits = 0) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : 'n/a');

  const store = freshStore('sqlite');
  let server: TestServer | null = null;
  let result: BargeInResult = {};
  let failure: string | null = null;
  let serverEnd: { exit: number | null; problems: string[] } | null = null;

  // Interrupted (Ctrl-C, a CI timeout): the server and the temp store go too.
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping the server`);
    void (async () => {
      await server?.stop().catch(() => null);
      await store.cleanup().catch(() => null);
      process.exit(130);
    })();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    server = await startServer({ store, env: SERVER_ENV, root: ROOT });
    if (SIDES.includes('phone') && !server.sipPort) throw new Error('the server did not start its SIP leg');
    log(`server up${ROOT ? ` from ${ROOT}` : ''} (HTTP ${server.port}, SIP ${STACK_HOST}:${server.sipPort}); ${TRIALS} barge-in and ${FALSE_TRIALS} x ${FALSE_KINDS.length} false trials per side (${SIDES.join(', ')})`);
    result = await runBargeIn(server, { trials: TRIALS, falseTrials: FALSE_TRIALS, sides: SIDES, seed: SEED, log });
  } catch (err) {
    failure = err instanceof Error ? err.message : String(err);
    if (server) failure += `\nserver exit code ${server.exitCode}; last log lines:\n${server.logs.slice(-15).join('\n')}`;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (server) serverEnd = await stopAndCollectProblems(server);
    await store.cleanup();
  }

  const sides = SIDES.filter((s) => result[s]).map((s) => [s, result[s] as SideResult] as const);
  const nums = (xs: (number | null | undefined)[]) => xs.filter((x): x is number => typeof x === 'number');
  const loadAfter = os.loadavg().map((x) => Math.round(x * 100) / 100);
  console.log(
    `\nBarge-in (node ${process.version}, ${os.cpus().length} CPUs, load average ${loadBefore.join(' ')} at the start and ${loadAfter.join(' ')} at the end; ` +
      `one call at a time; seed ${SEED}; the agent talks over a ${LONG_OPENING.split(' ').length}-word opening)`,
  );
  printTable(
    'Caller talks over the agent: onset of the caller\'s speech -> the agent\'s audio stops at the caller (ms). "first stop": the first gap of >= 100 ms after onset, even if the agent resumed; "interruption event": the web `interruption` frame',
    ['side', 'trials', 'missed', 'stop p50', 'stop p95', 'min', 'max', 'first stop p50', 'interruption event p50', 'control gaps'],
    sides.map(([s, r]) => {
      const barge = r.trials.filter((t) => t.kind === 'barge');
      return [
        s, String(barge.length), String(r.missed), fmt(r.p50), fmt(r.p95), fmt(r.stopMs.length ? Math.min(...r.stopMs) : NaN), fmt(r.stopMs.length ? Math.max(...r.stopMs) : NaN),
        fmt(quantile(nums(barge.map((t) => t.firstStopMs)), 0.5)), fmt(quantile(nums(barge.map((t) => t.interruptionMs)), 0.5)), String(r.control.gaps),
      ];
    }),
    1,
  );
  printTable(
    'Sounds that are not a turn, played over the agent: interrupted (its turn ended or its audio stopped for good) or only paused (a gap of >= 100 ms, then it resumed); "VAD peak": the sound\'s highest Silero speech probability, run here (the server\'s default threshold is 0.5)',
    ['side', 'kind', 'trials', 'interrupted', 'paused only', 'pause p50 ms', 'VAD peak p50 (max)'],
    sides.flatMap(([s, r]) => [
      ...FALSE_KINDS.map((k) => {
        const f = r.falses[k] ?? { trials: 0, interrupted: 0, paused: 0 };
        const pauses = nums(r.trials.filter((t) => t.kind === k && t.paused).map((t) => t.pauseMs));
        const peaks = nums(r.trials.filter((t) => t.kind === k).map((t) => t.vadPeak));
        return [s, k, String(f.trials), String(f.interrupted), String(f.paused), fmt(quantile(pauses, 0.5)), `${fmt(quantile(peaks, 0.5), 2)} (${fmt(peaks.length ? Math.max(...peaks) : NaN, 2)})`];
      }),
      [s, 'all', ...(['trials', 'interrupted', 'paused'] as const).map((x) => String(Object.values(r.falses).reduce((a, f) => a + f[x], 0))), '', `false rate ${fmt(r.falseRate * 100, 1)}%`],
    ]),
    2,
  );
  for (const [s, r] of sides) {
    for (const t of r.trials.filter((x) => x.kind === 'barge' && x.stopMs === null)) console.log(`  ${s}: missed ${JSON.stringify(t.label)}: ${t.note ?? ''}`);
    for (const e of r.errors) console.log(`  ${s}: failed ${e}`);
    console.log(`  ${s}: ${r.durationS} s`);
  }
  if (serverEnd) {
    console.log(`\nserver: exit code on SIGTERM ${serverEnd.exit}; ${serverEnd.problems.length} log lines at warn or above / stderr`);
    for (const l of serverEnd.problems.slice(0, 10)) console.log(`  ${l.slice(0, 300)}`);
  }
  if (failure) console.log(`\nRUN FAILED: ${failure}`);

  const outFile = resultPath('barge-in');
  const written = {
    benchmark: 'barge-in',
    node: process.version,
    cpus: os.cpus().length,
    loadAverage: { before: loadBefore, after: loadAfter },
    timestamp: new Date().toISOString(),
    config: { trials: TRIALS, falseTrials: FALSE_TRIALS, sides: SIDES, seed: SEED, root: ROOT ?? '.', opening: LONG_OPENING, serverEnv: SERVER_ENV },
    result,
    server: serverEnd,
    failure,
    durationS: Math.round((performance.now() - started) / 1000),
  };
  writeFileSync(outFile, `${JSON.stringify(written, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(process.cwd(), outFile)}`);
  if (failure) process.exitCode = 1;
  return written;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await runBargeInBench();
