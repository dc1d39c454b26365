// What a caller hears while a transfer's target rings (`onHoldMusic`), generated in code at 8 kHz (no audio files):
// `ringtone` the North American ringback (440 + 480 Hz, 2 s on, 4 s off), `relaxing_sound` soft slow chords,
// `uplifting_beats` a drum beat under a bass line, `none` silence. A HoldPlayer keeps a little of the loop queued on the
// caller's leg until it is stopped, which drops what was queued at once.
import type { MediaLeg } from './media/leg.js';

export type HoldMusic = 'ringtone' | 'relaxing_sound' | 'uplifting_beats' | 'none';

const RATE = 8000;
const TAU = 2 * Math.PI;

/** Ringback: both tones together at about -19 dBFS each, 2 s on, 4 s off. */
function ringtone(): Float32Array {
  const out = new Float32Array(6 * RATE);
  for (let i = 0; i < 2 * RATE; i++) {
    const t = i / RATE;
    out[i] = 0.11 * (Math.sin(TAU * 440 * t) + Math.sin(TAU * 480 * t));
  }
  return out;
}

/** Adds a note: a sine (with a quieter octave) under an attack/release envelope, from `at` s for `len` s. */
function note(out: Float32Array, freq: number, at: number, len: number, gain: number, attack: number, release: number): void {
  const from = Math.round(at * RATE);
  const n = Math.round(len * RATE);
  for (let i = 0; i < n && from + i < out.length; i++) {
    const t = i / RATE;
    const env = Math.min(1, t / attack, (len - t) / release);
    out[from + i]! += gain * Math.max(0, env) * (Math.sin(TAU * freq * t) + 0.3 * Math.sin(TAU * 2 * freq * t));
  }
}

const MIDI = (m: number) => 440 * 2 ** ((m - 69) / 12);

/** Four slow chords (C, Am, F, G), 2.5 s each, swelling in and out: 10 s. */
function relaxing(): Float32Array {
  const out = new Float32Array(10 * RATE);
  const chords = [
    [60, 64, 67],
    [57, 60, 64],
    [53, 57, 60],
    [55, 59, 62],
  ];
  chords.forEach((chord, c) => chord.forEach((m) => note(out, MIDI(m), c * 2.5, 2.5, 0.06, 0.8, 0.9)));
  return out;
}

/** Two bars at 120 bpm: kick on the beats, a noise hat on the off-beats, a plucked bass line: 4 s. */
function beats(): Float32Array {
  const out = new Float32Array(4 * RATE);
  const beat = 0.5;
  let seed = 0x2545f491;
  const noise = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return ((seed >>> 0) / 0xffffffff) * 2 - 1;
  };
  for (let b = 0; b < 8; b++) {
    // Kick: a sine falling from 150 to 50 Hz, decaying over 150 ms.
    const from = Math.round(b * beat * RATE);
    let phase = 0;
    for (let i = 0; i < 0.15 * RATE; i++) {
      const t = i / RATE;
      phase += (TAU * (50 + 100 * Math.exp(-t * 30))) / RATE;
      out[from + i]! += 0.45 * Math.exp(-t * 20) * Math.sin(phase);
    }
    // Hat: 40 ms of noise on the off-beat.
    const hat = Math.round((b + 0.5) * beat * RATE);
    for (let i = 0; i < 0.04 * RATE; i++) out[hat + i]! += 0.12 * Math.exp(-(i / RATE) * 80) * noise();
  }
  [45, 45, 52, 52, 50, 50, 52, 57].forEach((m, b) => note(out, MIDI(m), b * beat + 0.25, 0.22, 0.12, 0.01, 0.15));
  return out;
}

const loops = new Map<HoldMusic, Int16Array>();

/** One loop of `kind` as 8 kHz 16-bit samples (empty for `none`), generated once. */
export function holdLoop(kind: HoldMusic): Int16Array {
  let loop = loops.get(kind);
  if (!loop) {
    const f = kind === 'ringtone' ? ringtone() : kind === 'relaxing_sound' ? relaxing() : kind === 'uplifting_beats' ? beats() : new Float32Array(0);
    loop = Int16Array.from(f, (x) => Math.round(Math.max(-1, Math.min(1, x)) * 32767));
    loops.set(kind, loop);
  }
  return loop;
}

/** How far ahead of real time the hold sound is queued: enough to ride out a busy event loop, little to drop. */
const AHEAD_MS = 120;
const FRAME = RATE / 50;

/** Plays a hold sound on a leg until stop(); every sound starts at the beginning of its loop. */
export class HoldPlayer {
  private timer: NodeJS.Timeout | null = null;
  private at = 0;

  constructor(
    private readonly leg: MediaLeg,
    kind: HoldMusic,
    /** Sees each frame sent (the call's recording). */
    private readonly onSent?: (pcm: Int16Array) => void,
  ) {
    const loop = holdLoop(kind);
    if (!loop.length) return;
    const fill = () => {
      if (this.leg.isClosed) return this.stop();
      while (this.leg.queuedMs() < AHEAD_MS) {
        const frame = new Int16Array(FRAME);
        for (let i = 0; i < FRAME; i++) frame[i] = loop[(this.at + i) % loop.length] as number;
        this.at = (this.at + FRAME) % loop.length;
        this.leg.send(frame);
        this.onSent?.(frame);
      }
    };
    fill();
    this.timer = setInterval(fill, 20);
  }

  /** Stops at once: what is queued and not yet played is dropped. */
  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = null;
    if (!this.leg.isClosed) this.leg.clear();
  }
}
