// Date phrases after a date-of-birth or expiry cue: "04/27", "oh four twenty seven", "April twenty seven",
// "the fifth of April 1985", "April 5th, nineteen eighty five", "1985-04-05", "04121985".
import { parseItem, TENS, FILLERS } from './numbers.js';
import { luhnValid } from './checks.js';
import { PRIORITY, type Doc } from './doc.js';
import type { Tok } from './tokens.js';
import type { Candidate } from './types.js';

const MONTHS: Record<string, number> = {
  january: 1, jan: 1, february: 2, feb: 2, march: 3, mar: 3, april: 4, apr: 4, may: 5, june: 6, jun: 6, july: 7, jul: 7,
  august: 8, aug: 8, september: 9, sep: 9, sept: 9, october: 10, oct: 10, november: 11, nov: 11, december: 12, dec: 12,
};
const ORDINALS: Record<string, number> = {
  first: 1, second: 2, third: 3, fourth: 4, fifth: 5, sixth: 6, seventh: 7, eighth: 8, ninth: 9, tenth: 10, eleventh: 11, twelfth: 12,
  thirteenth: 13, fourteenth: 14, fifteenth: 15, sixteenth: 16, seventeenth: 17, eighteenth: 18, nineteenth: 19, twentieth: 20, thirtieth: 30,
};
/** Words that may stand between a cue and its date ("born on the", "expiry date is", "it's"). */
const LEAD = new Set(['is', 'was', 'on', 'in', "it's", 'its', 'it', 'the', 'of', 'date', 'at', 'be', 'will', 'would', 'are', 'my', 'this', 'that', "that's", 'yes', 'yeah', 'sure', 'okay', 'ok', 'so', 'um', 'uh', 'end', 'thru', 'through', 'until', 'as', 'dated']);
const SEPARATORS = new Set(['/', '-', '.', ',', '–', 'slash', 'dash', 'of', 'the', "'", '’']);

export interface DatePhrase {
  /** Token range [t0, t1). */
  t0: number;
  t1: number;
  start: number;
  end: number;
  /** Normalised for token reuse: month, day and the digits in order. */
  value: string;
}

function ordinalAt(toks: readonly Tok[], i: number): { day: number; next: number } | null {
  const t = toks[i];
  if (!t) return null;
  if (t.type === 'ord') return { day: parseInt(t.text, 10), next: i + 1 };
  if (t.type !== 'word') return null;
  if (t.lower in ORDINALS) return { day: ORDINALS[t.lower]!, next: i + 1 };
  if (t.lower in TENS) {
    let j = i + 1;
    if (toks[j]?.text === '-') j++;
    const u = toks[j];
    if (u && u.lower in ORDINALS && ORDINALS[u.lower]! < 10) return { day: TENS[t.lower]! + ORDINALS[u.lower]!, next: j + 1 };
  }
  return null;
}

/**
 * The date phrase starting at or shortly after token i (up to `lead` connecting words are skipped), or null.
 * It needs a month name with a number, or at least three digits; at most eight digits are taken.
 */
export function scanDate(toks: readonly Tok[], i: number, lead = 4): DatePhrase | null {
  let j = i;
  for (let k = 0; k < lead && j < toks.length; k++) {
    const t = toks[j]!;
    if ((t.type === 'word' && (LEAD.has(t.lower) || FILLERS.has(t.lower))) || (t.type === 'punct' && ':,-'.includes(t.text))) j++;
    else break;
  }
  const t0 = j;
  let t1 = j;
  let month = 0;
  let day = 0;
  let digits = '';
  let steps = 0;
  while (j < toks.length && steps++ < 14) {
    const t = toks[j]!;
    if (t.type === 'word' && t.lower in MONTHS && !month) {
      month = MONTHS[t.lower]!;
      j++;
      if (toks[j]?.text === '.' && !toks[j]!.space) j++;
      t1 = j;
      continue;
    }
    const ord = ordinalAt(toks, j);
    if (ord && !day) {
      day = ord.day;
      j = ord.next;
      t1 = j;
      continue;
    }
    const item = parseItem(toks, j);
    if (item) {
      if (digits.length + item.digits.length > 8) break;
      digits += item.digits;
      j = item.next;
      t1 = j;
      continue;
    }
    if ((t.type === 'punct' || t.type === 'word') && (SEPARATORS.has(t.lower) || FILLERS.has(t.lower))) {
      j++;
      continue;
    }
    break;
  }
  if (t1 === t0) return null;
  // "the fifth of April": the article goes with the date.
  const start = t0 > i && toks[t0 - 1]!.lower === 'the' && day ? t0 - 1 : t0;
  const numbers = digits.length + (day ? 1 : 0);
  if (!((month && numbers > 0) || digits.length >= 3)) return null;
  // A lone "oh"/"o" is not a date.
  if (!month && !day && /^0+$/.test(digits)) return null;
  return { t0: start, t1, start: toks[start]!.start, end: toks[t1 - 1]!.end, value: `${month || ''}|${day || ''}|${digits}` };
}

/**
 * Cues that name a card's expiry outright ("expiry", "expiration", "exp", "valid thru", "good thru"); "expires",
 * "expired", "valid until" need a card talked about nearby or a card-like shape.
 */
const STRONG_EXPIRY = /^(?:expiry|expiration|exp|valid thru|valid through|good thru|good through)\b/;

/** A card in this text: a card or security-code cue, a Luhn-valid 13-19 digit run, or the agent asking for one. */
function cardInText(doc: Doc): boolean {
  return (
    doc.cues.some((c) => c && (c.kind === 'card' || c.kind === 'cvv')) ||
    doc.expect.some((k) => k === 'card' || k === 'cvv' || k === 'expiry') ||
    doc.runs.some((r) => r.digits.length >= 13 && r.digits.length <= 19 && luhnValid(r.digits))
  );
}

/** …or in the last few turns. */
function cardContext(doc: Doc): boolean {
  return !!doc.cardContext || cardInText(doc);
}

/** Month and two-digit year of an expiry ("4/27"), so that "04/27" and "April twenty seven" share a token. */
function expiryValue(d: DatePhrase): string {
  const [month, , digits = ''] = d.value.split('|');
  if (month) return `${month}/${digits.slice(-2)}`;
  const m = /^(0?[1-9]|1[0-2])(?:20)?([0-9]{2})$/.exec(digits);
  return m ? `${Number(m[1])}/${m[2]}` : d.value;
}

/** Month and year only, as printed on cards: "04/27", "4/2027", "0427", "June 2031" (a month and a 20xx year). */
function cardShape(doc: Doc, d: DatePhrase): boolean {
  const s = doc.text.slice(d.start, d.end);
  if (/^(?:0?[1-9]|1[0-2])[/-](?:[0-9]{2}|20[0-9]{2})$/.test(s) || /^(?:0[1-9]|1[0-2])[0-9]{2}$/.test(s)) return true;
  const [month, day, digits = ''] = d.value.split('|');
  // Spoken "oh seven thirty one" (MMYY), or a month with a 20xx year or a number that cannot be a day ("July thirty three").
  if (!month && !day) return /^(?:0[1-9]|1[0-2])[0-9]{2}$/.test(digits);
  return !!month && !day && (/^20[0-9]{2}$/.test(digits) || (/^[0-9]{2}$/.test(digits) && Number(digits) > 31));
}

/** Dates of birth and card expiry dates: after their cues, or at the start of a reply to the agent's question. */
export function detectDates(doc: Doc): Candidate[] {
  const out: Candidate[] = [];
  const push = (d: DatePhrase | null, kind: 'DATEOFBIRTH' | 'EXPIRYDATE') => {
    if (d) out.push({ start: d.start, end: d.end, kind, value: kind === 'EXPIRYDATE' ? expiryValue(d) : d.value, priority: PRIORITY.date });
  };
  doc.cues.forEach((c) => {
    if (!c || (c.kind !== 'dob' && c.kind !== 'expiry')) return;
    const d = scanDate(doc.toks, c.last + 1);
    if (c.kind === 'dob') return push(d, 'DATEOFBIRTH');
    const cue = doc.toks.slice(c.first, c.last + 1).map((t) => t.lower).join(' ');
    if (d && (STRONG_EXPIRY.test(cue) || cardContext(doc) || cardShape(doc, d))) push(d, 'EXPIRYDATE');
  });
  // Next to a card number (or its cue) a typed MM/YY is its expiry even without a cue ("4111 … 1111 04/27").
  if (cardInText(doc)) {
    for (let i = 0; i + 2 < doc.toks.length; i++) {
      const [m, slash, y] = [doc.toks[i]!, doc.toks[i + 1]!, doc.toks[i + 2]!];
      if (m.type !== 'num' || slash.text !== '/' || slash.space || y.space || y.type !== 'num') continue;
      if (doc.toks[i + 3]?.text === '/' || doc.toks[i - 1]?.text === '/') continue;
      if (!/^(?:0?[1-9]|1[0-2])$/.test(m.text) || !/^(?:[0-9]{2}|20[0-9]{2})$/.test(y.text)) continue;
      out.push({ start: m.start, end: y.end, kind: 'EXPIRYDATE', value: `${Number(m.text)}/${y.text.slice(-2)}`, priority: PRIORITY.date - 1 });
    }
  }
  if (doc.expect.includes('dob')) push(scanDate(doc.toks, 0, 6), 'DATEOFBIRTH');
  if (doc.expect.includes('expiry')) push(scanDate(doc.toks, 0, 6), 'EXPIRYDATE');
  return out;
}
