// The SVOX Pico voices we offer and the pure parts of using them: which are installed, the text Pico is given, the
// speaking rate. No WASM here (binding.ts loads the engine).
//
// The engine is npm `@echogarden/svoxpico-wasm` (Apache-2.0); the language data comes from Debian's `libttspico-data`
// (component non-free: /usr/share/doc/libttspico-data/copyright calls the files redistributable, Apache-2.0 without
// their sources). One speaker per language, each a text-analysis file (`<lang>_ta.bin`) and a signal-generation file
// (`<lang>_<speaker>_sg.bin`). All six speakers are female; Pico synthesises at 16 kHz.
import { existsSync } from 'node:fs';
import path from 'node:path';

export type PicoLocale = 'en-US' | 'en-GB' | 'de-DE' | 'es-ES' | 'fr-FR' | 'it-IT';

export interface PicoVoiceInfo {
  /** Our voice id: `pico-<locale>`. */
  id: string;
  locale: PicoLocale;
  /** Pico's speaker of that language (the `_sg.bin` file). */
  speaker: string;
  gender: 'female';
  accent: string;
  description: string;
}

export const PICO_SAMPLE_RATE = 16000;
/** Where Debian's libttspico-data puts the language files. */
export const PICO_LANG_DIR = '/usr/share/pico/lang';
/** What to install where they are missing (Debian non-free; Ubuntu multiverse). */
export const PICO_PACKAGE = 'libttspico-data';

export const PICO_VOICES: readonly PicoVoiceInfo[] = [
  { id: 'pico-en-US', locale: 'en-US', speaker: 'lh0', gender: 'female', accent: 'american', description: 'US English female, SVOX Pico, 16 kHz' },
  { id: 'pico-en-GB', locale: 'en-GB', speaker: 'kh0', gender: 'female', accent: 'british', description: 'British English female, SVOX Pico, 16 kHz' },
  { id: 'pico-de-DE', locale: 'de-DE', speaker: 'gl0', gender: 'female', accent: 'german', description: 'German female, SVOX Pico, 16 kHz' },
  { id: 'pico-es-ES', locale: 'es-ES', speaker: 'zl0', gender: 'female', accent: 'castilian', description: 'Spanish (Spain) female, SVOX Pico, 16 kHz' },
  { id: 'pico-fr-FR', locale: 'fr-FR', speaker: 'nk0', gender: 'female', accent: 'french', description: 'French (France) female, SVOX Pico, 16 kHz' },
  { id: 'pico-it-IT', locale: 'it-IT', speaker: 'cm0', gender: 'female', accent: 'italian', description: 'Italian female, SVOX Pico, 16 kHz' },
];

/** A voice's two resource files (text analysis, signal generation), file names under the language directory. */
export function picoFiles(v: Pick<PicoVoiceInfo, 'locale' | 'speaker'>): [string, string] {
  return [`${v.locale}_ta.bin`, `${v.locale}_${v.speaker}_sg.bin`];
}

export interface PicoPresence {
  voices: PicoVoiceInfo[];
  /** Why there are none. */
  missing?: string;
}

/**
 * The offered voices whose two files are under `dir`, if the engine's npm package resolves (`resolveEngine` throws
 * when it does not).
 */
export function findPico(dir: string, resolveEngine: () => void, exists: (p: string) => boolean = existsSync): PicoPresence {
  const voices = PICO_VOICES.filter((v) => picoFiles(v).every((f) => exists(path.join(dir, f))));
  if (!voices.length) return { voices: [], missing: `no SVOX Pico language files in ${dir} (apt-get install ${PICO_PACKAGE})` };
  try {
    resolveEngine();
  } catch (err) {
    return { voices: [], missing: `@echogarden/svoxpico-wasm does not load: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}` };
  }
  return { voices };
}

/**
 * Pico's `<speed level>` (percent, 20-500) for our speed multiplier (2 = twice as fast). Measured: level 200 gives
 * about 0.65 of the duration (pauses do not shrink), so the level is the multiplier itself, clamped.
 */
export function picoSpeedLevel(speed: number | undefined): number {
  if (speed === undefined || !Number.isFinite(speed) || speed <= 0) return 100;
  return Math.round(Math.min(500, Math.max(20, speed * 100)));
}

/**
 * Text as Pico gets it: Pico reads `<...>` as its markup, so the caller's angle brackets become spaces (callers' text is
 * never markup) and the speed is our own tag around it; no control or format characters; capped at a word.
 */
export function picoText(text: string, speed: number | undefined, maxChars: number): string {
  let s = text.normalize('NFC').replace(/[<>]/g, ' ').replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cn}]/gu, ' ').replace(/\s+/g, ' ').trim();
  if (s.length > maxChars) {
    const cut = s.slice(0, maxChars);
    const space = cut.lastIndexOf(' ');
    s = (space > maxChars * 0.8 ? cut.slice(0, space) : cut).trim();
  }
  const level = picoSpeedLevel(speed);
  return level === 100 ? s : `<speed level="${level}">${s}</speed>`;
}
