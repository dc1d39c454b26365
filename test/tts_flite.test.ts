import { afterAll, describe, expect, it } from 'vitest';
import {
  FLITE_VOICES,
  FliteSynthesizer,
  decodeFliteWav,
  fliteModuleStats,
  sanitizeFliteText,
} from '../engine/models/flite.js';

const SENTENCE = 'Thank you for calling. How can I help you today?';

function rms(x: Float32Array): number {
  let s = 0;
  for (const v of x) s += v * v;
  return Math.sqrt(s / Math.max(1, x.length));
}

function peak(x: Float32Array): number {
  let m = 0;
  for (const v of x) m = Math.max(m, Math.abs(v));
  return m;
}

const pooled = new FliteSynthesizer({ workers: 2 });
const inline = new FliteSynthesizer({ workers: 0 });

afterAll(async () => {
  await pooled.close();
  await inline.close();
});

describe('flite voices', () => {
  it('lists the five general voices with their native rates', () => {
    expect(pooled.voices().map((v) => [v.id, v.sampleRate])).toEqual([
      ['kal', 8000],
      ['kal16', 16000],
      ['awb', 16000],
      ['rms', 16000],
      ['slt', 16000],
    ]);
  });

  it('matches the voices compiled into the wasm module', async () => {
    const names = await pooled.probeVoices();
    for (const v of FLITE_VOICES) expect(names).toContain(v.id);
    expect(names).toContain('awb_time'); // limited-domain clock voice, deliberately not offered
  });
});

describe('flite synthesis', () => {
  for (const voice of FLITE_VOICES) {
    it(`synthesises a sentence with ${voice.id}`, async () => {
      const t0 = performance.now();
      const out = await pooled.synthesize(SENTENCE, { voice: voice.id });
      const ms = performance.now() - t0;
      const seconds = out.samples.length / out.sampleRate;
      expect(out.sampleRate).toBe(voice.sampleRate);
      expect(seconds).toBeGreaterThan(1);
      expect(seconds).toBeLessThan(6);
      expect(rms(out.samples)).toBeGreaterThan(0.02);
      expect(peak(out.samples)).toBeLessThanOrEqual(1);
      console.log(`flite ${voice.id}: ${seconds.toFixed(2)} s of audio in ${ms.toFixed(0)} ms`);
    });
  }

  it('speaks faster at speed 2 and slower at speed 0.5', async () => {
    const normal = await inline.synthesize(SENTENCE, { voice: 'kal16' });
    const fast = await inline.synthesize(SENTENCE, { voice: 'kal16', speed: 2 });
    const slow = await inline.synthesize(SENTENCE, { voice: 'kal16', speed: 0.5 });
    expect(fast.samples.length).toBeLessThan(normal.samples.length * 0.7);
    expect(slow.samples.length).toBeGreaterThan(normal.samples.length * 1.5);
  });

  it('gives each phone its end time, matching the audio: silence where it says pau', async () => {
    const { audio, segments } = await inline.synthesizeWithSegments('I want to cancel my order. It has not shipped yet.', { voice: 'kal16' });
    const plain = await inline.synthesize('I want to cancel my order. It has not shipped yet.', { voice: 'kal16' });
    expect(audio.samples).toEqual(plain.samples);
    expect(segments.length).toBeGreaterThan(30);
    for (let i = 1; i < segments.length; i++) expect(segments[i]!.end).toBeGreaterThan(segments[i - 1]!.end);
    // The pause between the two sentences is quiet, the phones on either side are not.
    const inner = segments.findIndex((s, i) => s.phone === 'pau' && i > 0 && i < segments.length - 1);
    expect(inner).toBeGreaterThan(0);
    const level = (from: number, to: number) => rms(audio.samples.subarray(Math.round(from * audio.sampleRate), Math.round(to * audio.sampleRate)));
    const [before, pau] = [segments[inner - 1]!, segments[inner]!];
    expect(level(before.end + 0.03, pau.end - 0.03)).toBeLessThan(0.003);
    expect(level(segments[inner - 2]!.end, before.end)).toBeGreaterThan(0.01);
    expect(Math.abs(segments.at(-2)!.end - audio.samples.length / audio.sampleRate)).toBeLessThan(0.25);
  });

  it('runs inline and in workers with the same result', async () => {
    const a = await inline.synthesize('Inline and pooled agree.', { voice: 'kal' });
    const b = await pooled.synthesize('Inline and pooled agree.', { voice: 'kal' });
    expect(a.sampleRate).toBe(b.sampleRate);
    expect(a.samples.length).toBe(b.samples.length);
    expect(a.samples).toEqual(b.samples);
  });

  it('handles concurrent requests through the pool', async () => {
    const texts = ['One.', 'Two words.', 'Three little words.', 'Four is a number.', 'Five and done.'];
    const outs = await Promise.all(texts.map((t, i) => pooled.synthesize(t, { voice: i % 2 ? 'slt' : 'kal16' })));
    for (const o of outs) expect(o.samples.length).toBeGreaterThan(o.sampleRate * 0.3);
  });

  it('compiles the wasm module once per process, and later syntheses are fast', async () => {
    const t0 = performance.now();
    await inline.synthesize('Hello there.', { voice: 'kal' });
    const ms = performance.now() - t0;
    const stats = fliteModuleStats();
    expect(stats.compiles).toBe(1);
    expect(stats.wasmBytes).toBeGreaterThan(10_000_000);
    expect(ms).toBeLessThan(1000);
    console.log(`flite wasm compile ${stats.compileMs.toFixed(0)} ms (once); short kal synthesis ${ms.toFixed(0)} ms`);
  });

  it('treats text as text: leading dashes, control characters, unicode punctuation', async () => {
    const out = await inline.synthesize('-voice rms -o /tmp/x.wav', { voice: 'kal' });
    expect(out.sampleRate).toBe(8000);
    expect(out.samples.length).toBeGreaterThan(4000);
    expect(sanitizeFliteText('a\u0000b\u0007c\n\td')).toBe('a b c d');
    expect(sanitizeFliteText('“Café” — naïve…')).toBe('"Cafe" , naive...');
    expect(sanitizeFliteText('word '.repeat(1000), 100).length).toBeLessThanOrEqual(100);
  });

  it('returns empty audio for text with nothing to say and rejects unknown voices', async () => {
    const empty = await inline.synthesize(' \u0001 ... ', { voice: 'slt' });
    expect(empty).toEqual({ sampleRate: 16000, samples: new Float32Array(0) });
    await expect(inline.synthesize('hello', { voice: 'awb_time' })).rejects.toThrow(/unknown flite voice/);
  });

  it('decodes 16-bit PCM WAV', () => {
    const bytes = new Uint8Array(44 + 4);
    const dv = new DataView(bytes.buffer);
    bytes.set(new TextEncoder().encode('RIFF'), 0);
    dv.setUint32(4, 40, true);
    bytes.set(new TextEncoder().encode('WAVEfmt '), 8);
    dv.setUint32(16, 16, true);
    dv.setUint16(20, 1, true);
    dv.setUint16(22, 1, true);
    dv.setUint32(24, 16000, true);
    dv.setUint32(28, 32000, true);
    dv.setUint16(32, 2, true);
    dv.setUint16(34, 16, true);
    bytes.set(new TextEncoder().encode('data'), 36);
    dv.setUint32(40, 4, true);
    dv.setInt16(44, 16384, true);
    dv.setInt16(46, -32768, true);
    expect(decodeFliteWav(bytes)).toEqual({ sampleRate: 16000, samples: Float32Array.from([0.5, -1]) });
  });
});
