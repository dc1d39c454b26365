// The RTP send pool (PARLEY_RTP_SENDERS): packets are built on the media thread a little ahead of their time
// (PARLEY_RTP_SEND_LEAD_MS) and handed, through shared memory, to sender threads pinned one per CPU; whichever of them
// (or the media thread itself) is first at a packet's send time claims it and sends it (sendto(2) through koffi on the
// RTP socket's own descriptor, so the source port stays the call's port).
//
// Why: a single thread that sends on time is only as punctual as the core it sits on. On shared VMs a core can stop for
// tens of milliseconds (the hypervisor descheduled the vCPU, or a kernel thread held it on a non-preemptible kernel)
// while the other runs on. A probe here (a 20 ms timer pinned to each CPU beside an unpinned one, under the 20-call
// telephony bench) gave an interval deviation p99 of 0.9 ms for the earlier of the two pinned timers against 2.9 ms for
// one thread, max 2.6 ms against 45 ms; bench:telephony at 20 calls, runs alternating with PARLEY_RTP_SENDERS=0: send
// deviation p99 0.4 / 0.4 ms against 4.2 / 4.8 (at the caller 2.9 / 2.1 against 4.1 / 4.9). A sender does almost
// nothing (it sleeps on a futex until the next packet is due), so its wake-up is not held up behind its own work.
//
// Shared layout: one control block (generation counter for wake-ups, stop flag, each sender's planned wake-up) and one
// region per call: a lock (held only around the sends, so a packet is sent once and a call's packets in order), a ring
// of SLOTS packets (head: next to send, tail: next to fill), the socket's descriptor and an `active` flag that the
// media thread clears, under the lock, before it closes the socket (a descriptor is never used after its close).
import { createRequire } from 'node:module';
import { isIPv4, isIPv6 } from 'node:net';
import type dgram from 'node:dgram';
import { Worker } from 'node:worker_threads';
import { allowedCpus, type MediaPriority } from './priority.js';

/** Packets one call may have waiting (a DTMF end sends three in one tick, plus a catch-up after a stall). */
export const SLOTS = 8;
/** Largest packet the pool carries (RTP header, 20 ms of G.711, SRTP tag, with room). */
export const SLOT_BYTES = 512;
/** A packet this close to its time is sent now (the futex wake-up's own slack). */
export const EARLY_MS = 0.05;

// Control block (Int32): generation, stop flag, then one planned wake-up per sender (0.1 ms units, wrapping).
const C_GEN = 0;
const C_STOP = 1;
const C_REGIONS = 2; // regions ever used (the senders scan these)
const C_PLAN = 4;
const MAX_SENDERS = 8;

// Region header (Int32 each): lock, head, tail, fd, active, spare.
const H_LOCK = 0;
const H_HEAD = 1;
const H_TAIL = 2;
const H_FD = 3;
const H_ACTIVE = 4;
const H_INTS = 8;

// Per slot: Int32 [length, address length, result (bytes sent or -errno), flags]; Float64 [target, sent at]; bytes; address.
const S_LEN = 0;
const S_ADDRLEN = 1;
const S_RESULT = 2;
const S_FLAGS = 3;
const S_INTS = 4;
const ADDR_BYTES = 28; // sockaddr_in6
/** Slot flag: the interval before this packet is not the clock's (sending resumed after a pause). */
export const FLAG_RESUMED = 1;
/** The result of a packet dropped unsent (drop(): barge-in), as onSent sees it. */
export const RESULT_DROPPED = 0x40000000;

/** Monotonic milliseconds, the same clock in every thread (CLOCK_MONOTONIC). */
export function monoMs(): number {
  const [s, ns] = process.hrtime();
  return s * 1e3 + ns / 1e6;
}

const toUnits = (ms: number) => Math.round(ms * 10) | 0;
/** a < b on the wrapping 0.1 ms scale. */
const before = (a: number, b: number) => ((a - b) | 0) < 0;

export interface SendPoolShared {
  control: SharedArrayBuffer;
  regions: SharedArrayBuffer;
  targets: SharedArrayBuffer;
  bytes: SharedArrayBuffer;
  capacity: number;
}

/** Typed views over the shared memory, the same in the media thread and the senders. */
export class PoolViews {
  readonly control: Int32Array;
  readonly header: Int32Array;
  readonly slotInts: Int32Array;
  readonly times: Float64Array; // per slot: target, sent at
  readonly bytes: Uint8Array;
  readonly capacity: number;

  constructor(readonly shared: SendPoolShared) {
    this.capacity = shared.capacity;
    this.control = new Int32Array(shared.control);
    this.header = new Int32Array(shared.regions, 0, shared.capacity * H_INTS);
    this.slotInts = new Int32Array(shared.regions, shared.capacity * H_INTS * 4);
    this.times = new Float64Array(shared.targets);
    this.bytes = new Uint8Array(shared.bytes);
  }

  static allocate(capacity: number): SendPoolShared {
    const slots = capacity * SLOTS;
    return {
      capacity,
      control: new SharedArrayBuffer((C_PLAN + MAX_SENDERS) * 4),
      regions: new SharedArrayBuffer(capacity * H_INTS * 4 + slots * S_INTS * 4),
      targets: new SharedArrayBuffer(slots * 2 * 8),
      bytes: new SharedArrayBuffer(slots * (SLOT_BYTES + ADDR_BYTES)),
    };
  }

  slotOf(region: number, index: number): number {
    return region * SLOTS + (index & (SLOTS - 1)); // SLOTS is a power of two; indices wrap as int32
  }

  packetAt(slot: number, length: number): Uint8Array {
    return this.bytes.subarray(slot * (SLOT_BYTES + ADDR_BYTES), slot * (SLOT_BYTES + ADDR_BYTES) + length);
  }

  addressAt(slot: number, length = ADDR_BYTES): Uint8Array {
    const at = slot * (SLOT_BYTES + ADDR_BYTES) + SLOT_BYTES;
    return this.bytes.subarray(at, at + length);
  }
}

/** sendto(2) bound through koffi: returns bytes sent, or -errno. */
export type SendTo = (fd: number, packet: Uint8Array, length: number, address: Uint8Array, addressLength: number) => number;

export function loadSendTo(): SendTo {
  const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
  const libc = koffi.load('libc.so.6');
  const sendto = libc.func('long sendto(int fd, const void *buf, size_t len, int flags, const void *addr, uint32_t addrlen)');
  const MSG_DONTWAIT = 0x40;
  return (fd, packet, length, address, addressLength) => {
    const n = Number(sendto(fd, packet, length, MSG_DONTWAIT, address, addressLength));
    return n >= 0 ? n : -koffi.errno();
  };
}

/**
 * Sends region `r`'s packets that are due by `now` (the caller holds its lock), in order. Returns how many it sent.
 */
export function sendDue(v: PoolViews, sendto: SendTo, r: number, now: number): number {
  const h = r * H_INTS;
  let head = Atomics.load(v.header, h + H_HEAD);
  const tail = Atomics.load(v.header, h + H_TAIL);
  let sent = 0;
  while (head !== tail) {
    const slot = v.slotOf(r, head);
    if (v.times[slot * 2]! > now + EARLY_MS) break;
    const si = slot * S_INTS;
    v.times[slot * 2 + 1] = monoMs(); // timed at the send call, as the media thread times its own
    if (Atomics.load(v.header, h + H_ACTIVE) === 1) {
      const len = v.slotInts[si + S_LEN]!;
      v.slotInts[si + S_RESULT] = sendto(v.header[h + H_FD]!, v.packetAt(slot, len), len, v.addressAt(slot), v.slotInts[si + S_ADDRLEN]!);
    } else {
      v.slotInts[si + S_RESULT] = 0;
    }
    head = (head + 1) | 0;
    Atomics.store(v.header, h + H_HEAD, head);
    sent++;
  }
  return sent;
}

/** The sender thread's loop (sender.ts runs it): until the stop flag, sends each region's due packets. */
export function runSender(v: PoolViews, sendto: SendTo, me: number): void {
  const c = v.control;
  for (;;) {
    if (Atomics.load(c, C_STOP) !== 0) return;
    const gen = Atomics.load(c, C_GEN);
    const now = monoMs();
    let next = now + 1000;
    const regions = Atomics.load(c, C_REGIONS);
    for (let r = 0; r < regions; r++) {
      const h = r * H_INTS;
      const head = Atomics.load(v.header, h + H_HEAD);
      if (head === Atomics.load(v.header, h + H_TAIL)) continue;
      const target = v.times[v.slotOf(r, head) * 2]!;
      if (target > now + EARLY_MS) {
        if (target < next) next = target;
        continue;
      }
      if (Atomics.compareExchange(v.header, h + H_LOCK, 0, 1) !== 0) {
        next = Math.min(next, now + 0.5); // another thread is sending this call's packets: look again soon
        continue;
      }
      try {
        sendDue(v, sendto, r, monoMs());
      } finally {
        Atomics.store(v.header, h + H_LOCK, 0);
      }
      const after = Atomics.load(v.header, h + H_HEAD);
      if (after !== Atomics.load(v.header, h + H_TAIL)) next = Math.min(next, v.times[v.slotOf(r, after) * 2]!);
    }
    Atomics.store(c, C_PLAN + me, toUnits(next));
    const wait = next - monoMs() - EARLY_MS;
    if (wait > 0) Atomics.wait(c, C_GEN, gen, wait);
  }
}

/** Where a packet goes, as a sockaddr (IPv4 or IPv6), or null for an address the pool does not take. */
export function sockaddr(address: string, port: number, into: Uint8Array): number {
  const view = new DataView(into.buffer, into.byteOffset, into.byteLength);
  if (isIPv4(address)) {
    into.fill(0, 0, 16);
    view.setUint16(0, 2, true); // AF_INET
    view.setUint16(2, port, false);
    const parts = address.split('.');
    for (let i = 0; i < 4; i++) into[4 + i] = Number(parts[i]);
    return 16;
  }
  if (isIPv6(address)) {
    const groups = ipv6Groups(address);
    if (!groups) return 0;
    into.fill(0, 0, 28);
    view.setUint16(0, 10, true); // AF_INET6 (Linux)
    view.setUint16(2, port, false);
    for (let i = 0; i < 8; i++) view.setUint16(8 + i * 2, groups[i]!, false);
    return 28;
  }
  return 0;
}

/** The eight 16-bit groups of an IPv6 address (with :: and a trailing dotted IPv4 part); null with a zone index. */
export function ipv6Groups(address: string): number[] | null {
  if (address.includes('%')) return null;
  let text = address;
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const b = dotted[1]!.split('.').map(Number);
    tail.push((b[0]! << 8) | b[1]!, (b[2]! << 8) | b[3]!);
    text = text.slice(0, -dotted[1]!.length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const [left, right] = text.split('::') as [string, string | undefined];
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const l = parse(left);
  const r = right === undefined ? [] : parse(right);
  const fill = 8 - tail.length - l.length - r.length;
  if (right === undefined ? fill !== 0 : fill < 0) return null;
  return [...l, ...new Array<number>(right === undefined ? 0 : fill).fill(0), ...r, ...tail];
}

/** One call's handle on the pool (on the media thread). */
export class PoolLane {
  /** The destination's sockaddr, and the address and port it was built from. */
  private readonly to = new Uint8Array(ADDR_BYTES);
  private toLen = 0;
  private toAddress = '';
  private toPort = -1;

  constructor(
    private readonly pool: SendPool,
    readonly region: number,
    /** The first packet whose timing and result collect() has not given yet. */
    private collected: number,
    /** Given each sent packet's send time (monoMs scale), result (bytes sent or -errno) and flags, in order. */
    private readonly onSent: (sentAt: number, result: number, flags: number) => void,
  ) {}

  /**
   * Queues a packet to leave at `target` (monoMs scale). Returns false when it could not (an address the pool does not
   * take, or the ring full because no sender ran for SLOTS packets): the caller sends it itself.
   */
  publish(packet: Buffer, address: string, port: number, target: number, flags: number): boolean {
    this.collect(); // a slot is reused only once its packet's send time has been read
    // The destination's sockaddr is built once per address and port (latching may move it mid-call), not per packet.
    if (address !== this.toAddress || port !== this.toPort) {
      this.toLen = sockaddr(address, port, this.to);
      this.toAddress = address;
      this.toPort = port;
    }
    if (this.toLen === 0) return false;
    return this.pool.publish(this.region, packet, this.to, this.toLen, target, flags);
  }

  /** Sends what is overdue by more than `graceMs` when no sender has (both stalled): the media thread's own backstop. */
  backstop(graceMs: number): void {
    this.pool.backstop(this.region, graceMs);
  }

  /** Sends every packet waiting now, whatever its time (the media thread then sends one itself, after them). */
  flush(): void {
    this.pool.flush(this.region);
  }

  /** Drops every packet waiting (not sent; onSent sees RESULT_DROPPED): the agent's audio stops at once (barge-in). */
  drop(): void {
    this.pool.drop(this.region);
  }

  /** Gives onSent each packet sent since the last call, in order. */
  collect(): void {
    const v = this.pool.views;
    const head = Atomics.load(v.header, this.region * H_INTS + H_HEAD);
    while (this.collected !== head) {
      const slot = v.slotOf(this.region, this.collected);
      this.onSent(v.times[slot * 2 + 1]!, v.slotInts[slot * S_INTS + S_RESULT]!, v.slotInts[slot * S_INTS + S_FLAGS]!);
      this.collected = (this.collected + 1) | 0;
    }
  }

  /** Packets waiting. */
  get pending(): number {
    const v = this.pool.views;
    const h = this.region * H_INTS;
    return (Atomics.load(v.header, h + H_TAIL) - Atomics.load(v.header, h + H_HEAD)) | 0;
  }

  /** Drops what waits and gives the region back; after this no thread uses the socket's descriptor. */
  release(): void {
    this.pool.release(this.region);
  }
}

/**
 * The pool on the media thread: the shared memory, the regions, and the sender threads (started by `startSenders`, a
 * function that starts one sender thread per CPU given to it; see worker.ts).
 */
export class SendPool {
  readonly views: PoolViews;
  private readonly free: number[] = [];
  private used = 0;
  private readonly senders: number;
  constructor(
    readonly shared: SendPoolShared,
    senders: number,
    private readonly sendto: SendTo,
  ) {
    this.views = new PoolViews(shared);
    this.senders = Math.min(senders, MAX_SENDERS);
  }

  /** A region for a call's socket, or null when all are taken (that call's media thread sends itself). */
  open(socket: dgram.Socket, onSent: (sentAt: number, result: number, flags: number) => void = () => {}): PoolLane | null {
    const fd = socketFd(socket);
    if (fd === null) return null;
    const region = this.free.pop() ?? (this.used < this.views.capacity ? this.used++ : -1);
    if (region < 0) return null;
    const v = this.views;
    const h = region * H_INTS;
    Atomics.store(v.header, h + H_FD, fd);
    Atomics.store(v.header, h + H_ACTIVE, 1);
    Atomics.store(v.control, C_REGIONS, Math.max(Atomics.load(v.control, C_REGIONS), region + 1));
    return new PoolLane(this, region, Atomics.load(v.header, h + H_HEAD), onSent);
  }

  /** Queues a packet for `to` (a sockaddr of `addrLen` bytes, from sockaddr()); false when the ring is full. */
  publish(region: number, packet: Buffer, to: Uint8Array, addrLen: number, target: number, flags: number): boolean {
    const v = this.views;
    const h = region * H_INTS;
    if (packet.length > SLOT_BYTES || addrLen === 0) return false;
    const tail = Atomics.load(v.header, h + H_TAIL);
    // Full: no sender ran for SLOTS packets. The caller flushes and sends this one itself.
    if (((tail - Atomics.load(v.header, h + H_HEAD)) | 0) >= SLOTS) return false;
    const slot = v.slotOf(region, tail);
    v.packetAt(slot, packet.length).set(packet);
    v.addressAt(slot).set(to.subarray(0, ADDR_BYTES));
    const si = slot * S_INTS;
    v.slotInts[si + S_LEN] = packet.length;
    v.slotInts[si + S_ADDRLEN] = addrLen;
    v.slotInts[si + S_RESULT] = 0;
    v.slotInts[si + S_FLAGS] = flags;
    v.times[slot * 2] = target;
    v.times[slot * 2 + 1] = 0;
    Atomics.store(v.header, h + H_TAIL, (tail + 1) | 0);
    Atomics.add(v.control, C_GEN, 1);
    // Wake the senders when this packet is due before the wake-up one of them planned (else it is picked up then).
    const t = toUnits(target);
    for (let i = 0; i < this.senders; i++) {
      if (before(t, Atomics.load(v.control, C_PLAN + i))) {
        Atomics.notify(v.control, C_GEN);
        break;
      }
    }
    return true;
  }

  backstop(region: number, graceMs: number): void {
    const v = this.views;
    const h = region * H_INTS;
    const head = Atomics.load(v.header, h + H_HEAD);
    if (head === Atomics.load(v.header, h + H_TAIL)) return;
    const now = monoMs();
    if (v.times[v.slotOf(region, head) * 2]! > now - graceMs) return;
    if (Atomics.compareExchange(v.header, h + H_LOCK, 0, 1) !== 0) return; // a sender is at it
    try {
      sendDue(v, this.sendto, region, now);
    } finally {
      Atomics.store(v.header, h + H_LOCK, 0);
    }
  }

  flush(region: number): void {
    const v = this.views;
    const h = region * H_INTS;
    if (Atomics.load(v.header, h + H_HEAD) === Atomics.load(v.header, h + H_TAIL)) return;
    this.lock(h);
    try {
      sendDue(v, this.sendto, region, Infinity);
    } finally {
      Atomics.store(v.header, h + H_LOCK, 0);
    }
  }

  drop(region: number): void {
    const v = this.views;
    const h = region * H_INTS;
    if (Atomics.load(v.header, h + H_HEAD) === Atomics.load(v.header, h + H_TAIL)) return;
    this.lock(h);
    try {
      let head = Atomics.load(v.header, h + H_HEAD);
      const tail = Atomics.load(v.header, h + H_TAIL);
      while (head !== tail) {
        const slot = v.slotOf(region, head);
        v.times[slot * 2 + 1] = monoMs();
        v.slotInts[slot * S_INTS + S_RESULT] = RESULT_DROPPED;
        head = (head + 1) | 0;
      }
      Atomics.store(v.header, h + H_HEAD, head);
    } finally {
      Atomics.store(v.header, h + H_LOCK, 0);
    }
  }

  /** Takes a region's lock, waiting for a sender that holds it (for a few sendto calls at most). */
  private lock(h: number): void {
    const v = this.views;
    while (Atomics.compareExchange(v.header, h + H_LOCK, 0, 1) !== 0) Atomics.wait(v.header, h + H_LOCK, 1, 0.2);
  }

  release(region: number): void {
    const v = this.views;
    const h = region * H_INTS;
    this.lock(h); // so no send is under way on this descriptor
    Atomics.store(v.header, h + H_ACTIVE, 0);
    Atomics.store(v.header, h + H_FD, -1);
    Atomics.store(v.header, h + H_HEAD, Atomics.load(v.header, h + H_TAIL));
    Atomics.store(v.header, h + H_LOCK, 0);
    this.free.push(region);
  }

  /** Tells the senders to stop and wakes them. */
  stop(): void {
    Atomics.store(this.views.control, C_STOP, 1);
    Atomics.add(this.views.control, C_GEN, 1);
    Atomics.notify(this.views.control, C_GEN);
  }
}

/** The descriptor of a bound dgram socket (libuv's), or null where Node does not give it (not on Unix). */
export function socketFd(socket: dgram.Socket): number | null {
  // Node keeps the UDP handle under a symbol of its own ('state symbol'); reading `_handle` would print a deprecation.
  const state = Object.getOwnPropertySymbols(socket)
    .filter((s) => s.description === 'state symbol')
    .map((s) => (socket as unknown as Record<symbol, { handle?: { fd?: number } }>)[s])[0];
  const fd = state?.handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : null;
}

/** Sender threads by default (PARLEY_RTP_SENDERS), and how far ahead packets are built (PARLEY_RTP_SEND_LEAD_MS). */
export const DEFAULT_RTP_SENDERS = 2;
export const DEFAULT_SEND_LEAD_MS = 10;

/** Calls the pool keeps regions for; calls beyond these send from the media thread. */
export const POOL_CAPACITY = 512;

export interface StartedSendPool {
  pool: SendPool | null;
  /** Sender threads running, and the CPUs they are pinned to. */
  senders: number;
  cpus: number[];
  /** Why there is no pool, or fewer senders than asked. */
  reason?: string;
}

/**
 * Starts `wanted` sender threads (at most one per CPU this thread may use), each pinned to its CPU and at `priority`,
 * and waits until they run. No pool (the media thread sends itself) when `wanted` is 0 or the FFI is missing.
 */
export async function startSendPool(wanted: number, priority: MediaPriority): Promise<StartedSendPool> {
  if (wanted <= 0) return { pool: null, senders: 0, cpus: [] };
  if (process.platform !== 'linux') return { pool: null, senders: 0, cpus: [], reason: `the send pool is Linux only (this is ${process.platform})` };
  let sendto: SendTo;
  try {
    sendto = loadSendTo();
  } catch (err) {
    return { pool: null, senders: 0, cpus: [], reason: `sendto could not be bound: ${err instanceof Error ? err.message : String(err)}` };
  }
  const allowed = allowedCpus();
  const cpus = (allowed ?? []).slice(0, Math.min(wanted, MAX_SENDERS));
  const count = allowed ? cpus.length : Math.min(wanted, MAX_SENDERS);
  const shared = PoolViews.allocate(POOL_CAPACITY);
  const pool = new SendPool(shared, count, sendto);
  const threads = Array.from({ length: count }, (_, index) => {
    const worker = new Worker(new URL('./sender-entry.mjs', import.meta.url), { workerData: { shared, index, cpu: allowed ? cpus[index]! : null, priority } });
    worker.unref();
    return new Promise<string | null>((resolve) => {
      worker.once('message', (msg: { pinned: string; reason?: string }) => resolve(msg.pinned === 'pinned' || msg.pinned === 'not pinned' ? (msg.reason ?? null) : msg.pinned));
      worker.once('error', (err) => resolve(`a sender thread failed: ${err.message}`));
      worker.once('exit', (code) => resolve(`a sender thread exited (${code})`));
    });
  });
  const problems = (await Promise.all(threads)).filter((p): p is string => p !== null);
  const reasons = [...new Set(problems)];
  if (count < wanted) reasons.unshift(`${count} CPU(s) for ${wanted} sender thread(s)`);
  return { pool, senders: count, cpus, ...(reasons.length ? { reason: reasons.join('; ') } : {}) };
}
