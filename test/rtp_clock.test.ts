// The 20 ms send clock: ticks on its 20 ms grid (median deviation), no drift against wall time (unlike chained
// setTimeout), and a bounded catch-up after an event-loop stall. Its p99 deviation (the 5 ms goal) is a timing figure of
// the host as much as of the clock (a shared VM here missed a bare 20 ms timer by up to 12 ms with nothing else
// running), so it is measured by bench:telephony beside the host's own floor, and only printed here.
import { describe, expect, it } from 'vitest';
import { SendClock } from '../telephony/media/clock.js';

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

describe('SendClock', () => {
  it('ticks every 20 ms on its grid (median deviation <= 1.5 ms) and no drift, where chained setTimeout(20) drifts', async () => {
    const ticks = 150; // 3 s
    const times: number[] = [];
    const slots: number[] = []; // each served tick's place on the grid (skipped ticks advance it)
    const naive: number[] = [];
    let t0 = 0;
    let slot = 0;
    const clock = new SendClock((due, skipped) => {
      slot += skipped;
      for (let i = 0; i < due; i++) {
        times.push(performance.now());
        slots.push(slot++);
      }
      if (times.length >= ticks) {
        clock.stop();
        done();
      }
    });
    let done = () => {};
    await new Promise<void>((resolve) => {
      done = resolve;
      t0 = performance.now();
      clock.start();
      const chain = () => {
        naive.push(performance.now());
        if (naive.length < ticks) setTimeout(chain, 20);
      };
      chain();
    });
    const intervals = times.slice(1).map((t, i) => t - times[i]!);
    const deviation = intervals.map((d) => Math.abs(d - 20));
    const p50 = percentile(deviation, 50);
    const p99 = percentile(deviation, 99);
    // Drift: how late the clock's last second runs against its own grid (t0 + slot * 20). The median over those 50 ticks,
    // so a host stall that delays a few ticks (or makes the clock skip some, which moves no later tick) does not count,
    // while a clock whose lateness accumulates is late on all of them. Chained setTimeout, measured the same way against
    // the grid of its first call, is what absolute targets avoid.
    const lastSecond = (ts: number[], grid: (i: number) => number) => percentile(ts.slice(-50).map((t, i) => t - grid(ts.length - 50 + i)), 50);
    const drift = lastSecond(times, (i) => t0 + slots[i]! * 20);
    const naiveDrift = lastSecond(naive, (i) => naive[0]! + i * 20);
    console.log(
      `send clock, ${ticks} ticks: |interval - 20 ms| p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${Math.max(...deviation).toFixed(2)} ms; ` +
        `${clock.skipped} skipped; lateness over the last second (median) ${drift.toFixed(2)} ms (chained setTimeout: ${naiveDrift.toFixed(1)} ms)`,
    );
    expect(times).toHaveLength(ticks);
    // Most ticks leave on the grid: a clock that fired early by its wake-up margin, late by timer rounding or in bursts
    // would move the median; the host's stalls touch a few ticks only.
    expect(p50).toBeLessThanOrEqual(1.5);
    expect(Math.abs(drift)).toBeLessThan(5);
    expect(naiveDrift).toBeGreaterThan(Math.abs(drift)); // what absolute targets buy
  });

  it('after a stall catches up with at most 3 ticks at once, skips the rest and stays on its grid', async () => {
    const wakes: Array<{ due: number; skipped: number; at: number }> = [];
    let t0 = 0;
    const clock = new SendClock((due, skipped) => {
      wakes.push({ due, skipped, at: performance.now() });
      if (wakes.length === 5) {
        const until = performance.now() + 205;
        while (performance.now() < until); // block the event loop for ~10 ticks
      }
    });
    t0 = performance.now();
    clock.start();
    await new Promise((r) => setTimeout(r, 400));
    clock.stop();
    const afterStall = wakes[5]!;
    expect(afterStall.due).toBe(3);
    expect(afterStall.skipped).toBeGreaterThanOrEqual(7);
    expect(wakes.slice(6).every((w) => w.due === 1 && w.skipped === 0)).toBe(true);
    expect(clock.skipped).toBe(afterStall.skipped);
    // Served plus skipped ticks match the wall clock: the grid did not move.
    const last = wakes[wakes.length - 1]!;
    expect(Math.abs(clock.ticks - 1 - Math.floor((last.at + 1 - t0) / 20))).toBeLessThanOrEqual(1);
    const served = wakes.reduce((n, w) => n + w.due, 0);
    expect(served + clock.skipped).toBe(clock.ticks);
  });

  it('aligned: clocks started at different times tick on one shared 20 ms grid', async () => {
    const firsts: Array<{ target: number; at: number; started: number }> = [];
    const clocks = [0, 7, 13].map(() => null as SendClock | null);
    for (let i = 0; i < clocks.length; i++) {
      await new Promise((r) => setTimeout(r, 7));
      const started = performance.now();
      const clock = new SendClock(() => {
        if (firsts.length < clocks.length && !firsts.some((f) => f.started === started)) firsts.push({ target: clock.targetOf(0), at: performance.now(), started });
      }, { aligned: true });
      clock.start();
      clocks[i] = clock;
    }
    await new Promise((r) => setTimeout(r, 80));
    for (const c of clocks) c!.stop();
    expect(firsts).toHaveLength(3);
    for (const f of firsts) {
      expect(f.target % 20).toBe(0); // on the grid
      expect(f.target).toBeGreaterThanOrEqual(f.started); // the next grid instant, not a past one
      expect(f.target - f.started).toBeLessThanOrEqual(20);
      expect(f.at).toBeGreaterThanOrEqual(f.target - 1); // not before its time (the 1 ms early margin)
    }
    // Each later clock's ticks are a whole number of intervals after the first's.
    for (const f of firsts) expect((f.target - firsts[0]!.target) % 20).toBe(0);
  });

  it('stops from inside a tick and can be restarted', async () => {
    let n = 0;
    const clock = new SendClock(() => {
      if (++n === 2) clock.stop();
    });
    clock.start();
    await new Promise((r) => setTimeout(r, 100));
    expect(n).toBe(2);
    expect(clock.running).toBe(false);
    clock.start();
    await new Promise((r) => setTimeout(r, 50));
    clock.stop();
    expect(n).toBeGreaterThanOrEqual(4);
  });
});
