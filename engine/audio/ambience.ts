// Background ambiences for agent calls (the agent's `backgroundSound`): generated here, not recorded (nothing to
// download, store or license), from a fixed seed per kind, so every call of a kind hears the same loop.
//
// Each kind is rendered once per output rate as a LOOP_SECONDS loop (cached for the process) whose end is crossfaded
// into its start with an equal-power fade (the parts are uncorrelated noise-like sounds, so the level holds through the
// fade): played back to back it has no click and no level dip. The whole loop is normalised to AMBIENCE_DBFS RMS.
//
// - office: ventilation rumble, a distant murmur of two or three voices, bursts of keyboard typing.
// - cafe: a room of voices (six, some near), cups and cutlery clinking now and then, rumble.
// - call_center: many voices close by (other agents on their calls), a mains hum with harmonics, some typing.
// - static: a light band-limited hiss (about 800 Hz to 5 kHz) with a slow shimmer.
//
// Murmur is speech-shaped noise: noise through two formant-like band-passes per voice, amplitude-modulated by a syllable
// envelope (120-320 ms syllables in phrases of 1-5 s with pauses between), so it has speech's rhythm without words.
//
// Level: -35 dBFS RMS. The agent's speech (Flite) runs at -14 to -16 dBFS RMS, so the ambience sits about 20 dB below
// it: plainly audible between the agent's words, far below where a listener's understanding suffers (speech in babble
// stays fully intelligible to people above about +10 dB SNR). Checked against our own recognizer as a stricter
// listener: Whisper on three Flite sentences mixed with each ambience gives the clean transcripts at -35 dBFS except one
// word pair in one sentence under `cafe`; at -33 dBFS `office` and `cafe` each lose that pair, at -30 more words go.
import { Worker } from 'node:worker_threads';
import { mulberry32, type Rng } from '../random.js';

export const BACKGROUND_SOUNDS = ['office', 'cafe', 'call_center', 'static'] as const;
export type BackgroundSound = (typeof BACKGROUND_SOUNDS)[number];

/** RMS level of every ambience over its loop, dBFS (full scale = 1.0). */
export const AMBIENCE_DBFS = -35;
const LOOP_SECONDS = 12;
const FADE_SECONDS = 0.5;
const SEEDS: Record<BackgroundSound, number> = { office: 0x0ff1ce, cafe: 0xcafe, call_center: 0xca11, static: 0x57a7 };

export function isBackgroundSound(v: unknown): v is BackgroundSound {
  return typeof v === 'string' && (BACKGROUND_SOUNDS as readonly string[]).includes(v);
}

const between = (rng: Rng, lo: number, hi: number) => lo + (hi - lo) * rng();

/** RBJ biquad, applied in place. Cut-offs are kept below 0.45 of the rate (an 8 kHz call has no 5 kHz). */
function biquad(x: Float32Array, rate: number, type: 'lowpass' | 'highpass' | 'bandpass', freq: number, q = Math.SQRT1_2): Float32Array {
  const w = (2 * Math.PI * Math.min(freq, 0.45 * rate)) / rate;
  const cos = Math.cos(w);
  const alpha = Math.sin(w) / (2 * q);
  let b0: number, b1: number, b2: number;
  if (type === 'lowpass') [b0, b1, b2] = [(1 - cos) / 2, 1 - cos, (1 - cos) / 2];
  else if (type === 'highpass') [b0, b1, b2] = [(1 + cos) / 2, -(1 + cos), (1 + cos) / 2];
  else [b0, b1, b2] = [alpha, 0, -alpha];
  const a0 = 1 + alpha;
  const [c0, c1, c2, d1, d2] = [b0 / a0, b1 / a0, b2 / a0, (-2 * cos) / a0, (1 - alpha) / a0];
  let x1 = 0, x2 = 0, y1 = 0, y2 = 0;
  for (let i = 0; i < x.length; i++) {
    const x0 = x[i]!;
    const y0 = c0 * x0 + c1 * x1 + c2 * x2 - d1 * y1 - d2 * y2;
    x2 = x1;
    x1 = x0;
    y2 = y1;
    y1 = y0;
    x[i] = y0;
  }
  return x;
}

function noise(rng: Rng, n: number): Float32Array {
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = rng() * 2 - 1;
  return x;
}

function rmsOf(x: Float32Array): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
  return Math.sqrt(s / Math.max(1, x.length));
}

/** Adds `part` into `into`, scaled to `rms` (relative level). */
function addAt(into: Float32Array, part: Float32Array, rms: number): void {
  const g = rms / (rmsOf(part) || 1);
  for (let i = 0; i < into.length; i++) into[i]! += part[i]! * g;
}

/** Low rumble (ventilation, a room): noise below ~150 Hz. */
function rumble(rng: Rng, n: number, rate: number): Float32Array {
  return biquad(biquad(noise(rng, n), rate, 'lowpass', 160), rate, 'highpass', 30);
}

/** sin² over half a cycle, tabulated (a syllable's envelope, looked up for every sample of every voice). */
const SYLLABLE = Float32Array.from({ length: 1024 }, (_, k) => Math.sin((Math.PI * k) / 1024) ** 2);

/**
 * One voice of murmur: formant-shaped noise in syllables and phrases (not yet low-passed: murmur() does it once).
 * `white` is shared by the voices, each reading it from its own offset (uncorrelated, and rendered once).
 */
function voice(rng: Rng, white: Float32Array, rate: number): Float32Array {
  const n = white.length;
  const at = Math.floor(rng() * n);
  const src = new Float32Array(n);
  src.set(white.subarray(at));
  src.set(white.subarray(0, at), n - at);
  const f1 = between(rng, 350, 800);
  const f2 = between(rng, 1100, 2200);
  const a = biquad(src.slice(), rate, 'bandpass', f1, 1.2);
  const b = biquad(src, rate, 'bandpass', f2, 1.5);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = a[i]! + 0.5 * b[i]!;
  // The envelope: phrases of syllables, pauses between phrases.
  let i = Math.floor(between(rng, 0, 1.5) * rate);
  out.fill(0, 0, i);
  while (i < n) {
    const phraseEnd = Math.min(n, i + Math.floor(between(rng, 1, 5) * rate));
    while (i < phraseEnd) {
      const len = Math.floor(between(rng, 0.12, 0.32) * rate);
      const peak = between(rng, 0.35, 1);
      for (let k = 0; k < len && i < n; k++, i++) out[i]! *= peak * SYLLABLE[Math.floor((k * 1024) / len)]!;
    }
    const pause = Math.min(n, i + Math.floor(between(rng, 0.3, 1.8) * rate));
    out.fill(0, i, pause);
    i = pause;
  }
  return out;
}

function murmur(rng: Rng, n: number, rate: number, voices: number, brightness: number): Float32Array {
  const out = new Float32Array(n);
  const white = noise(rng, n);
  for (let v = 0; v < voices; v++) addAt(out, voice(rng, white, rate), between(rng, 0.5, 1));
  return biquad(out, rate, 'lowpass', brightness);
}

/** Keyboard typing: bursts of keystrokes (each a few ms of decaying high-passed noise), `burstsPerMin` a minute. */
function typing(rng: Rng, n: number, rate: number, burstsPerMin: number): Float32Array {
  const out = new Float32Array(n);
  let t = Math.floor(between(rng, 0.5, 3) * rate);
  while (t < n) {
    const end = Math.min(n, t + Math.floor(between(rng, 1, 4) * rate));
    while (t < end) {
      const amp = between(rng, 0.4, 1);
      const len = Math.floor(0.006 * rate);
      for (let k = 0; k < len && t + k < n; k++) out[t + k]! += amp * (rng() * 2 - 1) * Math.exp(-k / (0.0015 * rate));
      t += Math.floor(between(rng, 0.07, 0.26) * rate);
    }
    t += Math.floor(between(rng, 40 / burstsPerMin, 80 / burstsPerMin) * rate);
  }
  return biquad(out, rate, 'highpass', 1500);
}

/** Cups and cutlery: short decaying tones of 2.5-5 kHz every few seconds. */
function clinks(rng: Rng, n: number, rate: number): Float32Array {
  const out = new Float32Array(n);
  for (let t = Math.floor(between(rng, 1, 3) * rate); t < n; t += Math.floor(between(rng, 1.5, 6) * rate)) {
    const f = Math.min(between(rng, 2500, 5000), 0.42 * rate);
    const tau = between(rng, 0.03, 0.1) * rate;
    const amp = between(rng, 0.3, 1);
    for (let k = 0; k < 5 * tau && t + k < n; k++) out[t + k]! += amp * Math.sin((2 * Math.PI * f * k) / rate) * Math.exp(-k / tau);
  }
  return out;
}

/** Mains hum with its harmonics (a building's power, a headset's ground loop): one second, repeated. */
function hum(n: number, rate: number): Float32Array {
  const second = new Float32Array(rate);
  for (let i = 0; i < rate; i++) {
    const t = i / rate;
    second[i] = Math.sin(2 * Math.PI * 60 * t) + 0.6 * Math.sin(2 * Math.PI * 120 * t) + 0.35 * Math.sin(2 * Math.PI * 180 * t) + 0.2 * Math.sin(2 * Math.PI * 300 * t);
  }
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += rate) out.set(second.subarray(0, Math.min(rate, n - i)), i);
  return out;
}

function hiss(rng: Rng, n: number, rate: number): Float32Array {
  const x = biquad(biquad(noise(rng, n), rate, 'highpass', 800), rate, 'lowpass', 5000);
  const phase = rng() * 2 * Math.PI;
  for (let i = 0; i < n; i++) x[i]! *= 1 + 0.15 * Math.sin((2 * Math.PI * 0.31 * i) / rate + phase);
  return x;
}

/**
 * The kind's sound, `n` samples at `rate` (relative levels; normalised by the caller): its noise-like parts, and its
 * periodic ones apart (a hum repeats exactly over the loop, so it is not crossfaded: a fade would add it to itself).
 */
function render(kind: BackgroundSound, n: number, rate: number): { out: Float32Array; periodic: Float32Array | null } {
  const rng = mulberry32(SEEDS[kind]);
  const out = new Float32Array(n);
  let periodic: Float32Array | null = null;
  switch (kind) {
    case 'office':
      addAt(out, rumble(rng, n, rate), 1);
      addAt(out, murmur(rng, n, rate, 3, 1500), 0.55);
      addAt(out, typing(rng, n, rate, 6), 0.2);
      break;
    case 'cafe':
      addAt(out, murmur(rng, n, rate, 6, 3000), 1);
      addAt(out, clinks(rng, n, rate), 0.3);
      addAt(out, rumble(rng, n, rate), 0.5);
      break;
    case 'call_center':
      addAt(out, murmur(rng, n, rate, 8, 3500), 1);
      periodic = new Float32Array(n);
      addAt(periodic, hum(n, rate), 0.3);
      addAt(out, typing(rng, n, rate, 4), 0.12);
      break;
    case 'static':
      addAt(out, hiss(rng, n, rate), 1);
      break;
  }
  return { out, periodic };
}

const loops = new Map<string, Float32Array>();
const preparing = new Map<string, Promise<void>>();

/**
 * Renders the kind's loop at `rate` on a worker thread (up to 150 ms of CPU at 48 kHz: the event loop must not wait
 * for it) and caches it, so the call that needs it (ambienceLoop, Ambience) finds it ready. Resolves when it is
 * cached; a worker that fails leaves it to be rendered in place on first use.
 */
export function prepareAmbience(kind: BackgroundSound, rate: number): Promise<void> {
  const key = `${kind}@${rate}`;
  if (loops.has(key)) return Promise.resolve();
  let ready = preparing.get(key);
  if (!ready) {
    ready = new Promise<void>((resolve) => {
      const worker = new Worker(new URL('./ambience-worker-entry.mjs', import.meta.url), { workerData: { kind, rate } });
      worker.once('message', (loop: Float32Array) => {
        if (!loops.has(key)) loops.set(key, loop);
        void worker.terminate();
        resolve();
      });
      worker.once('error', () => resolve());
      worker.once('exit', () => resolve());
    }).finally(() => preparing.delete(key));
    preparing.set(key, ready);
  }
  return ready;
}

/** The kind's loop at `rate` (rendered on first use, then cached), at AMBIENCE_DBFS RMS. */
export function ambienceLoop(kind: BackgroundSound, rate: number): Float32Array {
  const key = `${kind}@${rate}`;
  const cached = loops.get(key);
  if (cached) return cached;
  const len = Math.round(LOOP_SECONDS * rate);
  const fade = Math.round(FADE_SECONDS * rate);
  const { out: raw, periodic } = render(kind, len + fade, rate);
  // The head fades in while the rendered continuation of the tail fades out: the loop's last sample is followed by
  // the sample that followed it in the rendering.
  const loop = raw.slice(0, len);
  for (let i = 0; i < fade; i++) {
    const th = (Math.PI / 2) * (i / fade);
    loop[i] = raw[i]! * Math.sin(th) + raw[len + i]! * Math.cos(th);
  }
  // Whole cycles of 60 Hz in LOOP_SECONDS: the hum runs on across the seam by itself.
  if (periodic) for (let i = 0; i < len; i++) loop[i]! += periodic[i]!;
  const gain = 10 ** (AMBIENCE_DBFS / 20) / (rmsOf(loop) || 1);
  for (let i = 0; i < len; i++) loop[i] = Math.max(-1, Math.min(1, loop[i]! * gain));
  loops.set(key, loop);
  return loop;
}

/** One call's ambience: the kind's loop read on from where the last frame left it. */
export class Ambience {
  private pos = 0;
  private readonly loop: Float32Array;

  constructor(kind: BackgroundSound, readonly sampleRate: number) {
    this.loop = ambienceLoop(kind, sampleRate);
  }

  /** The next `n` samples of the ambience, added to `under` when given (a copy; clipped to [-1, 1]). */
  next(n: number, under?: Float32Array): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const v = this.loop[this.pos]! + (under ? (under[i] ?? 0) : 0);
      out[i] = v > 1 ? 1 : v < -1 ? -1 : v;
      if (++this.pos === this.loop.length) this.pos = 0;
    }
    return out;
  }
}
