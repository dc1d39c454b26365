// From redaction spans to the stretches of audio to silence in a recording, using the recognizer's word times.
import { isPciKind, type RedactionSpan } from './types.js';

export interface TimedWord {
  word: string;
  /** Seconds. */
  start: number;
  end: number;
}

export interface AudioRange {
  start: number;
  end: number;
}

/**
 * Time ranges (seconds, merged, padded by `padSeconds` each side) covering the words that overlap any span.
 * Words are located in `text` in order (they are the turn's words as recognised); a word that cannot be found is
 * skipped. When `wholeTurnForPci` is set (the default) and a span is PCI, the whole turn is returned instead, from
 * `turn.start` to `turn.end`, or the first word's start to the last word's end.
 */
export function silenceRanges(
  text: string,
  words: readonly TimedWord[],
  spans: readonly RedactionSpan[],
  opts: { padSeconds?: number; wholeTurnForPci?: boolean; turn?: AudioRange } = {},
): AudioRange[] {
  if (!spans.length) return [];
  const pad = opts.padSeconds ?? 0.15;
  if ((opts.wholeTurnForPci ?? true) && spans.some((s) => isPciKind(s.kind))) {
    const turn = opts.turn ?? (words.length ? { start: words[0]!.start, end: words[words.length - 1]!.end } : undefined);
    return turn ? [{ start: Math.max(0, turn.start - pad), end: turn.end + pad }] : [];
  }
  const ranges: AudioRange[] = [];
  let at = 0;
  for (const w of words) {
    const needle = w.word.trim();
    if (!needle) continue;
    const i = text.indexOf(needle, at);
    if (i < 0) continue;
    const end = i + needle.length;
    at = end;
    if (spans.some((s) => s.start < end && i < s.end)) ranges.push({ start: Math.max(0, w.start - pad), end: w.end + pad });
  }
  ranges.sort((a, b) => a.start - b.start);
  const merged: AudioRange[] = [];
  for (const r of ranges) {
    const last = merged[merged.length - 1];
    if (last && r.start <= last.end) last.end = Math.max(last.end, r.end);
    else merged.push({ ...r });
  }
  return merged;
}
