// Benchmark: the built-in voices side by side (npm run bench:voices): how many words our own recognizer mishears in each
// voice's speech, and each voice's real-time factor, over the real server.
//  1. Round trip: 10 Harvard sentences (IEEE 1969, list 1) -> POST /tts (pcm 16 kHz) -> POST /stt/ (Whisper tiny.en,
//     whole-file decoding) -> corpus WER with full normalisation (bench/lib/wer.ts). Voices interleaved sentence by
//     sentence, so a slower moment of the machine falls on all of them.
//  2. Real-time factor: POST /tts at the voice's own rate (no resampling) for the same sentences, request time / audio
//     time, median of BENCH_RTF_RUNS passes (HTTP included: the engine alone is a little faster).
// Env: BENCH_VOICES (default: Flite slt, awb, rms, the four RHVoice voices and SVOX Pico's two English ones; voices the
// server does not list are reported as missing), BENCH_RTF_RUNS (default 3).
import { writeFileSync } from 'node:fs';
import { intEnv, stopAndCollectProblems } from './lib/harness.js';
import { freshStore, startServer, type TestServer } from '../test/support/server.js';
import { scoreText, sumErrors, wer, type WordErrors } from './lib/wer.js';
import { printTable, resultPath } from './lib/report.js';

const W = '/waves/v1';
const RATE = 16000;
const HARVARD = [
  'The birch canoe slid on the smooth planks.',
  'Glue the sheet to the dark blue background.',
  "It's easy to tell the depth of a well.",
  'These days a chicken leg is a rare dish.',
  'Rice is often served in round bowls.',
  'The juice of lemons makes fine punch.',
  'The box was thrown beside the parked truck.',
  'The hogs were fed chopped corn and garbage.',
  'Four hours of steady work faced us.',
  'A large size in stockings is hard to sell.',
];
const VOICES = (process.env.BENCH_VOICES ?? 'slt,rhvoice-slt,rhvoice-clb,rhvoice-bdl,rhvoice-alan,awb,rms,pico-en-US,pico-en-GB').split(',').map((v) => v.trim()).filter(Boolean);
const RTF_RUNS = intEnv('BENCH_RTF_RUNS', 3, 1);

const log = (msg: string) => process.stderr.write(`${msg}\n`);

async function tts(s: TestServer, text: string, voice: string, rate: number): Promise<{ pcm: Buffer; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${s.base}${W}/tts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text, voice_id: voice, output_format: 'pcm', sample_rate: rate }),
  });
  const pcm = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`POST /tts ${voice} -> ${res.status}: ${pcm.toString()}`);
  return { pcm, ms: performance.now() - t0 };
}

async function stt(s: TestServer, pcm: Buffer): Promise<string> {
  const res = await s.request('POST', `${W}/stt/?model=pulse&language=en&encoding=linear16&sample_rate=${RATE}`, { raw: pcm, headers: { 'content-type': 'application/octet-stream' } });
  if (res.status !== 200) throw new Error(`POST /stt/ -> ${res.status}: ${res.text}`);
  return (res.body.transcription as string).trim();
}

interface Listed {
  voiceId: string;
  model: string;
  sampleRate: number;
}

interface VoiceResult {
  voice: string;
  engine: string;
  sampleRate: number;
  errors: WordErrors;
  werFull: number;
  werPlain: number;
  rtf: number;
  audioSeconds: number;
  sentences: { reference: string; heard: string; errors: number }[];
}

const store = freshStore('sqlite');
const server = await startServer({ store, env: { PARLEY_WARM_MODELS: 'true', PARLEY_RATE_LIMIT_PER_MINUTE: '1000000' } });
const results: VoiceResult[] = [];
const missing: string[] = [];
let problems: string[] = [];
try {
  const listed = (await server.request('GET', `${W}/voice/get-all-models`)).body.voices as Listed[];
  const voices = VOICES.flatMap((id) => {
    const v = listed.find((x) => x.voiceId === id);
    if (!v) missing.push(id);
    return v ? [v] : [];
  });
  const heard = new Map<string, { reference: string; heard: string; errors: WordErrors; plain: WordErrors }[]>(voices.map((v) => [v.voiceId, []]));
  for (const [i, sentence] of HARVARD.entries()) {
    log(`round trip: sentence ${i + 1}/${HARVARD.length}`);
    for (const v of voices) {
      const words = await stt(server, (await tts(server, sentence, v.voiceId, RATE)).pcm);
      heard.get(v.voiceId)!.push({ reference: sentence, heard: words, errors: scoreText(sentence, words), plain: scoreText(sentence, words, 'plain') });
    }
  }
  const rtfs = new Map<string, number[]>(voices.map((v) => [v.voiceId, []]));
  const audio = new Map<string, number>();
  for (let run = 0; run < RTF_RUNS; run++) {
    log(`real-time factor: pass ${run + 1}/${RTF_RUNS}`);
    for (const v of voices) {
      let ms = 0;
      let seconds = 0;
      for (const sentence of HARVARD) {
        const r = await tts(server, sentence, v.voiceId, v.sampleRate);
        ms += r.ms;
        seconds += r.pcm.length / 2 / v.sampleRate;
      }
      rtfs.get(v.voiceId)!.push(ms / 1000 / seconds);
      audio.set(v.voiceId, seconds);
    }
  }
  for (const v of voices) {
    const rows = heard.get(v.voiceId)!;
    const errors = sumErrors(rows.map((r) => r.errors));
    const sorted = [...rtfs.get(v.voiceId)!].sort((a, b) => a - b);
    results.push({
      voice: v.voiceId,
      engine: v.model,
      sampleRate: v.sampleRate,
      errors,
      werFull: wer(errors),
      werPlain: wer(sumErrors(rows.map((r) => r.plain))),
      rtf: sorted[Math.floor(sorted.length / 2)] as number,
      audioSeconds: audio.get(v.voiceId) ?? NaN,
      sentences: rows.map((r) => ({ reference: r.reference, heard: r.heard, errors: r.errors.substitutions + r.errors.deletions + r.errors.insertions })),
    });
  }
} finally {
  ({ problems } = await stopAndCollectProblems(server));
  await store.cleanup();
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
printTable(
  `Built-in voices side by side: ${HARVARD.length} Harvard sentences -> POST /tts (pcm ${RATE / 1000} kHz) -> POST /stt/ (Whisper tiny.en); real-time factor = POST /tts time / audio time at the voice's own rate (median of ${RTF_RUNS})`,
  ['voice', 'engine', 'rate', 'ref words', 'S', 'D', 'I', 'WER', 'WER plain', 'audio s', 'RTF'],
  results.map((r) => [r.voice, r.engine, String(r.sampleRate), String(r.errors.refWords), String(r.errors.substitutions), String(r.errors.deletions), String(r.errors.insertions), pct(r.werFull), pct(r.werPlain), r.audioSeconds.toFixed(1), r.rtf.toFixed(3)]),
  2,
);
for (const r of results) {
  const wrong = r.sentences.filter((s) => s.errors > 0);
  if (wrong.length) console.log(`\n  ${r.voice}: ${wrong.map((s) => `"${s.heard}"`).join('; ')}`);
}
if (missing.length) console.log(`\nNot listed by this server (RHVoice not installed?): ${missing.join(', ')}`);
if (problems.length) console.log(`\nServer problems:\n  ${problems.join('\n  ')}`);
const out = resultPath('voices');
writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), node: process.version, sentences: HARVARD, rtfRuns: RTF_RUNS, results, missing, problems }, null, 2));
console.log(`\nJSON: ${out}`);
