// Streaming input: wire bytes of any encoding (raw codecs, Opus packets, Ogg Opus) to mono samples at a target rate,
// one decoder and one resampler per stream.
import { SampleDecoder, isEncoding } from './codecs.js';
import type { WireEncoding } from './decode.js';
import { AudioFormatError } from './errors.js';
import { OggOpusDecoder, OpusPacketDecoder, OPUS_RATE } from './opus.js';
import { Resampler, type ResampleQuality } from './resample.js';

/** Bytes in, mono samples at `rate` out. */
interface StreamDecoder {
  readonly rate: number;
  push(bytes: Uint8Array): Float32Array;
  /** End of input; may throw for a stream that never became valid. */
  end(): void;
}

/**
 * The streaming decoder of an encoding. Raw codecs run at `sampleRate` and take chunks split anywhere; `opus` takes
 * exactly one Opus packet per push (one WebSocket message); `ogg_opus` takes an Ogg Opus byte stream split anywhere.
 * Opus always decodes at 48 kHz, whatever `sampleRate` says.
 */
function createDecoder(encoding: WireEncoding, sampleRate: number): StreamDecoder {
  if (encoding === 'opus') {
    const d = new OpusPacketDecoder();
    return { rate: OPUS_RATE, push: (b) => d.decode(b), end: () => undefined };
  }
  if (encoding === 'ogg_opus') {
    const d = new OggOpusDecoder();
    let any = false;
    return {
      rate: OPUS_RATE,
      push: (b) => {
        any ||= b.length > 0;
        return d.push(b);
      },
      end: () => {
        if (any) d.end();
      },
    };
  }
  if (!isEncoding(encoding)) throw new AudioFormatError(`unknown encoding "${String(encoding)}"`, String(encoding));
  const d = new SampleDecoder(encoding);
  return { rate: sampleRate, push: (b) => d.push(b), end: () => void d.end() };
}

/** Wire bytes to samples at `toRate`. Undecodable input throws (AudioFormatError, or the Opus decoder's error). */
export class StreamInput {
  private readonly decoder: StreamDecoder;
  private readonly resampler: Resampler;

  constructor(encoding: WireEncoding, sampleRate: number, toRate: number, quality?: ResampleQuality) {
    this.decoder = createDecoder(encoding, sampleRate);
    this.resampler = new Resampler(this.decoder.rate, toRate, { quality });
  }

  push(bytes: Uint8Array): Float32Array {
    return this.resampler.push(this.decoder.push(bytes));
  }

  /** End of input: the samples the resampler still held. */
  end(): Float32Array {
    this.decoder.end();
    return this.resampler.flush();
  }
}
