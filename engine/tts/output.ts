// Output audio for clients: from a voice's rate to the requested rate (streaming, no clicks) in a wire format.
import { Resampler, qualityFor } from '../audio/resample.js';
import { encodeALaw, encodeLinear16, encodeMuLaw } from '../audio/codecs.js';
import { writeWav } from '../audio/wav.js';
import { floatToInt16 } from '../audio/pcm.js';
import { Mp3Encoder } from '@breezystack/lamejs';
import { concatSamples } from '../audio/types.js';

export const OUTPUT_FORMATS = ['pcm', 'wav', 'ulaw', 'alaw', 'mp3'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export const CONTENT_TYPES: Record<OutputFormat, string> = {
  pcm: 'audio/pcm',
  wav: 'audio/wav',
  ulaw: 'audio/basic',
  alaw: 'audio/x-alaw-basic',
  mp3: 'audio/mpeg',
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
    case 'mp3':
      return encodeMp3(samples, sampleRate);
  }
}

/** MP3 (LAME in pure JavaScript, @breezystack/lamejs), mono CBR: 64 kb/s, or 32 kb/s at telephone rates. */
function encodeMp3(samples: Float32Array, sampleRate: number): Buffer {
  const encoder = new Mp3Encoder(1, sampleRate, sampleRate <= 12000 ? 32 : 64);
  const pcm = Int16Array.from(samples, floatToInt16);
  const parts: Buffer[] = [];
  // The encoder hands back signed byte views; they are the MP3 bytes as they are.
  const bytes = (b: Int8Array | Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  for (let at = 0; at < pcm.length; at += 1152 * 16) parts.push(bytes(encoder.encodeBuffer(pcm.subarray(at, at + 1152 * 16))));
  parts.push(bytes(encoder.flush()));
  return Buffer.concat(parts);
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
      this.resampler = new Resampler(fromRate, this.sampleRate, { quality: qualityFor(Math.min(fromRate, this.sampleRate)) });
      const out = this.resampler.push(samples);
      return tail && tail.length ? concatSamples([tail, out]) : out;
    }
    return this.resampler.push(samples);
  }

  /** As push(), ~100 ms at a time with the event loop free in between: a whole phrase at once would hold it for tens of ms. */
  async pushYielding(samples: Float32Array, fromRate: number): Promise<Float32Array> {
    const slice = Math.max(1, Math.round(fromRate / 10));
    if (samples.length <= slice) return this.push(samples, fromRate);
    const parts: Float32Array[] = [];
    for (let at = 0; at < samples.length; at += slice) {
      if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      parts.push(this.push(samples.subarray(at, at + slice), fromRate));
    }
    return concatSamples(parts);
  }

  flush(): Float32Array {
    return this.resampler ? this.resampler.flush() : new Float32Array(0);
  }
}
