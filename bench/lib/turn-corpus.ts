// End-of-turn benchmark corpus: Asterisk prompts with one natural pause stretched (evaluation only) and synthesized
// sentences with one inserted hesitation (bench/lib/turn-synth.ts: fit and evaluation), as WAVs with pause positions
// and the true end of speech; built once into a cache directory.
import fs from 'node:fs';
import path from 'node:path';
import { qualityFor, resample } from '../../engine/audio/resample.js';
import { concatSamples } from '../../engine/audio/types.js';
import { WhisperRecognizer } from '../../engine/models/whisper/index.js';
import { listAsteriskPrompts, readWavPcm16 } from './asterisk-corpus.js';
import { FRAME_S, TAIL_S, count, pingPong, segmentSpeech, writeItem, type PauseKind, type Region, type TurnItem, type TurnPause } from './turn-items.js';
import { buildSynth } from './turn-synth.js';
import { normalizeWords } from './wer.js';

export { readItemAudio, segmentSpeech, type PauseKind, type TurnItem, type TurnPause } from './turn-items.js';

/** dir: cache, default <repo>/bench/.cache/turn-corpus; pauseMs: length of the stretched/inserted pause (600). */
export interface CorpusOptions { dir?: string; pauseMs?: number; rebuild?: boolean }

const VERSION = 2;
const DEFAULT_DIR = path.join(process.env.BENCH_CACHE_DIR ? path.resolve(process.env.BENCH_CACHE_DIR) : path.resolve(import.meta.dirname, '..', '.cache'), 'turn-corpus');

// ---- reference text and alignment

export interface RefToken { raw: string; end: number; words: string[] }

/** Whitespace tokens of a transcript (annotations blanked) with their normalised words and end offsets. */
export function refTokens(text: string): RefToken[] {
  const blanked = text.replace(/\[[^\]]*\]|\([^)]*\)|<[^>]*>/g, (m) => ' '.repeat(m.length));
  return [...blanked.matchAll(/\S+/g)].map((m) => ({ raw: m[0], end: m.index + m[0].length, words: normalizeWords(m[0]) }));
}

function editTable(a: readonly string[], b: readonly string[]): Uint16Array {
  const w = b.length + 1;
  const d = new Uint16Array((a.length + 1) * w);
  for (let i = 0; i <= a.length; i++) d[i * w] = i;
  for (let j = 0; j <= b.length; j++) d[j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const sub = d[(i - 1) * w + j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      d[i * w + j] = Math.min(sub, d[(i - 1) * w + j]! + 1, d[i * w + j - 1]! + 1);
    }
  }
  return d;
}

/**
 * How many leading reference words the hypothesis covers, or null when unsure: the best prefix must be the only
 * one at its cost, end on a word equal to the hypothesis's last, and cost at most a quarter of the words.
 */
function coveredPrefix(ref: readonly string[], hyp: readonly string[]): number | null {
  if (!hyp.length || !ref.length) return null;
  const w = hyp.length + 1;
  const d = editTable(ref, hyp);
  let [best, cost, ties] = [0, Infinity, 0];
  for (let i = 1; i <= ref.length; i++) {
    const c = d[i * w + hyp.length]!;
    if (c < cost) [best, cost, ties] = [i, c, 0];
    else if (c === cost) ties++;
  }
  if (ties || ref[best - 1] !== hyp[hyp.length - 1] || cost > Math.floor(Math.max(best, hyp.length) / 4)) return null;
  return best;
}

/** Token index after which the pause falls: Whisper's text before the pause and after it must agree. */
export function alignPause(tokens: RefToken[], before: string, after: string): number | null {
  const ref = tokens.flatMap((t) => t.words);
  const pre = coveredPrefix(ref, normalizeWords(before));
  const post = coveredPrefix([...ref].reverse(), normalizeWords(after).reverse());
  if (pre === null || post === null || pre + post !== ref.length) return null;
  let n = 0;
  for (const [i, t] of tokens.entries()) {
    n += t.words.length;
    if (n === pre) return t.words.length ? i : null;
    if (n > pre) return null;
  }
  return null;
}

export function kindAfter(token: string, next: string | undefined): PauseKind {
  if (/(\.\.\.|\u2026)["')\]]*$/.test(token)) return 'clause_end';
  if (/[.?!]["')\]]*$/.test(token)) return 'sentence_end';
  if (/[,;:\u2013\u2014-]["')\]]*$/.test(token) || /^[\u2013\u2014-]+$/.test(next ?? '')) return 'clause_end';
  return 'mid_clause';
}

// ---- human set

/** Whisper's text for each stretch of speech, by prompt and start sample; kept across rebuilds. */
export type WhisperCache = Record<string, string>;
const WHISPER_CACHE = 'whisper-cache.json';

/** The quietest half of a pause (10 ms steps): the background to loop. */
export function quietestHalf(x: Float32Array, s: Region, rate: number): Float32Array {
  const w = (s.end - s.start) >> 1;
  let [best, least] = [s.start, Infinity];
  for (let o = s.start; o + w <= s.end; o += Math.round(rate * FRAME_S)) {
    const e = x.subarray(o, o + w).reduce((a, v) => a + v * v, 0);
    if (e < least) [best, least] = [o, e];
  }
  return x.subarray(best, best + w);
}

/** Natural pause stretched to `target` samples by looping its quietest half in its middle; the audio and the stretched region. */
function stretchPause(x: Float32Array, s: Region, target: number, rate: number): { audio: Float32Array; region: Region } {
  const len = s.end - s.start;
  if (len >= target) return { audio: x, region: s };
  const mid = s.start + (len >> 1);
  const audio = concatSamples([x.subarray(0, mid), pingPong(quietestHalf(x, s, rate), target - len), x.subarray(mid)]);
  return { audio, region: { start: s.start, end: s.start + target } };
}

/** 3.5 s of background after the recording, from its trailing silence past 50 ms (or the pause when that is too short). */
export function withTail(x: Float32Array, speechEnd: number, pause: Region, rate: number): Float32Array {
  let src = x.subarray(speechEnd + Math.round(0.05 * rate));
  if (src.length < 0.05 * rate) src = quietestHalf(x, pause, rate);
  return concatSamples([x, pingPong(src, Math.ceil(TAIL_S * rate))]);
}

async function buildHuman(dir: string, pauseMs: number, stats: Record<string, number>): Promise<TurnItem[]> {
  const cacheFile = path.join(dir, WHISPER_CACHE);
  const cache: WhisperCache = fs.existsSync(cacheFile) ? (JSON.parse(fs.readFileSync(cacheFile, 'utf8')) as WhisperCache) : {};
  const used: WhisperCache = {};
  let rec: WhisperRecognizer | undefined;
  const transcribe = async (key: string, x8k: Float32Array): Promise<string> => {
    if (cache[key] === undefined) {
      rec ??= await WhisperRecognizer.load({ intraOpNumThreads: 2 });
      cache[key] = (await rec.transcribe(resample(x8k, 8000, 16000, { quality: qualityFor(8000) }))).text;
      count(stats, 'whisperCalls');
    }
    return (used[key] = cache[key]);
  };
  const items: TurnItem[] = [];
  const rate = 8000;
  const pad = Math.round(0.05 * rate);
  for (const p of listAsteriskPrompts()) {
    if (!p.speech || normalizeWords(p.text, 'plain').length < 5) continue;
    const { sampleRate, samples: x } = readWavPcm16(p.file);
    if (sampleRate !== rate) continue;
    const seg = segmentSpeech(x, rate);
    count(stats, 'promptsConsidered');
    if (!seg.silences.length) continue;
    count(stats, 'promptsWithPauses');
    // Whisper hears each stretch of speech between pauses once; the text before a pause is the pieces before it.
    const bounds = [seg.speechStart, ...seg.silences.flatMap((s) => [s.start, s.end]), seg.speechEnd];
    const pieces: string[] = [];
    for (let i = 0; i < bounds.length; i += 2) {
      const from = Math.max(0, bounds[i]! - pad);
      pieces.push(await transcribe(`${p.name}@${from}`, x.subarray(from, Math.min(x.length, bounds[i + 1]! + pad))));
    }
    const tokens = refTokens(p.text);
    for (const [k, s] of seg.silences.entries()) {
      count(stats, 'naturalPauses');
      const t = alignPause(tokens, pieces.slice(0, k + 1).join(' '), pieces.slice(k + 1).join(' '));
      if (t === null) {
        count(stats, 'humanUnaligned');
        continue;
      }
      const tok = tokens[t]!;
      const { audio, region } = stretchPause(x, s, Math.round((pauseMs / 1000) * rate), rate);
      const speechEnd = seg.speechEnd + audio.length - x.length;
      const full = withTail(audio, speechEnd, region, rate);
      const pause: TurnPause = { ...region, kind: kindAfter(tok.raw, tokens[t + 1]?.raw), category: 'natural', before: p.text.slice(0, tok.end).toLowerCase().trim() };
      // The phone-rate recording, and an upsampled copy at the web rate.
      for (const [r, m] of [[8000, 1], [16000, 2]] as const) {
        const id = `h_${p.name.replace(/\//g, '_')}_p${k}_${r / 1000}k`;
        const file = path.join(dir, 'human', `${id}.wav`);
        writeItem(file, r === rate ? full : resample(full, rate, r, { quality: qualityFor(rate) }), r);
        items.push({ id, source: 'human', split: 'eval', voice: 'allison', rate: r, file, text: p.text, pauses: [{ ...pause, start: m * pause.start, end: m * pause.end }], speechEnd: m * speechEnd });
      }
    }
  }
  await rec?.release();
  fs.writeFileSync(cacheFile, JSON.stringify(used, null, 1));
  return items;
}

// ---- build and cache

interface Manifest { version: number; pauseMs: number; stats: Record<string, number>; items: TurnItem[] }

/** Counts from the last build (pauses found, aligned, dropped; Whisper calls; espeak break lengths). */
export function corpusStats(opts: CorpusOptions = {}): Record<string, number> {
  const file = path.join(path.resolve(opts.dir ?? DEFAULT_DIR), 'manifest.json');
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Manifest).stats : {};
}

/** Loads the cached corpus, or builds it in a fresh directory that then replaces the old one (readers never see half a corpus). */
export async function buildTurnCorpus(opts: CorpusOptions = {}): Promise<TurnItem[]> {
  const dir = path.resolve(opts.dir ?? DEFAULT_DIR);
  const pauseMs = opts.pauseMs ?? 600;
  const abs = (items: TurnItem[]) => items.map((i) => ({ ...i, file: path.resolve(dir, i.file) }));
  const manifestFile = path.join(dir, 'manifest.json');
  if (!opts.rebuild && fs.existsSync(manifestFile)) {
    const m = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as Manifest;
    const items = abs(m.items);
    if (m.version === VERSION && m.pauseMs === pauseMs && items.every((i) => fs.existsSync(i.file))) return items;
  }
  const work = `${dir}.building-${process.pid}`;
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  if (fs.existsSync(path.join(dir, WHISPER_CACHE))) fs.copyFileSync(path.join(dir, WHISPER_CACHE), path.join(work, WHISPER_CACHE));
  const stats: Record<string, number> = {};
  const items = [...(await buildHuman(work, pauseMs, stats)), ...(await buildSynth(work, pauseMs, stats))].map((i) => ({ ...i, file: path.relative(work, i.file) }));
  fs.writeFileSync(path.join(work, 'manifest.json'), JSON.stringify({ version: VERSION, pauseMs, stats, items } satisfies Manifest, null, 1));
  const old = `${dir}.old-${process.pid}`;
  if (fs.existsSync(dir)) fs.renameSync(dir, old);
  fs.renameSync(work, dir);
  fs.rmSync(old, { recursive: true, force: true });
  return abs(items);
}
