// Digit sequences in transcripts, typed or spoken: "4111 1111-1111", "four one one one", "oh", "double five",
// "forty one eleven", "nineteen eighty five", "two thousand twenty seven", mixed. One linear pass builds runs.
import type { Tok } from './tokens.js';

const UNITS: Record<string, number> = { zero: 0, oh: 0, o: 0, nought: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9 };
const TEENS: Record<string, number> = { ten: 10, eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19 };
const TENS: Record<string, number> = { twenty: 20, thirty: 30, forty: 40, fourty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90 };
const REPEAT: Record<string, number> = { double: 2, triple: 3, treble: 3 };
const ZERO_LETTERS = new Set(['oh', 'o']);
/** Recognizer homophones of digit words, taken as digits only between two digits ("four one for one"). */
const HOMOPHONES: Record<string, string> = { for: '4', to: '2', too: '2', won: '1', ate: '8' };
/** Said between digits without meaning anything. */
export const FILLERS = new Set(['uh', 'um', 'umm', 'uhm', 'uhh', 'er', 'erm', 'ah', 'hmm', 'mm']);
const JOIN_WORDS = new Set(['dash', 'hyphen']);
const JOIN_PUNCT = new Set(['-', '–', '—', '.', ',', '(', ')']);
const CURRENCY_BEFORE = new Set(['$', '£', '€', '¥', '₹', 'usd', 'eur', 'gbp']);
const AFTER_AMOUNT = new Set(['dollars', 'dollar', 'bucks', 'cents', 'cent', 'percent', '%', 'usd', 'pounds', 'euros', 'euro', 'rupees', 'grand', 'k', 'hundred', 'thousand', 'million', 'billion']);
const AFTER_QUANTITY = new Set([
  'am', 'pm', "o'clock", 'seconds', 'second', 'minutes', 'minute', 'mins', 'hours', 'hour', 'hrs', 'days', 'day', 'weeks', 'week', 'months', 'month',
  'years', 'year', 'yrs', 'times', 'items', 'item', 'pieces', 'units', 'people', 'persons', 'guests', 'kids', 'children', 'adults', 'miles', 'mile', 'km',
  'kilometers', 'meters', 'metres', 'feet', 'foot', 'ft', 'inches', 'inch', 'lbs', 'lb', 'kg', 'kilos', 'grams', 'g', 'ounces', 'oz', 'liters', 'litres',
  'gallons', 'degrees', 'points', 'calories', 'mg', 'ml', 'boxes', 'packs', 'orders', 'tickets', 'seats', 'rooms', 'nights', 'calls', 'messages',
]);

/** One spoken or typed piece of a run: a digit string with its place in the text. */
export interface Group {
  digits: string;
  start: number;
  end: number;
  /** Token range [t0, t1). */
  t0: number;
  t1: number;
  spoken: boolean;
  /** Raw text between the previous group and this one ('' for the first). */
  sep: string;
}

export interface Run {
  groups: Group[];
  digits: string;
  /** Offset of each group's first digit within `digits`. */
  offsets: number[];
  start: number;
  end: number;
  t0: number;
  t1: number;
  /** "+" or "plus" just before. */
  plus: boolean;
  /** A currency sign before, an amount word after, or a decimal/thousands layout ("$1,234.56", "3.5"). */
  amount: boolean;
  /** A unit or time word after ("3 minutes", "5 pm"). */
  quantity: boolean;
  /** Touches ":" or "/" with no space ("3:45", "04/27"). */
  glued: boolean;
  /** Only "oh"/"o" ("Oh, I see"): not a number, except as the last digit of a card finished in a later turn. */
  zeroLetters?: boolean;
}

interface Item {
  digits: string;
  next: number;
  spoken: boolean;
  zeroLetter: boolean;
}

type Small = { value: number; next: number; kind: 'unit' | 'teen' | 'tens' };

function small(toks: readonly Tok[], i: number): Small | null {
  const t = toks[i];
  if (!t || t.type !== 'word') return null;
  const w = t.lower;
  if (w in UNITS) return { value: UNITS[w]!, next: i + 1, kind: 'unit' };
  if (w in TEENS) return { value: TEENS[w]!, next: i + 1, kind: 'teen' };
  if (w in TENS) {
    let j = i + 1;
    if (toks[j]?.text === '-' && !toks[j]!.space) j++;
    const u = toks[j];
    if (u && u.type === 'word' && u.lower in UNITS && UNITS[u.lower]! > 0 && !ZERO_LETTERS.has(u.lower)) return { value: TENS[w]! + UNITS[u.lower]!, next: j + 1, kind: 'tens' };
    return { value: TENS[w]!, next: i + 1, kind: 'tens' };
  }
  return null;
}

function isWord(toks: readonly Tok[], i: number, w: string): boolean {
  return toks[i]?.lower === w;
}

/** Below one hundred after "hundred"/"thousand", with an optional "and". */
function remainder(toks: readonly Tok[], i: number): Small | null {
  let j = i;
  if (isWord(toks, j, 'and')) j++;
  const s = small(toks, j);
  if (!s || (s.kind === 'unit' && s.value === 0)) return null;
  return s;
}

/** A spoken number phrase at token i: "seven", "forty one", "four hundred twelve", "two thousand and one". */
function spoken(toks: readonly Tok[], i: number): Item | null {
  const w = toks[i]!.lower;
  if (w in REPEAT) {
    const s = small(toks, i + 1);
    const n = toks[i + 1];
    if (s?.kind === 'unit') return { digits: String(s.value).repeat(REPEAT[w]!), next: s.next, spoken: true, zeroLetter: false };
    if (n?.type === 'num' && n.text.length === 1) return { digits: n.text.repeat(REPEAT[w]!), next: i + 2, spoken: true, zeroLetter: false };
    return null;
  }
  const s = small(toks, i);
  if (!s) return null;
  const zeroLetter = ZERO_LETTERS.has(w);
  if (s.value > 0 && isWord(toks, s.next, 'hundred')) {
    const r = remainder(toks, s.next + 1);
    const v = s.value * 100 + (r?.value ?? 0);
    return { digits: String(v), next: r ? r.next : s.next + 1, spoken: true, zeroLetter: false };
  }
  if (s.value > 0 && isWord(toks, s.next, 'thousand')) {
    let v = s.value * 1000;
    let next = s.next + 1;
    const h = small(toks, next);
    if (h?.kind === 'unit' && h.value > 0 && isWord(toks, h.next, 'hundred')) {
      v += h.value * 100;
      next = h.next + 1;
    }
    const r = remainder(toks, next);
    if (r) {
      v += r.value;
      next = r.next;
    }
    return { digits: String(v), next, spoken: true, zeroLetter: false };
  }
  return { digits: String(s.value), next: s.next, spoken: true, zeroLetter };
}

const isHomophone = (t: Tok | undefined) => !!t && t.type === 'word' && t.lower in HOMOPHONES;

/** "for"/"to" (or "double for") inside a run, when more digits follow ("six for for three"). */
function homophone(toks: readonly Tok[], j: number): Item | null {
  let k = j;
  let times = 1;
  if (toks[k]?.lower && toks[k]!.lower in REPEAT && isHomophone(toks[k + 1])) times = REPEAT[toks[k++]!.lower]!;
  if (!isHomophone(toks[k])) return null;
  let m = k + 1;
  while (isHomophone(toks[m]) && m - k < 3) m++;
  if (!parseItem(toks, m) && !(m > k + 1 && m - k <= 3)) return null;
  return { digits: HOMOPHONES[toks[k]!.lower]!.repeat(times), next: k + 1, spoken: true, zeroLetter: false };
}

/** A numeric item at token i (typed digits or a spoken phrase), or null. */
export function parseItem(toks: readonly Tok[], i: number): Item | null {
  const t = toks[i];
  if (!t) return null;
  if (t.type === 'num') return { digits: t.text, next: i + 1, spoken: false, zeroLetter: false };
  if (t.type === 'word') return spoken(toks, i);
  return null;
}

/** Skips what may stand between two digits of one number: spaces, one or two of "- . , ( )", "dash", fillers. */
function skipJoiners(toks: readonly Tok[], i: number): number {
  let j = i;
  let n = 0;
  while (j < toks.length && n < 3) {
    const t = toks[j]!;
    if ((t.type === 'punct' && JOIN_PUNCT.has(t.text)) || (t.type === 'word' && (JOIN_WORDS.has(t.lower) || FILLERS.has(t.lower)))) {
      j++;
      n++;
    } else break;
  }
  return j;
}

function touches(toks: readonly Tok[], i: number, glue: string): boolean {
  const t = toks[i];
  return !!t && t.type === 'punct' && glue.includes(t.text);
}

/** Every maximal digit run in the text, in order (runs made only of "oh"/"o" are marked `zeroLetters`). */
export function buildRuns(text: string, toks: readonly Tok[]): Run[] {
  const runs: Run[] = [];
  let i = 0;
  while (i < toks.length) {
    const first = parseItem(toks, i) ?? (toks[i]!.lower in REPEAT ? homophone(toks, i) : null);
    if (!first) {
      i++;
      continue;
    }
    const groups: Group[] = [];
    let onlyZeroLetters = true;
    let item: Item | null = first;
    let at = i;
    while (item) {
      // A group glued to "/" or ":" ("04/27", "3:45") starts a run of its own: it does not end the card before it.
      const glue = toks[item.next];
      if (groups.length && glue && !glue.space && (glue.text === '/' || glue.text === ':')) break;
      const start = toks[at]!.start;
      const end = toks[item.next - 1]!.end;
      const prev = groups[groups.length - 1];
      groups.push({ digits: item.digits, start, end, t0: at, t1: item.next, spoken: item.spoken, sep: prev ? text.slice(prev.end, start) : '' });
      if (!item.zeroLetter) onlyZeroLetters = false;
      // "/" or ":" glued to a digit ends the run ("3:45", "04/27").
      const after = toks[item.next];
      if (after && !after.space && (after.text === '/' || after.text === ':')) break;
      const j = skipJoiners(toks, item.next);
      const nextItem = parseItem(toks, j) ?? homophone(toks, j);
      if (!nextItem) break;
      at = j;
      item = nextItem;
    }
    const last = groups[groups.length - 1]!;
    i = last.t1;
    // A stray "oh" at an edge ("Oh, 4111…") stays in the run; the detectors try windows that leave it out.
    const run = finishRun(toks, groups);
    run.zeroLetters = onlyZeroLetters;
    runs.push(run);
  }
  return runs;
}

function finishRun(toks: readonly Tok[], groups: Group[]): Run {
  const first = groups[0]!;
  const last = groups[groups.length - 1]!;
  const offsets: number[] = [];
  let digits = '';
  for (const g of groups) {
    offsets.push(digits.length);
    digits += g.digits;
  }
  const before = toks[first.t0 - 1];
  const after = toks[last.t1];
  const plus = !!before && (before.text === '+' || before.lower === 'plus');
  let amount = !!before && CURRENCY_BEFORE.has(before.lower);
  if (after && AFTER_AMOUNT.has(after.lower)) amount = true;
  for (let k = 1; k < groups.length; k++) {
    const g = groups[k]!;
    // "1,234" or "3.5" / "1,234.56": thousands or decimals, typed.
    // (Up to 12 digits: Whisper also writes a spoken card number as "4,111,111,111,111,111".)
    if (!g.spoken && !groups[k - 1]!.spoken && g.sep === ',' && g.digits.length === 3 && digits.length <= 12) amount = true;
    if (k === groups.length - 1 && !g.spoken && g.sep === '.' && g.digits.length <= 2 && digits.length <= 9) amount = true;
  }
  const quantity = !!after && AFTER_QUANTITY.has(after.lower);
  const glued = (!!before && !toks[first.t0]!.space && touches(toks, first.t0 - 1, ':/')) || (!!after && !after.space && touches(toks, last.t1, ':/'));
  return { groups, digits, offsets, start: first.start, end: last.end, t0: first.t0, t1: last.t1, plus, amount, quantity, glued };
}

/** The digits of groups [g0, g1] of a run. */
export function runSlice(run: Run, g0: number, g1: number): string {
  const from = run.offsets[g0]!;
  const to = g1 + 1 < run.groups.length ? run.offsets[g1 + 1]! : run.digits.length;
  return run.digits.slice(from, to);
}

/** Character span of groups [g0, g1]. */
export function groupSpan(run: Run, g0: number, g1: number): { start: number; end: number } {
  return { start: run.groups[g0]!.start, end: run.groups[g1]!.end };
}

// Exported for the date parser and tests.
export { UNITS, TEENS, TENS };
