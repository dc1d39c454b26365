// The turn corpus's second human set (evaluation only): hesitations inserted inside the clause of the Asterisk
// prompts, at word boundaries the recording itself shows. The natural pauses of these read prompts fall at phrase
// boundaries ("please enter your password | followed by the pound key"), so the first human set holds almost no
// pause inside a clause; a caller's hesitations are mostly there ("I'd like to speak to the | manager").
//
// A word boundary is found without a transcript aligner: at each dip of the energy inside continuous speech,
// Whisper hears the audio before the dip and the audio after it; the dip is a boundary when the two texts split the
// reference transcript exactly there (the same check as the natural pauses'). 600 ms of the recording's own
// background is spliced in at the dip (5 ms fades). A boundary is mid-clause when the reference word before it is a
// function word (the list: a determiner or possessive, a preposition, a conjunction, an auxiliary, a subject
// pronoun): the word list is this file's, not the end-of-turn model's. Boundaries after other words are kept as
// their own category and reported beside them.
import fs from 'node:fs';
import path from 'node:path';
import { qualityFor, resample } from '../../engine/audio/resample.js';
import { concatSamples } from '../../engine/audio/types.js';
import { WhisperRecognizer } from '../../engine/models/whisper/index.js';
import { listAsteriskPrompts, readWavPcm16 } from './asterisk-corpus.js';
import { alignPause, kindAfter, refTokens, withTail, type WhisperCache } from './turn-corpus.js';
import { FRAME_S, count, pingPong, segmentSpeech, writeItem, type TurnItem } from './turn-items.js';
import { normalizeWords } from './wer.js';

const VERSION = 1;
const DEFAULT_DIR = path.join(process.env.BENCH_CACHE_DIR ? path.resolve(process.env.BENCH_CACHE_DIR) : path.resolve(import.meta.dirname, '..', '.cache'), 'turn-corpus-inserted');
const RATE = 8000;

/** Words after which a clause is not finished (the examples: "the", "to", "and", "my name is"). */
const FUNCTION_WORDS = new Set(
  ('the a an my your our their his her its this that these those some any every each no ' + // determiners, possessives
    'to of for with from by about at in on into onto between during without than after before under over through ' + // prepositions
    'and but or because if when while although though unless until whether so ' + // conjunctions
    'is are was were be been am will would can could should must may might do does did has have had ' + // auxiliaries
    'i we you he she they it').split(' ') // subject pronouns
);

export interface InsertedOptions { dir?: string; pauseMs?: number; maxSpeechS?: number; rebuild?: boolean }

/** Dips of the 10 ms energy inside speech, deepest first: local minima at least 12 dB under the speech level. */
function energyDips(x: Float32Array, from: number, to: number, level: number, silences: { start: number; end: number }[]): number[] {
  const frame = Math.round(RATE * FRAME_S);
  const rms: number[] = [];
  for (let o = 0; o + frame <= x.length; o += frame) rms.push(Math.sqrt(x.subarray(o, o + frame).reduce((e, v) => e + v * v, 0) / frame));
  const limit = level * 10 ** (-12 / 20);
  const found: { at: number; e: number }[] = [];
  for (let f = Math.ceil(from / frame) + 3; f < Math.floor(to / frame) - 3; f++) {
    const e = rms[f]!;
    if (e >= limit) continue;
    let isMin = true;
    for (let k = f - 4; k <= f + 4 && isMin; k++) if (k !== f && rms[k]! < e) isMin = false;
    const at = f * frame + (frame >> 1);
    if (isMin && !silences.some((s) => at > s.start - 0.03 * RATE && at < s.end + 0.03 * RATE)) found.push({ at, e });
  }
  found.sort((a, b) => a.e - b.e);
  const kept: number[] = [];
  for (const d of found) if (kept.every((k) => Math.abs(k - d.at) >= 0.12 * RATE)) kept.push(d.at);
  return kept.slice(0, 8);
}

/** `x` with `n` samples of `bg` spliced in at `at`, with 5 ms fades either side of the cut. */
function splice(x: Float32Array, at: number, bg: Float32Array): Float32Array {
  const pre = x.slice(0, at);
  const post = x.slice(at);
  const fade = Math.round(0.005 * RATE);
  for (let i = 0; i < fade; i++) {
    const g = i / fade;
    pre[pre.length - 1 - i] = (pre[pre.length - 1 - i] as number) * g;
    post[i] = (post[i] as number) * g;
  }
  return concatSamples([pre, bg, post]);
}

interface Manifest { version: number; pauseMs: number; maxSpeechS: number; stats: Record<string, number>; items: TurnItem[] }

/** Builds (or loads from its cache) the inserted-hesitation human set at 8 kHz. */
export async function buildInsertedHuman(opts: InsertedOptions = {}): Promise<{ items: TurnItem[]; stats: Record<string, number> }> {
  const dir = path.resolve(opts.dir ?? DEFAULT_DIR);
  const pauseMs = opts.pauseMs ?? 600;
  const maxSpeechS = opts.maxSpeechS ?? 15;
  const manifestFile = path.join(dir, 'manifest.json');
  const abs = (items: TurnItem[]) => items.map((i) => ({ ...i, file: path.resolve(dir, i.file) }));
  if (!opts.rebuild && fs.existsSync(manifestFile)) {
    const m = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as Manifest;
    if (m.version === VERSION && m.pauseMs === pauseMs && m.maxSpeechS === maxSpeechS && abs(m.items).every((i) => fs.existsSync(i.file))) return { items: abs(m.items), stats: m.stats };
  }
  fs.mkdirSync(dir, { recursive: true });
  const cacheFile = path.join(dir, 'whisper-cache.json');
  const cache: WhisperCache = fs.existsSync(cacheFile) ? (JSON.parse(fs.readFileSync(cacheFile, 'utf8')) as WhisperCache) : {};
  let rec: WhisperRecognizer | undefined;
  const stats: Record<string, number> = {};
  const transcribe = async (key: string, x8k: Float32Array): Promise<string> => {
    if (cache[key] === undefined) {
      rec ??= await WhisperRecognizer.load({ intraOpNumThreads: 2 });
      cache[key] = (await rec.transcribe(resample(x8k, RATE, 16000, { quality: qualityFor(RATE) }))).text;
      count(stats, 'whisperCalls');
      if (stats.whisperCalls! % 100 === 0) fs.writeFileSync(cacheFile, JSON.stringify(cache));
    }
    return cache[key];
  };
  const pad = Math.round(0.05 * RATE);
  const gap = Math.round((pauseMs / 1000) * RATE);
  const items: TurnItem[] = [];
  for (const p of listAsteriskPrompts()) {
    if (!p.speech || normalizeWords(p.text, 'plain').length < 4) continue;
    const { sampleRate, samples: x } = readWavPcm16(p.file);
    if (sampleRate !== RATE) continue;
    const seg = segmentSpeech(x, RATE);
    if ((seg.speechEnd - seg.speechStart) / RATE > maxSpeechS - pauseMs / 1000) continue;
    count(stats, 'prompts');
    const tokens = refTokens(p.text);
    const level = seg.threshold * 100;
    const from = seg.speechStart + Math.round(0.2 * RATE);
    const to = seg.speechEnd - Math.round(0.25 * RATE);
    const byToken = new Map<number, number>();
    for (const at of energyDips(x, from, to, level, seg.silences)) {
      count(stats, 'dips');
      const start = Math.max(0, seg.speechStart - pad);
      const before = await transcribe(`${p.name}@${start}-${at}`, x.subarray(start, at));
      const after = await transcribe(`${p.name}@${at}-${seg.speechEnd}`, x.subarray(at, Math.min(x.length, seg.speechEnd + pad)));
      const t = alignPause(tokens, before, after);
      if (t === null || t === tokens.length - 1) {
        count(stats, 'unaligned');
        continue;
      }
      if (!byToken.has(t)) byToken.set(t, at);
    }
    for (const [t, at] of byToken) {
      const tok = tokens[t]!;
      const kind = kindAfter(tok.raw, tokens[t + 1]?.raw);
      const word = tok.words[tok.words.length - 1] ?? '';
      const category = kind !== 'mid_clause' ? kind : FUNCTION_WORDS.has(word) ? 'after_function_word' : 'after_other_word';
      count(stats, category);
      // Background for the gap: the quietest half of the recording's trailing silence (Allison's prompts are clean).
      const tail = x.subarray(Math.min(x.length, seg.speechEnd + pad));
      const bg = pingPong(tail.length > 0.05 * RATE ? tail : new Float32Array(0), gap);
      const audio = splice(x, at, bg);
      const region = { start: at, end: at + gap };
      const speechEnd = seg.speechEnd + gap;
      const full = withTail(audio, speechEnd, region, RATE);
      const id = `hi_${p.name.replace(/\//g, '_')}_w${t}_8k`;
      const file = path.join(dir, 'items', `${id}.wav`);
      writeItem(file, full, RATE);
      items.push({ id, source: 'human', split: 'eval', voice: 'allison', rate: RATE, file, text: p.text, pauses: [{ ...region, kind, category, before: p.text.slice(0, tok.end).toLowerCase().trim() }], speechEnd });
    }
  }
  await rec?.release();
  fs.writeFileSync(cacheFile, JSON.stringify(cache));
  const rel = items.map((i) => ({ ...i, file: path.relative(dir, i.file) }));
  fs.writeFileSync(manifestFile, JSON.stringify({ version: VERSION, pauseMs, maxSpeechS, stats, items: rel } satisfies Manifest, null, 1));
  return { items, stats };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { items, stats } = await buildInsertedHuman({ rebuild: process.argv.includes('--rebuild') });
  console.log(JSON.stringify(stats), items.length);
}
