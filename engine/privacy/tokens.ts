// Splits a transcript into word, number and punctuation tokens with their offsets, in one linear pass.

export type TokType = 'word' | 'num' | 'ord' | 'alnum' | 'punct' | 'tag';

export interface Tok {
  type: TokType;
  text: string;
  lower: string;
  start: number;
  end: number;
  /** Whitespace precedes this token (or it is the first). */
  space: boolean;
}

const TAG = /\[[A-Z]+_[0-9]+\]/y;
const LETTER = /[\p{L}\p{M}]/u;
const LETTER_OR_NUMBER = /[\p{L}\p{M}\p{N}]/u;
const ORDINAL = /^[0-9]+(?:st|nd|rd|th)$/i;

const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13) || c === 160 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
const isDigit = (c: number) => c >= 48 && c <= 57;
const isAsciiLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/** Character class at i: 1 letter, 2 ASCII digit, 3 other number (e.g. "²"), 0 neither. Surrogate pairs handled. */
function classAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (isAsciiLetter(c)) return 1;
  if (isDigit(c)) return 2;
  if (c < 128) return 0;
  const ch = String.fromCodePoint(text.codePointAt(i)!);
  if (LETTER.test(ch)) return 1;
  return LETTER_OR_NUMBER.test(ch) ? 3 : 0;
}

const charLen = (text: string, i: number) => (text.codePointAt(i)! > 0xffff ? 2 : 1);

/**
 * Tokens of a text in one linear pass (no regular expression runs over more than one token): a redaction token
 * already in the text ("[FIRSTNAME_1]"), a run of letters and digits (apostrophes inside words: "O'Brien",
 * "I'm"), or one other character.
 */
export function tokenize(text: string): Tok[] {
  const out: Tok[] = [];
  const n = text.length;
  let i = 0;
  let space = true;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) {
      space = true;
      i++;
      continue;
    }
    let end = i;
    let type: TokType;
    if (c === 91) {
      TAG.lastIndex = i;
      if (TAG.test(text)) end = TAG.lastIndex;
    }
    if (end > i) type = 'tag';
    else {
      let letters = false;
      let digits = false;
      let other = false;
      let j = i;
      while (j < n) {
        const k = classAt(text, j);
        if (k === 1) letters = true;
        else if (k === 2) digits = true;
        else if (k === 3) other = true;
        else {
          // An apostrophe between letters stays inside the word.
          const a = text.charCodeAt(j);
          if ((a === 39 || a === 0x2019) && letters && j + 1 < n && classAt(text, j + 1) === 1) {
            j++;
            continue;
          }
          break;
        }
        j += charLen(text, j);
      }
      if (j > i) {
        end = j;
        const s = text.slice(i, j);
        if (digits && !letters && !other) type = 'num';
        else if (letters && !digits && !other) type = 'word';
        else if (digits && !other && ORDINAL.test(s)) type = 'ord';
        else type = 'alnum';
      } else {
        end = i + charLen(text, i);
        type = 'punct';
      }
    }
    const s = text.slice(i, end);
    out.push({ type, text: s, lower: type === 'num' || type === 'punct' ? s : s.toLowerCase(), start: i, end, space });
    space = false;
    i = end;
  }
  return out;
}

/** Title case: an upper-case letter then a lower-case one ("Ada", "McDonald", "O'Brien"); all-caps words do not count. */
export function isCapitalized(t: Tok): boolean {
  return t.type === 'word' && /^\p{Lu}(?:['’]\p{Lu})?\p{Ll}/u.test(t.text);
}

/** True when token i starts a sentence: first word of the text, or after . ? ! (quotes and brackets skipped). */
export function atSentenceStart(toks: readonly Tok[], i: number): boolean {
  for (let j = i - 1; j >= 0; j--) {
    const t = toks[j]!;
    if (t.type !== 'punct') return false;
    if (t.text === '.' || t.text === '?' || t.text === '!' || t.text === '…') return true;
    if (!'"\'“”‘’(['.includes(t.text)) return false;
  }
  return true;
}

/** Index of the next word-like token after i (skipping punctuation), or -1. */
export function nextWord(toks: readonly Tok[], i: number, maxSkip = 2): number {
  for (let j = i + 1, skipped = 0; j < toks.length && skipped <= maxSkip; j++) {
    if (toks[j]!.type !== 'punct') return j;
    skipped++;
  }
  return -1;
}

/** True when nothing but punctuation follows token i before the end of the sentence or text. */
export function endsClause(toks: readonly Tok[], i: number): boolean {
  const t = toks[i + 1];
  return !t || (t.type === 'punct' && '.,?!;:…)"”'.includes(t.text));
}
