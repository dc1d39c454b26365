// Limits on SIP digest password guessing (issue 34): wrong answers are counted per source address on a trunk and per
// trunk; past a limit that source (or, for the trunk, every source that has not authenticated on it lately) is refused
// without a challenge for a cooling-off period that doubles on each repeat. LocalDigestGuard counts in this process;
// RedisDigestGuard shares the counts with every server on one Redis. Nothing here sees a password or a digest answer:
// the SIP leg checks the answer first and hands the verdict over, and each call below checks the cooling-off and
// counts in one atomic step, so answers arriving together cannot all be checked before the first lockout lands.
import { isIP } from 'node:net';
import { Redis } from 'ioredis';

export interface DigestGuardRules {
  /** Wrong answers from one source on one trunk, within windowMs of the first, that start that source's cooling-off. */
  sourceFailures: number;
  /** Wrong answers on one trunk from every source, within windowMs of the first, that start the trunk's cooling-off. */
  trunkFailures: number;
  windowMs: number;
  /** The first cooling-off; each one within memoryMs of the previous (same source and trunk, or same trunk) doubles. */
  coolingMs: number;
  maxCoolingMs: number;
  memoryMs: number;
  /** A source that authenticated on a trunk is exempt from that trunk's cooling-off (not its own) for this long. */
  trustedMs: number;
}

export const DEFAULT_DIGEST_RULES: DigestGuardRules = {
  sourceFailures: 10,
  trunkFailures: 50,
  windowMs: 60_000,
  coolingMs: 5 * 60_000,
  maxCoolingMs: 60 * 60_000,
  memoryMs: 24 * 3600_000,
  trustedMs: 7 * 24 * 3600_000,
};

/** One digest attempt: the trunk it is for (the platform carrier: any fixed name) and the peer's IP address. */
export interface DigestAttempt {
  trunk: string;
  source: string;
}

/** `source`: this source on this trunk; `trunk`: every source without a recent success on this trunk. */
export type GuardScope = 'source' | 'trunk';

/** Why an attempt is refused now: the cooling-off of a scope, and the ms left of it. */
export interface Cooling {
  scope: GuardScope;
  remainingMs: number;
}

/** A cooling-off a wrong answer started: how long, and which repeat it is (1 for the first within memoryMs). */
export interface Lockout {
  scope: GuardScope;
  coolingMs: number;
  repeat: number;
}

/** What a wrong answer came to: refused unchecked (cooling off already: not counted), or counted. */
export type Failure = { refused: Cooling } | { refused: null; lockouts: Lockout[] };

/**
 * Every method first looks for a cooling-off refusing the attempt (the source's own on the trunk; the trunk's, unless
 * the source authenticated on it lately): one found, it is the answer (403 without a challenge) and nothing changes.
 */
export interface DigestGuard {
  /** A request without a usable answer (to be challenged): the cooling-off refusing it, or null. */
  refusal(a: DigestAttempt): Promise<Cooling | null>;
  /** A wrong answer: refused, or counted, with the cooling-off periods it started (none, one or both scopes). */
  failed(a: DigestAttempt): Promise<Failure>;
  /**
   * A right answer: the cooling-off refusing it (the right password is refused while cooling off), or null: the
   * source's count and repeats on the trunk start over, and it is exempt from the trunk's cooling-off for trustedMs.
   */
  succeeded(a: DigestAttempt): Promise<Cooling | null>;
  close(): Promise<void>;
}

/** The cooling-off of the `repeat`-th lockout: coolingMs doubled for each earlier one, at most maxCoolingMs. */
export function coolingFor(rules: DigestGuardRules, repeat: number): number {
  return Math.min(rules.maxCoolingMs, rules.coolingMs * 2 ** Math.max(0, Math.min(repeat - 1, 40)));
}

/**
 * The address a source is counted under: IPv4 (an IPv4-mapped IPv6 address as the IPv4 it carries), or an IPv6
 * address's /64 (one host usually holds a whole /64, so counting single IPv6 addresses would not limit it).
 */
export function sourceKey(address: string): string {
  const ip = address.trim().replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1] as string;
  if (isIP(ip) !== 6) return ip;
  const [head = '', tail] = ip.split('::');
  const groups = (s: string) => (s ? s.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const h = groups(head);
  const all = tail === undefined ? h : [...h, ...new Array<string>(Math.max(0, 8 - h.length - groups(tail).length)).fill('0'), ...groups(tail)];
  return `${all.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

/** An entry and when it expires (ms on the guard's clock). */
type Timed<V> = { value: V; until: number };

class ExpiringMap<V> {
  private readonly map = new Map<string, Timed<V>>();
  get(key: string, now: number): Timed<V> | undefined {
    const e = this.map.get(key);
    if (e && e.until <= now) this.map.delete(key);
    return e && e.until > now ? e : undefined;
  }
  set(key: string, value: V, until: number): void {
    this.map.set(key, { value, until });
  }
  delete(key: string): void {
    this.map.delete(key);
  }
  prune(now: number): void {
    for (const [k, e] of this.map) if (e.until <= now) this.map.delete(k);
  }
  get size(): number {
    return this.map.size;
  }
}

/** The counts of one process (`now`: a clock in ms, for tests). */
export class LocalDigestGuard implements DigestGuard {
  private readonly counts = new ExpiringMap<number>();
  private readonly blocks = new ExpiringMap<true>();
  private readonly repeats = new ExpiringMap<number>();
  private readonly trusted = new ExpiringMap<true>();
  private lastPrune: number;

  constructor(
    readonly rules: DigestGuardRules = DEFAULT_DIGEST_RULES,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.lastPrune = now();
  }

  /** Entries held now (expired ones are dropped at least once a window). */
  get size(): number {
    return this.counts.size + this.blocks.size + this.repeats.size + this.trusted.size;
  }

  async refusal(a: DigestAttempt): Promise<Cooling | null> {
    return this.cooling(localKeys(a), this.now());
  }

  private cooling(keys: LocalKeys, now: number): Cooling | null {
    const own = this.blocks.get(keys.source, now);
    if (own) return { scope: 'source', remainingMs: own.until - now };
    const trunk = this.blocks.get(keys.trunk, now);
    if (trunk && !this.trusted.get(keys.pair, now)) return { scope: 'trunk', remainingMs: trunk.until - now };
    return null;
  }

  async failed(a: DigestAttempt): Promise<Failure> {
    const now = this.now();
    this.pruneNow(now);
    const keys = localKeys(a);
    const refused = this.cooling(keys, now);
    if (refused) return { refused };
    const started: Lockout[] = [];
    for (const [scope, key, limit] of [
      ['source', keys.source, this.rules.sourceFailures],
      ['trunk', keys.trunk, this.rules.trunkFailures],
    ] as const) {
      const counted = this.counts.get(key, now);
      const n = (counted?.value ?? 0) + 1;
      if (n < limit) {
        this.counts.set(key, n, counted?.until ?? now + this.rules.windowMs);
        continue;
      }
      this.counts.delete(key);
      const repeat = (this.repeats.get(key, now)?.value ?? 0) + 1;
      this.repeats.set(key, repeat, now + this.rules.memoryMs);
      const coolingMs = coolingFor(this.rules, repeat);
      this.blocks.set(key, true, now + coolingMs);
      started.push({ scope, coolingMs, repeat });
    }
    return { refused: null, lockouts: started };
  }

  async succeeded(a: DigestAttempt): Promise<Cooling | null> {
    const now = this.now();
    const keys = localKeys(a);
    const refused = this.cooling(keys, now);
    if (refused) return refused;
    this.counts.delete(keys.source);
    this.repeats.delete(keys.source);
    this.trusted.set(keys.pair, true, now + this.rules.trustedMs);
    return null;
  }

  async close(): Promise<void> {
    for (const m of [this.counts, this.blocks, this.repeats, this.trusted]) m.prune(Number.POSITIVE_INFINITY);
  }

  private pruneNow(now: number): void {
    if (now - this.lastPrune < this.rules.windowMs) return;
    this.lastPrune = now;
    for (const m of [this.counts, this.blocks, this.repeats, this.trusted]) m.prune(now);
  }
}

type LocalKeys = { source: string; trunk: string; pair: string };

function localKeys(a: DigestAttempt): LocalKeys {
  const src = sourceKey(a.source);
  return { source: `s|${a.trunk}|${src}`, trunk: `t|${a.trunk}`, pair: `${a.trunk}|${src}` };
}

// KEYS: 1 the source's block, 2 the trunk's block, 3 the source's trust on the trunk, 4 the source's count, 5 its
// repeats, 6 the trunk's count, 7 its repeats. ARGV: 1 what ('check', 'failed' or 'succeeded'), 2 source limit, 3 trunk
// limit, 4 window, 5 cooling, 6 max cooling, 7 memory, 8 trust (ms). Answers '<scope> <ms left>' when a cooling-off
// refuses the attempt (nothing changes); 'counted <cooling ms> <repeat> <cooling ms> <repeat>' for a failure (source,
// then trunk; '0 0': none started); 'ok' otherwise.
const JUDGE = `
local s = redis.call('PTTL', KEYS[1])
if s > 0 then return 'source ' .. s end
local t = redis.call('PTTL', KEYS[2])
if t > 0 and redis.call('EXISTS', KEYS[3]) == 0 then return 'trunk ' .. t end
if ARGV[1] == 'succeeded' then
  redis.call('DEL', KEYS[4], KEYS[5])
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[8])
  return 'ok'
end
if ARGV[1] ~= 'failed' then return 'ok' end
local function bump(count, block, repeats, limit)
  local n = redis.call('INCR', count)
  if n == 1 then redis.call('PEXPIRE', count, ARGV[4]) end
  if n < limit then return '0 0' end
  redis.call('DEL', count)
  local r = redis.call('INCR', repeats)
  redis.call('PEXPIRE', repeats, ARGV[7])
  local e = r - 1
  if e > 40 then e = 40 end
  local cool = math.floor(math.min(tonumber(ARGV[6]), tonumber(ARGV[5]) * 2 ^ e))
  redis.call('SET', block, r, 'PX', cool)
  return string.format('%d %d', cool, r)
end
return 'counted ' .. bump(KEYS[4], KEYS[1], KEYS[5], tonumber(ARGV[2])) .. ' ' .. bump(KEYS[6], KEYS[2], KEYS[7], tonumber(ARGV[3]))
`;

interface GuardCommands {
  parleyDigestJudge(...keysAndArgs: string[]): Promise<string>;
}

/**
 * The counts of every server on one Redis (keys under `prefix`, default `parley:sipauth:`; one trunk's keys share a
 * hash tag). Expiry is Redis's: a window, a cooling-off or a trust ends on Redis's clock.
 */
export class RedisDigestGuard implements DigestGuard {
  readonly rules: DigestGuardRules;
  private readonly redis: Redis & GuardCommands;
  private readonly owned: boolean;
  private readonly prefix: string;

  /** `redis`: a URL (the guard opens and closes its own connection) or a client the caller keeps and closes. */
  constructor(
    redis: string | Redis,
    options: { prefix?: string; rules?: DigestGuardRules } = {},
  ) {
    this.owned = typeof redis === 'string';
    // A stalled or absent Redis must not hold INVITEs: a command fails after a second (the SIP leg then lets the call through).
    const client = typeof redis === 'string' ? new Redis(redis, { commandTimeout: 1000, maxRetriesPerRequest: 1 }) : redis;
    // Its own connection's errors reach the caller through the commands that fail (ioredis would print each one).
    if (this.owned) client.on('error', () => undefined);
    client.defineCommand('parleyDigestJudge', { numberOfKeys: 7, lua: JUDGE });
    this.redis = client as Redis & GuardCommands;
    this.prefix = options.prefix ?? 'parley:sipauth:';
    this.rules = options.rules ?? DEFAULT_DIGEST_RULES;
  }

  /** Runs the script for `what`: a cooling-off refusing the attempt, or the script's other answer split in words. */
  private async judge(a: DigestAttempt, what: 'check' | 'failed' | 'succeeded'): Promise<{ cooling: Cooling | null; words: string[] }> {
    const t = `${this.prefix}{${a.trunk}}`;
    const s = sourceKey(a.source);
    const r = this.rules;
    const reply = await this.redis.parleyDigestJudge(
      `${t}:block:${s}`, `${t}:block`, `${t}:trusted:${s}`, `${t}:count:${s}`, `${t}:repeats:${s}`, `${t}:count`, `${t}:repeats`,
      what, String(r.sourceFailures), String(r.trunkFailures), String(r.windowMs), String(r.coolingMs), String(r.maxCoolingMs), String(r.memoryMs), String(r.trustedMs),
    );
    const words = reply.split(' ');
    const scope = words[0];
    return scope === 'source' || scope === 'trunk' ? { cooling: { scope, remainingMs: Number(words[1]) }, words } : { cooling: null, words };
  }

  async refusal(a: DigestAttempt): Promise<Cooling | null> {
    return (await this.judge(a, 'check')).cooling;
  }

  async failed(a: DigestAttempt): Promise<Failure> {
    const { cooling, words } = await this.judge(a, 'failed');
    if (cooling) return { refused: cooling };
    const [sCool, sRepeat, tCool, tRepeat] = words.slice(1).map(Number) as [number, number, number, number];
    const lockouts: Lockout[] = [];
    if (sRepeat > 0) lockouts.push({ scope: 'source', coolingMs: sCool, repeat: sRepeat });
    if (tRepeat > 0) lockouts.push({ scope: 'trunk', coolingMs: tCool, repeat: tRepeat });
    return { refused: null, lockouts };
  }

  async succeeded(a: DigestAttempt): Promise<Cooling | null> {
    return (await this.judge(a, 'succeeded')).cooling;
  }

  async close(): Promise<void> {
    if (!this.owned) return;
    if (this.redis.status === 'ready') await this.redis.quit();
    else this.redis.disconnect();
  }
}
