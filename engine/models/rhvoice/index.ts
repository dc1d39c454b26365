// RHVoice speech synthesis (Debian's librhvoice5 + rhvoice-english, through koffi) on a pool of worker threads, as
// Flite runs: each worker holds one engine with our four voices loaded, and speaks one phrase at a time (RHVoice_speak
// blocks its thread for ~2-5% of the audio's duration). Audio comes at 24 kHz, with word timings from the engine's
// word_starts/word_ends callbacks; callers resample it to their rate (engine/tts/output.ts) as they do Flite's.
import { SpeechWorkerPool } from '../worker-pool.js';
import type { MonoAudio } from '../../audio/types.js';
import { speakableText } from '../flite-text.js';
import { spellCurrency } from '../../tts/speech-format.js';
import { RHVOICE_DATA_DIR, RHVOICE_SAMPLE_RATE, rhvoiceResourcePaths, type RhvoiceVoiceInfo, type WordTiming } from './catalog.js';
import type { RhvoiceSpeech } from './binding.js';

export { RHVOICE_VOICES, RHVOICE_DATA_DIR, RHVOICE_SAMPLE_RATE, findRhvoice, type RhvoiceVoiceInfo, type WordTiming } from './catalog.js';

/** Synthesised speech and, where the engine tells them, each word's place in it. */
export interface TimedSpeech extends MonoAudio {
  words?: WordTiming[];
}

export interface RhvoiceSynthesizerOptions {
  /** The voices to load (those findRhvoice found). */
  voices: readonly RhvoiceVoiceInfo[];
  dataDir?: string;
  /** Worker threads (started at the first phrase or at warmup; kept idle and unref'd). Default 1. */
  workers?: number;
  /** Nice value of the worker threads (see FliteSynthesizerOptions.nice). */
  nice?: number;
  /** Cap on characters per phrase (the streaming layer sends sentences). Default 2000. */
  maxChars?: number;
}

export class RhvoiceError extends Error {
  override name = 'RhvoiceError';
}

/**
 * Text as RHVoice gets it: currency amounts in words (its English front end drops the symbol: "$300" was said "three
 * hundred", "$56.20" "fifty six point two zero"), then the written forms Flite's front end rewrites (dates, addresses,
 * #5), no control characters, capped.
 */
export function rhvoiceText(text: string, maxChars: number): string {
  let s = speakableText(spellCurrency(text.normalize('NFC'))).replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cn}]/gu, ' ').replace(/\s+/g, ' ').trim();
  if (s.length > maxChars) {
    const cut = s.slice(0, maxChars);
    const space = cut.lastIndexOf(' ');
    s = (space > maxChars * 0.8 ? cut.slice(0, space) : cut).trim();
  }
  return s;
}

export class RhvoiceSynthesizer {
  private readonly maxChars: number;
  /** Worker threads, each with its own engine (loaded once), one phrase at a time each. */
  private readonly pool: SpeechWorkerPool<{ text: string; profile: string; speed: number }, RhvoiceSpeech>;

  constructor(private readonly opts: RhvoiceSynthesizerOptions) {
    this.maxChars = opts.maxChars ?? 2000;
    const resourcePaths = rhvoiceResourcePaths(opts.dataDir ?? RHVOICE_DATA_DIR, opts.voices);
    this.pool = new SpeechWorkerPool({
      name: 'RHVoice',
      entry: new URL('./worker-entry.mjs', import.meta.url),
      workerData: { resourcePaths, profiles: opts.voices.map((v) => v.profile), nice: opts.nice ?? 0 },
      size: opts.workers ?? 1,
      makeError: (message) => new RhvoiceError(message),
    });
  }

  voices(): RhvoiceVoiceInfo[] {
    return this.opts.voices.map((v) => ({ ...v }));
  }

  hasVoice(voiceId: string): boolean {
    return this.opts.voices.some((v) => v.id === voiceId);
  }

  /** Starts every worker and waits until each has loaded the voices and spoken once with each (the first phrase is not slower). */
  warmup(): Promise<void> {
    return this.pool.warmup();
  }

  async synthesize(text: string, opts: { voice: string; speed?: number }): Promise<TimedSpeech> {
    const voice = this.opts.voices.find((v) => v.id === opts.voice);
    if (!voice) throw new RhvoiceError(`unknown RHVoice voice "${opts.voice}" (available: ${this.opts.voices.map((v) => v.id).join(', ')})`);
    const clean = rhvoiceText(text, this.maxChars);
    if (!/[\p{L}\p{N}]/u.test(clean)) return { sampleRate: RHVOICE_SAMPLE_RATE, samples: new Float32Array(0), words: [] };
    return this.run(clean, voice.profile, opts.speed ?? 1);
  }

  private run(text: string, profile: string, speed: number): Promise<RhvoiceSpeech> {
    return this.pool.run({ text, profile, speed });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
