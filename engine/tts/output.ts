// Output audio for clients: from a voice's rate to the requested rate (streaming, no clicks) in a wire format.
import { Resampler } from '../audio/resample.js';
import { encodeALaw, encodeLinear16, encodeMuLaw } from '../audio/codecs.js';
import { writeWav } from '../audio/wav.js';

export const OUTPUT_FORMATS = ['pcm', 'wav', 'ulaw', 'alaw'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export const CONTENT_TYPES: Record<OutputFormat, string> = {
  pcm: 'audio/pcm',
  wav: 'audio/wav',
  ulaw: 'audio/basic',
  alaw: 'audio/x-alaw-basic',
};

/** Encodes samples already at the output rate; WAV pieces are whole files (the wire's per-chunk container). */
export function encodeOutput(samples: Float32Array, sampleRate: number, format: OutputFormat): Buffer {
  switch (format) {
    case 'pcm':
      return encodeLinear16(samples);
    case 'wav':
      return writeWav(samples, sampleRate, '16');
    case 'ulaw':
      return encodeMuLaw(samples);
    case 'alaw':
      return encodeALaw(samples);
  }
}

/**
 * Converts a stream of synthesized phrases (each at the voice's own rate) to the output rate through one
 * streaming resampler, so phrase boundaries join without clicks.
 */
export class OutputStream {
  private resampler: Resampler | null = null;

  constructor(readonly sampleRate: number) {}

  push(samples: Float32Array, fromRate: number): Float32Array {
    if (!this.resampler || this.resampler.fromRate !== fromRate) {
      const tail = this.resampler ? this.resampler.flush() : null;
      this.resampler = new Resampler(fromRate, this.sampleRate);
      const out = this.resampler.push(samples);
      return tail && tail.length ? concat(tail, out) : out;
    }
    return this.resampler.push(samples);
  }

  flush(): Float32Array {
    return this.resampler ? this.resampler.flush() : new Float32Array(0);
  }
}

function concat(a: Float32Array, b: Float32Array): Float32Array {
  const out = new Float32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
