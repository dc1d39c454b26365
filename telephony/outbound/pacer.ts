// The outbound call pacer (`cpsLimit`): one pace per carrier address. A reservation takes that address's next send
// slot and says how long to wait for it. LocalPacer paces within one process; RedisPacer keeps the pace across every
// process sharing a Redis, with one key per address advanced atomically by a Lua script on Redis time.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';

/**
 * Send slots per carrier key: a trunk's stored `address_key` (`transport:host:port`, control-plane/telephony/validation.ts
 * carrierAddressKey), so every trunk on one carrier address shares one pace. Slots are handed out first come first
 * served; a reservation at `cps` keeps the next slot of its key intervalMs(cps) after its own. When callers pass
 * different `cps` for one key, each reservation spaces the slot after it by its own `cps` (callers wanting the lowest
 * limit among trunks pass it).
 */
export interface Pacer {
  /** Takes the next send slot of `key` at `cps` calls per second; resolves to the ms from now until it (0: now). */
  reserve(key: string, cps: number): Promise<number>;
  /**
   * Takes the slot of `key` only if it is due now (resolves 0: send at once), else takes nothing and resolves to the ms
   * until it is due (ask again then). A sender that takes its slot at the moment it sends cannot be late against it:
   * a stalled event loop delays the take, and the next slot counts from the take.
   */
  take(key: string, cps: number): Promise<number>;
  /** How far ahead `key` is booked: ms from now until its next free slot (0 when a call could go now). */
  backlogMs(key: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * Slots are this much further apart than 1000/cps: with slots exactly 1000/cps apart, the ordinary jitter of sending
 * puts cps + 1 INVITEs in some one-second window (measured at cps 50 by the telephony bench); 2% keeps every window at
 * the limit while the rate stays at 98% of it.
 */
export const PACE_MARGIN = 1.02;

/** How early a due slot may be taken (the 2% margin covers it: two sends are still more than 1000/cps apart). */
const TAKE_EARLY_MS = 0.5;

/** The time between two slots at `cps` calls per second, in ms. */
export function intervalMs(cps: number): number {
  if (!Number.isFinite(cps) || cps <= 0) throw new RangeError(`cps must be a positive number, not ${cps}`);
  return (1000 / cps) * PACE_MARGIN;
}

/** Reserves a slot of `key` and sleeps until it; resolves to the ms waited. An abort rejects the sleep (the slot stays taken). */
export async function paced(pacer: Pacer, key: string, cps: number, signal?: AbortSignal): Promise<number> {
  const wait = await pacer.reserve(key, cps);
  // Timers fire on whole milliseconds: round up so a slot is never used early.
  if (wait > 0) await sleep(Math.ceil(wait), undefined, { signal });
  return wait;
}

/** The pace of one process, on the monotonic clock. */
export class LocalPacer implements Pacer {
  /** Per key, the earliest time (performance.now()) the next slot may have. */
  private readonly next = new Map<string, number>();

  async reserve(key: string, cps: number): Promise<number> {
    const interval = intervalMs(cps);
    const now = performance.now();
    const slot = Math.max(now, this.next.get(key) ?? 0);
    this.next.set(key, slot + interval);
    return slot - now;
  }

  async take(key: string, cps: number): Promise<number> {
    const interval = intervalMs(cps);
    const now = performance.now();
    const next = this.next.get(key) ?? 0;
    if (next > now + TAKE_EARLY_MS) return next - now;
    this.next.set(key, Math.max(next, now) + interval);
    return 0;
  }

  async backlogMs(key: string): Promise<number> {
    const now = performance.now();
    const next = this.next.get(key) ?? 0;
    if (next <= now) this.next.delete(key);
    return Math.max(0, next - now);
  }

  async close(): Promise<void> {
    this.next.clear();
  }
}

// KEYS[1]: the key holding the next free slot (ms since the epoch, Redis time); ARGV[1]: this reservation's interval.
// Returns the wait as a string (Redis would truncate a Lua number to an integer). The key outlives its slot by 1 s.
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local slot = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0'))
local nxt = slot + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.3f', nxt), 'PX', math.ceil(nxt - now) + 1000)
return string.format('%.3f', slot - now)
`;

// As RESERVE, but the slot is taken only when it is due (within TAKE_EARLY_MS; returns 0); otherwise the wait, and
// nothing changes. The next slot counts from the due time when taken on time (the pace does not drift by the polling
// delay) and from now when taken late (never two sends closer than the interval).
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
if nxt > now + tonumber(ARGV[2]) then return string.format('%.3f', nxt - now) end
redis.call('SET', KEYS[1], string.format('%.3f', math.max(nxt, now) + tonumber(ARGV[1])), 'PX', math.ceil(tonumber(ARGV[1])) + 1000)
return '0'
`;

const BACKLOG = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
return string.format('%.3f', math.max(0, tonumber(redis.call('GET', KEYS[1]) or '0') - now))
`;

/** The commands `defineCommand` adds (run by EVALSHA, falling back to EVAL once per connection). */
interface PaceCommands {
  parleyPaceReserve(key: string, intervalMs: string): Promise<string>;
  parleyPaceTake(key: string, intervalMs: string, earlyMs: string): Promise<string>;
  parleyPaceBacklog(key: string): Promise<string>;
}

/** The pace shared by every process on one Redis: one key per carrier key under `prefix` (default `parley:pace:`). */
export class RedisPacer implements Pacer {
  private readonly redis: Redis & PaceCommands;
  private readonly owned: boolean;
  private readonly prefix: string;

  /** `redis`: a URL (the pacer opens and closes its own connection) or a client the caller keeps and closes. */
  constructor(redis: string | Redis, options: { prefix?: string } = {}) {
    this.owned = typeof redis === 'string';
    const client = typeof redis === 'string' ? new Redis(redis) : redis;
    client.defineCommand('parleyPaceReserve', { numberOfKeys: 1, lua: RESERVE });
    client.defineCommand('parleyPaceTake', { numberOfKeys: 1, lua: TAKE });
    client.defineCommand('parleyPaceBacklog', { numberOfKeys: 1, lua: BACKLOG });
    this.redis = client as Redis & PaceCommands;
    this.prefix = options.prefix ?? 'parley:pace:';
  }

  async reserve(key: string, cps: number): Promise<number> {
    const interval = intervalMs(cps);
    return Number(await this.redis.parleyPaceReserve(this.prefix + key, String(interval)));
  }

  async take(key: string, cps: number): Promise<number> {
    return Number(await this.redis.parleyPaceTake(this.prefix + key, String(intervalMs(cps)), String(TAKE_EARLY_MS)));
  }

  async backlogMs(key: string): Promise<number> {
    return Number(await this.redis.parleyPaceBacklog(this.prefix + key));
  }

  async close(): Promise<void> {
    if (this.owned) await this.redis.quit();
  }
}
