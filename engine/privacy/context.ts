// Context words: which kind of data a number or name most likely is, from the words just before it, and what an
// agent's question leads the caller to say next ("What's the card number?" makes the reply's digits a card).
import type { Tok } from './tokens.js';

export type CueKind =
  | 'card' | 'cvv' | 'expiry' | 'account' | 'routing' | 'ssn' | 'dob' | 'phone' | 'pin' | 'negative'
  | 'address' | 'email' | 'name' | 'lastname';

const CUES: Record<CueKind, string[]> = {
  card: [
    'card', 'cards', "card's", 'card number', 'visa', 'mastercard', 'master card', 'amex', 'american express', 'discover',
    'credit card', 'debit card', 'creditcard', 'long number', 'sixteen digit', '16 digit', 'cc', 'card ending', 'ending in', 'ends in',
  ],
  cvv: [
    'cvv', 'cvv2', 'cvc', 'cvc2', 'cvn', 'csc', 'c v v', 'c v c', 'security code', 'card code', 'security number',
    'code on the back', 'digits on the back', 'number on the back', 'three digit code', '3 digit code', '3-digit code', 'three digits',
  ],
  expiry: ['expiry', 'expiration', 'expires', 'expire', 'expired', 'expiring', 'exp', 'valid thru', 'valid through', 'valid until', 'good thru', 'good through', 'expiry date'],
  account: ['account', 'accounts', 'acct', 'account number', 'iban', 'checking', 'savings', 'bank account', 'account no'],
  routing: ['routing', 'aba', 'transit number', 'rtn', 'sort code', 'routing number'],
  ssn: ['ssn', 'social security', 'social', 's s n', 'tax id', 'taxpayer id', 'itin', 'social security number'],
  dob: ['born', 'birthday', 'date of birth', 'birth date', 'birthdate', 'dob', 'd o b', 'day of birth'],
  phone: [
    'phone', 'telephone', 'cell', 'cellphone', 'mobile', 'fax', 'landline', 'call me', 'reach me', 'text me', 'call back', 'callback',
    'contact number', 'my number', 'the number', 'your number', 'best number', 'number to reach', 'number to call', 'whatsapp',
    'home number', 'work number', 'cell number', 'call me at', 'reached at', 'dial',
  ],
  pin: ['pin', 'pin number', 'pin code', 'passcode'],
  negative: [
    'order', 'orders', 'tracking', 'track', 'confirmation', 'reference', 'ref', 'invoice', 'ticket', 'case', 'claim', 'policy', 'serial',
    'model', 'part', 'sku', 'item', 'flight', 'room', 'extension', 'ext', 'zip', 'zipcode', 'zip code', 'postal', 'postcode', 'reservation',
    'booking', 'member', 'membership', 'customer', 'license', 'plate', 'vin', 'imei', 'transaction', 'receipt', 'shipment', 'package',
    'parcel', 'apartment', 'apt', 'suite', 'unit', 'floor', 'gate', 'seat', 'table', 'version', 'quantity', 'qty', 'page', 'chapter', 'step',
    'line', 'route', 'bus', 'train', 'total', 'balance', 'amount', 'price', 'cost', 'paid', 'refund', 'temperature', 'score', 'employee',
    'student', 'patient', 'id', 'code', 'promo code', 'discount code', 'coupon', 'voucher', 'year', 'number of',
  ],
  address: [
    'live at', 'address', 'located at', 'ship to', 'ship it to', 'deliver to', 'deliver it to', 'send it to', 'mail it to', 'residing at',
    'reside at', 'house is', 'street address', 'billing address', 'shipping address', 'mailing address', 'moved to', 'stay at', 'staying at',
  ],
  email: ['email', 'e-mail', 'email address', 'mail'],
  name: ['your name', 'full name', 'first name', 'who am i speaking with', 'who am i speaking to', "who's calling", 'who is calling', 'spell your name', 'name please'],
  lastname: ['last name', 'surname', 'family name', 'spell your last name'],
};

export interface PhraseHit<K extends string> {
  kind: K;
  /** Index of the phrase's first and last token. */
  first: number;
  last: number;
}
export type CueHit = PhraseHit<CueKind>;

const isWordLike = (t: Tok) => t.type === 'word' || t.type === 'alnum' || t.type === 'num' || t.type === 'ord';

/**
 * A matcher for a table of phrases (kind → lower-case phrases of space-separated words): for each token, the longest
 * phrase ending there, or undefined. Punctuation between words is skipped; a sentence end breaks a phrase.
 */
export function phraseMatcher<K extends string>(table: Record<K, string[]>): (toks: readonly Tok[]) => (PhraseHit<K> | undefined)[] {
  const byLast = new Map<string, { words: string[]; kind: K }[]>();
  for (const [kind, list] of Object.entries(table) as [K, string[]][]) {
    for (const phrase of list) {
      const words = phrase.split(' ');
      const last = words[words.length - 1]!;
      const arr = byLast.get(last) ?? [];
      arr.push({ words, kind });
      byLast.set(last, arr);
    }
  }
  for (const arr of byLast.values()) arr.sort((a, b) => b.words.length - a.words.length);
  return (toks) => {
    const out: (PhraseHit<K> | undefined)[] = new Array(toks.length);
    const wordIdx: number[] = [];
    for (let i = 0; i < toks.length; i++) {
      const t = toks[i]!;
      if (!isWordLike(t)) {
        if (t.text === '.' || t.text === '?' || t.text === '!' || t.type === 'tag') wordIdx.length = 0;
        continue;
      }
      wordIdx.push(i);
      if (wordIdx.length > 16) wordIdx.shift();
      const entries = byLast.get(t.lower);
      if (!entries) continue;
      for (const e of entries) {
        const n = e.words.length;
        if (n > wordIdx.length) continue;
        let ok = true;
        for (let k = 0; k < n && ok; k++) ok = toks[wordIdx[wordIdx.length - n + k]!]!.lower === e.words[k];
        if (ok) {
          out[i] = { kind: e.kind, first: wordIdx[wordIdx.length - n]!, last: i };
          break;
        }
      }
    }
    return out;
  };
}

/** The cue ending at each token (longest match), or undefined. */
export const findCues = phraseMatcher(CUES);

/** At most this many tokens are looked at before a position (bounds the work on long runs of digits and symbols). */
const MAX_LOOKBACK = 48;

/** The nearest cue among the `window` word tokens before token t0 (numbers and punctuation not counted), or undefined. */
export function nearestCue(cues: readonly (CueHit | undefined)[], toks: readonly Tok[], t0: number, window = 6): CueHit | undefined {
  let words = 0;
  for (let j = t0 - 1; j >= 0 && j >= t0 - MAX_LOOKBACK && words < window; j--) {
    const hit = cues[j];
    if (hit) return hit;
    const t = toks[j]!;
    if (t.type === 'word' || t.type === 'alnum' || t.type === 'ord' || t.type === 'tag') words++;
  }
  return undefined;
}

/** Whether any cue of `kind` ends within `window` words before t0. */
export function hasCue(cues: readonly (CueHit | undefined)[], toks: readonly Tok[], t0: number, kind: CueKind, window = 8): boolean {
  let words = 0;
  for (let j = t0 - 1; j >= 0 && j >= t0 - MAX_LOOKBACK && words < window; j--) {
    if (cues[j]?.kind === kind) return true;
    const t = toks[j]!;
    if (t.type === 'word' || t.type === 'alnum' || t.type === 'ord' || t.type === 'tag') words++;
  }
  return false;
}

/**
 * Words before t0 since the start of the text, counted up to `limit` (more is reported as limit + 1); used to
 * apply an agent's question to the start of the reply.
 */
export function wordsBefore(toks: readonly Tok[], t0: number, limit = 8): number {
  let n = 0;
  for (let j = t0 - 1; j >= 0; j--) {
    if (toks[j]!.type === 'word' || toks[j]!.type === 'alnum') n++;
    if (n > limit || t0 - j > 4 * MAX_LOOKBACK) return limit + 1;
  }
  return n;
}

/**
 * What an agent's turn asks for: the kinds of the cues in its last 15 words, nearest the end first ("Can I have the
 * card number and the expiry?" → expiry, card). A negative cue there ("your order number?") stops the list.
 */
export function expectationFrom(toks: readonly Tok[]): CueKind[] {
  const cues = findCues(toks);
  const kinds: CueKind[] = [];
  let words = 0;
  for (let i = toks.length - 1; i >= 0 && words < 15; i--) {
    const t = toks[i]!;
    if (t.type === 'word' || t.type === 'alnum') words++;
    const c = cues[i];
    if (!c) continue;
    if (c.kind === 'negative') break;
    if (!kinds.includes(c.kind)) kinds.push(c.kind);
  }
  return kinds;
}
