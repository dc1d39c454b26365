// Who-answered greetings for the answering-machine detector (engine/agent/answer-detect.ts): what a callee's side
// sounds like from the answer on, 8 kHz through a mu-law round trip as on a phone line, with where the speech and the
// beep are. Two sets, kept apart:
// - `synth` (tuning): people, voicemail greetings with and without a beep, IVR menus, call screening, silence and line
//   noise, spoken by espeak-ng (several voices and rates) and Flite (the project's FliteSynthesizer, five voices), with
//   generated beeps (sine, 400-1800 Hz, 150 ms-1 s, two-tone, some under noise) and line noise. Thresholds are
//   chosen on this set only.
// - `asterisk` (evaluation only): the same situations built from Debian's human recordings of Asterisk prompts
//   (Allison's voice: "hello", vm-theperson + digits + vm-isunavail + vm-intro + Asterisk's own beep, dir-intro,
//   queue-periodic-announce, privacy-unident, priv-recordintro, ...).
// Everything is deterministic (seeded noise, fixed voices); synthesized clips are cached under bench/.cache/greetings.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { AnswerVerdict } from '../../engine/agent/answer-detect.js';
import { decodeMuLaw, encodeMuLaw } from '../../engine/audio/codecs.js';
import { resample } from '../../engine/audio/resample.js';
import { readWav, writeWav } from '../../engine/audio/wav.js';
import { FliteSynthesizer } from '../../engine/models/flite.js';
import { ASTERISK_SOUNDS_DIR, asteriskCorpusAvailable } from './asterisk-corpus.js';
import { mulberry32, seedOf, type Rng } from './false-barge-sounds.js';

export const GREETING_RATE = 8000;
const CACHE = path.join(process.env.BENCH_CACHE_DIR ? path.resolve(process.env.BENCH_CACHE_DIR) : path.resolve(import.meta.dirname, '..', '.cache'), 'greetings');

export interface Span {
  startMs: number;
  endMs: number;
}

export interface Greeting {
  id: string;
  set: 'synth' | 'asterisk';
  expected: AnswerVerdict;
  /** What it is, in a few words. */
  what: string;
  /** The words spoken ('' for none). */
  text: string;
  /** Who speaks: 'espeak:<voice> s<wpm>', 'flite:<voice> x<speed>', 'asterisk:Allison', '' for nobody. */
  voice: string;
  rate: number;
  samples: Float32Array;
  /** Where speech is, ms since the answer (a clip's first to last speech frame). */
  speech: Span[];
  /** The beep, if the greeting has one. */
  beep?: Span & { hz: number };
}

/** One piece of a greeting's timeline. */
type Part =
  | { pause: number }
  | { say: string; voice: string }
  | { prompt: string[] }
  | { beep: number; ms: number; hz2?: number; db?: number };

interface Script {
  id: string;
  expected: AnswerVerdict;
  what: string;
  parts: Part[];
  /** Line noise under everything, dBFS RMS (none when absent); `clicks`: crackle on the line. */
  noiseDb?: number;
  clicks?: boolean;
  /** Speaking level, dBFS RMS of the active frames. Default -20. */
  levelDb?: number;
  /** Silence after the last part, ms. */
  tail: number;
}

const HUMAN_TAIL = 4500;
const MACHINE_TAIL = 4000;

// espeak-ng voices Whisper understands at 8 kHz (bench/lib/caller-clips.ts, bench/lib/turn-synth.ts) and Flite's five.
const SYNTH: Script[] = [
  // People: a short greeting, then they wait for the caller.
  { id: 'h01', expected: 'human', what: 'hello', parts: [{ pause: 400 }, { say: 'Hello?', voice: 'espeak:en-us+m7 s160' }], tail: HUMAN_TAIL },
  { id: 'h02', expected: 'human', what: 'hello', parts: [{ pause: 600 }, { say: 'Hello?', voice: 'flite:awb x1' }], tail: HUMAN_TAIL },
  { id: 'h03', expected: 'human', what: 'name', parts: [{ pause: 500 }, { say: 'Hi, this is Anna speaking.', voice: 'espeak:en-us+f5 s170' }], tail: HUMAN_TAIL },
  { id: 'h04', expected: 'human', what: 'name', parts: [{ pause: 300 }, { say: 'Hi, this is Anna speaking.', voice: 'flite:slt x1' }], tail: HUMAN_TAIL },
  { id: 'h05', expected: 'human', what: 'yeah', parts: [{ pause: 700 }, { say: 'Yeah?', voice: 'espeak:en-us-nyc+m5 s150' }], tail: HUMAN_TAIL },
  { id: 'h06', expected: 'human', what: "who's calling", parts: [{ pause: 400 }, { say: "Hello, who's calling?", voice: 'flite:rms x1' }], tail: HUMAN_TAIL },
  { id: 'h07', expected: 'human', what: 'residence, slow', parts: [{ pause: 500 }, { say: 'Good morning, Smith residence.', voice: 'espeak:en-gb-x-rp+f3 s135' }], tail: HUMAN_TAIL },
  { id: 'h08', expected: 'human', what: 'hello twice', parts: [{ pause: 500 }, { say: 'Hello?', voice: 'flite:kal16 x1' }, { pause: 1400 }, { say: 'Hello?', voice: 'flite:kal16 x1' }], tail: HUMAN_TAIL },
  { id: 'h09', expected: 'human', what: 'silent, then hello', parts: [{ pause: 1100 }, { say: 'Hello?', voice: 'espeak:en-us+klatt4 s160' }], tail: HUMAN_TAIL },
  { id: 'h10', expected: 'human', what: 'name, line noise', parts: [{ pause: 400 }, { say: 'Hello, this is David.', voice: 'flite:kal x1' }], noiseDb: -45, tail: HUMAN_TAIL },
  { id: 'h11', expected: 'human', what: 'yes hello', parts: [{ pause: 600 }, { say: 'Yes, hello?', voice: 'espeak:en-us+f2 s150' }], tail: HUMAN_TAIL },
  { id: 'h12', expected: 'human', what: 'hi there', parts: [{ pause: 450 }, { say: 'Hi there.', voice: 'flite:awb x0.9' }], levelDb: -26, tail: HUMAN_TAIL },
  { id: 'h13', expected: 'human', what: 'hello, crackly line', parts: [{ pause: 350 }, { say: 'Hello?', voice: 'espeak:en-us s170' }], noiseDb: -42, clicks: true, tail: HUMAN_TAIL },
  { id: 'h14', expected: 'human', what: 'name speaking', parts: [{ pause: 500 }, { say: 'Hello, Maria speaking.', voice: 'flite:slt x1.1' }], tail: HUMAN_TAIL },
  { id: 'h15', expected: 'human', what: "what's up", parts: [{ pause: 800 }, { say: "Hey, what's up?", voice: 'flite:rms x1' }], levelDb: -16, tail: HUMAN_TAIL },
  { id: 'h16', expected: 'human', what: 'business, long', parts: [{ pause: 400 }, { say: "Johnson's Plumbing, how can I help you?", voice: 'espeak:en-us+m7 s175' }], tail: HUMAN_TAIL },
  { id: 'h17', expected: 'human', what: 'hello, pause, name', parts: [{ pause: 500 }, { say: 'Hello?', voice: 'espeak:en-gb-x-rp+f3 s160' }, { pause: 450 }, { say: 'This is Kevin.', voice: 'espeak:en-gb-x-rp+f3 s160' }], tail: HUMAN_TAIL },
  // Voicemail and answering machines.
  { id: 'v01', expected: 'voicemail', what: 'personal + beep', parts: [{ pause: 300 }, { say: "Hi, you've reached John. I can't take your call right now. Please leave a message after the tone.", voice: 'espeak:en-us+m7 s165' }, { pause: 400 }, { beep: 1000, ms: 500 }], tail: MACHINE_TAIL },
  { id: 'v02', expected: 'voicemail', what: 'personal + beep', parts: [{ pause: 500 }, { say: "Hi, you've reached John. I can't take your call right now. Please leave a message after the tone.", voice: 'flite:awb x1' }, { pause: 300 }, { beep: 850, ms: 400 }], tail: MACHINE_TAIL },
  { id: 'v03', expected: 'voicemail', what: 'carrier + beep', parts: [{ pause: 200 }, { say: 'The person you are trying to reach is not available. At the tone, please record your message.', voice: 'flite:kal16 x1' }, { pause: 500 }, { beep: 1400, ms: 300 }], tail: MACHINE_TAIL },
  { id: 'v04', expected: 'voicemail', what: 'carrier + long beep, noise', parts: [{ pause: 300 }, { say: 'The person you are trying to reach is not available. At the tone, please record your message.', voice: 'espeak:en-us+f5 s160' }, { pause: 600 }, { beep: 600, ms: 1000 }], noiseDb: -40, tail: MACHINE_TAIL },
  { id: 'v05', expected: 'voicemail', what: 'short + beep', parts: [{ pause: 400 }, { say: 'Leave a message.', voice: 'espeak:en-us-nyc+m5 s160' }, { pause: 350 }, { beep: 1000, ms: 250 }], tail: MACHINE_TAIL },
  { id: 'v06', expected: 'voicemail', what: 'short + two-tone beep', parts: [{ pause: 300 }, { say: 'Leave a message.', voice: 'flite:rms x1' }, { pause: 250 }, { beep: 700, ms: 160, hz2: 1050 }], tail: MACHINE_TAIL },
  { id: 'v07', expected: 'voicemail', what: 'personal, no beep', parts: [{ pause: 400 }, { say: "Hi, this is Sarah. Sorry I missed your call. Leave your name and number and I'll get back to you.", voice: 'flite:slt x1' }], tail: 6000 },
  { id: 'v08', expected: 'voicemail', what: 'mailbox number + beep, noise', parts: [{ pause: 300 }, { say: 'You have reached the voicemail box of five five five, zero one two three. Please leave a message.', voice: 'espeak:en-us+klatt4 s170' }, { pause: 400 }, { beep: 1200, ms: 450 }], noiseDb: -38, tail: MACHINE_TAIL },
  { id: 'v09', expected: 'voicemail', what: 'casual + short beep', parts: [{ pause: 500 }, { say: "Hey, it's Mike. I'm not available right now, so leave me a message and I'll call you back.", voice: 'espeak:en-us+m7 s180' }, { pause: 300 }, { beep: 800, ms: 200 }], tail: MACHINE_TAIL },
  { id: 'v10', expected: 'voicemail', what: 'beep only', parts: [{ pause: 700 }, { beep: 1000, ms: 600 }], tail: MACHINE_TAIL },
  { id: 'v11', expected: 'voicemail', what: 'no keywords + beep', parts: [{ pause: 400 }, { say: "Hi, this is Tom and Lisa. We're probably out walking the dog or chasing the kids around the yard. Talk soon!", voice: 'espeak:en-us+f5 s165' }, { pause: 400 }, { beep: 900, ms: 500 }], tail: MACHINE_TAIL },
  { id: 'v12', expected: 'voicemail', what: 'short personal + beep, noise', parts: [{ pause: 300 }, { say: "Hi, you've reached Anna. Please leave a message.", voice: 'flite:kal x1' }, { pause: 500 }, { beep: 600, ms: 350 }], noiseDb: -44, clicks: true, tail: MACHINE_TAIL },
  { id: 'v13', expected: 'voicemail', what: 'family + 150 ms beep', parts: [{ pause: 400 }, { say: 'Hello, you have reached the Garcia family. We cannot come to the phone right now. Please leave a message after the beep.', voice: 'flite:rms x1.1' }, { pause: 300 }, { beep: 1800, ms: 150 }], tail: MACHINE_TAIL },
  { id: 'v14', expected: 'voicemail', what: 'quiet, slow, beep', parts: [{ pause: 600 }, { say: "You've reached the Millers. We're not home right now. Leave a message at the beep.", voice: 'espeak:en-gb-x-rp+f3 s140' }, { pause: 500 }, { beep: 440, ms: 700 }], levelDb: -27, tail: MACHINE_TAIL },
  { id: 'v15', expected: 'voicemail', what: 'opener, 600 ms pause, + beep', parts: [{ pause: 400 }, { say: 'Hi, this is Dave. <break time="600ms"/> Sorry I can\'t take your call, please leave a message.', voice: 'espeak:en-us+m7 s160' }, { pause: 400 }, { beep: 1000, ms: 400 }], tail: MACHINE_TAIL },
  // IVR menus and call screening.
  { id: 'i01', expected: 'ivr', what: 'menu', parts: [{ pause: 300 }, { say: 'Thank you for calling Acme. For sales, press 1. For support, press 2. For billing, press 3.', voice: 'espeak:en-us s165' }], tail: MACHINE_TAIL },
  { id: 'i02', expected: 'ivr', what: 'menu', parts: [{ pause: 300 }, { say: 'Thank you for calling Acme. For sales, press 1. For support, press 2. For billing, press 3.', voice: 'flite:awb x1' }], tail: MACHINE_TAIL },
  { id: 'i03', expected: 'ivr', what: 'bank menu', parts: [{ pause: 400 }, { say: 'Welcome to First National Bank. Please listen carefully, as our menu options have changed. To check your balance, press 1.', voice: 'flite:slt x1' }], tail: MACHINE_TAIL },
  { id: 'i04', expected: 'ivr', what: 'queue', parts: [{ pause: 300 }, { say: 'Your call is important to us. Please stay on the line, and the next available representative will be with you shortly.', voice: 'espeak:en-us+f2 s160' }], tail: MACHINE_TAIL },
  { id: 'i05', expected: 'ivr', what: 'screening service', parts: [{ pause: 300 }, { say: "Hi, the person you're calling is using a screening service and will get a copy of this conversation. Please state your name and why you're calling.", voice: 'flite:kal16 x1' }], tail: MACHINE_TAIL },
  { id: 'i06', expected: 'ivr', what: 'screening + beep', parts: [{ pause: 400 }, { say: "Please say your name after the tone, and I'll see if this person is available.", voice: 'espeak:en-us+f5 s165' }, { pause: 300 }, { beep: 1000, ms: 300 }], tail: MACHINE_TAIL },
  { id: 'i07', expected: 'ivr', what: 'office directory', parts: [{ pause: 300 }, { say: "You have reached the offices of Miller and Associates. If you know your party's extension, you may dial it at any time. For a company directory, press 9.", voice: 'flite:rms x1' }], tail: MACHINE_TAIL },
  { id: 'i08', expected: 'ivr', what: "doctor's office", parts: [{ pause: 400 }, { say: "Thank you for calling Doctor Patel's office. If this is a medical emergency, please hang up and dial 9 1 1.", voice: 'espeak:en-us-nyc+m5 s165' }], tail: MACHINE_TAIL },
  { id: 'i09', expected: 'ivr', what: 'recorded line, hold', parts: [{ pause: 300 }, { say: 'This call may be recorded for quality purposes. Please hold while we connect you.', voice: 'flite:kal x1' }], noiseDb: -45, tail: MACHINE_TAIL },
  // Nobody says anything.
  { id: 's01', expected: 'silence', what: 'digital silence', parts: [{ pause: 6000 }], tail: 0 },
  { id: 's02', expected: 'silence', what: 'line noise', parts: [{ pause: 6000 }], noiseDb: -48, tail: 0 },
  { id: 's03', expected: 'silence', what: 'loud noise, clicks', parts: [{ pause: 6000 }], noiseDb: -38, clicks: true, tail: 0 },
  { id: 's04', expected: 'silence', what: 'faint hiss, clicks', parts: [{ pause: 6000 }], noiseDb: -60, clicks: true, tail: 0 },
];

const A = 'asterisk:Allison';
const digits = (s: string) => s.split('').map((d) => `digits/${d}`);
const ASTERISK: Script[] = [
  { id: 'ah1', expected: 'human', what: 'hello', parts: [{ pause: 400 }, { prompt: ['hello'] }], tail: HUMAN_TAIL },
  { id: 'ah2', expected: 'human', what: 'silent, then hello', parts: [{ pause: 1200 }, { prompt: ['hello'] }], tail: HUMAN_TAIL },
  { id: 'ah3', expected: 'human', what: 'hello twice', parts: [{ pause: 500 }, { prompt: ['hello'] }, { pause: 1500 }, { prompt: ['hello'] }], tail: HUMAN_TAIL },
  { id: 'ah4', expected: 'human', what: 'hello world', parts: [{ pause: 600 }, { prompt: ['hello-world'] }], tail: HUMAN_TAIL },
  { id: 'ah5', expected: 'human', what: 'hello, one moment', parts: [{ pause: 400 }, { prompt: ['hello'] }, { pause: 200 }, { prompt: ['one-moment-please'] }], tail: HUMAN_TAIL },
  { id: 'ah6', expected: 'human', what: 'hello, line noise', parts: [{ pause: 500 }, { prompt: ['hello'] }], noiseDb: -44, clicks: true, tail: HUMAN_TAIL },
  { id: 'av1', expected: 'voicemail', what: 'unavailable greeting + beep', parts: [{ pause: 300 }, { prompt: ['vm-theperson', ...digits('2041'), 'vm-isunavail', 'vm-intro', 'beep'] }], tail: MACHINE_TAIL },
  { id: 'av2', expected: 'voicemail', what: 'busy greeting + beep', parts: [{ pause: 300 }, { prompt: ['vm-theperson', ...digits('3318'), 'vm-isonphone', 'vm-intro', 'beep'] }], tail: MACHINE_TAIL },
  { id: 'av3', expected: 'voicemail', what: 'nobody available + beep', parts: [{ pause: 400 }, { prompt: ['vm-nobodyavail', 'vm-intro', 'beep'] }], tail: MACHINE_TAIL },
  { id: 'av4', expected: 'voicemail', what: 'intro + beep', parts: [{ pause: 300 }, { prompt: ['vm-intro', 'beep'] }], tail: MACHINE_TAIL },
  { id: 'av5', expected: 'voicemail', what: 'nobody available, no beep', parts: [{ pause: 300 }, { prompt: ['vm-nobodyavail'] }], tail: 6000 },
  { id: 'av6', expected: 'voicemail', what: 'intro + beep, noise', parts: [{ pause: 500 }, { prompt: ['vm-intro', 'beep'] }], noiseDb: -42, clicks: true, tail: MACHINE_TAIL },
  { id: 'ai1', expected: 'ivr', what: 'directory', parts: [{ pause: 300 }, { prompt: ['dir-intro'] }], tail: MACHINE_TAIL },
  { id: 'ai2', expected: 'ivr', what: 'queue announcement', parts: [{ pause: 300 }, { prompt: ['queue-periodic-announce'] }], tail: MACHINE_TAIL },
  { id: 'ai3', expected: 'ivr', what: 'privacy manager (screening)', parts: [{ pause: 300 }, { prompt: ['privacy-unident', 'privacy-prompt'] }], tail: MACHINE_TAIL },
  { id: 'ai4', expected: 'ivr', what: 'say your name + beep (screening)', parts: [{ pause: 400 }, { prompt: ['priv-recordintro', 'beep'] }], tail: MACHINE_TAIL },
  { id: 'ai5', expected: 'ivr', what: 'follow-me hold (screening)', parts: [{ pause: 300 }, { prompt: ['followme/pls-hold-while-try'] }], tail: MACHINE_TAIL },
  { id: 'ai6', expected: 'ivr', what: 'all busy, hold', parts: [{ pause: 300 }, { prompt: ['tt-allbusy'] }], tail: MACHINE_TAIL },
  { id: 'ai7', expected: 'ivr', what: 'conference number', parts: [{ pause: 300 }, { prompt: ['conf-getconfno'] }], tail: MACHINE_TAIL },
  { id: 'as1', expected: 'silence', what: "Asterisk's silence", parts: [{ prompt: ['silence/5', 'silence/1'] }], tail: 0 },
  { id: 'as2', expected: 'silence', what: 'line noise', parts: [{ pause: 6000 }], noiseDb: -46, clicks: true, tail: 0 },
];

// ---------------------------------------------------------------------------------------------------------------

const dbToGain = (db: number) => 10 ** (db / 20);
const FRAME = 40; // 5 ms at 8 kHz

/** 5 ms frame levels, dBFS. */
function levels(x: Float32Array): number[] {
  const out: number[] = [];
  for (let f = 0; f + FRAME <= x.length; f += FRAME) {
    let e = 0;
    for (let i = f; i < f + FRAME; i++) e += (x[i] as number) ** 2;
    out.push(10 * Math.log10(e / FRAME + 1e-12));
  }
  return out;
}

/** First and last sample of speech: 5 ms frames within 35 dB of the loudest and above -55 dBFS. */
function speechBounds(x: Float32Array): [number, number] | null {
  const l = levels(x);
  const floor = Math.max(-55, Math.max(...l) - 35);
  const first = l.findIndex((v) => v > floor);
  if (first < 0) return null;
  let last = l.length - 1;
  while (last > first && (l[last] as number) <= floor) last--;
  return [first * FRAME, (last + 1) * FRAME];
}

/** Scales speech so its active frames (within 30 dB of the loudest) have an RMS of `db` dBFS. */
function atLevel(x: Float32Array, db: number): Float32Array {
  const l = levels(x);
  const top = Math.max(...l);
  const active = l.filter((v) => v > top - 30);
  const r = Math.sqrt(active.reduce((a, v) => a + 10 ** (v / 10), 0) / Math.max(1, active.length));
  const g = r > 0 ? dbToGain(db) / r : 0;
  return x.map((v) => Math.max(-1, Math.min(1, v * g)));
}

/** A sine beep (5 ms raised-cosine edges); with `hz2`, a second tone of the same length right after. */
export function beep(rate: number, hz: number, ms: number, db = -14, hz2?: number): Float32Array {
  const n = Math.round((ms * rate) / 1000);
  const tone = (f: number) => {
    const y = new Float32Array(n);
    const edge = Math.round(0.005 * rate);
    for (let i = 0; i < n; i++) {
      const w = i < edge ? 0.5 - 0.5 * Math.cos((Math.PI * i) / edge) : i >= n - edge ? 0.5 - 0.5 * Math.cos((Math.PI * (n - 1 - i)) / edge) : 1;
      y[i] = Math.SQRT2 * dbToGain(db) * w * Math.sin((2 * Math.PI * f * i) / rate);
    }
    return y;
  };
  if (!hz2) return tone(hz);
  const out = new Float32Array(2 * n);
  out.set(tone(hz));
  out.set(tone(hz2), n);
  return out;
}

/** Telephone line noise at `db` dBFS RMS: band-limited hiss, a little mains hum and, with `clicks`, crackle. */
export function lineNoise(rng: Rng, rate: number, n: number, db: number, clicks = false): Float32Array {
  const out = new Float32Array(n);
  let lp = 0;
  let hpIn = 0;
  let hpOut = 0;
  const g = () => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
  for (let i = 0; i < n; i++) {
    lp += 0.45 * (g() - lp);
    hpOut = 0.98 * (hpOut + lp - hpIn);
    hpIn = lp;
    out[i] = hpOut + 0.3 * Math.sin((2 * Math.PI * 60 * i) / rate) + 0.15 * Math.sin((2 * Math.PI * 180 * i) / rate);
  }
  let e = 0;
  for (const v of out) e += v * v;
  const scale = dbToGain(db) / Math.sqrt(e / Math.max(1, n) + 1e-20);
  for (let i = 0; i < n; i++) out[i] = (out[i] as number) * scale;
  if (clicks) {
    for (let i = Math.floor(rng() * rate * 0.4); i < n; i += Math.floor(rate * (0.15 + 0.6 * rng()))) {
      const amp = dbToGain(db + 14 + 6 * rng()) * (rng() < 0.5 ? -1 : 1);
      const len = Math.floor(rate * (0.001 + 0.003 * rng()));
      for (let k = 0; k < len && i + k < n; k++) out[i + k] = (out[i + k] as number) + amp * Math.exp(-k / (len / 3 + 1));
    }
  }
  return out;
}

/** Synthesized speech, trimmed to its speech, at 8 kHz (cached by engine, voice, speed and text). */
class Speaker {
  private flite: FliteSynthesizer | null = null;

  async say(text: string, voice: string): Promise<Float32Array> {
    const key = createHash('sha1').update(`${voice}|${text}`).digest('hex').slice(0, 16);
    const file = path.join(CACHE, 'clips', `${key}.wav`);
    if (fs.existsSync(file)) return readWav(fs.readFileSync(file)).samples;
    const [engine, name = '', speedTag = ''] = voice.split(/[: ]/);
    let audio: { samples: Float32Array; sampleRate: number };
    if (engine === 'espeak') {
      // SSML (`<break time="600ms"/>`) when the text has markup.
      const ssml = text.includes('<') ? ['-m'] : [];
      audio = readWav(execFileSync('espeak-ng', [...ssml, '-v', name, '-s', speedTag.slice(1) || '160', '--stdout', ssml.length ? `<speak>${text}</speak>` : text], { maxBuffer: 64 << 20 }));
    } else if (engine === 'flite') {
      this.flite ??= new FliteSynthesizer({ workers: 0 });
      audio = await this.flite.synthesize(text, { voice: name, speed: Number(speedTag.slice(1)) || 1 });
    } else throw new Error(`unknown voice ${voice}`);
    const x = resample(audio.samples, audio.sampleRate, GREETING_RATE);
    const b = speechBounds(x);
    if (!b) throw new Error(`${voice} said nothing for ${JSON.stringify(text)}`);
    const clip = x.slice(b[0], b[1]);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, writeWav(clip, GREETING_RATE, '32f'));
    return clip;
  }

  async close(): Promise<void> {
    await this.flite?.close();
  }
}

function prompt(name: string): Float32Array {
  const audio = readWav(fs.readFileSync(path.join(ASTERISK_SOUNDS_DIR, `${name}.wav`)));
  return audio.sampleRate === GREETING_RATE ? audio.samples : resample(audio.samples, audio.sampleRate, GREETING_RATE);
}

async function render(s: Script, set: Greeting['set'], speaker: Speaker): Promise<Greeting> {
  const rate = GREETING_RATE;
  const ms = (n: number) => (n * 1000) / rate;
  const chunks: Float32Array[] = [];
  const speech: Span[] = [];
  let beepSpan: Greeting['beep'];
  let at = 0;
  const texts: string[] = [];
  const voices = new Set<string>();
  const level = s.levelDb ?? -20;
  for (const part of s.parts) {
    let x: Float32Array;
    if ('pause' in part) x = new Float32Array(Math.round((part.pause * rate) / 1000));
    else if ('beep' in part) {
      x = beep(rate, part.beep, part.ms, part.db ?? -14, part.hz2);
      beepSpan = { startMs: ms(at), endMs: ms(at + x.length), hz: part.beep };
    } else if ('say' in part) {
      x = atLevel(await speaker.say(part.say, part.voice), level);
      speech.push({ startMs: ms(at), endMs: ms(at + x.length) });
      texts.push(part.say.replace(/<[^>]*>/g, '').replace(/\s+/g, ' '));
      voices.add(part.voice);
    } else {
      // Asterisk prompts back to back, as Asterisk plays them; speech and the beep located inside each file.
      const pieces: Float32Array[] = [];
      let off = at;
      for (const name of part.prompt) {
        const p = prompt(name);
        const b = speechBounds(p);
        if (name === 'beep' && b) beepSpan = { startMs: ms(off + b[0]), endMs: ms(off + b[1]), hz: 691 };
        else if (b && !name.startsWith('silence/')) speech.push({ startMs: ms(off + b[0]), endMs: ms(off + b[1]) });
        if (!name.startsWith('silence/') && name !== 'beep') texts.push(name);
        pieces.push(p);
        off += p.length;
      }
      x = new Float32Array(off - at);
      let o = 0;
      for (const p of pieces) {
        x.set(p, o);
        o += p.length;
      }
      voices.add(A);
    }
    chunks.push(x);
    at += x.length;
  }
  chunks.push(new Float32Array(Math.round((s.tail * rate) / 1000)));
  at += Math.round((s.tail * rate) / 1000);
  let samples: Float32Array = new Float32Array(at);
  let o = 0;
  for (const c of chunks) {
    samples.set(c, o);
    o += c.length;
  }
  if (s.noiseDb !== undefined) {
    const noise = lineNoise(mulberry32(seedOf('greeting-noise', s.id)), rate, samples.length, s.noiseDb, s.clicks);
    for (let i = 0; i < samples.length; i++) samples[i] = (samples[i] as number) + (noise[i] as number);
  }
  samples = decodeMuLaw(encodeMuLaw(samples));
  // Merge speech spans closer than 50 ms (prompts back to back).
  const merged: Span[] = [];
  for (const sp of speech.sort((a, b) => a.startMs - b.startMs)) {
    const last = merged[merged.length - 1];
    if (last && sp.startMs - last.endMs < 50) last.endMs = Math.max(last.endMs, sp.endMs);
    else merged.push({ ...sp });
  }
  return { id: s.id, set, expected: s.expected, what: s.what, text: texts.join(' '), voice: [...voices].join(', '), rate, samples, speech: merged, ...(beepSpan ? { beep: beepSpan } : {}) };
}

/** The synthesized (tuning) set. */
export async function synthGreetings(): Promise<Greeting[]> {
  const speaker = new Speaker();
  try {
    const out: Greeting[] = [];
    for (const s of SYNTH) out.push(await render(s, 'synth', speaker));
    return out;
  } finally {
    await speaker.close();
  }
}

/** The Asterisk (evaluation) set; empty when the Debian prompts are not installed. */
export async function asteriskGreetings(): Promise<Greeting[]> {
  if (!asteriskCorpusAvailable()) return [];
  const speaker = new Speaker();
  const out: Greeting[] = [];
  for (const s of ASTERISK) out.push(await render(s, 'asterisk', speaker));
  return out;
}

/** Scripts by id (tests pick a few). */
export function synthGreetingIds(): string[] {
  return SYNTH.map((s) => s.id);
}

/** Some of the synthesized set (tests). */
export async function someSynthGreetings(ids: string[]): Promise<Greeting[]> {
  const speaker = new Speaker();
  try {
    const out: Greeting[] = [];
    for (const s of SYNTH.filter((x) => ids.includes(x.id))) out.push(await render(s, 'synth', speaker));
    return out;
  } finally {
    await speaker.close();
  }
}
