// Runs the outbound part of the telephony bench alone (bench/lib/outbound.ts): prints its tables and goals and writes
// bench/results/telephony-outbound.json. Env as there: BENCH_OUT_CPS, BENCH_OUT_CALLS, BENCH_OUT_PACING, BENCH_OUT_ANSWER_CALLS,
// BENCH_OUT_ANSWER_CONCURRENCY, BENCH_OUT_ANSWERED (pacing with answered calls, off by default), BENCH_OUT_ANSWERED_CALLS.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { outboundPhase, printOutbound } from './lib/outbound.js';
import { resultPath } from './lib/report.js';

const started = performance.now();
const log = (msg: string) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${msg}\n`);

const result = await outboundPhase({ log });
console.log(`\nOutbound calls (node ${process.version}, ${os.cpus().length} CPUs)`);
printOutbound(result);
const outFile = resultPath('telephony-outbound');
writeFileSync(outFile, `${JSON.stringify({ benchmark: 'telephony-outbound', node: process.version, cpus: os.cpus().length, timestamp: new Date().toISOString(), ...result }, null, 2)}\n`);
console.log(`\nwrote ${path.relative(process.cwd(), outFile)}`);
if (result.failure) process.exitCode = 1;
