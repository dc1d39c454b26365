// Abbreviations whose period does not end a sentence; shared by the synthesis phrase chunker and the live
// recogniser's finished-sentence check.

/** A period after these is an abbreviation, not a sentence end ("Dr. Patel", "Apt. 4", "e.g. this"). */
const ABBREVIATION = /(?:^|[\s(])(?:Mr|Mrs|Ms|Dr|Prof|St|Ste|Apt|vs|ext|approx|e\.g|i\.e|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.$/i;
/** "No." is an abbreviation only before a number ("No. 5"). */
const NUMBER_ABBREVIATION = /(?:^|[\s(])No\.$/i;

/** True when `text` ends with the period of an abbreviation; `next` is the text after it ("No." counts only before a digit). */
export function endsWithAbbreviation(text: string, next = ''): boolean {
  return ABBREVIATION.test(text) || (NUMBER_ABBREVIATION.test(text) && /^\d/.test(next));
}
