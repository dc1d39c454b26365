// First and last names: a names list plus context ("my name is Ada Lovelace", "this is Ada", "I'm Ada",
// "Hi Ada,", "Mr. Lovelace", "Ada here"), full names standing mid-sentence ("I spoke to Ada Lovelace"), and names
// already seen in this call. Ordinary words that are names ("Will you…", "May I…", "Bill me later") need strong
// context or a sentence shape that only a name has.
//
// Names lists: see names-list.ts (@stdlib first names, public domain; @faker-js/faker person names, MIT).
import { COMMON_WORD_NAMES } from './common-word-names.js';
import { phraseMatcher } from './context.js';
import { PRIORITY, type Doc } from './doc.js';
import { firstNames, lastNames } from './names-list.js';
import { FILLERS, TEENS, TENS, UNITS } from './numbers.js';
import { atSentenceStart, isCapitalized, type Tok } from './tokens.js';
import type { Candidate } from './types.js';


/** Words that are never a name here, even capitalised: function words, fillers, replies, verbs around names. */
const STOP = new Set(
  (
    'i me my mine you your yours he him his she her hers it its we us our they them their this that these those the a an and or but ' +
    'so if then than to of in on at by for from with about as into onto over under up down out off not no nor yes yeah yep nope ok okay ' +
    'sure hi hello hey thanks thank please sorry well just also very really here there where when what who why how which calling ' +
    'speaking trying looking going doing fine good great glad happy ready done back afraid still calling interested wondering ' +
    'is am are was were be been being have has had do does did would shall should can could might must let lets ' +
    'oh uh um hmm er ah mr mrs ms dr miss mister sir madam maam all any some every each both either neither one none ' +
    'today tomorrow yesterday now later soon again new old right left gonna wanna gotta actually basically calling regarding'
  ).split(' '),
);
/** Capitalised words that follow a first name but are not a surname ("Virginia Beach", "Grace Street", "May Day"). */
const NOT_SURNAME = new Set(
  (
    'street st avenue ave road rd boulevard blvd lane ln drive dr court ct way place pl terrace circle parkway highway square ' +
    'beach city county park river lake mountain mountains valley island islands bay hills hill springs falls heights station ' +
    'airport university college school hospital center centre church bank inc llc ltd corp company group airlines hotel mall ' +
    'monday tuesday wednesday thursday friday saturday sunday january february march april may june july august september ' +
    'october november december day night morning evening christmas easter i ok okay thanks ' +
    'alabama alaska arizona arkansas california colorado connecticut delaware florida georgia hawaii idaho illinois indiana iowa ' +
    'kansas kentucky louisiana maine maryland massachusetts michigan minnesota mississippi missouri montana nebraska nevada ' +
    'hampshire jersey mexico york carolina dakota ohio oklahoma oregon pennsylvania rhode tennessee texas utah vermont virginia ' +
    'washington wisconsin wyoming america canada england london paris'
  ).split(' '),
);
/** "my name is spelled …", "my name is listed under …": not names. */
const NOT_AFTER_NAME_IS = new Set('spelled spelt listed written under wrong correct right missing different misspelled same there'.split(' '));
/** "company name is Acme": a name, but not a person's. */
const NOT_PERSON = new Set('company business account user file product street store brand pet dog cat app network wifi event project team band book song movie ship domain'.split(' '));
const MONTHS_DAYS = new Set('january february march april may june july august september october november december monday tuesday wednesday thursday friday saturday sunday'.split(' '));

type Cue = 'strong' | 'callme' | 'last' | 'medium' | 'title' | 'greet';
const NAME_CUES = phraseMatcher<Cue>({
  strong: ['my name is', "my name's", 'name is', "name's", 'first name is', "first name's", 'my first name is', 'the name is', 'full name is', 'names are', 'name was', 'his name is', 'her name is'],
  callme: ['call me', 'you can call me', 'goes by', 'go by'],
  last: ['last name is', "last name's", 'surname is', 'family name is', 'last name', 'surname'],
  medium: [
    'this is', "i'm", 'i am', 'speaking with', 'speaking to', 'talking to', 'talk to', 'speak to', 'speak with', 'ask for', 'asking for',
    'named', 'called', 'spoke to', 'spoke with', 'talked to', 'talked with', 'with', 'from', 'and',
    ...['wife', 'husband', 'son', 'daughter', 'mother', 'father', 'mom', 'dad', 'friend', 'colleague', 'manager', 'boss', 'partner'].flatMap((w) => [`my ${w}`, `my ${w} is`, `my ${w}'s`]),
  ],
  title: ['mr', 'mrs', 'ms', 'miss', 'dr', 'mister', 'doctor', 'professor', 'prof'],
  greet: ['hi', 'hello', 'hey', 'thanks', 'thank you', 'bye', 'goodbye', 'dear', 'morning', 'afternoon', 'evening', 'welcome'],
});
/** Medium cues that are everyday words: a name after them must be a full name or a list name standing alone. */
const WEAK_MEDIUM = new Set(['with', 'from', 'and', 'called', 'named']);
const AFTER_NAME = new Set(['from', 'here', 'speaking', 'calling', 'with', 'at', 'and']);

const isNumberWord = (w: string) => w in UNITS || w in TEENS || w in TENS || w === 'hundred' || w === 'thousand';

function nameWord(t: Tok | undefined): t is Tok {
  return !!t && t.type === 'word' && t.text.length >= 2 && !STOP.has(t.lower) && !FILLERS.has(t.lower) && !isNumberWord(t.lower);
}

/** The token after i when it directly follows (a space, an optional glued "." after a title). */
function following(toks: readonly Tok[], i: number, allowDot = false): number {
  let j = i + 1;
  if (allowDot && toks[j]?.text === '.' && !toks[j]!.space) j++;
  return j;
}

/** Nothing, punctuation or a word that typically follows a name ("from", "here", "speaking") comes after token i. */
function boundaryAfter(toks: readonly Tok[], i: number, loose: boolean): boolean {
  const t = toks[i + 1];
  if (!t) return true;
  if (t.type === 'punct') return '.,?!;:…)"”'.includes(t.text);
  return loose && AFTER_NAME.has(t.lower);
}

/**
 * A surname candidate at j: capitalised (or, after a strong cue, any non-common word), not a stop word. With
 * `listed` it must be in the last-names list (after a first name that is also a word: "Amber Ale" is not a name).
 */
function surnameAt(toks: readonly Tok[], j: number, strong: boolean, listed = false): boolean {
  const t = toks[j];
  if (!nameWord(t) || !t.space || NOT_SURNAME.has(t.lower)) return false;
  if (listed && !lastNames().has(t.lower)) return false;
  if (isCapitalized(t)) return true;
  return strong && (lastNames().has(t.lower) || !COMMON_WORD_NAMES.has(t.lower)) && boundaryAfter(toks, j, false);
}

export interface NameHit {
  t: number;
  /** Found only because the name was seen earlier in the call. */
  known?: boolean;
  /** Last token of the name (a hyphenated surname spans three tokens). */
  tEnd: number;
  kind: 'FIRSTNAME' | 'LASTNAME';
}

/** After an accepted first name at i: up to two more name words (a middle name, then the surname). */
function withSurname(toks: readonly Tok[], i: number, strong: boolean, hits: NameHit[], firstKind: NameHit['kind'] = 'FIRSTNAME'): void {
  const names = firstNames();
  const parts = [i];
  let j = following(toks, i);
  while (parts.length < 3 && surnameAt(toks, j, strong)) {
    parts.push(j);
    j = following(toks, j);
  }
  parts.forEach((t, k) => {
    let tEnd = t;
    // "Smith-Jones"
    const after = toks[t + 2];
    if (toks[t + 1]?.text === '-' && !toks[t + 1]!.space && after && isCapitalized(after) && !after.space) tEnd = t + 2;
    const last = k === parts.length - 1 && k > 0;
    const kind: NameHit['kind'] = k === 0 ? firstKind : last || !names.has(toks[t]!.lower) ? 'LASTNAME' : 'FIRSTNAME';
    hits.push({ t, tEnd, kind });
  });
}

/** Whether token i (right after a cue of this type) is a name. */
function acceptAfterCue(toks: readonly Tok[], i: number, cue: Cue, cueWord: string): boolean {
  const t = toks[i];
  if (!nameWord(t)) return false;
  const names = firstNames();
  const inList = names.has(t.lower);
  const common = COMMON_WORD_NAMES.has(t.lower) || MONTHS_DAYS.has(t.lower);
  const cap = isCapitalized(t);
  // After a first name that is also a word, a capitalised surname counts only after a real cue ("this is Grace
  // Hopper"); after a greeting or alone it must be a listed surname ("Hello, Sunshine Cleaning").
  const surnameNext = surnameAt(toks, following(toks, i), false, common && (cue === 'greet' || WEAK_MEDIUM.has(cueWord)));
  switch (cue) {
    case 'strong':
      if ((inList && !common) || cap) return true;
      // "my name is wei kim": an unlisted lower-case word, when a name-like word or the end follows.
      return !common && !NOT_AFTER_NAME_IS.has(t.lower) && (boundaryAfter(toks, i, true) || surnameAt(toks, following(toks, i), true));
    case 'callme':
      return cap && (inList || !common);
    case 'medium':
      if (!cap || !inList) return false;
      if (WEAK_MEDIUM.has(cueWord)) return surnameNext || (!common && boundaryAfter(toks, i, false));
      return !common || surnameNext || boundaryAfter(toks, i, true);
    case 'greet':
      return cap && inList && (surnameNext || (boundaryAfter(toks, i, false) && (!common || toks[i + 1]?.text !== '?')));
    default:
      return false;
  }
}

/** Name candidates of one text. `known` maps names seen earlier in this call to their kind. */
export function detectNames(doc: Doc, knownBefore: ReadonlyMap<string, NameHit['kind']>): Candidate[] {
  const { toks } = doc;
  const known = new Map(knownBefore);
  const names = firstNames();
  const hits: NameHit[] = [];
  const cues = NAME_CUES(toks);
  const taken = new Set<number>();
  const add = (before: number) => {
    for (const h of hits.slice(before)) for (let k = h.t; k <= h.tEnd; k++) taken.add(k);
  };
  for (let c = 0; c < toks.length; c++) {
    const hit = cues[c];
    if (!hit) continue;
    const cueWord = toks[c]!.lower;
    const before = hits.length;
    let i = c + 1;
    if (hit.kind === 'title') {
      i = following(toks, c, true);
      const t = toks[i];
      // "Mr. Lovelace" or "Dr. Ada Lovelace".
      if (!nameWord(t) || !isCapitalized(t) || taken.has(i)) continue;
      if (names.has(t.lower) && surnameAt(toks, following(toks, i), false)) withSurname(toks, i, false, hits);
      else hits.push({ t: i, tEnd: i, kind: 'LASTNAME' });
      add(before);
      continue;
    }
    if (hit.kind === 'greet' && toks[i]?.text === ',') i++;
    if (taken.has(i)) continue;
    if (hit.kind === 'last') {
      const t = toks[i];
      // "last name is lovelace" may be lower case; after a bare "last name" only a capitalised word counts.
      const lax = cueWord === 'is' || cueWord.endsWith("'s");
      if (nameWord(t) && (isCapitalized(t) || (lax && !COMMON_WORD_NAMES.has(t.lower)))) hits.push({ t: i, tEnd: i, kind: 'LASTNAME' });
      add(before);
      continue;
    }
    if (hit.kind === 'strong' && NOT_PERSON.has(toks[hit.first - 1]?.lower ?? '')) continue;
    if (!acceptAfterCue(toks, i, hit.kind, cueWord)) continue;
    withSurname(toks, i, hit.kind === 'strong', hits);
    add(before);
  }
  // The agent asked for a name: the first name-like words of the reply.
  const expectLast = doc.expect[0] === 'lastname';
  if (doc.expect[0] === 'name' || expectLast) {
    for (let i = 0, words = 0; i < toks.length && words < 6; i++) {
      const t = toks[i]!;
      if (t.type !== 'word') continue;
      words++;
      if (taken.has(i)) break;
      if (!nameWord(t) || t.lower === 'name' || t.lower === "it's" || t.lower === "that's") continue;
      const cap = isCapitalized(t);
      const listed = names.has(t.lower) && (cap || !COMMON_WORD_NAMES.has(t.lower));
      const shape = cap && (!atSentenceStart(toks, i) || surnameAt(toks, following(toks, i), false) || (expectLast && boundaryAfter(toks, i, false)));
      if (!listed && !shape) continue;
      const before = hits.length;
      withSurname(toks, i, true, hits, expectLast ? 'LASTNAME' : 'FIRSTNAME');
      add(before);
      break;
    }
  }
  // "Ada here." / "Anna speaking."
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    const n = toks[i + 1];
    if (taken.has(i) || !n || (n.lower !== 'speaking' && n.lower !== 'here') || !isCapitalized(t) || !names.has(t.lower)) continue;
    if (!atSentenceStart(toks, i) || !boundaryAfter(toks, i + 1, false)) continue;
    hits.push({ t: i, tEnd: i, kind: 'FIRSTNAME' });
    taken.add(i);
  }
  // A full name standing in a sentence: "I spoke to Ada Lovelace yesterday".
  for (let i = 0; i < toks.length - 1; i++) {
    const t = toks[i]!;
    if (taken.has(i) || !isCapitalized(t) || !names.has(t.lower) || STOP.has(t.lower)) continue;
    const start = atSentenceStart(toks, i);
    if (start && COMMON_WORD_NAMES.has(t.lower)) continue;
    if (MONTHS_DAYS.has(t.lower)) continue;
    // Inside a longer capitalised phrase ("Bank Of Virginia Beach") it is not a person's name.
    const prev = toks[i - 1];
    if (!start && prev && isCapitalized(prev) && !taken.has(i - 1)) continue;
    const j = following(toks, i);
    if (!surnameAt(toks, j, false, COMMON_WORD_NAMES.has(t.lower)) || taken.has(j)) continue;
    const before = hits.length;
    withSurname(toks, i, false, hits);
    add(before);
  }
  // Names learned in this call, wherever they appear again.
  for (const h of hits) known.set(toks[h.t]!.lower, h.kind);
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if (taken.has(i) || t.type !== 'word') continue;
    const kind = known.get(t.lower);
    if (!kind) continue;
    // Capitalised, or a lower-case first name that is no ordinary word ("ada", not "grace" or the surname "hopper").
    const common = COMMON_WORD_NAMES.has(t.lower);
    const cap = isCapitalized(t);
    if (common ? !cap || (atSentenceStart(toks, i) && !boundaryAfter(toks, i, true)) : !cap && (t.text !== t.lower || kind !== 'FIRSTNAME' || !names.has(t.lower))) continue;
    hits.push({ t: i, tEnd: i, kind, known: true });
  }
  return hits.map((h) => ({
    start: toks[h.t]!.start,
    end: toks[h.tEnd]!.end,
    kind: h.kind,
    value: doc.text.slice(toks[h.t]!.start, toks[h.tEnd]!.end).toLowerCase(),
    priority: h.known ? PRIORITY.knownName : PRIORITY.name,
  }));
}
