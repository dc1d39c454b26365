// SVOX Pico voices: the pure parts (which voices are offered and found, the text Pico gets, speed), the registry's
// catalog with and without them, then the real engine (npm @echogarden/svoxpico-wasm) on worker threads with Debian's
// language files (skipped, saying why, where libttspico-data is not installed; .ci/run installs it).
import { afterAll, describe, expect, it } from 'vitest';
import { PICO_VOICES, findPico, picoFiles, picoSpeedLevel, picoText } from '../engine/models/pico/catalog.js';
import { PicoSynthesizer } from '../engine/models/pico/index.js';
import { ModelRegistry } from '../engine/models/registry.js';
import { PICO_INSTALLED, PICO_SKIP_NOTE } from './support/pico.js';

const registryOptions = { cacheDir: '/nonexistent', concurrency: 1, maxWaiting: 1, synthesisWorkers: 1, rhvoice: false as const };
const rms = (x: Float32Array) => Math.sqrt(x.reduce((a, s) => a + s * s, 0) / Math.max(1, x.length));

describe('SVOX Pico catalog (pure)', () => {
  it('offers one voice per language, with its two files', () => {
    expect(PICO_VOICES.map((v) => [v.id, v.locale, v.gender, picoFiles(v)])).toEqual([
      ['pico-en-US', 'en-US', 'female', ['en-US_ta.bin', 'en-US_lh0_sg.bin']],
      ['pico-en-GB', 'en-GB', 'female', ['en-GB_ta.bin', 'en-GB_kh0_sg.bin']],
      ['pico-de-DE', 'de-DE', 'female', ['de-DE_ta.bin', 'de-DE_gl0_sg.bin']],
      ['pico-es-ES', 'es-ES', 'female', ['es-ES_ta.bin', 'es-ES_zl0_sg.bin']],
      ['pico-fr-FR', 'fr-FR', 'female', ['fr-FR_ta.bin', 'fr-FR_nk0_sg.bin']],
      ['pico-it-IT', 'it-IT', 'female', ['it-IT_ta.bin', 'it-IT_cm0_sg.bin']],
    ]);
  });

  it('finds the voices whose files are there, and says why there are none', () => {
    const files = new Set(PICO_VOICES.flatMap((v) => picoFiles(v).map((f) => `/d/${f}`)));
    const ok = () => undefined;
    expect(findPico('/d', ok, (p) => files.has(p)).voices).toHaveLength(6);
    expect(findPico('/d', ok, (p) => files.has(p) && !p.includes('de-DE_gl0')).voices.map((v) => v.locale)).toEqual(['en-US', 'en-GB', 'es-ES', 'fr-FR', 'it-IT']);
    expect(findPico('/d', ok, () => false)).toEqual({ voices: [], missing: 'no SVOX Pico language files in /d (apt-get install libttspico-data)' });
    const noEngine = findPico('/d', () => {
      throw new Error("Cannot find module '@echogarden/svoxpico-wasm'");
    }, (p) => files.has(p));
    expect(noEngine).toEqual({ voices: [], missing: expect.stringContaining('svoxpico-wasm does not load') });
  });

  it('text: angle brackets are not markup, control characters go, speed is our own tag, capped at a word', () => {
    expect(picoText('a <speed level="500">b</speed>\u0000c', 1, 100)).toBe('a speed level="500" b /speed c');
    expect(picoText('Guten Tag.', 2, 100)).toBe('<speed level="200">Guten Tag.</speed>');
    expect(picoText('aaaa bbbb cccc dddd', undefined, 16)).toBe('aaaa bbbb cccc');
    expect([picoSpeedLevel(1), picoSpeedLevel(0.5), picoSpeedLevel(10), picoSpeedLevel(0.01), picoSpeedLevel(NaN), picoSpeedLevel(undefined)]).toEqual([100, 50, 500, 20, 100, 100]);
  });

  it('a registry without the language files has no Pico voices and says why', async () => {
    const registry = new ModelRegistry({ ...registryOptions, pico: '/nonexistent/pico' });
    expect(registry.voices().some((v) => v.model === 'pico')).toBe(false);
    expect(registry.languages()).toEqual(['en']);
    expect(registry.engines().find((e) => e.id === 'pico')).toEqual({ id: 'pico', voices: [], missing: expect.stringContaining('/nonexistent/pico') });
    expect(registry.models().map((m) => m.id)).not.toContain('pico');
    await expect(registry.synthesize('pico-de-DE', 'Hallo.', 1)).rejects.toThrow('Unknown voice_id "pico-de-DE"');
    await registry.close();
  });
});

describe.skipIf(!PICO_INSTALLED)(`SVOX Pico engine (Debian libttspico-data)${PICO_SKIP_NOTE}`, () => {
  const synth = new PicoSynthesizer({ voices: PICO_VOICES, workers: 2 });
  afterAll(() => synth.close());

  const SAY: Record<string, string> = {
    'pico-en-US': 'The birch canoe slid on the smooth planks.',
    'pico-en-GB': 'Glue the sheet to the dark blue background.',
    'pico-de-DE': 'Guten Tag, wie kann ich Ihnen heute helfen?',
    'pico-es-ES': 'Buenos días, ¿en qué puedo ayudarle hoy?',
    'pico-fr-FR': "Bonjour, comment puis-je vous aider aujourd'hui ?",
    'pico-it-IT': 'Buongiorno, come posso aiutarla oggi?',
  };

  it('each voice speaks at 16 kHz, audible, of plausible length, and fast', async () => {
    await synth.warmup();
    for (const [voice, text] of Object.entries(SAY)) {
      const t0 = performance.now();
      const speech = await synth.synthesize(text, { voice });
      const ms = performance.now() - t0;
      const seconds = speech.samples.length / speech.sampleRate;
      expect(speech.sampleRate, voice).toBe(16000);
      expect(seconds, voice).toBeGreaterThan(1.5);
      expect(seconds, voice).toBeLessThan(6);
      expect(rms(speech.samples), voice).toBeGreaterThan(0.02);
      expect(ms / 1000 / seconds, `${voice}: ${ms.toFixed(0)} ms for ${seconds.toFixed(2)} s`).toBeLessThan(0.5);
    }
  });

  it('the same text is different speech in German than in English; speed 2 is shorter; empty text is no audio', async () => {
    const text = 'Hallo, mein Name ist Anna.';
    const de = await synth.synthesize(text, { voice: 'pico-de-DE' });
    const en = await synth.synthesize(text, { voice: 'pico-en-US' });
    expect(Buffer.from(de.samples.buffer).equals(Buffer.from(en.samples.buffer))).toBe(false);
    expect(Math.abs(de.samples.length - en.samples.length)).toBeGreaterThan(0);
    const fast = await synth.synthesize(text, { voice: 'pico-de-DE', speed: 2 });
    expect(fast.samples.length / de.samples.length).toBeLessThan(0.8);
    expect((await synth.synthesize(' <> ... \u0001', { voice: 'pico-de-DE' })).samples.length).toBe(0);
    await expect(synth.synthesize('Hallo.', { voice: 'pico-xx' })).rejects.toThrow('unknown SVOX Pico voice');
  });

  it('two workers at once give the same speech as one after the other', async () => {
    // Not the same samples: Pico's signal generator draws random phases, so one text said twice by the same engine
    // differs sample by sample (measured: the difference is as loud as the speech) while its length and loudness do not.
    const entries = Object.entries(SAY);
    const serial = [];
    for (const [voice, text] of entries) serial.push(await synth.synthesize(text, { voice }));
    const parallel = await Promise.all(entries.map(([voice, text]) => synth.synthesize(text, { voice })));
    for (let i = 0; i < entries.length; i++) {
      const [a, b] = [parallel[i]!.samples, serial[i]!.samples];
      expect(a.length, entries[i]![0]).toBe(b.length);
      expect(Math.abs(rms(a) - rms(b)) / rms(b), entries[i]![0]).toBeLessThan(0.1);
    }
  });

  it('the registry lists them after Flite with their metadata, and speaks them through the queue', async () => {
    const registry = new ModelRegistry(registryOptions);
    try {
      expect(registry.defaultVoiceId).toBe('slt');
      expect(registry.languages()).toEqual(['de', 'en', 'es', 'fr', 'it']);
      expect(registry.voice('pico-de-DE')).toEqual({ voiceId: 'pico-de-DE', displayName: 'pico-de-DE', model: 'pico', sampleRate: 16000, gender: 'female', language: ['german'], locale: 'de-DE', accent: 'german', description: expect.stringContaining('SVOX Pico') });
      expect(registry.engines().map((e) => [e.id, e.voices.length])).toEqual([['rhvoice', 0], ['pico', 6], ['flite', 5], ['piper', 0]]);
      expect(registry.models().find((m) => m.id === 'pico')).toMatchObject({ kind: 'tts', description: expect.stringContaining('libttspico-data') });
      const speech = await registry.synthesize('pico-it-IT', 'Grazie mille.', 1);
      expect(speech.sampleRate).toBe(16000);
      expect(rms(speech.samples)).toBeGreaterThan(0.02);
    } finally {
      await registry.close();
    }
  });
});
