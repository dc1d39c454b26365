// Batch recognition: any rate in, 16 kHz to Whisper; audio over 30 s is cut at pauses (VAD) and the pieces stitched.
import type { MonoAudio } from '../audio/types.js';
import { resample } from '../audio/resample.js';
import type { ModelRegistry } from '../models/registry.js';
import { speechSegments, VAD_SAMPLE_RATE } from '../models/silero.js';
import { WHISPER_MAX_SAMPLES } from '../models/whisper/index.js';

export interface Word {
  word: string;
  start: number;
  end: number;
  confidence: number;
}

export interface BatchTranscript {
  text: string;
  /** Seconds of input audio. */
  duration: number;
  /** One entry per recognised piece: its time span and text (a single piece for audio up to 30 s). */
  segments: { start: number; end: number; text: string }[];
}

/** Whisper's own limit leaves a little margin for the cut points. */
const PIECE_SECONDS = 28;

export function to16k(audio: MonoAudio): Float32Array {
  return audio.sampleRate === VAD_SAMPLE_RATE ? audio.samples : resample(audio.samples, audio.sampleRate, VAD_SAMPLE_RATE);
}

export async function transcribe(registry: ModelRegistry, audio: MonoAudio): Promise<BatchTranscript> {
  const samples = to16k(audio);
  const duration = samples.length / VAD_SAMPLE_RATE;
  const recognizer = await registry.recognizer();
  if (samples.length <= WHISPER_MAX_SAMPLES) {
    const { text } = await registry.queue.run(() => recognizer.transcribe(samples, { beams: registry.sttBeams }), 'file');
    return { text, duration, segments: text ? [{ start: 0, end: duration, text }] : [] };
  }
  const pieces = await speechSegments(samples, { model: await registry.vad(), maxSegmentSeconds: PIECE_SECONDS });
  const segments: BatchTranscript['segments'] = [];
  for (const piece of pieces) {
    const slice = samples.subarray(Math.floor(piece.start * VAD_SAMPLE_RATE), Math.min(samples.length, Math.ceil(piece.end * VAD_SAMPLE_RATE)));
    const { text } = await registry.queue.run(() => recognizer.transcribe(slice, { beams: registry.sttBeams }), 'file');
    if (text) segments.push({ start: piece.start, end: piece.end, text });
  }
  return { text: segments.map((s) => s.text).join(' '), duration, segments };
}

/**
 * Word times for `word_timestamps`: this Whisper graph returns text without timings, so each segment's span
 * is shared among its words in proportion to their length. Estimates, marked by a confidence of 0.
 */
export function estimateWords(segments: BatchTranscript['segments']): Word[] {
  const words: Word[] = [];
  for (const seg of segments) {
    const parts = seg.text.split(/\s+/).filter(Boolean);
    const total = parts.reduce((n, w) => n + w.length + 1, 0);
    let t = seg.start;
    for (const w of parts) {
      const span = ((seg.end - seg.start) * (w.length + 1)) / total;
      words.push({ word: w, start: round(t), end: round(t + span), confidence: 0 });
      t += span;
    }
  }
  return words;
}

const round = (x: number) => Math.round(x * 1000) / 1000;
