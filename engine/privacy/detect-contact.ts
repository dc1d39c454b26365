// Emails (typed "ada@example.com" or spoken "ada dot lovelace at example dot com"), street addresses
// ("221B Baker Street", "one two three Main St., Apt 4, Springfield, IL 62704", "PO Box 12") and IBANs.
import { ibanValid } from './checks.js';
import { hasCue } from './context.js';
import { PRIORITY, type Doc } from './doc.js';
import { FILLERS, parseItem } from './numbers.js';
import { isCapitalized, type Tok } from './tokens.js';
import type { Candidate } from './types.js';

const TLDS = new Set(
  'com net org edu gov mil int io co uk us ca de fr es it nl be ch at au nz in jp cn br mx ru pl se no dk fi ie info biz me ai app dev xyz ly tv cc email online site tech store'.split(' '),
);
const SPOKEN_JOIN: Record<string, string> = { dot: '.', period: '.', underscore: '_', dash: '-', hyphen: '-', plus: '+' };
/** Words that do not start the local part of a spoken address: "meet me at …", "look at …". */
const NOT_LOCAL = new Set('me us you him her them it i we they look arrive be is was are the a an that this there here home work back least most all'.split(' '));

const isLabel = (t: Tok | undefined): t is Tok => !!t && (t.type === 'word' || t.type === 'alnum' || t.type === 'num');
const glued = (a: Tok, b: Tok | undefined) => !!b && !b.space && a.end === b.start;

interface Domain {
  end: number;
  value: string;
}

/** The domain after the "@"/"at" at token i: labels joined by "." or "dot", ending in a top-level domain. */
function domainAfter(toks: readonly Tok[], i: number): Domain | null {
  let j = i + 1;
  if (!isLabel(toks[j])) return null;
  let value = toks[j]!.lower;
  let labels = 1;
  let lastTyped = false;
  j++;
  for (;;) {
    const t = toks[j];
    if (!t || labels > 10) break;
    const next = toks[j + 1];
    if (t.text === '-' && glued(toks[j - 1]!, t) && isLabel(next) && glued(t, next)) {
      value += '-' + next.lower;
      j += 2;
      continue;
    }
    const typedDot = t.text === '.' && glued(toks[j - 1]!, t) && isLabel(next) && glued(t, next);
    if ((typedDot || t.lower === 'dot') && isLabel(next)) {
      value += '.' + next.lower;
      labels++;
      lastTyped = typedDot;
      j += 2;
      continue;
    }
    break;
  }
  if (labels < 2) return null;
  const tld = value.slice(value.lastIndexOf('.') + 1);
  if (!(TLDS.has(tld) || (lastTyped && /^[a-z]{2,24}$/.test(tld)))) return null;
  return { end: j - 1, value };
}

/** The local part before the "@"/"at" at token i, walking back over joined labels and spelled letters. */
function localBefore(toks: readonly Tok[], i: number, typed: boolean): { start: number; value: string } | null {
  let k = i - 1;
  const first = toks[k];
  if (!isLabel(first)) return null;
  const spelled = first.text.length === 1 && toks[k - 1]?.type === 'word' && toks[k - 1]!.text.length === 1;
  if (typed ? !glued(first, toks[i]) : NOT_LOCAL.has(first.lower) && !spelled) return null;
  let value = first.lower;
  let start = k;
  for (let n = 0; n < 8; n++) {
    const sep = toks[start - 1];
    const prev = toks[start - 2];
    if (!sep) break;
    const join = sep.type === 'punct' ? ('._-+'.includes(sep.text) && glued(sep, toks[start]) && prev && glued(prev, sep) ? sep.text : '') : (SPOKEN_JOIN[sep.lower] ?? '');
    if (join && isLabel(prev)) {
      value = prev.lower + join + value;
      start -= 2;
      continue;
    }
    // Spelled letters: "a d a at example dot com".
    if (sep.type === 'word' && sep.text.length === 1 && toks[start]!.text.length === 1 && !FILLERS.has(sep.lower)) {
      value = sep.lower + value;
      start -= 1;
      continue;
    }
    break;
  }
  return { start, value };
}

export function detectEmails(doc: Doc): Candidate[] {
  const { toks } = doc;
  const out: Candidate[] = [];
  for (let i = 1; i < toks.length; i++) {
    const t = toks[i]!;
    const typed = t.text === '@';
    if (!typed && t.lower !== 'at') continue;
    const domain = domainAfter(toks, i);
    if (!domain) continue;
    const local = localBefore(toks, i, typed);
    if (!local) continue;
    out.push({ start: toks[local.start]!.start, end: toks[domain.end]!.end, kind: 'EMAIL', value: `${local.value}@${domain.value}`, priority: PRIORITY.email });
    i = domain.end;
  }
  return out;
}

const SUFFIXES = new Set(
  ('street st avenue ave av road rd boulevard blvd lane ln drive dr court ct way place pl terrace ter circle cir parkway pkwy ' +
    'highway hwy square sq trail trl loop alley plaza crescent pike close row broadway expressway freeway turnpike').split(' '),
);
const ABBREVIATED = new Set('st ave av rd blvd ln dr ct pl ter cir pkwy hwy sq trl'.split(' '));
const DIRECTIONS = new Set('n s e w ne nw se sw north south east west northeast northwest southeast southwest'.split(' '));
const UNIT_WORDS = new Set(['apt', 'apartment', 'suite', 'ste', 'unit', '#', 'floor', 'fl', 'room', 'number', 'no']);
const STATES = new Set(
  'AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC'.split(' '),
);
const STATE_NAMES = new Set(
  ('alabama alaska arizona arkansas california colorado connecticut delaware florida georgia hawaii idaho illinois indiana iowa kansas ' +
    'kentucky louisiana maine maryland massachusetts michigan minnesota mississippi missouri montana nebraska nevada ohio oklahoma ' +
    'oregon pennsylvania tennessee texas utah vermont virginia washington wisconsin wyoming').split(' '),
);
const ORDINAL_WORDS = new Set('first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth'.split(' '));
/** Street-name words must not be these (so "3 large pizzas on the way" is not an address). */
const NOT_STREET = new Set(
  'the a an and or to of on in at for with from by is are was my your our their this that it i you we they me minutes hours days miles blocks times items people dollars'.split(' '),
);

function skipDot(toks: readonly Tok[], j: number): number {
  return toks[j]?.text === '.' && !toks[j]!.space ? j + 1 : j;
}

const isState = (t: Tok | undefined) => !!t && (STATES.has(t.text) || (isCapitalized(t) && STATE_NAMES.has(t.lower)));

/** City, state and ZIP after an address: ", Springfield, IL 62704", " Portland Oregon" (only with a state). */
function cityStateZip(toks: readonly Tok[], j: number): number {
  let k = j;
  if (toks[k]?.text === ',') k++;
  let words = 0;
  while (words < 3 && toks[k] && isCapitalized(toks[k]!)) {
    k++;
    words++;
  }
  if (!words) return j;
  let end: number;
  if (toks[k]?.text === ',' && isState(toks[k + 1])) end = k + 2;
  else if (isState(toks[k])) end = k + 1;
  else if (words >= 2 && isState(toks[k - 1])) end = k;
  else return j;
  const zip = toks[end];
  if (zip?.type === 'num' && zip.text.length === 5) {
    end++;
    if (toks[end]?.text === '-' && toks[end + 1]?.type === 'num' && toks[end + 1]!.text.length === 4) end += 2;
  }
  return end;
}

/** A street address whose house number starts at token i (digits, spoken digits, or "221B"); null if none. */
function addressAt(doc: Doc, i: number, numberEnd: number): Candidate | null {
  const { toks } = doc;
  let j = numberEnd;
  const words: Tok[] = [];
  let suffix = -1;
  while (j < toks.length && words.length <= 4) {
    const t = toks[j]!;
    if (t.type !== 'word' && t.type !== 'ord') break;
    if (SUFFIXES.has(t.lower) && (words.length > 0 || t.lower === 'broadway')) {
      suffix = j;
      break;
    }
    if (NOT_STREET.has(t.lower) || FILLERS.has(t.lower)) break;
    words.push(t);
    j = skipDot(toks, j + 1);
  }
  if (suffix < 0) return null;
  // Title case ("42 Wallaby Way", "5th Avenue"), or any case after an address cue ("I live at 42 wallaby way").
  const titled =
    isCapitalized(toks[suffix]!) && words.every((w) => isCapitalized(w) || w.type === 'ord' || ORDINAL_WORDS.has(w.lower) || DIRECTIONS.has(w.lower));
  const cued = hasCue(doc.cues, toks, i, 'address', 10) || doc.expect[0] === 'address';
  if (!titled && !cued) return null;
  // "St." keeps its period; "Street." ends the sentence.
  let end = ABBREVIATED.has(toks[suffix]!.lower) ? skipDot(toks, suffix + 1) : suffix + 1;
  if (toks[end] && DIRECTIONS.has(toks[end]!.lower) && toks[end]!.text === toks[end]!.text.toUpperCase()) end = skipDot(toks, end + 1);
  // ", Apt 4B" / "Suite 200"
  let k = toks[end]?.text === ',' ? end + 1 : end;
  if (toks[k] && UNIT_WORDS.has(toks[k]!.lower)) {
    k = skipDot(toks, k + 1);
    if (toks[k]?.text === '#') k++;
    const unit = toks[k];
    if (unit && (unit.type === 'num' || unit.type === 'alnum' || (unit.type === 'word' && unit.text.length === 1))) end = k + 1;
  }
  end = cityStateZip(toks, end);
  const start = toks[i]!.start;
  const stop = toks[end - 1]!.end;
  return { start, end: stop, kind: 'ADDRESS', value: doc.text.slice(start, stop).toLowerCase().replace(/\s+/g, ' '), priority: PRIORITY.address };
}

export function detectAddresses(doc: Doc): Candidate[] {
  const { toks } = doc;
  const out: Candidate[] = [];
  for (const run of doc.runs) {
    if (run.digits.length > 6 || run.amount || run.glued || run.zeroLetters) continue;
    const c = addressAt(doc, run.t0, run.t1);
    if (c) out.push(c);
  }
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    // "221B Baker Street"
    if (t.type === 'alnum' && /^[0-9]{1,5}[A-Za-z]$/.test(t.text)) {
      const c = addressAt(doc, i, i + 1);
      if (c) out.push(c);
    }
    // "PO Box 123", "P.O. Box 123", "post office box 123"
    if (t.lower === 'box' && i > 0) {
      const p = toks[i - 1]!;
      let s = -1;
      if (p.lower === 'po') s = i - 1;
      else if (p.text === '.' && toks[i - 2]?.lower === 'o' && toks[i - 3]?.text === '.' && toks[i - 4]?.lower === 'p') s = i - 4;
      else if (p.lower === 'office' && toks[i - 2]?.lower === 'post') s = i - 2;
      const item = s >= 0 ? parseItem(toks, i + 1) : null;
      if (item) {
        const end = toks[item.next - 1]!.end;
        out.push({ start: toks[s]!.start, end, kind: 'ADDRESS', value: `po box ${item.digits}`, priority: PRIORITY.address });
      }
    }
  }
  return out;
}

/** IBANs typed in groups or compact ("GB82 WEST 1234 5698 7654 32"), mod-97 checked; they are account numbers. */
export function detectIbans(doc: Doc): Candidate[] {
  const { toks } = doc;
  const out: Candidate[] = [];
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if (t.type !== 'alnum' || !/^[A-Z]{2}[0-9]{2}/.test(t.text)) continue;
    let compact = t.text;
    let j = i;
    while (compact.length < 34 && toks[j + 1] && /^[A-Z0-9]{1,4}$/.test(toks[j + 1]!.text) && toks[j + 1]!.space) {
      compact += toks[j + 1]!.text;
      j++;
    }
    // Take the longest prefix (whole groups) that checks.
    for (let end = j; end >= i; end--) {
      const c = toks.slice(i, end + 1).map((x) => x.text).join('');
      if (ibanValid(c)) {
        out.push({ start: t.start, end: toks[end]!.end, kind: 'ACCOUNTNUMBER', value: c, priority: PRIORITY.contextNumber });
        i = end;
        break;
      }
    }
  }
  return out;
}
