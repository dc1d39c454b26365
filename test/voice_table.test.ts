// The one voice table (engine/models/voice-table.ts): hosted voice ids -> the nearest voice this server has, by
// language, gender and accent; `language` choosing the voice and refusals naming the field. Pure: fixed catalogs with
// and without RHVoice and SVOX Pico.
import { describe, expect, it } from 'vitest';
import { HOSTED_VOICES, baseLanguage, chooseVoice, nearestVoice, type LocalVoice } from '../engine/models/voice-table.js';
import { S2S_VOICES, DEFAULT_VOICE } from '../transports/ws/s2s-protocol.js';

const v = (voiceId: string, gender: string, accent: string, language: string): LocalVoice => ({ voiceId, gender, accent, language });
const FLITE = [v('kal', 'male', 'american', 'en'), v('kal16', 'male', 'american', 'en'), v('awb', 'male', 'scottish', 'en'), v('rms', 'male', 'american', 'en'), v('slt', 'female', 'american', 'en')];
const RHVOICE = [v('rhvoice-slt', 'female', 'american', 'en'), v('rhvoice-clb', 'female', 'american', 'en'), v('rhvoice-bdl', 'male', 'american', 'en'), v('rhvoice-alan', 'male', 'scottish', 'en')];
const PICO = [
  v('pico-en-US', 'female', 'american', 'en'), v('pico-en-GB', 'female', 'british', 'en'), v('pico-de-DE', 'female', 'german', 'de'),
  v('pico-es-ES', 'female', 'castilian', 'es'), v('pico-fr-FR', 'female', 'french', 'fr'), v('pico-it-IT', 'female', 'italian', 'it'),
];
const ALL = [...RHVOICE, ...FLITE, ...PICO];
const FLITE_PICO = [...FLITE, ...PICO];

const pick = (voices: LocalVoice[], req: Parameters<typeof chooseVoice>[1]) => {
  const c = chooseVoice(voices, req);
  return 'voiceId' in c ? c.voiceId : `${c.field}!`;
};

describe('voice table', () => {
  it('every speech-to-speech voice name (and the default) is in the table, with a gender', () => {
    const names = [...Object.values(S2S_VOICES).flat(), DEFAULT_VOICE];
    expect(names).toHaveLength(31);
    for (const n of names) expect(HOSTED_VOICES[n], n).toMatchObject({ gender: expect.stringMatching(/^(female|male)$/), language: 'en' });
    expect(HOSTED_VOICES.nyah).toEqual({ gender: 'female', accent: 'american', language: 'en' });
  });

  it('hosted ids map to the nearest local voice: RHVoice when installed, else Flite; accent breaks ties', () => {
    const req = (voiceId: string) => ({ voiceId, mode: 'request' as const });
    expect(['nyah', 'zoe', 'sterling', 'sam', 'tate'].map((id) => pick(ALL, req(id)))).toEqual(['rhvoice-slt', 'rhvoice-slt', 'rhvoice-bdl', 'rhvoice-alan', 'rhvoice-alan']);
    expect(['nyah', 'zoe', 'sterling', 'sam', 'tate'].map((id) => pick(FLITE_PICO, req(id)))).toEqual(['slt', 'slt', 'rms', 'awb', 'awb']);
    // Every table entry resolves to a voice of its gender on either machine.
    for (const voices of [ALL, FLITE]) {
      for (const [id, t] of Object.entries(HOSTED_VOICES)) {
        const got = voices.find((x) => x.voiceId === pick(voices, req(id)));
        expect(got?.gender, id).toBe(t.gender);
        expect(got?.language, id).toBe('en');
      }
    }
  });

  it('`language` picks a voice of that language for a hosted id; our own voice of another language is refused naming `language`', () => {
    expect(['de', 'es', 'fr', 'it', 'en', 'de-DE', 'auto'].map((language) => pick(ALL, { voiceId: 'nyah', language, mode: 'request' }))).toEqual([
      'pico-de-DE', 'pico-es-ES', 'pico-fr-FR', 'pico-it-IT', 'rhvoice-slt', 'pico-de-DE', 'rhvoice-slt',
    ]);
    // A male hosted voice in German: language first, so Pico's (female) German voice.
    expect(pick(ALL, { voiceId: 'sterling', language: 'fr', mode: 'request' })).toBe('pico-fr-FR');
    // Our own voices: spoken as asked when the language matches (or none is given).
    expect(pick(ALL, { voiceId: 'pico-de-DE', language: 'de', mode: 'request' })).toBe('pico-de-DE');
    expect(pick(ALL, { voiceId: 'pico-en-GB', language: 'en', mode: 'request' })).toBe('pico-en-GB');
    expect(pick(ALL, { voiceId: 'kal16', mode: 'request' })).toBe('kal16');
    const mismatch = chooseVoice(ALL, { voiceId: 'rhvoice-slt', language: 'de', mode: 'request' });
    expect(mismatch).toEqual({ field: 'language', message: 'language: voice_id "rhvoice-slt" speaks "en", not "de" (voices that speak "de": pico-de-DE)' });
    expect(chooseVoice(ALL, { voiceId: 'pico-de-DE', language: 'en', mode: 'request' })).toMatchObject({ field: 'language' });
  });

  it('a language no voice speaks is refused naming `language`; an unknown voice id naming `voice_id`', () => {
    expect(chooseVoice(ALL, { voiceId: 'nyah', language: 'hi', mode: 'request' })).toEqual({ field: 'language', message: 'language: no voice here speaks "hi" (voices speak de, en, es, fr, it)' });
    expect(chooseVoice(ALL, { voiceId: 'slt', language: 'ja', mode: 'request' })).toMatchObject({ field: 'language', message: expect.stringContaining('no voice here speaks "ja"') });
    // Without Pico, German is a language we cannot speak.
    expect(chooseVoice([...RHVOICE, ...FLITE], { voiceId: 'nyah', language: 'de', mode: 'request' })).toEqual({ field: 'language', message: 'language: no voice here speaks "de" (voices speak en)' });
    expect(chooseVoice(ALL, { voiceId: 'no-such-voice', mode: 'request' })).toEqual({ field: 'voice_id', message: 'voice_id: unknown voice "no-such-voice" (see GET /voice/get-all-models)' });
  });

  it('agents: the language chooses the voice, their configured gender wins, unknown ids fall back by gender', () => {
    const agent = (voiceId: string | undefined, gender: string | undefined, language: string | undefined) => pick(ALL, { voiceId, gender, language, mode: 'agent' });
    expect(agent('nyah', 'female', 'en')).toBe('rhvoice-slt');
    expect(agent('nyah', 'male', 'en')).toBe('rhvoice-bdl');
    expect(agent('some-hosted-voice', 'male', 'en')).toBe('rhvoice-bdl');
    expect(agent(undefined, undefined, undefined)).toBe('rhvoice-slt');
    expect(agent('nyah', 'female', 'de')).toBe('pico-de-DE');
    expect(agent('nyah', 'male', 'it')).toBe('pico-it-IT');
    // A configured voice of ours in another language gives way to the agent's language.
    expect(agent('rhvoice-alan', 'male', 'es')).toBe('pico-es-ES');
    expect(agent('rhvoice-alan', 'male', 'en')).toBe('rhvoice-alan');
    // A language no voice speaks: English, as before (recognition is English too).
    expect(agent('nyah', 'female', 'hi')).toBe('rhvoice-slt');
    expect(agent('kal16', 'male', 'hi')).toBe('kal16');
    // Flite only: the same choices among Flite's voices.
    expect(pick(FLITE, { voiceId: 'nyah', gender: 'male', language: 'de', mode: 'agent' })).toBe('rms');
  });

  it('nearest voice: same gender first, then accent, then the preference list; none of another language', () => {
    expect(nearestVoice(ALL, { language: 'en', gender: 'female', accent: 'british' })?.voiceId).toBe('pico-en-GB');
    expect(nearestVoice(ALL, { language: 'en', gender: 'male', accent: 'british' })?.voiceId).toBe('rhvoice-bdl');
    expect(nearestVoice(FLITE, { language: 'en', gender: 'male' })?.voiceId).toBe('rms');
    expect(nearestVoice(FLITE, { language: 'de', gender: 'female' })).toBeUndefined();
  });

  it('language codes: base language, auto and multi are none', () => {
    expect([baseLanguage('de-DE'), baseLanguage('FR_fr'), baseLanguage('it'), baseLanguage('auto'), baseLanguage('multi-en-hi'), baseLanguage(''), baseLanguage(undefined)]).toEqual(['de', 'fr', 'it', undefined, undefined, undefined, undefined]);
  });
});
