// Media legs run by the media worker thread (telephony/media/remote.ts) against a main-thread RtpSession over real UDP on
// loopback: speech both ways exactly (G.711-quantised) plain and SRTP, digits both ways, what is still queued, barge-in,
// the final counters, the send clock's timing, a bind that cannot get a port, and the media thread's scheduling (PARLEY_MEDIA_PRIORITY).
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { PortAllocator } from '../telephony/media/ports.js';
import { MediaWorker } from '../telephony/media/remote.js';
import { MEDIA_SLICE_NS } from '../telephony/media/priority.js';
import { acceptAnswer, buildOffer, negotiate, type Codec, type MediaEncryption } from '../telephony/media/sdp.js';
import { RtpSession } from '../telephony/media/session.js';
import type { MediaLeg } from '../telephony/media/leg.js';
import { asteriskAudio } from './support/speech.js';
import { concat, findExact, g711RoundTrip, toInt16, waitFor } from './support/pcm-frames.js';
import { canRunRealtime } from './support/sip-callee.js';

const worker = new MediaWorker({ min: 42400, max: 42599 });
const theirs = new PortAllocator({ min: 42600, max: 42799 });
const peers: RtpSession[] = [];
afterAll(async () => {
  for (const s of peers) s.close();
  await worker.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A worker leg (ours, 127.0.0.2) answering a main-thread peer session (127.0.0.1), both started. */
async function connect(o: { ours?: MediaEncryption; theirs?: MediaEncryption; codecs?: Codec[] } = {}): Promise<{ a: MediaLeg; b: RtpSession }> {
  const a = await worker.bind('127.0.0.2');
  const b = await RtpSession.bind({ localAddress: '127.0.0.1', ports: theirs });
  peers.push(b);
  const offer = buildOffer({ encryption: o.theirs ?? 'disable', localAddress: '127.0.0.1', localPort: b.localPort, codecs: o.codecs });
  const answer = negotiate(offer.sdp, { encryption: o.ours ?? 'allow', localAddress: '127.0.0.2', localPort: a.localPort });
  if (!answer.ok) throw new Error(answer.reason);
  const accepted = acceptAnswer(answer.answerSdp, offer);
  if (!accepted.ok) throw new Error(accepted.reason);
  await a.start(answer);
  await b.start(accepted);
  return { a, b };
}

describe('media legs in the worker thread', () => {
  it('carries speech both ways exactly, plain and SRTP, and reports what is still queued', async () => {
    const hello = toInt16(asteriskAudio('hello-world').samples);
    const cases: Array<[Codec, MediaEncryption, MediaEncryption]> = [
      ['PCMU', 'allow', 'disable'],
      ['PCMA', 'require', 'require'],
    ];
    await Promise.all(
      cases.map(async ([codec, oursPolicy, theirsPolicy]) => {
        const { a, b } = await connect({ ours: oursPolicy, theirs: theirsPolicy, codecs: [codec] });
        const heard: Int16Array[] = [];
        const heardByUs: Int16Array[] = [];
        b.onAudio = (f) => heard.push(f);
        a.onAudio = (f) => heardByUs.push(f);
        a.send(hello);
        b.send(hello.subarray(0, 4000));
        expect(a.queuedMs()).toBeCloseTo(hello.length / 8, 0);
        await sleep(300);
        const midway = a.queuedMs();
        expect(midway).toBeGreaterThan(0);
        expect(midway).toBeLessThan(hello.length / 8 - 200); // the worker's progress reaches us while it sends
        await waitFor(() => a.queuedMs() === 0 && heard.length * 160 > hello.length + 8000, 6000);
        const padded = new Int16Array(Math.ceil(hello.length / 160) * 160);
        padded.set(hello);
        expect(findExact(concat(heard), g711RoundTrip(padded, codec))).toBeGreaterThanOrEqual(0);
        expect(findExact(concat(heardByUs), g711RoundTrip(hello.subarray(0, 4000), codec))).toBeGreaterThanOrEqual(0);
        expect(heardByUs.every((f) => f.length === 160)).toBe(true);
        const stats = await a.finish();
        expect(a.isClosed).toBe(true);
        expect(stats).toMatchObject({ latched: true, srtpFailures: 0, malformed: 0, lost: 0, skippedTicks: 0 });
        expect(stats.packetsOut).toBeGreaterThan(hello.length / 160);
        expect(stats.packetsIn).toBeGreaterThan(4000 / 160);
        expect(await a.finish()).toBe(stats); // twice: the same answer
      }),
    );
    // Those packets left through the send pool (the default): its sender threads run, one per CPU up to two.
    expect(worker.sending?.senders).toBe(Math.min(2, os.availableParallelism()));
    expect(worker.sending?.sendersReason).toBeUndefined();
  });

  it('without the send pool (PARLEY_RTP_SENDERS=0) the media thread sends, and the speech arrives the same', async () => {
    const direct = new MediaWorker({ min: 42860, max: 42879 }, 'latency', { senders: 0, leadMs: 10 });
    try {
      const hello = toInt16(asteriskAudio('hello-world').samples).subarray(0, 8000);
      const a = await direct.bind('127.0.0.2');
      const b = await RtpSession.bind({ localAddress: '127.0.0.1', ports: theirs });
      peers.push(b);
      const offer = buildOffer({ encryption: 'disable', localAddress: '127.0.0.1', localPort: b.localPort });
      const answer = negotiate(offer.sdp, { encryption: 'allow', localAddress: '127.0.0.2', localPort: a.localPort });
      if (!answer.ok) throw new Error(answer.reason);
      const accepted = acceptAnswer(answer.answerSdp, offer);
      if (!accepted.ok) throw new Error(accepted.reason);
      await a.start(answer);
      await b.start(accepted);
      expect(direct.sending).toEqual({ senders: 0, senderCpus: [] });
      const heard: Int16Array[] = [];
      b.onAudio = (f) => heard.push(f);
      a.send(hello);
      await waitFor(() => a.queuedMs() === 0 && heard.length * 160 > hello.length + 4000, 6000);
      expect(findExact(concat(heard), g711RoundTrip(hello, 'PCMU'))).toBeGreaterThanOrEqual(0);
      const stats = await a.finish();
      expect(stats.sendErrors).toBe(0);
      expect(stats.sendDeviation.counts.reduce((x, y) => x + y, 0)).toBeGreaterThan(hello.length / 160);
    } finally {
      await direct.close();
    }
  });

  it('sends and receives digits, clears queued audio at once, and counts mid-turn underruns', async () => {
    const { a, b } = await connect();
    const ours: string[] = [];
    const theirsHeard: string[] = [];
    a.onDtmf = (d) => ours.push(d);
    b.onDtmf = (d) => theirsHeard.push(d);
    a.sendDtmf('12#');
    b.sendDtmf('9*');
    expect(() => a.sendDtmf('x')).toThrow(RangeError);
    await waitFor(() => ours.length === 2 && theirsHeard.length === 3, 5000);
    expect(ours).toEqual(['9', '*']);
    expect(theirsHeard).toEqual(['1', '2', '#']);

    a.send(new Int16Array(8000 * 5).fill(3000));
    expect(a.queuedMs()).toBe(5000);
    a.clear();
    expect(a.queuedMs()).toBe(0);
    await sleep(100);
    expect(a.queuedMs()).toBe(0);

    // Speaking with audio that stops for 200 ms and then resumes: a gap the caller hears.
    a.speaking = true;
    a.send(new Int16Array(800).fill(2000));
    await sleep(300);
    a.send(new Int16Array(800).fill(2000));
    await waitFor(() => a.queuedMs() === 0);
    a.speaking = false;
    const stats = await a.finish();
    expect(stats.dtmfOut).toBe(3);
    expect(stats.dtmfIn).toBe(2);
    expect(stats.underrunFrames).toBeGreaterThanOrEqual(8);
    expect(stats.underrunFrames).toBeLessThanOrEqual(14);
  });

  it('paces packets on its own clock: 20 ms apart while the main thread is blocked', async () => {
    const { a, b } = await connect();
    a.send(new Int16Array(8000 * 2).fill(1000));
    await sleep(200);
    const before = b.stats().packetsIn;
    // Block this thread for 300 ms: a main-thread clock would skip ticks; the worker keeps sending.
    const until = performance.now() + 300;
    while (performance.now() < until) {
      // busy
    }
    await sleep(100);
    const stats = await a.finish();
    expect(stats.skippedTicks).toBe(0);
    // 400 ms of ticks, none skipped for the stall (a main-thread clock bursts 3 and skips the rest), none lost.
    expect(b.stats().packetsIn - before).toBeGreaterThanOrEqual(18);
    expect(b.stats()).toMatchObject({ lost: 0, late: 0 });
  });

  it('reports a media timeout once when the peer sends nothing, not while it holds the call', async () => {
    const quiet = async () => {
      const a = await worker.bind('127.0.0.2');
      const answer = negotiate(buildOffer({ encryption: 'disable', localAddress: '127.0.0.1', localPort: 9 }).sdp, { encryption: 'allow', localAddress: '127.0.0.2', localPort: a.localPort });
      if (!answer.ok) throw new Error(answer.reason);
      const fired: number[] = [];
      a.onMediaTimeout = () => fired.push(performance.now());
      await a.start({ ...answer, mediaTimeoutMs: 300 });
      return { a, fired, started: performance.now() };
    };
    const silent = await quiet();
    const held = await quiet();
    held.a.peerSending = false;
    await sleep(900);
    expect(silent.fired).toHaveLength(1); // once, not on every tick after
    expect(silent.fired[0]! - silent.started).toBeGreaterThanOrEqual(280);
    expect(silent.fired[0]! - silent.started).toBeLessThan(1000);
    expect(held.fired).toHaveLength(0);
    const resumed = performance.now();
    held.a.peerSending = true; // the hold ends: the timeout counts from now
    await waitFor(() => held.fired.length === 1, 2000);
    expect(held.fired[0]! - resumed).toBeGreaterThanOrEqual(280);
    await Promise.all([silent.a.finish(), held.a.finish()]);
  });

  it('refuses a bind when every port is taken, and keeps working after', async () => {
    const tiny = new MediaWorker({ min: 42800, max: 42801 });
    try {
      const first = await tiny.bind('127.0.0.2');
      await expect(tiny.bind('127.0.0.2')).rejects.toThrow(/no free RTP port/);
      await first.finish();
      const again = await tiny.bind('127.0.0.2');
      expect(again.localPort).toBe(42800);
      await again.finish();
    } finally {
      await tiny.close();
    }
  });
});

/** Threads of this process under SCHED_RR (field 41 of /proc/self/task/<tid>/stat is the policy: 2 is SCHED_RR). */
function roundRobinThreads(): string[] {
  return readdirSync('/proc/self/task').filter((tid) => {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38] === '2';
    } catch {
      return false; // the thread ended meanwhile
    }
  });
}

describe('the media thread priority (PARLEY_MEDIA_PRIORITY)', () => {
  it('puts the media worker thread and its RTP sender threads alone under SCHED_RR where the process may, and leaves them normal when asked to', async () => {
    const before = roundRobinThreads();
    const normal = new MediaWorker({ min: 42800, max: 42819 }, 'normal');
    const realtime = new MediaWorker({ min: 42820, max: 42839 }, 'realtime');
    try {
      await normal.start();
      expect(normal.priority).toEqual({ priority: 'normal' });
      expect(roundRobinThreads()).toEqual(before);
      await realtime.start();
      if (canRunRealtime()) {
        expect(realtime.priority).toEqual({ priority: 'realtime' });
        const added = roundRobinThreads().filter((t) => !before.includes(t));
        // The worker's thread and its send pool's sender threads, not the process's main thread.
        expect(added).toHaveLength(1 + realtime.sending!.senders);
        expect(added).not.toContain(String(process.pid));
      } else {
        // Not permitted here: it says why and runs at normal priority.
        expect(realtime.priority?.priority).toBe('normal');
        expect(realtime.priority?.reason).toBeTruthy();
        expect(roundRobinThreads()).toEqual(before);
      }
      // Either way it carries calls.
      const leg = await realtime.bind('127.0.0.2');
      expect(leg.localPort).toBeGreaterThanOrEqual(42820);
      await leg.finish();
    } finally {
      await normal.close();
      await realtime.close();
    }
  });

  it('gives the media worker thread and its RTP sender threads alone a 0.1 ms EEVDF time slice by default (latency), their nice value kept', async () => {
    const before = shortSliceThreads(); // the other workers of this file, made with the default too
    const worker = new MediaWorker({ min: 42840, max: 42859 });
    try {
      await worker.start();
      if (kernelHasCustomSlices()) {
        expect(worker.priority).toEqual({ priority: 'latency' });
        const added = shortSliceThreads().filter((t) => !before.includes(t));
        // The worker's thread and its send pool's sender threads, not the process's main thread.
        expect(worker.sending!.senders).toBeGreaterThanOrEqual(1);
        expect(added).toHaveLength(1 + worker.sending!.senders);
        expect(added).not.toContain(String(process.pid));
        for (const tid of added) expect(niceOf(tid)).toBe(niceOf(String(process.pid)));
        expect(sliceOf(String(process.pid))).not.toBe(MEDIA_SLICE_NS);
      } else {
        // A kernel before 6.12 takes the call and ignores the slice: it says so and runs at normal priority.
        expect(worker.priority?.priority).toBe('normal');
        expect(worker.priority?.reason).toMatch(/custom time slices/);
        expect(shortSliceThreads()).toEqual(before);
      }
      const leg = await worker.bind('127.0.0.2');
      expect(leg.localPort).toBeGreaterThanOrEqual(42840);
      await leg.finish();
    } finally {
      await worker.close();
    }
    await waitFor(() => shortSliceThreads().length === before.length, 3000); // the threads are gone with the worker
    expect(shortSliceThreads()).toEqual(before);
  });
});

/** The kernel's EEVDF time slice of one of this process's threads (se.slice in /proc/self/task/<tid>/sched), in ns. */
function sliceOf(tid: string): number | null {
  try {
    const m = /^se\.slice\s*:\s*(\d+)/m.exec(readFileSync(`/proc/self/task/${tid}/sched`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null; // the thread ended meanwhile
  }
}

/** Threads of this process with the media thread's slice. */
function shortSliceThreads(): string[] {
  return readdirSync('/proc/self/task').filter((tid) => sliceOf(tid) === MEDIA_SLICE_NS);
}

/** A thread's nice value (field 19 of its stat). */
function niceOf(tid: string): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

/** Custom slices came with Linux 6.12. */
function kernelHasCustomSlices(): boolean {
  const [major, minor] = os.release().split('.').map((n) => Number.parseInt(n, 10));
  return major! > 6 || (major === 6 && minor! >= 12);
}
