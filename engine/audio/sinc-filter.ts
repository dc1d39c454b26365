// Polyphase Kaiser-windowed-sinc filter banks for rational resampling (designed once per rate pair, cached).

/**
 * Quality presets: stopband attenuation in dB and passband edge as a fraction of the lower Nyquist; the stopband
 * always starts at the lower Nyquist (no aliasing into the band). See resample.ts for the measured figures.
 */
export const RESAMPLE_QUALITIES = {
  high: { attenuationDb: 140, passband: 0.92 },
  fast: { attenuationDb: 100, passband: 0.9 },
} as const;
export type ResampleQuality = keyof typeof RESAMPLE_QUALITIES;

/** Largest number of phases (output rate / gcd) we build a table for; covers every pair of the common rates. */
const MAX_PHASES = 4096;

export interface FilterBank {
  /** Output steps per input step is up/down (both reduced by their gcd). */
  up: number;
  down: number;
  /** Taps per phase (a multiple of 4). Output k uses inputs i - half + 1 .. i + half where i = floor(k * down / up). */
  taps: number;
  half: number;
  /** up * taps coefficients, phase-major: coefs[p * taps + j] weighs input i - half + 1 + j for phase p. */
  coefs: Float64Array;
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Zeroth-order modified Bessel function of the first kind (series; converges fast for beta <= 20). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 200; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

function kaiserBeta(attenuationDb: number): number {
  const a = attenuationDb;
  if (a > 50) return 0.1102 * (a - 8.7);
  if (a >= 21) return 0.5842 * (a - 21) ** 0.4 + 0.07886 * (a - 21);
  return 0;
}

const cache = new Map<string, FilterBank>();

/** The polyphase bank resampling `fromRate` to `toRate` (positive integers) at `quality`. */
export function filterBank(fromRate: number, toRate: number, quality: ResampleQuality = 'high'): FilterBank {
  const key = `${fromRate}:${toRate}:${quality}`;
  const hit = cache.get(key);
  if (hit) return hit;
  if (!Number.isInteger(fromRate) || !Number.isInteger(toRate) || fromRate <= 0 || toRate <= 0) {
    throw new RangeError(`sample rates must be positive integers, got ${fromRate} -> ${toRate}`);
  }
  const preset = RESAMPLE_QUALITIES[quality];
  if (preset === undefined) throw new RangeError(`unknown resample quality "${quality}"`);
  const { attenuationDb: attenuation, passband: pass } = preset;
  const g = gcd(fromRate, toRate);
  const up = toRate / g;
  const down = fromRate / g;
  if (up > MAX_PHASES) throw new RangeError(`rate pair ${fromRate} -> ${toRate} needs ${up} filter phases (max ${MAX_PHASES})`);

  // Everything in input-sample units. Lower Nyquist as a fraction of the input Nyquist:
  const lowNyq = Math.min(fromRate, toRate) / fromRate;
  const cutoff = ((pass + 1) / 2) * lowNyq; // -6 dB point, halfway through the transition
  const transition = ((1 - pass) / 2) * lowNyq; // in cycles per input sample
  const span = (attenuation - 7.95) / (14.36 * transition); // Kaiser's length estimate, in input samples
  const half = 2 * Math.ceil((span / 2 + 1) / 2); // even, so taps is a multiple of 4 (the inner loop is unrolled by 4)
  const taps = 2 * half;
  const beta = kaiserBeta(attenuation);
  const i0Beta = besselI0(beta);

  const coefs = new Float64Array(up * taps);
  for (let p = 0; p < up; p++) {
    let sum = 0;
    for (let j = 0; j < taps; j++) {
      const t = p / up + half - 1 - j; // time from input tap to output instant, in input samples
      const u = t / half;
      const w = Math.abs(u) >= 1 ? 0 : besselI0(beta * Math.sqrt(1 - u * u)) / i0Beta;
      const x = Math.PI * cutoff * t;
      const sinc = t === 0 ? cutoff : (cutoff * Math.sin(x)) / x;
      const h = sinc * w;
      coefs[p * taps + j] = h;
      sum += h;
    }
    for (let j = 0; j < taps; j++) coefs[p * taps + j]! /= sum; // unity DC gain in every phase
  }
  const bank: FilterBank = { up, down, taps, half, coefs };
  cache.set(key, bank);
  return bank;
}
