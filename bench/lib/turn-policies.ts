// End-of-turn policies simulated on replayed pauses (bench/lib/turn-replay.ts), on the audio clock exactly as the
// session decides: at each pause the speculation starts one window in, takes the calibrated recognition time, and the
// turn commits at the first window where the silence has lasted the policy's wait and the text is known, unless
// speech resumes first. The first commit ends the item: before the true end of speech it is a false cut-off.
import { DEFAULT_WEIGHTS, decide, type EotWeights } from '../../engine/turn/end-of-turn.js';
import { WIN_MS, type ItemReplay, type PauseRecord } from './turn-replay.js';

export interface Policy {
  name: string;
  /** The setting swept for the curve (threshold, or a delay), for the table. */
  setting: number;
  /** Silence to wait at this pause, ms; Infinity never commits (an empty text: the turn is discarded). */
  waitMs(rec: PauseRecord, agentText?: string): number;
}

export interface Outcome {
  /** `cutoff`: committed before the true end of speech; `end`: committed after it; `none`: never committed. */
  kind: 'cutoff' | 'end' | 'none';
  /**
   * The commit at the true end, whether or not an earlier pause was cut off (so every item has one): ms after the
   * true end of speech, with this machine's recognition time and (`decisionMs`) with instant recognition.
   */
  endMs: number;
  decisionMs: number;
  /** Commit time, ms of audio from the item's start. */
  atMs: number;
  /** At the end: commit time minus the true end of speech. */
  delayMs: number;
  /** A cut-off at the stretched hesitation (its kind), or at another, natural pause. */
  at: string;
}

/** Recognition time of a clip, ms (calibrated on this machine). */
export type RecognitionTime = (audioSeconds: number) => number;

/** When the session would commit at this pause (Infinity: speech resumes first, or no words). */
function commitAt(rec: PauseRecord, policy: Policy, recMs: RecognitionTime, agentText?: string): number {
  if (!rec.text) return Infinity;
  const wait = policy.waitMs(rec, agentText);
  if (!Number.isFinite(wait)) return Infinity;
  // The session's silence at window k is (k - pause + 2) windows; the window is in hand at (k + 1) * WIN_MS.
  const k = Math.max(rec.pauseWindow, rec.pauseWindow - 2 + Math.ceil(wait / WIN_MS));
  const silenceAt = (k + 1) * WIN_MS;
  const textAt = (rec.pauseWindow + 1) * WIN_MS + recMs(rec.audioSeconds);
  const at = Math.max(silenceAt, textAt);
  const resumeAt = rec.resumeWindow === null ? Infinity : rec.resumeWindow * WIN_MS;
  return at >= resumeAt ? Infinity : at;
}

export function simulate(replay: ItemReplay, policy: Policy, recMs: RecognitionTime, agentText?: string): Outcome {
  const endFrom = replay.speechEndMs - WIN_MS;
  const final = replay.records.filter((r) => (r.pauseWindow + 1) * WIN_MS >= endFrom);
  const first = (rm: RecognitionTime) => Math.min(...final.map((r) => commitAt(r, policy, rm, agentText)));
  const endMs = first(recMs) - replay.speechEndMs;
  const decisionMs = first(() => 0) - replay.speechEndMs;
  for (const rec of replay.records) {
    const at = commitAt(rec, policy, recMs, agentText);
    if (!Number.isFinite(at)) continue;
    if (at < endFrom) {
      const p = replay.pauses.find((q) => at >= q.startMs - 200 && at <= q.endMs + 200);
      return { kind: 'cutoff', atMs: at, delayMs: at - replay.speechEndMs, at: p ? p.kind : 'natural', endMs, decisionMs };
    }
    return { kind: 'end', atMs: at, delayMs: at - replay.speechEndMs, at: 'end', endMs, decisionMs };
  }
  return { kind: 'none', atMs: Infinity, delayMs: Infinity, at: 'none', endMs, decisionMs };
}

/** The policy before this bench (Whisper's punctuation): minDelayMs if the text "looks complete", else maxDelayMs. */
export function punctuationPolicy(minDelayMs = 400, maxDelayMs = 3000): Policy {
  return { name: 'punctuation (before)', setting: minDelayMs, waitMs: (rec) => (looksCompleteBefore(rec.text) ? minDelayMs : maxDelayMs) };
}

/** Silence alone (VAD-only endpointing). */
export function vadPolicy(delayMs: number): Policy {
  return { name: 'vad only', setting: delayMs, waitMs: () => delayMs };
}

/** The end-of-turn model (engine/turn/end-of-turn.ts) at a completeness threshold. */
export function smartPolicy(threshold: number, minDelayMs: number, maxDelayMs = 3000, weights: EotWeights = DEFAULT_WEIGHTS): Policy {
  const w = { ...weights, threshold };
  return {
    name: 'smart turn',
    setting: threshold,
    waitMs: (rec, agentText) => decide({ text: rec.text, agentText, prosody: rec.prosody }, { smartTurn: true, smartWaitMs: 0, minDelayMs, maxDelayMs }, w).waitMs,
  };
}

/** engine/turn/speech-tracker.ts looksComplete as it was before the end-of-turn model (the baseline). */
export function looksCompleteBefore(text: string): boolean {
  const t = text.trim();
  if (!t) return false;
  if (/(\.\.\.|…|,|-)$/.test(t)) return false;
  const bare = t.replace(/[.!?]+$/, '');
  return !/\b(and|but|or|so|because|um|uh|the|a|an|to|of|with|my|your|our|their|is|are|was|were|if|then|like|for|at|from|by|than)$/i.test(bare);
}

export interface Summary {
  policy: string;
  setting: number;
  items: number;
  /** Share of items with a hesitation of each kind that were cut off (at it or at an earlier natural pause). */
  cutoff: Record<string, { n: number; cut: number; rate: number }>;
  /** End-of-turn delay at true ends (every item, cut off earlier or not), ms: with this machine's recognition. */
  delayP50: number;
  delayP90: number;
  /** The same with instant recognition: what the policy's wait alone costs. */
  decisionP50: number;
  /** Items never committed (waited past the end of the item). */
  missed: number;
}

export function summarize(policy: Policy, outcomes: { replay: ItemReplay; outcome: Outcome }[]): Summary {
  const cutoff: Summary['cutoff'] = {};
  const delays: number[] = [];
  const decisions: number[] = [];
  let missed = 0;
  for (const { replay, outcome } of outcomes) {
    const kind = replay.pauses[0]?.kind ?? 'no_pause';
    const c = (cutoff[kind] ??= { n: 0, cut: 0, rate: 0 });
    c.n++;
    if (outcome.kind === 'cutoff') c.cut++;
    if (Number.isFinite(outcome.endMs)) {
      delays.push(outcome.endMs);
      decisions.push(outcome.decisionMs);
    } else missed++;
  }
  for (const c of Object.values(cutoff)) c.rate = c.n ? c.cut / c.n : 0;
  return { policy: policy.name, setting: policy.setting, items: outcomes.length, cutoff, delayP50: pct(delays, 0.5), delayP90: pct(delays, 0.9), decisionP50: pct(decisions, 0.5), missed };
}

export function pct(xs: number[], q: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
}
