// Sample codecs: G.711 reference values and round trips, linear16/32 scaling and clipping, odd byte counts.
import { describe, expect, it } from 'vitest';
import {
  AudioFormatError, decodeALaw, decodeLinear16, decodeLinear32, decodeMuLaw, decodeSamples, encodeALaw, encodeLinear16,
  encodeLinear32, encodeMuLaw, encodeSamples, ENCODINGS, aLawToLinear, linearToALaw, linearToMuLaw, muLawToLinear, SampleDecoder,
  type Encoding,
} from '../engine/audio/index.js';

function sine(n: number, freq: number, rate: number, amp = 0.5): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => amp * Math.sin((2 * Math.PI * freq * i) / rate));
}

function snrDb(ref: Float32Array, out: Float32Array): number {
  let s = 0;
  let e = 0;
  for (let i = 0; i < ref.length; i++) {
    s += ref[i]! ** 2;
    e += (out[i]! - ref[i]!) ** 2;
  }
  return 10 * Math.log10(s / e);
}

describe('G.711 mu-law (ITU-T G.191 reference behaviour)', () => {
  it('encodes the reference values', () => {
    expect(linearToMuLaw(0)).toBe(0xff);
    expect(linearToMuLaw(-1)).toBe(0x7f); // G.191 takes the one's complement of negatives, so -1 is negative zero
    expect(linearToMuLaw(32767)).toBe(0x80);
    expect(linearToMuLaw(-32768)).toBe(0x00);
    expect(linearToMuLaw(100)).toBe(0xf2);
    expect(linearToMuLaw(-100)).toBe(0x73);
  });

  it('decodes the reference values', () => {
    expect(muLawToLinear(0xff)).toBe(0);
    expect(muLawToLinear(0x7f)).toBe(0);
    expect(muLawToLinear(0x80)).toBe(32124);
    expect(muLawToLinear(0x00)).toBe(-32124);
    expect(muLawToLinear(0xfe)).toBe(8); // segment 0, step 8
    expect(muLawToLinear(0xf0)).toBe(120); // top of segment 0
    expect(muLawToLinear(0xef)).toBe(132); // bottom of segment 1, step 16
  });

  it('round-trips every code except negative zero, and decoding is monotonic', () => {
    for (let b = 0; b < 256; b++) {
      const expected = b === 0x7f ? 0xff : b;
      expect(linearToMuLaw(muLawToLinear(b))).toBe(expected);
    }
    for (let b = 1; b < 128; b++) expect(muLawToLinear(b)).toBeGreaterThan(muLawToLinear(b - 1));
    for (let b = 129; b < 256; b++) expect(muLawToLinear(b)).toBeLessThan(muLawToLinear(b - 1));
  });

  it('keeps the relative error of a logarithmic quantiser (about 3.3% above 1024) over the whole range', () => {
    let worst = 0;
    let worstRel = 0;
    for (let v = -32124; v <= 32124; v++) {
      const err = Math.abs(muLawToLinear(linearToMuLaw(v)) - v);
      worst = Math.max(worst, err);
      if (Math.abs(v) >= 1024) worstRel = Math.max(worstRel, err / Math.abs(v));
    }
    expect(worst).toBe(512); // half of the largest step (1024)
    expect(worstRel).toBeGreaterThan(0.03);
    expect(worstRel).toBeLessThan(0.035);
  });
});

describe('G.711 A-law (ITU-T G.191 reference behaviour)', () => {
  it('encodes and decodes the reference values', () => {
    expect(linearToALaw(0)).toBe(0xd5);
    expect(linearToALaw(-1)).toBe(0x55);
    expect(linearToALaw(32767)).toBe(0xaa);
    expect(linearToALaw(-32768)).toBe(0x2a);
    expect(aLawToLinear(0xd5)).toBe(8);
    expect(aLawToLinear(0x55)).toBe(-8);
    expect(aLawToLinear(0xaa)).toBe(32256);
    expect(aLawToLinear(0x2a)).toBe(-32256);
  });

  it('round-trips all 256 codes', () => {
    for (let b = 0; b < 256; b++) expect(linearToALaw(aLawToLinear(b))).toBe(b);
  });
});

describe('G.711 on Float32 signals', () => {
  it('gives the ~38 dB SNR expected of 8-bit log PCM on a sine', () => {
    const x = sine(8000, 1000.5, 8000);
    const mu = snrDb(x, decodeMuLaw(encodeMuLaw(x)));
    const a = snrDb(x, decodeALaw(encodeALaw(x)));
    expect(mu).toBeGreaterThan(35);
    expect(mu).toBeLessThan(42);
    expect(a).toBeGreaterThan(35);
    expect(a).toBeLessThan(42);
  });

  it('maps silence to the idle codes', () => {
    expect([...encodeMuLaw(new Float32Array(3))]).toEqual([0xff, 0xff, 0xff]);
    expect([...encodeALaw(new Float32Array(3))]).toEqual([0xd5, 0xd5, 0xd5]);
  });
});

describe('linear16', () => {
  it('scales by 32768 and clips out-of-range and NaN input', () => {
    const bytes = encodeLinear16(Float32Array.from([0, 0.5, -0.5, 1, -1, 1.7, -3, Number.NaN, 1 / 32768]));
    const ints = Array.from({ length: bytes.length / 2 }, (_, i) => bytes.readInt16LE(i * 2));
    expect(ints).toEqual([0, 16384, -16384, 32767, -32768, 32767, -32768, 0, 1]);
  });

  it('decodes little-endian signed samples', () => {
    const out = decodeLinear16(Uint8Array.from([0x00, 0x80, 0xff, 0x7f, 0x01, 0x00, 0xff, 0xff]));
    expect([...out]).toEqual([-1, 32767 / 32768, 1 / 32768, -1 / 32768]);
  });

  it('round-trips every int16 value exactly', () => {
    const all = Buffer.alloc(65536 * 2);
    for (let v = -32768; v < 32768; v++) all.writeInt16LE(v, (v + 32768) * 2);
    expect(encodeLinear16(decodeLinear16(all)).equals(all)).toBe(true);
  });

  it('decodes from a Buffer view at an odd byte offset', () => {
    const backing = Buffer.from([0x99, 0x00, 0x40, 0x00, 0xc0]);
    expect([...decodeLinear16(backing.subarray(1))]).toEqual([0.5, -0.5]);
  });
});

describe('linear32 (signed int32 LE)', () => {
  it('scales by 2^31 and clips', () => {
    const bytes = encodeLinear32(Float32Array.from([0.5, -1, 2, -2, 0]));
    expect([0, 1, 2, 3, 4].map((i) => bytes.readInt32LE(i * 4))).toEqual([0x40000000, -0x80000000, 0x7fffffff, -0x80000000, 0]);
    expect([...decodeLinear32(bytes)]).toEqual([0.5, -1, 1, -1, 0]);
  });
});

describe('decodeSamples / encodeSamples', () => {
  it('round-trips a sine through each encoding at the precision it has', () => {
    const x = sine(1600, 440, 8000, 0.8);
    const floor: Record<Encoding, number> = { linear16: 90, linear32: 130, mulaw: 35, alaw: 35 };
    for (const enc of ENCODINGS) expect(snrDb(x, decodeSamples(encodeSamples(x, enc), enc)), enc).toBeGreaterThan(floor[enc]);
  });

  it('encodes to the documented byte sizes', () => {
    const x = new Float32Array(10);
    expect(encodeSamples(x, 'linear16').length).toBe(20);
    expect(encodeSamples(x, 'linear32').length).toBe(40);
    expect(encodeSamples(x, 'mulaw').length).toBe(10);
    expect(encodeSamples(x, 'alaw').length).toBe(10);
  });

  it('drops a trailing partial sample in one-shot decoding', () => {
    expect(decodeSamples(Uint8Array.from([0, 0x40, 7]), 'linear16')).toEqual(Float32Array.from([0.5]));
    expect(decodeSamples(Uint8Array.from([0, 0, 0, 0x40, 1, 2, 3]), 'linear32')).toEqual(Float32Array.from([0.5]));
  });

  it('throws AudioFormatError for an unknown encoding', () => {
    expect(() => decodeSamples(new Uint8Array(4), 'pcm_f32' as Encoding)).toThrow(AudioFormatError);
    expect(() => encodeSamples(new Float32Array(4), 'mp3' as Encoding)).toThrow(/unknown raw encoding "mp3"/);
  });
});

describe('SampleDecoder (streaming)', () => {
  it('carries partial samples across chunks split at arbitrary byte offsets', () => {
    const x = sine(999, 300, 16000);
    for (const enc of ENCODINGS) {
      const bytes = encodeSamples(x, enc);
      const whole = decodeSamples(bytes, enc);
      const dec = new SampleDecoder(enc);
      const parts: number[] = [];
      let off = 0;
      for (const size of [1, 3, 5, 7, 2, 11, 13, 1, 4096]) {
        const out = dec.push(bytes.subarray(off, off + size));
        parts.push(...out);
        off += size;
        if (off >= bytes.length) break;
      }
      while (off < bytes.length) {
        parts.push(...dec.push(bytes.subarray(off, off + 17)));
        off += 17;
      }
      expect(Float32Array.from(parts), enc).toEqual(whole);
      expect(dec.pendingBytes).toBe(0);
    }
  });

  it('reports and discards leftover bytes at the end', () => {
    const dec = new SampleDecoder('linear32');
    expect(dec.push(Uint8Array.from([0, 0, 0, 0x40, 9, 9])).length).toBe(1);
    expect(dec.pendingBytes).toBe(2);
    expect(dec.end()).toBe(2);
    expect(dec.pendingBytes).toBe(0);
  });
});
