// Text normalisation for scoring recognisers and word error rate (Levenshtein over words).

import { numberWords, ordinalWords } from '../../engine/tts/speech-format.js';

export type NormalizeMode = 'plain' | 'full';

const ONES = [
  'zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten',
  'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen',
];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];

/** Cardinal words for a non-negative integer, e.g. 125 -> "one hundred twenty five" (no "and"): the words synthesis
 * speaks (engine/tts/speech-format.ts), without their hyphens. */
export function numberToWords(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) return String(n);
  return numberWords(n).replace(/-/g, ' ');
}

/** Ordinal words, e.g. 21 -> "twenty first". */
export function ordinalToWords(n: number): string {
  return ordinalWords(n).replace(/-/g, ' ');
}

/** A run of digits as words: numbers read as cardinals; leading zeros or very long runs digit by digit. */
function digitsToWords(d: string): string {
  if ((d.length > 1 && d.startsWith('0')) || d.length > 9) return [...d].map((c) => ONES[Number(c)]).join(' ');
  return numberToWords(Number(d));
}

const SYMBOL_WORDS: Array<[RegExp, string]> = [
  [/#/g, ' pound '],
  [/\*/g, ' star '],
  [/%/g, ' percent '],
  [/&/g, ' and '],
  [/@/g, ' at '],
  [/\+/g, ' plus '],
  [/=/g, ' equals '],
];
const SPELLINGS: Record<string, string> = {
  ok: 'okay', thru: 'through', mr: 'mister', mrs: 'missus', dr: 'doctor', cannot: 'can not',
};
const MONTHS = 'january|february|march|april|may|june|july|august|september|october|november|december';
/** A day number after a month name is said as an ordinal: "March 3" and "March 3rd" both read "march third". */
const MONTH_DAY = new RegExp(`\\b(${MONTHS}) (\\d{1,2})(?:st|nd|rd|th)?\\b`, 'g');
/** A clock time written with a dot ("at 3.15", British style) reads as "3:15" after a time preposition. */
const DOTTED_TIME = /\b(at|by|until|till|from|before|after|around|about) (\d{1,2})\.(\d\d)\b/g;
/** Closed compounds written either way; both sides are split to the open form. */
const COMPOUNDS: Record<string, string> = {
  voicemail: 'voice mail', mailbox: 'mail box', touchtone: 'touch tone', login: 'log in', logon: 'log on',
  logoff: 'log off', logout: 'log out', filename: 'file name', blacklist: 'black list', whitelist: 'white list',
  xray: 'x ray', callerid: 'caller id', hangup: 'hang up', voiceover: 'voice over',
};
const CONTRACTIONS: Record<string, string> = {
  "i'm": 'i am', "you're": 'you are', "we're": 'we are', "they're": 'they are', "that's": 'that is',
  "it's": 'it is', "there's": 'there is', "what's": 'what is', "he's": 'he is', "she's": 'she is',
  "i've": 'i have', "you've": 'you have', "we've": 'we have', "they've": 'they have',
  "i'll": 'i will', "you'll": 'you will', "we'll": 'we will', "they'll": 'they will', "it'll": 'it will',
  "i'd": 'i would', "you'd": 'you would', "we'd": 'we would', "they'd": 'they would',
  "can't": 'can not', "won't": 'will not', "don't": 'do not', "doesn't": 'does not', "didn't": 'did not',
  "isn't": 'is not', "aren't": 'are not', "wasn't": 'was not', "weren't": 'were not', "couldn't": 'could not',
  "shouldn't": 'should not', "wouldn't": 'would not', "haven't": 'have not', "hasn't": 'has not',
};
const NUMBER_WORDS = new Set([...ONES, ...TENS.filter(Boolean), 'hundred', 'thousand', 'million', 'billion', 'trillion']);
/** Annotations of non-speech in transcripts: "[beep]", "(1 second of silence)", "<beep ascending>". */
const ANNOTATION = /\[[^\]]*\]|\([^)]*\)|<[^>]*>/g;

/** True when a transcript has no spoken words once annotations are removed. */
export function isNonSpeech(text: string): boolean {
  return normalizeWords(text, 'plain').length === 0;
}

/**
 * Normalise text to words for scoring. Both modes drop non-speech annotations ([...], (...), <...>).
 * - plain: lower case, punctuation removed (apostrophes dropped inside words, hyphens and slashes split words).
 * - full: plain plus symbols spoken as words (# -> pound, * -> star, % -> percent...), digits, ordinals and
 *   amounts written out as words (1 -> one, 21st -> twenty first, $5 -> five dollars), "and" inside numbers
 *   dropped (one hundred and five = 105), dotted acronyms joined (a.m. = am), common contractions expanded
 *   (that's = that is), a day after a month name read as an ordinal (March 3 = March 3rd = march third), a
 *   dotted clock time after "at"/"by"/"until"... read as a time (at 3.15 = at 3:15), runs of five or more digits
 *   read digit by digit (order 48213 = four eight two one three), prefixes joined (re-record = rerecord), closed
 *   compounds opened (voicemail = voice mail) and a few spelling variants unified (ok = okay, thru = through,
 *   dr = doctor).
 */
export function normalizeWords(text: string, mode: NormalizeMode = 'full'): string[] {
  let s = text.normalize('NFKC').toLowerCase().replace(/[\u2018\u2019\u02bc]/g, "'");
  s = s.replace(ANNOTATION, ' ');
  if (mode === 'full') {
    // Five or more digits without thousands separators (order, account, zip numbers) are said digit by digit;
    // quantities and amounts are written 45,000 or $48213.
    s = s.replace(/(?<![\d,.$])\d{5,}(?!\d|[,.]\d)/g, (d) => [...d].join(' '));
    s = s.replace(/(\d),(?=\d{3}\b)/g, '$1');
    s = s.replace(/\$(\d+)/g, '$1 dollars');
    s = s.replace(MONTH_DAY, (_, m: string, d: string) => `${m} ${ordinalToWords(Number(d))}`);
    s = s.replace(DOTTED_TIME, '$1 $2:$3');
    s = s.replace(/\b(\d+)(st|nd|rd|th)\b/g, (_, d: string) => ` ${ordinalToWords(Number(d))} `);
    s = s.replace(/(\d+)\.(\d+)/g, (_, a: string, b: string) => `${a} point ${[...b].join(' ')}`);
    s = s.replace(/\b(\d{1,2}):00\b/g, '$1').replace(/\b(\d{1,2}):(\d\d)\b/g, '$1 $2');
    for (const [re, word] of SYMBOL_WORDS) s = s.replace(re, word);
    s = s.replace(/\d+/g, (d) => ` ${digitsToWords(d)} `);
    s = s.replace(/\b(?:[a-z]\.){2,}/g, (m) => m.replace(/\./g, ''));
    s = s.replace(/\b[a-z]+'[a-z]+\b/g, (w) => CONTRACTIONS[w] ?? w);
    s = s.replace(/\b(re|de|pre|un|non|co)-(?=[a-z])/g, '$1');
  }
  s = s.replace(/(\w)'(\w)/g, '$1$2').replace(/[-\u2013\u2014/]/g, ' ');
  s = s.replace(/[^\p{L}\p{N}\s]/gu, ' ');
  let words = s.split(/\s+/).filter(Boolean);
  if (mode === 'full') {
    words = words.flatMap((w) => (COMPOUNDS[w] ?? SPELLINGS[w] ?? w).split(' '));
    words = words.filter(
      (w, i) => !(w === 'and' && (words[i - 1] === 'hundred' || words[i - 1] === 'thousand') && NUMBER_WORDS.has(words[i + 1] ?? '')),
    );
  }
  return words;
}

export interface WordErrors {
  substitutions: number;
  deletions: number;
  insertions: number;
  /** Number of reference words. */
  refWords: number;
}

/** Minimum edit alignment between word sequences, with its substitution/deletion/insertion counts. */
export function wordErrors(ref: readonly string[], hyp: readonly string[]): WordErrors {
  const n = ref.length;
  const m = hyp.length;
  // cost[i][j] over prefixes, flattened; ties prefer substitution, then deletion.
  const w = m + 1;
  const cost = new Uint32Array((n + 1) * w);
  for (let i = 0; i <= n; i++) cost[i * w] = i;
  for (let j = 0; j <= m; j++) cost[j] = j;
  for (let i = 1; i <= n; i++) {
    for (let j = 1; j <= m; j++) {
      const sub = (cost[(i - 1) * w + j - 1] as number) + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      const del = (cost[(i - 1) * w + j] as number) + 1;
      const ins = (cost[i * w + j - 1] as number) + 1;
      cost[i * w + j] = Math.min(sub, del, ins);
    }
  }
  const e: WordErrors = { substitutions: 0, deletions: 0, insertions: 0, refWords: n };
  let i = n;
  let j = m;
  while (i > 0 || j > 0) {
    const here = cost[i * w + j] as number;
    if (i > 0 && j > 0 && here === (cost[(i - 1) * w + j - 1] as number) + (ref[i - 1] === hyp[j - 1] ? 0 : 1)) {
      if (ref[i - 1] !== hyp[j - 1]) e.substitutions++;
      i--;
      j--;
    } else if (i > 0 && here === (cost[(i - 1) * w + j] as number) + 1) {
      e.deletions++;
      i--;
    } else {
      e.insertions++;
      j--;
    }
  }
  return e;
}

/** Errors for one reference/hypothesis pair after normalisation. */
export function scoreText(reference: string, hypothesis: string, mode: NormalizeMode = 'full'): WordErrors {
  return wordErrors(normalizeWords(reference, mode), normalizeWords(hypothesis, mode));
}

export function errorCount(e: WordErrors): number {
  return e.substitutions + e.deletions + e.insertions;
}

/** Sum per-utterance errors; corpus WER = total errors / total reference words. */
export function sumErrors(all: Iterable<WordErrors>): WordErrors {
  const t: WordErrors = { substitutions: 0, deletions: 0, insertions: 0, refWords: 0 };
  for (const e of all) {
    t.substitutions += e.substitutions;
    t.deletions += e.deletions;
    t.insertions += e.insertions;
    t.refWords += e.refWords;
  }
  return t;
}

/** Word error rate (0..); an empty reference scores 0 if the hypothesis is empty too, else 1. */
export function wer(e: WordErrors): number {
  const errors = errorCount(e);
  return e.refWords === 0 ? (errors === 0 ? 0 : 1) : errors / e.refWords;
}
