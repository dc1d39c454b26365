// The event-loop reservations the outbound dialer makes at its INVITE slots, and how HTTP request starts yield to them
// (transports/http/loop-reservations.ts; the bench:outbound figures are in docs/benchmarks.md).
import { describe, expect, it } from 'vitest';
import { CLEARANCE_MS, LoopReservations, MAX_HOLD_MS, whenClear } from '../transports/http/loop-reservations.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('loop reservations', () => {
  it('nothing reserved, or only far ahead: clear() is null (a request starts at once, without a tick)', () => {
    const r = new LoopReservations();
    expect(r.clear()).toBeNull();
    const far = r.reserve(performance.now() + CLEARANCE_MS + 50);
    expect(r.clear()).toBeNull();
    far.release();
    expect(r.size).toBe(0);
  });

  it('a reservation within the clearance holds work until it is released, and a moved one no longer does', async () => {
    const r = new LoopReservations();
    const slot = r.reserve(performance.now() + 1);
    const wait = r.clear();
    expect(wait).toBeInstanceOf(Promise);
    let resumed = false;
    void wait!.then(() => (resumed = true));
    await sleep(10);
    expect(resumed).toBe(false); // still held: the send has not happened
    slot.release();
    for (let i = 0; i < 5; i++) await Promise.resolve(); // promise hops only: no timer had to fire
    expect(resumed).toBe(true);
    expect(r.clear()).toBeNull();

    const later = r.reserve(performance.now());
    expect(r.clear()).not.toBeNull();
    later.move(performance.now() + 1000); // the pace said wait: the slot is later
    expect(r.clear()).toBeNull();
    later.release();
  });

  it('a reservation its sender never releases stops holding work once overdue, and whenClear holds for at most MAX_HOLD_MS', async () => {
    const r = new LoopReservations();
    r.reserve(performance.now()); // never released
    const started = performance.now();
    await r.clear();
    const held = performance.now() - started;
    expect(held).toBeGreaterThanOrEqual(20);
    expect(held).toBeLessThan(MAX_HOLD_MS + 200);
    expect(r.clear()).toBeNull(); // overdue: ignored

    // A sender that keeps reserving the next moment: the work goes ahead after MAX_HOLD_MS.
    const r2 = new LoopReservations();
    let current = r2.reserve(performance.now());
    const timer = setInterval(() => {
      const next = r2.reserve(performance.now() + 1);
      current.release();
      current = next;
    }, 2);
    try {
      const t0 = performance.now();
      await whenClear(r2);
      const t = performance.now() - t0;
      expect(t).toBeGreaterThanOrEqual(MAX_HOLD_MS - 5);
      expect(t).toBeLessThan(MAX_HOLD_MS + 200);
    } finally {
      clearInterval(timer);
      current.release();
    }
  });
});
