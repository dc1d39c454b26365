// Piper voice runner against a generated stand-in model with Piper's exact signature:
//   input int64 [1, n], input_lengths int64 [1], scales float32 [3], sid int64 [1] -> output float32 [1, 1, 1, samples]
// The stand-in turns each of the first input_lengths ids into floor(HOP * length_scale) samples of value
// (id + 10 * sid) * noise_scale, so length, ids, scales and speaker are all visible in the waveform.
import { mkdtemp, rm, writeFile, copyFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HOP, SAMPLE_RATE, VOICE_JSON, writeStandInVoice } from './support/piper-voice.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PiperVoice,
  parsePiperConfig,
  phonemesToIds,
  phonemizeEspeak,
  splitClauses,
} from '../engine/models/piper.js';

let dir: string;
let voice: PiperVoice;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'parley-piper-'));
  await writeStandInVoice(dir);
  voice = await PiperVoice.load(dir);
});

afterAll(async () => {
  await voice?.release();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Expected raw waveform for ids (normalize off). */
function expectedWave(ids: number[], frame: number, sid: number, noiseScale: number): Float32Array {
  const out = new Float32Array(ids.length * frame);
  ids.forEach((id, j) => out.fill(Math.fround((id + 10 * sid) * noiseScale), j * frame, (j + 1) * frame));
  return out;
}

describe('Piper phonemization', () => {
  it('phonemizes with espeak-ng in IPA like piper (hello -> həlˈoʊ)', async () => {
    const sentences = await voice.phonemize('hello');
    expect(sentences).toEqual([['h', 'ə', 'l', 'ˈ', 'o', 'ʊ']]);
    expect(await voice.phonemeIds('hello')).toEqual([[1, 0, 20, 0, 21, 0, 22, 0, 23, 0, 24, 0, 25, 0, 2]]);
  });

  it('keeps clause punctuation and splits sentences at . ? !', async () => {
    const sentences = await phonemizeEspeak('Hello world, hello? Hello!', 'en-us');
    expect(sentences.map((s) => s.join(''))).toEqual(['həlˈoʊ wˈɜːld, həlˈoʊ?', 'həlˈoʊ!']);
  });

  it('follows espeak clause ends around abbreviations', async () => {
    // "e.g." does not end a clause for espeak, "Mr." does.
    const sentences = await phonemizeEspeak('Apples, e.g. pears. Mr. Smith.', 'en-us');
    expect(sentences.map((s) => s.join(''))).toEqual(['ˈæpəlz, fˌɔːɹɛɡzˈæmpəl pˈɛɹz.', 'mˈɪstɚ.', 'smˈɪθ.']);
  });

  it('stays aligned when espeak splits clauses differently from punctuation', async () => {
    // espeak also ends a clause at an em dash; the clause-by-clause path keeps terminators aligned.
    const sentences = await phonemizeEspeak('One \u2014 two, three. Done.', 'en-us');
    expect(sentences.map((s) => s.join(''))).toEqual(['wˈʌn tˈuː, θɹˈiː.', 'dˈʌn.']);
  });

  it('passes text safely to espeak (leading dashes are words, control characters removed)', async () => {
    const s = await voice.phonemize('-v hello\u0000 --stdin');
    expect(s).toHaveLength(1);
    expect(s[0]!.join('')).toContain('həlˈoʊ');
  });

  it('splits clauses and maps ids with BOS, pads and EOS, skipping unknown phonemes', () => {
    expect(splitClauses('One, two; three... Four?! 3.5 five')).toEqual([
      { text: 'One,', terminator: ',' },
      { text: 'two;', terminator: ';' },
      { text: 'three...', terminator: '.' },
      { text: 'Four?!', terminator: '!' },
      { text: '3.5 five', terminator: '' },
    ]);
    const map = parsePiperConfig(VOICE_JSON).phonemeIdMap;
    expect(phonemesToIds(['h', 'ɪ', '!'], map)).toEqual({ ids: [1, 0, 20, 0, 7, 0, 2], missing: ['ɪ'] });
  });

  it('rejects configs without the special symbols or sample rate', () => {
    expect(() => parsePiperConfig({ ...VOICE_JSON, phoneme_id_map: { a: [5] } })).toThrow(/phoneme_id_map/);
    expect(() => parsePiperConfig({ ...VOICE_JSON, audio: {} })).toThrow(/sample_rate/);
  });
});

describe('PiperVoice synthesis', () => {
  it('loads voice.onnx + voice.onnx.json from a directory', () => {
    expect(voice.sampleRate).toBe(SAMPLE_RATE);
    expect(voice.name).toBe('stand-in');
    expect(voice.config.numSpeakers).toBe(2);
    expect(voice.session.inputNames).toEqual(expect.arrayContaining(['input', 'input_lengths', 'scales', 'sid']));
  });

  it('synthesises "hello": length follows ids and length_scale, values follow ids and noise_scale', async () => {
    const [ids] = await voice.phonemeIds('hello');
    const raw = await voice.synthesize('hello', { normalize: false });
    expect(raw.sampleRate).toBe(SAMPLE_RATE);
    expect(raw.samples.length).toBe(ids!.length * HOP);
    expect(raw.samples).toEqual(expectedWave(ids!, HOP, 0, 0.5));

    // Piper peak-normalises each sentence by default.
    const norm = await voice.synthesize('hello');
    const max = Math.max(...ids!);
    expect(norm.samples.length).toBe(raw.samples.length);
    expect(Math.max(...norm.samples)).toBeCloseTo(1, 6);
    expect(norm.samples[0]).toBeCloseTo(ids![0]! / max, 6);
  });

  it('speed divides length_scale; speaker and noise scale reach the model', async () => {
    const [ids] = await voice.phonemeIds('hello');
    const fast = await voice.synthesize('hello', { speed: 2, normalize: false });
    expect(fast.samples.length).toBe(ids!.length * (HOP / 2));
    const slow = await voice.synthesize('hello', { speed: 0.5, normalize: false });
    expect(slow.samples.length).toBe(ids!.length * HOP * 2);
    const bob = await voice.synthesize('hello', { speaker: 'bob', noiseScale: 1, normalize: false });
    expect(bob.samples).toEqual(expectedWave(ids!, HOP, 1, 1));
    expect(() => voice.speakerId('carol')).toThrow(/unknown speaker/);
  });

  it('synthesises sentences separately and joins them with 0.2 s of silence', async () => {
    const text = 'Hello world. Hello!';
    const sentences = await voice.phonemeIds(text);
    expect(sentences).toHaveLength(2);
    const out = await voice.synthesize(text, { normalize: false });
    const gap = Math.round(0.2 * SAMPLE_RATE);
    expect(out.samples.length).toBe((sentences[0]!.length + sentences[1]!.length) * HOP + gap);
    const firstLen = sentences[0]!.length * HOP;
    expect(out.samples.subarray(firstLen, firstLen + gap).every((x) => x === 0)).toBe(true);
    expect(out.samples[firstLen + gap]).toBe(Math.fround(1 * 0.5)); // BOS id 1 of sentence two
  });

  it('returns empty audio for empty text and loads from a model path too', async () => {
    expect((await voice.synthesize('  \u0007 ')).samples.length).toBe(0);
    const other = path.join(dir, 'named');
    await mkdir(other);
    await copyFile(path.join(dir, 'voice.onnx'), path.join(other, 'en_US-test.onnx'));
    await copyFile(path.join(dir, 'voice.onnx.json'), path.join(other, 'en_US-test.onnx.json'));
    const v2 = await PiperVoice.load(path.join(other, 'en_US-test.onnx'));
    expect((await v2.synthesize('hello')).samples.length).toBe(15 * HOP);
    await v2.release();
    // A voice whose espeak voice does not exist fails at load time.
    await writeFile(path.join(other, 'en_US-test.onnx.json'), JSON.stringify({ ...VOICE_JSON, espeak: { voice: 'zz-nope' } }));
    await expect(PiperVoice.load(other)).rejects.toThrow(/espeak-ng voice "zz-nope" is not usable/);
  });
});
