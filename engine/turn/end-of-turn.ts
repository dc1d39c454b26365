// The end-of-turn decision: how likely the caller's turn is complete at a pause (a logistic model over the words'
// lexical evidence and the prosody before the pause), and how much silence to wait for before committing it
// (adaptive: minDelayMs when confidently complete, up to the maximum when confidently not).
//
// The weights are fitted by bench/fit-turns.ts on speech synthesized here only (engine/turn/eot-weights.ts, generated);
// human recordings are for evaluation. Pure: no models, no timers.
import { FITTED } from './eot-weights.js';
import { lexicalFeatures, type LexicalFeatures } from './lexical.js';
import { NEUTRAL_PROSODY, type ProsodyFeatures } from './prosody.js';

/** endpointingConfig defaults: the shortest silence before a commit, and the longest wait for an unfinished turn. */
export const DEFAULT_MIN_DELAY_MS = 200;
export const DEFAULT_MAX_DELAY_MS = 3000;
/** voiceDetectionConfig.triggerTimeInSecs default: speech over the agent for this long holds its audio (two VAD windows). */
export const DEFAULT_TRIGGER_S = 0.064;

/** The model's inputs, in order (the weights file names them). */
export const FEATURE_NAMES = [
  'openEnding', 'weakEnding', 'trailingMark', 'questionMark', 'numberOpen', 'numberDone', 'shortAnswer', 'logWords',
  'f0End', 'f0Slope', 'energyEnd', 'energySlope', 'finalLengthening', 'voicedEnd', 'lowVoiced', 'f0EndInRange', 'f0Floor',
] as const;

export interface EotWeights {
  features: readonly string[];
  /** Feature mean and scale: (x - mean) / scale before the weight (the fit's standardisation). */
  mean: number[];
  scale: number[];
  weights: number[];
  bias: number;
  /** Default completeness threshold (the eagerness): at or above it the turn commits after minDelayMs. */
  threshold: number;
  /** How the weights were made (script, data, date). */
  fittedOn?: string;
}

export const DEFAULT_WEIGHTS: EotWeights = FITTED;

/** The inputs of one decision: what the caller said so far, what the agent last said, the prosody at the pause. */
export interface EotInput {
  text: string;
  agentText?: string;
  prosody?: ProsodyFeatures | null;
}

/** The feature vector of an input (in FEATURE_NAMES order). */
export function featureVector(input: EotInput, lex: LexicalFeatures = lexicalFeatures(input.text, input.agentText)): number[] {
  const p = input.prosody ?? NEUTRAL_PROSODY;
  const low = p.voicedFrames < 6 ? 1 : 0;
  // Prosody is clipped to the range where it is evidence (a pitch tracker's octave error is not a deeper fall).
  const c = (v: number, lim: number) => (low ? 0 : Math.max(-lim, Math.min(lim, v)));
  return [
    lex.openEnding, lex.weakEnding, lex.trailingMark, lex.questionMark, lex.numberOpen, lex.numberDone, lex.shortAnswer, lex.logWords,
    c(p.f0End, 4), c(p.f0Slope, 30), c(p.energyEnd, 15), c(p.energySlope, 100), c(p.finalLengthening, 2), c(p.voicedEnd, 1), low,
    // The fall measured in the voice's own range (synthesizers and people differ threefold in how far they move).
    c(p.f0End / Math.max(2, p.f0Range), 1.5), c(p.f0Floor, 6),
  ];
}

/** Probability that the turn is complete, from a feature vector. */
export function completenessOf(x: number[], w: EotWeights = DEFAULT_WEIGHTS): number {
  // Without usable prosody (too little voiced speech) its terms count as average: the words decide.
  const noProsody = x[FEATURE_NAMES.indexOf('lowVoiced')] === 1;
  let z = w.bias;
  for (let i = 0; i < x.length; i++) {
    if (noProsody && i >= FIRST_PROSODY) continue;
    z += ((w.weights[i] ?? 0) * ((x[i] as number) - (w.mean[i] ?? 0))) / (w.scale[i] || 1);
  }
  return 1 / (1 + Math.exp(-z));
}

const FIRST_PROSODY = FEATURE_NAMES.indexOf('f0End');

/**
 * Probability that the turn is complete. Words that cannot end a turn (an open ending, a number still being
 * dictated, Whisper's trailing comma or "...") cap it at half the threshold whatever the prosody says: a falling
 * pitch on "my name is" is not a finished turn.
 */
export function completeness(input: EotInput, w: EotWeights = DEFAULT_WEIGHTS): number {
  const lex = lexicalFeatures(input.text, input.agentText);
  const p = completenessOf(featureVector(input, lex), w);
  const open = lex.openEnding === 1 || lex.numberOpen >= 1 || lex.trailingMark === 1;
  return open ? Math.min(p, w.threshold / 2) : p;
}

export interface EotPolicy {
  /** Silence before any commit, ms (endpointingConfig.minDelayMs). */
  minDelayMs: number;
  /** Longest wait, ms, for a turn that is confidently incomplete (smartTurnConfig.waitTimeInSecs, else maxDelayMs). */
  maxDelayMs: number;
  /** Completeness at or above which the turn commits after minDelayMs; below it the wait grows to maxDelayMs. */
  threshold: number;
}

/** Silence needed before committing a turn of completeness `p`. */
export function silenceNeededMs(p: number, policy: EotPolicy): number {
  const { minDelayMs, maxDelayMs, threshold } = policy;
  if (p >= threshold || maxDelayMs <= minDelayMs) return minDelayMs;
  return minDelayMs + (maxDelayMs - minDelayMs) * Math.min(1, (threshold - p) / Math.max(1e-6, threshold));
}

/** Agent config in: smartTurnConfig and endpointingConfig as resolved for a session. */
export interface TurnConfig {
  smartTurn: boolean;
  /** Longest wait for an incomplete turn, ms (0: maxDelayMs). */
  smartWaitMs: number;
  minDelayMs: number;
  maxDelayMs: number;
}

/**
 * The decision of one pause: with smart turn on, the adaptive wait; off, silence alone decides (minDelayMs: what a
 * VAD-only endpointer does).
 */
export function decide(input: EotInput, cfg: TurnConfig, w: EotWeights = DEFAULT_WEIGHTS): { p: number; waitMs: number } {
  if (!cfg.smartTurn) return { p: NaN, waitMs: cfg.minDelayMs };
  const p = completeness(input, w);
  const max = cfg.smartWaitMs > 0 ? Math.min(cfg.maxDelayMs, Math.max(cfg.minDelayMs, cfg.smartWaitMs)) : cfg.maxDelayMs;
  return { p, waitMs: silenceNeededMs(p, { minDelayMs: cfg.minDelayMs, maxDelayMs: max, threshold: w.threshold }) };
}
