// Caller speech for the barge-in bench: sentences that interrupt the agent and backchannels that should not, synthesised
// here with espeak-ng (several voices) and the server's Flite voices (POST /waves/v1/tts), at the side's rate, trimmed
// to their first and last speech and set to one speaking level (-20 dBFS active RMS).
import { execFileSync } from 'node:child_process';
import { decodeLinear16 } from '../../engine/audio/codecs.js';
import { resample } from '../../engine/audio/resample.js';
import { readWav } from '../../engine/audio/wav.js';
import { speech } from '../../test/support/agent-client.js';
import type { TestServer } from '../../test/support/server.js';

export const INTERRUPTIONS = [
  'Wait, stop, I have a question.',
  "Sorry, that's not what I asked.",
  'Hold on, can you repeat the date?',
  'No, I need to cancel my booking.',
  'Excuse me, I want to talk to a person.',
  'Actually, I already have my reference.',
];

/**
 * Backchannels: the text, the voices that say it (the first for the first round of trials, then the next), and how
 * espeak-ng should say it (it spells "mm-hmm" out as letters, and so does Flite, so those two are espeak-ng phonemes).
 */
export const BACKCHANNELS: { text: string; voices: string[]; espeak?: string }[] = [
  { text: 'mm-hmm', voices: ['espeak:en-us+f5', 'espeak:en-us+m7'], espeak: "[[m:'hm:]]" },
  { text: 'uh-huh', voices: ['espeak:en-us+m7', 'espeak:en-us+f5'], espeak: "[[V'hV:]]" },
  { text: 'okay', voices: ['flite:rms', 'espeak:en-us+f5'] },
  { text: 'yeah', voices: ['espeak:en-us+f5', 'flite:awb'] },
  { text: 'right', voices: ['flite:kal16', 'espeak:en-us+m7'] },
];

/**
 * The callers' voices: espeak-ng voice+variant names and Flite voices of the server (not slt, the agent's own). Of the
 * espeak-ng voices tried, these two were the ones Whisper understood at 8 kHz (en-us, en-gb, +m1, +m3, +f2, +f4 came
 * back empty for some sentences on the phone side).
 */
export const CALLER_VOICES = ['espeak:en-us+m7', 'flite:awb', 'espeak:en-us+f5', 'flite:rms', 'flite:kal16'] as const;

const SPEAKING_LEVEL_DBFS = -20;
const FRAME_S = 0.005;

/** Synthesises (and caches) caller speech at one rate. */
export class ClipMaker {
  private readonly cache = new Map<string, Float32Array>();

  constructor(
    private readonly server: TestServer,
    readonly rate: number,
  ) {}

  /** `text` in voice `voice` (one of CALLER_VOICES), trimmed to its speech and levelled; `espeakText` replaces the text for espeak-ng. */
  async say(text: string, voice: string, espeakText = text): Promise<Float32Array> {
    const key = `${voice}|${text}`;
    const hit = this.cache.get(key);
    if (hit) return hit;
    const [engine, name] = voice.split(':') as [string, string];
    let samples: Float32Array;
    if (engine === 'espeak') {
      const wav = readWav(execFileSync('espeak-ng', ['-v', name, '-s', '165', '--stdout', espeakText], { maxBuffer: 64 << 20 }));
      samples = resample(wav.samples, wav.sampleRate, this.rate);
    } else {
      samples = decodeLinear16(await speech(this.server, text, this.rate, name));
    }
    const clip = trimToSpeech(atSpeakingLevel(samples, this.rate), this.rate);
    if (clip.length < this.rate * 0.05) throw new Error(`${voice} said almost nothing for ${JSON.stringify(text)}`);
    this.cache.set(key, clip);
    return clip;
  }
}

/** RMS of each 5 ms frame, in dBFS. */
function frameLevels(x: Float32Array, rate: number): number[] {
  const n = Math.max(1, Math.round(rate * FRAME_S));
  const out: number[] = [];
  for (let f = 0; f + n <= x.length; f += n) {
    let e = 0;
    for (let i = f; i < f + n; i++) e += x[i]! * x[i]!;
    out.push(10 * Math.log10(e / n + 1e-12));
  }
  return out;
}

/** Scales speech so that its active frames (within 30 dB of the loudest) have an RMS of -20 dBFS. */
function atSpeakingLevel(x: Float32Array, rate: number): Float32Array {
  const levels = frameLevels(x, rate);
  const top = Math.max(...levels);
  const active = levels.filter((l) => l > top - 30);
  const rms = Math.sqrt(active.reduce((a, l) => a + 10 ** (l / 10), 0) / Math.max(1, active.length));
  const g = rms > 0 ? 10 ** (SPEAKING_LEVEL_DBFS / 20) / rms : 0;
  return x.map((v) => Math.max(-1, Math.min(1, v * g)));
}

/** From the first to the last 5 ms frame above -50 dBFS: sample 0 is the clip's first speech sample. */
function trimToSpeech(x: Float32Array, rate: number): Float32Array {
  const n = Math.max(1, Math.round(rate * FRAME_S));
  const levels = frameLevels(x, rate);
  const first = levels.findIndex((l) => l > -50);
  let last = levels.length - 1;
  while (last > first && (levels[last] ?? -100) <= -50) last--;
  return first < 0 ? new Float32Array(0) : x.slice(first * n, (last + 1) * n);
}
