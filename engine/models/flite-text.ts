// Rewrites written forms that Flite's own text analysis reads badly into forms it says correctly. Flite already
// says numbers, ordinals, $ amounts, clock times, percentages, phone numbers and most abbreviations well; these
// rules cover only what it gets wrong in agent speech (checked with `flite -ps`): "12/25/2026" became "twelve
// slash twenty five slash...", "#5" "hash five", "£5" and "€20" lost their currency, e-mail addresses and web
// addresses lost their dots, "A&B" became "A ampersand B", "ext."/"Ste."/"Apt." were read as words.

const MONTHS = [
  'January', 'February', 'March', 'April', 'May', 'June',
  'July', 'August', 'September', 'October', 'November', 'December',
];
const ORDINAL_SUFFIX = (n: number): string => {
  const t = n % 100;
  if (t >= 11 && t <= 13) return 'th';
  return ['th', 'st', 'nd', 'rd'][n % 10] ?? 'th';
};

/** Abbreviations Flite reads as words, expanded when followed by a space and more text. */
const ABBREVIATIONS: Array<[RegExp, string]> = [
  [/\bext\.?\s+(?=\d)/gi, 'extension '],
  [/\bApt\.\s+/g, 'apartment '],
  [/\bSte\.\s+/g, 'suite '],
  [/\b[Nn]o\.\s+(?=\d)/g, 'number '],
];
/** A month abbreviated before a day number: "Jan. 5" -> "January 5". */
const MONTH_ABBREVIATION = /\b(Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.\s+(?=\d)/g;

/** Each dot and slash of an address spoken; "www" spelled. */
function speakAddress(addr: string): string {
  return addr
    .replace(/^https?:\/\//i, '')
    .replace(/\/+$/, '')
    .split(/([./@:_-])/)
    .map((part) => {
      switch (part) {
        case '.':
          return ' dot ';
        case '/':
          return ' slash ';
        case '@':
          return ' at ';
        case ':':
          return ' colon ';
        case '_':
          return ' underscore ';
        case '-':
          return ' dash ';
        default:
          return part.toLowerCase() === 'www' ? 'w w w' : part;
      }
    })
    .join('')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Text as Flite should see it. Only forms Flite misreads are changed; everything else passes through untouched,
 * so the result is still ordinary English text for Flite's own normaliser.
 */
export function speakableText(text: string): string {
  let s = text;
  // E-mail addresses, then web addresses that start with a scheme or www.
  s = s.replace(/\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\b/g, speakAddress);
  s = s.replace(/\b(?:https?:\/\/|www\.)[^\s<>"']*[^\s<>"'.,;:!?)]/gi, speakAddress);
  // Numeric dates, US order (month/day/year): 12/25/2026 -> December 25th, 2026. Other fractions are left alone.
  s = s.replace(/\b(\d{1,2})\/(\d{1,2})\/(\d{4}|\d{2})\b/g, (m, mo: string, d: string, y: string) => {
    const month = MONTHS[Number(mo) - 1];
    const day = Number(d);
    if (!month || day < 1 || day > 31) return m;
    const year = y.length === 2 ? `20${y}` : y;
    return `${month} ${day}${ORDINAL_SUFFIX(day)}, ${year}`;
  });
  s = s.replace(/\b24\/7\b/g, '24 7');
  s = s.replace(/#\s?(?=\d)/g, 'number ');
  s = s.replace(/£\s?(\d[\d,]*)(?:\.(\d\d))?\b/g, (_, a: string, p?: string) => `${a} pounds${p && p !== '00' ? ` ${Number(p)} pence` : ''}`);
  s = s.replace(/€\s?(\d[\d,]*)(?:\.(\d\d))?\b/g, (_, a: string, c?: string) => `${a} euros${c && c !== '00' ? ` ${Number(c)} cents` : ''}`);
  s = s.replace(/(\d[\d,]*(?:\.\d\d)?)\s?€/g, '$1 euros');
  s = s.replace(/(?<=\w)\s*&\s*(?=\w)/g, ' and ');
  for (const [re, word] of ABBREVIATIONS) s = s.replace(re, word);
  s = s.replace(MONTH_ABBREVIATION, (m, abbr: string) => `${MONTHS.find((name) => name.startsWith(abbr.slice(0, 3))) ?? m} `);
  return s;
}
