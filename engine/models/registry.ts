// Model registry: the catalog of recognition and synthesis models and voices, lazy shared loading, warm-up, bounded queue.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Synthesizer } from '../ports.js';
import { FLITE_VOICES, FliteSynthesizer } from './flite.js';
import { PiperVoice } from './piper.js';
import { RHVOICE_DATA_DIR, RHVOICE_SAMPLE_RATE, RhvoiceSynthesizer, findRhvoice, type RhvoiceVoiceInfo, type TimedSpeech } from './rhvoice/index.js';
import { loadRhvoiceLibrary } from './rhvoice/binding.js';
import { PICO_LANG_DIR, PICO_SAMPLE_RATE, PicoSynthesizer, findPico } from './pico/index.js';
import { resolvePicoEngine } from './pico/binding.js';
import { LANGUAGE_NAMES, baseLanguage, chooseVoice, type LocalVoice, type VoiceChoice, type VoiceRequest } from './voice-table.js';
import { SileroVadModel } from './silero.js';
import { WhisperPool } from './whisper/pool.js';
import { InferenceQueue, type SlotInfo } from './queue.js';
import { encoderWindow, type TranscribeOptions } from './whisper/recognizer.js';
import { WHISPER_FULL_WINDOW } from './whisper/prepare.js';
import { STT_DEFAULTS } from './defaults.js';

export const STT_MODEL = 'whisper-tiny.en';
/** Model ids existing clients send, served by the built-in models. */
export const STT_ALIASES = ['pulse', 'pulse-pro'] as const;
export const TTS_ALIASES = ['lightning_v3.1', 'lightning_v3.1_pro'] as const;

export interface VoiceEntry {
  voiceId: string;
  displayName: string;
  /**
   * Our synthesis model id, the engine that speaks: `flite` (built in), `rhvoice` and `pico` (built in when their Debian
   * packages are installed) or `piper` (a voice the user added).
   */
  model: 'flite' | 'rhvoice' | 'pico' | 'piper';
  sampleRate: number;
  gender: string;
  language: string[];
  /** The voice's language and region (`en-US`, `de-DE`; a Piper voice's espeak voice), '' when unknown. */
  locale: string;
  accent: string;
  description: string;
}

/** A synthesis engine of this server, its voices, and why it has none when it is missing. */
export interface SpeechEngineInfo {
  id: 'flite' | 'rhvoice' | 'pico' | 'piper';
  voices: string[];
  missing?: string;
}

export interface ModelInfo {
  id: string;
  kind: 'stt' | 'tts' | 'vad';
  aliases: readonly string[];
  description: string;
}

export interface RegistryOptions {
  /** Where prepared models (the edited Whisper graph) are cached. */
  cacheDir: string;
  /** A directory of user models: `voices/<voiceId>/voice.onnx` + `voice.onnx.json` (Piper format). */
  modelsDir?: string;
  /** Inference jobs run at once, and how many may wait before callers get 503. */
  concurrency: number;
  maxWaiting: number;
  /** Flite worker threads, and RHVoice's. */
  synthesisWorkers: number;
  /**
   * RHVoice voices (slt, bdl, clb, alan) when Debian's rhvoice-english and librhvoice5 are installed: true (default)
   * looks under /usr/share/RHVoice, a string under that directory; false leaves them out.
   */
  rhvoice?: boolean | string;
  /**
   * SVOX Pico voices (en-US, en-GB, de-DE, es-ES, fr-FR, it-IT) when Debian's libttspico-data is installed: true
   * (default) looks in /usr/share/pico/lang, a string in that directory; false leaves them out.
   */
  pico?: boolean | string;
  /**
   * Whisper beam width for whole-file recognition (default 5) and for live interims, live finals and agent turns
   * (default 1, greedy). On the Asterisk prompts beams=5 lowers WER from 4.78% to 4.36% and costs ~45 ms a prompt.
   */
  sttBeams?: number;
  sttLiveBeams?: number;
  /**
   * Threads inside each recognizer worker (default 2). On 2 cores, one 1.5 s utterance takes ~410 ms with 2
   * threads and ~640 ms with 1 (Whisper's encoder always sees a 30 s window): about a third off the wait for a
   * final when the server is not busy; when both workers are busy they share the cores (bench figures in docs/benchmarks.md).
   */
  sttThreads?: number;
  /**
   * Shorter Whisper encoder window for greedy clips up to 5 s (see encoderWindow in whisper/recognizer.ts): always
   * (true), never (false), or `busy`: only for a live recognition that other inference jobs are waiting behind when it
   * starts, so that accuracy is traded only when the machine is the bottleneck and the time saved is someone's wait.
   */
  sttShortWindow?: boolean | 'busy';
  /** Nice value of the recognition and synthesis worker threads (see WhisperPoolOptions.nice). */
  workerNice?: number;
}

export class UnknownVoiceError extends Error {}

export class ModelRegistry implements Synthesizer {
  /** The default voice (RHVoice's slt when installed, else Flite's slt): listed first in the catalog and marked there. */
  readonly defaultVoiceId: string;
  readonly queue: InferenceQueue;
  readonly sttBeams: number;
  readonly sttLiveBeams: number;
  private readonly flite: FliteSynthesizer;
  private readonly rhvoice: RhvoiceSynthesizer | null;
  /** Why there are no RHVoice voices, when there are none. */
  private readonly rhvoiceMissing: string | undefined;
  private readonly pico: PicoSynthesizer | null;
  private readonly picoMissing: string | undefined;
  private readonly piper = new Map<string, { dir: string; voice?: Promise<PiperVoice>; entry: VoiceEntry }>();
  private recognizerP: Promise<WhisperPool> | undefined;
  private vadP: Promise<SileroVadModel> | undefined;

  constructor(private readonly opts: RegistryOptions) {
    this.queue = new InferenceQueue(opts.concurrency, opts.maxWaiting);
    this.sttBeams = opts.sttBeams ?? STT_DEFAULTS.beams;
    this.sttLiveBeams = opts.sttLiveBeams ?? STT_DEFAULTS.liveBeams;
    this.flite = new FliteSynthesizer({ workers: opts.synthesisWorkers, nice: opts.workerNice });
    const rhvoiceDir = typeof opts.rhvoice === 'string' ? opts.rhvoice : RHVOICE_DATA_DIR;
    const found = opts.rhvoice === false ? { voices: [], missing: 'switched off' } : findRhvoice(rhvoiceDir, () => void loadRhvoiceLibrary());
    this.rhvoice = found.voices.length ? new RhvoiceSynthesizer({ voices: found.voices, dataDir: rhvoiceDir, workers: opts.synthesisWorkers, nice: opts.workerNice }) : null;
    this.rhvoiceMissing = found.missing;
    const picoDir = typeof opts.pico === 'string' ? opts.pico : PICO_LANG_DIR;
    const pico = opts.pico === false ? { voices: [], missing: 'switched off' } : findPico(picoDir, () => void resolvePicoEngine());
    this.pico = pico.voices.length ? new PicoSynthesizer({ voices: pico.voices, dir: picoDir, workers: opts.synthesisWorkers, nice: opts.workerNice }) : null;
    this.picoMissing = pico.missing;
    this.defaultVoiceId = this.fallbackVoice('female');
  }

  /**
   * The built-in English voice for a gender (`male`; anything else female), the nearest by the voice table: RHVoice's
   * slt or bdl when installed, else Flite's slt or rms (voice-table.ts).
   */
  fallbackVoice(gender: string | undefined): string {
    return this.chooseVoice({ mode: 'agent', gender, language: 'en' }).voiceId;
  }

  /** Every voice as the voice table sees it (language, gender, accent). */
  localVoices(): LocalVoice[] {
    return this.voices().map((v) => ({ voiceId: v.voiceId, gender: v.gender, accent: v.accent, language: baseLanguage(v.locale) ?? '' }));
  }

  /**
   * The voice that speaks a request (a voice id of ours or a hosted one, a language, a gender): see chooseVoice in
   * voice-table.ts. Agents always get a voice; a TTS request may get the field that is wrong instead.
   */
  chooseVoice(req: VoiceRequest & { mode: 'agent' }): { voiceId: string };
  chooseVoice(req: VoiceRequest): VoiceChoice;
  chooseVoice(req: VoiceRequest): VoiceChoice {
    const choice = chooseVoice(this.localVoices(), req);
    // (An agent always finds an English voice: Flite's are always there.)
    if (req.mode === 'agent' && !('voiceId' in choice)) return { voiceId: 'slt' };
    return choice;
  }

  /** The languages some voice here speaks (ISO 639-1). */
  languages(): string[] {
    return [...new Set(this.localVoices().map((v) => v.language).filter(Boolean))].sort();
  }

  /** The synthesis engines, their voices, and why one has none (for the start-up log). */
  engines(): SpeechEngineInfo[] {
    return [
      { id: 'rhvoice', voices: this.rhvoice?.voices().map((v) => v.id) ?? [], ...(this.rhvoiceMissing ? { missing: this.rhvoiceMissing } : {}) },
      { id: 'pico', voices: this.pico?.voices().map((v) => v.id) ?? [], ...(this.picoMissing ? { missing: this.picoMissing } : {}) },
      { id: 'flite', voices: FLITE_VOICES.map((v) => v.id) },
      { id: 'piper', voices: [...this.piper.keys()], ...(this.piper.size ? {} : { missing: 'no voices under <PARLEY_MODELS_DIR>/voices' }) },
    ];
  }

  /** Finds the user's voices; with `warm`, loads every built-in model now so first requests are fast. */
  async init(warm: boolean): Promise<void> {
    if (this.opts.modelsDir) await this.scanVoices(path.join(this.opts.modelsDir, 'voices'));
    if (warm) await Promise.all([this.recognizer(), this.vad(), this.flite.warmup(), this.rhvoice?.warmup(), this.pico?.warmup()]);
  }

  private async scanVoices(dir: string): Promise<void> {
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names.sort()) {
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(name) || FLITE_VOICES.some((v) => v.id === name) || name.startsWith('rhvoice-') || name.startsWith('pico-')) continue;
      const voiceDir = path.join(dir, name);
      // Loaded now to read its sample rate and check it; sessions stay shared afterwards.
      const voice = PiperVoice.load(voiceDir);
      const loaded = await voice.catch(() => null);
      if (!loaded) continue;
      const cfg = loaded.config as unknown as { espeak?: { voice?: string }; dataset?: string };
      this.piper.set(name, {
        dir: voiceDir,
        voice,
        entry: { voiceId: name, displayName: name, model: 'piper', sampleRate: loaded.sampleRate, gender: '', language: [cfg.espeak?.voice ?? ''], locale: cfg.espeak?.voice ?? '', accent: '', description: `Piper voice ${cfg.dataset ?? name}` },
      });
    }
  }

  models(): ModelInfo[] {
    return [
      { id: STT_MODEL, kind: 'stt', aliases: STT_ALIASES, description: 'Whisper tiny.en (int8 ONNX), English speech recognition' },
      ...(this.rhvoice ? [{ id: 'rhvoice', kind: 'tts' as const, aliases: TTS_ALIASES, description: `RHVoice voices (${this.rhvoice.voices().map((v) => v.profile).join(', ')}; LGPL-2.1+), from the Debian package rhvoice-english` }] : []),
      ...(this.pico ? [{ id: 'pico', kind: 'tts' as const, aliases: TTS_ALIASES, description: `SVOX Pico voices (${this.pico.voices().map((v) => v.locale).join(', ')}; engine Apache-2.0), language data from the Debian package libttspico-data` }] : []),
      { id: 'flite', kind: 'tts', aliases: TTS_ALIASES, description: 'Flite voices (kal, kal16, awb, rms, slt), built in' },
      ...(this.piper.size ? [{ id: 'piper', kind: 'tts' as const, aliases: TTS_ALIASES, description: 'Piper ONNX voices added under the models directory' }] : []),
      { id: 'silero-vad', kind: 'vad', aliases: [], description: 'Silero VAD (ONNX), voice activity' },
    ];
  }

  /** Every voice, the default first: RHVoice's (when installed), Flite's, SVOX Pico's (when installed), then the user's Piper voices. */
  voices(): VoiceEntry[] {
    const rhvoice: VoiceEntry[] = (this.rhvoice?.voices() ?? []).map((v: RhvoiceVoiceInfo) => ({
      voiceId: v.id,
      displayName: v.id,
      model: 'rhvoice',
      sampleRate: RHVOICE_SAMPLE_RATE,
      gender: v.gender,
      language: ['english'],
      locale: v.language,
      accent: v.accent,
      description: v.description,
    }));
    const pico: VoiceEntry[] = (this.pico?.voices() ?? []).map((v) => ({
      voiceId: v.id,
      displayName: v.id,
      model: 'pico',
      sampleRate: PICO_SAMPLE_RATE,
      gender: v.gender,
      language: [LANGUAGE_NAMES[baseLanguage(v.locale) ?? ''] ?? v.locale],
      locale: v.locale,
      accent: v.accent,
      description: v.description,
    }));
    const flite: VoiceEntry[] = FLITE_VOICES.map((v) => ({
      voiceId: v.id,
      displayName: v.id,
      model: 'flite',
      sampleRate: v.sampleRate,
      gender: v.gender,
      language: ['english'],
      locale: v.language,
      accent: v.language === 'en-GB' ? 'scottish' : 'american',
      description: v.description,
    }));
    const all = [...rhvoice, ...flite, ...pico, ...[...this.piper.values()].map((p) => p.entry)];
    return all.sort((a, b) => Number(b.voiceId === this.defaultVoiceId) - Number(a.voiceId === this.defaultVoiceId));
  }

  /** Whether a voice's engine gives word timings with its audio (RHVoice's do; Flite's, SVOX Pico's and Piper's do not). */
  givesWordTimings(voiceId: string): boolean {
    return this.rhvoice?.hasVoice(voiceId) ?? false;
  }

  voice(voiceId: string): VoiceEntry | undefined {
    return this.voices().find((v) => v.voiceId === voiceId);
  }

  /** Whisper on worker threads (one per concurrent inference slot), so recognition never blocks the event loop. */
  recognizer(): Promise<WhisperPool> {
    this.recognizerP ??= WhisperPool.start({ size: this.opts.concurrency, cacheDir: this.opts.cacheDir, intraOpNumThreads: this.opts.sttThreads ?? STT_DEFAULTS.threads, nice: this.opts.workerNice, shortWindow: this.opts.sttShortWindow === true });
    return this.recognizerP;
  }

  /**
   * Options of a live recognition (finals, interims, agent turns) of `samples` 16 kHz samples, given its inference
   * slot: greedy by default, and the window; the metrics hear which window it runs with.
   */
  liveTranscribeOptions(slot: SlotInfo, samples: number): TranscribeOptions {
    const setting = this.opts.sttShortWindow ?? false;
    const shortWindow = setting === 'busy' ? slot.waitingBehind > 0 : setting;
    this.queue.observer?.liveWindow?.(shortWindow && encoderWindow(samples, this.sttLiveBeams).windowFrames < WHISPER_FULL_WINDOW);
    return { beams: this.sttLiveBeams, shortWindow };
  }

  vad(): Promise<SileroVadModel> {
    this.vadP ??= SileroVadModel.load();
    return this.vadP;
  }

  /**
   * Synthesises one phrase with a voice, through the inference queue (QueueFullError when full). `first`: the first
   * phrase of an agent's turn (served before other synthesis); `signal`: drops it while it still waits.
   */
  async synthesize(voiceId: string, text: string, speed: number, opts: { first?: boolean; signal?: AbortSignal } = {}): Promise<TimedSpeech> {
    const kind = opts.first ? 'synthesis_first' : 'synthesis';
    const run = { signal: opts.signal };
    const piper = this.piper.get(voiceId);
    if (piper) return this.queue.run(async () => (await (piper.voice ??= PiperVoice.load(piper.dir))).synthesize(text, { speed }), kind, run);
    const rhvoice = this.rhvoice;
    if (rhvoice?.hasVoice(voiceId)) return this.queue.run(() => rhvoice.synthesize(text, { voice: voiceId, speed }), kind, run);
    const pico = this.pico;
    if (pico?.hasVoice(voiceId)) return this.queue.run(() => pico.synthesize(text, { voice: voiceId, speed }), kind, run);
    if (!this.flite.hasVoice(voiceId)) throw new UnknownVoiceError(`Unknown voice_id "${voiceId}"`);
    return this.queue.run(() => this.flite.synthesize(text, { voice: voiceId, speed }), kind, run);
  }

  async close(): Promise<void> {
    await Promise.all([this.flite.close(), this.rhvoice?.close(), this.pico?.close()]);
    if (this.recognizerP) await (await this.recognizerP).close();
  }
}
