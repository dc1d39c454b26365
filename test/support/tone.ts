// What a recording holds, block by block: the ringback tone's share of the energy (Goertzel at 440 and 480 Hz) and
// loudness, for asserting what a caller heard while on hold.
import { readFileSync } from 'node:fs';
import { readWav } from '../../engine/audio/wav.js';

/** 100 ms blocks: 440 and 480 Hz are whole numbers of cycles in each (at 8 kHz, 44 and 48). */
const BLOCK_S = 0.1;

/** Power of `x` at `freq` (Goertzel), scaled so a sine of amplitude A gives N·A²/2, like its sum of squares. */
function goertzel(x: Float32Array, rate: number, freq: number): number {
  const k = (2 * Math.cos((2 * Math.PI * freq) / rate)) as number;
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < x.length; i++) {
    const s = (x[i] as number) + k * s1 - s2;
    s2 = s1;
    s1 = s;
  }
  return ((s1 * s1 + s2 * s2 - k * s1 * s2) * 2) / x.length;
}

export interface Block {
  /** Start, seconds. */
  at: number;
  rms: number;
  /** Share of the block's energy at 440 and 480 Hz (1 for pure ringback). */
  ringback: number;
}

/** The blocks of mono samples at `rate`. */
export function blocksOf(samples: Float32Array, rate: number): Block[] {
  const n = Math.round(rate * BLOCK_S);
  const out: Block[] = [];
  for (let from = 0; from + n <= samples.length; from += n) {
    const x = samples.subarray(from, from + n);
    let energy = 0;
    for (let i = 0; i < n; i++) energy += (x[i] as number) ** 2;
    const tone = goertzel(x, rate, 440) + goertzel(x, rate, 480);
    out.push({ at: from / rate, rms: Math.sqrt(energy / n), ringback: energy > 0 ? tone / energy : 0 });
  }
  return out;
}

/** The blocks of a WAV file. */
export function blocksOfWav(path: string): Block[] {
  const audio = readWav(readFileSync(path));
  return blocksOf(audio.samples, audio.sampleRate);
}

/** Whether a block is audible ringback (not a quiet hum that happens to sit at 440/480 Hz). */
export const isRingback = (b: Block): boolean => b.rms > 0.02 && b.ringback > 0.6;

/** The longest run of blocks quieter than `rms`, seconds. */
export function longestQuiet(blocks: Block[], rms = 0.003): number {
  let best = 0;
  let run = 0;
  for (const b of blocks) {
    run = b.rms < rms ? run + 1 : 0;
    best = Math.max(best, run);
  }
  return best * BLOCK_S;
}
