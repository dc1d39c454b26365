// Whisper recognizer: graph edit and cache, token decoding, and real speech from the Asterisk prompts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ort } from '../engine/models/onnx.js';
import {
  WhisperRecognizer,
  WhisperTokenizer,
  prepareWhisperModel,
  type PreparedWhisperModel,
  type WhisperVocab,
} from '../engine/models/whisper/index.js';
import { ASTERISK_SOUNDS_DIR, asteriskCorpusAvailable, loadAsteriskTranscripts, loadPrompt16k } from '../bench/lib/asterisk-corpus.js';
import { normalizeWords, scoreText, wer } from '../bench/lib/wer.js';

let cacheDir: string;
let prepared: PreparedWhisperModel;
let recognizer: WhisperRecognizer;

beforeAll(async () => {
  cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-whisper-test-'));
  // Two preparations racing on an empty cache both succeed and agree (temp file + rename).
  const [a, b] = await Promise.all([prepareWhisperModel({ cacheDir }), prepareWhisperModel({ cacheDir })]);
  expect(a.built && b.built).toBe(true);
  expect(a.modelPath).toBe(b.modelPath);
  prepared = a;
  recognizer = await WhisperRecognizer.load({ cacheDir });
}, 120_000);

afterAll(async () => {
  await recognizer?.release();
  if (cacheDir) fs.rmSync(cacheDir, { recursive: true, force: true });
});

describe('model preparation', () => {
  it('writes an edited model that onnxruntime-node loads, with int32 sequences as output', async () => {
    expect(fs.readdirSync(cacheDir).filter((f) => f.includes('.tmp-'))).toEqual([]);
    const session = await ort.InferenceSession.create(prepared.modelPath);
    try {
      expect(session.inputNames).toEqual([
        'audio_pcm',
        'max_length',
        'min_length',
        'num_beams',
        'num_return_sequences',
        'length_penalty',
        'repetition_penalty',
        'window_frames',
      ]);
      expect(session.outputNames).toEqual(['sequences']);
    } finally {
      await session.release();
    }
  });

  it('reuses the cached model on the next preparation without rewriting it', async () => {
    const before = fs.statSync(prepared.modelPath).mtimeMs;
    const vocabBefore = fs.statSync(prepared.vocabPath).mtimeMs;
    const t = performance.now();
    const again = await prepareWhisperModel({ cacheDir });
    expect(performance.now() - t).toBeLessThan(1000);
    expect(again).toEqual({ ...prepared, built: false });
    expect(fs.statSync(again.modelPath).mtimeMs).toBe(before);
    expect(fs.statSync(again.vocabPath).mtimeMs).toBe(vocabBefore);
  });

  it('loads from the cache in under a second', async () => {
    const t = performance.now();
    const r = await WhisperRecognizer.load({ cacheDir });
    const ms = performance.now() - t;
    await r.release();
    expect(ms).toBeLessThan(1000);
  });
});

describe('token decoding', () => {
  let tok: WhisperTokenizer;
  beforeAll(() => {
    tok = new WhisperTokenizer(JSON.parse(fs.readFileSync(prepared.vocabPath, 'utf8')) as WhisperVocab);
  });

  it('decodes byte-level BPE ids and skips special tokens', () => {
    // "That agent is already logged on." as generated, with <|startoftranscript|> <|notimestamps|> ... <|endoftext|>
    const ids = [50257, 50362, 1320, 5797, 318, 1541, 18832, 319, 13, 50256];
    expect(tok.decode(ids)).toBe(' That agent is already logged on.');
    expect(tok.decode([50257, 50362, 18435, 995, 0, 50256])).toBe(' Hello world!');
    expect(tok.eot).toBe(50256);
    expect(tok.sot).toBe(50257);
  });

  it('skips language, task, no-speech and timestamp tokens', () => {
    // <|en|> <|transcribe|> <|0.00|> Goodbye . <|1.20|> <|nocaptions|> <|30.00|>
    expect(tok.decode([50258, 50358, 50363, 44442, 13, 50423, 50361, 51863])).toBe(' Goodbye.');
    for (const id of [50256, 50257, 50258, 50358, 50361, 50362, 50363, 51863]) expect(tok.isSpecial(id)).toBe(true);
    expect(tok.isSpecial(1320)).toBe(false);
    expect(tok.decode([50363, 44442, 50423], { skipSpecial: false })).toBe('<|0.00|> Goodbye<|1.20|>');
  });

  it('joins multi-byte characters split across tokens', () => {
    expect(tok.decode([19945, 2634])).toBe(' café'); // 'Ġcaf' 'Ã©'
    expect(tok.decode([19945, 127, 102])).toBe(' café'); // 'Ã' (0xC3) and '©' (0xA9) as single-byte tokens
  });
});

describe.skipIf(!asteriskCorpusAvailable())('real speech (Asterisk prompts, 8 kHz upsampled to 16 kHz)', () => {
  const transcripts = asteriskCorpusAvailable() ? loadAsteriskTranscripts() : new Map<string, string>();
  const prompt = (name: string) => loadPrompt16k(path.join(ASTERISK_SOUNDS_DIR, `${name}.wav`));

  it.each(['hello-world', 'vm-goodbye', 'agent-alreadyon', 'conf-adminmenu-162'])('transcribes %s', async (name) => {
    const reference = transcripts.get(name);
    expect(reference).toBeTruthy();
    const { text, tokens } = await recognizer.transcribe(prompt(name));
    expect(text).toBe(text.trim());
    expect(tokens[0]).toBe(recognizer.tokenizer.sot);
    expect(tokens.at(-1)).toBe(recognizer.tokenizer.eot);
    const refWords = normalizeWords(reference ?? '');
    const hypWords = normalizeWords(text);
    expect(wer(scoreText(reference ?? '', text))).toBeLessThanOrEqual(0.15);
    // real content: most reference words appear in the transcript
    expect(refWords.filter((w) => hypWords.includes(w)).length).toBeGreaterThanOrEqual(Math.ceil(refWords.length * 0.8));
  });

  it('gives the same words with beam search', async () => {
    const greedy = await recognizer.transcribe(prompt('agent-alreadyon'));
    const beam = await recognizer.transcribe(prompt('agent-alreadyon'), { beams: 4 });
    expect(normalizeWords(beam.text)).toEqual(normalizeWords(greedy.text));
  });

  it('returns no words for silence and rejects more than 30 s', async () => {
    expect((await recognizer.transcribe(new Float32Array(16000))).text).toBe('');
    expect((await recognizer.transcribe(new Float32Array(10))).text).toBe('');
    expect((await recognizer.transcribe(new Float32Array(0))).text).toBe('');
    await expect(recognizer.transcribe(new Float32Array(30 * 16000 + 1))).rejects.toThrow(/at most 30 s/);
  });
});

describe('word error rate helpers', () => {
  it('unifies numbers, symbols and punctuation', () => {
    expect(normalizeWords('Press 1, then #.')).toEqual(['press', 'one', 'then', 'pound']);
    expect(normalizeWords('one hundred and twenty-five')).toEqual(normalizeWords('125'));
    expect(normalizeWords('The 21st floor')).toEqual(['the', 'twenty', 'first', 'floor']);
    expect(normalizeWords("Don't", 'plain')).toEqual(['dont']);
  });

  it('reads dates, clock times, long digit runs and titles as they are said', () => {
    expect(normalizeWords('due on March 3')).toEqual(normalizeWords('due on March 3rd'));
    expect(normalizeWords('due on March 3')).toEqual(['due', 'on', 'march', 'third']);
    expect(normalizeWords('at 3.15 today')).toEqual(normalizeWords('at 3:15 today'));
    // a decimal is still a decimal where no time preposition comes before it
    expect(normalizeWords('rose 3.15 percent')).toEqual(['rose', 'three', 'point', 'one', 'five', 'percent']);
    expect(normalizeWords('order 48213')).toEqual(['order', 'four', 'eight', 'two', 'one', 'three']);
    expect(normalizeWords('is 75391, thanks')).toEqual(normalizeWords('is 75391. Thanks'));
    expect(normalizeWords('45,000 miles')).toEqual(['forty', 'five', 'thousand', 'miles']);
    expect(normalizeWords('Dr. Patel')).toEqual(normalizeWords('Doctor Patel'));
    // a wrong number stays an error
    expect(wer(scoreText('at 2:30 in the afternoon', 'at 230 in the afternoon'))).toBeGreaterThan(0);
  });

  it('counts substitutions, deletions and insertions', () => {
    expect(scoreText('call forwarding', 'call for reading')).toEqual({ substitutions: 1, deletions: 0, insertions: 1, refWords: 2 });
    expect(wer(scoreText('a b c d', 'a c d'))).toBe(0.25);
  });
});
