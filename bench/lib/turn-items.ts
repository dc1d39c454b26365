// The turn benchmark corpus's items and the audio helpers its builders share: what an item is, where speech and
// pauses are in a recording, writing and reading an item's WAV.
import fs from 'node:fs';
import path from 'node:path';
import { readWav, writeWav } from '../../engine/audio/wav.js';

export type PauseKind = 'mid_clause' | 'clause_end' | 'sentence_end';
export interface TurnPause {
  /** Sample indexes (at the item's rate) of the stretched silence: [start, end). */
  start: number; end: number;
  kind: PauseKind;
  /** 'after_determiner' | 'after_preposition' | 'after_conjunction' | 'my_name_is' | 'mid_number' | 'list' | 'clause_end' | 'sentence_end' | 'natural' (human set). */
  category: string;
  /** Reference text before the pause, lower case, punctuation as in the text. */
  before: string;
}
export interface TurnItem {
  id: string;
  source: 'human' | 'synth';
  /** 'fit': may be used to fit parameters (synth only). 'eval': evaluation only (all human items). */
  split: 'fit' | 'eval';
  voice: string;
  rate: 8000 | 16000 | 24000;
  /** Absolute path of a 16-bit mono PCM WAV at `rate`. */
  file: string;
  text: string;
  /** What the agent asked just before, when it matters. */
  question?: string;
  /** One stretched hesitation, or none for items that measure only the end delay. */
  pauses: TurnPause[];
  /** Sample index where speech ends; at least 3.5 s of silence/background follow it. */
  speechEnd: number;
  /** Category of a synth item without a pause: 'yes_no' | 'short_answer' | 'full_turn'. */
  category?: string;
}

/** Seconds of silence or background after the end of speech in every item. */
export const TAIL_S = 3.5;
export const FRAME_S = 0.01;
/** A frame is speech when its RMS is within 40 dB of the file's speech level. */
const SILENCE_DB = -40;
const MIN_PAUSE_S = 0.1;

// ---- audio analysis

export interface Region { start: number; end: number }
export interface Segmentation { silences: Region[]; speechStart: number; speechEnd: number; threshold: number }

/** Speech frames by energy relative to the file's speech level; inner silences of at least `minS` between them. */
export function segmentSpeech(x: Float32Array, rate: number, minS = MIN_PAUSE_S, silenceDb = SILENCE_DB): Segmentation {
  const frame = Math.round(rate * FRAME_S);
  const rms = Array.from({ length: Math.floor(x.length / frame) }, (_, f) => Math.sqrt(x.subarray(f * frame, (f + 1) * frame).reduce((e, v) => e + v * v, 0) / frame));
  // Speech level: 90th percentile of frames within 40 dB of the loudest, so the amount of silence does not move it.
  const peak = rms.reduce((m, v) => Math.max(m, v), 0);
  const loud = rms.filter((v) => v > peak / 100).sort((a, b) => a - b);
  const threshold = (loud[Math.floor(0.9 * loud.length)] ?? 0) * 10 ** (silenceDb / 20);
  const speech = rms.map((r) => r > threshold);
  const first = speech.indexOf(true);
  const last = speech.lastIndexOf(true);
  const silences: Region[] = [];
  for (let f = first + 1; first >= 0 && f < last; f++) {
    if (speech[f]) continue;
    let g = f;
    while (!speech[g]) g++;
    if (g - f >= Math.round(minS / FRAME_S)) silences.push({ start: f * frame, end: g * frame });
    f = g;
  }
  return { silences, speechStart: Math.max(0, first) * frame, speechEnd: (last + 1) * frame, threshold };
}

/** `n` samples of background made by playing `src` forwards and backwards (no jumps at the joins). */
export function pingPong(src: Float32Array, n: number): Float32Array {
  const out = new Float32Array(n);
  if (!src.length || src.every((v) => v === 0)) return out;
  const period = Math.max(1, 2 * src.length - 2);
  for (let i = 0; i < n; i++) {
    const k = i % period;
    out[i] = src[k < src.length ? k : period - k]!;
  }
  return out;
}

export const count = (stats: Record<string, number>, key: string): number => (stats[key] = (stats[key] ?? 0) + 1);

export function writeItem(file: string, x: Float32Array, rate: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, writeWav(x, rate));
}

export function readItemAudio(item: TurnItem): Float32Array {
  const audio = readWav(fs.readFileSync(item.file));
  if (audio.sampleRate !== item.rate) throw new Error(`${item.file}: ${audio.sampleRate} Hz, expected ${item.rate}`);
  return audio.samples;
}

