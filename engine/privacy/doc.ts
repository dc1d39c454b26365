// One analysed text: tokens, digit runs and context cues, shared by every detector.
import { findCues, type CueHit, type CueKind } from './context.js';
import { buildRuns, type Run } from './numbers.js';
import { tokenize, type Tok } from './tokens.js';

export interface Doc {
  text: string;
  toks: Tok[];
  runs: Run[];
  cues: (CueHit | undefined)[];
  /** What the agent's last question asked for (applies near the start of this text). */
  expect: CueKind[];
  /** A card was talked about in the last few turns (makes "it expires …" a card expiry). */
  cardContext?: boolean;
}

export function analyse(text: string, expect: CueKind[] = []): Doc {
  const toks = tokenize(text);
  return { text, toks, runs: buildRuns(text, toks), cues: findCues(toks), expect };
}

/** Priorities for overlap resolution: a higher one wins; ties go to the longer span. */
export const PRIORITY = {
  contextNumber: 90,
  date: 85,
  email: 80,
  card: 70,
  ssn: 60,
  phone: 50,
  address: 45,
  name: 30,
  knownName: 20,
} as const;
