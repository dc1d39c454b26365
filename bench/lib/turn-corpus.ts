// End-of-turn benchmark corpus: Asterisk prompts with one natural pause stretched (eval only) and espeak-ng
// sentences with one inserted hesitation (fit + eval), as WAVs with pause positions and the true end of speech.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { decodeMuLaw, encodeMuLaw } from '../../engine/audio/codecs.js';
import { qualityFor, resample } from '../../engine/audio/resample.js';
import { concatSamples } from '../../engine/audio/types.js';
import { readWav, writeWav } from '../../engine/audio/wav.js';
import { WhisperRecognizer } from '../../engine/models/whisper/index.js';
import { listAsteriskPrompts, readWavPcm16 } from './asterisk-corpus.js';
import { mulberry32, seedOf } from './false-barge-sounds.js';
import { normalizeWords } from './wer.js';

export type PauseKind = 'mid_clause' | 'clause_end' | 'sentence_end';
export interface TurnPause {
  /** Sample indexes (at the item's rate) of the stretched silence: [start, end). */
  start: number; end: number;
  kind: PauseKind;
  /** 'after_determiner' | 'after_preposition' | 'after_conjunction' | 'my_name_is' | 'mid_number' | 'list' | 'clause_end' | 'sentence_end' | 'natural' (human set). */
  category: string;
  /** Reference text before the pause, lower case, punctuation as in the text. */
  before: string;
}
export interface TurnItem {
  id: string;
  source: 'human' | 'synth';
  /** 'fit': may be used to fit parameters (synth only). 'eval': evaluation only (all human items). */
  split: 'fit' | 'eval';
  voice: string;
  rate: 8000 | 16000 | 24000;
  /** Absolute path of a 16-bit mono PCM WAV at `rate`. */
  file: string;
  text: string;
  /** What the agent asked just before, when it matters. */
  question?: string;
  /** One stretched hesitation, or none for items that measure only the end delay. */
  pauses: TurnPause[];
  /** Sample index where speech ends; at least 3.5 s of silence/background follow it. */
  speechEnd: number;
  /** Category of a synth item without a pause: 'yes_no' | 'short_answer' | 'full_turn'. */
  category?: string;
}
/** dir: cache, default <repo>/bench/.cache/turn-corpus; pauseMs: length of the stretched/inserted pause (600). */
export interface CorpusOptions { dir?: string; pauseMs?: number; rebuild?: boolean }

const VERSION = 1;
const DEFAULT_DIR = path.resolve(import.meta.dirname, '..', '.cache', 'turn-corpus');
const TAIL_S = 3.5;
const FRAME_S = 0.01;
/** A frame is speech when its RMS is within 40 dB of the file's speech level. */
const SILENCE_DB = -40;
const MIN_PAUSE_S = 0.1;
const ESPEAK_RATE = 22050;
const LEAD_S = 0.3;
const SYNTH_RATES = [8000, 16000, 24000] as const;

// ---- audio analysis

interface Region { start: number; end: number }
interface Segmentation { silences: Region[]; speechStart: number; speechEnd: number; threshold: number }

/** Speech frames by energy relative to the file's speech level; inner silences of at least `minS` between them. */
export function segmentSpeech(x: Float32Array, rate: number, minS = MIN_PAUSE_S, silenceDb = SILENCE_DB): Segmentation {
  const frame = Math.round(rate * FRAME_S);
  const rms = Array.from({ length: Math.floor(x.length / frame) }, (_, f) => Math.sqrt(x.subarray(f * frame, (f + 1) * frame).reduce((e, v) => e + v * v, 0) / frame));
  // Speech level: 90th percentile of frames within 40 dB of the loudest, so the amount of silence does not move it.
  const peak = rms.reduce((m, v) => Math.max(m, v), 0);
  const loud = rms.filter((v) => v > peak / 100).sort((a, b) => a - b);
  const threshold = (loud[Math.floor(0.9 * loud.length)] ?? 0) * 10 ** (silenceDb / 20);
  const speech = rms.map((r) => r > threshold);
  const first = speech.indexOf(true);
  const last = speech.lastIndexOf(true);
  const silences: Region[] = [];
  for (let f = first + 1; first >= 0 && f < last; f++) {
    if (speech[f]) continue;
    let g = f;
    while (!speech[g]) g++;
    if (g - f >= Math.round(minS / FRAME_S)) silences.push({ start: f * frame, end: g * frame });
    f = g;
  }
  return { silences, speechStart: Math.max(0, first) * frame, speechEnd: (last + 1) * frame, threshold };
}

/** `n` samples of background made by playing `src` forwards and backwards (no jumps at the joins). */
function pingPong(src: Float32Array, n: number): Float32Array {
  const out = new Float32Array(n);
  if (!src.length || src.every((v) => v === 0)) return out;
  const period = Math.max(1, 2 * src.length - 2);
  for (let i = 0; i < n; i++) {
    const k = i % period;
    out[i] = src[k < src.length ? k : period - k]!;
  }
  return out;
}

const count = (stats: Record<string, number>, key: string): number => (stats[key] = (stats[key] ?? 0) + 1);

function writeItem(file: string, x: Float32Array, rate: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, writeWav(x, rate));
}

export function readItemAudio(item: TurnItem): Float32Array {
  const audio = readWav(fs.readFileSync(item.file));
  if (audio.sampleRate !== item.rate) throw new Error(`${item.file}: ${audio.sampleRate} Hz, expected ${item.rate}`);
  return audio.samples;
}

// ---- reference text and alignment

interface RefToken { raw: string; end: number; words: string[] }

/** Whitespace tokens of a transcript (annotations blanked) with their normalised words and end offsets. */
function refTokens(text: string): RefToken[] {
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
function alignPause(tokens: RefToken[], before: string, after: string): number | null {
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

function kindAfter(token: string, next: string | undefined): PauseKind {
  if (/(\.\.\.|\u2026)["')\]]*$/.test(token)) return 'clause_end';
  if (/[.?!]["')\]]*$/.test(token)) return 'sentence_end';
  if (/[,;:\u2013\u2014-]["')\]]*$/.test(token) || /^[\u2013\u2014-]+$/.test(next ?? '')) return 'clause_end';
  return 'mid_clause';
}

// ---- human set

/** Whisper's text for each stretch of speech, by prompt and start sample; kept across rebuilds. */
type WhisperCache = Record<string, string>;
const WHISPER_CACHE = 'whisper-cache.json';

/** The quietest half of a pause (10 ms steps): the background to loop. */
function quietestHalf(x: Float32Array, s: Region, rate: number): Float32Array {
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
function withTail(x: Float32Array, speechEnd: number, pause: Region, rate: number): Float32Array {
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

// ---- synthesized set

/** The barge-in bench's seeded generator, seeded from a string. */
const prng = (seed: string) => mulberry32(seedOf(seed));

const DIGITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const FILLS: Record<string, string[]> = {
  first: ['John', 'Maria', 'David', 'Priya', 'Ahmed', 'Laura', 'Kevin', 'Mei', 'Carlos', 'Sarah', 'Tom', 'Aisha', 'Peter', 'Nina'],
  last: ['Smith', 'Garcia', 'Chen', 'Patel', 'Johnson', 'Nguyen', 'Brown', 'Okafor', 'Miller', 'Rossi', 'Walker', 'Kim'],
  place: ['Boston', 'Denver', 'Main Street', 'Chicago', 'the mall', 'Oak Avenue', 'Seattle', 'downtown'],
  day: ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'],
  time: ['nine thirty', 'three o\'clock', 'noon', 'seven fifteen', 'half past five'],
  item: ['laptop', 'coffee maker', 'blender', 'jacket', 'printer', 'phone', 'vacuum cleaner', 'desk lamp'],
  food: ['eggs', 'milk', 'bread', 'butter', 'rice', 'coffee', 'apples', 'cheese', 'pasta', 'onions', 'tomatoes', 'yogurt'],
};

/** Expands `{a|b}` alternatives, `$name` fills (no repeats within one text) and `$d2`..`$d4` digit groups. */
function expand(template: string, rnd: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const used = new Set<string>();
  return template
    .replace(/\{([^}]*)\}/g, (_, alts: string) => pick(alts.split('|')))
    .replace(/\$d([2-4])/g, (_, n: string) => Array.from({ length: Number(n) }, () => pick(DIGITS)).join(' '))
    .replace(/\$([a-z]+)/g, (m, key: string) => {
      const pool = (FILLS[key] ?? [m]).filter((v) => !used.has(v));
      const v = pick(pool.length ? pool : [m]);
      used.add(v);
      return v;
    });
}

interface Template { category: string; kind: PauseKind | null; count: number; q?: string; t: string[] }
/** `^` marks the inserted pause; kind null: no pause (the turn ends at the end). */
const TEMPLATES: Template[] = [
  { category: 'after_determiner', kind: 'mid_clause', count: 20, t: [
    "I'd like to book {the|a} ^ {table for two|table for four at $time|room for $day night|appointment on $day}.",
    'Can you send me {the|my} ^ {invoice|receipt|tracking number|new card} {again|by email|for last month}?',
    'I want to change {the|my} ^ {delivery address|payment method|appointment time|billing date}.',
    "I'm looking for {a|the} ^ {pharmacy near $place|hotel near the airport|cheapest flight to $place|manager on duty}.",
    'Could you check {your|the} ^ {opening hours for $day|return policy for shoes|price of the $item}?',
    'I lost {my|the} ^ {credit card|phone charger|receipt for the $item} {yesterday|last week|at the station}.'] },
  { category: 'after_preposition', kind: 'mid_clause', count: 20, t: [
    "I'm calling to ^ {ask about my bill|change my booking|report a problem with my $item}.",
    "I'd like to speak {with|to} ^ {someone in billing|the manager|a nurse|customer support}.",
    'The package was supposed to arrive {on|by} ^ {$day|Monday morning|the end of the week}.',
    "I'm staying {in|at} ^ {room four twelve|the hotel on $place|the city center} {until $day|for three nights|this week}.",
    'I need a taxi from ^ {the airport|the train station|the hotel} to {$place|the city center} {at $time|right now}.',
    "This is {for|about} ^ {my daughter's appointment|the order I placed on $day|the $item I bought last week}."] },
  { category: 'after_conjunction', kind: 'mid_clause', count: 20, t: [
    'I paid the bill {and|but} ^ it still shows as open.', 'I tried to log in but ^ the page keeps {timing out|saying my password is wrong}.',
    "I'm calling because ^ {my card was charged twice|the $item I ordered is broken|nobody called me back}.",
    'The heating stopped working so ^ {I need someone to come today|we had to move to a hotel}.',
    'Can you come on $day or ^ {on $day|maybe later in the week}?',
    "I'd like the $item and ^ {a large coffee|two bottles of water|the extended warranty}."] },
  { category: 'my_name_is', kind: 'mid_clause', count: 20, q: 'Can I have your name and number, please?', t: [
    'My name is ^ $first $last.', 'Hi, this is ^ $first $last {from $place|calling about my order}.',
    'My email is ^ $first dot $last at {gmail|yahoo|outlook} dot com.', 'My phone number is ^ $d3 $d3 $d4.', 'The reservation is under ^ $last.'] },
  { category: 'mid_number', kind: 'mid_clause', count: 20, q: 'What is your phone number?', t: ['$d3 ^ $d3 $d4.', '$d3 $d3 ^ $d4.', "It's $d3 ^ $d3 $d4."] },
  { category: 'mid_number', kind: 'mid_clause', count: 8, q: 'What is your account number?', t: ['$d4 ^ $d4.', '$d4 $d4 ^ $d4 $d4.', "It's $d3 ^ $d3 $d2."] },
  // A list comma is not a clause end: the turn is plainly unfinished, so these count as mid_clause.
  { category: 'list', kind: 'mid_clause', count: 20, q: 'What would you like to order?', t: [
    'I need $food, $food, ^ and $food.', 'Please add $food, $food, ^ and $food to my order.', "I'd like a $item, a $item, ^ and a $item.",
    'We are free on $day, $day, ^ and $day.', 'I ordered the $item, the $item, ^ and the $item.'] },
  { category: 'clause_end', kind: 'clause_end', count: 20, t: [
    'I called {yesterday|on $day|twice last week}, ^ but nobody {answered|called me back}.', "If it's not too late, ^ I'd like to {change|cancel} my order.",
    'When I {got home|opened the box}, ^ the $item was {broken|missing}.', "I checked my statement, ^ and there's a charge I don't recognize.",
    'Before you transfer me, ^ can I ask one more thing?', "{Honestly|Well|Actually}, ^ I'm not sure what happened to {my order|the $item}."] },
  { category: 'sentence_end', kind: 'sentence_end', count: 20, t: [
    "I want to cancel my order. ^ It hasn't shipped yet.", "My internet is down. ^ It's been out since {this morning|$day}.",
    "I'd like to book a table. ^ It's for {four|six|two} people on $day.", 'Thanks for calling back. ^ I have a question about my {bill|order|appointment}.',
    "The $item arrived broken. ^ I'd like a replacement.", "I'm at the front desk. ^ {Nobody is here|The door is locked}."] },
  { category: 'yes_no', kind: null, count: 10, q: 'Can I help you with anything else?', t: ["{No, thanks|No, that's all|Nope, that's it|No|No, thank you|Yes|Yes, please}."] },
  { category: 'yes_no', kind: null, count: 6, q: 'Is that correct?', t: ["{Yes|Yes, that's right|No|Correct|No, it's not}."] },
  { category: 'short_answer', kind: null, count: 6, q: 'When would you like to come in?', t: ['$day at {three|ten thirty|noon}.', '{Tomorrow morning|Next week|Any time after four}.'] },
  { category: 'short_answer', kind: null, count: 6, q: 'Can I have your name and number, please?', t: ['$first $last.', '$d3 $d3 $d4.'] },
  { category: 'short_answer', kind: null, count: 4, q: 'When did this happen?', t: ['{About an hour ago|Last night|This morning|On $day}.'] },
];
// Whisper tiny.en word error on whole 16 kHz items: 7-23% by voice, 16% overall; en-us+m3 and en-us+f4 (23%, 28%) were left out.
const VOICES = ['en-us', 'en-us+klatt', 'en-us+f2', 'en-us+f5', 'en-gb+m1', 'en-gb-x-rp+f3', 'en-us-nyc+m5', 'en-us+klatt4'];
const FULL_TURNS = 20;

interface Script { category: string; kind: PauseKind | null; q?: string; before: string; after: string; voice: string; speed: number; pitch: number }

/** The texts to speak, each with its voice and prosody; `before` is empty for texts without a pause. */
function synthScripts(): Script[] {
  const out: Script[] = [];
  const seen = new Set<string>();
  const add = (tpl: Template, raw: string, rnd: () => number, category = tpl.category, withPause = tpl.kind !== null): boolean => {
    const [b = '', a = ''] = raw.split('^').map((s) => s.trim());
    const [before, after] = withPause ? [b, a] : ['', `${b} ${a}`.trim()];
    const voice = VOICES[Math.floor(rnd() * VOICES.length)]!;
    const key = `${before}|${after}|${voice}`;
    if (seen.has(key)) return false;
    seen.add(key);
    out.push({ category, kind: withPause ? tpl.kind : null, q: tpl.q, before, after, voice, speed: 140 + Math.floor(rnd() * 56), pitch: 35 + Math.floor(rnd() * 36) });
    return true;
  };
  for (const [n, tpl] of TEMPLATES.entries()) {
    const rnd = prng(`${tpl.category}#${n}`);
    for (let made = 0, tries = 0; made < tpl.count && tries < 50 * tpl.count; tries++) {
      if (add(tpl, expand(tpl.t[made % tpl.t.length]!, rnd), rnd)) made++;
    }
  }
  // Complete sentences: pause templates spoken without the pause.
  const rnd = prng('full_turn');
  const pauseTpls = TEMPLATES.filter((t) => t.kind !== null);
  for (let made = 0, tries = 0; made < FULL_TURNS && tries < 1000; tries++) {
    const tpl = pauseTpls[Math.floor(rnd() * pauseTpls.length)]!;
    if (add(tpl, expand(tpl.t[Math.floor(rnd() * tpl.t.length)]!, rnd), rnd, 'full_turn', false)) made++;
  }
  return out;
}

const fullText = (s: Script): string => (s.before ? `${s.before} ${s.after}` : s.after);
const xmlEscape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function espeak(ssml: string, s: Script, tmp: string): Float32Array {
  execFileSync('espeak-ng', ['-m', '-v', s.voice, '-s', String(s.speed), '-p', String(s.pitch), '-w', tmp, ssml]);
  const audio = readWav(fs.readFileSync(tmp));
  if (audio.sampleRate !== ESPEAK_RATE) throw new Error(`espeak-ng wrote ${audio.sampleRate} Hz`);
  return audio.samples;
}

/** The longest run of exact digital zeros inside [from, to), or the middle point when there are none. */
function zeroCore(x: Float32Array, from: number, to: number): Region {
  let best: Region = { start: (from + to) >> 1, end: (from + to) >> 1 };
  for (let i = from; i < to; i++) {
    if (x[i] !== 0) continue;
    let j = i;
    while (j < to && x[j] === 0) j++;
    if (j - i > best.end - best.start) best = { start: i, end: j };
    i = j;
  }
  return best;
}

interface Pieces { a: Float32Array; b?: Float32Array; tailA: number; headB: number }

/**
 * Speech before and after the inserted break, with the break's exact zeros cut out; `tailA`/`headB` are the low-level
 * samples (breath, decay: 50 dB under speech) kept at the end of `a` and start of `b`. Null when the break is not found.
 */
function renderPieces(s: Script, pauseMs: number, tmp: string, stats: Record<string, number>): Pieces | null {
  const text = s.before ? `${xmlEscape(s.before)} <break time="${pauseMs}ms"/> ${xmlEscape(s.after)}` : xmlEscape(s.after);
  const x = espeak(`<speak>${text}</speak>`, s, tmp);
  let end = x.length;
  while (end > 0 && x[end - 1] === 0) end--;
  const speech = x.subarray(Math.max(0, x.findIndex((v) => v !== 0)), end);
  if (!s.before) return { a: speech, tailA: 0, headB: 0 };
  const runs = segmentSpeech(speech, ESPEAK_RATE, 0.05, -50).silences.sort((p, q) => q.end - q.start - (p.end - p.start));
  const br = runs[0];
  const len = br ? (br.end - br.start) / ESPEAK_RATE : 0;
  const second = runs[1] ? (runs[1].end - runs[1].start) / ESPEAK_RATE : 0;
  if (!br || len < 0.5 * (pauseMs / 1000) || len > 1.6 * (pauseMs / 1000) || second > 0.6 * len) return null;
  stats.breakMinMs = Math.min(stats.breakMinMs ?? Infinity, Math.round(len * 1000));
  stats.breakMaxMs = Math.max(stats.breakMaxMs ?? 0, Math.round(len * 1000));
  const core = zeroCore(speech, br.start, br.end);
  return { a: speech.subarray(0, core.start), b: speech.subarray(core.end), tailA: core.start - br.start, headB: br.end - core.end };
}

function buildSynth(dir: string, pauseMs: number, stats: Record<string, number>): TurnItem[] {
  const items: TurnItem[] = [];
  const tmp = path.join(dir, 'espeak.tmp.wav');
  const counters = new Map<string, number>();
  const scripts = synthScripts();
  // 70% of the distinct texts (ordered by hash) are 'fit', so a sentence is never in both splits.
  const texts = [...new Set(scripts.map(fullText))].sort((p, q) => seedOf(p) - seedOf(q) || p.localeCompare(q));
  const fit = new Set(texts.slice(0, Math.round(0.7 * texts.length)));
  for (const s of scripts) {
    const pieces = renderPieces(s, pauseMs, tmp, stats);
    if (!pieces) {
      count(stats, 'synthNoBreak');
      continue;
    }
    const text = fullText(s);
    const split = fit.has(text) ? 'fit' : 'eval';
    const n = counters.get(s.category) ?? 0;
    counters.set(s.category, n + 1);
    const id = `s_${s.category}_${String(n).padStart(3, '0')}`;
    for (const rate of SYNTH_RATES) {
      const toRate = (n: number) => Math.round((n * rate) / ESPEAK_RATE);
      const a = resample(pieces.a, ESPEAK_RATE, rate, { quality: qualityFor(rate) });
      const b = pieces.b && resample(pieces.b, ESPEAK_RATE, rate, { quality: qualityFor(rate) });
      const lead = new Float32Array(Math.round(LEAD_S * rate));
      const pauseN = Math.round((pauseMs / 1000) * rate);
      const gap = new Float32Array(Math.max(0, pauseN - toRate(pieces.tailA) - toRate(pieces.headB)));
      let x = concatSamples(b ? [lead, a, gap, b] : [lead, a]);
      if (rate === 8000) x = decodeMuLaw(encodeMuLaw(x));
      const speechEnd = segmentSpeech(x, rate).speechEnd;
      const full = new Float32Array(Math.max(x.length, speechEnd + Math.ceil(TAIL_S * rate)));
      full.set(x);
      const file = path.join(dir, 'synth', `${id}_${rate / 1000}k.wav`);
      writeItem(file, full, rate);
      const start = lead.length + a.length - toRate(pieces.tailA);
      const pauses: TurnPause[] = b ? [{ start, end: start + Math.max(pauseN, toRate(pieces.tailA) + toRate(pieces.headB)), kind: s.kind!, category: s.category, before: s.before.toLowerCase() }] : [];
      items.push({ id: `${id}_${rate / 1000}k`, source: 'synth', split, voice: `espeak:${s.voice} s${s.speed} p${s.pitch}`, rate, file, text, ...(s.q ? { question: s.q } : {}), pauses, speechEnd, ...(b ? {} : { category: s.category }) });
    }
  }
  fs.rmSync(tmp, { force: true });
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
  const items = [...(await buildHuman(work, pauseMs, stats)), ...buildSynth(work, pauseMs, stats)].map((i) => ({ ...i, file: path.relative(work, i.file) }));
  fs.writeFileSync(path.join(work, 'manifest.json'), JSON.stringify({ version: VERSION, pauseMs, stats, items } satisfies Manifest, null, 1));
  const old = `${dir}.old-${process.pid}`;
  if (fs.existsSync(dir)) fs.renameSync(dir, old);
  fs.renameSync(work, dir);
  fs.rmSync(old, { recursive: true, force: true });
  return abs(items);
}
