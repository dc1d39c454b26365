// Which local voice speaks a request: the one table of hosted voice ids (the agents' stored default `nyah`, the
// speech-to-speech voice names) with the gender, accent and language each is heard as, and the choice of the nearest
// voice this server has by language, then gender, then accent. Documented in docs/models.md ("Voices and languages").
import { FALLBACK_VOICES } from './voice-defaults.js';

export type Gender = 'female' | 'male';

/** What a hosted voice sounds like: who we pick a local voice to resemble. */
export interface VoiceTraits {
  gender: Gender;
  accent: string;
  /** ISO 639-1 language. */
  language: string;
}

const f = (accent = 'american'): VoiceTraits => ({ gender: 'female', accent, language: 'en' });
const m = (accent = 'american'): VoiceTraits => ({ gender: 'male', accent, language: 'en' });

/**
 * Hosted voice ids we accept and the voice each resembles. `nyah` is the agents' stored default; the rest are the
 * speech-to-speech (hydra) voice names (transports/ws/s2s-protocol.ts lists which model offers which), whose genders are
 * those their names suggest (the Scottish ones are those that spoke with Flite's Scottish awb before this table).
 * Anything else is not a voice id here: the TTS routes refuse it, agents fall back by their `gender`.
 */
export const HOSTED_VOICES: Readonly<Record<string, VoiceTraits>> = {
  nyah: f(),
  // hydra-v1.1
  zoe: f(), maya: f(), elena: f(), ivy: f(), grace: f(), aria: f(), alex: m(), leo: m(), sam: m('scottish'), kai: m(),
  // hydra-v1.0 (sterling is also the default of every model)
  vaughn: m(), brooks: m(), cole: m('scottish'), hayes: m(), pierce: m(), sterling: m(), ellis: m('scottish'), lane: f(), quinn: f(),
  arden: m(), rowan: m('scottish'), blair: f(), emery: f(), sawyer: m(),
  // hydra
  wren: f(), sloane: f(), marlowe: f(), reed: m(), knox: m(), tate: m('scottish'),
};

/** A voice this server has, as the choice sees it. */
export interface LocalVoice {
  voiceId: string;
  gender: string;
  accent: string;
  /** ISO 639-1 language ('' when unknown: a Piper voice without one). */
  language: string;
}

/**
 * Among equally near voices, the first of this list speaks: the clearest English voices first (RHVoice, then Flite's
 * default pair), then the rest in catalog order. Unlisted voices (Pico, other Flite voices, Piper) keep catalog order.
 */
export const VOICE_PREFERENCE: readonly string[] = [
  FALLBACK_VOICES.rhvoice.female, FALLBACK_VOICES.rhvoice.male, 'rhvoice-clb', 'rhvoice-alan',
  FALLBACK_VOICES.flite.female, FALLBACK_VOICES.flite.male, 'awb', 'kal16', 'kal',
];

/** `de-DE`, `de_de`, `DE` -> `de`; `auto`, `multi-*`, '' and undefined -> undefined (no language asked for). */
export function baseLanguage(code: string | undefined): string | undefined {
  if (!code) return undefined;
  const c = code.trim().toLowerCase();
  if (!c || c === 'auto' || c.startsWith('multi')) return undefined;
  return c.split(/[-_]/)[0];
}

/** Language names of the catalog's `language` tag. */
export const LANGUAGE_NAMES: Readonly<Record<string, string>> = { en: 'english', de: 'german', es: 'spanish', fr: 'french', it: 'italian' };

/**
 * The nearest voice of `want.language`: the same gender first, then the same accent, then VOICE_PREFERENCE, then the
 * order of `voices`. Undefined when no voice speaks that language.
 */
export function nearestVoice(voices: readonly LocalVoice[], want: { language: string; gender?: string; accent?: string }): LocalVoice | undefined {
  const rank = (v: LocalVoice) => {
    const i = VOICE_PREFERENCE.indexOf(v.voiceId);
    return i < 0 ? VOICE_PREFERENCE.length : i;
  };
  const score = (v: LocalVoice) => (v.gender === want.gender ? 2 : 0) + (want.accent && v.accent === want.accent ? 1 : 0);
  let best: LocalVoice | undefined;
  for (const v of voices) {
    if (v.language !== want.language) continue;
    if (!best || score(v) > score(best) || (score(v) === score(best) && rank(v) < rank(best))) best = v;
  }
  return best;
}

export type VoiceChoice = { voiceId: string } | { field: 'voice_id' | 'language'; message: string };

export interface VoiceRequest {
  /** A voice id: ours, or a hosted one of HOSTED_VOICES. */
  voiceId?: string;
  /** The language asked for (`language` of a TTS request, an agent's `language.default`); `auto` is none. */
  language?: string;
  /**
   * The agent's `voiceConfig.gender`: the gender to resemble for a voice id that is not ours (for a hosted id of the
   * table it wins over the table's gender: it is what the agent was configured with).
   */
  gender?: string;
  /**
   * `request` (the TTS routes): an unknown voice id and one of ours in another language than `language` are refused.
   * `agent`: an unknown voice id speaks as its `gender`, and one of ours in another language gives way to the nearest
   * voice of the agent's language; an agent language no voice speaks is left to English.
   */
  mode: 'request' | 'agent';
}

/** Which voice speaks (see VoiceRequest), or what is wrong with the request, naming the field. */
export function chooseVoice(voices: readonly LocalVoice[], req: VoiceRequest): VoiceChoice {
  const speakable = [...new Set(voices.map((v) => v.language).filter(Boolean))].sort();
  const asked = baseLanguage(req.language);
  // An agent in a language no voice here speaks keeps an English voice (its call is the call runtime's to refuse or not).
  const language = req.mode === 'agent' && asked && !speakable.includes(asked) ? undefined : asked;
  const ours = req.voiceId ? voices.find((v) => v.voiceId === req.voiceId) : undefined;
  const of = (lang: string) => voices.filter((v) => v.language === lang).map((v) => v.voiceId);
  const noVoice = (lang: string): VoiceChoice => ({ field: 'language', message: `language: no voice here speaks "${lang}" (voices speak ${speakable.join(', ')})` });
  if (ours) {
    if (!language || ours.language === language || !ours.language) return { voiceId: ours.voiceId };
    if (req.mode === 'request') {
      if (!of(language).length) return noVoice(language);
      return { field: 'language', message: `language: voice_id "${ours.voiceId}" speaks "${ours.language}", not "${language}" (voices that speak "${language}": ${of(language).join(', ')})` };
    }
    const near = nearestVoice(voices, { language, gender: ours.gender, accent: ours.accent });
    return near ? { voiceId: near.voiceId } : { voiceId: ours.voiceId };
  }
  const hosted = req.voiceId ? HOSTED_VOICES[req.voiceId] : undefined;
  if (req.voiceId && !hosted && req.mode === 'request') return { field: 'voice_id', message: `voice_id: unknown voice "${req.voiceId}" (see GET /voice/get-all-models)` };
  // An agent's configured gender wins over the table's (it is what the agent asked for; the stored default is nyah's).
  const given = req.gender === 'male' || req.gender === 'female' ? req.gender : undefined;
  const gender = (req.mode === 'agent' ? (given ?? hosted?.gender) : (hosted?.gender ?? given)) ?? 'female';
  const want = { language: language ?? hosted?.language ?? 'en', gender, accent: hosted?.accent };
  const near = nearestVoice(voices, want);
  return near ? { voiceId: near.voiceId } : noVoice(want.language);
}
