// The media worker thread's scheduling (PARLEY_MEDIA_PRIORITY).
// - `latency` (the default): the thread asks Linux's EEVDF scheduler (6.12 and later) for a short time slice, 0.1 ms
//   instead of the default (0.7 ms times 1 + log2 of the CPUs: 1.4 ms on 2 cores), through sched_setattr with
//   sched_runtime on SCHED_OTHER; no privilege needed. Its deadline then comes first when it wakes, so its 20 ms send
//   clock preempts the thread that holds the core instead of waiting for that thread's slice to run out; it takes no
//   more CPU than before, at the same nice value. Measured (bench:telephony, 20 calls on 2 cores, runs alternating
//   with `normal`): send deviation p99 4.0-4.9 ms in 9 of 11 runs, 5.5 and 6.3 in the others
//   (median 4.6), against 4.7-6.8 over 6 (median 5.6).
//   Where the kernel has no custom slices the thread stays normal, and the server says why.
// - `realtime`: that one thread (not the process) under SCHED_RR where the process may (root or CAP_SYS_NICE), as
//   Asterisk (-p) and FreeSWITCH (-rp) can for their media threads (20 calls: send deviation p99 1.5-2.0 ms against
//   5.4-6.6). Not the default: it takes the CPU first, and on a machine at its capacity that comes out of recognition
//   (in one run of five at 20 calls the phone calls' turns came 14 s late; see docs/benchmarks.md, "telephony").
// - `normal`: the thread is left as the process's other threads.
import { execFile } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';

export type MediaPriority = 'latency' | 'realtime' | 'normal';

export const MEDIA_PRIORITIES: readonly MediaPriority[] = ['latency', 'realtime', 'normal'];

export const DEFAULT_MEDIA_PRIORITY: MediaPriority = 'latency';

/** SCHED_RR priority of the media thread: low among realtime ones (sipp runs at FIFO 20 in our tests). */
export const MEDIA_RR_PRIORITY = 10;

/** The media thread's time slice under `latency`: the shortest the kernel takes (100 us). */
export const MEDIA_SLICE_NS = 100_000;

/** What the media thread runs at, and why not what was asked for when it could not be. */
export interface MediaPriorityOutcome {
  priority: MediaPriority;
  reason?: string;
}

/** Applies `wanted` to the calling thread. */
export async function applyMediaPriority(wanted: MediaPriority): Promise<MediaPriorityOutcome> {
  if (wanted === 'normal') return { priority: 'normal' };
  if (wanted === 'latency') {
    const reason = setThreadSlice(MEDIA_SLICE_NS);
    return reason ? { priority: 'normal', reason } : { priority: 'latency' };
  }
  let tid: string;
  try {
    tid = readlinkSync('/proc/thread-self').split('/').pop() ?? '';
  } catch {
    return { priority: 'normal', reason: 'no /proc/thread-self (not Linux)' };
  }
  return new Promise((resolve) => {
    execFile('chrt', ['--rr', '-p', String(MEDIA_RR_PRIORITY), tid], { timeout: 5000 }, (err, _out, stderr) => {
      if (!err) resolve({ priority: 'realtime' });
      else resolve({ priority: 'normal', reason: (stderr || err.message).trim().split('\n')[0] });
    });
  });
}

/** sched_setattr / sched_getattr by architecture (Linux's generic numbering is used by arm64 and riscv64). */
const SYSCALLS: Record<string, { set: number; get: number }> = {
  x64: { set: 314, get: 315 },
  arm64: { set: 274, get: 275 },
  riscv64: { set: 274, get: 275 },
};

const SCHED_FLAG_RESET_ON_FORK = 1n;

/** struct sched_attr, first version (SCHED_ATTR_SIZE_VER0): the fields up to sched_period. */
const SCHED_ATTR_SIZE = 48;

/**
 * Gives the calling thread (SCHED_OTHER, its nice value kept) a custom EEVDF time slice of `ns` nanoseconds, not passed
 * on to the threads and processes it starts, and reads it back: a kernel before 6.12 takes the call and ignores the
 * value. 0 gives the thread back the default slice. Returns null when it holds, else why not.
 */
export function setThreadSlice(ns: number): string | null {
  try {
    return applySlice(ns);
  } catch (err) {
    return `sched_setattr could not be called: ${err instanceof Error ? err.message : String(err)}`;
  }
}

function applySlice(ns: number): string | null {
  if (process.platform !== 'linux') return `custom time slices are a Linux scheduler feature (this is ${process.platform})`;
  const nr = SYSCALLS[process.arch];
  if (!nr) return `no sched_setattr system call number known for ${process.arch}`;
  let koffi: typeof import('koffi');
  try {
    koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
  } catch (err) {
    return `koffi (the FFI used for sched_setattr) did not load: ${err instanceof Error ? err.message : String(err)}`;
  }
  const libc = koffi.load('libc.so.6');
  const syscall = libc.func('long syscall(long number, ...)');
  const attr = Buffer.alloc(SCHED_ATTR_SIZE);
  attr.writeUInt32LE(SCHED_ATTR_SIZE, 0); // size
  attr.writeUInt32LE(0, 4); // sched_policy: SCHED_OTHER
  // SCHED_FLAG_RESET_ON_FORK: a thread or process it starts later (a libuv pool thread, a child) gets the default
  // slice, not this one. An unprivileged thread cannot clear the flag again, so every call sets it.
  attr.writeBigUInt64LE(SCHED_FLAG_RESET_ON_FORK, 8); // sched_flags
  // The nice value stays what the thread has (sched_nice at offset 16 would otherwise reset it).
  attr.writeInt32LE(os.getPriority(), 16);
  attr.writeBigUInt64LE(BigInt(ns), 24); // sched_runtime: the slice
  if (Number(syscall(nr.set, 'int', 0, 'void *', attr, 'unsigned int', 0)) !== 0) {
    return `sched_setattr refused a ${ns / 1000} us slice (errno ${koffi.errno()})`;
  }
  const back = Buffer.alloc(SCHED_ATTR_SIZE);
  if (Number(syscall(nr.get, 'int', 0, 'void *', back, 'unsigned int', SCHED_ATTR_SIZE, 'unsigned int', 0)) !== 0) {
    return `sched_getattr failed (errno ${koffi.errno()})`;
  }
  const slice = back.readBigUInt64LE(24);
  if (ns > 0 && slice !== BigInt(ns)) return `this kernel (${os.release()}) has no custom time slices (Linux 6.12 and later have them)`;
  return null;
}

let libc: { setaffinity: (pid: number, size: number, mask: Buffer) => number; getaffinity: (pid: number, size: number, mask: Buffer) => number } | null = null;

function affinityCalls(): NonNullable<typeof libc> {
  if (!libc) {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const lib = koffi.load('libc.so.6');
    const set = lib.func('int sched_setaffinity(int pid, size_t cpusetsize, const void *mask)');
    const get = lib.func('int sched_getaffinity(int pid, size_t cpusetsize, void *mask)');
    libc = { setaffinity: (pid, size, mask) => Number(set(pid, size, mask)), getaffinity: (pid, size, mask) => Number(get(pid, size, mask)) };
  }
  return libc;
}

/** The CPUs the calling thread may run on (sched_getaffinity), or null where that cannot be read. */
export function allowedCpus(): number[] | null {
  if (process.platform !== 'linux') return null;
  try {
    const mask = Buffer.alloc(128);
    if (affinityCalls().getaffinity(0, mask.length, mask) !== 0) return null;
    const cpus: number[] = [];
    for (let i = 0; i < mask.length * 8; i++) if (mask[i >> 3]! & (1 << (i & 7))) cpus.push(i);
    return cpus;
  } catch {
    return null;
  }
}

/** Pins the calling thread to one CPU (sched_setaffinity). Returns 'pinned', or why not. */
export function pinThread(cpu: number): string {
  try {
    const mask = Buffer.alloc(128);
    mask[cpu >> 3] = 1 << (cpu & 7);
    return affinityCalls().setaffinity(0, mask.length, mask) === 0 ? 'pinned' : `sched_setaffinity refused CPU ${cpu}`;
  } catch (err) {
    return `sched_setaffinity could not be called: ${err instanceof Error ? err.message : String(err)}`;
  }
}
