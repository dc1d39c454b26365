// The media worker thread's scheduling priority (PARLEY_MEDIA_PRIORITY). `realtime` puts that one thread (not the
// process) under SCHED_RR where the process may (root or CAP_SYS_NICE), as Asterisk (-p) and FreeSWITCH (-rp) can for
// their media threads: its 20 ms send clock then wakes on time however busy the cores are with the event loop and the
// inference workers (bench:telephony, 20 calls on 2 cores: send deviation p99 1.5-2.0 ms against 5.4-6.6 ms). It is
// not the default: it takes the CPU first, and on a machine at its capacity that comes out of recognition (in one run
// of five at 20 calls the phone calls' turns came 14 s late; see the README). Where realtime is not permitted the
// thread stays normal, and the server says why.
import { execFile } from 'node:child_process';
import { readlinkSync } from 'node:fs';

export type MediaPriority = 'realtime' | 'normal';

export const DEFAULT_MEDIA_PRIORITY: MediaPriority = 'normal';

/** SCHED_RR priority of the media thread: low among realtime ones (sipp runs at FIFO 20 in our tests). */
export const MEDIA_RR_PRIORITY = 10;

/** What the media thread runs at, and why not realtime when it was asked for. */
export interface MediaPriorityOutcome {
  priority: MediaPriority;
  reason?: string;
}

/** Puts the calling thread under SCHED_RR when `wanted` is realtime (util-linux `chrt` on its thread id). */
export async function applyMediaPriority(wanted: MediaPriority): Promise<MediaPriorityOutcome> {
  if (wanted === 'normal') return { priority: 'normal' };
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
