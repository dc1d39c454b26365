// Opus decoding to 48 kHz mono Float32: raw packets (@discordjs/opus) and Ogg Opus (RFC 7845: OpusHead, pre-skip, gain, end trim).
import opus from '@discordjs/opus';
import { AudioFormatError, reasonOf } from './errors.js';
import { OggDemuxer, type OggPacket } from './ogg.js';
import { concatSamples, type MonoAudio } from './types.js';

/** Opus always decodes at 48 kHz here (any Opus stream can be decoded at 48 kHz regardless of its input rate). */
export const OPUS_RATE = 48000;

/** Decodes raw Opus packets one at a time, keeping decoder state between them; stereo packets are mixed to mono. */
export class OpusPacketDecoder {
  private readonly decoder = new opus.OpusEncoder(OPUS_RATE, 1);

  /** One packet -> its samples. An empty packet yields nothing (it is not treated as a lost packet). */
  decode(packet: Uint8Array): Float32Array {
    if (packet.length === 0) return new Float32Array(0);
    let pcm: Buffer;
    try {
      pcm = this.decoder.decode(Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength));
    } catch (err) {
      throw new AudioFormatError(`invalid Opus packet (${packet.length} bytes): ${reasonOf(err)}`, 'opus', { cause: err });
    }
    const n = pcm.length >> 1;
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = pcm.readInt16LE(i * 2) / 32768;
    return out;
  }
}

/** Decodes a sequence of raw Opus packets (one stream) into 48 kHz mono. */
export function decodeOpusPackets(packets: Iterable<Uint8Array>): Float32Array {
  const d = new OpusPacketDecoder();
  const parts: Float32Array[] = [];
  for (const p of packets) parts.push(d.decode(p));
  return concatSamples(parts);
}

export interface OpusHead {
  channels: number;
  preSkip: number;
  inputSampleRate: number;
  outputGainDb: number;
  mappingFamily: number;
}

function startsWith(data: Uint8Array, magic: string): boolean {
  if (data.length < magic.length) return false;
  for (let i = 0; i < magic.length; i++) if (data[i] !== magic.charCodeAt(i)) return false;
  return true;
}

/** Parses an OpusHead identification header (RFC 7845 section 5.1). */
export function parseOpusHead(p: Uint8Array): OpusHead {
  if (!startsWith(p, 'OpusHead') || p.length < 19) throw new AudioFormatError('invalid Ogg Opus: bad OpusHead packet', 'ogg_opus');
  const v = new DataView(p.buffer, p.byteOffset, p.byteLength);
  const version = p[8]!;
  if (version >> 4 !== 0) throw new AudioFormatError(`unsupported Ogg Opus version ${version}`, 'ogg_opus');
  const head = {
    channels: p[9]!,
    preSkip: v.getUint16(10, true),
    inputSampleRate: v.getUint32(12, true),
    outputGainDb: v.getInt16(16, true) / 256,
    mappingFamily: p[18]!,
  };
  if (head.channels < 1) throw new AudioFormatError('invalid Ogg Opus: 0 channels', 'ogg_opus');
  if (head.mappingFamily !== 0 || head.channels > 2) {
    throw new AudioFormatError(
      `unsupported Ogg Opus channel mapping family ${head.mappingFamily} (${head.channels} channels); only mono and stereo (family 0)`,
      'ogg_opus',
    );
  }
  return head;
}

/** What a non-Opus Ogg stream holds, for the error message. */
function codecName(first: Uint8Array): string {
  if (startsWith(first, '\x01vorbis')) return 'Vorbis';
  if (startsWith(first, '\x7fFLAC')) return 'FLAC';
  if (startsWith(first, 'Speex   ')) return 'Speex';
  if (startsWith(first, '\x80theora')) return 'Theora';
  return 'an unknown codec';
}

/**
 * Streaming Ogg Opus decoder: push bytes split anywhere, get 48 kHz mono samples. Uses the first Opus logical stream
 * (other streams are ignored), drops the pre-skip, applies the header's output gain and trims the end to the final
 * granule position on the EOS page. A chained stream (a second OpusHead) is not supported.
 */
export class OggOpusDecoder {
  private readonly demuxer = new OggDemuxer();
  private readonly packets = new OpusPacketDecoder();
  private serial = -1;
  private otherCodec: string | null = null;
  private tagsSeen = false;
  private skip = 0;
  private gain = 1;
  private emitted = 0;
  private ended = false;
  head: OpusHead | null = null;

  push(chunk: Uint8Array): Float32Array {
    const parts: Float32Array[] = [];
    for (const pkt of this.demuxer.push(chunk)) {
      const out = this.onPacket(pkt);
      if (out.length > 0) parts.push(out);
    }
    return concatSamples(parts);
  }

  /** Ends the stream. Throws if no Opus stream was found; a trailing incomplete page is dropped. */
  end(): void {
    if (!this.head) {
      if (this.otherCodec) throw new AudioFormatError(`Ogg stream holds ${this.otherCodec}, not Opus; only Ogg Opus is supported`, 'ogg');
      throw new AudioFormatError('invalid Ogg Opus: no OpusHead found', 'ogg_opus');
    }
  }

  private onPacket(pkt: OggPacket): Float32Array {
    const none = new Float32Array(0);
    if (this.serial === -1) {
      if (pkt.bos && startsWith(pkt.data, 'OpusHead')) {
        this.head = parseOpusHead(pkt.data);
        this.serial = pkt.serial;
        this.skip = this.head.preSkip;
        this.gain = 10 ** (this.head.outputGainDb / 20);
      } else if (pkt.bos) this.otherCodec ??= codecName(pkt.data);
      return none;
    }
    if (pkt.serial !== this.serial || this.ended) return none;
    if (!this.tagsSeen) {
      if (!startsWith(pkt.data, 'OpusTags')) throw new AudioFormatError('invalid Ogg Opus: second packet is not OpusTags', 'ogg_opus');
      this.tagsSeen = true;
      return none;
    }
    let out = this.packets.decode(pkt.data);
    if (this.skip > 0) {
      const drop = Math.min(this.skip, out.length);
      this.skip -= drop;
      out = out.subarray(drop);
    }
    if (pkt.eos) {
      this.ended = true;
      if (pkt.granule >= 0n) {
        const total = Number(pkt.granule) - this.head!.preSkip; // samples the whole stream should have
        const room = Math.max(0, total - this.emitted);
        if (out.length > room) out = out.subarray(0, room);
      }
    }
    if (this.gain !== 1) {
      for (let i = 0; i < out.length; i++) out[i] = Math.max(-1, Math.min(1, out[i]! * this.gain));
    }
    this.emitted += out.length;
    return out;
  }
}

/** Decodes a whole Ogg Opus file into 48 kHz mono. */
export function decodeOggOpus(buf: Uint8Array): MonoAudio {
  const d = new OggOpusDecoder();
  const samples = d.push(buf);
  d.end();
  return { sampleRate: OPUS_RATE, samples };
}
