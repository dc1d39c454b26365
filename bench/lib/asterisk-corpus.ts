// The Debian Asterisk English prompts (8 kHz int16 WAV, human speech) with their transcripts, for STT tests and benches.
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { resample } from '../../engine/audio/resample.js';
import { isNonSpeech } from './wer.js';

export const ASTERISK_SOUNDS_DIR = '/usr/share/asterisk/sounds/en_US_f_Allison';
export const ASTERISK_TRANSCRIPTS = '/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz';

export interface AsteriskPrompt {
  /** e.g. 'hello-world', 'digits/5' */
  name: string;
  file: string;
  /** Reference transcript as written in the transcript file. */
  text: string;
  /** False when the transcript only describes a sound ("[ascending tones]", "(1 second of silence)"). */
  speech: boolean;
}

export function asteriskCorpusAvailable(): boolean {
  return fs.existsSync(ASTERISK_SOUNDS_DIR) && fs.existsSync(ASTERISK_TRANSCRIPTS);
}

/** `name: text` lines of the transcript file (comments and blank lines skipped). */
export function loadAsteriskTranscripts(file = ASTERISK_TRANSCRIPTS): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of gunzipSync(fs.readFileSync(file)).toString('utf8').split('\n')) {
    if (line.startsWith(';')) continue;
    const m = /^([^\s:]+):\s*(.*)$/.exec(line.trim());
    if (m?.[1] && m[2] !== undefined) out.set(m[1], m[2].trim());
  }
  return out;
}

/** Prompts that have both a WAV and a transcript, sorted by name. */
export function listAsteriskPrompts(dir = ASTERISK_SOUNDS_DIR): AsteriskPrompt[] {
  const prompts: AsteriskPrompt[] = [];
  for (const [name, text] of loadAsteriskTranscripts()) {
    const file = path.join(dir, `${name}.wav`);
    if (fs.existsSync(file)) prompts.push({ name, file, text, speech: !isNonSpeech(text) });
  }
  return prompts.sort((a, b) => a.name.localeCompare(b.name));
}

/** Minimal RIFF/WAVE reader for 16-bit PCM; returns the first channel as floats in [-1, 1). */
export function readWavPcm16(file: string): { sampleRate: number; samples: Float32Array } {
  const buf = fs.readFileSync(file);
  if (buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${file}: not a WAV file`);
  let off = 12;
  let fmt: { channels: number; sampleRate: number; bits: number; format: number } | undefined;
  while (off + 8 <= buf.length) {
    const id = buf.toString('ascii', off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === 'fmt ') {
      fmt = { format: buf.readUInt16LE(body), channels: buf.readUInt16LE(body + 2), sampleRate: buf.readUInt32LE(body + 4), bits: buf.readUInt16LE(body + 14) };
    } else if (id === 'data') {
      if (!fmt || fmt.format !== 1 || fmt.bits !== 16) throw new Error(`${file}: only 16-bit PCM is supported`);
      const frames = Math.floor(Math.min(size, buf.length - body) / (2 * fmt.channels));
      const samples = new Float32Array(frames);
      for (let i = 0; i < frames; i++) samples[i] = buf.readInt16LE(body + i * 2 * fmt.channels) / 32768;
      return { sampleRate: fmt.sampleRate, samples };
    }
    off = body + size + (size & 1);
  }
  throw new Error(`${file}: no data chunk`);
}

/** Read a prompt and return it as 16 kHz float samples. */
export function loadPrompt16k(file: string): Float32Array {
  const { sampleRate, samples } = readWavPcm16(file);
  return sampleRate === 16000 ? samples : resample(samples, sampleRate, 16000);
}

/**
 * Split audio longer than `maxSamples` at the quietest 20 ms frame in the last third of each window,
 * so long prompts can be fed to a recogniser with a fixed window (Whisper: 30 s).
 */
export function splitAtPauses(samples: Float32Array, maxSamples: number, frame = 320): Float32Array[] {
  const out: Float32Array[] = [];
  let start = 0;
  while (samples.length - start > maxSamples) {
    let best = start + maxSamples;
    let bestEnergy = Infinity;
    for (let f = start + Math.floor((maxSamples * 2) / 3); f + frame <= start + maxSamples; f += frame) {
      let e = 0;
      for (let i = f; i < f + frame; i++) e += (samples[i] as number) ** 2;
      if (e < bestEnergy) {
        bestEnergy = e;
        best = f + frame / 2;
      }
    }
    out.push(samples.subarray(start, best));
    start = best;
  }
  out.push(samples.subarray(start));
  return out;
}
