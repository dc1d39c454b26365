// Shared audio types: mono Float32 samples in [-1, 1] with an explicit sample rate.

/** Mono audio as the engine moves it: samples in [-1, 1] at `sampleRate` Hz. */
export interface MonoAudio {
  sampleRate: number;
  samples: Float32Array;
}

/** Sample rates the wire accepts (STT live); the resampler and framer support all of them. */
export const WIRE_SAMPLE_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;
export type WireSampleRate = (typeof WIRE_SAMPLE_RATES)[number];

/** Joins Float32 chunks into one array. */
export function concatSamples(chunks: readonly Float32Array[]): Float32Array {
  let n = 0;
  for (const c of chunks) n += c.length;
  const out = new Float32Array(n);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}
