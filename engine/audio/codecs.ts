// Sample codecs for raw wire audio: Float32 <-> linear16, linear32, mu-law, A-law, one-shot and streaming.
//
// linear32: the wire doc (inference-api.md, encoding enum) names `linear32` without defining the sample type;
// the upstream docs it mirrors say "32-bit linear PCM", so it is signed int32 little-endian here. Deepgram uses the
// same name for 32-bit float PCM; a float32 client is served by decodeFloat32/encodeFloat32 (pcm.ts) if we ever
// need it. Container and packet encodings (`opus`, `ogg_opus`, WAV) are handled by decode.ts, not here.
import { aLawToLinear, linearToALaw, linearToMuLaw, muLawToLinear } from './g711.js';
import { AudioFormatError } from './errors.js';
import { decodeLinear16, decodeLinear32, encodeLinear16, encodeLinear32, floatToInt16 } from './pcm.js';

export { decodeLinear16, decodeLinear32, encodeLinear16, encodeLinear32, decodeFloat32, encodeFloat32 } from './pcm.js';

export const ENCODINGS = ['linear16', 'linear32', 'mulaw', 'alaw'] as const;
export type Encoding = (typeof ENCODINGS)[number];

export function isEncoding(x: unknown): x is Encoding {
  return typeof x === 'string' && (ENCODINGS as readonly string[]).includes(x);
}

/** Bytes per sample of a raw encoding. */
export function bytesPerSample(encoding: Encoding): number {
  return encoding === 'linear16' ? 2 : encoding === 'linear32' ? 4 : 1;
}

/** mu-law bytes -> Float32 (v / 32768). */
export function decodeMuLaw(buf: Uint8Array): Float32Array {
  const out = new Float32Array(buf.length);
  for (let i = 0; i < buf.length; i++) out[i] = muLawToLinear(buf[i]!) / 32768;
  return out;
}

/** Float32 -> mu-law bytes (via clipped int16). */
export function encodeMuLaw(samples: Float32Array): Buffer {
  const out = Buffer.allocUnsafe(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = linearToMuLaw(floatToInt16(samples[i]!));
  return out;
}

/** A-law bytes -> Float32 (v / 32768). */
export function decodeALaw(buf: Uint8Array): Float32Array {
  const out = new Float32Array(buf.length);
  for (let i = 0; i < buf.length; i++) out[i] = aLawToLinear(buf[i]!) / 32768;
  return out;
}

/** Float32 -> A-law bytes (via clipped int16). */
export function encodeALaw(samples: Float32Array): Buffer {
  const out = Buffer.allocUnsafe(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = linearToALaw(floatToInt16(samples[i]!));
  return out;
}

function checkEncoding(encoding: string): asserts encoding is Encoding {
  if (!isEncoding(encoding)) {
    throw new AudioFormatError(`unknown raw encoding "${encoding}"; supported: ${ENCODINGS.join(', ')}`, encoding);
  }
}

/**
 * Raw bytes -> Float32. A trailing partial sample (odd byte of linear16, 1-3 bytes of linear32) is dropped;
 * for a stream split at arbitrary byte offsets use SampleDecoder, which carries it into the next chunk.
 */
export function decodeSamples(buf: Uint8Array, encoding: Encoding): Float32Array {
  checkEncoding(encoding);
  switch (encoding) {
    case 'linear16':
      return decodeLinear16(buf);
    case 'linear32':
      return decodeLinear32(buf);
    case 'mulaw':
      return decodeMuLaw(buf);
    case 'alaw':
      return decodeALaw(buf);
  }
}

/** Float32 -> raw bytes in `encoding` (values outside [-1, 1] are clipped). */
export function encodeSamples(samples: Float32Array, encoding: Encoding): Buffer {
  checkEncoding(encoding);
  switch (encoding) {
    case 'linear16':
      return encodeLinear16(samples);
    case 'linear32':
      return encodeLinear32(samples);
    case 'mulaw':
      return encodeMuLaw(samples);
    case 'alaw':
      return encodeALaw(samples);
  }
}

/** Streaming decoder: push byte chunks split anywhere; bytes of an incomplete sample wait for the next chunk. */
export class SampleDecoder {
  private readonly width: number;
  private carry: Uint8Array = new Uint8Array(0);

  constructor(readonly encoding: Encoding) {
    checkEncoding(encoding);
    this.width = bytesPerSample(encoding);
  }

  /** Bytes held back because they do not yet make a whole sample. */
  get pendingBytes(): number {
    return this.carry.length;
  }

  push(chunk: Uint8Array): Float32Array {
    let bytes = chunk;
    if (this.carry.length > 0) {
      bytes = new Uint8Array(this.carry.length + chunk.length);
      bytes.set(this.carry, 0);
      bytes.set(chunk, this.carry.length);
    }
    const whole = bytes.length - (bytes.length % this.width);
    this.carry = bytes.slice(whole);
    return decodeSamples(bytes.subarray(0, whole), this.encoding);
  }

  /** Ends the stream: returns the number of leftover bytes that never made a sample (they are discarded). */
  end(): number {
    const left = this.carry.length;
    this.carry = new Uint8Array(0);
    return left;
  }
}
