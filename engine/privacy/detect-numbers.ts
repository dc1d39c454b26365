// Numbers in a turn: card numbers (Luhn and brand), phone numbers, SSNs, and — with a context cue or an agent's
// question — security codes, PINs, bank account and routing numbers, partial card numbers.
import { abaValid, cardBrand, nanpValid, ssnValid } from './checks.js';
import { nearestCue, hasCue, wordsBefore, type CueKind } from './context.js';
import { PRIORITY, type Doc } from './doc.js';
import { runSlice, type Run } from './numbers.js';
import type { Candidate, RedactionKind } from './types.js';

const BRAND_FIRST = new Set([50, 51, 52, 53, 54, 56]);

/** A card-number window of a run: groups [g0, g1]. */
export interface CardWindow {
  g0: number;
  g1: number;
  digits: string;
}

/**
 * Group-aligned windows of 13-19 digits that pass Luhn (and, when `brand`, match a card brand's prefix and
 * length); the longest first, not overlapping. Linear in the run's length: each end group walks back at most 19 digits.
 */
export function cardWindows(run: Run, brand: boolean): CardWindow[] {
  const found: CardWindow[] = [];
  const G = run.groups.length;
  for (let j = 0; j < G; j++) {
    let pos = 0;
    let sum = 0;
    for (let i = j; i >= 0 && pos <= 19; i--) {
      const d = run.groups[i]!.digits;
      for (let k = d.length - 1; k >= 0 && pos <= 19; k--, pos++) {
        let x = d.charCodeAt(k) - 48;
        if (pos % 2 === 1) {
          x *= 2;
          if (x > 9) x -= 9;
        }
        sum += x;
      }
      // Brands start with 2-6 or 8: check the first digit before building the string.
      if (pos >= 13 && pos <= 19 && sum % 10 === 0 && (!brand || BRAND_FIRST.has(run.groups[i]!.digits.charCodeAt(0)))) {
        const digits = runSlice(run, i, j);
        if (!brand || cardBrand(digits)) found.push({ g0: i, g1: j, digits });
      }
    }
  }
  found.sort((a, b) => b.digits.length - a.digits.length || a.g0 - b.g0);
  const used = new Uint8Array(G);
  const taken: CardWindow[] = [];
  for (const w of found) {
    let free = true;
    for (let g = w.g0; g <= w.g1 && free; g++) free = !used[g];
    if (!free) continue;
    used.fill(1, w.g0, w.g1 + 1);
    taken.push(w);
  }
  return taken.sort((a, b) => a.g0 - b.g0);
}

/** Character span of groups [g0, g1], taking in a "+"/"plus" before the first and a "(" when its ")" is inside. */
export function runSpan(doc: Doc, run: Run, g0: number, g1: number): { start: number; end: number } {
  let start = run.groups[g0]!.start;
  const end = run.groups[g1]!.end;
  if (g0 === 0 && run.plus) start = doc.toks[run.t0 - 1]!.start;
  else if (doc.text[start - 1] === '(' && doc.text.slice(start, end).includes(')')) start -= 1;
  return { start, end };
}

function cand(doc: Doc, run: Run, g0: number, g1: number, kind: RedactionKind, value: string, priority: number): Candidate {
  return { ...runSpan(doc, run, g0, g1), kind, value, priority };
}

const whole = (doc: Doc, run: Run, kind: RedactionKind, value = run.digits, priority: number = PRIORITY.contextNumber) =>
  cand(doc, run, 0, run.groups.length - 1, kind, value, priority);

/** Normalised phone number: NANP numbers as their ten digits (with or without "+1"), others with their "+". */
export function phoneValue(d: string, plus: boolean): string {
  if (d.length === 11 && d[0] === '1' && nanpValid(d.slice(1))) return d.slice(1);
  return plus ? `+${d}` : d;
}

const nanp = (s: string) => (s.length === 10 && nanpValid(s)) || (s.length === 11 && s[0] === '1' && nanpValid(s.slice(1)));

/** A phone number with no cue: "+" and 8-15 digits, or a valid NANP number of 10 (or 1 + 10) digits. */
function phoneByShape(doc: Doc, run: Run): Candidate | null {
  const d = run.digits;
  if (run.plus && d.length >= 8 && d.length <= 15) return whole(doc, run, 'PHONENUMBER', phoneValue(d, true), PRIORITY.phone);
  if (nanp(d)) return whole(doc, run, 'PHONENUMBER', phoneValue(d, false), PRIORITY.phone);
  // One stray group at an edge: "Oh, 415 555 0123", "… 0123 one".
  const G = run.groups.length;
  if (G >= 3 && d.length <= 14) {
    for (const [g0, g1] of [[1, G - 1], [0, G - 2], [1, G - 2]] as const) {
      if (g1 < g0) continue;
      const s = runSlice(run, g0, g1);
      if (nanp(s)) return cand(doc, run, g0, g1, 'PHONENUMBER', phoneValue(s, false), PRIORITY.phone);
    }
  }
  return null;
}

/** SSN typed as ddd-dd-dddd with valid ranges. */
function ssnByShape(doc: Doc, run: Run): Candidate | null {
  const g = run.groups;
  if (g.length !== 3 || g.some((x) => x.spoken)) return null;
  if (g[0]!.digits.length !== 3 || g[1]!.digits.length !== 2 || g[2]!.digits.length !== 4) return null;
  if (g[1]!.sep !== '-' || g[2]!.sep !== '-' || !ssnValid(run.digits)) return null;
  return whole(doc, run, 'SSN', run.digits, PRIORITY.ssn);
}

function cards(doc: Doc, run: Run, brand: boolean, priority: number): Candidate[] {
  return cardWindows(run, brand).map((w) => cand(doc, run, w.g0, w.g1, 'CREDITCARDNUMBER', w.digits, priority));
}

/** The run read as `kind` (a cue before it or the agent's question), or null when it does not fit that kind. */
function asKind(doc: Doc, run: Run, kind: CueKind, fromQuestion: boolean): Candidate[] | null {
  const d = run.digits;
  const n = d.length;
  switch (kind) {
    case 'card': {
      if (n < 4) return null;
      const found = cards(doc, run, false, PRIORITY.contextNumber);
      if (found.length) return found;
      // In card context a number that fails Luhn (misheard digit) or is partial is still card data.
      // Answering "what's the card number?" with a few digits is the start of one (the rest may come next turn).
      if (n <= 19 && (!fromQuestion || n >= 6)) return [whole(doc, run, 'CREDITCARDNUMBER', `partial:${d}`)];
      return null;
    }
    case 'cvv':
      return n === 3 || n === 4 ? [whole(doc, run, 'CVV')] : null;
    case 'pin':
      return n >= 4 && n <= 6 ? [whole(doc, run, 'PIN')] : null;
    case 'routing':
      if (n === 9 && abaValid(d)) return [whole(doc, run, 'ROUTINGNUMBER')];
      if (n >= 4 && n <= 17 && hasCue(doc.cues, doc.toks, run.t0, 'account')) return [whole(doc, run, 'ACCOUNTNUMBER')];
      return null;
    case 'account':
      if (n === 9 && abaValid(d) && hasCue(doc.cues, doc.toks, run.t0, 'routing')) return [whole(doc, run, 'ROUTINGNUMBER')];
      if (n >= 13 && n <= 19 && hasCue(doc.cues, doc.toks, run.t0, 'card')) return cards(doc, run, false, PRIORITY.contextNumber);
      return n >= 4 && n <= 34 ? [whole(doc, run, 'ACCOUNTNUMBER')] : null;
    case 'ssn':
      return n === 9 || n === 4 ? [whole(doc, run, 'SSN')] : null;
    case 'phone': {
      if (n >= 13 && n <= 19) {
        const c = cards(doc, run, true, PRIORITY.card);
        if (c.length) return c;
      }
      if (n >= 7 && n <= 15) return [whole(doc, run, 'PHONENUMBER', phoneValue(d, run.plus))];
      return null;
    }
    default:
      return null;
  }
}

/** Number candidates of one text. */
export function detectNumbers(doc: Doc): Candidate[] {
  const out: Candidate[] = [];
  for (const run of doc.runs) {
    // Nothing is shorter than three digits (a security code).
    if (run.amount || run.zeroLetters || run.digits.length < 3) continue;
    const cue = nearestCue(doc.cues, doc.toks, run.t0);
    if (cue?.kind === 'negative') continue;
    let kinds: CueKind[] = [];
    let fromQuestion = false;
    if (cue) kinds = [cue.kind];
    else if (doc.expect.length && wordsBefore(doc.toks, run.t0) <= 8) {
      kinds = doc.expect;
      fromQuestion = true;
    }
    let done = false;
    for (const k of kinds) {
      const c = asKind(doc, run, k, fromQuestion);
      if (c) {
        out.push(...c);
        done = true;
        break;
      }
    }
    if (done || run.glued || run.quantity || run.digits.length < 9) continue;
    const found = run.digits.length >= 13 ? cards(doc, run, true, PRIORITY.card) : [];
    if (found.length) {
      out.push(...found);
      continue;
    }
    const other = ssnByShape(doc, run) ?? phoneByShape(doc, run);
    if (other) out.push(other);
  }
  return out;
}
