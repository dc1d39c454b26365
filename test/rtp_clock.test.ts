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
    const naive: number[] = [];
    let t0 = 0;
    await new Promise<void>((resolve) => {
      const clock = new SendClock((due) => {
        for (let i = 0; i < due; i++) times.push(performance.now());
        if (times.length >= ticks) {
          clock.stop();
          resolve();
        }
      });
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
    const drift = times[ticks - 1]! - t0 - (ticks - 1) * 20;
    const n = naive.length;
    const naiveDrift = naive[n - 1]! - naive[0]! - (n - 1) * 20;
    console.log(
      `send clock, ${ticks} ticks: |interval - 20 ms| p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${Math.max(...deviation).toFixed(2)} ms; ` +
        `drift after 3 s ${drift.toFixed(2)} ms (chained setTimeout: ${naiveDrift.toFixed(1)} ms after ${n - 1} intervals)`,
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
