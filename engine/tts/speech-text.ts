// What text is said as, the one transform before synthesis: pronunciation-dictionary words replaced by their spoken
// form (whole words, any case), then, when asked, numbers, dates, times and amounts written as words (speech-format.ts).
// Used by POST /tts and its streams, the live synthesis socket, speech-to-speech and agents' voices.
import type { MonoAudio } from '../audio/types.js';
import type { Synthesizer } from '../ports.js';
import { formatForSpeech } from './speech-format.js';

/** One dictionary entry: `word` is said as `pronunciation` (a spelling for speech, e.g. "mysql" -> "my-sequel"). */
export interface PronunciationEntry {
  word: string;
  pronunciation: string;
}

/** What a synthesis path applies to its text (plain data: dictionaries are resolved by whoever calls the engine). */
export interface SpeechTextRules {
  /** In order; when a word appears twice, the later entry wins. */
  pronunciations?: readonly PronunciationEntry[];
  /** Numbers, dates, times and currency amounts written for speech (agents' `speechFormatting`). */
  formatting?: boolean;
}

export type SpeechTransform = (text: string) => string;

const identity: SpeechTransform = (text) => text;
/** A letter or digit: a dictionary word matches only where neither comes before or after it. */
const WORD_CHAR = '[\\p{L}\\p{N}_]';
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The rules compiled once into a function of the text. Words are matched in one pass (longest first), so a
 * replacement is never replaced again; a hyphen between letters in a pronunciation ("my-sequel") is said as a pause
 * between the parts.
 */
export function speechTransform(rules: SpeechTextRules | undefined): SpeechTransform {
  const byWord = new Map<string, string>();
  for (const e of rules?.pronunciations ?? []) {
    const word = e.word.trim();
    if (word) byWord.set(word.toLocaleLowerCase(), e.pronunciation.trim().replace(/(?<=\p{L})-(?=\p{L})/gu, ' '));
  }
  const format = rules?.formatting ? formatForSpeech : identity;
  if (!byWord.size) return format;
  const words = [...byWord.keys()].sort((a, b) => b.length - a.length).map(escape);
  const pattern = new RegExp(`(?<!${WORD_CHAR})(?:${words.join('|')})(?!${WORD_CHAR})`, 'giu');
  return (text) => format(text.replace(pattern, (m) => byWord.get(m.toLocaleLowerCase()) ?? m));
}

/** A synthesizer that says every phrase as `rules` have it (the phrase itself, e.g. in transcripts, is unchanged). */
export function speakingAs(synthesizer: Synthesizer, rules: SpeechTextRules | undefined): Synthesizer {
  const transform = speechTransform(rules);
  if (transform === identity) return synthesizer;
  return {
    synthesize: (voiceId: string, text: string, speed: number, opts?: { first?: boolean; signal?: AbortSignal }): Promise<MonoAudio> =>
      synthesizer.synthesize(voiceId, transform(text), speed, opts),
  };
}
