// vCPU stalls during a bench phase: spans in which a busy CPU of this (virtual) machine got no timer interrupt for
// longer than STALL_GAP_MS. A busy CPU takes the scheduler tick every 4 ms (250 Hz) or 1 ms (1000 Hz); when none comes
// for longer, the CPU itself was not running: the hypervisor held the vCPU off its core. Nothing in the guest can see
// it otherwise: /proc/stat steal stays 0 where the hypervisor does not report it, and the guest's accounting charges the
// stall to whichever thread was on that CPU (the media thread's send clock then looks late by the whole stall).
//
// Read through a tracefs instance of its own (its own ring buffer; the machine's tracing is left as it is), with the
// CLOCK_MONOTONIC trace clock, so that its timestamps compare with performance.now(). Needs root and tracefs mounted
// (/sys/kernel/tracing); elsewhere start() says why not, and the bench reports no stall figures.
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { gunzipSync } from 'node:zlib';

/** A gap between two timer interrupts of a busy CPU longer than this (ms) is a stall (1.5 ticks at 250 Hz). */
export const STALL_GAP_MS = 6;

/** One stall, in this process's performance.now() scale. */
export interface StallWindow {
  cpu: number;
  startMs: number;
  endMs: number;
}

export interface VcpuStalls {
  windows: StallWindow[];
  /** Stalls longer than 6, 10 and 20 ms. */
  over6: number;
  over10: number;
  over20: number;
  maxMs: number;
  /** The time the stalls took from busy CPUs, beyond one tick period each (ms). */
  lostMs: number;
  /** Seconds traced. */
  spanS: number;
  /** Events the ring buffer overwrote (0 unless the phase outran it; then the counts above are short). */
  overwritten: number;
  /**
   * The guest kernel's own memory-reclaim threads (kdamond: DAMON, which a VM platform may run to hand cold memory back
   * to the host; kswapd): their CPU time and their long runs, in which a thread queued on that CPU waits (a kernel
   * built without preemption lets them run on until they yield).
   */
  reclaim: { cpuMs: number; runsOver10Ms: number; maxRunMs: number };
}

const ROOTS = ['/sys/kernel/tracing', '/sys/kernel/debug/tracing'];
const RECLAIM_THREADS = ['kdamond', 'kswapd'];
const SWITCH = /prev_comm=(.*?) prev_pid=(\d+) .* next_comm=(.*?) next_pid=(\d+)/;
const isReclaim = (comm: string) => RECLAIM_THREADS.some((t) => comm.startsWith(t));
const LINE = /\[(\d+)\]\s+\S+\s+(\d+\.\d+): (local_timer_entry|sched_switch): ?(.*)$/;

export class VcpuStallProbe {
  private constructor(
    private readonly dir: string,
    /** CLOCK_MONOTONIC ms minus performance.now() ms. */
    private readonly monoOffsetMs: number,
    private readonly tickMs: number,
  ) {}

  /** Starts tracing timer interrupts and idle transitions; a string says why it cannot here. */
  static start(tickHz = kernelHz()): VcpuStallProbe | string {
    if (process.platform !== 'linux') return 'tracefs is Linux only';
    const root = ROOTS.find((r) => existsSync(`${r}/instances`));
    if (!root) return 'tracefs is not mounted';
    if (!existsSync(`${root}/events/irq_vectors/local_timer_entry`)) return 'no local_timer_entry trace event on this kernel';
    const dir = `${root}/instances/parley-bench-${process.pid}`;
    try {
      if (!existsSync(dir)) mkdirSync(dir);
      writeFileSync(`${dir}/tracing_on`, '0');
      writeFileSync(`${dir}/trace_clock`, 'mono');
      writeFileSync(`${dir}/buffer_size_kb`, '32768');
      writeFileSync(`${dir}/trace`, '');
      // Only the switches into and out of the idle task (whether the CPU is busy) and the reclaim threads'.
      const reclaim = RECLAIM_THREADS.map((t) => `prev_comm ~ "${t}*" || next_comm ~ "${t}*"`).join(' || ');
      writeFileSync(`${dir}/events/sched/sched_switch/filter`, `prev_pid == 0 || next_pid == 0 || ${reclaim}`);
      writeFileSync(`${dir}/events/sched/sched_switch/enable`, '1');
      writeFileSync(`${dir}/events/irq_vectors/local_timer_entry/enable`, '1');
      const offset = Number(process.hrtime.bigint()) / 1e6 - performance.now();
      writeFileSync(`${dir}/tracing_on`, '1');
      return new VcpuStallProbe(dir, offset, 1000 / tickHz);
    } catch (err) {
      removeInstance(dir);
      return `tracefs not writable here (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`;
    }
  }

  /** Stops tracing, removes the instance and returns the stalls seen. */
  async stop(): Promise<VcpuStalls> {
    try {
      writeFileSync(`${this.dir}/tracing_on`, '0');
      const counts = await this.read();
      // per_cpu/cpuN/stats: "overrun: N" is what the ring buffer overwrote.
      for (const cpu of readdirSync(`${this.dir}/per_cpu`)) {
        const m = /^overrun: (\d+)$/m.exec(readFileSync(`${this.dir}/per_cpu/${cpu}/stats`, 'utf8'));
        counts.overwritten += Number(m?.[1] ?? 0);
      }
      return counts;
    } finally {
      removeInstance(this.dir);
    }
  }

  private async read(): Promise<VcpuStalls> {
    const busy = new Map<number, boolean>();
    const lastTick = new Map<number, number>();
    const windows: StallWindow[] = [];
    const reclaimSince = new Map<number, number>();
    const reclaimRuns: number[] = [];
    let first = Infinity;
    let last = -Infinity;
    const input = createReadStream(`${this.dir}/trace`, 'utf8');
    try {
      for await (const line of createInterface({ input, crlfDelay: Infinity })) {
        const m = LINE.exec(line);
        if (!m) continue;
        const cpu = Number(m[1]);
        const at = Number(m[2]) * 1000 - this.monoOffsetMs;
        first = Math.min(first, at);
        last = Math.max(last, at);
        if (m[3] === 'sched_switch') {
          const sw = SWITCH.exec(m[4] ?? '');
          if (!sw) continue;
          const start = reclaimSince.get(cpu);
          if (start !== undefined && isReclaim(sw[1]!)) reclaimRuns.push(at - start);
          reclaimSince.delete(cpu);
          if (isReclaim(sw[3]!)) reclaimSince.set(cpu, at);
          if (sw[2] === '0' || sw[4] === '0') {
            busy.set(cpu, sw[4] !== '0');
            lastTick.set(cpu, at); // an idle CPU stops its tick: the gap clock restarts when it gets busy
          }
          continue;
        }
        const prev = lastTick.get(cpu);
        // A CPU seen for the first time counts as busy: it took a tick.
        if (prev !== undefined && busy.get(cpu) !== false && at - prev > STALL_GAP_MS) windows.push({ cpu, startMs: prev, endMs: at });
        lastTick.set(cpu, at);
      }
    } finally {
      // The instance can only be removed once its trace file is closed.
      if (!input.closed) await new Promise<void>((resolve) => input.once('close', () => resolve()).destroy());
    }
    windows.sort((a, b) => a.startMs - b.startMs);
    const lengths = windows.map((w) => w.endMs - w.startMs);
    return {
      windows,
      over6: lengths.length,
      over10: lengths.filter((g) => g > 10).length,
      over20: lengths.filter((g) => g > 20).length,
      maxMs: lengths.length ? Math.round(Math.max(...lengths) * 10) / 10 : 0,
      lostMs: Math.round(lengths.reduce((a, g) => a + g - this.tickMs, 0)),
      spanS: Number.isFinite(first) ? Math.round(last - first) / 1000 : 0,
      overwritten: 0,
      reclaim: {
        cpuMs: Math.round(reclaimRuns.reduce((a, r) => a + r, 0)),
        runsOver10Ms: reclaimRuns.filter((r) => r > 10).length,
        maxRunMs: reclaimRuns.length ? Math.round(Math.max(...reclaimRuns) * 10) / 10 : 0,
      },
    };
  }
}

function removeInstance(dir: string): void {
  try {
    writeFileSync(`${dir}/tracing_on`, '0');
  } catch {
    /* already gone */
  }
  try {
    rmdirSync(dir);
  } catch {
    /* not created */
  }
}

/** The kernel's tick rate (CONFIG_HZ) from its config where readable (BENCH_KERNEL_HZ overrides), else 250. */
function kernelHz(): number {
  const hz = Number(process.env.BENCH_KERNEL_HZ);
  if (hz > 0) return hz;
  for (const read of [() => gunzipSync(readFileSync('/proc/config.gz')).toString(), () => readFileSync(`/boot/config-${readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim()}`, 'utf8')]) {
    try {
      const m = /^CONFIG_HZ=(\d+)$/m.exec(read());
      if (m) return Number(m[1]);
    } catch {
      /* not there */
    }
  }
  return 250;
}

/**
 * Of the intervals (prevAt, at] between a call's packets, those a stall touched: it began before the packet came and
 * ended less than one frame before the previous one (the send clock catches up within a tick after a stall).
 */
export function stallTouched(windows: readonly StallWindow[], prevAt: number, at: number, frameMs = 20): boolean {
  for (const w of windows) {
    if (w.startMs >= at) return false; // sorted by start
    if (w.endMs + frameMs > prevAt) return true;
  }
  return false;
}
