// Resampling: in-band SNR against analytic sines, alias rejection, exact lengths, and streaming == one-shot in 20 ms chunks.
import { describe, expect, it } from 'vitest';
import { resample, Resampler, WIRE_SAMPLE_RATES } from '../engine/audio/index.js';
import { concatSamples } from '../engine/audio/types.js';

const PAIRS: [number, number][] = [
  [8000, 16000], [16000, 8000], [16000, 48000], [48000, 16000], [44100, 16000], [22050, 16000], [24000, 8000], [16000, 24000],
  [8000, 44100], [44100, 48000],
];

function sine(seconds: number, freq: number, rate: number, amp = 0.5, phase = 0): Float32Array {
  return Float32Array.from({ length: Math.round(seconds * rate) }, (_, i) => amp * Math.sin((2 * Math.PI * freq * i) / rate + phase));
}

/** SNR of `out` against the analytic sine at `rate`, skipping `edge` seconds at both ends. */
function sineSnrDb(out: Float32Array, freq: number, rate: number, amp = 0.5, edge = 0.05): number {
  let s = 0;
  let e = 0;
  const k0 = Math.ceil(edge * rate);
  for (let k = k0; k < out.length - k0; k++) {
    const r = amp * Math.sin((2 * Math.PI * freq * k) / rate);
    s += r * r;
    e += (out[k]! - r) ** 2;
  }
  return 10 * Math.log10(s / e);
}

function rmsDb(x: Float32Array, from: number, to: number): number {
  let s = 0;
  for (let i = from; i < to; i++) s += x[i]! ** 2;
  return 10 * Math.log10(s / (to - from));
}

function streamInChunks(x: Float32Array, from: number, to: number, sizes: (i: number) => number): Float32Array {
  const r = new Resampler(from, to);
  const parts: Float32Array[] = [];
  let off = 0;
  for (let i = 0; off < x.length; i++) {
    const n = sizes(i);
    parts.push(r.push(x.subarray(off, off + n)));
    off += n;
  }
  parts.push(r.flush());
  return concatSamples(parts);
}

describe('resample() quality', () => {
  it.each(PAIRS)('%i -> %i Hz keeps a 1 kHz sine above 100 dB SNR with no delay', (from, to) => {
    const out = resample(sine(0.5, 1000, from), from, to);
    expect(sineSnrDb(out, 1000, to)).toBeGreaterThan(100);
  });

  it.each(PAIRS)('%i -> %i Hz keeps a sine at 0.85 x the lower Nyquist above 100 dB SNR', (from, to) => {
    const f = 0.85 * (Math.min(from, to) / 2);
    const out = resample(sine(0.5, f, from), from, to);
    expect(sineSnrDb(out, f, to)).toBeGreaterThan(100);
  });

  it('"fast" quality still clears 85 dB in band', () => {
    const out = resample(sine(0.5, 3000, 48000), 48000, 16000, { quality: 'fast' });
    expect(sineSnrDb(out, 3000, 16000)).toBeGreaterThan(85);
  });

  it.each([
    [48000, 16000, 12000],
    [44100, 16000, 9000],
    [16000, 8000, 5000],
    [24000, 8000, 10000],
  ])('%i -> %i Hz removes a %i Hz tone above the new Nyquist (< -100 dB)', (from, to, f) => {
    const out = resample(sine(0.5, f, from), from, to);
    const edge = Math.ceil(0.05 * to);
    expect(rmsDb(out, edge, out.length - edge)).toBeLessThan(-100 - 9); // tone RMS is -9 dBFS
  });

  it('passes DC with unity gain', () => {
    const out = resample(new Float32Array(22050).fill(0.25), 22050, 16000);
    for (let k = 1000; k < out.length - 1000; k += 97) expect(out[k]).toBeCloseTo(0.25, 6);
  });

  it('returns a copy for equal rates', () => {
    const x = sine(0.01, 440, 16000);
    const out = resample(x, 16000, 16000);
    expect(out).toEqual(x);
    expect(out).not.toBe(x);
  });
});

describe('resample() lengths', () => {
  it('outputs ceil(n * to / from) samples for every pair of wire rates', () => {
    for (const from of WIRE_SAMPLE_RATES) {
      for (const to of WIRE_SAMPLE_RATES) {
        for (const n of [0, 1, 7, from / 50, 12345]) {
          expect(resample(new Float32Array(n), from, to).length, `${from}->${to} n=${n}`).toBe(Math.ceil((n * to) / from));
        }
      }
    }
  });

  it('turns one 20 ms frame into exactly 20 ms at the other rate', () => {
    for (const from of WIRE_SAMPLE_RATES) {
      for (const to of WIRE_SAMPLE_RATES) expect(resample(new Float32Array(from / 50), from, to).length).toBe(to / 50);
    }
  });

  it('rejects non-integer and absurd rate pairs', () => {
    expect(() => resample(new Float32Array(10), 16000.5, 8000)).toThrow(RangeError);
    expect(() => resample(new Float32Array(10), 44100, 44101)).toThrow(/filter phases/);
  });
});

describe('Resampler (streaming)', () => {
  it.each(PAIRS)('%i -> %i Hz in 20 ms chunks equals one-shot output exactly', (from, to) => {
    const x = sine(0.7, 440, from, 0.6, 0.3);
    const whole = resample(x, from, to);
    const streamed = streamInChunks(x, from, to, () => from / 50);
    expect(streamed.length).toBe(whole.length);
    let maxDiff = 0;
    for (let i = 0; i < whole.length; i++) maxDiff = Math.max(maxDiff, Math.abs(streamed[i]! - whole[i]!));
    expect(maxDiff).toBe(0);
  });

  it('equals one-shot output for irregular chunk sizes (including empty and single samples)', () => {
    const x = sine(0.5, 1234, 44100);
    const sizes = [0, 1, 2, 441, 1, 3000, 17, 0, 882, 5];
    const streamed = streamInChunks(x, 44100, 16000, (i) => sizes[i % sizes.length]!);
    expect(streamed).toEqual(resample(x, 44100, 16000));
  });

  it('delivers output continuously, lagging by the filter look-ahead only', () => {
    const r = new Resampler(8000, 16000);
    const x = sine(1, 300, 8000);
    const lat = r.latency;
    expect(lat).toBeGreaterThan(0);
    expect(lat).toBeLessThan(160); // under one 20 ms frame of 8 kHz input
    let inTotal = 0;
    let outTotal = 0;
    for (let off = 0; off < x.length; off += 160) {
      outTotal += r.push(x.subarray(off, off + 160)).length;
      inTotal += 160;
      if (inTotal > 2 * lat) expect(outTotal).toBe(2 * (inTotal - lat)); // every input sample older than the look-ahead is out
    }
    expect(outTotal + r.flush().length).toBe(16000);
  });

  it('has no discontinuity at chunk boundaries (sample-to-sample steps stay within the sine slope)', () => {
    const f = 1000;
    const out = streamInChunks(sine(0.5, f, 48000), 48000, 16000, () => 960);
    const maxStep = 0.5 * 2 * Math.sin((Math.PI * f) / 16000) * 1.0001;
    for (let k = 400; k < out.length - 400; k++) expect(Math.abs(out[k + 1]! - out[k]!)).toBeLessThanOrEqual(maxStep);
  });

  it('starts afresh after flush() and reset()', () => {
    const x = sine(0.1, 500, 24000);
    const r = new Resampler(24000, 16000);
    const first = [r.push(x), r.flush()];
    const again = [r.push(x), r.flush()];
    expect(Float32Array.from([...again[0]!, ...again[1]!])).toEqual(Float32Array.from([...first[0]!, ...first[1]!]));
    r.push(sine(0.05, 3000, 24000));
    r.reset();
    expect(Float32Array.from([...r.push(x), ...r.flush()])).toEqual(resample(x, 24000, 16000));
  });
});
