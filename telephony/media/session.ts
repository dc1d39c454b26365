// RtpSession: one call's media leg. A UDP socket on an allocated port, symmetric latching, G.711 in through the jitter
// buffer as 8 kHz 20 ms frames (onAudio), RFC 4733 digits (onDtmf), agent audio out on the 20 ms send clock, SRTP when
// negotiated, optional RNNoise on the caller's audio.
//
// Use: `const media = await RtpSession.bind({ localAddress })`, answer with `media.localPort`, then `await media.start(params)`
// with what negotiate()/acceptAnswer() agreed. Output: send(pcm) queues 8 kHz audio of any length, one packet leaves per
// tick; with nothing queued we send G.711 silence, so the RTP timestamp runs on continuously, NAT bindings and carriers'
// RTP-timeout checks stay happy. After a stall beyond the clock's burst limit the skipped ticks leave a timestamp gap
// (marker bit on the next packet), and the queued audio is not dropped.
import { randomInt } from 'node:crypto';
import type dgram from 'node:dgram';
import { ALAW_TO_LINEAR, MULAW_TO_LINEAR, linearToALaw, linearToMuLaw } from '../../engine/audio/g711.js';
import { SendClock } from './clock.js';
import { NoiseSuppressor } from './denoise.js';
import { DtmfReceiver, dtmfPackets, isDtmfString, type DtmfPacketPlan } from './dtmf.js';
import { JitterBuffer, type JitterStats } from './jitter.js';
import { FrameQueue } from './outqueue.js';
import { rtpPorts, type BoundPort, type PortAllocator } from './ports.js';
import { refusedMediaAddress } from './media-address.js';
import { decodeRtp, encodeRtp, isRtcp } from './rtp.js';
import type { MediaParams } from './sdp.js';
import { FLAG_RESUMED, RESULT_DROPPED, monoMs, type PoolLane, type SendPool } from './sendpool.js';
import { SrtpTransform } from './srtp.js';

export const SAMPLE_RATE = 8000;
export const FRAME_SAMPLES = 160;
/**
 * Upper bounds (ms) of the buckets counting how far each interval between two packets sent differs from 20 ms
 * (RtpSessionStats.sendDeviation; the metric parley_rtp_send_interval_deviation_seconds). The last bucket is open.
 */
export const SEND_DEVIATION_BOUNDS_MS = [0.25, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 8, 10, 15, 20, 40] as const;

/** Milliseconds of audio in one frame (and between two ticks of the send clock). */
const FRAME_MS = (FRAME_SAMPLES * 1000) / SAMPLE_RATE;
/** Longest packet accepted (samples): 240 ms of G.711. */
const MAX_PACKET_SAMPLES = 1920;
/** A latched peer silent this long may be replaced by a new source (it moved: NAT rebinding, a re-INVITE). */
const RELATCH_AFTER_MS = 2000;
/** Packets of the negotiated payload from one source, none with the SSRC the SDP announced, after which we latch anyway
 * (an SBC that rewrites SSRCs but passes a=ssrc through would otherwise leave the call silent). */
const SSRC_MISMATCH_LATCH = 50;
/** Ticks of audio between two sent digits. */
const DTMF_GAP_TICKS = 3;
/** A pooled packet this overdue that no sender thread has sent yet is sent by the media thread itself (ms). */
const BACKSTOP_MS = 2;
/** Most caller frames played out at one wake-up (after a long stall the rest is silence nobody needs). */
const MAX_PLAYOUT_BURST = 50;

/** Runs a consumer callback; its error goes to `onError`, or is rethrown outside the media code when there is none. */
export function deliverTo(fn: () => void, onError: ((err: Error) => void) | null): void {
  try {
    fn();
  } catch (err) {
    if (onError) onError(err as Error);
    else queueMicrotask(() => {
      throw err;
    });
  }
}

export interface RtpSessionBindOptions {
  /** Address the socket binds to. */
  localAddress: string;
  /** Port allocator (the process-wide one over PARLEY_RTP_PORTS by default). */
  ports?: PortAllocator;
  /**
   * The send pool (sendpool.ts): packets are built `leadMs` ahead of their time and sent by the first of its sender
   * threads (or this thread) to reach that time. Without it this thread sends each packet when its tick wakes it.
   */
  pool?: { pool: SendPool; leadMs: number } | null;
}

export type RtpStartParams = Pick<MediaParams, 'codec' | 'payloadType' | 'dtmfPayloadType' | 'remote' | 'srtp'> &
  Partial<Pick<MediaParams, 'remoteSsrc' | 'direction'>> & {
    /** RNNoise on the caller's audio before it is emitted. */
    noiseSuppression?: boolean;
    /**
     * How long a missing caller packet is waited for before it is concealed (40 ms). Audio that arrives in sequence goes
     * to onAudio at once: recognition wants it early, not smoothed for a loudspeaker.
     */
    jitterDepthMs?: number;
    /**
     * No caller RTP for this long while the peer is meant to be sending: onMediaTimeout (once). 0 or absent: never.
     * Counts from start() and from each packet; a peer on hold (it does not send) is not timed.
     */
    mediaTimeoutMs?: number;
  };

export interface RtpSessionStats extends JitterStats {
  packetsIn: number;
  packetsOut: number;
  bytesIn: number;
  bytesOut: number;
  /** Datagrams that were not RTP, or had an unusable payload. */
  malformed: number;
  /** SRTP packets that failed authentication. */
  srtpFailures: number;
  /** RTP with another payload type (comfort noise, ...), or from another source than the latched one. */
  ignored: number;
  rtcpIn: number;
  dtmfIn: number;
  dtmfOut: number;
  sendErrors: number;
  /**
   * Silence frames sent while the agent was speaking because its audio was not there in time, counted once the audio
   * resumed in the same turn: a gap the caller hears (output behind real time). The queue running dry at the end of
   * a turn is not one.
   */
  underrunFrames: number;
  /** Send-clock ticks skipped after stalls. */
  skippedTicks: number;
  /**
   * How far each interval between two packets sent (timed at the send call, on the thread that sends) was from 20 ms:
   * the send clock's own timing, without the network's or the receiver's. `counts` per SEND_DEVIATION_BOUNDS_MS
   * bucket (and one more, past the last bound), `sumMs` of all of them.
   */
  sendDeviation: { counts: number[]; sumMs: number };
  latched: boolean;
  /** performance.now() of the last accepted packet, or null. */
  lastPacketAt: number | null;
}

export class RtpSession {
  onAudio: ((frame: Int16Array) => void) | null = null;
  onDtmf: ((digit: string) => void) | null = null;
  onError: ((err: Error) => void) | null = null;
  /**
   * After a send-clock wake-up that took agent audio from the queue: the samples ever taken out or dropped by clear()
   * (with the samples ever given to send(), what is still queued). The media worker reports it to the main thread.
   */
  onConsumed: ((samples: number) => void) | null = null;
  /** No caller RTP for the start params' mediaTimeoutMs while the peer was meant to be sending (called once). */
  onMediaTimeout: (() => void) | null = null;

  private params: RtpStartParams | null = null;
  private srtp: SrtpTransform | null = null;
  private jitter = new JitterBuffer();
  private denoiser: NoiseSuppressor | null = null;
  private readonly dtmfIn = new DtmfReceiver();
  private readonly clock = new SendClock((due, skipped) => this.tick(due, skipped), { aligned: true });
  private dest: { address: string; port: number } | null = null;
  private latched = false;
  private mismatch = { source: '', count: 0 };
  private streamSsrc: number | null = null;
  private closed = false;

  private readonly ssrc = randomInt(0, 2 ** 32);
  private seq = randomInt(0, 2 ** 16);
  private timestamp = randomInt(0, 2 ** 32);
  private marker = true;
  private silence: Buffer = Buffer.alloc(FRAME_SAMPLES);

  private readonly out = new FrameQueue(FRAME_SAMPLES);

  private dtmfQueue: string[] = [];
  private dtmfOut: { plan: DtmfPacketPlan[]; index: number; tick: number; timestamp: number } | null = null;
  private dtmfGap = 0;

  private readonly sendDeviation = { counts: new Array<number>(SEND_DEVIATION_BOUNDS_MS.length + 1).fill(0), sumMs: 0 };
  private lastSendAt: number | null = null;
  /** This call's lane in the send pool, and how far ahead packets are built; null: this thread sends. */
  private lane: PoolLane | null = null;
  private leadMs = 0;
  /** When the packets of this wake-up are due (monoMs scale), with the pool. */
  private sendTarget = 0;
  /** Sending paused (hold) since the last packet: the next interval is not the clock's. */
  private resumed = false;

  private readonly counters = {
    packetsIn: 0, packetsOut: 0, bytesIn: 0, bytesOut: 0, malformed: 0, srtpFailures: 0, ignored: 0, rtcpIn: 0, dtmfIn: 0, dtmfOut: 0, sendErrors: 0, underrunFrames: 0,
  };
  private speakingNow = false;
  private holding = false;
  /** Whether the current turn's first audio has been queued. */
  private turnAudio = false;
  /** Caller frames handed to onAudio, and when the first was (the playout clock's origin). */
  private played = 0;
  private playoutStart: number | null = null;
  private depthFrames = 2;
  /** Silence frames sent since the agent's queued audio ran dry while speaking. */
  private dryFrames = 0;
  private lastPacketAt: number | null = null;
  /** Whether the peer's SDP says it sends (not on hold), and since when the media timeout counts. */
  private peerSends = true;
  private quietSince = 0;
  private timedOut = false;

  private constructor(
    private readonly bound: BoundPort,
    readonly localAddress: string,
    pool: RtpSessionBindOptions['pool'],
  ) {
    bound.socket.on('message', (msg, rinfo) => this.receive(msg, rinfo));
    bound.socket.on('error', (err) => this.onError?.(err));
    if (pool) {
      this.lane = pool.pool.open(bound.socket, (at, result, flags) => {
        if (result === RESULT_DROPPED) return; // dropped unsent at a barge-in: not a send
        if (result < 0) this.counters.sendErrors++;
        this.sent(at, flags);
      });
      this.leadMs = pool.leadMs;
    }
  }

  /** Binds a socket on a free even port; the port goes in the SDP before start(). */
  static async bind(options: RtpSessionBindOptions): Promise<RtpSession> {
    const bound = await (options.ports ?? rtpPorts()).bind(options.localAddress);
    return new RtpSession(bound, options.localAddress, options.pool);
  }

  get localPort(): number {
    return this.bound.port;
  }

  /** Where packets go now: the latched source once the peer's RTP has arrived, the SDP address before. */
  get remote(): { address: string; port: number } | null {
    return this.dest ? { ...this.dest } : null;
  }

  get started(): boolean {
    return this.params !== null;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Starts media with the negotiated parameters: the send clock runs and received RTP is played out. */
  async start(params: RtpStartParams): Promise<void> {
    if (this.closed) throw new Error('RTP session closed');
    if (this.params) throw new Error('RTP session already started');
    const srtp = params.srtp ? new SrtpTransform(params.srtp) : null;
    const denoiser = params.noiseSuppression ? await NoiseSuppressor.create({ sampleRate: SAMPLE_RATE, frameSamples: FRAME_SAMPLES }) : null;
    if (this.closed) {
      denoiser?.destroy();
      return;
    }
    this.srtp = srtp;
    this.denoiser = denoiser;
    const depthMs = params.jitterDepthMs ?? 40;
    this.jitter = new JitterBuffer({ depthMs, frameSamples: FRAME_SAMPLES, sampleRate: SAMPLE_RATE });
    this.depthFrames = Math.ceil(depthMs / FRAME_MS);
    this.silence = Buffer.alloc(FRAME_SAMPLES, params.codec === 'PCMU' ? linearToMuLaw(0) : linearToALaw(0));
    this.dest = { address: params.remote.address, port: params.remote.port };
    this.params = params;
    this.peerSends = (params.direction ?? 'sendrecv') === 'sendrecv'; // a call answered on hold is not timed
    this.quietSince = performance.now();
    this.clock.start();
  }

  /** Queues 8 kHz agent audio of any length; it leaves in 20 ms packets, one per tick. */
  send(pcm: Int16Array): void {
    if (this.closed) return;
    this.out.push(pcm);
    if (pcm.length === 0) return;
    this.turnAudio = true;
    if (this.dryFrames > 0) {
      this.counters.underrunFrames += this.dryFrames;
      this.dryFrames = 0;
    }
  }

  /**
   * Whether the agent is speaking now (its turn's audio is still coming): silence sent then is an underrun. A turn
   * starts with its first audio: ticks between this and the first send() are not counted (on the media worker, the
   * two messages can arrive a tick apart).
   */
  set speaking(on: boolean) {
    this.speakingNow = on;
    this.turnAudio = false;
    this.dryFrames = 0;
  }

  /**
   * Whether the peer is meant to be sending now, from its latest SDP: `sendrecv`. A peer holding the call (`sendonly`,
   * `recvonly` or `inactive`) may send nothing and is not timed out; when it resumes, the media timeout counts from then.
   */
  set peerSending(on: boolean) {
    if (on && !this.peerSends) this.quietSince = performance.now();
    this.peerSends = on;
  }

  /**
   * Holds the agent's audio (a barge-in being confirmed): nothing more is taken from the queue (silence goes out) and
   * packets already built ahead for the send pool are dropped, so the caller stops hearing the agent at once; off,
   * the queue plays on from where it stopped.
   */
  hold(on: boolean): void {
    this.holding = on;
    if (on) this.lane?.drop();
  }

  /** Drops queued agent audio (barge-in). */
  clear(): void {
    this.out.clear();
  }

  /** Agent audio queued and not yet sent, in milliseconds. */
  queuedMs(): number {
    return (this.out.length * 1000) / SAMPLE_RATE;
  }

  /** Queues DTMF digits as RFC 4733 events (100 ms each, 60 ms apart); queued audio waits until the last one is sent. */
  sendDtmf(digits: string): void {
    if (!isDtmfString(digits)) throw new RangeError(`not DTMF digits: ${JSON.stringify(digits)}`);
    if (!this.params) throw new Error('RTP session not started');
    if (this.params.dtmfPayloadType === null) throw new Error('the peer did not negotiate telephone-event');
    this.dtmfQueue.push(...digits);
  }

  stats(): RtpSessionStats {
    return {
      ...this.jitter.stats,
      ...this.counters,
      skippedTicks: this.clock.skipped,
      sendDeviation: { counts: [...this.sendDeviation.counts], sumMs: this.sendDeviation.sumMs },
      latched: this.latched,
      lastPacketAt: this.lastPacketAt,
    };
  }

  /** Closes the session (as close()) and gives its final counters. */
  async finish(): Promise<RtpSessionStats> {
    this.close();
    return this.stats();
  }

  /** Stops the clock, closes the socket and frees the port and the denoiser; safe to call twice. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.clock.stop();
    if (this.lane) {
      this.collectSent();
      this.lane.release(); // before the socket closes: no sender uses its descriptor after this
      this.lane = null;
    }
    this.bound.release();
    this.denoiser?.destroy();
    this.clear();
    this.dtmfQueue = [];
  }

  private receive(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const p = this.params;
    if (!p || this.closed) return;
    this.counters.bytesIn += msg.length;
    if (isRtcp(msg)) {
      this.counters.rtcpIn++;
      return;
    }
    const plain = this.srtp ? this.srtp.unprotect(msg) : msg;
    if (!plain) {
      this.counters.srtpFailures++;
      return;
    }
    const pkt = decodeRtp(plain);
    if (!pkt) {
      this.counters.malformed++;
      return;
    }
    if (pkt.payloadType !== p.payloadType && pkt.payloadType !== p.dtmfPayloadType) {
      this.counters.ignored++;
      return;
    }
    const now = performance.now();
    const fromLatched = this.latched && this.dest!.address === rinfo.address && this.dest!.port === rinfo.port;
    if (!fromLatched && !this.mayLatch(rinfo, pkt.ssrc, now)) {
      this.counters.ignored++;
      return;
    }
    this.counters.packetsIn++;
    this.lastPacketAt = now;
    if (pkt.payloadType === p.dtmfPayloadType) {
      // Event packets take the place of audio packets in the same sequence space: play them as silence, not as losses.
      if (this.streamSsrc === pkt.ssrc) {
        this.jitter.push(pkt.sequence, new Int16Array(FRAME_SAMPLES));
        this.playReady();
      }
      const digit = this.dtmfIn.push(pkt);
      if (digit !== null) {
        this.counters.dtmfIn++;
        this.deliver(() => this.onDtmf?.(digit));
      }
      return;
    }
    const n = pkt.payload.length;
    if (n === 0 || n > MAX_PACKET_SAMPLES) {
      this.counters.malformed++;
      return;
    }
    if (this.streamSsrc !== pkt.ssrc) {
      if (this.streamSsrc !== null) this.jitter.reset(); // a new stream from the peer: a new sequence space
      this.streamSsrc = pkt.ssrc;
    }
    const table = p.codec === 'PCMU' ? MULAW_TO_LINEAR : ALAW_TO_LINEAR;
    const pcm = new Int16Array(n);
    for (let i = 0; i < n; i++) pcm[i] = table[pkt.payload[i]!]!;
    this.jitter.push(pkt.sequence, pcm);
    this.playReady();
  }

  /**
   * Symmetric latching (RFC 4961 style): the first packet of the negotiated stream (payload type, and the a=ssrc SSRC when
   * the SDP gave one) latches its source, and we send there from then on. Another source takes over only once the latched
   * one has been quiet for RELATCH_AFTER_MS; until then its packets are ignored (no injection, no bleed from old calls).
   * A source no SDP may name (link-local, cloud metadata, multicast: a forged source address) is never latched.
   */
  private mayLatch(from: dgram.RemoteInfo, ssrc: number, now: number): boolean {
    if (this.latched && this.lastPacketAt !== null && now - this.lastPacketAt <= RELATCH_AFTER_MS) return false;
    if (refusedMediaAddress(from.address) !== null) return false;
    const expected = this.params!.remoteSsrc ?? null;
    if (!this.latched && expected !== null && ssrc !== expected) {
      const source = `${from.address}|${from.port}`;
      if (this.mismatch.source !== source) this.mismatch = { source, count: 0 };
      if (++this.mismatch.count < SSRC_MISMATCH_LATCH) return false;
    }
    this.latched = true;
    this.dest = { address: from.address, port: from.port };
    return true;
  }

  private tick(due: number, skipped: number): void {
    if (skipped > 0) {
      this.timestamp = (this.timestamp + skipped * FRAME_SAMPLES) >>> 0;
      this.marker = true;
    }
    this.playOverdue();
    this.checkMediaTimeout();
    const consumed = this.out.consumed;
    if (this.lane) {
      this.lane.backstop(BACKSTOP_MS);
      this.collectSent();
    }
    const first = this.clock.ticks - due; // the first of this wake-up's ticks
    const toMono = monoMs() - performance.now();
    for (let i = 0; i < due && !this.closed; i++) {
      this.sendTarget = this.clock.targetOf(first + i) + toMono + this.leadMs;
      this.sendOne();
    }
    if (this.out.consumed !== consumed) this.onConsumed?.(this.out.consumed);
  }

  private checkMediaTimeout(): void {
    const limit = this.params?.mediaTimeoutMs ?? 0;
    if (limit <= 0 || this.timedOut || !this.peerSends) return;
    const since = Math.max(this.quietSince, this.lastPacketAt ?? 0);
    if (performance.now() - since < limit) return;
    this.timedOut = true;
    this.deliver(() => this.onMediaTimeout?.());
  }

  /** Caller audio that has arrived in sequence, to onAudio now. */
  private playReady(): void {
    for (let frame = this.jitter.pullReady(); frame && !this.closed; frame = this.jitter.pullReady()) this.play(frame);
  }

  /**
   * Frames the playout clock is owed beyond the jitter depth: a packet still missing is concealed, a peer that went
   * quiet (hold, silence suppression) gives silence, so the engine keeps seeing time pass.
   */
  private playOverdue(): void {
    if (this.playoutStart === null) return;
    let owed = Math.floor((performance.now() - this.playoutStart) / FRAME_MS) + 1 - this.depthFrames - this.played;
    if (owed > MAX_PLAYOUT_BURST) {
      this.played += owed - MAX_PLAYOUT_BURST;
      owed = MAX_PLAYOUT_BURST;
    }
    for (; owed > 0 && !this.closed; owed--) {
      const frame = this.jitter.pull();
      if (!frame) return;
      this.play(frame);
    }
  }

  /** One frame of the caller's audio, to onAudio. */
  private play(pcm: Int16Array): void {
    this.playoutStart ??= performance.now();
    this.played++;
    const frame = this.denoiser ? this.denoiser.process(pcm) : pcm;
    this.deliver(() => this.onAudio?.(frame));
  }

  /** Runs a consumer callback (see deliverTo). */
  private deliver(fn: () => void): void {
    deliverTo(fn, this.onError);
  }

  /** One packet: a DTMF event packet, the next 20 ms of queued audio, or silence. */
  private sendOne(): void {
    const p = this.params!;
    const ts = this.timestamp;
    this.timestamp = (ts + FRAME_SAMPLES) >>> 0;
    if (!this.dtmfOut && this.dtmfGap === 0 && this.dtmfQueue.length > 0) {
      this.dtmfOut = { plan: dtmfPackets(this.dtmfQueue.shift()!), index: 0, tick: 0, timestamp: ts };
    }
    const d = this.dtmfOut;
    if (d) {
      while (d.index < d.plan.length && d.plan[d.index]!.tick === d.tick) {
        const e = d.plan[d.index++]!;
        this.transmit({ marker: e.marker, payloadType: p.dtmfPayloadType!, timestamp: d.timestamp, payload: e.payload });
      }
      d.tick++;
      if (d.index === d.plan.length) {
        this.dtmfOut = null;
        this.dtmfGap = DTMF_GAP_TICKS;
        this.counters.dtmfOut++;
      }
      return;
    }
    // Between queued digits only silence goes out; the agent's audio resumes after the last one.
    const betweenDigits = this.dtmfGap > 0 && this.dtmfQueue.length > 0;
    if (this.dtmfGap > 0) this.dtmfGap--;
    const frame = betweenDigits || this.holding ? null : this.out.take();
    let payload = this.silence;
    if (!frame && this.speakingNow && this.turnAudio && !betweenDigits && !this.holding) this.dryFrames++;
    if (frame) {
      const encode = p.codec === 'PCMU' ? linearToMuLaw : linearToALaw;
      payload = Buffer.allocUnsafe(FRAME_SAMPLES);
      for (let i = 0; i < FRAME_SAMPLES; i++) payload[i] = encode(frame[i]!);
    }
    this.transmit({ marker: this.marker, payloadType: p.payloadType, timestamp: ts, payload });
    this.marker = false;
  }

  private transmit(fields: { marker: boolean; payloadType: number; timestamp: number; payload: Buffer }): void {
    const direction = this.params!.direction ?? 'sendrecv';
    const dest = this.dest;
    if (direction === 'recvonly' || direction === 'inactive' || !dest || dest.port === 0 || dest.address === '0.0.0.0' || dest.address === '::') {
      this.resumed = true; // a pause in sending (hold) is not the clock's deviation
      return;
    }
    let packet = encodeRtp({ ...fields, sequence: this.seq, ssrc: this.ssrc });
    this.seq = (this.seq + 1) & 0xffff;
    if (this.srtp) packet = this.srtp.protect(packet);
    this.counters.packetsOut++;
    this.counters.bytesOut += packet.length;
    const flags = this.resumed ? FLAG_RESUMED : 0;
    this.resumed = false;
    if (this.lane?.publish(packet, dest.address, dest.port, this.sendTarget, flags)) return;
    // This thread sends: now (without the pool), or at once when the pool could not take it, after what the pool
    // still holds of this call (sent first, so the order holds).
    if (this.lane) {
      this.lane.flush();
      this.collectSent();
    }
    this.sent(monoMs(), flags);
    this.bound.socket.send(packet, dest.port, dest.address, (err) => {
      if (err) this.counters.sendErrors++;
    });
  }

  /** Counts a packet's send time into the send deviation (`at` on the scale of the previous one). */
  private sent(at: number, flags: number): void {
    if (flags & FLAG_RESUMED) this.lastSendAt = null;
    if (this.lastSendAt !== null) {
      const deviation = Math.abs(at - this.lastSendAt - FRAME_MS);
      this.sendDeviation.counts[deviationBucket(deviation)]!++;
      this.sendDeviation.sumMs += deviation;
    }
    this.lastSendAt = at;
  }

  /** Reads the send times and results of the packets the pool sent since the last call. */
  private collectSent(): void {
    this.lane?.collect();
  }
}

/** The SEND_DEVIATION_BOUNDS_MS bucket of a deviation in ms (the last index: past every bound). */
export function deviationBucket(ms: number): number {
  let i = 0;
  while (i < SEND_DEVIATION_BOUNDS_MS.length && ms > SEND_DEVIATION_BOUNDS_MS[i]!) i++;
  return i;
}
