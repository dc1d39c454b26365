// Real speech for the inference suites: Asterisk prompts as WAV bytes and audio, their transcripts, and WER.
import { readFileSync } from 'node:fs';
import { readWav, writeWav } from '../../engine/audio/wav.js';
import type { MonoAudio } from '../../engine/audio/types.js';
import { ASTERISK_SOUNDS_DIR, loadAsteriskTranscripts } from '../../bench/lib/asterisk-corpus.js';
import { scoreText, wer } from '../../bench/lib/wer.js';

export function asteriskWav(name: string): Buffer {
  return readFileSync(`${ASTERISK_SOUNDS_DIR}/${name}.wav`);
}

export function asteriskAudio(name: string): MonoAudio {
  return readWav(asteriskWav(name));
}

let transcripts: Map<string, string> | null = null;
export function asteriskText(name: string): string {
  transcripts ??= loadAsteriskTranscripts();
  const text = transcripts.get(name);
  if (!text) throw new Error(`no transcript for ${name}`);
  return text;
}

/** Word error rate of a hypothesis against a reference, normalised ("one" = "1", punctuation ignored). */
export function werOf(reference: string, hypothesis: string): number {
  return wer(scoreText(reference, hypothesis));
}

/** Audio pieces joined with silences between them, as one WAV. */
export function joinWithSilence(parts: MonoAudio[], silenceSeconds: number): Buffer {
  const rate = parts[0]?.sampleRate ?? 8000;
  const gap = Math.round(silenceSeconds * rate);
  const out = new Float32Array(parts.reduce((n, p) => n + p.samples.length + gap, 0));
  let at = 0;
  for (const p of parts) {
    if (p.sampleRate !== rate) throw new Error('parts must share one rate');
    out.set(p.samples, at);
    at += p.samples.length + gap;
  }
  return writeWav(out, rate);
}
