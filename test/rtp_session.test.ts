// RtpSession over real UDP on loopback: audio both codecs plain and SRTP between two sessions, packet timing and timestamps,
// symmetric latching, reordered/lost/duplicated sox-generated G.711, DTMF, barge-in, noise suppression, garbage, close.
import dgram from 'node:dgram';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MULAW_TO_LINEAR } from '../engine/audio/g711.js';
import { NoiseSuppressor } from '../telephony/media/denoise.js';
import { PortAllocator } from '../telephony/media/ports.js';
import { decodeRtp, encodeRtp, type RtpPacket } from '../telephony/media/rtp.js';
import { acceptAnswer, buildOffer, negotiate, type Codec, type MediaEncryption } from '../telephony/media/sdp.js';
import { RtpSession } from '../telephony/media/session.js';
import { asteriskAudio } from './support/speech.js';
import { concat, findExact, g711RoundTrip, toInt16, waitFor } from './support/pcm-frames.js';

const ours = new PortAllocator({ min: 42000, max: 42199 });
const theirs = new PortAllocator({ min: 42200, max: 42399 });
const sessions: RtpSession[] = [];
const sockets: dgram.Socket[] = [];
const tmp = mkdtempSync(join(tmpdir(), 'rtp-session-'));
afterAll(() => {
  for (const s of sessions) s.close();
  for (const s of sockets) s.close();
  rmSync(tmp, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const speech = (name: string) => toInt16(asteriskAudio(name).samples);
const rms = (x: Int16Array) => Math.sqrt(x.reduce((s, v) => s + v * v, 0) / Math.max(1, x.length));

async function bindSession(localAddress = '127.0.0.2', ports = ours): Promise<RtpSession> {
  const s = await RtpSession.bind({ localAddress, ports });
  sessions.push(s);
  return s;
}

async function rawSocket(address = '127.0.0.1'): Promise<dgram.Socket> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, address, r));
  sockets.push(s);
  return s;
}

/** Our session (127.0.0.2) answering a peer session (127.0.0.1), both started. */
async function connect(o: { ours?: MediaEncryption; theirs?: MediaEncryption; codecs?: Codec[]; noiseSuppression?: boolean } = {}) {
  const a = await bindSession();
  const b = await bindSession('127.0.0.1', theirs);
  const offer = buildOffer({ encryption: o.theirs ?? 'disable', localAddress: '127.0.0.1', localPort: b.localPort, codecs: o.codecs });
  const answer = negotiate(offer.sdp, { encryption: o.ours ?? 'allow', localAddress: '127.0.0.2', localPort: a.localPort });
  if (!answer.ok) throw new Error(answer.reason);
  const accepted = acceptAnswer(answer.answerSdp, offer);
  if (!accepted.ok) throw new Error(accepted.reason);
  await a.start({ ...answer, noiseSuppression: o.noiseSuppression });
  await b.start(accepted);
  return { a, b, answer };
}

/** Our session answering an offer whose media address is a raw socket (the peer is the test itself). */
async function connectRaw(peer: dgram.Socket, o: { codec?: Codec; ssrc?: number; jitterDepthMs?: number } = {}) {
  const a = await bindSession();
  let sdp = buildOffer({ encryption: 'disable', localAddress: '127.0.0.1', localPort: peer.address().port, codecs: [o.codec ?? 'PCMU'] }).sdp;
  if (o.ssrc !== undefined) sdp += `a=ssrc:${o.ssrc} cname:test\r\n`;
  const answer = negotiate(sdp, { encryption: 'disable', localAddress: '127.0.0.2', localPort: a.localPort });
  if (!answer.ok) throw new Error(answer.reason);
  await a.start({ ...answer, jitterDepthMs: o.jitterDepthMs });
  return a;
}

function collect(socket: dgram.Socket): Array<{ at: number; pkt: RtpPacket; from: number }> {
  const got: Array<{ at: number; pkt: RtpPacket; from: number }> = [];
  socket.on('message', (m, r) => {
    const pkt = decodeRtp(m);
    if (pkt) got.push({ at: performance.now(), pkt, from: r.port });
  });
  return got;
}

const rtp = (seq: number, payload: Buffer, o: Partial<RtpPacket> = {}) =>
  encodeRtp({ marker: false, payloadType: 0, sequence: seq & 0xffff, timestamp: (seq * 160) >>> 0, ssrc: 0x1234, payload, ...o });

describe('RtpSession between two sessions', () => {
  it('carries speech exactly (G.711-quantised) in PCMU and PCMA, plain and SRTP', async () => {
    const hello = speech('hello-world');
    const cases: Array<[Codec, MediaEncryption, MediaEncryption]> = [
      ['PCMU', 'allow', 'disable'],
      ['PCMA', 'allow', 'disable'],
      ['PCMU', 'require', 'require'],
      ['PCMA', 'require', 'allow'],
    ];
    await Promise.all(
      cases.map(async ([codec, oursPolicy, theirsPolicy]) => {
        const { a, b, answer } = await connect({ ours: oursPolicy, theirs: theirsPolicy, codecs: [codec] });
        expect(answer.codec).toBe(codec);
        expect(answer.srtp !== null).toBe(oursPolicy === 'require');
        const heard: Int16Array[] = [];
        const heardByUs: Int16Array[] = [];
        b.onAudio = (f) => heard.push(f);
        a.onAudio = (f) => heardByUs.push(f);
        a.send(hello);
        b.send(hello.subarray(0, 4000)); // and the other way at the same time
        expect(a.queuedMs()).toBeCloseTo(hello.length / 8, 0);
        await waitFor(() => a.queuedMs() === 0 && heard.length * 160 > hello.length + 8000, 6000);
        const padded = new Int16Array(Math.ceil(hello.length / 160) * 160); // the last partial frame goes out padded with silence
        padded.set(hello);
        expect(findExact(concat(heard), g711RoundTrip(padded, codec))).toBeGreaterThanOrEqual(0);
        expect(findExact(concat(heardByUs), g711RoundTrip(hello.subarray(0, 4000), codec))).toBeGreaterThanOrEqual(0);
        expect(heard.every((f) => f.length === 160)).toBe(true);
        const sa = a.stats();
        const sb = b.stats();
        expect(sa).toMatchObject({ latched: true, srtpFailures: 0, malformed: 0, lost: 0, late: 0, concealed: 0 });
        expect(sb).toMatchObject({ latched: true, srtpFailures: 0, malformed: 0, lost: 0, late: 0, concealed: 0, packetsIn: expect.any(Number) });
        expect(sb.packetsIn).toBeGreaterThanOrEqual(Math.ceil(hello.length / 160));
        expect(a.remote).toEqual({ address: '127.0.0.1', port: b.localPort });
      }),
    );
  });

  it('sends RFC 4733 digits the other side reads, then goes on with the queued audio', async () => {
    const { a, b } = await connect();
    const digits: string[] = [];
    a.onDtmf = (d) => digits.push(d);
    const heard: Int16Array[] = [];
    a.onAudio = (f) => heard.push(f);
    const tone = Int16Array.from({ length: 1600 }, (_, i) => Math.round(8000 * Math.sin(i / 3)));
    b.sendDtmf('12#');
    b.send(tone);
    await waitFor(() => digits.length === 3 && b.queuedMs() === 0, 4000);
    await sleep(150);
    expect(digits).toEqual(['1', '2', '#']);
    expect(b.stats().dtmfOut).toBe(3);
    expect(a.stats()).toMatchObject({ dtmfIn: 3, lost: 0, concealed: 0 }); // event packets are not audio losses
    expect(findExact(concat(heard), g711RoundTrip(tone, 'PCMU'))).toBeGreaterThanOrEqual(0);
    expect(() => b.sendDtmf('12x')).toThrow(RangeError);
  });

  it('suppresses noise on the caller\'s audio and keeps the speech (RNNoise)', async () => {
    const { a, b } = await connect({ noiseSuppression: true });
    const voice = speech('hello-world');
    let seed = 1;
    const noise = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff - 0.5) * 2 * 1500;
    const lead = 16000; // 2 s of noise alone (RNNoise adapts within about a second), then speech in noise
    const input = new Int16Array(lead + voice.length);
    for (let i = 0; i < input.length; i++) input[i] = Math.round(noise() + (i >= lead ? voice[i - lead]! : 0));
    const heard: Int16Array[] = [];
    a.onAudio = (f) => heard.push(f);
    b.send(input);
    await waitFor(() => b.queuedMs() === 0, 6000);
    await sleep(300);
    const out = concat(heard);
    const start = findStart(out);
    // Compare the second half of the noise-only lead, and the speech, with what went in.
    const noiseIn = rms(input.subarray(12000, lead));
    const noiseOut = rms(out.subarray(start + 12000, start + lead));
    const speechIn = rms(input.subarray(lead, input.length));
    const speechOut = rms(out.subarray(start + lead, start + input.length));
    console.log(`noise suppression: noise ${noiseIn.toFixed(0)} -> ${noiseOut.toFixed(0)} rms (${(20 * Math.log10(noiseOut / noiseIn)).toFixed(1)} dB), speech+noise ${speechIn.toFixed(0)} -> ${speechOut.toFixed(0)} rms`);
    expect(20 * Math.log10(noiseOut / noiseIn)).toBeLessThan(-20);
    expect(speechOut / speechIn).toBeGreaterThan(0.5);
  });
});

/** Where the first non-silent frame starts (the audio arrives after some silence frames). */
function findStart(x: Int16Array): number {
  for (let at = 0; at + 160 <= x.length; at += 160) if (rms(x.subarray(at, at + 160)) > 50) return at;
  return -1;
}

describe('RtpSession on the wire', () => {
  it('sends one packet per 20 ms: silence when idle, continuous sequence numbers and timestamps, and clear() stops speech at once', async () => {
    const peer = await rawSocket();
    const got = collect(peer);
    const a = await connectRaw(peer);
    await waitFor(() => got.length >= 25);
    const tone = Int16Array.from({ length: 8000 * 2 }, (_, i) => Math.round(8000 * Math.sin(i / 5)));
    a.send(tone);
    await sleep(400);
    const queued = a.queuedMs();
    expect(queued).toBeGreaterThan(1400);
    expect(queued).toBeLessThan(1700);
    a.clear();
    expect(a.queuedMs()).toBe(0);
    const clearedAt = got.length;
    await sleep(300);
    const packets = got.map((g) => g.pkt);
    expect(packets.every((p) => p.ssrc === packets[0]!.ssrc && p.payloadType === 0 && p.payload.length === 160)).toBe(true);
    expect(packets.map((p) => p.marker)).toEqual(packets.map((_, i) => i === 0));
    for (let i = 1; i < packets.length; i++) {
      expect((packets[i]!.sequence - packets[i - 1]!.sequence) & 0xffff).toBe(1);
      expect((packets[i]!.timestamp - packets[i - 1]!.timestamp) >>> 0).toBe(160);
    }
    const isSilence = (p: RtpPacket) => p.payload.every((b) => b === 0xff);
    expect(isSilence(packets[0]!)).toBe(true);
    const speechPackets = packets.filter((p) => !isSilence(p));
    expect(speechPackets.length).toBeGreaterThanOrEqual(15);
    expect(speechPackets.length).toBeLessThanOrEqual(25);
    expect(packets.slice(clearedAt + 1).every(isSilence)).toBe(true);
    // Inter-packet timing at the receiver.
    const deviation = got.slice(1).map((g, i) => Math.abs(g.at - got[i]!.at - 20)).sort((x, y) => x - y);
    const p99 = deviation[Math.floor(0.99 * deviation.length)]!;
    console.log(`RTP inter-packet deviation at the receiver over ${deviation.length} intervals: p50 ${deviation[deviation.length >> 1]!.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`);
    expect(p99).toBeLessThan(15);
    expect(a.stats().packetsOut).toBe(got.length);
  });

  it('counts silence sent mid-turn for lack of agent audio as an underrun, and not the end of a turn', async () => {
    const peer = await rawSocket();
    const got = collect(peer);
    const a = await connectRaw(peer);
    await waitFor(() => got.length >= 3);
    const tone = (ms: number) => Int16Array.from({ length: 8 * ms }, (_, i) => Math.round(8000 * Math.sin(i / 5)));
    // A turn whose audio runs dry and then goes on: the caller heard a gap of several frames.
    a.speaking = true;
    a.send(tone(100));
    await sleep(260);
    const packetsBefore = got.length;
    a.send(tone(100));
    await sleep(160);
    const gap = a.stats().underrunFrames;
    expect(gap).toBeGreaterThanOrEqual(5);
    expect(gap).toBeLessThanOrEqual(12);
    // The silent packets the peer received in between are the ones counted.
    const isSilence = (p: RtpPacket) => p.payload.every((b) => b === 0xff);
    const between = got.slice(0, packetsBefore).map((g) => g.pkt);
    const firstTone = between.findIndex((p) => !isSilence(p));
    const lastTone = between.length - 1 - [...between].reverse().findIndex((p) => !isSilence(p));
    expect(between.slice(lastTone + 1).filter(isSilence).length).toBeGreaterThanOrEqual(gap - 2);
    expect(firstTone).toBeGreaterThanOrEqual(0);
    // The end of a turn (the queue runs dry, then the agent stops speaking) and silence between turns are not.
    await sleep(200);
    a.speaking = false;
    await sleep(200);
    a.send(tone(40));
    await sleep(100);
    expect(a.stats().underrunFrames).toBe(gap);
  });

  it('latches to where the peer\'s RTP comes from, ignores other sources while it is live, and moves when it goes quiet', async () => {
    const sdpSocket = await rawSocket();
    const real = await rawSocket();
    const intruder = await rawSocket();
    const toSdp = collect(sdpSocket);
    const toReal = collect(real);
    const toIntruder = collect(intruder);
    const a = await connectRaw(sdpSocket);
    const heard: Int16Array[] = [];
    a.onAudio = (f) => heard.push(f);
    await waitFor(() => toSdp.length >= 3);
    expect(a.remote).toEqual({ address: '127.0.0.1', port: sdpSocket.address().port });
    const port = a.localPort;
    let seq = 100;
    const sender = setInterval(() => real.send(rtp(seq++, Buffer.alloc(160, 0x80)), port, '127.0.0.2'), 20);
    try {
      await waitFor(() => toReal.length >= 5);
      expect(a.remote).toEqual({ address: '127.0.0.1', port: real.address().port });
      expect(a.stats().latched).toBe(true);
      const sdpCount = toSdp.length;
      for (let i = 0; i < 10; i++) intruder.send(rtp(5000 + i, Buffer.alloc(160, 0x00), { ssrc: 0x9999 }), port, '127.0.0.2');
      await sleep(200);
      expect(toSdp.length).toBeLessThanOrEqual(sdpCount + 1);
      expect(toIntruder).toHaveLength(0);
      expect(a.stats().ignored).toBe(10);
      expect(heard.some((f) => f.some((v) => v === MULAW_TO_LINEAR[0x00]))).toBe(false);
    } finally {
      clearInterval(sender);
    }
    await sleep(2100); // the latched source has gone quiet: another one may take over
    intruder.send(rtp(7000, Buffer.alloc(160, 0x00), { ssrc: 0x9999 }), port, '127.0.0.2');
    await waitFor(() => toIntruder.length >= 3);
    expect(a.remote).toEqual({ address: '127.0.0.1', port: intruder.address().port });
  }, 15_000);

  it('latches only to the SSRC the SDP announced, unless nothing else ever comes', async () => {
    const peer = await rawSocket();
    const got = collect(peer);
    const a = await connectRaw(peer, { ssrc: 4242 });
    const other = await rawSocket();
    const fromOther = collect(other);
    for (let i = 0; i < 10; i++) other.send(rtp(i, Buffer.alloc(160, 0x80), { ssrc: 777 }), a.localPort, '127.0.0.2');
    await sleep(100);
    expect(a.stats()).toMatchObject({ latched: false, ignored: 10 });
    const third = await rawSocket();
    const fromThird = collect(third);
    third.send(rtp(1, Buffer.alloc(160, 0x80), { ssrc: 4242 }), a.localPort, '127.0.0.2');
    await waitFor(() => fromThird.length >= 2);
    expect(a.remote!.port).toBe(third.address().port);
    expect(fromOther).toHaveLength(0);
    expect(got.length).toBeGreaterThan(0);
    // An SBC that rewrites the SSRC but passes a=ssrc through: after 50 packets from one source we latch anyway.
    const b = await connectRaw(peer, { ssrc: 4242 });
    for (let i = 0; i < 50; i++) other.send(rtp(i, Buffer.alloc(160, 0x80), { ssrc: 777 }), b.localPort, '127.0.0.2');
    await waitFor(() => b.stats().latched);
    expect(b.stats().ignored).toBe(49);
    expect(b.remote!.port).toBe(other.address().port);
  });

  it('plays sox-made mu-law through the jitter buffer despite reordering, a duplicate and a lost packet', async () => {
    const wav = '/usr/share/asterisk/sounds/en_US_f_Allison/hello-world.wav';
    const ulaw = join(tmp, 'hello.ul');
    execFileSync('sox', [wav, '-t', 'raw', '-e', 'mu-law', '-r', '8000', '-c', '1', ulaw]);
    const bytes = readFileSync(ulaw);
    const n = Math.floor(bytes.length / 160);
    const peer = await rawSocket();
    const a = await connectRaw(peer, { jitterDepthMs: 100 });
    const heard: Int16Array[] = [];
    a.onAudio = (f) => heard.push(f);
    const LOST = 20;
    // Send order: pairs swapped (each even packet after its odd successor), packet 30 twice, packet LOST never.
    const order: number[] = [];
    for (let i = 0; i < n; i += 2) order.push(...(i + 1 < n ? [i + 1, i] : [i]));
    order.splice(order.indexOf(31) + 1, 0, 30);
    const schedule = order.filter((i) => i !== LOST);
    let k = 0;
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        const i = schedule[k++]!;
        peer.send(rtp(65500 + i, bytes.subarray(i * 160, i * 160 + 160), { marker: i === 0 }), a.localPort, '127.0.0.2');
        if (k === schedule.length) {
          clearInterval(t);
          resolve();
        }
      }, 20);
    });
    await sleep(300);
    const decode = (i: number) => Int16Array.from(bytes.subarray(i * 160, i * 160 + 160), (b) => MULAW_TO_LINEAR[b]!);
    // Align on the first frame that is not digital silence (the stream is preceded by silence frames).
    const first = Array.from({ length: n }, (_, i) => i).find((i) => decode(i).some((v) => v !== 0))!;
    const start = heard.findIndex((f) => f.every((v, j) => v === decode(first)[j])) - first;
    expect(start).toBeGreaterThanOrEqual(0);
    for (let i = 0; i < n; i++) {
      const f = heard[start + i]!;
      if (i === LOST) {
        const prev = decode(LOST - 1);
        expect([...f]).toEqual([...prev].map((v, j) => Math.round(v * (1 - (0.5 * j) / 160))));
      } else expect([...f]).toEqual([...decode(i)]);
    }
    // The copy of packet 30 comes after 30 itself went on (audio goes on as soon as it is in sequence): dropped as late.
    expect(a.stats()).toMatchObject({ lost: 1, concealed: 1, duplicate: 0, late: 1, received: n - 1 });
  });

  it('counts garbage, RTCP, other payload types and SRTP failures without playing them, and never throws', async () => {
    const { a, b } = await connect({ ours: 'require', theirs: 'require' });
    await sleep(60);
    const attacker = await rawSocket();
    const heard: Int16Array[] = [];
    a.onAudio = (f) => heard.push(f);
    attacker.send(Buffer.from('81c8000c' + '00'.repeat(28), 'hex'), a.localPort, '127.0.0.2'); // RTCP SR
    attacker.send(rtp(1, Buffer.alloc(160, 0x00)), a.localPort, '127.0.0.2'); // plain RTP on an SRTP leg
    for (let i = 0; i < 300; i++) {
      attacker.send(Buffer.from(Array.from({ length: i % 50 }, (_, k) => (i * 31 + k * 17) & 0xff)), a.localPort, '127.0.0.2');
      if (i % 20 === 19) await sleep(5); // stay within the socket's receive buffer
    }
    await sleep(300);
    const s = a.stats();
    expect(s.rtcpIn).toBeGreaterThanOrEqual(1);
    expect(s.srtpFailures + s.rtcpIn).toBe(302);
    expect(s).toMatchObject({ malformed: 0, ignored: 0, lost: 0, concealed: 0 });
    expect(a.remote).toEqual({ address: '127.0.0.1', port: b.localPort }); // still the real peer
    expect(heard.every((f) => f.every((v) => v === 0))).toBe(true); // the peer sends silence; nothing else was played

    const peer = await rawSocket();
    const plain = await connectRaw(peer);
    peer.send(rtp(1, Buffer.alloc(1, 0x00), { payloadType: 13 }), plain.localPort, '127.0.0.2'); // comfort noise
    peer.send(rtp(2, Buffer.alloc(0)), plain.localPort, '127.0.0.2'); // empty audio
    peer.send(Buffer.from('hello'), plain.localPort, '127.0.0.2');
    await sleep(100);
    expect(plain.stats()).toMatchObject({ ignored: 1, malformed: 2, received: 0 });
  });
});

describe('RtpSession lifecycle', () => {
  it('close() stops sending and frees the port; start() refuses after close', async () => {
    const peer = await rawSocket();
    const got = collect(peer);
    const a = await connectRaw(peer);
    await waitFor(() => got.length >= 2);
    const port = a.localPort;
    a.close();
    a.close();
    const count = got.length;
    await sleep(100);
    expect(got.length).toBeLessThanOrEqual(count + 1);
    const reuse = dgram.createSocket('udp4');
    await new Promise<void>((r) => reuse.bind(port, '127.0.0.2', r));
    reuse.close();
    a.send(new Int16Array(160));
    expect(a.queuedMs()).toBe(0);
    expect(a.isClosed).toBe(true);
    await expect(a.start({ codec: 'PCMU', payloadType: 0, dtmfPayloadType: null, remote: { address: '127.0.0.1', port: 9 }, srtp: null })).rejects.toThrow('RTP session closed');
  });

  it('does not send for a recvonly or inactive answer, nor to a hold address', async () => {
    const peer = await rawSocket();
    const got = collect(peer);
    for (const [direction, address] of [['recvonly', '127.0.0.1'], ['inactive', '127.0.0.1'], ['sendrecv', '0.0.0.0']] as const) {
      const a = await bindSession();
      await a.start({ codec: 'PCMU', payloadType: 0, dtmfPayloadType: null, remote: { address, port: peer.address().port }, srtp: null, direction });
    }
    await sleep(120);
    expect(got).toHaveLength(0);
  });

  it('measures RNNoise cost per 20 ms frame (8k -> 48k -> RNNoise -> 8k)', async () => {
    const ns = await NoiseSuppressor.create();
    const voice = speech('demo-thanks');
    const frames = Math.floor(voice.length / 160);
    for (let i = 0; i < 50; i++) ns.process(voice.subarray(i * 160, i * 160 + 160));
    const t = performance.now();
    for (let i = 0; i < frames; i++) expect(ns.process(voice.subarray(i * 160, i * 160 + 160))).toHaveLength(160);
    const perFrame = (performance.now() - t) / frames;
    console.log(`noise suppression cost: ${perFrame.toFixed(3)} ms per 20 ms frame (${((perFrame / 20) * 100).toFixed(1)}% of one core per call)`);
    ns.destroy();
    ns.destroy();
    expect(() => ns.process(new Int16Array(160))).toThrow('noise suppressor destroyed');
    expect(perFrame).toBeLessThan(5);
  });
});
