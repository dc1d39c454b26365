// Containers: WAV read/write, real speech from the Asterisk prompts, raw Opus and Ogg Opus decoding, decodeAudio detection and errors.
import { readFileSync } from 'node:fs';
import opus from '@discordjs/opus';
import wavefile from 'wavefile';
import { describe, expect, it } from 'vitest';
import {
  AudioFormatError, decodeAudio, decodeOggOpus, decodeOpusPackets, encodeLinear16, encodeMuLaw, OggOpusDecoder, OpusPacketDecoder,
  readWav, resample, writeWav, type WavSampleFormat,
} from '../engine/audio/index.js';
import { writePcm16WavHeader } from '../engine/audio/wav.js';

const HELLO_WORLD = '/usr/share/asterisk/sounds/en_US_f_Allison/hello-world.wav';

function sine(n: number, freq: number, rate: number, amp = 0.5): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => amp * Math.sin((2 * Math.PI * freq * i) / rate));
}

/** Frequency estimated from upward zero crossings over a stretch of signal. */
function zeroCrossingHz(x: Float32Array, rate: number, from: number, to: number): number {
  const ups: number[] = [];
  for (let i = from + 1; i < to; i++) if (x[i - 1]! < 0 && x[i]! >= 0) ups.push(i - x[i]! / (x[i]! - x[i - 1]!));
  return ((ups.length - 1) * rate) / (ups[ups.length - 1]! - ups[0]!);
}

/** Normalised correlation of a and b (b shifted by lag) over [from, to). */
function correlation(a: Float32Array, b: Float32Array, lag: number, from: number, to: number): number {
  let ab = 0, aa = 0, bb = 0;
  for (let i = from; i < to; i++) {
    ab += a[i]! * b[i + lag]!;
    aa += a[i]! ** 2;
    bb += b[i + lag]! ** 2;
  }
  return ab / Math.sqrt(aa * bb);
}

function bestLag(a: Float32Array, b: Float32Array, maxLag: number, from: number, to: number): number {
  let best = -Infinity, lag = 0;
  for (let l = -maxLag; l <= maxLag; l++) {
    const c = correlation(a, b, l, from, to);
    if (c > best) [best, lag] = [c, l];
  }
  return lag;
}

/** A chirp (no periodicity, so correlation finds a unique alignment). */
function chirp(n: number, rate: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => 0.5 * Math.sin(2 * Math.PI * (200 * (i / rate) + 900 * (i / rate) ** 2)));
}

function encodeOpus(x: Float32Array, bitrate = 64000): Buffer[] {
  const enc = new opus.OpusEncoder(48000, 1);
  enc.setBitrate(bitrate);
  const packets: Buffer[] = [];
  for (let off = 0; off < x.length; off += 960) {
    const frame = new Float32Array(960);
    frame.set(x.subarray(off, off + 960));
    packets.push(enc.encode(encodeLinear16(frame)));
  }
  return packets;
}

// ---- a minimal Ogg Opus writer, independent of the code under test (own CRC, own page layout) ----
const CRC = Array.from({ length: 256 }, (_, i) => {
  let r = i << 24;
  for (let k = 0; k < 8; k++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
  return r >>> 0;
});

function page(flags: number, granule: bigint, serial: number, seq: number, lacing: number[], body: Buffer): Buffer {
  const h = Buffer.alloc(27 + lacing.length);
  h.write('OggS', 0, 'latin1');
  h[4] = 0;
  h[5] = flags;
  h.writeBigInt64LE(granule, 6);
  h.writeUInt32LE(serial, 14);
  h.writeUInt32LE(seq, 18);
  h[26] = lacing.length;
  lacing.forEach((l, i) => (h[27 + i] = l));
  const p = Buffer.concat([h, body]);
  let crc = 0;
  for (const b of p) crc = ((crc << 8) ^ CRC[((crc >>> 24) ^ b) & 0xff]!) >>> 0;
  p.writeUInt32LE(crc, 22);
  return p;
}

function lacingOf(len: number): number[] {
  const l = Array<number>(Math.floor(len / 255)).fill(255);
  l.push(len % 255);
  return l;
}

interface OggOpts { preSkip: number; totalSamples: number; serial?: number; gainQ8?: number; splitPacket?: number; channels?: number }

/**
 * Builds Ogg Opus: OpusHead page, OpusTags page, then audio pages of 3 packets each; packet `splitPacket`
 * is cut in two across a page boundary (continued-packet flag). The last page is EOS with the end-trim granule.
 */
function buildOggOpus(packets: Buffer[], o: OggOpts): Buffer {
  const serial = o.serial ?? 0x1234abcd;
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'latin1');
  head[8] = 1;
  head[9] = o.channels ?? 1;
  head.writeUInt16LE(o.preSkip, 10);
  head.writeUInt32LE(48000, 12);
  head.writeInt16LE(o.gainQ8 ?? 0, 16);
  head[18] = 0;
  const tags = Buffer.concat([Buffer.from('OpusTags', 'latin1'), Buffer.from([4, 0, 0, 0]), Buffer.from('test'), Buffer.alloc(4)]);
  const pages = [page(0x02, 0n, serial, 0, lacingOf(head.length), head), page(0, 0n, serial, 1, lacingOf(tags.length), tags)];
  let seq = 2;
  let granule = BigInt(o.preSkip);
  let lacing: number[] = [];
  let body: Buffer[] = [];
  let continued = false;
  const flush = (last: boolean, g: bigint) => {
    pages.push(page((continued ? 0x01 : 0) | (last ? 0x04 : 0), g, serial, seq++, lacing, Buffer.concat(body)));
    lacing = [];
    body = [];
  };
  packets.forEach((p, i) => {
    const last = i === packets.length - 1;
    if (i === o.splitPacket) {
      // first 255 bytes end this page (a lacing value of 255 means "continues"), the rest opens the next one
      lacing.push(255);
      body.push(p.subarray(0, 255));
      flush(false, -1n);
      continued = true;
      lacing.push(...lacingOf(p.length - 255));
      body.push(p.subarray(255));
    } else {
      lacing.push(...lacingOf(p.length));
      body.push(p);
    }
    granule += 960n;
    if ((i + 1) % 3 === 0 || last) {
      flush(last, last ? BigInt(o.preSkip + o.totalSamples) : granule);
      continued = false;
    }
  });
  return Buffer.concat(pages);
}

describe('WAV', () => {
  it.each<[WavSampleFormat, number]>([
    ['16', 1 / 32768],
    ['24', 1 / 8388608],
    ['32', 1e-7],
    ['32f', 0],
    ['mulaw', 0.016],
    ['alaw', 0.016],
  ])('round-trips %s samples, rate and length', (format, tolerance) => {
    const x = sine(2205, 441, 22050, 0.9);
    const wav = writeWav(x, 22050, format);
    expect(wav.subarray(0, 4).toString('latin1')).toBe('RIFF');
    const back = readWav(wav);
    expect(back.sampleRate).toBe(22050);
    expect(back.samples.length).toBe(x.length);
    let maxErr = 0;
    for (let i = 0; i < x.length; i++) maxErr = Math.max(maxErr, Math.abs(back.samples[i]! - x[i]!));
    expect(maxErr).toBeLessThanOrEqual(tolerance + 1e-9);
  });

  it('writes the same 44-byte PCM header as writeWav for samples filled in afterwards (mono and two channels)', () => {
    const x = Float32Array.from([0.5, -0.5, 2, 0]);
    const mono = Buffer.alloc(44 + x.length * 2);
    writePcm16WavHeader(mono, 1, 16000);
    encodeLinear16(x).copy(mono, 44);
    expect(mono.equals(writeWav(x, 16000))).toBe(true);
    const dual = Buffer.alloc(44 + 8);
    writePcm16WavHeader(dual, 2, 8000);
    const read = new wavefile.WaveFile(dual);
    expect(read.fmt).toMatchObject({ numChannels: 2, sampleRate: 8000, bitsPerSample: 16, byteRate: 32000, blockAlign: 4 });
  });

  it('writes int16 by default with the canonical 44-byte header', () => {
    const wav = writeWav(Float32Array.from([0.5, -0.5, 2]), 16000);
    expect(wav.length).toBe(44 + 6);
    expect(wav.readUInt16LE(20)).toBe(1); // PCM
    expect(wav.readUInt16LE(22)).toBe(1); // mono
    expect(wav.readUInt32LE(24)).toBe(16000);
    expect(wav.readUInt16LE(34)).toBe(16);
    expect(wav.subarray(36, 40).toString('latin1')).toBe('data');
    expect([wav.readInt16LE(44), wav.readInt16LE(46), wav.readInt16LE(48)]).toEqual([16384, -16384, 32767]);
  });

  it('mixes stereo down to mono (24-bit, 44.1 kHz, written by wavefile)', () => {
    const w = new wavefile.WaveFile();
    w.fromScratch(2, 44100, '24', [
      [4194304, 0, -8388608, 2097152],
      [0, 4194304, -8388608, -2097152],
    ]);
    const back = readWav(w.toBuffer());
    expect(back.sampleRate).toBe(44100);
    expect([...back.samples]).toEqual([0.25, 0.25, -1, 0]);
  });

  it('reads float32, 8-bit unsigned and big-endian RIFX files', () => {
    const f = new wavefile.WaveFile();
    f.fromScratch(1, 48000, '32f', [0.5, -0.25, 1.5]);
    expect([...readWav(f.toBuffer()).samples]).toEqual([0.5, -0.25, 1]);
    const u8 = new wavefile.WaveFile();
    u8.fromScratch(1, 8000, '8', [128, 0, 192]);
    expect([...readWav(u8.toBuffer()).samples]).toEqual([0, -1, 0.5]);
    const rifx = new wavefile.WaveFile();
    rifx.fromScratch(1, 16000, '16', [16384, -8192], { container: 'RIFX' });
    const bytes = rifx.toBuffer();
    expect(Buffer.from(bytes.subarray(0, 4)).toString('latin1')).toBe('RIFX');
    expect([...readWav(bytes).samples]).toEqual([0.5, -0.25]);
  });

  it('reads WAVE_FORMAT_EXTENSIBLE float32 (format from the subformat GUID)', () => {
    const data = Buffer.alloc(12);
    [0.5, -0.125, 0.75].forEach((v, i) => data.writeFloatLE(v, i * 4));
    const fmt = Buffer.alloc(48);
    fmt.write('fmt ', 0, 'latin1');
    fmt.writeUInt32LE(40, 4);
    fmt.writeUInt16LE(0xfffe, 8); // WAVE_FORMAT_EXTENSIBLE
    fmt.writeUInt16LE(1, 10);
    fmt.writeUInt32LE(32000, 12);
    fmt.writeUInt32LE(128000, 16);
    fmt.writeUInt16LE(4, 20);
    fmt.writeUInt16LE(32, 22);
    fmt.writeUInt16LE(22, 24);
    fmt.writeUInt16LE(32, 26);
    fmt.writeUInt32LE(4, 28);
    Buffer.from('0300000000001000800000aa00389b71', 'hex').copy(fmt, 32); // KSDATAFORMAT_SUBTYPE_IEEE_FLOAT
    const body = Buffer.concat([Buffer.from('WAVE', 'latin1'), fmt, Buffer.from('data', 'latin1'), Buffer.from([12, 0, 0, 0]), data]);
    const size = Buffer.alloc(4);
    size.writeUInt32LE(body.length);
    const wav = readWav(Buffer.concat([Buffer.from('RIFF', 'latin1'), size, body]));
    expect(wav.sampleRate).toBe(32000);
    expect([...wav.samples]).toEqual([0.5, -0.125, 0.75]);
  });

  it('keeps the whole frames of a streamed WAV whose sizes say 0xFFFFFFFF', () => {
    const wav = writeWav(sine(1000, 300, 8000), 8000);
    const cut = Buffer.from(wav.subarray(0, 44 + 501)); // half a sample at the end
    cut.writeUInt32LE(0xffffffff, 4);
    cut.writeUInt32LE(0xffffffff, 40);
    const back = readWav(cut);
    expect(back.samples.length).toBe(250);
    expect(back.samples.subarray(0, 250)).toEqual(readWav(wav).samples.subarray(0, 250));
  });

  it('throws AudioFormatError for truncated, malformed and unsupported WAVs', () => {
    const wav = writeWav(sine(100, 300, 8000), 8000);
    expect(() => readWav(wav.subarray(0, 30))).toThrow(AudioFormatError);
    expect(() => readWav(Buffer.from('RIFF\x10\x00\x00\x00WAVEjunkjunkjunk', 'latin1'))).toThrow(/invalid WAV/);
    const adpcm = Buffer.from(wav);
    adpcm.writeUInt16LE(2, 20); // MS ADPCM
    expect(() => readWav(adpcm)).toThrow(/unsupported sample format/);
    const zeroCh = Buffer.from(wav);
    zeroCh.writeUInt16LE(0, 22);
    expect(() => readWav(zeroCh)).toThrow(AudioFormatError);
  });
});

describe('real speech (Asterisk prompt hello-world.wav, 8 kHz int16)', () => {
  const file = readFileSync(HELLO_WORLD);

  it('decodes to 8 kHz mono speech of the right length and level', () => {
    const { sampleRate, samples, format } = decodeAudio(file);
    expect(format).toBe('wav');
    expect(sampleRate).toBe(8000);
    expect(samples.length).toBe((file.length - 44) / 2);
    const rms = Math.sqrt(samples.reduce((s, v) => s + v * v, 0) / samples.length);
    const peak = samples.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    expect(rms).toBeGreaterThan(0.02);
    expect(peak).toBeGreaterThan(0.2);
    expect(peak).toBeLessThanOrEqual(1);
    // the first sample equals the file's first int16
    expect(samples[0]).toBe(file.readInt16LE(44) / 32768);
  });

  it('upsamples to 16 kHz for recognition and back to 8 kHz nearly unchanged', () => {
    const { samples } = readWav(file);
    const up = resample(samples, 8000, 16000);
    expect(up.length).toBe(2 * samples.length);
    const back = resample(up, 16000, 8000);
    expect(back.length).toBe(samples.length);
    // telephone speech has energy right up to 4 kHz; the 0.9-1.0 Nyquist transition band loses only that sliver
    let s = 0, e = 0;
    for (let i = 0; i < samples.length; i++) {
      s += samples[i]! ** 2;
      e += (back[i]! - samples[i]!) ** 2;
    }
    expect(10 * Math.log10(s / e)).toBeGreaterThan(25);
  });
});

describe('raw Opus packets', () => {
  it('decodes a 440 Hz sine at 48 kHz keeping its frequency, one 20 ms frame per packet', () => {
    const x = sine(48000, 440, 48000);
    const packets = encodeOpus(x);
    const y = decodeOpusPackets(packets);
    expect(y.length).toBe(48000);
    expect(zeroCrossingHz(y, 48000, 4800, 43200)).toBeCloseTo(440, 0);
  });

  it('is delayed by the encoder look-ahead (312 samples) and otherwise faithful', () => {
    const x = chirp(48000, 48000);
    const y = decodeOpusPackets(encodeOpus(x));
    const lag = bestLag(x, y, 400, 4800, 40000);
    expect(lag).toBe(312);
    expect(correlation(x, y, lag, 4800, 40000)).toBeGreaterThan(0.99);
  });

  it('throws AudioFormatError for a corrupt packet and skips empty ones', () => {
    const d = new OpusPacketDecoder();
    expect(() => d.decode(Uint8Array.from([0xff, 0xff, 0xff]))).toThrow(AudioFormatError);
    expect(d.decode(new Uint8Array(0)).length).toBe(0);
  });
});

describe('Ogg Opus', () => {
  const N = 47000; // not a whole number of 20 ms frames: the EOS granule trims the end
  const x = chirp(N, 48000);
  // like opusenc, encode enough to cover pre-skip + N (the last packet is zero-padded); about 320 bytes a packet at
  // 128 kbit/s, so one can be split across pages
  const packets = encodeOpus(Float32Array.from({ length: N + 312 }, (_, i) => x[i] ?? 0), 128000);
  const ogg = buildOggOpus(packets, { preSkip: 312, totalSamples: N, splitPacket: 4 });

  it('demuxes pages, reassembles a packet split across pages, honours pre-skip and end trim', () => {
    expect(packets[4]!.length).toBeGreaterThan(255); // the split really splits
    const { sampleRate, samples } = decodeOggOpus(ogg);
    expect(sampleRate).toBe(48000);
    expect(samples.length).toBe(N);
    expect(bestLag(x, samples, 400, 4800, 40000)).toBe(0); // pre-skip removed exactly the look-ahead
    expect(correlation(x, samples, 0, 4800, 40000)).toBeGreaterThan(0.99);
  });

  it('keeps the frequency of a sine', () => {
    const s = sine(48000, 440, 48000);
    const out = decodeOggOpus(buildOggOpus(encodeOpus(s), { preSkip: 312, totalSamples: 48000 })).samples;
    expect(zeroCrossingHz(out, 48000, 4800, 43200)).toBeCloseTo(440, 0);
  });

  it('applies the header output gain', () => {
    const plain = decodeOggOpus(ogg).samples;
    const quieter = decodeOggOpus(buildOggOpus(packets, { preSkip: 312, totalSamples: N, gainQ8: -6 * 256 })).samples;
    const ratio = quieter[10000]! / plain[10000]!;
    expect(ratio).toBeCloseTo(10 ** (-6 / 20), 3);
  });

  it('streams: bytes pushed in odd-sized pieces give the same samples', () => {
    const d = new OggOpusDecoder();
    const parts: number[] = [];
    for (let off = 0, i = 0; off < ogg.length; i++) {
      const n = [1, 7, 26, 300, 4096][i % 5]!;
      parts.push(...d.push(ogg.subarray(off, off + n)));
      off += n;
    }
    d.end();
    expect(d.head?.preSkip).toBe(312);
    expect(Float32Array.from(parts)).toEqual(decodeOggOpus(ogg).samples);
  });

  it('is detected by decodeAudio', () => {
    const out = decodeAudio(ogg);
    expect(out.format).toBe('ogg_opus');
    expect(out.samples.length).toBe(N);
  });

  it('throws AudioFormatError on a CRC mismatch, a bad page, non-Opus streams and a missing head', () => {
    const bad = Buffer.from(ogg);
    bad[bad.length - 10]! ^= 0x40;
    expect(() => decodeOggOpus(bad)).toThrow(/CRC mismatch/);
    const headPage = 27 + 1 + 19;
    expect(() => decodeOggOpus(Buffer.concat([ogg.subarray(0, headPage), Buffer.from('garbage!garbage!garbage!garbage!')]))).toThrow(
      /no page capture pattern/,
    );
    const vorbis = page(0x02, 0n, 7, 0, [30], Buffer.concat([Buffer.from('\x01vorbis', 'latin1'), Buffer.alloc(23)]));
    expect(() => decodeOggOpus(vorbis)).toThrow(/Vorbis, not Opus/);
    const multi = buildOggOpus(packets.slice(0, 3), { preSkip: 312, totalSamples: 2880, channels: 6 });
    expect(() => decodeOggOpus(multi)).toThrow(/channel mapping/);
    expect(() => decodeAudio(Buffer.from('OggS'))).toThrow(AudioFormatError);
  });
});

describe('decodeAudio()', () => {
  const x = sine(1600, 440, 16000);

  it('decodes raw input with encoding and sample rate (linear16 by default)', () => {
    const pcm = decodeAudio(encodeLinear16(x), { sampleRate: 16000 });
    expect(pcm.format).toBe('linear16');
    expect(pcm.sampleRate).toBe(16000);
    expect(pcm.samples.length).toBe(1600);
    expect(pcm.samples[100]).toBeCloseTo(x[100]!, 4);
    const mu = decodeAudio(encodeMuLaw(x), { encoding: 'mulaw', sampleRate: 8000 });
    expect(mu.format).toBe('mulaw');
    expect(mu.samples.length).toBe(1600);
  });

  it('detects WAV whatever the hint says', () => {
    const out = decodeAudio(writeWav(x, 24000), { encoding: 'mulaw', sampleRate: 8000 });
    expect(out.format).toBe('wav');
    expect(out.sampleRate).toBe(24000);
  });

  it('decodes a single raw Opus packet', () => {
    const out = decodeAudio(encodeOpus(sine(960, 440, 48000))[0]!, { encoding: 'opus' });
    expect(out.sampleRate).toBe(48000);
    expect(out.samples.length).toBe(960);
  });

  it.each([
    ['MP3 (ID3)', Buffer.concat([Buffer.from('ID3\x04\x00\x00', 'latin1'), Buffer.alloc(100)]), /MP3 input is not supported.*WAV/],
    ['MP3 (frame sync)', Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(100)]), /MP3 input is not supported/],
    ['FLAC', Buffer.concat([Buffer.from('fLaC', 'latin1'), Buffer.alloc(100)]), /FLAC input is not supported.*Ogg Opus/],
    ['M4A', Buffer.concat([Buffer.from('\x00\x00\x00\x20ftypM4A ', 'latin1'), Buffer.alloc(100)]), /MP4\/M4A input is not supported/],
    ['WebM', Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), Buffer.alloc(100)]), /WebM\/Matroska input is not supported/],
    ['random bytes', Buffer.from(Array.from({ length: 256 }, (_, i) => (i * 73 + 41) & 0xff)), /no sample_rate for raw audio/],
    ['empty input', Buffer.alloc(0), /empty audio/],
  ])('refuses %s with AudioFormatError', (_name, buf, message) => {
    expect(() => decodeAudio(buf)).toThrow(AudioFormatError);
    expect(() => decodeAudio(buf)).toThrow(message);
  });

  it('refuses bad hints', () => {
    expect(() => decodeAudio(encodeLinear16(x), { encoding: 'ogg_opus' })).toThrow(/does not start with an Ogg page/);
    expect(() => decodeAudio(encodeLinear16(x), { encoding: 'flac' as 'opus', sampleRate: 16000 })).toThrow(/unknown encoding "flac"/);
    expect(() => decodeAudio(encodeLinear16(x), { sampleRate: 0 })).toThrow(/invalid sample rate/);
  });
});
