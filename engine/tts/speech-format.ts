// Numbers, dates, times and currency amounts written as words for speech (agents' `speechFormatting`), in English:
// "$12.50" -> "twelve dollars and fifty cents", "2026-12-25" and "12/25/2026" -> "December twenty-fifth, twenty
// twenty-six", "3:05 pm" -> "three oh five p m", "45%" -> "forty-five percent", "22nd" -> "twenty-second",
// "1,234.5" -> "one thousand two hundred thirty-four point five", long digit runs (phone numbers) digit by digit.

const ONES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const SCALES: [number, string][] = [
  [1e12, 'trillion'],
  [1e9, 'billion'],
  [1e6, 'million'],
  [1e3, 'thousand'],
];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const CURRENCIES: Record<string, [string, string, string, string]> = {
  $: ['dollar', 'dollars', 'cent', 'cents'],
  '£': ['pound', 'pounds', 'penny', 'pence'],
  '€': ['euro', 'euros', 'cent', 'cents'],
  '₹': ['rupee', 'rupees', 'paisa', 'paise'],
};
/** Digit runs this long or longer (without separators) are said digit by digit: numbers people read out, not amounts. */
const DIGIT_RUN = 7;

/** A whole number in words ("one thousand two hundred thirty-four"); past the trillions, digit by digit. */
export function numberWords(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) return digits(String(n));
  if (n < 20) return ONES[n] as string;
  if (n < 100) return TENS[Math.floor(n / 10)] + (n % 10 ? `-${ONES[n % 10]}` : '');
  if (n < 1000) return `${ONES[Math.floor(n / 100)]} hundred${n % 100 ? ` ${numberWords(n % 100)}` : ''}`;
  if (n >= 1e15) return digits(String(n));
  for (const [scale, name] of SCALES) {
    if (n >= scale) {
      const rest = n % scale;
      return `${numberWords(Math.floor(n / scale))} ${name}${rest ? ` ${numberWords(rest)}` : ''}`;
    }
  }
  return String(n);
}

/** "twenty-second", "first", "one hundredth". */
export function ordinalWords(n: number): string {
  const words = numberWords(n);
  const irregular: Record<string, string> = { one: 'first', two: 'second', three: 'third', five: 'fifth', eight: 'eighth', nine: 'ninth', twelve: 'twelfth' };
  return words.replace(/([a-z]+)$/, (last) => irregular[last] ?? (last.endsWith('y') ? `${last.slice(0, -1)}ieth` : `${last}th`));
}

/** A year as said: 2026 "twenty twenty-six", 2000 "two thousand", 2005 "two thousand five", 1999 "nineteen ninety-nine". */
export function yearWords(y: number): string {
  if (y < 1000 || y > 9999) return numberWords(y);
  if (y % 1000 < 10 && Math.floor(y / 1000) % 10 !== 0 && Math.floor(y / 100) % 10 === 0) return numberWords(y);
  const hi = Math.floor(y / 100);
  const lo = y % 100;
  return `${numberWords(hi)} ${lo === 0 ? 'hundred' : lo < 10 ? `oh ${ONES[lo]}` : numberWords(lo)}`;
}

const digits = (s: string) => s.replace(/\D/g, '').split('').map((d) => ONES[Number(d)]).join(' ');
const plain = (s: string) => Number(s.replace(/,/g, ''));

function dateWords(year: number, month: number, day: number): string | null {
  if (month < 1 || month > 12 || day < 1 || day > 31) return null;
  return `${MONTHS[month - 1]} ${ordinalWords(day)}, ${yearWords(year)}`;
}

function timeWords(h: number, m: number, meridiem: string | undefined): string | null {
  if (h > 23 || m > 59 || (meridiem && (h < 1 || h > 12))) return null;
  const minutes = m === 0 ? (meridiem ? '' : ' hundred') : m < 10 ? ` oh ${ONES[m]}` : ` ${numberWords(m)}`;
  const hour = h === 0 && !meridiem ? 'zero' : numberWords(h);
  const suffix = meridiem ? ` ${meridiem.replace(/\./g, '').toLowerCase().split('').join(' ')}` : '';
  return `${hour}${minutes}${suffix}`;
}

function amountWords(symbol: string, whole: string, cents: string | undefined, scale: string | undefined): string {
  const [one, many, centOne, centMany] = CURRENCIES[symbol] as [string, string, string, string];
  const n = plain(whole);
  if (scale) return `${decimalWords(whole + (cents ? `.${cents}` : ''))} ${scale.toLowerCase()} ${many}`;
  const c = cents ? Number(cents.padEnd(2, '0').slice(0, 2)) : 0;
  const main = `${numberWords(n)} ${n === 1 ? one : many}`;
  if (!c) return main;
  const change = `${numberWords(c)} ${c === 1 ? centOne : centMany}`;
  return n === 0 ? change : `${main} and ${change}`;
}

function decimalWords(s: string): string {
  const [whole, frac] = s.replace(/,/g, '').split('.');
  const w = numberWords(Number(whole || '0'));
  return frac ? `${w} point ${digits(frac)}` : w;
}

const RULES: [RegExp, (...m: string[]) => string | null][] = [
  // ISO dates 2026-12-25, then US dates 12/25/2026 (and 12/25/26).
  [/\b(\d{4})-(\d{2})-(\d{2})\b/g, (_, y, mo, d) => dateWords(Number(y), Number(mo), Number(d))],
  [/\b(\d{1,2})\/(\d{1,2})\/(\d{4}|\d{2})\b/g, (_, mo, d, y) => dateWords(y!.length === 2 ? 2000 + Number(y) : Number(y), Number(mo), Number(d))],
  // Currency amounts, with an optional scale word ("$1.5 million").
  [/([$£€₹])\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?(?:\s?(million|billion|thousand|trillion)\b)?/gi, (_, sym, whole, cents, scale) => amountWords(sym!, whole!, cents, scale)],
  // Clock times: 3:05 pm, 15:30, 9 a.m. (a sentence's final period stays).
  [/\b(\d{1,2}):(\d{2})(?:\s?([ap]\.?m(?:\.(?=\s+[a-z]))?)(?![a-z]))?/gi, (_, h, m, mer) => timeWords(Number(h), Number(m), mer)],
  [/\b(\d{1,2})\s?([ap]\.?m(?:\.(?=\s+[a-z]))?)(?![a-z])/gi, (_, h, mer) => timeWords(Number(h), 0, mer)],
  // Percentages and ordinals.
  [/\b(\d+(?:\.\d+)?)\s?%/g, (_, n) => `${decimalWords(n!)} percent`],
  [/\b(\d+)(?:st|nd|rd|th)\b/gi, (_, n) => ordinalWords(Number(n))],
  // Long digit runs digit by digit; other numbers (with thousands separators and decimals) as amounts.
  [new RegExp(`\\b\\d{${DIGIT_RUN},}\\b`, 'g'), (m) => digits(m)],
  [/(?<![\d.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\d])/g, (_, whole, frac) => decimalWords(frac ? `${whole}.${frac}` : whole!)],
];

/** Currency amounts only (`$56.20` -> "fifty six dollars and twenty cents"), for a voice that misreads them. */
export function spellCurrency(text: string): string {
  const [pattern, say] = RULES.find(([re]) => re.source.startsWith('([$£€₹])')) as (typeof RULES)[number];
  return text.replace(pattern, (...m) => say(...(m.slice(0, -2) as string[])) ?? (m[0] as string));
}

/** The text with numbers, dates, times and amounts written as they are said. */
export function formatForSpeech(text: string): string {
  if (!/\d/.test(text)) return text;
  let out = text;
  for (const [pattern, say] of RULES) out = out.replace(pattern, (...m) => say(...(m.slice(0, -2) as string[])) ?? (m[0] as string));
  return out;
}
