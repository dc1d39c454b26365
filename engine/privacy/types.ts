// Shared shapes of the redactor: the kinds it finds, the token each kind gets, and what redact() returns.

/**
 * Kinds and their token stems. The wire (../shared/wire/inference-api.md, `redact_pii`/`redact_pci`) names
 * FIRSTNAME, LASTNAME, PHONENUMBER, ADDRESS and ACCOUNTNUMBER; the others follow the same spelling (one upper-case
 * word, no separators).
 */
export const PCI_KINDS = ['CREDITCARDNUMBER', 'EXPIRYDATE', 'CVV', 'ACCOUNTNUMBER', 'ROUTINGNUMBER', 'PIN'] as const;
export const PII_KINDS = ['FIRSTNAME', 'LASTNAME', 'PHONENUMBER', 'EMAIL', 'SSN', 'ADDRESS', 'DATEOFBIRTH'] as const;

export type PciKind = (typeof PCI_KINDS)[number];
export type PiiKind = (typeof PII_KINDS)[number];
export type RedactionKind = PciKind | PiiKind;

const PCI_SET: ReadonlySet<string> = new Set(PCI_KINDS);
/** True for payment-card and bank data (what `redact_pci` covers; a turn carrying one is silenced whole in recordings). */
export function isPciKind(kind: RedactionKind): kind is PciKind {
  return PCI_SET.has(kind);
}

export interface RedactorOptions {
  /** Names, phone numbers, emails, social security numbers, street addresses, dates of birth. */
  pii: boolean;
  /** Card numbers, expiry dates, security codes, PINs, bank account and routing numbers. */
  pci: boolean;
}

/** One redacted stretch. `start`/`end` are UTF-16 offsets into the text that was passed in (not the output). */
export interface RedactionSpan {
  start: number;
  end: number;
  kind: RedactionKind;
  /** The placeholder written in its place, e.g. `[FIRSTNAME_1]`. */
  token: string;
}

export interface RedactionResult {
  /** The input with every span replaced by its token. */
  text: string;
  /** In text order, not overlapping. */
  spans: RedactionSpan[];
}

/** A turn redacted again because a later turn completed a number it started (see Redactor.redactTurn). */
export interface TurnRevision extends RedactionResult {
  /** The index redactTurn returned for that turn. */
  turn: number;
}

export interface TurnRedaction extends RedactionResult {
  /** This turn's index within the Redactor (0, 1, 2… across all roles). */
  turn: number;
  /**
   * Earlier turns whose stored redaction must be replaced (oldest first): a card number dictated across turns is
   * only known to be one when its last digits arrive. Usually empty.
   */
  revisions: TurnRevision[];
  /** The latest of `revisions` (the previous caller turn that must be re-stored), when there is one. */
  previousTurnRedaction?: TurnRevision;
}

/** A detector's proposal, before overlaps are resolved and tokens assigned. */
export interface Candidate {
  start: number;
  end: number;
  kind: RedactionKind;
  /** Normalised value: the same value gets the same token within one Redactor. */
  value: string;
  /** Higher wins an overlap; ties go to the longer span. */
  priority: number;
}
