// Framing: arbitrary chunks become exact 20 ms frames with the remainder carried, at every wire rate.
import { describe, expect, it } from 'vitest';
import { decodeLinear16, encodeLinear16, Framer, frameSize, Resampler, splitFrames, WIRE_SAMPLE_RATES } from '../engine/audio/index.js';

const ramp = (n: number) => Float32Array.from({ length: n }, (_, i) => ((i % 2000) - 1000) / 1000);

describe('frameSize', () => {
  it('gives whole 20 ms frames at every wire rate', () => {
    expect(WIRE_SAMPLE_RATES.map((r) => frameSize(r))).toEqual([160, 320, 441, 480, 882, 960]);
    expect(frameSize(16000, 32)).toBe(512);
  });

  it('refuses durations that are not a whole number of samples', () => {
    expect(() => frameSize(11025, 20)).toThrow(RangeError);
    expect(() => frameSize(16000, 0)).toThrow(RangeError);
  });
});

describe('Framer', () => {
  it('turns 4096-byte wire chunks into exact 20 ms frames, carrying the remainder', () => {
    const x = ramp(16000);
    const bytes = encodeLinear16(x);
    const framer = new Framer(16000);
    const frames: Float32Array[] = [];
    for (let off = 0; off < bytes.length; off += 4096) {
      frames.push(...framer.push(decodeLinear16(bytes.subarray(off, off + 4096))));
      expect(framer.pending).toBe(Math.min(off + 4096, bytes.length) / 2 % 320);
    }
    expect(frames).toHaveLength(50);
    for (const f of frames) expect(f.length).toBe(320);
    expect(Float32Array.from(frames.flatMap((f) => [...f]))).toEqual(decodeLinear16(bytes));
    expect(framer.flush()).toBeNull();
  });

  it('pads the last partial frame with zeros on flush, or returns it short', () => {
    const framer = new Framer(8000);
    expect(framer.push(ramp(100))).toHaveLength(0);
    const last = framer.flush()!;
    expect(last.length).toBe(160);
    expect([...last.subarray(0, 100)]).toEqual([...ramp(100)]);
    expect(last.subarray(100).every((v) => v === 0)).toBe(true);
    framer.push(ramp(50));
    expect(framer.flush(false)!.length).toBe(50);
    expect(framer.pending).toBe(0);
  });

  it('returns frames that later pushes do not overwrite', () => {
    const framer = new Framer(8000);
    const [first] = framer.push(new Float32Array(160).fill(0.5));
    framer.push(new Float32Array(200).fill(-0.5));
    expect(first!.every((v) => v === 0.5)).toBe(true);
  });

  it('drops the remainder on reset', () => {
    const framer = new Framer(48000);
    framer.push(ramp(500));
    framer.reset();
    expect(framer.pending).toBe(0);
    const [f] = framer.push(new Float32Array(960).fill(0.25));
    expect(f!.every((v) => v === 0.25)).toBe(true);
  });

  it('frames the resampler output of a 44.1 kHz stream into exact 16 kHz frames', () => {
    const r = new Resampler(44100, 16000);
    const framer = new Framer(16000);
    let frames = 0;
    const x = ramp(44100);
    for (let off = 0; off < x.length; off += 882) for (const f of framer.push(r.push(x.subarray(off, off + 882)))) frames += f.length === 320 ? 1 : 0;
    for (const f of framer.push(r.flush())) frames += f.length === 320 ? 1 : 0;
    expect(frames).toBe(50);
    expect(framer.pending).toBe(0);
  });
});

describe('splitFrames', () => {
  it('splits a buffer into frames, padding or keeping a short tail', () => {
    const x = ramp(1000);
    const padded = splitFrames(x, 24000);
    expect(padded.map((f) => f.length)).toEqual([480, 480, 480]);
    expect(padded[2]!.subarray(40).every((v) => v === 0)).toBe(true);
    expect(splitFrames(x, 24000, 20, false).map((f) => f.length)).toEqual([480, 480, 40]);
    expect(Float32Array.from(splitFrames(x, 24000, 20, false).flatMap((f) => [...f]))).toEqual(x);
  });
});
