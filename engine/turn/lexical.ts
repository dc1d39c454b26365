// Lexical end-of-turn evidence from the words of a (partial) transcript: can the words so far end a turn, given what
// the agent last asked? Whisper's final period is ignored (it puts one on half a sentence); only its comma, ellipsis
// or dash at the end, and a question mark, are kept as weak evidence. Pure, no models.

/** Words after which an English turn is not finished: articles, determiners, possessives, prepositions, conjunctions, auxiliaries, subject pronouns, fillers. */
const OPEN_ENDINGS: Record<string, string> = {};
const add = (kind: string, words: string) => {
  for (const w of words.split(' ')) OPEN_ENDINGS[w] = kind;
};
add('determiner', 'the a an my your our their every another whose');
add('preposition', 'to of for with from by about into onto between during without than via per toward towards');
add('conjunction', 'and but or because if when while although though since unless until whether nor plus');
add('auxiliary', 'is are was were be been being gonna wanna gotta im youre hes shes theyre ive youve weve theyve whats thats theres');
add('pronoun', 'i we he she they');
add('filler', 'um uh er erm uhm hmm mm ah');
/** Auxiliaries that end short answers ("I do", "yes I can") as often as they open a clause. */
const WEAK_ENDINGS = new Set('am have has had do does did will would can could should shall may might must like'.split(' '));

/** Spoken digits and the words of dictated numbers. */
const NUMBER_WORDS = new Set('zero oh one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand double triple dash'.split(' '));

/** Short answers that complete a reply to a yes/no question. */
const SHORT_ANSWERS = new Set([
  'yes', 'yeah', 'yep', 'yup', 'no', 'nope', 'sure', 'okay', 'ok', 'correct', 'right', 'exactly', 'absolutely', 'definitely',
  'of course', 'not really', 'yes please', 'no thanks', 'no thank you', 'yes thank you', 'thank you', 'thanks', 'that is right',
  'thats right', 'thats correct', 'that is correct', 'i do', 'i dont', 'i did', 'i didnt', 'it is', 'it isnt', 'i am', 'i have', 'i havent',
  'i will', 'i wont', 'i can', 'i cant', 'please', 'go ahead', 'sounds good', 'perfect', 'great', 'good', 'fine', 'maybe',
  'bye', 'goodbye', 'hello', 'hi', 'hey', 'nothing', 'nothing else', 'thats all', 'that is all', 'thats it', 'that is it',
]);

/** What the agent's last words ask for. */
export type Expectation = 'none' | 'yes_no' | 'number' | 'open';

/** Digits a number of each kind usually has; a dictated number shorter than all of them is still going. */
const NUMBER_LENGTHS: [RegExp, number[]][] = [
  [/\b(phone|telephone|mobile|cell|callback)\b/, [7, 10, 11]],
  [/\b(zip|postal|post code|postcode)\b/, [5, 9]],
  [/\b(card)\b/, [15, 16]],
  [/\b(cvv|security code|pin)\b/, [3, 4]],
  [/\b(date of birth|birthday|birth date)\b/, [6, 8]],
];

/** Lower-case words without punctuation ("I'm" -> "im", "4-1-5" -> "4 1 5"). */
export function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[’']/g, '')
    .replace(/[^a-z0-9\s]/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
}

/** What kind of answer the agent's last words ask for (its last sentence that is a question). */
export function expectation(agentText: string | undefined): Expectation {
  const t = (agentText ?? '').trim();
  if (!t.endsWith('?')) return 'none';
  const sentences = t.split(/(?<=[.!?])\s+/);
  const q = (sentences[sentences.length - 1] ?? t).toLowerCase();
  if (/\b(number|digits|code|zip|pin|postcode|how many|how much|amount)\b/.test(q) && !/^(do|does|did|is|are|can|could) /.test(q)) return 'number';
  if (/^(do|does|did|is|are|was|were|can|could|would|will|should|shall|may|have|has|had|am|ok|okay|right|correct)\b/.test(q)) return 'yes_no';
  if (/\b(is that (right|correct)|right\?|correct\?|ok\?|okay\?)$/.test(q)) return 'yes_no';
  return 'open';
}

/** Index of the first word of a trailing dictated number (digits and number words); ws.length when there is none. */
function numberStart(ws: string[]): number {
  let i = ws.length;
  while (i > 0 && (/^\d+$/.test(ws[i - 1] as string) || NUMBER_WORDS.has(ws[i - 1] as string))) i--;
  return i;
}

/** Digit count of a trailing dictated number (digits and number words at the end), 0 when the text does not end in one. */
export function trailingDigits(ws: string[]): number {
  let n = 0;
  for (const w of ws.slice(numberStart(ws))) {
    if (/^\d+$/.test(w)) n += w.length;
    else if (!['double', 'triple', 'dash', 'hundred', 'thousand'].includes(w)) n += 1;
  }
  return n;
}

/** The lexical evidence, each in [0, 1] or a count; the end-of-turn model weighs them. */
export interface LexicalFeatures {
  /** The last word cannot end a turn (determiner, preposition, conjunction, auxiliary, pronoun, filler). */
  openEnding: number;
  /** The last word is an auxiliary that may end a short answer ("I can") or open a clause ("I can"...). */
  weakEnding: number;
  /** Whisper's text ends in a comma, ellipsis or dash. */
  trailingMark: number;
  /** Whisper's text ends in a question mark. */
  questionMark: number;
  /** The text ends in a dictated number that the question (or a cue word) says is not complete yet. */
  numberOpen: number;
  /** The text ends in a dictated number of a complete length, or a number answering a number question. */
  numberDone: number;
  /** A short answer to a yes/no question. */
  shortAnswer: number;
  /** log2(1 + words). */
  logWords: number;
  /** What opened the ending (for logs and tests). */
  reason: string;
}

/** Lexical features of `text` (what the caller said so far) after the agent's words `agentText`. */
export function lexicalFeatures(text: string, agentText?: string): LexicalFeatures {
  const ws = words(text);
  const trimmed = text.trim();
  const last = ws[ws.length - 1] ?? '';
  const expect = expectation(agentText);
  const f: LexicalFeatures = {
    openEnding: 0,
    weakEnding: WEAK_ENDINGS.has(last) ? 1 : 0,
    trailingMark: /(,|\.\.\.|…|-|—|;|:)["')\]]*$/.test(trimmed) ? 1 : 0,
    questionMark: /\?["')\]]*$/.test(trimmed) ? 1 : 0,
    numberOpen: 0,
    numberDone: 0,
    shortAnswer: 0,
    logWords: Math.log2(1 + ws.length),
    reason: '',
  };
  const kind = OPEN_ENDINGS[last];
  if (kind) {
    f.openEnding = 1;
    f.reason = kind;
  }
  // Two-word openings: "going to", "want to" end in "to" already; "my name is" ends in "is". A list in progress:
  // "eggs, milk," ends in a comma (trailingMark).
  const digits = trailingDigits(ws);
  if (digits > 0) {
    const q = (agentText ?? '').toLowerCase();
    const cue = ws.slice(0, Math.max(0, ws.length - 1)).join(' ');
    const lengths = NUMBER_LENGTHS.find(([re]) => re.test(q) || re.test(cue))?.[1];
    if (lengths) {
      if (lengths.includes(digits)) f.numberDone = 1;
      else if (digits < Math.max(...lengths)) {
        f.numberOpen = 1;
        f.reason ||= 'number';
      }
    } else if (expect === 'number') {
      // A number of unknown length: groups of 3-4 digits are often followed by more.
      if (digits >= 3) f.numberOpen = digits <= 4 ? 0.5 : 0.25;
      else f.numberDone = 1;
      if (f.numberOpen) f.reason ||= 'number';
    } else if (digits >= 3 && /\b(is|number|code|account|id)$/.test(ws[numberStart(ws) - 1] ?? '')) {
      f.numberOpen = 0.5;
      f.reason ||= 'number';
    }
  }
  if (expect === 'yes_no') {
    const phrase = ws.join(' ');
    if (SHORT_ANSWERS.has(phrase) || (ws.length <= 4 && SHORT_ANSWERS.has(ws.slice(0, 2).join(' '))) || (ws.length <= 4 && SHORT_ANSWERS.has(ws[0] ?? '') && !f.openEnding)) {
      f.shortAnswer = 1;
    }
  } else if (ws.length <= 3 && SHORT_ANSWERS.has(ws.join(' '))) f.shortAnswer = 0.5;
  return f;
}

