// The RTP send pool (telephony/media/sendpool.ts) with its real sender threads and real UDP sockets on loopback: each
// packet leaves once, in order, from the call's own port, at its time (median), and never after its lane is released.
// Whole calls go through it in the telephony suites (it is on by default); bench:telephony measures its timing.
import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ipv6Groups, loadSendTo, monoMs, PoolViews, RESULT_DROPPED, SendPool, sockaddr, startSendPool, type StartedSendPool } from '../telephony/media/sendpool.js';

const bindUdp = async (address: string) => {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => s.bind(0, address, resolve));
  return s;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('send pool addresses', () => {
  it('writes IPv4 and IPv6 socket addresses, and refuses what it cannot place', () => {
    const buf = new Uint8Array(28);
    expect(sockaddr('127.0.0.1', 4000, buf)).toBe(16);
    expect([...buf.subarray(0, 8)]).toEqual([2, 0, 0x0f, 0xa0, 127, 0, 0, 1]);
    expect(sockaddr('::1', 5004, buf)).toBe(28);
    expect(buf[0]).toBe(10);
    expect(buf[23]).toBe(1);
    expect(ipv6Groups('2001:db8::8:800:200c:417a')).toEqual([0x2001, 0xdb8, 0, 0, 0x8, 0x800, 0x200c, 0x417a]);
    expect(ipv6Groups('::ffff:192.0.2.1')).toEqual([0, 0, 0, 0, 0, 0xffff, 0xc000, 0x0201]);
    expect(ipv6Groups('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(ipv6Groups('1:2:3')).toBeNull();
    expect(ipv6Groups('fe80::1%eth0')).toBeNull();
    expect(sockaddr('example.com', 5004, buf)).toBe(0);
  });
});

describe('send pool with two sender threads', () => {
  let started: StartedSendPool;
  beforeAll(async () => {
    started = await startSendPool(2, 'latency');
  }, 30_000);
  afterAll(() => started.pool?.stop());

  it('sends each packet once, in order, from the call port, at its time', async () => {
    const pool = started.pool!;
    expect(pool).not.toBeNull();
    expect(started.senders).toBeGreaterThanOrEqual(1);
    const from = await bindUdp('127.0.0.2');
    const to = await bindUdp('127.0.0.1');
    const got: Array<{ n: number; at: number; port: number }> = [];
    to.on('message', (msg, rinfo) => got.push({ n: msg.readUInt32BE(0), at: monoMs(), port: rinfo.port }));
    const results: number[] = [];
    const sentAt: number[] = [];
    const lane = pool.open(from, (at, result) => {
      results.push(result);
      sentAt.push(at);
    })!;
    expect(lane).not.toBeNull();
    const count = 40;
    const t0 = monoMs() + 30;
    const targets: number[] = [];
    for (let k = 0; k < count; k++) {
      const target = t0 + k * 20;
      targets.push(target);
      // Built 10 ms ahead, as the media thread does.
      await sleep(Math.max(0, target - 10 - monoMs()));
      const packet = Buffer.alloc(172);
      packet.writeUInt32BE(k, 0);
      expect(lane.publish(packet, '127.0.0.1', to.address().port, target, 0)).toBe(true);
    }
    await sleep(60);
    expect(got.map((g) => g.n)).toEqual(Array.from({ length: count }, (_, k) => k));
    expect(new Set(got.map((g) => g.port))).toEqual(new Set([from.address().port]));
    lane.collect();
    expect(results).toEqual(new Array(count).fill(172));
    // Not before its time, and (median) within a millisecond of it: the senders sleep until a packet is due.
    const late = sentAt.map((at, k) => at - targets[k]!);
    console.log(`send pool: sent-at minus target, median ${median(late).toFixed(3)} ms, max ${Math.max(...late).toFixed(2)} ms`);
    expect(Math.min(...late)).toBeGreaterThanOrEqual(-0.1);
    expect(median(late)).toBeLessThan(1);
    lane.release();
    from.close();
    to.close();
  });

  it('sends nothing of a released lane, and flush() sends what waits at once, in order', async () => {
    const pool = started.pool!;
    const from = await bindUdp('127.0.0.2');
    const to = await bindUdp('127.0.0.1');
    const got: number[] = [];
    to.on('message', (msg) => got.push(msg.readUInt32BE(0)));
    const lane = pool.open(from)!;
    const packet = (n: number) => {
      const b = Buffer.alloc(12);
      b.writeUInt32BE(n, 0);
      return b;
    };
    const later = monoMs() + 100;
    for (let k = 0; k < 3; k++) lane.publish(packet(k), '127.0.0.1', to.address().port, later + k * 20, 0);
    expect(lane.pending).toBe(3);
    lane.flush();
    expect(lane.pending).toBe(0);
    await sleep(30);
    expect(got).toEqual([0, 1, 2]);
    for (let k = 3; k < 6; k++) lane.publish(packet(k), '127.0.0.1', to.address().port, monoMs() + 50, 0);
    lane.release();
    await sleep(120);
    expect(got).toEqual([0, 1, 2]); // the released lane's packets never left
    from.close();
    to.close();
  });
});

describe('send pool at a barge-in', () => {
  it('drop() discards what waits unsent (onSent sees RESULT_DROPPED) and the lane sends on afterwards', async () => {
    const pool = new SendPool(PoolViews.allocate(2), 0, loadSendTo());
    const from = await bindUdp('127.0.0.2');
    const to = await bindUdp('127.0.0.1');
    const got: number[] = [];
    to.on('message', (msg) => got.push(msg.readUInt8(0)));
    const results: number[] = [];
    const lane = pool.open(from, (_at, result) => results.push(result))!;
    const later = monoMs() + 100;
    for (let k = 1; k <= 3; k++) expect(lane.publish(Buffer.from([k]), '127.0.0.1', to.address().port, later, 0)).toBe(true);
    lane.drop();
    expect(lane.pending).toBe(0);
    lane.collect();
    expect(results).toEqual([RESULT_DROPPED, RESULT_DROPPED, RESULT_DROPPED]);
    expect(lane.publish(Buffer.from([4]), '127.0.0.1', to.address().port, 0, 0)).toBe(true);
    lane.flush();
    await sleep(150);
    expect(got).toEqual([4]);
    lane.release();
    for (const s of [from, to]) s.close();
  });
});

describe('send pool destinations', () => {
  it('a lane follows its destination when it moves (latching), and refuses an address it cannot place', async () => {
    const pool = new SendPool(PoolViews.allocate(2), 0, loadSendTo());
    const from = await bindUdp('127.0.0.2');
    const first = await bindUdp('127.0.0.1');
    const second = await bindUdp('127.0.0.1');
    const got = { first: [] as number[], second: [] as number[] };
    first.on('message', (msg) => got.first.push(msg.readUInt8(0)));
    second.on('message', (msg) => got.second.push(msg.readUInt8(0)));
    const lane = pool.open(from)!;
    expect(lane.publish(Buffer.from([1]), '127.0.0.1', first.address().port, 0, 0)).toBe(true);
    expect(lane.publish(Buffer.from([2]), '127.0.0.1', second.address().port, 0, 0)).toBe(true);
    expect(lane.publish(Buffer.from([3]), '127.0.0.1', second.address().port, 0, 0)).toBe(true);
    expect(lane.publish(Buffer.from([4]), 'example.com', second.address().port, 0, 0)).toBe(false);
    expect(lane.publish(Buffer.from([5]), '127.0.0.1', first.address().port, 0, 0)).toBe(true);
    lane.flush();
    await sleep(30);
    expect(got).toEqual({ first: [1, 5], second: [2, 3] });
    lane.release();
    for (const s of [from, first, second]) s.close();
  });
});

describe('send pool without a sender thread', () => {
  it('the media thread sends an overdue packet itself (backstop), and a full ring is refused', async () => {
    const pool = new SendPool(PoolViews.allocate(4), 0, loadSendTo());
    const from = await bindUdp('127.0.0.2');
    const to = await bindUdp('127.0.0.1');
    const got: number[] = [];
    to.on('message', (msg) => got.push(msg.readUInt8(0)));
    const lane = pool.open(from)!;
    const now = monoMs();
    expect(lane.publish(Buffer.from([1]), '127.0.0.1', to.address().port, now + 3, 0)).toBe(true);
    expect(lane.publish(Buffer.from([2]), '127.0.0.1', to.address().port, now + 1000, 0)).toBe(true);
    lane.backstop(2); // not due yet: left for a sender
    expect(lane.pending).toBe(2);
    await sleep(10);
    lane.backstop(2); // now over 2 ms overdue: sent here; the next one is not due and waits
    expect(lane.pending).toBe(1);
    await sleep(20);
    expect(got).toEqual([1]);
    for (let k = 0; k < 7; k++) expect(lane.publish(Buffer.from([3 + k]), '127.0.0.1', to.address().port, now + 2000, 0)).toBe(true);
    expect(lane.publish(Buffer.from([99]), '127.0.0.1', to.address().port, now + 2000, 0)).toBe(false);
    lane.release();
    from.close();
    to.close();
  });
});
