// RTP building blocks: packet encode/decode, the jitter buffer, RFC 4733 DTMF (sipp's captures), SDES-SRTP (libsrtp's
// known vector) and the port allocator.
import dgram from 'node:dgram';
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DtmfReceiver, dtmfPackets, digitToEvent, encodeTelephoneEvent, eventToDigit, parseTelephoneEvent } from '../telephony/media/dtmf.js';
import { JitterBuffer } from '../telephony/media/jitter.js';
import { parsePortRange, PortAllocator } from '../telephony/media/ports.js';
import { decodeRtp, encodeRtp, isRtcp, seqDiff, tsDiff } from '../telephony/media/rtp.js';
import { generateKeyParams, parseKeyParams, SrtpTransform } from '../telephony/media/srtp.js';
import { readPcapUdp } from './support/pcap.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('rtp', () => {
  it('encodes a 12-byte header and decodes it back', () => {
    const buf = encodeRtp({ marker: true, payloadType: 8, sequence: 0xfffe, timestamp: 0xfffffff0, ssrc: 0xdeadbeef, payload: Buffer.from([1, 2, 3]) });
    expect(buf.toString('hex')).toBe('8088fffefffffff0deadbeef010203');
    expect(decodeRtp(buf)).toEqual({ marker: true, payloadType: 8, sequence: 0xfffe, timestamp: 0xfffffff0, ssrc: 0xdeadbeef, payload: Buffer.from([1, 2, 3]) });
  });

  it('skips CSRCs, a header extension and padding', () => {
    // V=2 P=1 X=1 CC=2, PT 0, two CSRCs, a 1-word extension, payload aa bb, 3 bytes of padding.
    const buf = hex('b2 00 0001 00000002 00000003  11111111 22222222  bede 0001 10ff0000  aabb  000003');
    expect(decodeRtp(buf)).toMatchObject({ payloadType: 0, sequence: 1, timestamp: 2, ssrc: 3, payload: hex('aabb') });
  });

  it('drops malformed packets', () => {
    const ok = encodeRtp({ marker: false, payloadType: 0, sequence: 1, timestamp: 1, ssrc: 1, payload: Buffer.from([0, 0, 0, 5]) });
    expect(decodeRtp(ok)!.payload).toEqual(Buffer.from([0, 0, 0, 5]));
    expect(decodeRtp(ok.subarray(0, 11))).toBeNull(); // short
    expect(decodeRtp(Buffer.concat([Buffer.from([0x40]), ok.subarray(1)]))).toBeNull(); // version 1
    expect(decodeRtp(Buffer.concat([Buffer.from([0x8f]), ok.subarray(1)]))).toBeNull(); // 15 CSRCs that are not there
    expect(decodeRtp(Buffer.concat([Buffer.from([0x90]), ok.subarray(1)]))).toBeNull(); // extension past the end
    expect(decodeRtp(Buffer.concat([Buffer.from([0xa0]), ok.subarray(1, 15), Buffer.from([0])]))).toBeNull(); // padding 0
    expect(decodeRtp(Buffer.concat([Buffer.from([0xa0]), ok.subarray(1, 15), Buffer.from([200])]))).toBeNull(); // padding > packet
    for (let i = 0; i < 5000; i++) decodeRtp(Buffer.from(Array.from({ length: i % 40 }, (_, k) => (i * 7919 + k * 104729) & 0xff)));
  });

  it('tells RTCP from RTP and compares sequence numbers and timestamps across the wrap', () => {
    expect(isRtcp(hex('80c8 0006 00000001'))).toBe(true); // sender report
    expect(isRtcp(hex('8000 0001 00000001 00000001'))).toBe(false);
    expect([seqDiff(2, 65534), seqDiff(65534, 2), seqDiff(100, 100), seqDiff(40000, 7000)]).toEqual([4, -4, 0, -32536]);
    expect([tsDiff(10, 0xfffffff0), tsDiff(0xfffffff0, 10)]).toEqual([26, -26]);
  });
});

const frame = (v: number, n = 160) => new Int16Array(n).fill(v);
const levels = (f: Int16Array | null) => (f ? [f[0], f[f.length - 1]] : null);

describe('jitter buffer (fixed 40 ms depth)', () => {
  it('waits for 40 ms, then plays one frame per pull in sequence order despite reordering', () => {
    const jb = new JitterBuffer();
    jb.push(11, frame(11));
    expect(jb.pull()).toBeNull();
    jb.push(10, frame(10)); // arrived after 11, before playout: played first
    jb.push(13, frame(13));
    jb.push(12, frame(12));
    expect([jb.pull(), jb.pull(), jb.pull(), jb.pull()].map((f) => f![0])).toEqual([10, 11, 12, 13]);
    expect(jb.stats).toMatchObject({ received: 4, lost: 0, late: 0, concealed: 0, frames: 4 });
  });

  it('pullReady hands out audio as soon as it is in sequence (after the depth once, at the start), stops at a gap, and pull() conceals it', () => {
    const jb = new JitterBuffer();
    jb.push(10, frame(10));
    expect(jb.pullReady()).toBeNull(); // the first 40 ms wait once, for a packet that overtook its predecessor
    jb.push(9, frame(9));
    expect(jb.pullReady()![0]).toBe(9);
    expect(jb.pullReady()![0]).toBe(10);
    expect(jb.pullReady()).toBeNull();
    jb.push(11, frame(11));
    expect(jb.pullReady()![0]).toBe(11); // no depth any more: at once
    jb.push(13, frame(13));
    expect(jb.pullReady()).toBeNull(); // 12 is missing: wait for it
    expect(levels(jb.pull())).toEqual([11, Math.round(11 * (1 - 0.5 * (159 / 160)))]); // overdue: concealed
    expect(jb.pullReady()![0]).toBe(13);
    expect(jb.push(12, frame(12))).toBe('late');
    expect(jb.stats).toMatchObject({ received: 4, lost: 1, concealed: 1, late: 1 });
  });

  it('drops late and duplicate packets', () => {
    const jb = new JitterBuffer();
    jb.push(1, frame(1));
    jb.push(2, frame(2));
    expect(jb.pull()![0]).toBe(1);
    expect(jb.push(2, frame(2))).toBe('duplicate');
    expect(jb.push(1, frame(1))).toBe('late');
    jb.push(3, frame(3));
    expect(jb.pull()![0]).toBe(2);
    expect(jb.pull()![0]).toBe(3);
    expect(jb.stats).toMatchObject({ received: 3, late: 1, duplicate: 1 });
  });

  it('conceals a lost packet by repeating the previous frame fading to half, and a late arrival is then dropped', () => {
    const jb = new JitterBuffer();
    for (const s of [1, 2, 4, 5]) jb.push(s, frame(1000 * s));
    expect(levels(jb.pull())).toEqual([1000, 1000]);
    expect(levels(jb.pull())).toEqual([2000, 2000]);
    const concealed = jb.pull()!;
    expect(concealed[0]).toBe(2000);
    expect(concealed[159]).toBe(Math.round(2000 * (1 - 0.5 * (159 / 160))));
    expect(jb.push(3, frame(3000))).toBe('late');
    expect(jb.pull()![0]).toBe(4000);
    expect(jb.stats).toMatchObject({ lost: 1, concealed: 1, late: 1 });
  });

  it('fades over two lost packets, then plays silence', () => {
    const jb = new JitterBuffer();
    for (const s of [1, 2, 6, 7]) jb.push(s, frame(1000));
    jb.pull();
    jb.pull();
    const [a, b, c] = [jb.pull()!, jb.pull()!, jb.pull()!];
    expect([a[0], b[0], b[159], c[0], c[159]]).toEqual([1000, 500, 3, 0, 0]);
    expect(jb.pull()![0]).toBe(1000);
    expect(jb.stats).toMatchObject({ lost: 3, concealed: 2 });
  });

  it('keeps order across the 16-bit sequence wrap', () => {
    const jb = new JitterBuffer();
    const seqs = [65533, 65535, 65534, 0, 2, 1, 3];
    for (const s of seqs) jb.push(s, frame(s === 65533 ? -3 : s === 65534 ? -2 : s === 65535 ? -1 : s));
    const out = Array.from({ length: 7 }, () => jb.pull()![0]);
    expect(out).toEqual([-3, -2, -1, 0, 1, 2, 3]);
    expect(jb.push(65535, frame(9))).toBe('late');
    expect(jb.stats).toMatchObject({ lost: 0, late: 1 });
  });

  it('cuts 30 ms packets into 20 ms frames', () => {
    const jb = new JitterBuffer();
    for (let s = 0; s < 4; s++) jb.push(s, Int16Array.from({ length: 240 }, (_, i) => s * 240 + i));
    const out = Array.from({ length: 6 }, () => jb.pull()!);
    expect(out.map((f) => [f[0], f[159]])).toEqual([[0, 159], [160, 319], [320, 479], [480, 639], [640, 799], [800, 959]]);
  });

  it('plays silence while the peer sends nothing and refills to its depth when it resumes', () => {
    const jb = new JitterBuffer();
    jb.push(1, frame(100));
    jb.push(2, frame(100));
    jb.pull();
    jb.pull();
    const fade = jb.pull()!; // ran dry: the last frame fades out
    expect([fade[0], fade[159]]).toEqual([100, 1]);
    expect(levels(jb.pull())).toEqual([0, 0]);
    jb.push(3, frame(300));
    expect(levels(jb.pull())).toEqual([0, 0]); // refilling: 20 ms of 40
    jb.push(4, frame(400));
    expect(jb.pull()![0]).toBe(300);
    expect(jb.stats).toMatchObject({ underruns: 1, lost: 0, concealed: 0 });
  });

  it('after an underrun, counts a gap as lost without concealing stale audio', () => {
    const jb = new JitterBuffer();
    jb.push(1, frame(100));
    jb.push(2, frame(100));
    jb.pull();
    jb.pull();
    jb.pull();
    jb.push(9, frame(900));
    jb.push(10, frame(1000));
    expect(jb.pull()![0]).toBe(900);
    expect(jb.stats).toMatchObject({ lost: 6, concealed: 0 });
  });

  it('drops a backlog beyond 200 ms at once, and one that stays a frame above depth for a second', () => {
    const jb = new JitterBuffer();
    for (let s = 0; s < 15; s++) jb.push(s, frame(s));
    expect(jb.pull()![0]).toBe(13); // 300 ms buffered: trimmed to 40 ms
    expect(jb.stats.trimmedSamples).toBe(13 * 160);
    // Steady state with one frame too many (the peer's clock runs fast): dropped after a one-second window.
    const jb2 = new JitterBuffer();
    let seq = 0;
    for (let i = 0; i < 3; i++) jb2.push(seq++, frame(seq));
    for (let i = 0; i < 60; i++) {
      jb2.pull();
      jb2.push(seq++, frame(seq));
    }
    expect(jb2.stats.trimmedSamples).toBe(160);
    expect(jb2.bufferedSamples).toBe(320);
  });

  it('starts over when the peer restarts its sequence numbers', () => {
    const jb = new JitterBuffer();
    jb.push(100, frame(1));
    jb.push(101, frame(1));
    jb.pull();
    jb.push(30000, frame(7));
    jb.push(30001, frame(8));
    expect(jb.pull()![0]).toBe(7);
  });
});

describe('dtmf (RFC 4733)', () => {
  const pcaps = readdirSync('/usr/share/sip-tester').filter((f) => /^dtmf_2833_.*\.pcap$/.test(f)).sort();

  it('reads one digit per key press from each of sipp\'s captures, with redundant end packets ignored', () => {
    expect(pcaps).toHaveLength(12);
    const got: Record<string, string> = {};
    for (const f of pcaps) {
      const rx = new DtmfReceiver();
      const packets = readPcapUdp(`/usr/share/sip-tester/${f}`).map((d) => decodeRtp(d.payload)!);
      expect(packets).toHaveLength(10);
      expect(packets.every((p) => p.payloadType === 101)).toBe(true);
      const events = packets.map((p) => parseTelephoneEvent(p.payload)!);
      expect(events.filter((e) => e.end)).toHaveLength(3);
      expect(events[0]).toMatchObject({ end: false, volume: 10, duration: 0 });
      expect(events[9]).toMatchObject({ end: true, volume: 10, duration: 2240 });
      got[f] = packets.map((p) => rx.push(p) ?? '').join('');
    }
    expect(got).toEqual({
      'dtmf_2833_0.pcap': '0', 'dtmf_2833_1.pcap': '1', 'dtmf_2833_2.pcap': '2', 'dtmf_2833_3.pcap': '3', 'dtmf_2833_4.pcap': '4', 'dtmf_2833_5.pcap': '5',
      'dtmf_2833_6.pcap': '6', 'dtmf_2833_7.pcap': '7', 'dtmf_2833_8.pcap': '8', 'dtmf_2833_9.pcap': '9', 'dtmf_2833_pound.pcap': '#', 'dtmf_2833_star.pcap': '*',
    });
  });

  it('reads a sequence of presses through one receiver, with retransmitted starts, stragglers and a repeated key', () => {
    const rx = new DtmfReceiver();
    const load = (name: string) => readPcapUdp(`/usr/share/sip-tester/dtmf_2833_${name}.pcap`).map((d) => decodeRtp(d.payload)!);
    const [one, two, pound] = [load('1'), load('2'), load('pound')];
    const stream = [one[0]!, one[0]!, ...one.slice(1), ...two.slice(0, 5), one[9]!, ...two.slice(5), ...one, ...pound];
    expect(stream.map((p) => rx.push(p) ?? '').join('')).toBe('121#');
  });

  it('encodes events and plans the packets of a press', () => {
    expect(encodeTelephoneEvent({ event: 11, end: true, volume: 10, duration: 800 }).toString('hex')).toBe('0b8a0320');
    expect(parseTelephoneEvent(hex('0b8a0320'))).toEqual({ event: 11, end: true, volume: 10, duration: 800 });
    expect(parseTelephoneEvent(hex('0b8a03'))).toBeNull();
    expect([...'0123456789*#ABCD'].map((d) => digitToEvent(d))).toEqual([...Array(16).keys()]);
    expect([eventToDigit(16), digitToEvent('x'), digitToEvent('a'), digitToEvent('12')]).toEqual([null, null, 12, null]);
    const plan = dtmfPackets('5', { durationMs: 100 });
    expect(plan.map((p) => [p.tick, p.marker, p.payload.toString('hex')])).toEqual([
      [0, true, '050a00a0'], [1, false, '050a0140'], [2, false, '050a01e0'], [3, false, '050a0280'],
      [4, false, '058a0320'], [5, false, '058a0320'], [6, false, '058a0320'],
    ]);
    const rx = new DtmfReceiver();
    expect(plan.map((p) => rx.push({ timestamp: 1234, marker: p.marker, payload: p.payload }) ?? '').join('')).toBe('5');
    expect(() => dtmfPackets('x')).toThrow(RangeError);
  });
});

describe('srtp (AES_CM_128_HMAC_SHA1_80)', () => {
  // libsrtp's srtp_validate() vector: master key e1f97a0d..., SSRC 0xcafebabe, seq 0x1234.
  const keyParams = `inline:${hex('e1f97a0d3e018be0d64fa32c06de4139 0ec675ad498afeebb6960b3aabe6').toString('base64')}`;
  const plain = hex('800f1234decafbadcafebabe' + 'ab'.repeat(16));
  const cipher = hex('800f1234decafbadcafebabe 4e55dc4ce79978d88ca4d215949d2402 b78d6acc99ea179b8dbb');

  it('matches libsrtp\'s known vector both ways', () => {
    expect(new SrtpTransform({ localKeyParams: keyParams, remoteKeyParams: keyParams }).protect(plain).toString('hex')).toBe(cipher.toString('hex'));
    expect(new SrtpTransform({ localKeyParams: keyParams, remoteKeyParams: keyParams }).unprotect(cipher)!.toString('hex')).toBe(plain.toString('hex'));
  });

  it('round-trips between two sides across the sequence wrap and refuses tampered or foreign packets', () => {
    const a = generateKeyParams();
    const b = generateKeyParams();
    const alice = new SrtpTransform({ localKeyParams: a, remoteKeyParams: b });
    const bob = new SrtpTransform({ localKeyParams: b, remoteKeyParams: a });
    for (let i = 0; i < 40; i++) {
      const seq = (65520 + i) & 0xffff;
      const pkt = encodeRtp({ marker: false, payloadType: 0, sequence: seq, timestamp: i * 160, ssrc: 42, payload: Buffer.alloc(160, i) });
      const protectedPkt = alice.protect(pkt);
      expect(protectedPkt.length).toBe(pkt.length + 10);
      expect(protectedPkt.subarray(12, 172).equals(pkt.subarray(12))).toBe(false);
      expect(bob.unprotect(protectedPkt)!.equals(pkt)).toBe(true);
    }
    const pkt = alice.protect(encodeRtp({ marker: false, payloadType: 0, sequence: 20, timestamp: 0, ssrc: 42, payload: Buffer.alloc(160) }));
    const tampered = Buffer.from(pkt);
    tampered[40] = tampered[40]! ^ 1;
    expect(bob.unprotect(tampered)).toBeNull();
    expect(new SrtpTransform({ localKeyParams: b, remoteKeyParams: generateKeyParams() }).unprotect(pkt)).toBeNull();
    expect(bob.unprotect(pkt.subarray(0, 15))).toBeNull();
    const rtcp = hex('81c8000bcafebabe' + 'ab'.repeat(16));
    expect(bob.unprotectRtcp(alice.protectRtcp(rtcp))!.equals(rtcp)).toBe(true);
    expect(bob.unprotectRtcp(rtcp)).toBeNull();
  });

  it('parses SDES key params', () => {
    const k = generateKeyParams();
    expect(k).toMatch(/^inline:[A-Za-z0-9+/]{40}$/);
    expect(parseKeyParams(k)!.salt).toHaveLength(14);
    expect(parseKeyParams(`${k}|2^31`)).not.toBeNull();
    expect(parseKeyParams(`${k}|2^20|1:4`)).toBeNull(); // MKI
    expect(parseKeyParams('inline:AAAA')).toBeNull();
    expect(parseKeyParams('uri:http://example.com/key')).toBeNull();
    expect(() => new SrtpTransform({ localKeyParams: 'inline:x', remoteKeyParams: k })).toThrow('invalid local SRTP key params');
  });
});

describe('ports', () => {
  it('parses PARLEY_RTP_PORTS and refuses nonsense', () => {
    expect(parsePortRange()).toEqual({ min: 10000, max: 20000 });
    expect(parsePortRange(' 30001 - 30004 ')).toEqual({ min: 30001, max: 30004 });
    for (const bad of ['', '10000', '10000-10000', '20000-10000', '80-90', '10000-70000', '30001-30002', 'a-b']) expect(() => parsePortRange(bad)).toThrow(/PARLEY_RTP_PORTS/);
  });

  it('hands out even ports, skips one another process holds, frees on release and says when all are taken', async () => {
    const blocker = dgram.createSocket('udp4');
    await new Promise<void>((r) => blocker.bind(41102, '127.0.0.2', r));
    try {
      const ports = new PortAllocator({ min: 41100, max: 41107 }); // 41100, 41102, 41104, 41106
      expect(ports.capacity).toBe(4);
      const got = [await ports.bind('127.0.0.2'), await ports.bind('127.0.0.2'), await ports.bind('127.0.0.2')];
      expect(got.map((b) => b.port).sort()).toEqual([41100, 41104, 41106]);
      expect(got.every((b) => b.socket.address().port === b.port)).toBe(true);
      await expect(ports.bind('127.0.0.2')).rejects.toThrow('no free RTP port in 41100-41107 (3 in use)');
      got[1]!.release();
      got[1]!.release();
      expect(ports.used).toBe(2);
      expect((await ports.bind('127.0.0.2')).port).toBe(got[1]!.port);
      for (const b of got) b.release();
    } finally {
      blocker.close();
    }
  });
});
