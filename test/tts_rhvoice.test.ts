// RHVoice voices: the pure parts (which voices are offered and found, speed, word timings, the fallback voice by
// gender, the registry's catalog with and without RHVoice), then the real engine through koffi on worker threads
// (skipped, saying why, where Debian's rhvoice-english is not installed; .ci/run installs it).
import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { RHVOICE_VOICES, findRhvoice, rhvoiceRate, rhvoiceResourcePaths, wordTimings, type RhvoiceWordEvent } from '../engine/models/rhvoice/catalog.js';
import { RhvoiceSynthesizer, rhvoiceText, RHVOICE_DATA_DIR } from '../engine/models/rhvoice/index.js';
import { openRhvoice } from '../engine/models/rhvoice/binding.js';
import { FALLBACK_VOICES, fallbackVoice } from '../engine/models/voice-defaults.js';
import { ModelRegistry } from '../engine/models/registry.js';
import { RHVOICE_INSTALLED, RHVOICE_SKIP_NOTE } from './support/rhvoice.js';

// Without SVOX Pico's voices (test/tts_pico.test.ts has them): the lists here are RHVoice's and Flite's.
const registryOptions = { cacheDir: '/nonexistent', concurrency: 1, maxWaiting: 1, synthesisWorkers: 1, pico: false };

describe('RHVoice catalog (pure)', () => {
  it('offers only the four LGPL voices, with ids that do not collide with Flite\'s', () => {
    expect(RHVOICE_VOICES.map((v) => [v.id, v.profile, v.gender, v.accent])).toEqual([
      ['rhvoice-slt', 'slt', 'female', 'american'],
      ['rhvoice-clb', 'clb', 'female', 'american'],
      ['rhvoice-bdl', 'bdl', 'male', 'american'],
      ['rhvoice-alan', 'alan', 'male', 'scottish'],
    ]);
    // The engine's resources are the English data and these four directories: never voices/ as a whole.
    expect(rhvoiceResourcePaths('/d', RHVOICE_VOICES)).toEqual(['/d/languages/English', '/d/voices/slt', '/d/voices/clb', '/d/voices/bdl', '/d/voices/alan']);
  });

  it('finds the voices whose data is installed, and says why there are none', () => {
    const all = new Set([
      '/d/languages/English/language.info',
      ...['slt', 'bdl', 'clb', 'alan', 'lyubov', 'evgeniy-eng'].flatMap((v) => [`/d/voices/${v}/voice.info`, `/d/voices/${v}/24000`]),
    ]);
    const ok = () => undefined;
    expect(findRhvoice('/d', ok, (p) => all.has(p)).voices.map((v) => v.id)).toEqual(['rhvoice-slt', 'rhvoice-clb', 'rhvoice-bdl', 'rhvoice-alan']);
    // Only some voices installed: those.
    const some = new Set([...all].filter((p) => !p.includes('/clb/')));
    expect(findRhvoice('/d', ok, (p) => some.has(p)).voices.map((v) => v.profile)).toEqual(['slt', 'bdl', 'alan']);
    // No language data, no library: none, and why.
    expect(findRhvoice('/d', ok, () => false)).toEqual({ voices: [], missing: expect.stringContaining('apt-get install rhvoice-english librhvoice5') });
    const noLib = findRhvoice('/d', () => {
      throw new Error('libRHVoice.so.5: cannot open shared object file');
    }, (p) => all.has(p));
    expect(noLib.voices).toEqual([]);
    expect(noLib.missing).toContain('cannot open shared object file');
  });

  it('maps speed to relative_rate, clamped', () => {
    expect([rhvoiceRate(1), rhvoiceRate(2), rhvoiceRate(0.5), rhvoiceRate(10), rhvoiceRate(0.01), rhvoiceRate(undefined), rhvoiceRate(NaN), rhvoiceRate(-1)]).toEqual([1, 2, 0.5, 4, 0.25, 1, 1, 1]);
  });

  it('turns the word callbacks (UTF-8 byte offsets, samples delivered) into word timings', () => {
    const text = Buffer.from('Café résumé! Done .', 'utf8');
    const ev = (kind: 'start' | 'end', word: string, sample: number, from = 0): RhvoiceWordEvent => {
      const position = text.indexOf(Buffer.from(word, 'utf8'), from);
      return { kind, position, length: Buffer.byteLength(word), sample };
    };
    const events = [
      ev('start', 'Café', 0), ev('end', 'Café', 2400),
      ev('start', 'résumé!', 2400), ev('end', 'résumé!', 7200),
      // No end for "Done": it ends where the audio ends. A lone "." is no word.
      ev('start', 'Done', 9600), ev('start', '.', 12000, 17), ev('end', '.', 12000, 17),
    ];
    expect(wordTimings(text, events, 24000, 14400)).toEqual([
      { word: 'Café', start: 0, end: 0.1 },
      { word: 'résumé', start: 0.1, end: 0.3 },
      { word: 'Done', start: 0.4, end: 0.6 },
    ]);
  });

  it('cleans text: no control or format characters, written forms spelled out, capped at a word', () => {
    expect(rhvoiceText('Hi\u0000 there\u200b, mail a@b.com', 100)).toBe('Hi there , mail a at b dot com');
    expect(rhvoiceText('aaaa bbbb cccc dddd', 16)).toBe('aaaa bbbb cccc');
  });

  it('falls back by gender to RHVoice slt/bdl when installed, else Flite slt/rms', () => {
    const withRhvoice = (id: string) => id.startsWith('rhvoice-') || ['slt', 'rms'].includes(id);
    const fliteOnly = (id: string) => ['slt', 'rms'].includes(id);
    expect([fallbackVoice('female', withRhvoice), fallbackVoice('male', withRhvoice), fallbackVoice(undefined, withRhvoice), fallbackVoice('other', withRhvoice)]).toEqual(['rhvoice-slt', 'rhvoice-bdl', 'rhvoice-slt', 'rhvoice-slt']);
    expect([fallbackVoice('female', fliteOnly), fallbackVoice('male', fliteOnly)]).toEqual(['slt', 'rms']);
    expect(FALLBACK_VOICES.rhvoice).toEqual({ female: 'rhvoice-slt', male: 'rhvoice-bdl' });
  });

  it('a registry without RHVoice lists Flite alone, Flite slt the default, and says why', async () => {
    const registry = new ModelRegistry({ ...registryOptions, rhvoice: '/nonexistent/RHVoice' });
    expect(registry.defaultVoiceId).toBe('slt');
    expect(registry.fallbackVoice('male')).toBe('rms');
    expect(registry.voices().map((v) => v.voiceId)).toEqual(['slt', 'kal', 'kal16', 'awb', 'rms']);
    expect(registry.models().map((m) => m.id)).not.toContain('rhvoice');
    expect(registry.engines()[0]).toEqual({ id: 'rhvoice', voices: [], missing: expect.stringContaining('/nonexistent/RHVoice') });
    await expect(registry.synthesize('rhvoice-slt', 'Hello.', 1)).rejects.toThrow('Unknown voice_id "rhvoice-slt"');
    await registry.close();
    const off = new ModelRegistry({ ...registryOptions, rhvoice: false });
    expect(off.engines()[0]).toEqual({ id: 'rhvoice', voices: [], missing: 'switched off' });
    await off.close();
  });
});

describe.skipIf(!RHVOICE_INSTALLED)(`RHVoice engine (Debian rhvoice-english)${RHVOICE_SKIP_NOTE}`, () => {
  const synth = new RhvoiceSynthesizer({ voices: RHVOICE_VOICES, workers: 2 });
  afterAll(() => synth.close());

  it('loads only the four LGPL voices, even with the non-commercial ones installed beside them', () => {
    const engine = openRhvoice(rhvoiceResourcePaths(RHVOICE_DATA_DIR, RHVOICE_VOICES));
    expect(engine.voices.map((v) => v.name).sort()).toEqual(['Alan', 'Bdl', 'Clb', 'Slt']);
    expect(engine.voices.every((v) => v.language === 'en')).toBe(true);
    // A voice outside our resources cannot be asked for.
    expect(() => engine.speak('Hello.', 'lyubov', 1)).toThrow(/lyubov/);
    expect(path.basename(RHVOICE_DATA_DIR)).toBe('RHVoice');
  });

  it('each voice speaks at 24 kHz with word timings in order, and fast (real-time factor measured)', async () => {
    await synth.warmup();
    const text = 'The birch canoe slid on the smooth planks.';
    for (const v of RHVOICE_VOICES) {
      const t0 = performance.now();
      const speech = await synth.synthesize(text, { voice: v.id });
      const ms = performance.now() - t0;
      const seconds = speech.samples.length / speech.sampleRate;
      expect(speech.sampleRate, v.id).toBe(24000);
      expect(seconds, v.id).toBeGreaterThan(1.5);
      expect(seconds, v.id).toBeLessThan(5);
      const rms = Math.sqrt(speech.samples.reduce((a, x) => a + x * x, 0) / speech.samples.length);
      expect(rms, v.id).toBeGreaterThan(0.01);
      expect(speech.words?.map((w) => w.word), v.id).toEqual(['The', 'birch', 'canoe', 'slid', 'on', 'the', 'smooth', 'planks']);
      const words = speech.words ?? [];
      for (let i = 0; i < words.length; i++) {
        const w = words[i]!;
        expect(w.end).toBeGreaterThanOrEqual(w.start);
        if (i > 0) expect(w.start).toBeGreaterThanOrEqual(words[i - 1]!.end);
      }
      expect(words.at(-1)!.end).toBeLessThanOrEqual(seconds);
      // Real-time factor ~0.02-0.05 here; a generous bound for a loaded 2-core machine.
      expect(ms / 1000 / seconds, `${v.id}: ${ms.toFixed(0)} ms for ${seconds.toFixed(2)} s`).toBeLessThan(0.5);
    }
  });

  it('speed 2 halves the duration; empty text is no audio; unknown voices are refused', async () => {
    const text = 'Glue the sheet to the dark blue background.';
    const normal = await synth.synthesize(text, { voice: 'rhvoice-bdl' });
    const fast = await synth.synthesize(text, { voice: 'rhvoice-bdl', speed: 2 });
    expect(fast.samples.length / normal.samples.length).toBeGreaterThan(0.4);
    expect(fast.samples.length / normal.samples.length).toBeLessThan(0.6);
    expect((await synth.synthesize(' ... \u0001', { voice: 'rhvoice-bdl' })).samples.length).toBe(0);
    await expect(synth.synthesize('Hello.', { voice: 'rhvoice-lyubov' })).rejects.toThrow('unknown RHVoice voice');
  });

  it('two workers at once give the same audio as one after the other', async () => {
    const texts = ['It is easy to tell the depth of a well.', 'These days a chicken leg is a rare dish.', 'Rice is often served in round bowls.', 'The juice of lemons makes fine punch.'];
    const serial = [];
    for (const [i, t] of texts.entries()) serial.push(await synth.synthesize(t, { voice: RHVOICE_VOICES[i]!.id }));
    const parallel = await Promise.all(texts.map((t, i) => synth.synthesize(t, { voice: RHVOICE_VOICES[i]!.id })));
    for (let i = 0; i < texts.length; i++) expect(Buffer.from(parallel[i]!.samples.buffer).equals(Buffer.from(serial[i]!.samples.buffer)), texts[i]).toBe(true);
  });

  it('the registry lists them first, RHVoice slt the default, and speaks them through the queue', async () => {
    const registry = new ModelRegistry(registryOptions);
    try {
      expect(registry.defaultVoiceId).toBe('rhvoice-slt');
      expect(registry.fallbackVoice('male')).toBe('rhvoice-bdl');
      expect(registry.voices().slice(0, 4)).toEqual([
        { voiceId: 'rhvoice-slt', displayName: 'rhvoice-slt', model: 'rhvoice', sampleRate: 24000, gender: 'female', language: ['english'], locale: 'en-US', accent: 'american', description: expect.stringContaining('RHVoice') },
        expect.objectContaining({ voiceId: 'rhvoice-clb', model: 'rhvoice', gender: 'female', accent: 'american' }),
        expect.objectContaining({ voiceId: 'rhvoice-bdl', model: 'rhvoice', gender: 'male', accent: 'american' }),
        expect.objectContaining({ voiceId: 'rhvoice-alan', model: 'rhvoice', gender: 'male', accent: 'scottish' }),
      ]);
      expect(registry.voice('slt')?.model).toBe('flite');
      expect(registry.engines().map((e) => [e.id, e.voices.length])).toEqual([['rhvoice', 4], ['pico', 0], ['flite', 5], ['piper', 0]]);
      const speech = await registry.synthesize('rhvoice-clb', 'Hello there.', 1);
      expect(speech.sampleRate).toBe(24000);
      expect(speech.words?.map((w) => w.word)).toEqual(['Hello', 'there']);
    } finally {
      await registry.close();
    }
  });
});
