// The words of an answered call's greeting as evidence of who answered (answer-detect.ts): phrases a voicemail or
// answering machine says ("leave a message", "after the tone", "is not available", "can't take your call"), phrases of
// an IVR menu ("press 1", "for sales", "thank you for calling") or of call screening ("please state your name",
// "why you're calling"). Strong phrases decide on their own; weak ones ("you've reached", "welcome to") only say which
// machine a greeting already too long for a person is, or keep a short greeting from counting as a person's.
// Matched on Whisper's text, lower-cased, digits either as figures or as words.
import { spokenText } from '../turn/speech-tracker.js';

export type MachineKind = 'voicemail' | 'ivr';

interface Phrase {
  re: RegExp;
  kind: MachineKind;
  strong: boolean;
  label: string;
  /** Score of a match: 2 strong, 1 weak; screening 3 (its prompts borrow voicemail's "at the tone"). */
  weight: number;
}

const DIGIT = String.raw`(?:\d+|one|two|three|four|five|six|seven|eight|nine|zero|oh|star|pound|the pound key|the star key)`;

const p = (kind: MachineKind, strong: boolean, label: string, re: RegExp, weight = strong ? 2 : 1): Phrase => ({ re, kind, strong, label, weight });

/** In the order a reason names them (the first that matches is the one given). */
const PHRASES: Phrase[] = [
  // Call screening and privacy managers (an IVR-like machine that wants the caller to speak).
  p('ivr', true, 'screening', /\bscreen(ing|ed)? (service|calls?)\b|\bcall screening\b/, 3),
  p('ivr', true, 'state your name', /\b(state|say|record|tell (me|us)) your name\b/, 3),
  p('ivr', true, "why you're calling", /\b(why|what) (you're|you are) calling\b|\breason for (your|the|this) call\b|\bsay who('s| is) calling\b/, 3),
  p('ivr', true, 'does not accept unidentified calls', /\b(does not|doesn't|do not|don't) accept (unidentified|anonymous|blocked|private|unknown)\b/, 3),
  // Voicemail and answering machines.
  p('voicemail', true, 'leave a message', /\bleave (a|your|me a|us a|him a|her a|them a|a brief|a short|your name and)\b[^.]{0,20}\b(message|number)\b|\bleave a message\b/),
  p('voicemail', true, 'after the tone', /\b(after|at) the (tone|beep|sound of the tone|signal)\b/),
  p('voicemail', true, 'record your message', /\brecord (your|a) message\b/),
  p('voicemail', true, 'voicemail', /\bvoicemail\b|\bvoice mail\b|\bmail ?box\b|\banswering machine\b/),
  p('voicemail', true, 'is not available', /\b(is|am|are|'s|'m|'re) (not|currently not|not currently) available\b|\bunavailable\b|\bnot available (right now|at the moment|to take)\b/),
  p('voicemail', true, "can't take your call", /\b(can't|cannot|can not|unable to|couldn't|not able to) (take|answer|get to|come to) (your|the|my|this) (call|phone)\b/),
  p('voicemail', true, 'not here right now', /\b(not|isn't|aren't) (here|in|home|around|at (my|his|her|the) desk) (right now|at the moment|now)\b|\baway from (my|the|our) (desk|phone)\b/),
  p('voicemail', true, 'get back to you', /\b(get|call|get right) back to you\b|\breturn your call\b|\bcall you back\b/),
  p('voicemail', true, 'nobody is available', /\b(nobody|no one|no-one) (is )?(available|here|home)\b/),
  p('voicemail', true, 'missed your call', /\bmissed your call\b/),
  // IVR menus and queues.
  p('ivr', true, 'press 1', new RegExp(String.raw`\b(press|dial|enter|oprima|marque) ${DIGIT}\b`)),
  p('ivr', true, 'for sales', /\bfor (sales|support|billing|customer (service|support)|technical support|tech support|accounts?|the operator|an operator|english|spanish|appointments|our hours|hours|directions|a company directory|the directory|pharmacy)\b/),
  p('ivr', true, 'thank you for calling', /\bthank(s| you) for calling\b/),
  p('ivr', true, 'your call is important', /\byour call is (very )?important\b/),
  p('ivr', true, 'menu options', /\bmenu options\b|\bmain menu\b|\blisten carefully\b|\boptions have changed\b/),
  p('ivr', true, 'please hold', /\bplease (stay (on|in) the line|hold|remain (on|in) the line)\b|\bhold while (i|we)\b/),
  p('ivr', true, 'next available representative', /\bnext available (representative|agent|associate|operator)\b|\ball (of )?our (representatives|agents|associates)\b/),
  p('ivr', true, 'extension', /\b(party's|the) extension\b|\bextension (number )?(at any time|now)\b|\bdirectory\b/),
  p('ivr', true, 'para espanol', /\bespa[nñ]ol\b/),
  p('ivr', true, 'may be recorded', /\b(call|calls) (may|will) be (monitored|recorded)\b/),
  // Weak: a machine is likely, which one is not settled.
  p('voicemail', false, "you've reached", /\byou('ve| have) reached\b/),
  p('voicemail', false, 'on the phone', /\b(on the (other )?(phone|line)|on another call)\b/),
  p('voicemail', false, 'message', /\bmessages?\b/),
  p('voicemail', false, 'tone', /\b(tone|beep)\b/),
  p('ivr', false, 'welcome to', /\bwelcome to\b/),
  p('ivr', false, 'if this is an emergency', /\bemergency\b/),
  p('ivr', false, 'office hours', /\b(business|office) hours\b|\bour hours\b/),
  p('ivr', false, 'if you know', /\bif you (know|would like|are calling)\b/),
  p('ivr', false, 'operator', /\b(operator|representative)\b/),
];

export interface WordEvidence {
  /** The words, normalised (lower case, no punctuation but apostrophes, "voice mail" kept apart). */
  text: string;
  /** Any words at all (Whisper's non-speech annotations removed). */
  spoken: boolean;
  /** Score per machine kind: 2 per strong phrase (3 for screening), 1 per weak; "press N" counts each time. */
  voicemail: number;
  ivr: number;
  /** The strong phrases' share of those scores (they are compared first). */
  strongScore: Record<MachineKind, number>;
  /** A strong phrase matched: the words decide on their own. */
  strong: boolean;
  /** Labels of the phrases that matched, in the table's order (screening, voicemail, IVR, then weak ones). */
  phrases: string[];
  /** The kind of each of `phrases`. */
  kinds: MachineKind[];
}

export function normalizeWords(text: string): string {
  return spokenText(text)
    .toLowerCase()
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[^a-z0-9'ñ\s-]/g, ' ')
    .replace(/-/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** What the words say about who answered. */
export function wordEvidence(raw: string): WordEvidence {
  const text = normalizeWords(raw);
  const out: WordEvidence = { text, spoken: /[a-z0-9]/.test(text), voicemail: 0, ivr: 0, strongScore: { voicemail: 0, ivr: 0 }, strong: false, phrases: [], kinds: [] };
  for (const ph of PHRASES) {
    const hits = ph.label === 'press 1' ? (text.match(new RegExp(ph.re.source, 'g')) ?? []).length : ph.re.test(text) ? 1 : 0;
    if (!hits) continue;
    out[ph.kind] += hits * ph.weight;
    if (ph.strong) out.strongScore[ph.kind] += hits * ph.weight;
    out.strong ||= ph.strong;
    out.phrases.push(ph.label);
    out.kinds.push(ph.kind);
  }
  return out;
}

/**
 * The machine the evidence points to: the higher score of the strong phrases, else of all; a tie (or none) is a
 * voicemail, the commoner answer on outbound calls.
 */
export function machineKind(e: WordEvidence): MachineKind {
  const { voicemail, ivr } = e.strongScore;
  if (voicemail !== ivr) return ivr > voicemail ? 'ivr' : 'voicemail';
  return e.ivr > e.voicemail ? 'ivr' : 'voicemail';
}

/** Whether the evidence names one machine over the other (not a tie). */
export function decisive(e: WordEvidence): boolean {
  return e.strongScore.voicemail !== e.strongScore.ivr || e.voicemail !== e.ivr;
}

/** The first phrase that points to `kind` (the reason a verdict gives). */
export function phraseFor(e: WordEvidence, kind: MachineKind): string {
  return e.phrases[e.kinds.indexOf(kind)] ?? e.phrases[0] ?? '';
}

/** Any evidence of a machine, weak or strong. */
export function machineLike(e: WordEvidence): boolean {
  return e.voicemail + e.ivr > 0;
}
