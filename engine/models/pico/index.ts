// SVOX Pico speech synthesis (npm @echogarden/svoxpico-wasm + Debian libttspico-data) on a pool of worker threads, as
// Flite and RHVoice run: each worker holds the WASM module with every installed voice, and speaks one phrase at a time
// (a real-time factor of about 0.013). Audio comes at 16 kHz; callers resample it to their rate (engine/tts/output.ts).
import type { MonoAudio } from '../../audio/types.js';
import { SpeechWorkerPool } from '../worker-pool.js';
import { spellCurrency } from '../../tts/speech-format.js';
import { PICO_LANG_DIR, PICO_SAMPLE_RATE, picoText, type PicoVoiceInfo } from './catalog.js';

export { PICO_VOICES, PICO_LANG_DIR, PICO_SAMPLE_RATE, findPico, type PicoVoiceInfo } from './catalog.js';

export interface PicoSynthesizerOptions {
  /** The voices to load (those findPico found). */
  voices: readonly PicoVoiceInfo[];
  dir?: string;
  /** Worker threads. Default 1. */
  workers?: number;
  nice?: number;
  /** Cap on characters per phrase. Default 2000. */
  maxChars?: number;
}

export class PicoError extends Error {
  override name = 'PicoError';
}

export class PicoSynthesizer {
  private readonly pool: SpeechWorkerPool<{ text: string; voiceId: string }, Float32Array>;
  private readonly maxChars: number;

  constructor(private readonly opts: PicoSynthesizerOptions) {
    this.maxChars = opts.maxChars ?? 2000;
    this.pool = new SpeechWorkerPool({
      name: 'SVOX Pico',
      entry: new URL('./worker-entry.mjs', import.meta.url),
      workerData: { dir: opts.dir ?? PICO_LANG_DIR, voices: opts.voices, nice: opts.nice ?? 0 },
      size: opts.workers ?? 1,
      makeError: (m) => new PicoError(m),
    });
  }

  voices(): PicoVoiceInfo[] {
    return this.opts.voices.map((v) => ({ ...v }));
  }

  hasVoice(voiceId: string): boolean {
    return this.opts.voices.some((v) => v.id === voiceId);
  }

  warmup(): Promise<void> {
    return this.pool.warmup();
  }

  async synthesize(raw: string, opts: { voice: string; speed?: number }): Promise<MonoAudio> {
    const voice = this.opts.voices.find((v) => v.id === opts.voice);
    if (!voice) throw new PicoError(`unknown SVOX Pico voice "${opts.voice}" (available: ${this.opts.voices.map((v) => v.id).join(', ')})`);
    // The English voices read "€7.50" as pounds: amounts go to them in words. The other languages get the text as
    // written (English words would be wrong there; how their own front ends read amounts is not checked here).
    const text = voice.locale.startsWith('en') ? spellCurrency(raw) : raw;
    if (!/[\p{L}\p{N}]/u.test(picoText(text, 1, this.maxChars))) return { sampleRate: PICO_SAMPLE_RATE, samples: new Float32Array(0) };
    return { sampleRate: PICO_SAMPLE_RATE, samples: await this.pool.run({ text: picoText(text, opts.speed, this.maxChars), voiceId: opts.voice }) };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
