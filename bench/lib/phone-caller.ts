// A phone caller for the benches: this process speaking SIP over UDP (INVITE with a PCMU offer, ACK, BYE; through
// test/support/rtp-sip-peer.ts) and RTP, one 20 ms PCMU packet per tick of a shared drift-corrected clock (silence, or
// queued speech), and the server's packets timed at arrival (voiced = any payload byte that is not G.711 silence).
// Used by bench/telephony.ts and bench/lib/barge-in.ts.
import dgram from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { linearToMuLaw } from '../../engine/audio/g711.js';
import type { TurnMetrics } from '../../engine/agent/session.js';
import { PEER_HOST, STACK_HOST } from '../../test/support/sip-peers.js';
import { sipCall, type SipCall } from '../../test/support/rtp-sip-peer.js';

/** The number the benches' inbound trunk answers (bench/telephony.ts). */
export const NUMBER = '+15550100';
/** G.711 mu-law silence (a linear 0). */
export const SILENCE = linearToMuLaw(0);
export const FRAME_MS = 20;
/** The agent's turn has ended after this much silence following its audio. */
export const TURN_END_SILENCE_MS = 700;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const r1 = (x: number) => Math.round(x * 10) / 10;

/** One clock for every phone caller: each gets a tick per 20 ms, caught up after timer drift. */
class MediaClock {
  private readonly members = new Set<{ tick: () => void; start: number; sent: number }>();
  private timer: NodeJS.Timeout | null = null;

  add(tick: () => void): () => void {
    const m = { tick, start: performance.now(), sent: 0 };
    this.members.add(m);
    if (!this.timer) this.loop();
    return () => {
      this.members.delete(m);
      if (!this.members.size && this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
      }
    };
  }

  private loop(): void {
    const now = performance.now();
    for (const m of this.members) {
      const due = Math.floor((now - m.start) / FRAME_MS) + 1;
      for (; m.sent < due; m.sent++) m.tick();
    }
    this.timer = setTimeout(() => this.loop(), 5);
  }
}
const clock = new MediaClock();

export interface CallResult {
  setupMs: number | null;
  v2vMs: number[];
  turnsDone: number;
  /** |inter-arrival - 20 ms| of the server's packets: deviations[i] is between arrivals[i] and arrivals[i + 1]. */
  deviations: number[];
  arrivals: number[];
  callId: string | null;
  metrics: TurnMetrics[];
  error?: string;
}

export class PhoneCaller {
  private readonly rtp = dgram.createSocket('udp4');
  private call: SipCall | null = null;
  private seq = Math.floor(Math.random() * 0xffff);
  private timestamp = Math.floor(Math.random() * 0xffffffff);
  private readonly ssrc = randomBytes(4).readUInt32BE(0);
  private speechQueue: Buffer | null = null;
  private speechEndAt = 0;
  private lastArrival = 0;
  private lastVoiceAt = 0;
  private voiceWaiter: { after: number; resolve: (at: number) => void } | null = null;
  private stopClock: (() => void) | null = null;
  private remote: { address: string; port: number } | null = null;
  readonly result: CallResult = { setupMs: null, v2vMs: [], turnsDone: 0, deviations: [], arrivals: [], callId: null, metrics: [] };
  /** Sees every packet this caller sends: its send time and whether it carried queued speech. */
  onSend: ((at: number, speech: boolean) => void) | null = null;
  /** Sees every PCMU packet from the server: its arrival time, its payload and whether it was voiced. */
  onReceive: ((at: number, payload: Buffer, voiced: boolean) => void) | null = null;

  /** Calls `number` (default the benches' NUMBER) at the server's SIP port. */
  async dial(sipPort: number, number = NUMBER): Promise<void> {
    await new Promise<void>((r) => this.rtp.bind(0, PEER_HOST, () => r()));
    this.rtp.on('message', (msg) => this.receive(msg));
    const sdp = [
      'v=0', `o=- 1 1 IN IP4 ${PEER_HOST}`, 's=-', `c=IN IP4 ${PEER_HOST}`, 't=0 0', `m=audio ${this.rtp.address().port} RTP/AVP 0 101`,
      'a=rtpmap:0 PCMU/8000', 'a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-15', 'a=ptime:20', 'a=sendrecv', '',
    ].join('\r\n');
    const t0 = performance.now();
    this.call = await sipCall({ host: STACK_HOST, port: sipPort, localAddress: PEER_HOST, sdp, user: number.slice(1), timeoutMs: 30_000 });
    this.result.setupMs = r1(performance.now() - t0);
    if (this.call.status !== 200) throw new Error(`INVITE answered ${this.call.status}`);
    const c = /^c=IN IP4 (\S+)/m.exec(this.call.answerSdp)?.[1];
    const m = /^m=audio (\d+)/m.exec(this.call.answerSdp)?.[1];
    if (!c || !m) throw new Error('no audio in the answer');
    this.remote = { address: c, port: Number(m) };
    this.stopClock = clock.add(() => this.sendFrame());
  }

  /** Speaks `ulaw` (8 kHz mu-law bytes); resolves when its speech has ended at real-time pace. */
  async say(ulaw: Buffer): Promise<number> {
    this.speechQueue = ulaw;
    while (this.speechQueue) await sleep(5);
    const wait = this.speechEndAt - performance.now();
    if (wait > 0) await sleep(wait);
    return this.speechEndAt;
  }

  /** The arrival time of the first agent audio packet after `after`. */
  firstVoiceAfter(after: number, timeoutMs = 60_000): Promise<number> {
    if (this.lastVoiceAt > after) return Promise.resolve(this.lastVoiceAt);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no agent audio')), timeoutMs);
      this.voiceWaiter = { after, resolve: (at) => (clearTimeout(timer), resolve(at)) };
    });
  }

  /** Resolves once the agent has been silent TURN_END_SILENCE_MS after speaking. */
  async turnEnd(timeoutMs = 60_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (performance.now() - this.lastVoiceAt < TURN_END_SILENCE_MS) {
      if (performance.now() > deadline) throw new Error('the agent did not finish its turn');
      await sleep(50);
    }
  }

  async hangUp(): Promise<void> {
    this.stopClock?.();
    this.speechQueue = null; // a say() still waiting for its speech to be sent returns
    if (this.call) await this.call.bye().catch(() => 408);
    this.call?.close();
    this.rtp.close();
  }

  private sendFrame(): void {
    if (!this.remote) return;
    let payload: Buffer;
    const queued = this.speechQueue;
    if (queued) {
      payload = Buffer.alloc(160, SILENCE);
      queued.copy(payload, 0, 0, Math.min(160, queued.length));
      if (queued.length <= 160) {
        this.speechQueue = null;
        this.speechEndAt = performance.now() + (queued.length / 8000) * 1000;
      } else this.speechQueue = queued.subarray(160);
    } else payload = Buffer.alloc(160, SILENCE);
    const header = Buffer.alloc(12);
    header[0] = 0x80;
    header[1] = 0;
    header.writeUInt16BE(this.seq, 2);
    header.writeUInt32BE(this.timestamp >>> 0, 4);
    header.writeUInt32BE(this.ssrc, 8);
    this.seq = (this.seq + 1) & 0xffff;
    this.timestamp = (this.timestamp + 160) >>> 0;
    this.rtp.send(Buffer.concat([header, payload]), this.remote.port, this.remote.address);
    this.onSend?.(performance.now(), queued !== null);
  }

  private receive(msg: Buffer): void {
    if (msg.length < 12 || (msg[1]! & 0x7f) !== 0) return;
    const at = performance.now();
    if (this.lastArrival) this.result.deviations.push(Math.abs(at - this.lastArrival - FRAME_MS));
    this.lastArrival = at;
    this.result.arrivals.push(at);
    const start = 12 + (msg[0]! & 0x0f) * 4 + (msg[0]! & 0x10 ? 4 + msg.readUInt16BE(12 + (msg[0]! & 0x0f) * 4 + 2) * 4 : 0);
    let voiced = false;
    for (let i = start; i < msg.length && !voiced; i++) voiced = msg[i] !== SILENCE;
    this.onReceive?.(at, msg.subarray(start), voiced);
    if (!voiced) return;
    this.lastVoiceAt = at;
    const w = this.voiceWaiter;
    if (w && at > w.after) {
      this.voiceWaiter = null;
      w.resolve(at);
    }
  }
}
