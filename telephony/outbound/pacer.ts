// The outbound call pacer (`cpsLimit`): one pace per carrier address. A sender takes that address's send slot when it
// is due, or learns how long to wait for it. LocalPacer paces within one process; RedisPacer keeps the pace across every
// process sharing a Redis, with one key per address advanced atomically by a Lua script on Redis time.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';

/** takeAhead's answer: the slot is this process's, send at `at` (performance.now() scale); or ask again in `wait` ms. */
export type Slot = { at: number } | { wait: number };

/**
 * Send slots per carrier key: a trunk's stored `address_key` (`transport:host:port`, control-plane/telephony/validation.ts
 * carrierAddressKey), so every trunk on one carrier address shares one pace. A slot taken at `cps` puts the next slot
 * of its key intervalMs(cps) after it. When callers pass different `cps` for one key, each take spaces the slot after
 * it by its own `cps` (callers wanting the lowest limit among trunks pass it).
 */
export interface Pacer {
  /**
   * Takes the slot of `key` only if it is due now (resolves 0: send at once), else takes nothing and resolves to the ms
   * until it is due (ask again then). A sender that takes its slot at the moment it sends cannot be late against it:
   * a stalled event loop delays the take, and the next slot counts from the take.
   */
  take(key: string, cps: number): Promise<number>;
  /**
   * take() answered at once, where the pace is in this process (LocalPacer): the sender can then send in the same run
   * as the take. Awaiting take() put the INVITE behind the microtasks already queued (the next calls' store work):
   * one process at cps 50 sent 2.1 ms (median) after its take, and the pace drifted by that.
   */
  takeNow?(key: string, cps: number): number;
  /**
   * Takes the slot of `key` up to aheadMs(cps) before it is due, so that a slow way back of the answer (a busy event
   * loop reads it late: 3-12 ms while two servers took a burst of POSTs) falls in the wait instead of making the send
   * late: resolves `{ at }`, when to send. A slot further off is not taken: `{ wait }`, the ms until asking again. The
   * sender sends at `at` and calls sent(); one that finds itself more than staleMs(cps) past `at` must not send (the
   * next slot may be taken before its sent() can move it): the slot goes unused.
   */
  takeAhead(key: string, cps: number): Promise<Slot>;
  /**
   * The call of the slot just taken has left (call it once the send completed): the next slot of `key` is at least an
   * interval less SEND_SLACK_MS from now. A sender late between taking its slot and sending cannot then have the next
   * sender (another process, on time) send much closer than the interval after it, while a send a little after its
   * slot, as every send is, does not make the pace drift.
   */
  sent(key: string, cps: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Slots are this much further apart than 1000/cps: with slots exactly 1000/cps apart, the ordinary jitter of sending
 * puts cps + 1 INVITEs in some one-second window (measured at cps 50 by the telephony bench); 2% keeps every window at
 * the limit while the rate stays at 98% of it.
 */
export const PACE_MARGIN = 1.02;

/**
 * How much closer than the interval a send may come after the previous one's send (Pacer.sent). Every send leaves a
 * little after its slot (the Redis round trip, the send's completion); counting the next slot from each send instead
 * of from the slot made the pace drift by that much each time (one process at cps 50: 84-86% of the limit, median gap
 * 22.7 ms for 20.4). With it, two sends are at least the interval minus SEND_SLACK_MS + ON_TIME_MS + TAKE_EARLY_MS apart
 * (15.9 ms at cps 50, 199.5 ms at cps 5: within the 5 ms the carriers' limit allows).
 */
const SEND_SLACK_MS = 2;

/** How early a due slot may be taken (the 2% margin covers it: two sends are still more than 1000/cps apart). */
const TAKE_EARLY_MS = 0.5;

/**
 * A slot taken at most this late still counts the next one from its due time, not from the take: a sender that
 * waits for a slot asks again a little after it (whole-ms timers, the Redis round trip), and counting from the take
 * lost that every slot (at cps 50 the two-server pace ran at 89-92%). Two sends are then at least the interval
 * minus this apart (18.4 ms at cps 50), and no 1 s window holds more than the limit (a lateness of at most 2 ms
 * cannot fit a 50th interval of 20.4 ms into it).
 */
export const ON_TIME_MS = 2;

/** How far ahead of its due time takeAhead may take a slot: 40% of the interval, at most 10 ms (8.2 ms at cps 50). */
export function aheadMs(cps: number): number {
  return Math.min(10, intervalMs(cps) * 0.4);
}

/**
 * The time a sent() needs to reach the pace (a Redis write from the send's own run: loopback or a LAN, well under a
 * millisecond) before the next slot may be taken ahead, with room to spare.
 */
const SENT_TRANSIT_MS = 2;

/**
 * How late after its slot's `at` a sender may still send. Another sender takes the next slot aheadMs before it is due;
 * this sender's sent() must have moved that slot before then: a send at most the interval less aheadMs less
 * SENT_TRANSIT_MS late does (10.2 ms at cps 50, 192 ms at cps 5), so the next send, on any server, is still at least the
 * interval less SEND_SLACK_MS after this one.
 */
export function staleMs(cps: number): number {
  return intervalMs(cps) - aheadMs(cps) - SENT_TRANSIT_MS;
}

/** The time between two slots at `cps` calls per second, in ms. */
export function intervalMs(cps: number): number {
  if (!Number.isFinite(cps) || cps <= 0) throw new RangeError(`cps must be a positive number, not ${cps}`);
  return (1000 / cps) * PACE_MARGIN;
}

/** Waits for `key`'s slot and takes it (asking again whenever told to wait); resolves to the ms waited. */
export async function whenDue(pacer: Pacer, key: string, cps: number): Promise<number> {
  const start = performance.now();
  // Timers fire on whole milliseconds: round up, and ask again (another sender may have taken the slot meanwhile).
  for (let wait = await pacer.take(key, cps); wait > 0; wait = await pacer.take(key, cps)) await sleep(Math.ceil(wait));
  return performance.now() - start;
}

/** How close to `at` until() stops yielding to the event loop and blocks instead. */
const FINAL_APPROACH_MS = 2;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * Resolves at `at` (performance.now() scale), never before: a timer to about 2 ms before it, event-loop turns until
 * FINAL_APPROACH_MS before it, then the thread blocks (a futex wait: no CPU) for what is left, so a send comes within
 * a fraction of a millisecond of its slot. Turns of the loop in those last milliseconds ran whatever I/O had come in
 * (a burst of POSTs' store answers: several ms) and the send went late.
 */
export async function until(at: number): Promise<void> {
  const coarse = at - performance.now() - FINAL_APPROACH_MS;
  if (coarse > 0) await sleep(Math.floor(coarse));
  while (at - performance.now() > FINAL_APPROACH_MS) await new Promise<void>((r) => setImmediate(r));
  const left = at - performance.now();
  if (left > 0) Atomics.wait(sleeper, 0, 0, left);
  while (performance.now() < at) {
    /* Atomics.wait may wake a few microseconds early */
  }
}

/** The pace of one process, on the monotonic clock (`now`: a clock for tests). */
export class LocalPacer implements Pacer {
  /** Per key, the earliest time (performance.now()) the next slot may have. */
  private readonly next = new Map<string, number>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  async take(key: string, cps: number): Promise<number> {
    return this.takeNow(key, cps);
  }

  /** In one process the take is synchronous: nothing to hide, so a slot is taken only when due (as takeNow). */
  async takeAhead(key: string, cps: number): Promise<Slot> {
    const at = this.now();
    const wait = this.takeNow(key, cps);
    return wait > 0 ? { wait } : { at };
  }

  takeNow(key: string, cps: number): number {
    const interval = intervalMs(cps);
    const now = this.now();
    const next = this.next.get(key) ?? 0;
    if (next > now + TAKE_EARLY_MS) return next - now;
    this.next.set(key, (now - next <= ON_TIME_MS ? next : now) + interval);
    return 0;
  }

  async sent(key: string, cps: number): Promise<void> {
    const at = this.now() + intervalMs(cps) - SEND_SLACK_MS;
    if ((this.next.get(key) ?? 0) < at) this.next.set(key, at);
  }

  async close(): Promise<void> {
    this.next.clear();
  }
}

// KEYS[1]: the key holding the next free slot (ms since the epoch, Redis time); ARGV[1]: the interval; ARGV[2]: how
// early a slot may be taken; ARGV[3]: how late it may be taken and still count as on time (ON_TIME_MS). The slot is
// taken when it is due within ARGV[2]: returns '0 <slot> <ms until it is due> <now>' (negative: already due);
// otherwise '1 <ms until it may be taken> <now>', and nothing changes (strings: Redis would truncate a Lua number to an
// integer; <now> is Redis's time, for the sender's clock mapping). The next slot counts from the due time when taken
// on time (the pace does not drift by the polling delay) and from now when taken later (no two sends much closer than
// the interval).
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
local early = tonumber(ARGV[2])
if nxt > now + early then return '1 ' .. string.format('%.3f', nxt - now - early) .. ' ' .. string.format('%.3f', now) end
local slot = nxt
if now - nxt > tonumber(ARGV[3]) then slot = now end
redis.call('SET', KEYS[1], string.format('%.3f', slot + tonumber(ARGV[1])), 'PX', math.ceil(tonumber(ARGV[1]) + early) + 1000)
return '0 ' .. string.format('%.3f', slot) .. ' ' .. string.format('%.3f', slot - now) .. ' ' .. string.format('%.3f', now)
`;

// After a late send: the next slot is at least ARGV[1] (Redis time: the slot taken plus the sender's lateness plus the
// interval), never earlier than it already was.
const SENT = `
local at = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
if at > now and tonumber(redis.call('GET', KEYS[1]) or '0') < at then
  redis.call('SET', KEYS[1], string.format('%.3f', at), 'PX', math.ceil(at - now) + 1000)
end
return '0'
`;

/**
 * Redis's clock (TIME, ms) against this process's (performance.now()), from the takes' round trips, as NTP does: a
 * round trip asked at `asked` and read at `read` saw Redis at `redisNow` somewhere between the two, so its offset is
 * known to within half the round trip. The offset of the shortest recent round trip is kept (a busy event loop makes
 * round trips long, not short); recent, because Redis's wall clock and this monotonic one drift apart (NTP slews the
 * wall clock by at most 0.5 ms a second).
 */
export class RedisClock {
  private readonly samples: Array<{ read: number; rtt: number; offset: number }> = [];

  /** Records a round trip and returns when, on this clock, Redis most likely ran it (within [asked, read]). */
  ran(asked: number, read: number, redisNow: number): number {
    const rtt = read - asked;
    this.samples.push({ read, rtt, offset: redisNow - (asked + rtt / 2) });
    while (this.samples.length > CLOCK_SAMPLES || (this.samples[0] as { read: number }).read < read - CLOCK_HORIZON_MS) this.samples.shift();
    let best = this.samples[0] as { rtt: number; offset: number };
    for (const x of this.samples) if (x.rtt < best.rtt) best = x;
    return Math.min(read, Math.max(asked, redisNow - best.offset));
  }
}

/** The shortest wait takeAhead and take answer (a wait of 0 would read as a slot taken). */
const MIN_WAIT_MS = 0.1;

/** RedisClock keeps the last this many round trips, from at most this far back. */
const CLOCK_SAMPLES = 64;
const CLOCK_HORIZON_MS = 2000;

/** The commands `defineCommand` adds (run by EVALSHA, falling back to EVAL once per connection). */
interface PaceCommands {
  parleyPaceTake(key: string, intervalMs: string, earlyMs: string, onTimeMs: string): Promise<string>;
  parleyPaceSent(key: string, atMs: string): Promise<string>;
}

/** The pace shared by every process on one Redis: one key per carrier key under `prefix` (default `parley:pace:`). */
export class RedisPacer implements Pacer {
  /**
   * Per key, the slot this process took last: its Redis time, and when to send it on this process's clock
   * (performance.now(): when Redis ran the take, mapped by RedisClock, plus the slot's wait; a slot already due, then).
   */
  private readonly taken = new Map<string, { slot: number; at: number }>();
  private readonly clock = new RedisClock();
  private readonly redis: Redis & PaceCommands;
  private readonly owned: boolean;
  private readonly prefix: string;

  /** `redis`: a URL (the pacer opens and closes its own connection) or a client the caller keeps and closes. */
  constructor(redis: string | Redis, options: { prefix?: string } = {}) {
    this.owned = typeof redis === 'string';
    const client = typeof redis === 'string' ? new Redis(redis) : redis;
    client.defineCommand('parleyPaceTake', { numberOfKeys: 1, lua: TAKE });
    client.defineCommand('parleyPaceSent', { numberOfKeys: 1, lua: SENT });
    this.redis = client as Redis & PaceCommands;
    this.prefix = options.prefix ?? 'parley:pace:';
  }

  async take(key: string, cps: number): Promise<number> {
    const slot = await this.takeWithin(key, cps, TAKE_EARLY_MS);
    return 'wait' in slot ? slot.wait : 0;
  }

  takeAhead(key: string, cps: number): Promise<Slot> {
    return this.takeWithin(key, cps, aheadMs(cps));
  }

  /**
   * The slot's time on this clock is when Redis ran the take plus its wait there. Redis ran it somewhere between the
   * ask and the answer being read; taking the ask (as before) sends early when the ask reaches Redis late (Redis
   * descheduled or busy: the likely cause of an INVITE 10.7 ms after the previous one at cps 50 in one bench run, and
   * what the test holding Redis busy reproduces), taking the read sends late when the answer waits unread behind the
   * event loop. So Redis's clock is mapped to this one
   * (RedisClock), and the moment it gives is kept within the ask and the read. A slot already due counts from then.
   */
  private async takeWithin(key: string, cps: number, early: number): Promise<Slot> {
    const asked = performance.now();
    const reply = await this.redis.parleyPaceTake(this.prefix + key, String(intervalMs(cps)), String(early), String(ON_TIME_MS));
    const read = performance.now();
    const [kind, a, b, c] = reply.split(' ').map(Number) as [number, number, number, number | undefined];
    const redisNow = kind === 0 ? (c as number) : b;
    const ran = this.clock.ran(asked, read, redisNow);
    // A wait counts from when Redis ran the take, not from the read (an answer read late would make the next ask late).
    if (kind !== 0) return { wait: Math.max(MIN_WAIT_MS, ran + a - read) };
    const at = ran + Math.max(0, b);
    this.taken.set(key, { slot: a, at });
    return { at };
  }

  /**
   * Only a send more than SEND_SLACK_MS after its slot's local time moves the next slot: to the slot's Redis time plus
   * that lateness (this process's clock, so a stall while Redis's answer waited unread counts too) plus the interval less SEND_SLACK_MS. An on-time send costs no round trip, and the delay of this message itself
   * does not count.
   */
  async sent(key: string, cps: number): Promise<void> {
    const taken = this.taken.get(key);
    this.taken.delete(key);
    if (!taken) return;
    const late = performance.now() - taken.at;
    if (late <= SEND_SLACK_MS) return;
    await this.redis.parleyPaceSent(this.prefix + key, (taken.slot + late + intervalMs(cps) - SEND_SLACK_MS).toFixed(3));
  }

  async close(): Promise<void> {
    if (this.owned) await this.redis.quit();
  }
}
