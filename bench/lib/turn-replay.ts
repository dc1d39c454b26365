// Replays a turn-corpus item through the agent session's own input path (resampler to 16 kHz, Silero VAD, the speech
// tracker, the prosody tracker, Whisper on the turn so far at each pause), recording every pause the session would
// see with what it would know there. Policies are then simulated on these records on the audio clock
// (bench/lib/turn-policies.ts), so a curve over settings costs no model runs. Results are cached per item.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Resampler, qualityFor } from '../../engine/audio/resample.js';
import type { ModelRegistry } from '../../engine/models/registry.js';
import { VAD_SAMPLE_RATE, VAD_WINDOW_SAMPLES } from '../../engine/models/silero.js';
import { ProsodyTracker, type ProsodyFeatures } from '../../engine/turn/prosody.js';
import { SpeechTracker, rms } from '../../engine/turn/speech-tracker.js';
import { readItemAudio, type TurnItem } from './turn-corpus.js';

const SR = VAD_SAMPLE_RATE;
const WIN = VAD_WINDOW_SAMPLES;
export const WIN_MS = (WIN * 1000) / SR;
/** As the session (engine/agent/session.ts): 300 ms pre-roll, thresholds 0.5 / 0.35, 96 ms of speech to start. */
const PRE_ROLL = Math.round(0.3 * SR);
const TRACKER = { startThreshold: 0.5, endThreshold: 0.35, minSpeechWindows: 3, minVolume: 0 };
const VERSION = 'replay-v2';
/** Pauses shorter than this are not transcribed (no policy in the benches waits less than 200 ms). */
const MIN_USEFUL_PAUSE_MS = 150;

/** One pause the session would see: where, how long, and what the decision would know at it. */
export interface PauseRecord {
  /** First silent window (audio ms = window * WIN_MS). */
  pauseWindow: number;
  /** Window where speech resumed, or null (the pause lasts to the end of the item). */
  resumeWindow: number | null;
  onsetWindow: number;
  /** Whisper on the turn so far (pre-roll to the pause window, as the session's speculation). */
  text: string;
  /** Seconds of audio Whisper saw. */
  audioSeconds: number;
  prosody: ProsodyFeatures;
}

export interface ItemReplay {
  id: string;
  version: string;
  /** True end of speech and the stretched pause, on the 16 kHz window clock (ms from the item's start). */
  speechEndMs: number;
  pauses: { startMs: number; endMs: number; kind: string; category: string }[];
  records: PauseRecord[];
  windows: number;
  /** Speech onset windows (a turn start). */
  onsets: number[];
}

/** The item's audio at 16 kHz, as the session's input path produces it. */
export function toSessionRate(samples: Float32Array, rate: number): Float32Array {
  if (rate === SR) return samples;
  const r = new Resampler(rate, SR, { quality: qualityFor(rate) });
  const a = r.push(samples);
  const b = r.flush();
  const out = new Float32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

export async function replayItem(item: TurnItem, audio: Float32Array, registry: ModelRegistry, cacheDir: string): Promise<ItemReplay> {
  const file = path.join(cacheDir, `${item.id}.json`);
  // The cache holds for this code version and exactly this item (a rebuilt corpus may reuse an id).
  const version = `${VERSION}:${createHash('sha1').update(JSON.stringify({ ...item, file: '' })).update(audio).digest('hex').slice(0, 16)}`;
  if (fs.existsSync(file)) {
    const cached = JSON.parse(fs.readFileSync(file, 'utf8')) as ItemReplay;
    if (cached.version === version) return cached;
  }
  const x = toSessionRate(audio, item.rate);
  const vad = (await registry.vad()).createStream();
  const probs = await vad.process(x);
  const tracker = new SpeechTracker(TRACKER);
  const prosody = new ProsodyTracker();
  const recognizer = await registry.recognizer();
  const records: PauseRecord[] = [];
  const onsets: number[] = [];
  let onset = -1;
  let uttStart = 0;
  const pending: { rec: PauseRecord; from: number; to: number }[] = [];
  for (let w = 0; w < probs.length; w++) {
    const win = x.subarray(w * WIN, (w + 1) * WIN);
    prosody.push(win);
    const sig = tracker.push(w, probs[w] as number, rms(win));
    if (sig?.type === 'start') {
      onset = sig.onset;
      uttStart = Math.max(0, onset * WIN - PRE_ROLL);
      onsets.push(onset);
    } else if (sig?.type === 'pause') {
      const end = Math.min(x.length, (w + 1) * WIN);
      const rec: PauseRecord = { pauseWindow: w, resumeWindow: null, onsetWindow: onset, text: '', audioSeconds: (end - uttStart) / SR, prosody: prosody.features(onset, w) };
      records.push(rec);
      pending.push({ rec, from: uttStart, to: end });
    } else if (sig?.type === 'resume') {
      const last = records[records.length - 1];
      if (last) last.resumeWindow = w;
    }
  }
  // A pause shorter than the shortest wait any policy uses (200 ms) never commits: its text is not needed.
  const needed = pending.filter(({ rec }) => rec.resumeWindow === null || (rec.resumeWindow - rec.pauseWindow) * WIN_MS >= MIN_USEFUL_PAUSE_MS);
  await Promise.all(needed.map(async ({ rec, from, to }) => {
    rec.text = (await recognizer.transcribe(x.slice(Math.max(from, to - 29 * SR), to), { beams: registry.sttLiveBeams, shortWindow: false })).text.trim();
  }));
  const toMs = (samples: number) => (samples * 1000) / item.rate;
  const out: ItemReplay = {
    id: item.id,
    version,
    speechEndMs: toMs(item.speechEnd),
    pauses: item.pauses.map((p) => ({ startMs: toMs(p.start), endMs: toMs(p.end), kind: p.kind, category: p.category })),
    records,
    windows: probs.length,
    onsets,
  };
  fs.mkdirSync(cacheDir, { recursive: true });
  fs.writeFileSync(file, JSON.stringify(out));
  return out;
}

/** Replays items two at a time (both recognizer workers busy), in order of length; `done` gets each. */
export async function replayAll(items: TurnItem[], registry: ModelRegistry, cacheDir: string, done: (r: ItemReplay) => void): Promise<void> {
  const order = [...items].sort((a, b) => a.speechEnd / a.rate - b.speechEnd / b.rate);
  let next = 0;
  let count = 0;
  await Promise.all([0, 1].map(async () => {
    while (next < order.length) {
      const item = order[next++] as TurnItem;
      done(await replayItem(item, readItemAudio(item), registry, cacheDir));
      if (++count % 50 === 0) console.log(`replayed ${count}/${order.length}`);
    }
  }));
}

/**
 * Recognition time on this machine as the session sees it at one session (one job at a time, full window):
 * a least-squares line over clips of different lengths, ms = a + b * seconds.
 */
export async function calibrateRecognition(registry: ModelRegistry, speech: Float32Array): Promise<{ a: number; b: number; samples: [number, number][] }> {
  const recognizer = await registry.recognizer();
  const samples: [number, number][] = [];
  const run = async (clip: Float32Array) => {
    const t = performance.now();
    await recognizer.transcribe(clip, { beams: registry.sttLiveBeams, shortWindow: false });
    return performance.now() - t;
  };
  await run(speech.subarray(0, SR));
  // The median of 3 runs at each of 5 lengths (the speech looped to length): robust to a moment of load.
  for (const seconds of [1, 3, 6, 10, 14]) {
    const clip = new Float32Array(seconds * SR);
    for (let i = 0; i < clip.length; i++) clip[i] = speech[i % speech.length] as number;
    const times = [await run(clip), await run(clip), await run(clip)].sort((x, y) => x - y);
    samples.push([seconds, times[1] as number]);
  }
  const n = samples.length;
  const mx = samples.reduce((s, [x]) => s + x, 0) / n;
  const my = samples.reduce((s, [, y]) => s + y, 0) / n;
  const sxx = samples.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  const b = sxx > 0 ? samples.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0) / sxx : 0;
  return { a: Math.max(0, my - b * mx), b, samples };
}
