// The turn corpus's synthesized set: templated caller sentences with one hesitation inserted at a word boundary
// (mid-clause: after a determiner, a preposition, a conjunction, "my name is", inside a dictated number, inside a
// list; or at a clause or sentence end), and whole turns without one. Two engines, so the fit does not learn one
// synthesizer's habits: espeak-ng (an SSML break) and Flite (the sentence spoken whole, cut at the word's last
// phone from flite's own segment timings: the prosody before the cut is the sentence's, not a final fall).
// A text is in the fit or the eval split by its hash, whichever engine speaks it.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { decodeMuLaw, encodeMuLaw } from '../../engine/audio/codecs.js';
import { qualityFor, resample } from '../../engine/audio/resample.js';
import { concatSamples } from '../../engine/audio/types.js';
import { readWav } from '../../engine/audio/wav.js';
import { FliteSynthesizer, type FliteVoiceId } from '../../engine/models/flite.js';
import { mulberry32, seedOf } from './false-barge-sounds.js';
import { TAIL_S, count, segmentSpeech, writeItem, type PauseKind, type Region, type TurnItem, type TurnPause } from './turn-items.js';

const ESPEAK_RATE = 22050;
const LEAD_S = 0.3;
const SYNTH_RATES = [8000, 16000, 24000] as const;
/** Share of the distinct texts in the fit split. */
const FIT_SHARE = 0.7;

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
const ESPEAK_VOICES = ['en-us', 'en-us+klatt', 'en-us+f2', 'en-us+f5', 'en-gb+m1', 'en-gb-x-rp+f3', 'en-us-nyc+m5', 'en-us+klatt4'];
const FLITE_CORPUS_VOICES: FliteVoiceId[] = ['kal16', 'slt', 'rms', 'awb', 'kal'];
const FULL_TURNS = 20;

type Engine = 'espeak' | 'flite';
/** speed: words per minute (espeak) or a rate multiplier (flite); pitch: espeak's 0-99 (flite: unused). */
interface Script { engine: Engine; category: string; kind: PauseKind | null; q?: string; before: string; after: string; voice: string; speed: number; pitch: number }

/**
 * The texts one engine speaks, each with its voice and prosody; `before` is empty for texts without a pause.
 * `share` scales the templates' counts; the seeds make the same list on every build.
 */
function synthScripts(engine: Engine, share: number): Script[] {
  const voices = engine === 'espeak' ? ESPEAK_VOICES : FLITE_CORPUS_VOICES;
  const seed = (s: string) => prng(engine === 'espeak' ? s : `${engine}:${s}`);
  const out: Script[] = [];
  const seen = new Set<string>();
  const add = (tpl: Template, raw: string, rnd: () => number, category = tpl.category, withPause = tpl.kind !== null): boolean => {
    const [b = '', a = ''] = raw.split('^').map((s) => s.trim());
    const [before, after] = withPause ? [b, a] : ['', `${b} ${a}`.trim()];
    const voice = voices[Math.floor(rnd() * voices.length)]!;
    const key = `${before}|${after}|${voice}`;
    if (seen.has(key)) return false;
    seen.add(key);
    const [r1, r2] = [rnd(), rnd()];
    const [speed, pitch] = engine === 'espeak' ? [140 + Math.floor(r1 * 56), 35 + Math.floor(r2 * 36)] : [+(0.85 + r1 * 0.35).toFixed(2), 0];
    out.push({ engine, category, kind: withPause ? tpl.kind : null, q: tpl.q, before, after, voice, speed, pitch });
    return true;
  };
  for (const [n, tpl] of TEMPLATES.entries()) {
    const rnd = seed(`${tpl.category}#${n}`);
    const want = Math.round(share * tpl.count);
    for (let made = 0, tries = 0; made < want && tries < 50 * want; tries++) {
      if (add(tpl, expand(tpl.t[made % tpl.t.length]!, rnd), rnd)) made++;
    }
  }
  // Complete sentences: pause templates spoken without the pause.
  const rnd = seed('full_turn');
  const pauseTpls = TEMPLATES.filter((t) => t.kind !== null);
  const want = Math.round(share * FULL_TURNS);
  for (let made = 0, tries = 0; made < want && tries < 1000; tries++) {
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

/**
 * Speech before and after the inserted pause at the engine's `rate`; `tailA`/`headB` are low-level samples (breath,
 * decay) kept at the end of `a` and the start of `b` that count as part of the pause.
 */
interface Pieces { rate: number; a: Float32Array; b?: Float32Array; tailA: number; headB: number }

/**
 * espeak-ng with an SSML break; the break's exact zeros are cut out, its low-level edges (50 dB under speech) kept.
 * Null when the break is not found.
 */
function renderEspeak(s: Script, pauseMs: number, tmp: string, stats: Record<string, number>): Pieces | null {
  const text = s.before ? `${xmlEscape(s.before)} <break time="${pauseMs}ms"/> ${xmlEscape(s.after)}` : xmlEscape(s.after);
  const x = espeak(`<speak>${text}</speak>`, s, tmp);
  let end = x.length;
  while (end > 0 && x[end - 1] === 0) end--;
  const speech = x.subarray(Math.max(0, x.findIndex((v) => v !== 0)), end);
  if (!s.before) return { rate: ESPEAK_RATE, a: speech, tailA: 0, headB: 0 };
  const runs = segmentSpeech(speech, ESPEAK_RATE, 0.05, -50).silences.sort((p, q) => q.end - q.start - (p.end - p.start));
  const br = runs[0];
  const len = br ? (br.end - br.start) / ESPEAK_RATE : 0;
  const second = runs[1] ? (runs[1].end - runs[1].start) / ESPEAK_RATE : 0;
  if (!br || len < 0.5 * (pauseMs / 1000) || len > 1.6 * (pauseMs / 1000) || second > 0.6 * len) return null;
  stats.breakMinMs = Math.min(stats.breakMinMs ?? Infinity, Math.round(len * 1000));
  stats.breakMaxMs = Math.max(stats.breakMaxMs ?? 0, Math.round(len * 1000));
  const core = zeroCore(speech, br.start, br.end);
  return { rate: ESPEAK_RATE, a: speech.subarray(0, core.start), b: speech.subarray(core.end), tailA: core.start - br.start, headB: br.end - core.end };
}

const FADE_S = 0.008;
function fade(x: Float32Array, rate: number, edge: 'in' | 'out'): Float32Array {
  const y = x.slice();
  const n = Math.min(y.length, Math.round(FADE_S * rate));
  for (let i = 0; i < n; i++) y[edge === 'out' ? y.length - 1 - i : i]! *= i / n;
  return y;
}

/**
 * Flite speaks the whole text; the pause goes after the last phone of `before` (found by matching the phones flite
 * gives `before` alone against the whole text's), replacing a silence that follows it (a sentence end's). Null when
 * the phones do not match (a word pronounced differently in context).
 */
async function renderFlite(s: Script, flite: FliteSynthesizer): Promise<Pieces | null> {
  const opts = { voice: s.voice, speed: s.speed };
  const { audio, segments } = await flite.synthesizeWithSegments(fullText(s), opts);
  const { sampleRate: rate, samples } = audio;
  const seg = segmentSpeech(samples, rate, 0.05, -50);
  const x = samples.subarray(seg.speechStart, seg.speechEnd);
  if (!s.before) return { rate, a: x, tailA: 0, headB: 0 };
  const want = (await flite.synthesizeWithSegments(s.before, opts)).segments.filter((p) => p.phone !== 'pau').map((p) => p.phone);
  let [last, matched] = [-1, 0];
  for (const [i, p] of segments.entries()) {
    if (matched === want.length) break;
    if (p.phone === 'pau') continue;
    if (p.phone !== want[matched]) return null;
    [last, matched] = [i, matched + 1];
  }
  if (!want.length || matched < want.length) return null;
  const cutA = Math.round(segments[last]!.end * rate) - seg.speechStart;
  const next = segments[last + 1];
  const cutB = next?.phone === 'pau' ? Math.round(next.end * rate) - seg.speechStart : cutA;
  if (cutA <= 0 || cutB >= x.length) return null;
  return { rate, a: fade(x.subarray(0, cutA), rate, 'out'), b: fade(x.subarray(cutB), rate, 'in'), tailA: 0, headB: 0 };
}

/** The item at every rate: lead-in silence, `a`, the pause, `b`, a silent tail; 8 kHz through mu-law as on a phone line. */
function writeItems(dir: string, id: string, s: Script, split: 'fit' | 'eval', pieces: Pieces, pauseMs: number): TurnItem[] {
  const items: TurnItem[] = [];
  const voice = s.engine === 'espeak' ? `espeak:${s.voice} s${s.speed} p${s.pitch}` : `flite:${s.voice} x${s.speed}`;
  for (const rate of SYNTH_RATES) {
    const toRate = (n: number) => Math.round((n * rate) / pieces.rate);
    const a = resample(pieces.a, pieces.rate, rate, { quality: qualityFor(rate) });
    const b = pieces.b && resample(pieces.b, pieces.rate, rate, { quality: qualityFor(rate) });
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
    items.push({ id: `${id}_${rate / 1000}k`, source: 'synth', split, voice, rate, file, text: fullText(s), ...(s.q ? { question: s.q } : {}), pauses, speechEnd, ...(b ? {} : { category: s.category }) });
  }
  return items;
}

/** Flite's share of the templates' counts (espeak-ng speaks them all). */
const FLITE_SHARE = 0.6;

export async function buildSynth(dir: string, pauseMs: number, stats: Record<string, number>): Promise<TurnItem[]> {
  const items: TurnItem[] = [];
  const tmp = path.join(dir, 'espeak.tmp.wav');
  const flite = new FliteSynthesizer({ workers: 0 });
  const counters = new Map<string, number>();
  // A text is 'fit' by its hash alone, so it is never in both splits, whichever engine or voice speaks it.
  const splitOf = (text: string): 'fit' | 'eval' => (seedOf(text) / 2 ** 32 < FIT_SHARE ? 'fit' : 'eval');
  for (const s of [...synthScripts('espeak', 1), ...synthScripts('flite', FLITE_SHARE)]) {
    const pieces = s.engine === 'espeak' ? renderEspeak(s, pauseMs, tmp, stats) : await renderFlite(s, flite);
    if (!pieces) {
      count(stats, s.engine === 'espeak' ? 'synthNoBreak' : 'fliteNoAlign');
      continue;
    }
    const prefix = s.engine === 'espeak' ? 's' : 'f';
    const n = counters.get(`${prefix}${s.category}`) ?? 0;
    counters.set(`${prefix}${s.category}`, n + 1);
    items.push(...writeItems(dir, `${prefix}_${s.category}_${String(n).padStart(3, '0')}`, s, splitOf(fullText(s)), pieces, pauseMs));
  }
  fs.rmSync(tmp, { force: true });
  await flite.close();
  return items;
}
