// The host's own timer noise: how late a bare 20 ms timer wakes on this machine with nothing of ours busy. A shared VM
// (KVM here) can hold a vCPU off its core; then even an idle process misses its 20 ms by several ms, and the RTP
// timing a bench measures under load cannot be better than this floor. Measured in a child process at nice 0 (the
// server's media thread's priority) on the same drift-corrected schedule as the send clock (telephony/media/clock.ts).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { quantile } from './report.js';

export interface HostNoise {
  /** Intervals measured. */
  ticks: number;
  /** |interval between two wake-ups - 20 ms|, ms. */
  deviationP50Ms: number;
  deviationP99Ms: number;
  deviationMaxMs: number;
  /** Share of the machine's CPU time the hypervisor gave to others while it ran (/proc/stat steal), %. */
  stealPct: number | null;
}

const PROBE = `
const os = require('node:os');
try { os.setPriority(0, 0); } catch {}
const ticks = Number(process.argv[1]);
let t0 = 0, k = 0, last = null;
const devs = [];
function wake() {
  const now = performance.now();
  if (last === null) t0 = now; // the schedule starts at the first wake-up, so its first interval is a whole one
  else devs.push(Math.abs(now - last - 20));
  last = now;
  k++;
  if (devs.length >= ticks) { process.stdout.write(JSON.stringify(devs)); return; }
  setTimeout(wake, Math.max(0, t0 + k * 20 - 1 - performance.now()));
}
setTimeout(wake, 0);
`;

/** CPU time counters of the whole machine: [steal, total] in clock ticks, or null where /proc/stat is missing. */
function cpuTicks(): [number, number] | null {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    return [f[7]!, f.reduce((a, b) => a + b, 0)];
  } catch {
    return null;
  }
}

/** Runs the probe for `seconds` and returns its deviations (rejects if the child fails). */
export async function measureHostNoise(seconds = 10): Promise<HostNoise> {
  const ticks = Math.max(10, Math.round((seconds * 1000) / 20));
  const before = cpuTicks();
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', PROBE, String(ticks)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`host noise probe exited with ${code}`))));
  });
  const after = cpuTicks();
  const devs = JSON.parse(out) as number[];
  const at = (p: number) => Math.round(quantile(devs, p) * 10) / 10;
  const stealPct = before && after && after[1] > before[1] ? Math.round(((after[0] - before[0]) / (after[1] - before[1])) * 1000) / 10 : null;
  return { ticks: devs.length, deviationP50Ms: at(0.5), deviationP99Ms: at(0.99), deviationMaxMs: at(1), stealPct };
}

export function describeHostNoise(n: HostNoise): string {
  return `deviation p50 ${n.deviationP50Ms.toFixed(1)} / p99 ${n.deviationP99Ms.toFixed(1)} / max ${n.deviationMaxMs.toFixed(1)} ms over ${n.ticks} intervals, steal ${n.stealPct === null ? 'n/a' : `${n.stealPct.toFixed(1)}%`}`;
}
