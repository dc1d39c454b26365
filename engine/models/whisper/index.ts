// Whisper speech recognition: model preparation, token decoding and the recognizer.
export { WhisperRecognizer, WHISPER_MAX_SAMPLES, WHISPER_SAMPLE_RATE, SHORT_CLIP_SECONDS, encoderWindow } from './recognizer.js';
export type { WhisperLoadOptions, TranscribeOptions, Transcript, SpeechRecognizer, EncoderWindow } from './recognizer.js';
export { prepareWhisperModel, editWhisperModel, defaultModelCacheDir, defaultWhisperSourcePath, WHISPER_FULL_WINDOW } from './prepare.js';
export type { PrepareWhisperOptions, PreparedWhisperModel } from './prepare.js';
export { WhisperTokenizer } from './tokenizer.js';
export type { WhisperVocab, DecodeOptions } from './tokenizer.js';
