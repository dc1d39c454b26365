// The outbound call pacer: calls paced per carrier address at cpsLimit, in one process and across
// processes through a real Redis (127.0.0.1:6379, a random key prefix per test, deleted afterwards).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { aheadMs, intervalMs, LocalPacer, ON_TIME_MS, RedisClock, RedisPacer, staleMs, until, whenDue, type Pacer } from '../telephony/outbound/pacer.js';

const REDIS_URL = 'redis://127.0.0.1:6379';

const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);

/** Sends `count` paced calls on `key` at once; resolves to their send times (ms, sorted). */
async function sendAll(pacer: Pacer, key: string, count: number, cps: number): Promise<number[]> {
  const sent = await Promise.all(
    Array.from({ length: count }, async () => {
      await whenDue(pacer, key, cps);
      return performance.now();
    }),
  );
  return sent.sort((a, b) => a - b);
}

const admin = new Redis(REDIS_URL);
const opened: Pacer[] = [];
const prefixes: string[] = [];

function freshPrefix(): string {
  const prefix = `parley:test:pace:${randomBytes(6).toString('hex')}:`;
  prefixes.push(prefix);
  return prefix;
}

afterAll(async () => {
  await admin.quit();
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((p) => p.close()));
  for (const prefix of prefixes.splice(0)) {
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length) await admin.del(...keys);
  }
});

const kinds: [string, () => Pacer][] = [
  ['LocalPacer', () => new LocalPacer()],
  ['RedisPacer', () => new RedisPacer(REDIS_URL, { prefix: freshPrefix() })],
];

describe.each(kinds)('%s', (name, make) => {
  const open = () => {
    const pacer = make();
    opened.push(pacer);
    return pacer;
  };

  // Send times carry timer lateness (a few ms; more on a loaded CI machine): the bounds allow 15 ms of it, while an
  // unpaced sender would show gaps near 0 and a span near 0.
  it('sends 20 calls at cps 10 about 100 ms apart over ~1.9 s; another key keeps its own pace', async () => {
    const pacer = open();
    const a = 'udp:a.example.com:5060';
    const b = 'udp:b.example.com:5060';
    const [onA, onB] = await Promise.all([sendAll(pacer, a, 20, 10), sendAll(pacer, b, 20, 10)]);
    for (const times of [onA, onB]) {
      const smallest = Math.min(...gaps(times));
      const span = times[19]! - times[0]!;
      console.log(`${name}: 20 calls at cps 10: smallest gap ${smallest.toFixed(1)} ms, span ${span.toFixed(0)} ms`);
      expect(smallest).toBeGreaterThanOrEqual(85);
      expect(span).toBeGreaterThanOrEqual(1885);
      expect(span).toBeLessThan(2200);
    }
    // Not one pace for both: B's first call went out with A's, not after A's twentieth.
    expect(Math.abs(onB[0]! - onA[0]!)).toBeLessThan(50);
  });

  it('spaces each slot by the cps it was taken at, and refuses a cps that is not positive', async () => {
    const pacer = open();
    const mixed = 'tcp:d.example.com:5060';
    expect(await pacer.take(mixed, 1)).toBe(0);
    const afterSlow = await pacer.take(mixed, 10);
    expect(Math.abs(afterSlow - 1020), `${afterSlow}`).toBeLessThan(15); // 1.02 s after a cps-1 slot
    await new Promise((r) => setTimeout(r, Math.ceil(afterSlow) + 2));
    expect(await pacer.take(mixed, 10)).toBe(0);
    const afterFast = await pacer.take(mixed, 10);
    expect(afterFast).toBeGreaterThan(85); // then 102 ms after a cps-10 slot
    expect(afterFast).toBeLessThanOrEqual(102);
    await expect(pacer.take(mixed, 0)).rejects.toThrow(RangeError);
    await expect(pacer.take(mixed, Number.NaN)).rejects.toThrow(RangeError);
  });

  it('counts the next slot from a late send: sent() after the take pushes it an interval past the send', async () => {
    const pacer = open();
    const key = 'udp:f.example.com:5060';
    expect(await pacer.take(key, 10)).toBe(0);
    await new Promise((r) => setTimeout(r, 40)); // the sender's event loop was late by 40 ms before its INVITE left
    await pacer.sent(key, 10);
    const sentAt = performance.now();
    const wait = await pacer.take(key, 10);
    // Without sent(): about 102 - 40 = 62 ms. A stall of this process between the two (a loaded CI machine) shortens
    // the wait by its length, so it is added back.
    expect(wait + (performance.now() - sentAt)).toBeGreaterThan(90);
    expect(wait).toBeLessThanOrEqual(110); // RedisPacer counts the lateness from asking for the slot: a round trip more
  });

  it('takes a slot only when it is due: 0 takes it, a wait leaves it for later', async () => {
    const pacer = open();
    const key = 'udp:e.example.com:5060';
    expect(await pacer.take(key, 10)).toBe(0);
    const wait = await pacer.take(key, 10);
    expect(wait).toBeGreaterThan(85);
    expect(wait).toBeLessThanOrEqual(102);
    expect(await pacer.take(key, 10)).toBeGreaterThan(80); // asking again took nothing
    await new Promise((r) => setTimeout(r, Math.ceil(wait) + 2));
    expect(await pacer.take(key, 10)).toBe(0);
    // The next slot is an interval after the one just taken.
    expect(await pacer.take(key, 10)).toBeGreaterThan(95);
    await expect(pacer.take(key, -1)).rejects.toThrow(RangeError);
  });
});

describe('LocalPacer on a given clock', () => {
  it('counts the next slot from the due time when a slot is taken at most ON_TIME_MS late, and from the take when later', async () => {
    let now = 1000;
    const pacer = new LocalPacer(() => now);
    const key = 'udp:clock.example.com:5060';
    const interval = intervalMs(50); // 20.4 ms
    expect(await pacer.take(key, 50)).toBe(0); // slot 1000; next 1020.4
    now = 1000 + interval + ON_TIME_MS - 0.5; // the sender came back 1.5 ms after its slot
    expect(await pacer.take(key, 50)).toBe(0);
    now += 0.1;
    expect(await pacer.take(key, 50)).toBeCloseTo(1000 + 2 * interval - now, 6); // next slot at 1040.8, not 1042.3
    // 50 slots each taken 1.5 ms late keep the pace: the 50th is 49 intervals (plus 1.5 ms) after the first, no drift.
    const first = now = 1000 + 2 * interval + 1.5;
    expect(await pacer.take(key, 50)).toBe(0);
    for (let i = 1; i < 50; i++) {
      now = first + i * interval;
      expect(await pacer.take(key, 50)).toBe(0);
    }
    // Taken 6.5 ms late: the next slot counts from the take, so no two sends are closer than interval - ON_TIME_MS.
    now = first + 50 * interval + 5;
    expect(await pacer.take(key, 50)).toBe(0);
    now += interval - 1;
    expect(await pacer.take(key, 50)).toBeCloseTo(1, 6);
  });

  it('sent(): a send up to 2 ms after its slot leaves the pace alone; a later one pushes the next slot to the interval less 2 ms after it', async () => {
    let now = 5000;
    const pacer = new LocalPacer(() => now);
    const key = 'udp:sent.example.com:5060';
    const interval = intervalMs(50);
    // 50 sends each completing 1.8 ms after their slot: no drift (counted from each send, the pace fell to 84-86%).
    for (let i = 0; i < 50; i++) {
      now = 5000 + i * interval;
      expect(await pacer.take(key, 50)).toBe(0);
      now += 1.8;
      await pacer.sent(key, 50);
    }
    now = 5000 + 50 * interval;
    expect(await pacer.take(key, 50)).toBe(0);
    // This one completes 9 ms after its slot (the process was descheduled before the datagram left).
    now += 9;
    await pacer.sent(key, 50);
    const sentAt = now;
    now += 1;
    expect(await pacer.take(key, 50)).toBeCloseTo(sentAt + interval - 2 - now, 6);
  });
});

/** Starts the child script; resolves once it is connected, with a function that starts it and resolves to its send times. */
async function startChild(prefix: string, key: string, count: number, cps: number, mode: 'take' | 'ahead' = 'take'): Promise<() => Promise<number[]>> {
  const child = spawn('npx', ['tsx', 'test/support/pacer-child.ts', REDIS_URL, prefix, key, String(count), String(cps), mode], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const next = () =>
    new Promise<string>((resolve, reject) => {
      lines.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`pacer child exited with ${code}`)));
    });
  expect(await next()).toBe('ready');
  return async () => {
    const done = next();
    child.stdin!.end('go\n');
    return JSON.parse(await done) as number[];
  };
}

describe('RedisPacer across processes', () => {
  it('keeps cps 5 on one key for two processes of 10 calls each: the merged sends stay about 200 ms apart', async () => {
    const prefix = freshPrefix();
    const key = 'udp:shared.example.com:5060';
    const children = await Promise.all([startChild(prefix, key, 10, 5), startChild(prefix, key, 10, 5)]);
    const [first, second] = await Promise.all(children.map((go) => go()));
    expect(first).toHaveLength(10);
    expect(second).toHaveLength(10);
    const merged = [...first!, ...second!].sort((a, b) => a - b);
    const smallest = Math.min(...gaps(merged));
    const span = merged[19]! - merged[0]!;
    console.log(`RedisPacer, 2 processes x 10 calls at cps 5: smallest gap ${smallest.toFixed(1)} ms, span ${span.toFixed(0)} ms`);
    // Each process alone would send its 10 calls in 1.8 s, side by side with the other's (gaps near 0).
    expect(smallest).toBeGreaterThanOrEqual(180);
    expect(span).toBeGreaterThanOrEqual(19 * 200 - 20);
    expect(span).toBeLessThan(19 * 200 + 400);
  }, 20_000);

  it('keeps cps 20 on one key for two processes taking slots ahead (as the dialer does): about 51 ms apart, none closer than 45', async () => {
    const prefix = freshPrefix();
    const key = 'udp:ahead.example.com:5060';
    const children = await Promise.all([startChild(prefix, key, 20, 20, 'ahead'), startChild(prefix, key, 20, 20, 'ahead')]);
    const [first, second] = await Promise.all(children.map((go) => go()));
    const merged = [...first!, ...second!].sort((a, b) => a - b);
    expect(merged).toHaveLength(40);
    const smallest = Math.min(...gaps(merged));
    const span = merged[39]! - merged[0]!;
    console.log(`RedisPacer ahead, 2 processes x 20 calls at cps 20: smallest gap ${smallest.toFixed(1)} ms, span ${span.toFixed(0)} ms`);
    // Interval 51 ms: each process alone would send its 20 in about 1 s, side by side with the other's.
    expect(smallest).toBeGreaterThanOrEqual(1000 / 20 - 5);
    expect(span).toBeGreaterThanOrEqual(39 * intervalMs(20) - 20);
    expect(span).toBeLessThan(39 * intervalMs(20) + 600);
  }, 20_000);
});

describe('RedisPacer.takeAhead', () => {
  it('takes a slot up to aheadMs before it is due and says when to send; a later slot waits until then', async () => {
    const pacer = new RedisPacer(REDIS_URL, { prefix: freshPrefix() });
    opened.push(pacer);
    const key = 'udp:takeahead.example.com:5060';
    const first = await pacer.takeAhead(key, 10);
    expect('at' in first && first.at <= performance.now()).toBe(true); // nothing before it: due now
    const second = await pacer.takeAhead(key, 10);
    // Interval 102 ms, taken ahead by at most aheadMs(10) = 10 ms: not yet.
    expect('wait' in second && second.wait > 80 && second.wait <= intervalMs(10) - aheadMs(10)).toBe(true);
    await new Promise((r) => setTimeout(r, Math.ceil((second as { wait: number }).wait) + 1));
    const asked = performance.now();
    const third = await pacer.takeAhead(key, 10);
    if (!('at' in third)) throw new Error(`not taken: ${JSON.stringify(third)}`);
    // Taken ahead: its time is still to come (up to 10 ms after the ask), and it is the second slot after the first.
    expect(third.at).toBeGreaterThan(asked);
    expect(third.at - asked).toBeLessThanOrEqual(aheadMs(10) + 0.5);
    expect(third.at - (first as { at: number }).at).toBeGreaterThan(intervalMs(10) - 5);
    // A send 30 ms after that time (within staleMs) pushes the next slot to the interval less 2 ms after the send.
    await until(third.at + 30);
    await pacer.sent(key, 10);
    const sentAt = performance.now();
    const fourth = await pacer.takeAhead(key, 10);
    if (!('wait' in fourth)) throw new Error('taken too soon');
    expect(fourth.wait + (performance.now() - sentAt)).toBeGreaterThan(intervalMs(10) - 2 - aheadMs(10) - 5);
  });

  it('maps a slot to this clock by when Redis ran the take: an ask that reached Redis late does not send early', async () => {
    const pacer = new RedisPacer(REDIS_URL, { prefix: freshPrefix() });
    opened.push(pacer);
    const busy = new Redis(REDIS_URL);
    try {
      const key = 'udp:late-ask.example.com:5060';
      const first = await pacer.takeAhead(key, 10);
      if (!('at' in first)) throw new Error('the first slot was not due');
      for (let i = 0; i < 5; i++) await pacer.takeAhead('udp:clock.example.com:5060', 50); // round trips for the clock
      await until(first.at + intervalMs(10) - aheadMs(10));
      // Redis is kept busy for 40 ms by another client's script, so this ask runs there 40 ms after it was made: the
      // second slot is then overdue, and taken at once. Mapped from the ask, it would be sent 30 ms before its due time.
      const blocking = busy.eval("local t = redis.call('TIME'); local s = t[1] * 1e6 + t[2]; while true do local n = redis.call('TIME'); if n[1] * 1e6 + n[2] - s > 40000 then break end end; return 1", 0);
      await new Promise((r) => setTimeout(r, 2)); // the script is running
      const asked = performance.now();
      const second = await pacer.takeAhead(key, 10);
      await blocking;
      if (!('at' in second)) throw new Error(`not taken: ${JSON.stringify(second)}`);
      expect(second.at - first.at).toBeGreaterThanOrEqual(intervalMs(10) - 1);
      expect(second.at - asked).toBeGreaterThan(25);
    } finally {
      busy.disconnect();
    }
  });

  it("staleMs leaves the next sender's sent() the time to land before the slot after is taken ahead", () => {
    for (const cps of [1, 5, 10, 50, 100]) {
      expect(staleMs(cps) + aheadMs(cps)).toBeLessThan(intervalMs(cps));
      expect(staleMs(cps)).toBeGreaterThan(0);
    }
    expect(staleMs(50)).toBeCloseTo(20.4 - 8.16 - 2, 6);
  });
});

describe('RedisClock', () => {
  it("places Redis's moment within the round trip by the offset of the shortest recent one", () => {
    const clock = new RedisClock();
    // Redis's clock is this one plus 5000 ms. A 0.2 ms round trip fixes the offset within 0.1 ms.
    expect(clock.ran(100, 100.2, 5100.1)).toBeCloseTo(100.1, 6);
    // An ask that reached Redis 9 ms late (Redis ran it at 209 on this clock), read at 210: placed at 209, not 200.
    expect(clock.ran(200, 210, 5209)).toBeCloseTo(209, 6);
    // An answer read 9 ms late (Redis ran it at 301): placed at 301, not 310.
    expect(clock.ran(300, 310, 5301)).toBeCloseTo(301, 6);
    // Never outside the round trip, whatever the estimate says.
    expect(clock.ran(400, 401, 5390)).toBe(400);
    expect(clock.ran(500, 501, 5600)).toBe(501);
  });

  it('forgets round trips older than its horizon (the two clocks drift apart)', () => {
    const clock = new RedisClock();
    clock.ran(0, 0.2, 5000.1); // offset 5000, long ago
    // Now the clocks are 3 ms further apart, and only long round trips came lately: the old short one no longer counts.
    expect(clock.ran(10_000, 10_004, 15_005)).toBeCloseTo(10_002, 6); // its own midpoint (offset 5003)
    expect(clock.ran(10_010, 10_014, 15_016)).toBeCloseTo(10_013, 6);
  });
});
