// The SIP digest guessing limits (issue 34) on their own: counting and cooling-off rules of the in-process guard on a
// fake clock, the address an IPv6 source is counted under, and the Redis guard shared by two "servers".
import { afterAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { DEFAULT_DIGEST_RULES, LocalDigestGuard, RedisDigestGuard, coolingFor, sourceKey, type DigestAttempt, type DigestGuard, type Lockout } from '../telephony/digest-guard.js';

const MIN = 60_000;
const T = 'trunk-a';
const at = (source: string, trunk = T) => ({ source, trunk });

function fakeClock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

/** The lockouts a wrong answer started (it must have been counted, not refused). */
async function failOnce(guard: DigestGuard, a: DigestAttempt): Promise<Lockout[]> {
  const f = await guard.failed(a);
  if (f.refused) throw new Error(`refused unchecked: ${JSON.stringify(f.refused)}`);
  return f.lockouts;
}

async function fail(guard: DigestGuard, source: string, times: number, trunk = T): Promise<Lockout[]> {
  const started = [];
  for (let i = 0; i < times; i++) started.push(...(await failOnce(guard, at(source, trunk))));
  return started;
}

describe('the in-process digest guard (fake clock)', () => {
  it('cuts a source off on one trunk at the 10th wrong answer within a minute, for 5 minutes; others go on', async () => {
    const clock = fakeClock();
    const guard = new LocalDigestGuard(DEFAULT_DIGEST_RULES, clock.now);
    expect(await fail(guard, '198.51.100.7', 9)).toEqual([]);
    expect(await guard.refusal(at('198.51.100.7'))).toBeNull();
    clock.advance(59_000);
    expect(await failOnce(guard, at('198.51.100.7'))).toEqual([{ scope: 'source', coolingMs: 5 * MIN, repeat: 1 }]);
    expect(await guard.refusal(at('198.51.100.7'))).toEqual({ scope: 'source', remainingMs: 5 * MIN });
    // Another address on the trunk, and the same address on another trunk, are not touched.
    expect(await guard.refusal(at('198.51.100.8'))).toBeNull();
    expect(await guard.refusal(at('198.51.100.7', 'trunk-b'))).toBeNull();
    clock.advance(5 * MIN - 1);
    expect(await guard.refusal(at('198.51.100.7'))).toEqual({ scope: 'source', remainingMs: 1 });
    clock.advance(1);
    expect(await guard.refusal(at('198.51.100.7'))).toBeNull();
  });

  it('while a source cools off, its answers are refused unchecked: a wrong one is not counted, a right one resets nothing', async () => {
    const clock = fakeClock();
    const guard = new LocalDigestGuard(DEFAULT_DIGEST_RULES, clock.now);
    await fail(guard, '198.51.100.9', 10);
    clock.advance(1000);
    expect(await guard.failed(at('198.51.100.9'))).toEqual({ refused: { scope: 'source', remainingMs: 5 * MIN - 1000 } });
    expect(await guard.succeeded(at('198.51.100.9'))).toEqual({ scope: 'source', remainingMs: 5 * MIN - 1000 });
    clock.advance(5 * MIN);
    // The refused success reset nothing: the next lockout is the second (10 minutes).
    expect((await fail(guard, '198.51.100.9', 10))[0]).toEqual({ scope: 'source', coolingMs: 10 * MIN, repeat: 2 });
  });

  it('counts within a minute of the first wrong answer: 9, a minute later 9 more, is no lockout', async () => {
    const clock = fakeClock();
    const guard = new LocalDigestGuard(DEFAULT_DIGEST_RULES, clock.now);
    expect(await fail(guard, '203.0.113.1', 9)).toEqual([]);
    clock.advance(MIN);
    expect(await fail(guard, '203.0.113.1', 9)).toEqual([]);
    expect(await guard.refusal(at('203.0.113.1'))).toBeNull();
    expect(await fail(guard, '203.0.113.1', 1)).toEqual([{ scope: 'source', coolingMs: 5 * MIN, repeat: 1 }]);
  });

  it('doubles the cooling-off on each repeat (5, 10, 20, 40, then 60 minutes at most), and forgets after 24 h', async () => {
    const clock = fakeClock();
    const guard = new LocalDigestGuard(DEFAULT_DIGEST_RULES, clock.now);
    const seen: number[] = [];
    for (let i = 0; i < 6; i++) {
      const [lockout] = await fail(guard, '192.0.2.9', 10);
      seen.push(lockout!.coolingMs / MIN);
      expect(lockout!.repeat).toBe(i + 1);
      clock.advance(lockout!.coolingMs);
      expect(await guard.refusal(at('192.0.2.9'))).toBeNull();
    }
    expect(seen).toEqual([5, 10, 20, 40, 60, 60]);
    clock.advance(24 * 60 * MIN);
    expect((await fail(guard, '192.0.2.9', 10))[0]).toEqual({ scope: 'source', coolingMs: 5 * MIN, repeat: 1 });
    expect([1, 2, 3, 4, 5, 100].map((r) => coolingFor(DEFAULT_DIGEST_RULES, r) / MIN)).toEqual([5, 10, 20, 40, 60, 60]);
  });

  it("a success resets the source's count and its repeats on that trunk", async () => {
    const clock = fakeClock();
    const guard = new LocalDigestGuard(DEFAULT_DIGEST_RULES, clock.now);
    await fail(guard, '192.0.2.10', 9);
    await guard.succeeded(at('192.0.2.10'));
    expect(await fail(guard, '192.0.2.10', 9)).toEqual([]);
    expect((await fail(guard, '192.0.2.10', 1))[0]).toMatchObject({ repeat: 1 });
    clock.advance(5 * MIN);
    await guard.succeeded(at('192.0.2.10'));
    // The next lockout is a first one again (5 minutes, not 10).
    expect((await fail(guard, '192.0.2.10', 10))[0]).toEqual({ scope: 'source', coolingMs: 5 * MIN, repeat: 1 });
  });

  it('cuts a trunk off at 50 wrong answers a minute from many addresses, except for addresses that authenticated on it', async () => {
    const clock = fakeClock();
    const guard = new LocalDigestGuard(DEFAULT_DIGEST_RULES, clock.now);
    await guard.succeeded(at('10.0.0.1'));
    const started = [];
    // 50 addresses, one wrong answer each: no address reaches its own limit.
    for (let i = 0; i < 50; i++) started.push(...(await failOnce(guard, at(`198.18.0.${i + 1}`))));
    expect(started).toEqual([{ scope: 'trunk', coolingMs: 5 * MIN, repeat: 1 }]);
    expect(await guard.refusal(at('198.18.1.1'))).toEqual({ scope: 'trunk', remainingMs: 5 * MIN });
    expect(await guard.refusal(at('198.18.0.1'))).toEqual({ scope: 'trunk', remainingMs: 5 * MIN });
    // The carrier that authenticated before goes on; other trunks are not touched.
    expect(await guard.refusal(at('10.0.0.1'))).toBeNull();
    expect(await guard.refusal(at('198.18.1.1', 'trunk-b'))).toBeNull();
    // Its own cooling-off still applies to a trusted address.
    await fail(guard, '10.0.0.1', 10);
    expect(await guard.refusal(at('10.0.0.1'))).toMatchObject({ scope: 'source' });
    clock.advance(5 * MIN);
    expect(await guard.refusal(at('198.18.1.1'))).toBeNull();
    // Trust lasts 7 days after the last success.
    clock.advance(7 * 24 * 60 * MIN);
    for (let i = 0; i < 50; i++) await failOnce(guard, at(`198.18.2.${i + 1}`));
    expect(await guard.refusal(at('10.0.0.1'))).toMatchObject({ scope: 'trunk', remainingMs: 5 * MIN });
  });

  it('counts an IPv6 source by its /64 and an IPv4-mapped one as IPv4', async () => {
    expect(sourceKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(sourceKey('[2001:0db8:0001:0002:ffff:ffff:ffff:ffff]')).toBe('2001:db8:1:2::/64');
    expect(sourceKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(sourceKey('::1')).toBe('0:0:0:0::/64');
    expect(sourceKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(sourceKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(sourceKey('192.0.2.1')).toBe('192.0.2.1');
    const clock = fakeClock();
    const guard = new LocalDigestGuard(DEFAULT_DIGEST_RULES, clock.now);
    for (let i = 1; i <= 10; i++) await failOnce(guard, at(`2001:db8:5:6::${i.toString(16)}`));
    expect(await guard.refusal(at('2001:db8:5:6:ffff::1'))).toMatchObject({ scope: 'source' });
    expect(await guard.refusal(at('2001:db8:5:7::1'))).toBeNull();
    await fail(guard, '::ffff:192.0.2.44', 10);
    expect(await guard.refusal(at('192.0.2.44'))).toMatchObject({ scope: 'source' });
  });

  it('drops what has expired, so a spray of addresses leaves nothing behind', async () => {
    const clock = fakeClock();
    const guard = new LocalDigestGuard(DEFAULT_DIGEST_RULES, clock.now);
    for (let i = 0; i < 40; i++) await failOnce(guard, at(`198.19.${i}.1`, `trunk-${i}`));
    expect(guard.size).toBe(80);
    clock.advance(MIN);
    await failOnce(guard, at('198.19.200.1'));
    expect(guard.size).toBe(2);
  });
});

describe('the Redis digest guard: two servers share the counts', () => {
  const URL = 'redis://127.0.0.1:6379';
  const prefix = `parley-test:sipauth:${randomBytes(4).toString('hex')}:`;
  // Short periods (the rules are the same code; Redis keeps time here, so no fake clock).
  const rules = { ...DEFAULT_DIGEST_RULES, sourceFailures: 3, trunkFailures: 20, windowMs: 5000, coolingMs: 400, maxCoolingMs: 1000 };
  const one = new RedisDigestGuard(URL, { prefix, rules });
  const two = new RedisDigestGuard(URL, { prefix, rules });

  afterAll(async () => {
    const admin = new Redis(URL);
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length) await admin.del(...keys);
    await admin.quit();
    await one.close();
    await two.close();
  });

  it('wrong answers at either server add up; the cooling-off is seen by both, ends, and doubles on repeat', async () => {
    expect(await failOnce(one, at('198.51.100.20'))).toEqual([]);
    expect(await failOnce(two, at('198.51.100.20'))).toEqual([]);
    expect(await failOnce(one, at('198.51.100.20'))).toEqual([{ scope: 'source', coolingMs: 400, repeat: 1 }]);
    const cooling = await two.refusal(at('198.51.100.20'));
    expect(cooling).toMatchObject({ scope: 'source' });
    expect(cooling!.remainingMs).toBeGreaterThan(300);
    expect(cooling!.remainingMs).toBeLessThanOrEqual(400);
    expect(await one.refusal(at('198.51.100.21'))).toBeNull();
    // Refused unchecked at either server while it lasts: neither counted nor reset.
    expect(await two.failed(at('198.51.100.20'))).toMatchObject({ refused: { scope: 'source' } });
    expect(await one.succeeded(at('198.51.100.20'))).toMatchObject({ scope: 'source' });
    await sleep(450);
    expect(await one.refusal(at('198.51.100.20'))).toBeNull();
    await failOnce(two, at('198.51.100.20'));
    await failOnce(one, at('198.51.100.20'));
    expect(await failOnce(two, at('198.51.100.20'))).toEqual([{ scope: 'source', coolingMs: 800, repeat: 2 }]);
    // A success at the other server resets the count and the repeats.
    await sleep(850);
    await one.succeeded(at('198.51.100.20'));
    await failOnce(two, at('198.51.100.20'));
    await failOnce(two, at('198.51.100.20'));
    expect(await failOnce(one, at('198.51.100.20'))).toEqual([{ scope: 'source', coolingMs: 400, repeat: 1 }]);
  });

  it('fails fast when Redis cannot be reached (the SIP leg then goes on without the limits)', async () => {
    const down = new RedisDigestGuard('redis://127.0.0.1:1', { prefix, rules });
    const started = performance.now();
    await expect(down.refusal(at('198.51.100.30'))).rejects.toThrow();
    await expect(down.failed(at('198.51.100.30'))).rejects.toThrow();
    expect(performance.now() - started).toBeLessThan(3000);
    await down.close();
  });

  it('cuts the trunk off for addresses that never authenticated on it', async () => {
    const trunk = 'trunk-shared';
    await two.succeeded(at('10.1.1.1', trunk));
    const started = [];
    for (let i = 0; i < 20; i++) started.push(...(await failOnce(i % 2 ? one : two, at(`198.18.9.${i}`, trunk))));
    expect(started).toEqual([{ scope: 'trunk', coolingMs: 400, repeat: 1 }]);
    expect(await one.refusal(at('198.18.10.1', trunk))).toMatchObject({ scope: 'trunk' });
    expect(await one.refusal(at('10.1.1.1', trunk))).toBeNull();
    expect(await one.refusal(at('198.18.10.1', 'another-trunk'))).toBeNull();
  });
});
