// decodeAudio(): any accepted input (WAV, Ogg Opus, raw wire encodings) -> mono Float32 at its own sample rate.
import { decodeSamples, ENCODINGS, isEncoding, type Encoding } from './codecs.js';
import { AudioFormatError } from './errors.js';
import { decodeOggOpus, OpusPacketDecoder, OPUS_RATE } from './opus.js';
import type { MonoAudio } from './types.js';
import { readWav } from './wav.js';

/** Wire encodings (inference-api.md `encoding`): raw sample codecs plus Opus packets and Ogg Opus. */
export const WIRE_ENCODINGS = [...ENCODINGS, 'opus', 'ogg_opus'] as const;
export type WireEncoding = (typeof WIRE_ENCODINGS)[number];

export interface DecodeHint {
  encoding?: WireEncoding;
  sampleRate?: number;
}

export interface DecodedAudio extends MonoAudio {
  /** What the input turned out to be: 'wav', 'ogg_opus', or the raw encoding used. */
  format: 'wav' | WireEncoding;
}

const SUPPORTED = 'supported: WAV (RIFF), Ogg Opus, or raw linear16/linear32/mulaw/alaw/opus with encoding and sample_rate';

function ascii(buf: Uint8Array, at: number, s: string): boolean {
  if (buf.length < at + s.length) return false;
  for (let i = 0; i < s.length; i++) if (buf[at + i] !== s.charCodeAt(i)) return false;
  return true;
}

/** Names a container we recognise but do not decode (strong magic numbers only, unless `weak` adds MP3 frame sync). */
function unsupportedContainer(buf: Uint8Array, weak: boolean): string | null {
  if (ascii(buf, 0, 'fLaC')) return 'FLAC';
  if (ascii(buf, 0, 'ID3')) return 'MP3';
  if (ascii(buf, 4, 'ftyp')) return 'MP4/M4A';
  if (buf[0] === 0x1a && buf[1] === 0x45 && buf[2] === 0xdf && buf[3] === 0xa3) return 'WebM/Matroska';
  if (weak && buf[0] === 0xff && buf.length > 1 && (buf[1]! & 0xe0) === 0xe0) return 'MP3';
  return null;
}

/**
 * Decodes a whole audio buffer. Containers are detected from their magic bytes whatever the hint says: WAV
 * (RIFF/RIFX/RF64 + WAVE) and Ogg (OggS, which must hold Opus). Anything else is raw audio in `hint.encoding`
 * (default linear16) at `hint.sampleRate` (required). `opus` raw input is one Opus packet. MP3, FLAC, MP4/M4A and
 * WebM are recognised and refused. Every failure is an AudioFormatError.
 */
export function decodeAudio(buf: Uint8Array, hint: DecodeHint = {}): DecodedAudio {
  if (buf.length === 0) throw new AudioFormatError('empty audio input', hint.encoding);
  const enc = hint.encoding;
  if (enc !== undefined && !(WIRE_ENCODINGS as readonly string[]).includes(enc)) {
    throw new AudioFormatError(`unknown encoding "${String(enc)}"; ${SUPPORTED}`, String(enc));
  }
  if ((ascii(buf, 0, 'RIFF') || ascii(buf, 0, 'RIFX') || ascii(buf, 0, 'RF64')) && ascii(buf, 8, 'WAVE')) {
    return { ...readWav(buf), format: 'wav' };
  }
  if (ascii(buf, 0, 'OggS')) return { ...decodeOggOpus(buf), format: 'ogg_opus' };
  const other = unsupportedContainer(buf, enc === undefined);
  if (other) throw new AudioFormatError(`${other} input is not supported; ${SUPPORTED}`, other);
  if (enc === 'ogg_opus') throw new AudioFormatError('encoding ogg_opus but the input does not start with an Ogg page ("OggS")', 'ogg_opus');
  if (enc === 'opus') return { sampleRate: OPUS_RATE, samples: new OpusPacketDecoder().decode(buf), format: 'opus' };
  const rate = hint.sampleRate;
  if (rate === undefined) throw new AudioFormatError(`unrecognised audio container and no sample_rate for raw audio; ${SUPPORTED}`);
  if (!Number.isInteger(rate) || rate < 1000 || rate > 384000) throw new AudioFormatError(`invalid sample rate ${rate}`);
  const raw: Encoding = enc !== undefined && isEncoding(enc) ? enc : 'linear16';
  return { sampleRate: rate, samples: decodeSamples(buf, raw), format: raw };
}
