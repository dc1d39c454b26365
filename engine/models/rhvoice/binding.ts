// RHVoice's C API (librhvoice5, RHVoice.h 1.8) through koffi: one engine, synchronous messages. Runs on a worker thread
// (worker.ts): RHVoice_speak blocks its caller for the whole message and calls our callbacks on that thread.
import { createRequire } from 'node:module';
import { RHVOICE_LIBRARY, rhvoiceRate, wordTimings, type RhvoiceWordEvent, type WordTiming } from './catalog.js';

type Koffi = typeof import('koffi');
let koffiModule: Koffi | undefined;
/** koffi, loaded at first use (importing this file loads no native code). */
const ffi = (): Koffi => (koffiModule ??= createRequire(import.meta.url)('koffi') as Koffi);

/** Loads the library (throws when it is not installed); cheap after the first time. */
export function loadRhvoiceLibrary(): ReturnType<Koffi['load']> {
  return ffi().load(RHVOICE_LIBRARY);
}

/** RHVoice_message_type: plain text (never SSML: callers' text is not markup). */
const MESSAGE_TEXT = 0;
/** RHVoice_synth_flag_dont_clip_rate: the speed we ask for, not the voice's configured range. */
const FLAG_DONT_CLIP_RATE = 1;

export interface RhvoiceSpeech {
  sampleRate: number;
  samples: Float32Array;
  words: WordTiming[];
}

export interface RhvoiceEngine {
  /** The voices the engine loaded (RHVoice_get_voices): name, language, country, gender. */
  readonly voices: { name: string; language: string; country: string; gender: 'male' | 'female' | 'unknown' }[];
  readonly version: string;
  speak(text: string, profile: string, speed: number): RhvoiceSpeech;
}

interface Job {
  rate: number;
  chunks: Float32Array[];
  samples: number;
  events: RhvoiceWordEvent[];
}

/** The library's functions and types, declared once per thread (koffi refuses a type name declared twice). */
function declare() {
  const koffi = ffi();
  const lib = loadRhvoiceLibrary();
  const SetSampleRate = koffi.proto('int RHVoice_set_sample_rate_cb(int sample_rate, void *user_data)');
  const PlaySpeech = koffi.proto('int RHVoice_play_speech_cb(const void *samples, unsigned int count, void *user_data)');
  const WordEvent = koffi.proto('int RHVoice_word_cb(unsigned int position, unsigned int length, void *user_data)');
  const Callbacks = koffi.struct('RHVoice_callbacks', {
    set_sample_rate: koffi.pointer(SetSampleRate),
    play_speech: koffi.pointer(PlaySpeech),
    process_mark: 'void *',
    word_starts: koffi.pointer(WordEvent),
    word_ends: koffi.pointer(WordEvent),
    sentence_starts: 'void *',
    sentence_ends: 'void *',
    play_audio: 'void *',
    done: 'void *',
  });
  const InitParams = koffi.struct('RHVoice_init_params', {
    data_path: 'const char *',
    config_path: 'const char *',
    resource_paths: 'const char **',
    callbacks: Callbacks,
    options: 'unsigned int',
  });
  const SynthParams = koffi.struct('RHVoice_synth_params', {
    voice_profile: 'const char *',
    absolute_rate: 'double',
    absolute_pitch: 'double',
    absolute_volume: 'double',
    relative_rate: 'double',
    relative_pitch: 'double',
    relative_volume: 'double',
    punctuation_mode: 'int',
    punctuation_list: 'const char *',
    capitals_mode: 'int',
    flags: 'int',
  });
  const VoiceInfo = koffi.struct('RHVoice_voice_info', { language: 'const char *', name: 'const char *', gender: 'int', country: 'const char *' });
  const newEngine = lib.func('void *RHVoice_new_tts_engine(const RHVoice_init_params *params)');
  const voiceCount = lib.func('unsigned int RHVoice_get_number_of_voices(void *engine)');
  const getVoices = lib.func('const RHVoice_voice_info *RHVoice_get_voices(void *engine)');
  const newMessage = lib.func('void *RHVoice_new_message(void *engine, const uint8_t *text, unsigned int length, int type, const RHVoice_synth_params *params, void *user_data)');
  const speakMessage = lib.func('int RHVoice_speak(void *message)');
  const deleteMessage = lib.func('void RHVoice_delete_message(void *message)');
  const getVersion = lib.func('const char *RHVoice_get_version()');
  return { SetSampleRate, PlaySpeech, WordEvent, VoiceInfo, newEngine, voiceCount, getVoices, newMessage, speakMessage, deleteMessage, getVersion };
}

let api: ReturnType<typeof declare> | undefined;

/**
 * Creates an engine whose only resources are `resourcePaths` (the English language data and our voice directories):
 * `data_path` and `config_path` point nowhere, so no other installed voice and no system-wide RHVoice.conf is read.
 * `preload`: load the voices now rather than at their first message (RHVoice_preload_voices).
 */
export function openRhvoice(resourcePaths: string[], opts: { preload?: boolean } = {}): RhvoiceEngine {
  api ??= declare();
  const koffi = ffi();
  const { SetSampleRate, PlaySpeech, WordEvent, VoiceInfo, newEngine, voiceCount, getVoices, newMessage, speakMessage, deleteMessage, getVersion } = api;
  // The engine keeps the callbacks for its lifetime: registered once, they write into the message being spoken.
  let job: Job | null = null;
  const callbacks = {
    set_sample_rate: koffi.register((rate: number) => {
      if (job) job.rate = rate;
      return 1;
    }, koffi.pointer(SetSampleRate)),
    play_speech: koffi.register((ptr: unknown, count: number) => {
      if (!job) return 0;
      const pcm = new Int16Array(koffi.view(ptr, count * 2));
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) out[i] = (pcm[i] as number) / 32768;
      job.chunks.push(out);
      job.samples += count;
      return 1;
    }, koffi.pointer(PlaySpeech)),
    process_mark: null,
    word_starts: koffi.register((position: number, length: number) => {
      job?.events.push({ kind: 'start', position, length, sample: job.samples });
      return 1;
    }, koffi.pointer(WordEvent)),
    word_ends: koffi.register((position: number, length: number) => {
      job?.events.push({ kind: 'end', position, length, sample: job.samples });
      return 1;
    }, koffi.pointer(WordEvent)),
    sentence_starts: null,
    sentence_ends: null,
    play_audio: null,
    done: null,
  };
  // data_path/config_path: a path that is no directory, so the engine lists no voices of its own (and reads no config).
  const nowhere = '/nonexistent/parley-rhvoice';
  const engine = newEngine({ data_path: nowhere, config_path: nowhere, resource_paths: [...resourcePaths, null], callbacks, options: opts.preload ? 1 : 0 });
  if (!engine) throw new Error('RHVoice_new_tts_engine failed (no language data in the resource paths?)');
  const count = voiceCount(engine) as number;
  const infos = (count ? koffi.decode(getVoices(engine), koffi.array(VoiceInfo, count)) : []) as { language: string; name: string; gender: number; country: string }[];
  const genders = ['unknown', 'male', 'female'] as const;

  return {
    voices: infos.map((v) => ({ name: v.name, language: v.language, country: v.country, gender: genders[v.gender] ?? 'unknown' })),
    version: getVersion() as string,
    speak(text: string, profile: string, speed: number): RhvoiceSpeech {
      const utf8 = Buffer.from(text, 'utf8');
      const params = {
        voice_profile: profile,
        absolute_rate: 0,
        absolute_pitch: 0,
        absolute_volume: 0,
        relative_rate: rhvoiceRate(speed),
        relative_pitch: 1,
        relative_volume: 1,
        punctuation_mode: 0,
        punctuation_list: null,
        capitals_mode: 0,
        flags: FLAG_DONT_CLIP_RATE,
      };
      const message = newMessage(engine, utf8, utf8.length, MESSAGE_TEXT, params, null);
      if (!message) throw new Error(`RHVoice could not make a message for voice "${profile}"`);
      const current: Job = { rate: 0, chunks: [], samples: 0, events: [] };
      job = current;
      let ok: number;
      try {
        ok = speakMessage(message) as number;
      } finally {
        job = null;
        deleteMessage(message);
      }
      if (!ok) throw new Error(`RHVoice_speak failed (voice "${profile}")`);
      if (!current.rate) throw new Error('RHVoice gave no sample rate');
      const samples = new Float32Array(current.samples);
      let at = 0;
      for (const c of current.chunks) {
        samples.set(c, at);
        at += c.length;
      }
      return { sampleRate: current.rate, samples, words: wordTimings(utf8, current.events, current.rate, current.samples) };
    },
  };
}
