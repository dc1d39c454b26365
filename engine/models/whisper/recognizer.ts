// Whisper tiny.en recognizer: 16 kHz float samples (at most 30 s) in, text and token ids out, one shared session.
import fs from 'node:fs/promises';
import { createCpuSession, ort } from '../onnx.js';
import { prepareWhisperModel, WHISPER_FULL_WINDOW, type PrepareWhisperOptions } from './prepare.js';
import { WhisperTokenizer, type WhisperVocab } from './tokenizer.js';

export const WHISPER_SAMPLE_RATE = 16_000;
/** Whisper's window: the graph pads the log-mel to 3000 frames and fails on longer input. */
export const WHISPER_MAX_SAMPLES = 30 * WHISPER_SAMPLE_RATE;
/** The graph's STFT reflect-pads 200 samples each side, so shorter input is zero-padded to this length. */
const MIN_SAMPLES = WHISPER_SAMPLE_RATE / 10;
/** Log-mel frames per second (hop 160 at 16 kHz). */
const FRAMES_PER_S = 100;
/** Clips up to this long get a shorter encoder window (see encoderWindow). */
export const SHORT_CLIP_SECONDS = 5;
/** Whisper's default and limit on tokens (prompt included) are 224 and 448. */
const DEFAULT_MAX_LENGTH = 224;

export interface EncoderWindow {
  /** The `window_frames` input: log-mel frames the encoder sees (3000 = Whisper's 30 s). */
  windowFrames: number;
  /** Upper bound on tokens, prompt included. */
  maxLength: number;
}

/**
 * The window policy (issue 15). Greedy decoding (live finals and interims, agent turns): clips up to 5 s get a 20 s
 * window (bench/whisper-batch.ts, in process, all 551 Asterisk speech prompts: 1.60x faster, WER full normalisation
 * 4.78 -> 4.93%; bench/stt-api.ts through the server, live: 5.25 -> 5.19% on 276 prompts); longer clips keep 30 s
 * (with a window just over the clip, long clips came out truncated and shorter windows made Whisper mishear). With a
 * short window Whisper sometimes loops ("7. 7. 7. ..."), so greedy tokens are capped in proportion to the clip:
 * 4 (the prompt) + 10 a second, about twice the fastest speech in the corpus (the cap alone changed no text there).
 * Beam search (whole files) keeps 30 s: through the server a 15 s window cost 0.49 points there and 20 s 0.38.
 * `shortWindowS` overrides the short window (the bench tries others).
 */
export function encoderWindow(samples: number, beams: number, shortWindowS = 20): EncoderWindow {
  if (beams > 1) return { windowFrames: WHISPER_FULL_WINDOW, maxLength: DEFAULT_MAX_LENGTH };
  return {
    windowFrames: samples <= SHORT_CLIP_SECONDS * WHISPER_SAMPLE_RATE ? shortWindowS * FRAMES_PER_S : WHISPER_FULL_WINDOW,
    maxLength: Math.min(DEFAULT_MAX_LENGTH, 4 + Math.ceil((samples / WHISPER_SAMPLE_RATE) * 10)),
  };
}

export interface WhisperLoadOptions extends PrepareWhisperOptions {
  /**
   * Intra-op threads for the session (default 2). 5 s clip on 2 cores, greedy: 1 thread ~0.5-0.6 s; 2 threads
   * ~0.3 s (spinning) / ~0.38 s (no spinning) when both cores are free, but under contention spinning 2 threads
   * fall to ~0.9-1.0 s, worse than 1 thread, while non-spinning stay ~0.55-0.7 s.
   */
  intraOpNumThreads?: number;
  /** Let idle intra-op threads spin (default false; see above). */
  allowSpinning?: boolean;
  /** Default maximum sequence length in tokens, prompt included (default 224; Whisper's limit is 448). */
  maxLength?: number;
  /** Default beam count (default 1 = greedy, the fastest). */
  beams?: number;
  /** Shorter encoder window and token cap for short clips (default true; see encoderWindow). False: 30 s always. */
  shortWindow?: boolean;
}

export interface TranscribeOptions {
  /** Beam count; 1 = greedy. */
  beams?: number;
  /** The short window policy (encoderWindow) for this call, whatever the recognizer's default. */
  shortWindow?: boolean;
  /** Maximum sequence length in tokens, prompt included. */
  maxLength?: number;
}

export interface Transcript {
  /** Trimmed text, special tokens removed. */
  text: string;
  /** Generated token ids from <|startoftranscript|> up to and including the first <|endoftext|>. */
  tokens: number[];
}

/** What callers of a recognizer need; implemented by WhisperRecognizer (in-thread) and wrappers such as a worker pool. */
export interface SpeechRecognizer {
  transcribe(samples16k: Float32Array, opts?: TranscribeOptions): Promise<Transcript>;
}

/**
 * One onnxruntime session on the edited Whisper graph. Note: onnxruntime-node runs inference synchronously
 * on the calling thread (inside a setImmediate), so transcribe() blocks the event loop for the inference time;
 * run it in a worker thread where that matters.
 */
export class WhisperRecognizer implements SpeechRecognizer {
  private constructor(
    private readonly session: ort.InferenceSession,
    readonly tokenizer: WhisperTokenizer,
    private readonly defaults: { maxLength: number; beams: number; shortWindow: boolean },
  ) {}

  /** Prepare (or reuse) the edited model in the cache directory and open one session on it. */
  static async load(opts: WhisperLoadOptions = {}): Promise<WhisperRecognizer> {
    const prepared = await prepareWhisperModel(opts);
    const vocab = JSON.parse(await fs.readFile(prepared.vocabPath, 'utf8')) as WhisperVocab;
    const session = await createCpuSession(prepared.modelPath, {
      intraOpNumThreads: opts.intraOpNumThreads ?? 2,
      allowSpinning: opts.allowSpinning ?? false,
    });
    return new WhisperRecognizer(session, new WhisperTokenizer(vocab), {
      maxLength: opts.maxLength ?? DEFAULT_MAX_LENGTH,
      beams: opts.beams ?? 1,
      shortWindow: opts.shortWindow ?? true,
    });
  }

  async transcribe(samples16k: Float32Array, opts: TranscribeOptions = {}): Promise<Transcript> {
    if (samples16k.length > WHISPER_MAX_SAMPLES) {
      throw new RangeError(
        `whisper: input is ${(samples16k.length / WHISPER_SAMPLE_RATE).toFixed(2)} s of 16 kHz audio; ` +
          `at most 30 s (${WHISPER_MAX_SAMPLES} samples) per call, chunk longer audio`,
      );
    }
    if (samples16k.length === 0) return { text: '', tokens: [] };
    const beams = opts.beams ?? this.defaults.beams;
    const maxLength = opts.maxLength ?? this.defaults.maxLength;
    if (!Number.isInteger(beams) || beams < 1) throw new RangeError('whisper: beams must be an integer >= 1');
    if (!Number.isInteger(maxLength) || maxLength < 4 || maxLength > 448) {
      throw new RangeError('whisper: maxLength must be an integer in 4..448');
    }
    let pcm = samples16k;
    if (pcm.length < MIN_SAMPLES) {
      pcm = new Float32Array(MIN_SAMPLES);
      pcm.set(samples16k);
    }
    // Off: what the graph did before the window became an input (30 s, the caller's token limit).
    const window = (opts.shortWindow ?? this.defaults.shortWindow) ? encoderWindow(pcm.length, beams) : { windowFrames: WHISPER_FULL_WINDOW, maxLength };
    const feeds = {
      audio_pcm: new ort.Tensor('float32', pcm, [1, pcm.length]),
      window_frames: new ort.Tensor('int64', BigInt64Array.of(BigInt(window.windowFrames)), []),
      max_length: new ort.Tensor('int32', Int32Array.of(Math.min(maxLength, window.maxLength)), [1]),
      min_length: new ort.Tensor('int32', Int32Array.of(0), [1]),
      num_beams: new ort.Tensor('int32', Int32Array.of(beams), [1]),
      num_return_sequences: new ort.Tensor('int32', Int32Array.of(1), [1]),
      length_penalty: new ort.Tensor('float32', Float32Array.of(1), [1]),
      repetition_penalty: new ort.Tensor('float32', Float32Array.of(1), [1]),
    };
    const out = await this.session.run(feeds);
    const seq = out['sequences'];
    if (!seq) throw new Error('whisper: model returned no sequences');
    // [batch=1, num_return_sequences=1, length]: the first row is the best hypothesis.
    const len = seq.dims[2] ?? seq.data.length;
    const row = Array.from((seq.data as Int32Array).subarray(0, len));
    for (const t of Object.values(out)) t.dispose();
    const eot = row.indexOf(this.tokenizer.eot, 1);
    const tokens = eot >= 0 ? row.slice(0, eot + 1) : row;
    return { text: normalizeText(this.tokenizer.decode(tokens)), tokens };
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

function normalizeText(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}
