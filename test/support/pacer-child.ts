// A process for the cross-process pacing test: connects a RedisPacer, warms up, prints `ready`, and on a line on stdin
// sends COUNT paced "calls" on one key at CPS, then prints their send times (epoch ms, sub-ms) as one JSON line.
// MODE `take` takes each slot when it is due (whenDue); `ahead` takes it ahead and sends at its time, as the dialer does
// (atSlot, then sent()), one call after another.
// Usage: tsx test/support/pacer-child.ts REDIS_URL PREFIX KEY COUNT CPS [MODE]
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisPacer, staleMs, until, whenDue, type Pacer } from '../../telephony/outbound/pacer.js';

/**
 * Takes `key`'s slot ahead (takeAhead) and resolves at its time, as a sender does (then sends and calls sent());
 * resolves false when it woke more than staleMs past the slot (the slot goes unused: take another).
 */
async function atSlot(pacer: Pacer, key: string, cps: number): Promise<boolean> {
  for (;;) {
    const slot = await pacer.takeAhead(key, cps);
    if ('wait' in slot) {
      await sleep(Math.ceil(slot.wait));
      continue;
    }
    await until(slot.at);
    return performance.now() - slot.at <= staleMs(cps);
  }
}

const [url, prefix, key, count, cps, mode = 'take'] = process.argv.slice(2) as [string, string, string, string, string, string?];
const pacer = new RedisPacer(url, { prefix });
// Warm up on another key (connection, scripts in Redis's cache, timers, this code path), so the first timed call is
// not late by a cold start.
for (let i = 0; i < 2; i++) await whenDue(pacer, `${key}#warmup`, 50);
console.log('ready');
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once('line', resolve));
lines.close();
async function ahead(): Promise<number[]> {
  const times: number[] = [];
  while (times.length < Number(count)) {
    if (!(await atSlot(pacer, key, Number(cps)))) continue;
    times.push(performance.timeOrigin + performance.now());
    void pacer.sent(key, Number(cps));
  }
  return times;
}
const sent =
  mode === 'ahead'
    ? await ahead()
    : await Promise.all(
        Array.from({ length: Number(count) }, async () => {
          await whenDue(pacer, key, Number(cps));
          return performance.timeOrigin + performance.now();
        }),
      );
console.log(JSON.stringify(sent));
await pacer.close();
