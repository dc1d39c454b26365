// Carries live call events between the servers sharing a store (calls/live-events.ts): PostgreSQL LISTEN/NOTIFY on a
// connection of its own, or Redis pub/sub when PARLEY_REDIS_URL is set. One channel per store (the PostgreSQL schema
// names it, so test schemas on one database stay apart). Sends are queued on one connection; past MAX_PENDING
// unsent messages new ones are dropped (counted) rather than held: the calls publishing them never wait.
import pg from 'pg';
import { Redis } from 'ioredis';
import type { BusMessage, LiveBus, LiveEvent } from './live-events.js';

/** Messages waiting to go out before new ones are dropped. */
const MAX_PENDING = 1000;
/** PostgreSQL's NOTIFY payload limit is 8000 bytes. */
const MAX_PAYLOAD = 7800;

interface BusLog {
  warn(obj: object, msg: string): void;
}

/** The message as sent; an event too large for NOTIFY has its longest texts shortened. */
function encode(msg: BusMessage, limit: number): string {
  let text = JSON.stringify(msg);
  if (text.length <= limit || msg.kind !== 'events') return text;
  const events = msg.events.map((e) => ({ ...e })) as LiveEvent[];
  for (let cut = 2000; text.length > limit && cut >= 50; cut = Math.floor(cut / 2)) {
    for (const e of events) for (const [k, v] of Object.entries(e)) if (typeof v === 'string' && v.length > cut) (e as Record<string, unknown>)[k] = `${v.slice(0, cut)}…`;
    text = JSON.stringify({ ...msg, events });
  }
  return text;
}

function decode(text: string): BusMessage | null {
  try {
    const m = JSON.parse(text) as BusMessage;
    return m && typeof m.origin === 'string' && typeof m.callId === 'string' && (m.kind === 'watch' || m.kind === 'ack' || (m.kind === 'events' && Array.isArray(m.events))) ? m : null;
  } catch {
    return null;
  }
}

export class PgLiveBus implements LiveBus {
  readonly name = 'postgres';
  private client: pg.Client | null = null;
  private pending = 0;
  private dropped = 0;
  private closing = false;
  private deliver: ((m: BusMessage) => void) | null = null;
  private readonly channel: string;

  constructor(
    private readonly url: string,
    schema: string | undefined,
    private readonly log: BusLog,
  ) {
    this.channel = `parley_live_${schema ?? 'public'}`.slice(0, 63);
  }

  async start(deliver: (m: BusMessage) => void): Promise<void> {
    this.deliver = deliver;
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (n) => {
      if (n.channel !== this.channel || !n.payload) return;
      const m = decode(n.payload);
      if (m) this.deliver?.(m);
    });
    client.on('error', (err) => {
      this.log.warn({ err: err.message }, 'live events: PostgreSQL listener lost; reconnecting');
      if (this.client === client) this.client = null;
      client.end().catch(() => {});
      if (!this.closing) setTimeout(() => void this.connect().catch(() => {}), 1000).unref();
    });
    await client.connect();
    await client.query(`LISTEN "${this.channel}"`);
    this.client = client;
  }

  async send(msg: BusMessage): Promise<void> {
    const client = this.client;
    if (!client || this.pending >= MAX_PENDING) {
      if (++this.dropped % 100 === 1) this.log.warn({ dropped: this.dropped }, 'live events: messages to other servers dropped');
      return;
    }
    this.pending++;
    try {
      await client.query('SELECT pg_notify($1, $2)', [this.channel, encode(msg, MAX_PAYLOAD)]);
    } finally {
      this.pending--;
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}

export class RedisLiveBus implements LiveBus {
  readonly name = 'redis';
  private readonly pub: Redis;
  private readonly sub: Redis;
  private readonly channel: string;
  private dropped = 0;
  private pending = 0;

  constructor(url: string, namespace: string | undefined, private readonly log: BusLog) {
    this.pub = new Redis(url, { maxRetriesPerRequest: 1 });
    this.sub = new Redis(url);
    this.channel = `parley:live:${namespace ?? 'default'}`;
    for (const c of [this.pub, this.sub]) c.on('error', (err: Error) => this.log.warn({ err: err.message }, 'live events: Redis connection error'));
  }

  async start(deliver: (m: BusMessage) => void): Promise<void> {
    this.sub.on('message', (channel: string, text: string) => {
      if (channel !== this.channel) return;
      const m = decode(text);
      if (m) deliver(m);
    });
    await this.sub.subscribe(this.channel);
  }

  async send(msg: BusMessage): Promise<void> {
    if (this.pending >= MAX_PENDING) {
      if (++this.dropped % 100 === 1) this.log.warn({ dropped: this.dropped }, 'live events: messages to other servers dropped');
      return;
    }
    this.pending++;
    try {
      await this.pub.publish(this.channel, encode(msg, 512 * 1024));
    } finally {
      this.pending--;
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.pub.quit().catch(() => {}), this.sub.quit().catch(() => {})]);
  }
}
