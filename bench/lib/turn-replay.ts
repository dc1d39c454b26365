// Replays a turn-corpus item through the agent session's own input path (engine/turn/user-turn.ts: Silero VAD, the
// speech tracker, the prosody tracker, the speculation at each pause, with Whisper on the turn so far), recording
// every pause the session would see with what it would know there. Policies are then simulated on these records on the audio clock
// (bench/lib/turn-policies.ts), so a curve over settings costs no model runs. Results are cached per item.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Resampler, qualityFor } from '../../engine/audio/resample.js';
import type { ModelRegistry } from '../../engine/models/registry.js';
import { VAD_SAMPLE_RATE, VAD_WINDOW_SAMPLES } from '../../engine/models/silero.js';
import type { SpeechRecognizer, Transcription } from '../../engine/ports.js';
import type { ProsodyFeatures } from '../../engine/turn/prosody.js';
import { UserTurnRecognizer, type HeardTurn } from '../../engine/turn/user-turn.js';
import { readItemAudio, type TurnItem } from './turn-corpus.js';

const SR = VAD_SAMPLE_RATE;
const WIN = VAD_WINDOW_SAMPLES;
export const WIN_MS = (WIN * 1000) / SR;
/** As the session (engine/agent/session.ts): 300 ms pre-roll, thresholds 0.5 / 0.35, 96 ms of speech to start. */
const PRE_ROLL = Math.round(0.3 * SR);
const TRACKER = { startThreshold: 0.5, endThreshold: 0.35, minSpeechWindows: 3, minVolume: 0 };
const VERSION = 'replay-v3';
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
  const records: PauseRecord[] = [];
  const onsets: number[] = [];
  // The recognizer the engine asks at each pause only takes note: which pauses need their words is known once the
  // whole item has been heard (a pause shorter than any policy's wait never commits), and only those are recognized.
  const asked: { start: number; samples: Float32Array; resolve: (t: Transcription) => void }[] = [];
  const recognizer: SpeechRecognizer = { transcribe: (samples) => new Promise((resolve) => asked.push({ start: turns.turn?.start ?? 0, samples, resolve })) };
  // The engine's input path with a policy that never ends a turn: every pause is heard as the session hears it.
  const turns = new UserTurnRecognizer<HeardTurn>({
    encoding: 'linear16',
    sampleRate: SR,
    tracker: TRACKER,
    policy: { config: { smartTurn: false, smartWaitMs: 0, minDelayMs: Infinity, maxDelayMs: Infinity }, tailSamples: WIN, countArriving: true, words: (t) => t },
    hooks: {
      alive: () => true,
      speechStarted: (onset) => {
        onsets.push(onset);
        return { start: Math.max(0, onset * WIN - PRE_ROLL), firstWindow: onset };
      },
      paused: (w) => {
        const turn = turns.turn!;
        records.push({ pauseWindow: w, resumeWindow: null, onsetWindow: turn.firstWindow, text: '', audioSeconds: (Math.min(x.length, (w + 1) * WIN) - turn.start) / SR, prosody: turn.prosody! });
      },
      window: (w, _p, signal) => {
        const last = records[records.length - 1];
        if (signal?.type === 'resume' && last) last.resumeWindow = w;
      },
      ended: () => undefined,
    },
  });
  turns.use({ vad: (await registry.vad()).createStream(), recognizer });
  await turns.feed(x);
  await turns.flushWindow();
  const whisper = await registry.recognizer();
  await Promise.all(asked.map(async ({ start, samples, resolve }) => {
    // The speculation's audio ends one window after the pause's first silent window.
    const rec = records.find((r) => r.pauseWindow === (start + samples.length) / WIN - 1);
    const needed = rec && (rec.resumeWindow === null || (rec.resumeWindow - rec.pauseWindow) * WIN_MS >= MIN_USEFUL_PAUSE_MS);
    if (rec && needed) rec.text = (await whisper.transcribe(samples.subarray(Math.max(0, samples.length - 29 * SR)), { beams: registry.sttLiveBeams, shortWindow: false })).text.trim();
    resolve({ text: rec?.text ?? '', runMs: 0 });
  }));
  turns.stop();
  const toMs = (samples: number) => (samples * 1000) / item.rate;
  const out: ItemReplay = {
    id: item.id,
    version,
    speechEndMs: toMs(item.speechEnd),
    pauses: item.pauses.map((p) => ({ startMs: toMs(p.start), endMs: toMs(p.end), kind: p.kind, category: p.category })),
    records,
    windows: turns.windows,
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
