// Prosody of the caller's speech before a pause, for the end-of-turn decision: pitch (F0) movement at the phrase end,
// energy decay and final lengthening. Fed one 32 ms VAD window (512 samples at 16 kHz) at a time; analyses 16 ms
// frames (YIN on a 2:1 decimated signal, 60-400 Hz), about 0.05 ms per window. Pure, no models.

const SR = 16000;
const WIN = 512;
/** Frames per VAD window (16 ms hop). */
const FRAMES_PER_WIN = 2;
const HOP = WIN / FRAMES_PER_WIN;
/** Analysis frame at 8 kHz: 32 ms (the current 16 ms hop and the one before it). */
const N8 = 256;
const MIN_LAG = Math.floor(8000 / 400);
const MAX_LAG = Math.ceil(8000 / 60);
const YIN_THRESHOLD = 0.2;
/** Frames kept: about 65 s. */
const CAPACITY = 4096;
const FRAME_MS = (HOP * 1000) / SR;

export interface ProsodyFeatures {
  /** F0 at the end (median of the last 3 voiced frames) against the turn's median, semitones. */
  f0End: number;
  /** F0 slope over the last 300 ms of voiced frames, semitones per second. */
  f0Slope: number;
  /** Energy at the end (last 3 voiced frames) against the turn's median voiced energy, dB. */
  energyEnd: number;
  /** Energy slope over the last 300 ms of speech frames, dB per second. */
  energySlope: number;
  /** log2 of the last voiced run's length over the turn's median run length (final lengthening > 0). */
  finalLengthening: number;
  /** Voiced share of the frames in the last 200 ms. */
  voicedEnd: number;
  /** F0 at the end against the turn's low (10th percentile), semitones: a final fall ends near the speaker's floor. */
  f0Floor: number;
  /** The turn's F0 range (90th less 10th percentile), semitones: a flat voice's small fall counts for more. */
  f0Range: number;
  /** Voiced frames the turn had (few: the features are unreliable). */
  voicedFrames: number;
}

/** Features that say nothing (too little voiced speech). */
export const NEUTRAL_PROSODY: ProsodyFeatures = { f0End: 0, f0Slope: 0, energyEnd: 0, energySlope: 0, finalLengthening: 0, voicedEnd: 0, f0Floor: 0, f0Range: 0, voicedFrames: 0 };

export class ProsodyTracker {
  private readonly f0 = new Float32Array(CAPACITY);
  private readonly db = new Float32Array(CAPACITY);
  /** Frames pushed so far (absolute index; frame k lives at k % CAPACITY). */
  private frames = 0;
  /** The previous hop at 8 kHz (the first half of the next analysis frame). */
  private readonly prev8 = new Float32Array(N8 / 2);
  private readonly buf8 = new Float32Array(N8);
  private readonly diff = new Float32Array(MAX_LAG + 1);

  /** Analyses the next VAD window (512 samples at 16 kHz). */
  push(window: Float32Array): void {
    for (let h = 0; h < FRAMES_PER_WIN; h++) {
      const off = h * HOP;
      // Decimate 2:1 with a two-tap average (enough for pitch below 400 Hz).
      this.buf8.set(this.prev8, 0);
      let e = 0;
      for (let i = 0; i < N8 / 2; i++) {
        const a = (window[off + 2 * i] ?? 0) as number;
        const b = (window[off + 2 * i + 1] ?? 0) as number;
        const v = (a + b) / 2;
        this.buf8[N8 / 2 + i] = v;
        e += a * a + b * b;
      }
      this.prev8.set(this.buf8.subarray(N8 / 2));
      const k = this.frames % CAPACITY;
      this.db[k] = 10 * Math.log10(e / HOP + 1e-10);
      this.f0[k] = this.db[k]! > -55 ? this.pitch() : 0;
      this.frames++;
    }
  }

  /** YIN on buf8: the F0 in Hz, 0 when unvoiced. */
  private pitch(): number {
    const x = this.buf8;
    const d = this.diff;
    const W = N8 - MAX_LAG;
    let running = 0;
    d[0] = 1;
    let best = -1;
    for (let tau = 1; tau <= MAX_LAG; tau++) {
      let s = 0;
      for (let i = 0; i < W; i++) {
        const v = (x[i] as number) - (x[i + tau] as number);
        s += v * v;
      }
      running += s;
      d[tau] = running > 0 ? (s * tau) / running : 1;
    }
    for (let tau = MIN_LAG; tau <= MAX_LAG; tau++) {
      if ((d[tau] as number) < YIN_THRESHOLD) {
        while (tau + 1 <= MAX_LAG && (d[tau + 1] as number) < (d[tau] as number)) tau++;
        best = tau;
        break;
      }
    }
    if (best < 0) return 0;
    // Parabolic interpolation around the dip.
    const a = d[best - 1] as number;
    const b = d[best] as number;
    const c = (d[best + 1] ?? b) as number;
    const den = a - 2 * b + c;
    const shift = den !== 0 ? Math.max(-0.5, Math.min(0.5, (a - c) / (2 * den))) : 0;
    return 8000 / (best + shift);
  }

  /** Features of the speech in windows [fromWindow, toWindow) (toWindow: the pause's first silent window). */
  features(fromWindow: number, toWindow: number): ProsodyFeatures {
    const lo = Math.max(fromWindow * FRAMES_PER_WIN, this.frames - CAPACITY + 1, 0);
    const hi = Math.min(toWindow * FRAMES_PER_WIN, this.frames);
    const semis: number[] = [];
    const dbs: number[] = [];
    const runs: number[] = [];
    let run = 0;
    for (let k = lo; k < hi; k++) {
      const f = this.f0[k % CAPACITY] as number;
      if (f > 0) {
        semis.push(12 * Math.log2(f / 100));
        dbs.push(this.db[k % CAPACITY] as number);
        run++;
      } else if (run > 0) {
        runs.push(run);
        run = 0;
      }
    }
    if (semis.length < 6) return { ...NEUTRAL_PROSODY, voicedFrames: semis.length };
    // The last voiced run: from the last voiced frame back (a run still open at the pause counts).
    let end = hi - 1;
    while (end >= lo && (this.f0[end % CAPACITY] as number) === 0) end--;
    let start = end;
    while (start - 1 >= lo && (this.f0[(start - 1) % CAPACITY] as number) > 0) start--;
    const lastRun = end - start + 1;
    if (run > 0) runs.push(run);
    const sorted = [...semis].sort((a, b) => a - b);
    const medSemi = quantileOf(sorted, 0.5);
    const lowSemi = quantileOf(sorted, 0.1);
    const medDb = median(dbs);
    const lastSemis: number[] = [];
    const lastDbs: number[] = [];
    for (let k = end; k >= lo && lastSemis.length < 3; k--) {
      const f = this.f0[k % CAPACITY] as number;
      if (f > 0) {
        lastSemis.push(12 * Math.log2(f / 100));
        lastDbs.push(this.db[k % CAPACITY] as number);
      }
    }
    const span = Math.round(300 / FRAME_MS);
    const tail = Math.max(lo, end + 1 - span);
    const fx: number[] = [];
    const fy: number[] = [];
    const ex: number[] = [];
    const ey: number[] = [];
    for (let k = tail; k <= end; k++) {
      const f = this.f0[k % CAPACITY] as number;
      const d = this.db[k % CAPACITY] as number;
      if (f > 0) {
        fx.push((k * FRAME_MS) / 1000);
        fy.push(12 * Math.log2(f / 100));
      }
      if (d > medDb - 30) {
        ex.push((k * FRAME_MS) / 1000);
        ey.push(d);
      }
    }
    const recent = Math.round(200 / FRAME_MS);
    let voicedRecent = 0;
    for (let k = Math.max(lo, hi - recent); k < hi; k++) if ((this.f0[k % CAPACITY] as number) > 0) voicedRecent++;
    const medRun = runs.length ? median(runs) : lastRun;
    const endSemi = median(lastSemis);
    return {
      f0End: endSemi - medSemi,
      f0Slope: clamp(slope(fx, fy), -60, 60),
      energyEnd: median(lastDbs) - medDb,
      energySlope: clamp(slope(ex, ey), -200, 200),
      finalLengthening: Math.log2(lastRun / Math.max(1, medRun)),
      voicedEnd: voicedRecent / Math.max(1, Math.min(recent, hi - lo)),
      f0Floor: endSemi - lowSemi,
      f0Range: quantileOf(sorted, 0.9) - lowSemi,
      voicedFrames: semis.length,
    };
  }
}

/** Linear-interpolated quantile of an ascending array. */
function quantileOf(sorted: number[], q: number): number {
  const at = q * (sorted.length - 1);
  const i = Math.floor(at);
  const lo = sorted[i] as number;
  return lo + ((sorted[Math.min(i + 1, sorted.length - 1)] as number) - lo) * (at - i);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** Least-squares slope of y over x (0 with fewer than 3 points). */
function slope(x: number[], y: number[]): number {
  const n = x.length;
  if (n < 3) return 0;
  let sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (let i = 0; i < n; i++) {
    sx += x[i] as number;
    sy += y[i] as number;
    sxx += (x[i] as number) ** 2;
    sxy += (x[i] as number) * (y[i] as number);
  }
  const den = n * sxx - sx * sx;
  return den > 0 ? (n * sxy - sx * sy) / den : 0;
}

const clamp = (v: number, lo: number, hi: number) => Math.max(lo, Math.min(hi, v));
