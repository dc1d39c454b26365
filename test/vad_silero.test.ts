import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { resample } from '../engine/audio/resample.js';
import {
  SileroVad,
  VAD_WINDOW_SAMPLES,
  VadSegmenter,
  loadSileroVad,
  segmentsFromProbabilities,
  speechProbabilities,
  speechSegments,
  type SileroVadModel,
  type VadEvent,
} from '../engine/models/silero.js';
import { concatSamples } from '../engine/audio/types.js';

const HELLO_WORLD = '/usr/share/asterisk/sounds/en_US_f_Allison/hello-world.wav';

function readWav16(path: string): { sampleRate: number; samples: Float32Array } {
  const b = readFileSync(path);
  let o = 12;
  let sampleRate = 0;
  while (o + 8 <= b.length) {
    const id = b.toString('ascii', o, o + 4);
    const size = b.readUInt32LE(o + 4);
    if (id === 'fmt ') sampleRate = b.readUInt32LE(o + 12);
    if (id === 'data') {
      const n = Math.floor(Math.min(size, b.length - o - 8) / 2);
      const samples = new Float32Array(n);
      for (let i = 0; i < n; i++) samples[i] = b.readInt16LE(o + 8 + 2 * i) / 32768;
      return { sampleRate, samples };
    }
    o += 8 + size + (size & 1);
  }
  throw new Error(`no data chunk in ${path}`);
}

const concat = (...parts: Float32Array[]): Float32Array => concatSamples(parts);

const silence = (seconds: number) => new Float32Array(Math.round(seconds * 16000));

let model: SileroVadModel;
let speech: Float32Array; // hello-world at 16 kHz, about 1.4 s

beforeAll(async () => {
  model = await loadSileroVad();
  const wav = readWav16(HELLO_WORLD);
  expect(wav.sampleRate).toBe(8000);
  speech = resample(wav.samples, 8000, 16000);
});

describe('SileroVad stream', () => {
  it('shares one model and gives low probabilities for silence and faint noise', async () => {
    expect(await loadSileroVad()).toBe(model);
    const vad = model.createStream();
    let seed = 1;
    const noise = Float32Array.from({ length: 16000 }, () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return (seed / 2 ** 31 - 0.5) * 0.002;
    });
    const probs = [...(await vad.process(silence(1))), ...(await vad.process(noise))];
    expect(probs.length).toBe(Math.floor(32000 / VAD_WINDOW_SAMPLES));
    expect(Math.max(...probs)).toBeLessThan(0.2);
  });

  it('gives high probabilities for speech', async () => {
    const vad = await SileroVad.create();
    const probs = await vad.process(concat(silence(0.3), speech, silence(0.3)));
    const sorted = [...probs].sort((a, b) => b - a);
    expect(sorted[Math.floor(sorted.length * 0.3)]!).toBeGreaterThan(0.8);
    expect(probs[0]!).toBeLessThan(0.2);
  });

  it('buffers remainders: any chunking gives the same probabilities as whole windows', async () => {
    const audio = concat(silence(0.2), speech);
    const whole = await model.createStream().process(audio);
    const chunked = model.createStream();
    const got: number[] = [];
    // Odd chunk sizes (20 ms at 16 kHz = 320, plus a few primes), issued without awaiting each one.
    const sizes = [320, 7, 1021, 512, 1, 333];
    const pending: Promise<number[]>[] = [];
    for (let o = 0, i = 0; o < audio.length; i++) {
      const n = sizes[i % sizes.length]!;
      pending.push(chunked.process(audio.subarray(o, o + n)));
      o += n;
    }
    for (const p of await Promise.all(pending)) got.push(...p);
    expect(got.length).toBe(whole.length);
    expect(chunked.bufferedSamples).toBe(audio.length % VAD_WINDOW_SAMPLES);
    for (let i = 0; i < got.length; i++) expect(got[i]!).toBeCloseTo(whole[i]!, 5);
  });

  it('reset starts a fresh stream with independent state', async () => {
    const a = model.createStream();
    const b = model.createStream();
    const first = await a.process(speech);
    await b.process(concat(speech, speech));
    a.reset();
    expect(a.windowCount).toBe(0);
    const again = await a.process(speech);
    expect(again.length).toBe(first.length);
    for (let i = 0; i < again.length; i++) expect(again[i]!).toBeCloseTo(first[i]!, 5);
  });

  it('takes well under a millisecond per 32 ms window', async () => {
    const vad = model.createStream();
    const audio = concat(speech, silence(2), speech, silence(2)); // ~6.8 s, ~210 windows
    await vad.process(audio.subarray(0, 16000)); // warm up
    vad.reset();
    const t0 = performance.now();
    const probs = await vad.process(audio);
    const perWindow = (performance.now() - t0) / probs.length;
    console.log(`silero vad: ${perWindow.toFixed(3)} ms per 512-sample window (${probs.length} windows)`);
    expect(perWindow).toBeLessThan(5);
  });
});

describe('segmentation', () => {
  it('finds one segment roughly covering a single utterance', async () => {
    const audio = concat(silence(0.5), speech, silence(0.8));
    const segs = await speechSegments(audio);
    expect(segs).toHaveLength(1);
    const [s] = segs;
    // hello-world's speech runs from about 0.2 s to its end (1.4 s); here shifted by 0.5 s.
    expect(s!.start).toBeGreaterThan(0.5);
    expect(s!.start).toBeLessThan(1.0);
    expect(s!.end).toBeGreaterThan(1.75);
    expect(s!.end).toBeLessThan(2.3);
  });

  it('finds two segments for two utterances one second apart', async () => {
    const audio = concat(silence(0.3), speech, silence(1), speech, silence(0.7));
    const segs = await speechSegments(audio);
    expect(segs).toHaveLength(2);
    const secondStart = 0.3 + speech.length / 16000 + 1;
    expect(segs[0]!.end).toBeLessThan(secondStart);
    expect(segs[1]!.start).toBeGreaterThan(segs[0]!.end + 0.5);
    expect(segs[1]!.start).toBeGreaterThan(secondStart);
    expect(segs[1]!.start).toBeLessThan(secondStart + 0.5);
  });

  it('emits streaming start/end events from live 20 ms frames', async () => {
    const vad = model.createStream();
    const seg = new VadSegmenter();
    const audio = concat(silence(0.4), speech, silence(1), speech, silence(0.8));
    const events: VadEvent[] = [];
    for (let o = 0; o < audio.length; o += 320) events.push(...seg.push(await vad.process(audio.subarray(o, o + 320))));
    events.push(...seg.flush());
    expect(events.map((e) => e.type)).toEqual(['start', 'end', 'start', 'end']);
    const [s1, e1] = events;
    if (s1?.type !== 'start' || e1?.type !== 'end') throw new Error('unexpected events');
    // Start is confirmed after min speech (250 ms), and reported back-dated to the onset.
    expect(s1.at - s1.time).toBeGreaterThanOrEqual(0.25);
    expect(s1.time).toBeGreaterThan(0.4);
    // End is decided after min silence (500 ms).
    expect(e1.at - e1.end).toBeGreaterThanOrEqual(0.45);
  });

  it('VadSegmenter applies thresholds, minimum speech and minimum silence (pure)', () => {
    const w = 0.032;
    const seg = new VadSegmenter({ startThreshold: 0.5, endThreshold: 0.35, minSpeechMs: 96, minSilenceMs: 160, speechPadMs: 0 });
    // A 2-window blip is not speech.
    expect(seg.push([0.1, 0.9, 0.9, 0.1, 0.1])).toEqual([]);
    // 3 windows at >= end threshold after a start confirm speech starting at window 5.
    const ev = seg.push([0.6, 0.4, 0.4]);
    expect(ev).toEqual([{ type: 'start', time: expect.closeTo(5 * w, 6), at: expect.closeTo(8 * w, 6) }]);
    // Dips between the thresholds do not end speech; a short silence (< 5 windows) does not either.
    expect(seg.push([0.4, 0.2, 0.2, 0.2, 0.9, 0.2, 0.2, 0.2, 0.2])).toEqual([]);
    const end = seg.push([0.2]);
    expect(end).toEqual([{ type: 'end', start: expect.closeTo(5 * w, 6), end: expect.closeTo(13 * w, 6), at: expect.closeTo(18 * w, 6) }]);
    expect(seg.inSpeech).toBe(false);
    // Speech still open at the end of input is closed by flush.
    seg.push([0.9, 0.9, 0.9, 0.9]);
    expect(seg.flush()).toEqual([{ type: 'end', start: expect.closeTo(18 * w, 6), end: expect.closeTo(22 * w, 6), at: expect.closeTo(22 * w, 6) }]);
  });

  it('splits long speech at its quietest point to respect maxSegmentSeconds', () => {
    // 40 s of speech with a dip (not long enough to end speech) at 22 s.
    const probs = Array.from({ length: Math.round(40 / 0.032) }, (_, i) => (Math.abs(i * 0.032 - 22) < 0.05 ? 0.4 : 0.95));
    const segs = segmentsFromProbabilities(probs, 40, { maxSegmentSeconds: 30, speechPadMs: 0 });
    expect(segs).toHaveLength(2);
    expect(segs[0]!.start).toBe(0);
    expect(segs[0]!.end).toBeCloseTo(22, 0);
    expect(segs[1]!.end).toBeCloseTo(40, 1);
    for (const s of segs) expect(s.end - s.start).toBeLessThanOrEqual(30);
    const unsplit = segmentsFromProbabilities(probs, 40, { speechPadMs: 0 });
    expect(unsplit).toHaveLength(1);
  });

  it('speechProbabilities covers a partial last window', async () => {
    const probs = await speechProbabilities(new Float32Array(1000), model);
    expect(probs.length).toBe(2);
  });
});
