// The RHVoice voices we offer and the pure parts of using them: which are installed, their resource paths, the
// speaking rate, word timings from the engine's callbacks. No native code here (binding.ts has it).
//
// Only the four LGPL-2.1+ English voices of Debian's `rhvoice-english` (slt, bdl, clb, alan: "Files: data/*" in
// /usr/share/doc/rhvoice-english/copyright) are offered. The package's other English voices (evgeniy-eng, lyubov) are
// CC-BY-NC-ND-4.0 (non-commercial, no derivatives): they are never listed and never loaded, because the engine is
// created with these four voice directories as its only resources (see rhvoiceResourcePaths).
import { existsSync } from 'node:fs';
import path from 'node:path';

export type RhvoiceProfile = 'slt' | 'bdl' | 'clb' | 'alan';

export interface RhvoiceVoiceInfo {
  /** Our voice id: `rhvoice-<profile>`, so that RHVoice's slt does not collide with Flite's slt. */
  id: string;
  /** RHVoice's voice profile name (the voice's directory under voices/). */
  profile: RhvoiceProfile;
  gender: 'male' | 'female';
  /** The speaker's English: alan was recorded by a Scottish speaker (the CMU ARCTIC awb corpus), the others American. */
  language: 'en-US' | 'en-GB';
  accent: 'american' | 'scottish';
  description: string;
}

/** RHVoice synthesises these voices at 24 kHz (the voices' `24000` models; the engine reports it through set_sample_rate). */
export const RHVOICE_SAMPLE_RATE = 24000;

export const RHVOICE_VOICES: readonly RhvoiceVoiceInfo[] = [
  { id: 'rhvoice-slt', profile: 'slt', gender: 'female', language: 'en-US', accent: 'american', description: 'US female, RHVoice (HTS statistical parametric), 24 kHz' },
  { id: 'rhvoice-clb', profile: 'clb', gender: 'female', language: 'en-US', accent: 'american', description: 'US female, RHVoice (HTS statistical parametric), 24 kHz' },
  { id: 'rhvoice-bdl', profile: 'bdl', gender: 'male', language: 'en-US', accent: 'american', description: 'US male, RHVoice (HTS statistical parametric), 24 kHz' },
  { id: 'rhvoice-alan', profile: 'alan', gender: 'male', language: 'en-GB', accent: 'scottish', description: 'Scottish male, RHVoice (HTS statistical parametric), 24 kHz' },
];

/** Where Debian's packages put the language and voice data. */
export const RHVOICE_DATA_DIR = '/usr/share/RHVoice';
/** The C library (Debian `librhvoice5`); the dynamic linker finds libRHVoice_core.so.7 and libsonic.so.0 through it. */
export const RHVOICE_LIBRARY = 'libRHVoice.so.5';
/** What to install where it is missing (Debian non-free, Ubuntu multiverse). */
export const RHVOICE_PACKAGES = 'rhvoice-english librhvoice5';

/** The English language data and the directories of the given voices: the engine's only resources. */
export function rhvoiceResourcePaths(dataDir: string, voices: readonly RhvoiceVoiceInfo[]): string[] {
  return [path.join(dataDir, 'languages', 'English'), ...voices.map((v) => path.join(dataDir, 'voices', v.profile))];
}

/** Which RHVoice voices this machine has: all of them, or none and why not. */
export interface RhvoicePresence {
  voices: RhvoiceVoiceInfo[];
  /** Why there are none (missing data or library). */
  missing?: string;
}

/**
 * The offered voices whose data is installed under `dataDir`, if the library loads (`loadLibrary` throws when it does
 * not). A voice directory counts when it has its voice.info and its 24 kHz model.
 */
export function findRhvoice(dataDir: string, loadLibrary: () => void, exists: (p: string) => boolean = existsSync): RhvoicePresence {
  if (!exists(path.join(dataDir, 'languages', 'English', 'language.info'))) {
    return { voices: [], missing: `no RHVoice English data in ${dataDir} (apt-get install ${RHVOICE_PACKAGES})` };
  }
  const voices = RHVOICE_VOICES.filter((v) => exists(path.join(dataDir, 'voices', v.profile, 'voice.info')) && exists(path.join(dataDir, 'voices', v.profile, String(RHVOICE_SAMPLE_RATE))));
  if (!voices.length) return { voices: [], missing: `none of the voices ${RHVOICE_VOICES.map((v) => v.profile).join(', ')} in ${dataDir}/voices` };
  try {
    loadLibrary();
  } catch (err) {
    return { voices: [], missing: `${RHVOICE_LIBRARY} does not load (apt-get install ${RHVOICE_PACKAGES}): ${err instanceof Error ? err.message.split('\n')[0] : String(err)}` };
  }
  return { voices };
}

export const RHVOICE_MIN_SPEED = 0.25;
export const RHVOICE_MAX_SPEED = 4;

/**
 * RHVoice's `relative_rate` for our speed multiplier (2 = twice as fast): the same number, clamped; measured, speed 2
 * gives exactly half the duration. The engine clips rates beyond the voice's range unless told not to
 * (RHVoice_synth_flag_dont_clip_rate, which we set).
 */
export function rhvoiceRate(speed: number | undefined): number {
  if (speed === undefined || !Number.isFinite(speed) || speed <= 0) return 1;
  return Math.min(RHVOICE_MAX_SPEED, Math.max(RHVOICE_MIN_SPEED, speed));
}

/** One word of synthesised speech: its text and where it starts and ends in the audio, seconds. */
export interface WordTiming {
  word: string;
  start: number;
  end: number;
}

/**
 * An event of the engine's word callbacks: `word_starts` or `word_ends` with the word's byte offset and byte length in
 * the UTF-8 text, and how many samples had been delivered when it fired.
 */
export interface RhvoiceWordEvent {
  kind: 'start' | 'end';
  position: number;
  length: number;
  sample: number;
}

/** Seconds to the millisecond. */
const ms = (s: number): number => Math.round(s * 1000) / 1000;

/** Punctuation around a word the engine reports with it ("planks." -> "planks"). */
const EDGE_PUNCTUATION = /^[\p{P}\p{S}]+|[\p{P}\p{S}]+$/gu;

/**
 * Word timings from the callback events of one message. The engine delivers audio in blocks of 100 ms and fires each
 * event between blocks, so a time is exact to the block: a short word may start and end at the same time. A word whose
 * end never came ends where the next word starts (or at the end of the audio). Punctuation around a word is dropped,
 * and a "word" that is only punctuation (a lone "!") is left out.
 */
export function wordTimings(utf8: Uint8Array, events: readonly RhvoiceWordEvent[], sampleRate: number, totalSamples: number): WordTiming[] {
  const decoder = new TextDecoder();
  const words: { key: string; word: string; start: number; end: number | null }[] = [];
  const open = new Map<string, number>();
  for (const e of events) {
    const key = `${e.position}:${e.length}`;
    if (e.kind === 'start') {
      const word = decoder.decode(utf8.subarray(e.position, e.position + e.length)).replace(EDGE_PUNCTUATION, '');
      if (!word) continue;
      open.set(key, words.length);
      words.push({ key, word, start: e.sample, end: null });
    } else {
      const i = open.get(key);
      if (i === undefined) continue;
      open.delete(key);
      (words[i] as { end: number | null }).end = e.sample;
    }
  }
  return words.map((w, i) => {
    const end = w.end ?? words[i + 1]?.start ?? totalSamples;
    return { word: w.word, start: ms(w.start / sampleRate), end: ms(Math.max(w.start, end) / sampleRate) };
  });
}
