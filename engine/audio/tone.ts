// Beep detection: a sustained narrowband tone (an answering machine's "record after the tone") in mono audio as it
// arrives, on the audio clock. Each 20 ms frame is Hann-windowed and zero-padded to a power of two (31.25 Hz bins at
// 8 and 16 kHz); a frame is tonal when it is loud enough and the strongest peak in the tone band (its bin +-2) holds
// most of the frame's energy. Speech spreads its energy over several harmonics and formants, noise over all bins, so
// neither keeps that ratio for long. A run of tonal frames whose frequency holds (a frequency step between frames
// is allowed: two-tone and ascending beeps) and that lasts minMs..maxMs is a beep; longer tones (dial tone, fax) are not.
// Pure and synchronous: push samples, get the beeps that ended in them.

export interface ToneOptions {
  /** Sample rate of the input (8000 or 16000; any rate works, the frame stays 20 ms). */
  rate: number;
  /** The tone band, Hz. Default 300-2500 (beeps are typically 400-2000 Hz). */
  minHz?: number;
  maxHz?: number;
  /** Share of the frame's energy (100 Hz up to 4 kHz) in the peak, 0..1. Default 0.6. */
  minRatio?: number;
  /** Quietest tonal frame, dBFS RMS. Default -45. */
  minLevelDb?: number;
  /** Shortest and longest beep, ms. Default 120 and 2000. */
  minMs?: number;
  maxMs?: number;
  /** Frequency change between tonal frames still counted as the same tone: relative, and at least `minDriftHz`. Default 0.015 and 12 Hz. */
  maxDrift?: number;
  minDriftHz?: number;
  /** Standard deviation of the frame levels inside a beep (its first and last frame left out), dB. Default 1.5. */
  maxLevelSd?: number;
  /** Non-tonal frames a beep may skip (a noise burst over it). Default 1. */
  maxGapFrames?: number;
}

/** One beep: where it was (ms of audio since the detector's start), its frequency and how clean it was. */
export interface Tone {
  startMs: number;
  endMs: number;
  hz: number;
  /** Mean peak-to-total energy ratio of its frames. */
  ratio: number;
}

export interface FrameTonality {
  /** Frequency of the strongest peak in the tone band, Hz (interpolated). */
  hz: number;
  /** Its share of the frame's energy, 0..1. */
  ratio: number;
  /** Frame RMS, dBFS. */
  levelDb: number;
}

export const TONE_FRAME_MS = 20;
/** Share of a beep's frame-to-frame steps that keep its frequency. */
const STEADY_SHARE = 0.7;

/** In-place iterative radix-2 FFT (re, im of length 2^k). */
function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j]!, re[i]!];
      [im[i], im[j]] = [im[j]!, im[i]!];
    }
  }
  for (let len = 2; len <= n; len <<= 1) {
    const ang = (-2 * Math.PI) / len;
    const wr = Math.cos(ang);
    const wi = Math.sin(ang);
    for (let i = 0; i < n; i += len) {
      let cr = 1;
      let ci = 0;
      for (let k = 0; k < len / 2; k++) {
        const a = i + k;
        const b = a + len / 2;
        const tr = re[b]! * cr - im[b]! * ci;
        const ti = re[b]! * ci + im[b]! * cr;
        re[b] = re[a]! - tr;
        im[b] = im[a]! - ti;
        re[a] = re[a]! + tr;
        im[a] = im[a]! + ti;
        const t = cr * wr - ci * wi;
        ci = cr * wi + ci * wr;
        cr = t;
      }
    }
  }
}

/** Measures one frame's tonality (pure; `frame` is any length up to the FFT size the rate gives). */
export class TonalityMeter {
  readonly size: number;
  private readonly window: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  private readonly lo: number;
  private readonly hi: number;
  private readonly totalLo: number;
  private readonly totalHi: number;

  constructor(
    readonly rate: number,
    frameSamples: number,
    minHz = 300,
    maxHz = 2500,
  ) {
    let size = 1;
    while (size < frameSamples || rate / size > 32) size <<= 1;
    this.size = size;
    this.window = new Float64Array(frameSamples);
    for (let i = 0; i < frameSamples; i++) this.window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * (i + 0.5)) / frameSamples);
    this.re = new Float64Array(size);
    this.im = new Float64Array(size);
    const bin = (hz: number) => Math.round((hz * size) / rate);
    this.lo = Math.max(2, bin(minHz));
    this.hi = Math.min(size / 2 - 3, bin(maxHz));
    this.totalLo = Math.max(1, bin(100));
    this.totalHi = Math.min(size / 2, bin(4000));
  }

  measure(frame: Float32Array): FrameTonality {
    const { re, im, window, size } = this;
    let sq = 0;
    for (let i = 0; i < size; i++) {
      const v = i < frame.length ? (frame[i] as number) : 0;
      sq += v * v;
      re[i] = i < window.length ? v * (window[i] as number) : 0;
      im[i] = 0;
    }
    const levelDb = 10 * Math.log10(sq / Math.max(1, frame.length) + 1e-12);
    fft(re, im);
    const power = (k: number) => (re[k] as number) ** 2 + (im[k] as number) ** 2;
    let total = 0;
    for (let k = this.totalLo; k <= this.totalHi; k++) total += power(k);
    // The strongest peak of the whole band: a voice whose fundamental lies under the tone band leaks into its edge.
    let peak = Math.max(2, this.totalLo);
    for (let k = peak + 1; k <= Math.min(this.totalHi, this.size / 2 - 3); k++) if (power(k) > power(peak)) peak = k;
    if (peak < this.lo || peak > this.hi) return { hz: (peak * this.rate) / size, ratio: 0, levelDb: 10 * Math.log10(sq / Math.max(1, frame.length) + 1e-12) };
    let near = 0;
    for (let k = peak - 2; k <= peak + 2; k++) near += power(k);
    // Parabolic interpolation on the log magnitudes around the peak.
    const [a, b, c] = [Math.log(power(peak - 1) + 1e-20), Math.log(power(peak) + 1e-20), Math.log(power(peak + 1) + 1e-20)];
    const den = a - 2 * b + c;
    const offset = den < 0 ? Math.max(-0.5, Math.min(0.5, (0.5 * (a - c)) / den)) : 0;
    return { hz: ((peak + offset) * this.rate) / size, ratio: total > 0 ? Math.min(1, near / total) : 0, levelDb };
  }
}

/** Streaming beep detector: push audio in order, get the beeps that ended. */
export class ToneDetector {
  private readonly frameSamples: number;
  private readonly meter: TonalityMeter;
  private readonly opts: Required<ToneOptions>;
  private readonly pending: Float32Array;
  private pendingLength = 0;
  /** Frames measured so far. */
  private frames = 0;
  /** The run of tonal frames being followed: first frame, last tonal frame, frequency, ratios. */
  private run: { first: number; last: number; hz: number; ratioSum: number; tonal: number; steady: number; levels: number[] } | null = null;

  constructor(opts: ToneOptions) {
    this.opts = { minHz: 300, maxHz: 2500, minRatio: 0.6, minLevelDb: -45, minMs: 120, maxMs: 2000, maxDrift: 0.015, minDriftHz: 12, maxLevelSd: 1.5, maxGapFrames: 1, ...opts };
    this.frameSamples = Math.round((opts.rate * TONE_FRAME_MS) / 1000);
    this.pending = new Float32Array(this.frameSamples);
    this.meter = new TonalityMeter(opts.rate, this.frameSamples, this.opts.minHz, this.opts.maxHz);
  }

  /** A tone is going on now (two tonal frames or more, and not yet too long to be a beep). */
  get active(): boolean {
    const r = this.run;
    return r !== null && r.tonal >= 2 && (r.last - r.first + 1) * TONE_FRAME_MS <= this.opts.maxMs;
  }

  /** Audio measured so far, ms. */
  get heardMs(): number {
    return this.frames * TONE_FRAME_MS;
  }

  /** Feeds samples; returns the beeps that ended within them (in order). */
  push(samples: Float32Array): Tone[] {
    const out: Tone[] = [];
    let offset = 0;
    while (offset < samples.length) {
      const take = Math.min(this.frameSamples - this.pendingLength, samples.length - offset);
      this.pending.set(samples.subarray(offset, offset + take), this.pendingLength);
      this.pendingLength += take;
      offset += take;
      if (this.pendingLength < this.frameSamples) break;
      this.pendingLength = 0;
      const tone = this.frame(this.meter.measure(this.pending));
      if (tone) out.push(tone);
    }
    return out;
  }

  /** Ends the input: a beep still going on at the end is returned if it is long enough. */
  flush(): Tone[] {
    const tone = this.close();
    this.run = null;
    return tone ? [tone] : [];
  }

  private frame(t: FrameTonality): Tone | null {
    const f = this.frames++;
    const { minRatio, minLevelDb, maxDrift, minDriftHz, maxGapFrames } = this.opts;
    const tonal = t.levelDb >= minLevelDb && t.ratio >= minRatio;
    const r = this.run;
    if (tonal) {
      if (r && f - r.last - 1 <= maxGapFrames) {
        // The same tone, or a step to the next tone of a multi-tone beep right after it.
        const same = Math.abs(t.hz - r.hz) <= Math.max(minDriftHz, maxDrift * r.hz);
        if (same || f === r.last + 1) {
          r.last = f;
          r.hz = t.hz;
          r.ratioSum += t.ratio;
          r.tonal++;
          r.levels.push(t.levelDb);
          if (same) r.steady++;
          return null;
        }
      }
      const ended = this.close();
      this.run = { first: f, last: f, hz: t.hz, ratioSum: t.ratio, tonal: 1, steady: 0, levels: [t.levelDb] };
      return ended;
    }
    if (r && f - r.last > maxGapFrames) {
      const ended = this.close();
      this.run = null;
      return ended;
    }
    return null;
  }

  /** The run followed so far as a beep, if it qualifies. */
  private close(): Tone | null {
    const r = this.run;
    if (!r) return null;
    const ms = (r.last - r.first + 1) * TONE_FRAME_MS;
    // Mostly one frequency: a beep may step to a second tone, a voice glides through many.
    if (ms < this.opts.minMs || ms > this.opts.maxMs || r.steady < STEADY_SHARE * (r.tonal - 1)) return null;
    // A steady level: a beep is switched on and off, a voice swells and fades.
    const inner = r.levels.length > 4 ? r.levels.slice(1, -1) : r.levels;
    const mean = inner.reduce((a, v) => a + v, 0) / inner.length;
    const sd = Math.sqrt(inner.reduce((a, v) => a + (v - mean) ** 2, 0) / inner.length);
    if (sd > this.opts.maxLevelSd) return null;
    return { startMs: r.first * TONE_FRAME_MS, endMs: (r.last + 1) * TONE_FRAME_MS, hz: Math.round(r.hz), ratio: r.ratioSum / r.tonal };
  }
}
