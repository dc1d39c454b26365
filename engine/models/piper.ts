// Piper-format neural voices (VITS exported to ONNX): `voice.onnx` + `voice.onnx.json`, phonemes from espeak-ng.
//
// Follows piper / piper-phonemize:
// - Text is phonemized clause by clause with espeak-ng in IPA mode (no ties, no separators; words separated by
//   spaces); the text's clause terminator is appended as a phoneme: '.', '?', '!' (which also end the
//   sentence) or ', ' / ': ' / '; ' (punctuation plus a space). Language-switch flags "(en)" are removed,
//   the IPA is NFD-decomposed and split into code points; the voice's optional phoneme_map is applied.
// - Each sentence becomes ids: BOS '^', pad '_', then every phoneme followed by pad '_', then EOS '$'
//   (phonemes missing from phoneme_id_map are skipped), and is synthesised separately.
// - Model inputs: input int64 [1, n], input_lengths int64 [1], scales float32 [3] = [noise_scale,
//   length_scale, noise_w], and sid int64 [1] for multi-speaker models; output float32 [1, 1, 1, samples]
//   (any shape is flattened). Each sentence is peak-normalised (as piper does) and sentences are joined with
//   0.2 s of silence (piper's default sentence_silence).
//
// We call the espeak-ng binary (Debian package espeak-ng) rather than libespeak-ng: `espeak-ng -q --ipa
// -b 1 -v <voice> --stdin` prints one line per clause. The whole text goes through one process when its
// clause count matches our own clause split (the usual case); otherwise each clause is phonemized separately
// so that terminators stay aligned.
import { spawn } from 'node:child_process';
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { MonoAudio } from '../audio/types.js';
import { createCpuSession, ort, type CpuSessionOptions } from './onnx.js';
import { concatSamples } from '../audio/types.js';

export const PIPER_BOS = '^';
export const PIPER_EOS = '$';
export const PIPER_PAD = '_';
export const PIPER_DEFAULT_SENTENCE_SILENCE = 0.2;
export const PIPER_DEFAULT_MAX_CHARS = 5000;

export class PiperError extends Error {
  override name = 'PiperError';
}

export interface PiperConfig {
  sampleRate: number;
  /** espeak-ng voice, e.g. "en-us". */
  espeakVoice: string;
  /** "espeak" (IPA from espeak-ng) or "text" (the text's own code points). */
  phonemeType: 'espeak' | 'text';
  phonemeIdMap: Map<string, number[]>;
  /** Optional phoneme -> phonemes substitution applied before id lookup. */
  phonemeMap: Map<string, string[]>;
  noiseScale: number;
  lengthScale: number;
  noiseW: number;
  numSpeakers: number;
  speakerIdMap: Record<string, number>;
  /** Language code from the config, if any (e.g. "en_US"). */
  language: string | undefined;
  /** Voice name from dataset/name fields, if any. */
  name: string | undefined;
}

type Json = Record<string, unknown>;

function obj(v: unknown): Json {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {};
}

function num(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
}

// piper-phonemize's built-in per-language phoneme maps.
const DEFAULT_PHONEME_MAPS: Record<string, Record<string, string[]>> = { 'pt-br': { c: ['k'] } };

/** Validates and normalises a parsed `voice.onnx.json`. */
export function parsePiperConfig(raw: unknown): PiperConfig {
  const j = obj(raw);
  const audio = obj(j['audio']);
  const espeak = obj(j['espeak']);
  const inference = obj(j['inference']);
  const language = obj(j['language']);
  const sampleRate = num(audio['sample_rate'], 0);
  if (!Number.isInteger(sampleRate) || sampleRate < 4000 || sampleRate > 192000) {
    throw new PiperError('voice config: audio.sample_rate is missing or invalid');
  }
  const idMapRaw = obj(j['phoneme_id_map']);
  const phonemeIdMap = new Map<string, number[]>();
  for (const [k, v] of Object.entries(idMapRaw)) {
    const ids = Array.isArray(v) ? v : [v];
    if (!ids.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0)) {
      throw new PiperError(`voice config: phoneme_id_map["${k}"] must be a list of non-negative integers`);
    }
    phonemeIdMap.set(k, ids as number[]);
  }
  for (const required of [PIPER_BOS, PIPER_EOS, PIPER_PAD]) {
    if (!phonemeIdMap.has(required)) throw new PiperError(`voice config: phoneme_id_map has no "${required}"`);
  }
  const espeakVoice = typeof espeak['voice'] === 'string' ? espeak['voice'] : 'en-us';
  if (!/^[A-Za-z0-9][A-Za-z0-9_+\-./]*$/.test(espeakVoice)) throw new PiperError(`voice config: invalid espeak.voice "${espeakVoice}"`);
  const phonemeType = j['phoneme_type'] === 'text' ? 'text' : 'espeak';
  const phonemeMap = new Map<string, string[]>();
  for (const [k, v] of Object.entries(DEFAULT_PHONEME_MAPS[espeakVoice] ?? {})) phonemeMap.set(k, v);
  for (const [k, v] of Object.entries(obj(j['phoneme_map']))) {
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) phonemeMap.set(k, v as string[]);
  }
  const speakerIdMap: Record<string, number> = {};
  for (const [k, v] of Object.entries(obj(j['speaker_id_map']))) if (typeof v === 'number') speakerIdMap[k] = v;
  const dataset = typeof j['dataset'] === 'string' ? j['dataset'] : undefined;
  return {
    sampleRate,
    espeakVoice,
    phonemeType,
    phonemeIdMap,
    phonemeMap,
    noiseScale: num(inference['noise_scale'], 0.667),
    lengthScale: num(inference['length_scale'], 1),
    noiseW: num(inference['noise_w'], 0.8),
    numSpeakers: Math.max(1, Math.floor(num(j['num_speakers'], 1))),
    speakerIdMap,
    language: typeof language['code'] === 'string' ? language['code'] : undefined,
    name: dataset,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Phonemization
// ---------------------------------------------------------------------------------------------------------

/** A clause of input text and the punctuation that ends it ('' when none). */
export interface Clause {
  text: string;
  terminator: string;
}

const CLAUSE_END = /[.?!,:;]+(?=\s|$)/g;

// Words whose final '.' espeak-ng (en) does not treat as the end of a clause.
const DOTTED_ACRONYM = /(?:^|[\s(])(?:\p{L}\.){2,}$/u;
const NON_FINAL_ABBREVIATIONS = /(?:^|[\s(])(?:etc|vs)\.$/iu;

/**
 * Splits text where espeak-ng ends a clause: a run of . ? ! , : ; followed by whitespace or the end, except
 * after dotted acronyms ("e.g.", "U.S.") and a few abbreviations espeak reads through ("etc.", "vs.").
 */
export function splitClauses(text: string): Clause[] {
  const out: Clause[] = [];
  let last = 0;
  for (const m of text.matchAll(CLAUSE_END)) {
    const end = (m.index ?? 0) + m[0].length;
    if (m[0] === '.' && end < text.length) {
      const before = text.slice(last, end);
      if (DOTTED_ACRONYM.test(before) || NON_FINAL_ABBREVIATIONS.test(before)) continue;
    }
    out.push({ text: text.slice(last, end).trim(), terminator: m[0].slice(-1) });
    last = end;
  }
  const rest = text.slice(last).trim();
  if (rest) out.push({ text: rest, terminator: '' });
  // Clauses espeak would not say anything for (bare punctuation) produce no output line.
  return out.filter((c) => /[\p{L}\p{N}]/u.test(c.text));
}

/** Removes control and bidi characters, collapses whitespace and caps length (at a word boundary when possible). */
export function sanitizePiperText(text: string, maxChars = PIPER_DEFAULT_MAX_CHARS): string {
  // Control characters, bidi controls, BOM and zero-width space go; ZWJ/ZWNJ stay (they matter in some scripts).
  let s = text
    .normalize('NFC')
    .replace(/[\p{Cc}\u200b\u200e\u200f\u202a-\u202e\u2028\u2029\u2060\u2066-\u2069\ufeff]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (s.length > maxChars) {
    const cut = s.slice(0, maxChars);
    const space = cut.lastIndexOf(' ');
    s = (space > maxChars * 0.8 ? cut.slice(0, space) : cut).trim();
  }
  return s;
}

export interface EspeakOptions {
  /** espeak-ng executable. Default "espeak-ng" (PATH). */
  binary?: string;
  timeoutMs?: number;
}

/** Runs `espeak-ng -q --ipa -b 1 -v <voice> --stdin` and returns its non-empty output lines (one per clause). */
export function espeakIpaLines(text: string, voice: string, opts: EspeakOptions = {}): Promise<string[]> {
  const binary = opts.binary ?? 'espeak-ng';
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['-q', '--ipa', '-b', '1', '-v', voice, '--stdin'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new PiperError(`espeak-ng timed out after ${opts.timeoutMs ?? 10_000} ms`));
    }, opts.timeoutMs ?? 10_000);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        new PiperError(
          e.code === 'ENOENT' ? `${binary} not found: install espeak-ng (apt-get install espeak-ng)` : `espeak-ng failed: ${e.message}`,
        ),
      );
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString('utf8').trim();
      if (code !== 0) {
        reject(new PiperError(`espeak-ng exited with code ${code}${stderr ? `: ${stderr}` : ''}`));
        return;
      }
      const lines = Buffer.concat(out)
        .toString('utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
      resolve(lines);
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(text, 'utf8');
  });
}

function ipaToPhonemes(ipa: string, phonemeMap: Map<string, string[]>): string[] {
  // Drop language-switch flags such as "(en)" and decompose (e.g. "ç" -> "c" + U+0327), like piper.
  const cleaned = ipa.replace(/\([^)]*\)/g, '').normalize('NFD');
  const out: string[] = [];
  for (const ch of cleaned) {
    const mapped = phonemeMap.get(ch);
    if (mapped) out.push(...mapped);
    else out.push(ch);
  }
  return out;
}

function terminatorPhonemes(t: string): string[] {
  if (t === '.' || t === '?' || t === '!') return [t];
  if (t === ',' || t === ':' || t === ';') return [t, ' '];
  return [];
}

/**
 * Text -> sentences of phonemes (single code points, IPA), the way piper-phonemize builds them with espeak-ng.
 */
export async function phonemizeEspeak(
  text: string,
  voice: string,
  opts: EspeakOptions & { phonemeMap?: Map<string, string[]> } = {},
): Promise<string[][]> {
  const clauses = splitClauses(text);
  if (clauses.length === 0) return [];
  const lines = await espeakIpaLines(clauses.map((c) => c.text).join('\n'), voice, opts);
  let perClause: string[];
  if (lines.length === clauses.length) {
    perClause = lines;
  } else {
    // espeak split differently (abbreviations, "e.g.", brackets ...): phonemize each clause on its own.
    const each = await Promise.all(clauses.map((c) => espeakIpaLines(c.text, voice, opts)));
    perClause = each.map((l) => l.join(' '));
  }
  const map = opts.phonemeMap ?? new Map<string, string[]>();
  const sentences: string[][] = [];
  let current: string[] | undefined;
  clauses.forEach((c, i) => {
    current ??= [];
    current.push(...ipaToPhonemes(perClause[i] ?? '', map), ...terminatorPhonemes(c.terminator));
    if (c.terminator === '.' || c.terminator === '?' || c.terminator === '!') {
      sentences.push(current);
      current = undefined;
    }
  });
  if (current && current.length > 0) sentences.push(current);
  return sentences.filter((s) => s.some((p) => p.trim() !== ''));
}

/** Piper's phoneme -> id mapping: ^ _ (p _)* $, skipping (and reporting) phonemes not in the map. */
export function phonemesToIds(phonemes: readonly string[], idMap: Map<string, number[]>): { ids: number[]; missing: string[] } {
  const get = (p: string) => {
    const ids = idMap.get(p);
    if (!ids) throw new PiperError(`phoneme_id_map has no "${p}"`);
    return ids;
  };
  const pad = get(PIPER_PAD);
  const ids: number[] = [...get(PIPER_BOS), ...pad];
  const missing: string[] = [];
  for (const p of phonemes) {
    const mapped = idMap.get(p);
    if (!mapped) {
      if (!missing.includes(p)) missing.push(p);
      continue;
    }
    ids.push(...mapped, ...pad);
  }
  ids.push(...get(PIPER_EOS));
  return { ids, missing };
}

// ---------------------------------------------------------------------------------------------------------
// Voice
// ---------------------------------------------------------------------------------------------------------
export interface PiperLoadOptions {
  espeak?: EspeakOptions;
  session?: CpuSessionOptions;
  maxChars?: number;
  /** Run espeak-ng once at load so a missing binary or espeak voice fails here, not mid-call. Default true. */
  verifyEspeak?: boolean;
}

export interface PiperSynthesizeOptions {
  /** Speaking rate multiplier (length_scale is divided by it). Clamped to [0.25, 4]. Default 1. */
  speed?: number;
  /** Speaker name (speaker_id_map) or id for multi-speaker voices. Default 0. */
  speaker?: string | number;
  noiseScale?: number;
  noiseW?: number;
  /** Overrides the config's length_scale (before dividing by speed). */
  lengthScale?: number;
  /** Seconds of silence between sentences. Default 0.2. */
  sentenceSilence?: number;
  /** Peak-normalise each sentence like piper. Default true. */
  normalize?: boolean;
}

/** Finds `<name>.onnx` + `<name>.onnx.json` from a directory (preferring voice.onnx) or an .onnx path. */
export async function resolvePiperFiles(dirOrModel: string): Promise<{ modelPath: string; configPath: string }> {
  const st = await stat(dirOrModel).catch(() => undefined);
  if (!st) throw new PiperError(`voice not found: ${dirOrModel}`);
  if (st.isFile()) {
    const modelPath = dirOrModel.endsWith('.json') ? dirOrModel.slice(0, -'.json'.length) : dirOrModel;
    return { modelPath, configPath: `${modelPath}.json` };
  }
  const names = await readdir(dirOrModel);
  const models = names.filter((n) => n.endsWith('.onnx') && names.includes(`${n}.json`)).sort();
  const pick = models.includes('voice.onnx') ? 'voice.onnx' : models[0];
  if (!pick) throw new PiperError(`no <name>.onnx with <name>.onnx.json in ${dirOrModel}`);
  const modelPath = path.join(dirOrModel, pick);
  return { modelPath, configPath: `${modelPath}.json` };
}

export class PiperVoice {
  private constructor(
    readonly session: ort.InferenceSession,
    readonly config: PiperConfig,
    readonly modelPath: string,
    private readonly opts: PiperLoadOptions,
  ) {}

  static async load(dirOrModel: string, opts: PiperLoadOptions = {}): Promise<PiperVoice> {
    const { modelPath, configPath } = await resolvePiperFiles(dirOrModel);
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(configPath, 'utf8'));
    } catch (e) {
      throw new PiperError(`cannot read ${configPath}: ${(e as Error).message}`);
    }
    const config = parsePiperConfig(raw);
    if (config.phonemeType === 'espeak' && (opts.verifyEspeak ?? true)) {
      await espeakIpaLines('a', config.espeakVoice, opts.espeak).catch((e: Error) => {
        throw new PiperError(`${configPath}: espeak-ng voice "${config.espeakVoice}" is not usable: ${e.message}`);
      });
    }
    const session = await createCpuSession(modelPath, opts.session);
    for (const name of ['input', 'input_lengths', 'scales']) {
      if (!session.inputNames.includes(name)) throw new PiperError(`${modelPath} is not a Piper model: no "${name}" input`);
    }
    return new PiperVoice(session, config, modelPath, opts);
  }

  get sampleRate(): number {
    return this.config.sampleRate;
  }

  get name(): string {
    return this.config.name ?? path.basename(this.modelPath, '.onnx');
  }

  /** Sentences of phonemes for `text`. */
  async phonemize(text: string): Promise<string[][]> {
    const clean = sanitizePiperText(text, this.opts.maxChars);
    if (!clean) return [];
    if (this.config.phonemeType === 'text') {
      return [ipaToPhonemes(clean, this.config.phonemeMap)];
    }
    return phonemizeEspeak(clean, this.config.espeakVoice, { ...this.opts.espeak, phonemeMap: this.config.phonemeMap });
  }

  /** Sentences of model input ids for `text`. */
  async phonemeIds(text: string): Promise<number[][]> {
    return (await this.phonemize(text)).map((s) => phonemesToIds(s, this.config.phonemeIdMap).ids);
  }

  async synthesize(text: string, opts: PiperSynthesizeOptions = {}): Promise<MonoAudio> {
    const sentences = await this.phonemeIds(text);
    const silence = Math.round(Math.max(0, opts.sentenceSilence ?? PIPER_DEFAULT_SENTENCE_SILENCE) * this.sampleRate);
    const parts: Float32Array[] = [];
    for (const ids of sentences) {
      if (parts.length > 0 && silence > 0) parts.push(new Float32Array(silence));
      parts.push(await this.synthesizeIds(ids, opts));
    }
    return { sampleRate: this.sampleRate, samples: concatSamples(parts) };
  }

  /** One model call on one sentence of ids. */
  async synthesizeIds(ids: readonly number[], opts: PiperSynthesizeOptions = {}): Promise<Float32Array> {
    if (ids.length === 0) return new Float32Array(0);
    const c = this.config;
    const speed = clampSpeed(opts.speed);
    const scales = Float32Array.from([opts.noiseScale ?? c.noiseScale, (opts.lengthScale ?? c.lengthScale) / speed, opts.noiseW ?? c.noiseW]);
    const feeds: Record<string, ort.Tensor> = {
      input: new ort.Tensor('int64', BigInt64Array.from(ids, (x) => BigInt(x)), [1, ids.length]),
      input_lengths: new ort.Tensor('int64', BigInt64Array.from([BigInt(ids.length)]), [1]),
      scales: new ort.Tensor('float32', scales, [3]),
    };
    if (this.session.inputNames.includes('sid')) {
      feeds['sid'] = new ort.Tensor('int64', BigInt64Array.from([BigInt(this.speakerId(opts.speaker))]), [1]);
    }
    const out = await this.session.run(feeds);
    const first = out[this.session.outputNames[0] ?? 'output'];
    if (!first || !(first.data instanceof Float32Array)) throw new PiperError('Piper model returned no float32 audio');
    const audio = Float32Array.from(first.data);
    if (opts.normalize ?? true) {
      let peak = 0;
      for (const x of audio) peak = Math.max(peak, Math.abs(x));
      const scale = 1 / Math.max(0.01, peak);
      for (let i = 0; i < audio.length; i++) audio[i] = Math.max(-1, Math.min(1, audio[i]! * scale));
    }
    return audio;
  }

  speakerId(speaker: string | number | undefined): number {
    if (speaker === undefined) return 0;
    const id = typeof speaker === 'number' ? speaker : this.config.speakerIdMap[speaker] ?? (/^\d+$/.test(speaker) ? Number(speaker) : NaN);
    if (!Number.isInteger(id) || id < 0 || id >= this.config.numSpeakers) {
      throw new PiperError(`unknown speaker "${speaker}" (voice has ${this.config.numSpeakers})`);
    }
    return id;
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

function clampSpeed(speed: number | undefined): number {
  if (speed === undefined || !Number.isFinite(speed) || speed <= 0) return 1;
  return Math.min(4, Math.max(0.25, speed));
}
