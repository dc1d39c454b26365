// An agent's `redactionConfig` in a call: what the caller and the agent said is redacted (engine/privacy) before it is
// kept or leaves the server: the session's transcript (so the call record, its turn rows, webhooks and analytics), the
// transcript events to the app, and the conversation history the language model gets. A card number dictated across
// turns revises the earlier turn once its last digits arrive. The recording silences every caller turn that carried
// redacted data, from the start of its speech to its commit.
import { Redactor, type RedactorOptions } from '../engine/privacy/redact.js';
import type { TranscriptEntry } from '../control-plane/calls/calls.js';

/** `redactionConfig` as a call applies it: `{isEnabled: true}` redacts both kinds; our fields `pii: false` / `pci: false` leave one out. */
export function redactionOptions(config: unknown): RedactorOptions | null {
  if (!config || typeof config !== 'object') return null;
  const c = config as { isEnabled?: unknown; pii?: unknown; pci?: unknown };
  if (c.isEnabled !== true) return null;
  const options = { pii: c.pii !== false, pci: c.pci !== false };
  return options.pii || options.pci ? options : null;
}

/** What the language model is told when redaction is on (it sees placeholders in place of what the caller said). */
export const REDACTION_NOTE =
  'Personal and payment details the caller says (names, phone numbers, card numbers and the like) reach you as placeholders such as [FIRSTNAME_1] or [CREDITCARDNUMBER_1]. Never read a placeholder aloud; refer to the detail in words ("the card you gave me").';

export interface CallPrivacyHooks {
  /** The session's transcript (entries are pushed right after user()/agent() return). */
  transcript(): TranscriptEntry[];
  /** An earlier entry was rewritten (a revision): the record must write it again. */
  entryChanged(index: number): void;
}

export class CallPrivacy {
  private readonly redactor: Redactor;
  /** Redactor turn index -> transcript index. */
  private readonly entryOf = new Map<number, number>();
  /** The caller turn being heard carried redacted data (its audio is silenced in the recording). */
  private userTurnRedacted = false;

  constructor(options: RedactorOptions, private readonly hooks: CallPrivacyHooks) {
    this.redactor = new Redactor(options);
  }

  /** A caller turn, about to be stored and answered: its redacted text. */
  user(text: string): string {
    const r = this.redactor.redactTurn(text, { role: 'user' });
    this.entryOf.set(r.turn, this.hooks.transcript().length);
    this.userTurnRedacted = r.spans.length > 0;
    for (const rev of r.revisions) {
      const index = this.entryOf.get(rev.turn);
      const entry = index === undefined ? undefined : this.hooks.transcript()[index];
      if (index === undefined || !entry) continue;
      entry.content = rev.text;
      this.hooks.entryChanged(index);
      this.userTurnRedacted = true;
    }
    return r.text;
  }

  /** An agent turn, about to be stored (its question also tells the redactor what the next answer is). */
  agent(text: string): string {
    const r = this.redactor.redactTurn(text, { role: 'assistant' });
    this.entryOf.set(r.turn, this.hooks.transcript().length);
    return r.text;
  }

  /** Whether the caller turn just committed carried redacted data (or revised an earlier one); reading clears it. */
  takeUserTurnRedacted(): boolean {
    const was = this.userTurnRedacted;
    this.userTurnRedacted = false;
    return was;
  }

  /** Any other text of the call (a log line, a webhook field), with the call's tokens. */
  redact(text: string): string {
    return this.redactor.redact(text).text;
  }
}
