// How accurate and fast is the raw Whisper model (no API in between) on the Asterisk English prompts?
// Usage: npx tsx bench/stt-wer-raw.ts [--limit N] [--beams N] [--threads N]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WhisperRecognizer, WHISPER_MAX_SAMPLES, prepareWhisperModel } from '../engine/models/whisper/index.js';
import { listAsteriskPrompts, loadPrompt16k, splitAtPauses, asteriskCorpusAvailable } from './lib/asterisk-corpus.js';
import { errorCount, scoreText, sumErrors, wer, type WordErrors } from './lib/wer.js';

const args = process.argv.slice(2);
const arg = (name: string): number | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : undefined;
};
const limit = arg('limit') ?? Infinity;
const beams = arg('beams') ?? 1;
const threads = arg('threads') ?? 2;

if (!asteriskCorpusAvailable()) {
  console.error('Asterisk prompts not installed (apt-get install asterisk-core-sounds-en-wav asterisk-core-sounds-en)');
  process.exit(1);
}
const cacheDir = process.env.PARLEY_DATA_DIR ? path.join(process.env.PARLEY_DATA_DIR, 'models-cache') : undefined;

let t0 = performance.now();
const prepared = await prepareWhisperModel({ cacheDir });
const prepareMs = performance.now() - t0;
t0 = performance.now();
const rec = await WhisperRecognizer.load({ cacheDir, intraOpNumThreads: threads });
const loadMs = performance.now() - t0;

const prompts = listAsteriskPrompts().slice(0, limit);
if (prompts[0]) await rec.transcribe(loadPrompt16k(prompts[0].file), { beams }); // warm-up

interface FileResult {
  name: string;
  speech: boolean;
  reference: string;
  hypothesis: string;
  audioSec: number;
  ms: number;
  rtf: number;
  plain: WordErrors;
  full: WordErrors;
}
const results: FileResult[] = [];
const started = performance.now();
for (const [i, p] of prompts.entries()) {
  const audio = loadPrompt16k(p.file);
  const t = performance.now();
  const texts: string[] = [];
  for (const chunk of splitAtPauses(audio, WHISPER_MAX_SAMPLES)) texts.push((await rec.transcribe(chunk, { beams })).text);
  const ms = performance.now() - t;
  const hypothesis = texts.join(' ').trim();
  const audioSec = audio.length / 16000;
  results.push({
    name: p.name,
    speech: p.speech,
    reference: p.text,
    hypothesis,
    audioSec,
    ms,
    rtf: ms / 1000 / audioSec,
    plain: scoreText(p.text, hypothesis, 'plain'),
    full: scoreText(p.text, hypothesis, 'full'),
  });
  if ((i + 1) % 50 === 0) console.error(`  ${i + 1}/${prompts.length} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
}
await rec.release();

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};
const summarise = (rs: FileResult[]) => {
  const plain = sumErrors(rs.map((r) => r.plain));
  const full = sumErrors(rs.map((r) => r.full));
  const audioSec = rs.reduce((a, r) => a + r.audioSec, 0);
  const sec = rs.reduce((a, r) => a + r.ms, 0) / 1000;
  return {
    files: rs.length,
    audioSec: +audioSec.toFixed(1),
    refWords: full.refWords,
    werPlain: +wer(plain).toFixed(4),
    werFull: +wer(full).toFixed(4),
    errorsFull: full,
    filesWithErrorsFull: rs.filter((r) => errorCount(r.full) > 0).length,
    rtfMedian: +quantile(rs.map((r) => r.rtf), 0.5).toFixed(4),
    rtfP95: +quantile(rs.map((r) => r.rtf), 0.95).toFixed(4),
    rtfTotal: +(sec / audioSec).toFixed(4),
    latencyMsMedian: +quantile(rs.map((r) => r.ms), 0.5).toFixed(1),
    latencyMsP95: +quantile(rs.map((r) => r.ms), 0.95).toFixed(1),
  };
};
// Non-speech prompts (tones, silence) have no reference words: anything transcribed there counts as insertions.
const all = summarise(results);
const speech = summarise(results.filter((r) => r.speech));
// The design notes' 554-prompt figure leaves out every transcript with a bracketed annotation.
const noBrackets = summarise(results.filter((r) => !r.reference.includes('[')));

console.log(`\nWhisper tiny.en int8, raw model, beams=${beams}, intraOpNumThreads=${threads}`);
console.log(`prepare ${prepareMs.toFixed(0)} ms (${prepared.built ? 'built' : 'cached'}), load ${loadMs.toFixed(0)} ms`);
const table = { 'all prompts': all, 'speech prompts': speech, 'no [..] refs (design)': noBrackets };
console.table(
  Object.fromEntries(
    Object.entries(table).map(([k, v]) => [
      k,
      { ...v, errorsFull: `S${v.errorsFull.substitutions} D${v.errorsFull.deletions} I${v.errorsFull.insertions}` },
    ]),
  ),
);
console.log('\nworst files (full normalisation):');
for (const r of [...results].sort((a, b) => errorCount(b.full) - errorCount(a.full)).slice(0, 15)) {
  console.log(`  ${r.name} [${errorCount(r.full)}/${r.full.refWords}]\n    ref: ${r.reference}\n    hyp: ${r.hypothesis}`);
}

const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
fs.mkdirSync(outDir, { recursive: true });
const outFile = path.join(outDir, 'stt-wer-raw.json');
fs.writeFileSync(
  outFile,
  JSON.stringify(
    {
      bench: 'stt-wer-raw',
      date: new Date().toISOString(),
      model: 'speech-transcriber whisper_cpu_int8_0_model.onnx (Whisper tiny.en int8), BpeDecoder removed',
      config: { beams, intraOpNumThreads: threads, upsampler: 'engine/audio/resample.ts resample(8000 -> 16000), default quality' },
      prepareMs: +prepareMs.toFixed(0),
      loadMs: +loadMs.toFixed(0),
      summary: { all, speech, noBrackets },
      files: results,
    },
    null,
    1,
  ),
);
console.log(`\nwrote ${path.relative(process.cwd(), outFile)}`);
