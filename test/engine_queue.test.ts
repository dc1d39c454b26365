// The inference queue: bounded concurrency, bounded waiting, immediate refusal when full, slots handed on in order.
import { describe, expect, it } from 'vitest';
import { InferenceQueue, QueueFullError } from '../engine/models/queue.js';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('InferenceQueue', () => {
  it('runs at most `concurrency` jobs, queues up to `maxWaiting`, refuses the rest at once', async () => {
    const queue = new InferenceQueue(2, 1, 3);
    const gates = [deferred(), deferred(), deferred()];
    const order: number[] = [];
    let active = 0;
    let peak = 0;
    const job = (i: number) => async () => {
      active++;
      peak = Math.max(peak, active);
      order.push(i);
      await gates[i]?.promise;
      active--;
      return i;
    };
    const a = queue.run(job(0), 'live');
    const b = queue.run(job(1), 'live');
    const c = queue.run(job(2), 'live');
    await expect(queue.run(job(3), 'live')).rejects.toBeInstanceOf(QueueFullError);
    await expect(queue.run(job(3), 'live')).rejects.toMatchObject({ retryAfterSec: 3 });
    expect(queue.depth).toEqual({ running: 2, waiting: 1 });
    gates[0]?.resolve();
    expect(await a).toBe(0);
    gates[1]?.resolve();
    gates[2]?.resolve();
    expect(await Promise.all([b, c])).toEqual([1, 2]);
    expect(order).toEqual([0, 1, 2]);
    expect(peak).toBe(2);
    expect(queue.depth).toEqual({ running: 0, waiting: 0 });
  });

  it('tells each job how many wait behind it when it starts (PARLEY_STT_SHORT_WINDOW=busy reads it)', async () => {
    const queue = new InferenceQueue(1, 8);
    const gates = [deferred(), deferred(), deferred()];
    const told: Record<string, number> = {};
    const job = (name: string, gate?: Promise<void>) => async ({ waitingBehind }: { waitingBehind: number }) => {
      told[name] = waitingBehind;
      await gate;
    };
    const a = queue.run(job('a', gates[0]?.promise), 'live');
    const b = queue.run(job('b', gates[1]?.promise), 'speculative');
    const c = queue.run(job('c', gates[2]?.promise), 'interim');
    expect(told).toEqual({ a: 0 });
    gates[0]?.resolve();
    await a;
    await new Promise((r) => setImmediate(r));
    expect(told.b).toBe(1);
    gates[1]?.resolve();
    gates[2]?.resolve();
    await Promise.all([b, c]);
    expect(told.c).toBe(0);
  });

  it('frees the slot when a job fails', async () => {
    const queue = new InferenceQueue(1, 0);
    await expect(queue.run(async () => Promise.reject(new Error('boom')), 'live')).rejects.toThrow('boom');
    expect(await queue.run(async () => 'ok', 'live')).toBe('ok');
  });
});
