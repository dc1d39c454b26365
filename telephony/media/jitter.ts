// Jitter buffer for one RTP audio stream: reorders by sequence number (16-bit wrap), drops late packets, conceals a lost
// packet (repeat-and-fade) and hands out exactly one frame per pull. Fixed depth: playout starts once `depthMs` is buffered.
// pullReady() serves a consumer that wants audio as soon as it is in order (speech recognition rather than a loudspeaker):
// it hands out what has arrived in sequence at once, and the consumer's clock calls pull() only for frames overdue by the
// depth, which conceals a packet still missing then.
//
// Packets carry decoded PCM of any length (20 ms from us, 30 ms from some gateways); playout cuts it into frames. Once
// playing, every pull returns a frame: audio, a concealment, or silence while the peer sends nothing (hold, silence
// suppression), so the engine's voice activity detection keeps seeing time pass. After an underrun the buffer refills to
// its depth before playing again (a gap in sequence numbers found then is counted lost, not concealed from stale audio).
// Latency stays near the depth: a backlog held for a whole second (the peer's clock running fast) is dropped at once, and
// one beyond `maxMs` (a burst after a network stall) is dropped immediately; both drop the oldest audio.
import { seqDiff } from './rtp.js';

export interface JitterOptions {
  /** Samples per output frame (160: 20 ms at 8 kHz). */
  frameSamples?: number;
  /** Sample rate, for the millisecond options (8000). */
  sampleRate?: number;
  /** Audio buffered before playout starts or resumes (40 ms). */
  depthMs?: number;
  /** Backlog beyond which the oldest audio is dropped at once (200 ms). */
  maxMs?: number;
}

export interface JitterStats {
  /** Packets accepted into the buffer. */
  received: number;
  /** Frames handed out, of any kind. */
  frames: number;
  /** Sequence numbers never received by their playout time. */
  lost: number;
  /** Packets that arrived after their playout time (dropped). */
  late: number;
  /** Packets already in the buffer (dropped). */
  duplicate: number;
  /** Frames synthesised for lost packets (repeat-and-fade). */
  concealed: number;
  /** Samples dropped to trim a backlog. */
  trimmedSamples: number;
  /** Times the buffer ran dry while playing. */
  underruns: number;
}

/** A jump in sequence numbers this large (either way) means the peer restarted its stream: start over. */
const RESYNC_GAP = 1000;
/** Pulls per drift check (one second of 20 ms frames). */
const DRIFT_WINDOW = 50;

export class JitterBuffer {
  readonly frameSamples: number;
  private readonly depth: number;
  private readonly max: number;
  private readonly packets = new Map<number, Int16Array>();
  private bufferedInPackets = 0;
  private fifo: Int16Array[] = [];
  private fifoOffset = 0;
  private fifoSamples = 0;
  private state: 'idle' | 'playing' | 'refilling' = 'idle';
  private nextSeq = -1;
  private lastLength: number;
  private last: Int16Array;
  private lostRun = 0;
  private minLevel = Infinity;
  private pulls = 0;
  private readonly counters: JitterStats = { received: 0, frames: 0, lost: 0, late: 0, duplicate: 0, concealed: 0, trimmedSamples: 0, underruns: 0 };

  constructor(options: JitterOptions = {}) {
    this.frameSamples = options.frameSamples ?? 160;
    const rate = options.sampleRate ?? 8000;
    this.depth = Math.round(((options.depthMs ?? 40) * rate) / 1000);
    this.max = Math.max(this.depth + this.frameSamples, Math.round(((options.maxMs ?? 200) * rate) / 1000));
    this.lastLength = this.frameSamples;
    this.last = new Int16Array(this.frameSamples);
  }

  get stats(): JitterStats {
    return { ...this.counters };
  }

  /** Samples waiting: played-out remainder plus buffered packets. */
  get bufferedSamples(): number {
    return this.fifoSamples + this.bufferedInPackets;
  }

  /** Adds one packet's PCM; says whether it was kept. */
  push(seq: number, pcm: Int16Array): 'ok' | 'late' | 'duplicate' {
    seq &= 0xffff;
    if (this.nextSeq < 0) this.nextSeq = seq;
    let d = seqDiff(seq, this.nextSeq);
    if (d >= RESYNC_GAP || d <= -RESYNC_GAP) {
      this.restart(seq);
      d = 0;
    }
    if (d < 0) {
      if (this.state !== 'idle') {
        this.counters.late++;
        return 'late';
      }
      this.nextSeq = seq; // reordered before playout started: play it first
    }
    if (this.packets.has(seq)) {
      this.counters.duplicate++;
      return 'duplicate';
    }
    this.packets.set(seq, pcm);
    this.bufferedInPackets += pcm.length;
    this.counters.received++;
    return 'ok';
  }

  /** One frame of playout: null before the first packet has filled the buffer, a frame (audio, concealment or silence) after. */
  pull(): Int16Array | null {
    if (this.state !== 'playing') {
      if (this.bufferedSamples < this.depth) {
        if (this.state === 'idle') return null;
        return this.emit(new Int16Array(this.frameSamples));
      }
      if (this.state === 'refilling') this.skipGap();
      this.state = 'playing';
    }
    this.trim();
    this.checkDrift();
    while (this.fifoSamples < this.frameSamples && !this.refill());
    if (this.fifoSamples < this.frameSamples) {
      // Ran dry: play what is left, fade out the rest, and refill before playing again.
      this.counters.underruns++;
      this.state = 'refilling';
      const out = new Int16Array(this.frameSamples);
      const have = this.fifoSamples;
      this.take(out, have);
      fadeInto(out, have, this.last, 1, 0);
      return this.emit(out);
    }
    const out = new Int16Array(this.frameSamples);
    this.take(out, this.frameSamples);
    return this.emit(out);
  }

  /** The next frame when it can be made of audio already here in sequence (no concealment, no further wait); else null. */
  pullReady(): Int16Array | null {
    // The stream's first packets wait for the depth once, so one that overtook its predecessor still plays in order.
    if (this.state === 'idle' && this.bufferedSamples < this.depth) return null;
    if (this.state === 'refilling') this.skipGap();
    while (this.fifoSamples < this.frameSamples && this.packets.has(this.nextSeq)) this.refill();
    if (this.fifoSamples < this.frameSamples) return null;
    this.state = 'playing';
    const out = new Int16Array(this.frameSamples);
    this.take(out, this.frameSamples);
    return this.emit(out);
  }

  /** Forgets everything (a new stream); counters are kept. */
  reset(): void {
    this.restart(-1);
  }

  private restart(seq: number): void {
    this.packets.clear();
    this.bufferedInPackets = 0;
    this.fifo = [];
    this.fifoOffset = 0;
    this.fifoSamples = 0;
    this.state = 'idle';
    this.nextSeq = seq;
    this.lostRun = 0;
    this.minLevel = Infinity;
    this.pulls = 0;
  }

  /** After an underrun: packets missing before the earliest buffered one are counted lost and skipped, not concealed. */
  private skipGap(): void {
    if (this.packets.has(this.nextSeq) || this.packets.size === 0) return;
    let gap = Infinity;
    for (const seq of this.packets.keys()) gap = Math.min(gap, seqDiff(seq, this.nextSeq));
    this.counters.lost += gap;
    this.nextSeq = (this.nextSeq + gap) & 0xffff;
  }

  /** Drops a backlog that stayed a whole frame above the depth for a whole window. */
  private checkDrift(): void {
    this.minLevel = Math.min(this.minLevel, this.bufferedSamples);
    if (++this.pulls < DRIFT_WINDOW) return;
    const excess = this.minLevel - this.depth;
    this.minLevel = Infinity;
    this.pulls = 0;
    if (excess >= this.frameSamples) this.drop(excess - (excess % this.frameSamples));
  }

  /** Moves the next packet (or a concealment of a lost one) into the fifo; true when nothing more can be added now. */
  private refill(): boolean {
    const pcm = this.packets.get(this.nextSeq);
    if (pcm) {
      this.packets.delete(this.nextSeq);
      this.bufferedInPackets -= pcm.length;
      this.nextSeq = (this.nextSeq + 1) & 0xffff;
      this.append(pcm);
      this.last = pcm;
      this.lastLength = pcm.length;
      this.lostRun = 0;
      return false;
    }
    if (this.packets.size === 0) return true;
    // A later packet is here and this one is not: it is lost. The first lost packet repeats the last one fading from
    // full to half level, the second fades on to zero, longer gaps are silence.
    this.counters.lost++;
    this.nextSeq = (this.nextSeq + 1) & 0xffff;
    const fill = new Int16Array(this.lastLength);
    if (this.lostRun < 2) {
      fadeInto(fill, 0, this.last, this.lostRun === 0 ? 1 : 0.5, this.lostRun === 0 ? 0.5 : 0);
      this.counters.concealed++;
    }
    this.lostRun++;
    this.append(fill);
    return false;
  }

  /** Drops a backlog beyond the maximum, down to the depth. */
  private trim(): void {
    if (this.bufferedSamples <= this.max) return;
    const excess = this.bufferedSamples - this.depth;
    this.drop(excess - (excess % this.frameSamples));
  }

  /** Drops n samples (whole frames) from the front. */
  private drop(excess: number): void {
    this.counters.trimmedSamples += excess;
    while (excess > 0) {
      if (this.fifoSamples === 0 && this.refill()) break;
      const n = Math.min(excess, this.fifoSamples);
      this.take(null, n);
      excess -= n;
    }
  }

  private append(pcm: Int16Array): void {
    this.fifo.push(pcm);
    this.fifoSamples += pcm.length;
  }

  /** Removes n samples from the front of the fifo, copying them into out when given. */
  private take(out: Int16Array | null, n: number): void {
    let o = 0;
    while (o < n) {
      const head = this.fifo[0]!;
      const k = Math.min(n - o, head.length - this.fifoOffset);
      if (out) out.set(head.subarray(this.fifoOffset, this.fifoOffset + k), o);
      o += k;
      this.fifoOffset += k;
      if (this.fifoOffset === head.length) {
        this.fifo.shift();
        this.fifoOffset = 0;
      }
    }
    this.fifoSamples -= n;
  }

  private emit(frame: Int16Array): Int16Array {
    this.counters.frames++;
    return frame;
  }
}

/** Writes src (repeated as needed) into out from `from` to its end, with a gain going linearly from g0 to g1. */
function fadeInto(out: Int16Array, from: number, src: Int16Array, g0: number, g1: number): void {
  const n = out.length - from;
  if (n <= 0 || src.length === 0) return;
  for (let i = 0; i < n; i++) out[from + i] = Math.round(src[i % src.length]! * (g0 + ((g1 - g0) * i) / n));
}
