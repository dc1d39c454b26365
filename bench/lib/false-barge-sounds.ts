// Sounds a caller makes that are not a turn, made here from seeded noise (no recordings), for the barge-in bench's
// false set: coughs (single and double), breaths, and noises (door knocks, a burst of street noise, keyboard clicks).
// One generator per kind; each returns mono float samples at the rate asked for, starting at the sound's first sample.
// Backchannels ("mm-hmm", "okay") are speech: bench/lib/caller-clips.ts synthesises them.

export { mulberry32, type Rng } from '../../engine/random.js';
import { mulberry32, type Rng } from '../../engine/random.js';

/** A 32-bit seed from any parts (FNV-1a over their text): the same parts give the same sound or delay on both sides. */
export function seedOf(...parts: (string | number)[]): number {
  let h = 0x811c9dc5;
  for (const ch of parts.join('|')) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}

/**
 * A generator of its own for per-sample randomness, seeded from one draw of `rng`: a sound's parameters (lengths,
 * frequencies, counts) then take the same draws at every rate, so both sides of the bench get the same sound.
 */
const fork = (rng: Rng): Rng => mulberry32(Math.floor(rng() * 4294967296));
const between = (rng: Rng, lo: number, hi: number) => lo + (hi - lo) * rng();
/** Standard normal (Box-Muller). */
const gauss = (rng: Rng) => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
const db = (x: number) => 10 ** (x / 20);

/** A second-order section (RBJ cookbook), run over a whole signal. */
function biquad(x: Float32Array, type: 'bandpass' | 'lowpass' | 'highpass', f0: number, q: number, rate: number): Float32Array {
  const w = (2 * Math.PI * Math.min(f0, rate * 0.45)) / rate;
  const alpha = Math.sin(w) / (2 * q);
  const cos = Math.cos(w);
  const [b0, b1, b2] =
    type === 'bandpass' ? [alpha, 0, -alpha] : type === 'lowpass' ? [(1 - cos) / 2, 1 - cos, (1 - cos) / 2] : [(1 + cos) / 2, -(1 + cos), (1 + cos) / 2];
  const a0 = 1 + alpha;
  const a1 = -2 * cos;
  const a2 = 1 - alpha;
  const out = new Float32Array(x.length);
  let x1 = 0, x2 = 0, y1 = 0, y2 = 0;
  for (let i = 0; i < x.length; i++) {
    const y = (b0 * x[i]! + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2) / a0;
    x2 = x1;
    x1 = x[i]!;
    y2 = y1;
    y1 = y;
    out[i] = y;
  }
  return out;
}

const whiteNoise = (rng: Rng, n: number) => Float32Array.from({ length: n }, () => gauss(rng));

/** Pink noise (Paul Kellet's filter over white noise). */
function pinkNoise(rng: Rng, n: number): Float32Array {
  const out = new Float32Array(n);
  let b0 = 0, b1 = 0, b2 = 0, b3 = 0, b4 = 0, b5 = 0, b6 = 0;
  for (let i = 0; i < n; i++) {
    const w = gauss(rng);
    b0 = 0.99886 * b0 + w * 0.0555179;
    b1 = 0.99332 * b1 + w * 0.0750759;
    b2 = 0.969 * b2 + w * 0.153852;
    b3 = 0.8665 * b3 + w * 0.3104856;
    b4 = 0.55 * b4 + w * 0.5329522;
    b5 = -0.7616 * b5 - w * 0.016898;
    out[i] = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w * 0.5362;
    b6 = w * 0.115926;
  }
  return out;
}

/** Scales x so its RMS (over the whole signal) is `dbfs`. */
function atRms(x: Float32Array, dbfs: number): Float32Array {
  let e = 0;
  for (const v of x) e += v * v;
  const g = e ? db(dbfs) / Math.sqrt(e / x.length) : 0;
  return x.map((v) => Math.max(-1, Math.min(1, v * g)));
}

/** Scales x so its peak is `dbfs`. */
function atPeak(x: Float32Array, dbfs: number): Float32Array {
  let peak = 0;
  for (const v of x) peak = Math.max(peak, Math.abs(v));
  const g = peak ? db(dbfs) / peak : 0;
  return x.map((v) => v * g);
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * One cough, 150-350 ms: a 60-120 ms attack (a 6 ms rise, then a slow fall) of band-passed noise (a low and a high
 * band) with a voiced component (a jittered glottal pulse train at 180-320 Hz through a 600 Hz formant), then an
 * exponential decay to the end.
 */
function oneCough(rng: Rng, rate: number): Float32Array {
  const n = Math.round(between(rng, 0.15, 0.35) * rate);
  const attack = Math.round(between(rng, 0.06, 0.12) * rate);
  const rise = Math.round(0.006 * rate);
  const lowBand = biquad(whiteNoise(fork(rng), n), 'bandpass', between(rng, 700, 1500), 0.8, rate);
  const highBand = biquad(whiteNoise(fork(rng), n), 'bandpass', between(rng, 2200, 3000), 1.5, rate);
  const pulses = new Float32Array(n);
  const f0 = between(rng, 180, 320);
  const jitter = fork(rng);
  for (let t = 0; t < n; t += Math.max(1, Math.round((rate / f0) * (1 + 0.08 * gauss(jitter))))) pulses[t] = 1;
  const voiced = biquad(biquad(pulses, 'bandpass', 600, 2, rate), 'lowpass', 1800, 0.7, rate);
  const high = atRms(highBand, -20);
  const voice = atRms(voiced, -20);
  const mix = atRms(lowBand, -20).map((v, i) => v + 0.5 * high[i]! + 0.6 * voice[i]!);
  const tail = n - attack;
  for (let i = 0; i < n; i++) {
    const env = i < rise ? i / rise : i < attack ? 1 - (0.3 * (i - rise)) / (attack - rise) : 0.7 * Math.exp((-4 * (i - attack)) / Math.max(1, tail));
    mix[i] = mix[i]! * env;
  }
  return mix;
}

/** A cough (variant 0) or a double cough (variant 1: a weaker second one 60-180 ms after the first), RMS -16 dBFS. */
export function cough(rng: Rng, rate: number, variant: number): Float32Array {
  const first = oneCough(rng, rate);
  if (variant % 2 === 0) return atRms(first, -16);
  const gap = new Float32Array(Math.round(between(rng, 0.06, 0.18) * rate));
  return atRms(concat([first, gap, oneCough(rng, rate).map((v) => v * 0.8)]), -16);
}

/** A breath, 300-600 ms: band-passed noise at a low level (RMS -36 dBFS), a slow raised-cosine rise and fall. */
export function breath(rng: Rng, rate: number): Float32Array {
  const n = Math.round(between(rng, 0.3, 0.6) * rate);
  const band = biquad(biquad(whiteNoise(fork(rng), n), 'bandpass', between(rng, 900, 1600), 0.7, rate), 'lowpass', 3000, 0.7, rate);
  const peakAt = between(rng, 0.35, 0.6);
  for (let i = 0; i < n; i++) {
    const u = i / n;
    const phase = u < peakAt ? u / peakAt : (1 - u) / (1 - peakAt);
    band[i] = band[i]! * Math.sin((Math.PI / 2) * phase) ** 2;
  }
  return atRms(band, -36);
}

/** 2-4 knocks on a door 140-260 ms apart: each a click and two damped resonances (120-220 Hz, 450-700 Hz); peak -8 dBFS. */
function knocks(rng: Rng, rate: number): Float32Array {
  const count = 2 + Math.floor(rng() * 3);
  const parts: Float32Array[] = [];
  for (let k = 0; k < count; k++) {
    const n = Math.round(between(rng, 0.14, 0.26) * rate);
    const x = new Float32Array(n);
    const lo = between(rng, 120, 220);
    const hi = between(rng, 450, 700);
    const gain = between(rng, 0.7, 1);
    for (let i = 0; i < n; i++) {
      const t = i / rate;
      x[i] = gain * (Math.sin(2 * Math.PI * lo * t) * Math.exp(-t / 0.025) + 0.6 * Math.sin(2 * Math.PI * hi * t) * Math.exp(-t / 0.012));
    }
    const click = Math.round(0.003 * rate);
    const hiss = fork(rng);
    for (let i = 0; i < click; i++) x[i] = x[i]! + gain * 0.8 * gauss(hiss) * (1 - i / click);
    parts.push(x);
  }
  return atPeak(concat(parts), -8);
}

/** 400 ms of street noise: pink noise with a low-passed rumble, 30 ms fades, at a moderate level (RMS -28 dBFS). */
function streetBurst(rng: Rng, rate: number): Float32Array {
  const n = Math.round(0.4 * rate);
  const rumble = atRms(biquad(whiteNoise(fork(rng), n), 'lowpass', 150, 0.7, rate), -20);
  const x = atRms(pinkNoise(fork(rng), n), -20).map((v, i) => v + 0.7 * rumble[i]!);
  const fade = Math.round(0.03 * rate);
  for (let i = 0; i < fade; i++) {
    x[i] = x[i]! * (i / fade);
    x[n - 1 - i] = x[n - 1 - i]! * (i / fade);
  }
  return atRms(x, -28);
}

/** Typing: 8-12 key clicks 70-160 ms apart, each a 4-8 ms high-passed noise burst over a short 300 Hz thock; peak -18 dBFS. */
function keyboard(rng: Rng, rate: number): Float32Array {
  const count = 8 + Math.floor(rng() * 5);
  const parts: Float32Array[] = [];
  for (let k = 0; k < count; k++) {
    const n = Math.round(between(rng, 0.07, 0.16) * rate);
    const burst = Math.round(between(rng, 0.004, 0.008) * rate);
    const hiss = biquad(whiteNoise(fork(rng), n), 'highpass', Math.min(2000, rate * 0.3), 0.7, rate);
    const gain = between(rng, 0.5, 1);
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const t = i / rate;
      x[i] = gain * ((i < burst * 3 ? hiss[i]! * Math.exp(-i / burst) : 0) + 0.4 * Math.sin(2 * Math.PI * 300 * t) * Math.exp(-t / 0.006));
    }
    parts.push(x);
  }
  return atPeak(concat(parts), -18);
}

export const NOISE_VARIANTS = ['door knocks', 'street noise', 'keyboard'] as const;

/** Noise variant `variant` (cycling through NOISE_VARIANTS). */
export function noise(rng: Rng, rate: number, variant: number): Float32Array {
  const which = NOISE_VARIANTS[variant % NOISE_VARIANTS.length];
  return which === 'door knocks' ? knocks(rng, rate) : which === 'street noise' ? streetBurst(rng, rate) : keyboard(rng, rate);
}
