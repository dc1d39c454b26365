// Live recognition engine (engine/stt/live.ts) on real speech: Asterisk prompts streamed in 20 ms chunks.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import opus from '@discordjs/opus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeSamples } from '../engine/audio/codecs.js';
import { AudioFormatError } from '../engine/audio/errors.js';
import { resample } from '../engine/audio/resample.js';
import { readWav } from '../engine/audio/wav.js';
import { ModelRegistry } from '../engine/models/registry.js';
import { LiveTranscriber, isLiveEncoding, type LiveEvent, type LiveTranscriberOptions } from '../engine/stt/live.js';

const SOUNDS = '/usr/share/asterisk/sounds/en_US_f_Allison';
const TRANSCRIPTS = '/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz';
const corpus = fs.existsSync(SOUNDS) && fs.existsSync(TRANSCRIPTS);
const RATE = 8000;
const CHUNK_MS = 20;

type Stamped = LiveEvent & { wall: number };
type Transcript = Extract<LiveEvent, { type: 'transcript' }> & { wall: number };

let registry: ModelRegistry;
let references: Map<string, string>;

function loadReferences(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of gunzipSync(fs.readFileSync(TRANSCRIPTS)).toString('utf8').split('\n')) {
    const m = /^([^\s:;]+):\s*(.*)$/.exec(line.trim());
    if (m?.[1] && m[2]) out.set(m[1], m[2].trim());
  }
  return out;
}

function prompt(name: string): Float32Array {
  const audio = readWav(fs.readFileSync(path.join(SOUNDS, `${name}.wav`)));
  expect(audio.sampleRate).toBe(RATE);
  return audio.samples;
}

function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
}

/** Share of the reference's words found in the hypothesis. */
function recall(reference: string, hypothesis: string): number {
  const ref = words(reference);
  const hyp = new Set(words(hypothesis));
  return ref.filter((w) => hyp.has(w)).length / Math.max(1, ref.length);
}

interface Layout {
  samples: Float32Array;
  /** Where each prompt sits in the stream, seconds. */
  spans: { name: string; start: number; end: number }[];
}

/** lead silence, prompt, gap silence, prompt, ..., tail silence (8 kHz). */
function layout(names: string[], gapSeconds = 1.5, leadSeconds = 0.5, tailSeconds = 1.5): Layout {
  const parts: Float32Array[] = [new Float32Array(leadSeconds * RATE)];
  const spans: Layout['spans'] = [];
  let pos = leadSeconds * RATE;
  names.forEach((name, i) => {
    const p = prompt(name);
    spans.push({ name, start: pos / RATE, end: (pos + p.length) / RATE });
    parts.push(p);
    pos += p.length;
    const silence = new Float32Array(Math.round((i === names.length - 1 ? tailSeconds : gapSeconds) * RATE));
    parts.push(silence);
    pos += silence.length;
  });
  const samples = new Float32Array(pos);
  let o = 0;
  for (const part of parts) {
    samples.set(part, o);
    o += part.length;
  }
  return { samples, spans };
}

function chunks(bytes: Buffer, bytesPerChunk: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += bytesPerChunk) out.push(bytes.subarray(i, i + bytesPerChunk));
  return out;
}

function session(opts: Partial<LiveTranscriberOptions> & { encoding?: string } = {}) {
  const events: Stamped[] = [];
  const t0 = performance.now();
  const live = new LiveTranscriber(
    registry,
    { sampleRate: RATE, encoding: 'linear16', vadEvents: true, ...opts },
    (e) => events.push({ ...e, wall: (performance.now() - t0) / 1000 }),
  );
  const transcripts = () => events.filter((e): e is Transcript => e.type === 'transcript');
  const finals = () => transcripts().filter((e) => e.isFinal);
  return { live, events, t0, transcripts, finals };
}

/** Pushes chunks; with `realtime`, each chunk at its due time (no drift), else yielding now and then. */
async function feed(live: LiveTranscriber, parts: Buffer[], chunkSeconds: number, realtime: boolean, t0 = performance.now()): Promise<void> {
  for (let i = 0; i < parts.length; i++) {
    live.push(parts[i]!);
    if (realtime) {
      const wait = t0 + (i + 1) * chunkSeconds * 1000 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    } else if (i % 25 === 24) {
      await new Promise((r) => setImmediate(r));
    }
  }
}

async function waitFor(ok: () => boolean, timeoutMs: number): Promise<void> {
  const until = performance.now() + timeoutMs;
  while (!ok() && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
}

beforeAll(async () => {
  registry = new ModelRegistry({ cacheDir: path.join(os.tmpdir(), 'parley-models'), concurrency: 2, maxWaiting: 8, synthesisWorkers: 1 });
  await Promise.all([registry.recognizer(), registry.vad()]);
  if (corpus) references = loadReferences();
}, 180_000);

afterAll(async () => {
  await registry?.close();
});

describe('LiveTranscriber options', () => {
  it('accepts the wire encodings and refuses others at construction', () => {
    for (const e of ['linear16', 'linear32', 'mulaw', 'alaw', 'opus', 'ogg_opus']) expect(isLiveEncoding(e)).toBe(true);
    expect(isLiveEncoding('mp3')).toBe(false);
    expect(() => new LiveTranscriber(registry, { sampleRate: 8000, encoding: 'mp3', vadEvents: false }, () => undefined)).toThrow(AudioFormatError);
    expect(() => new LiveTranscriber(registry, { sampleRate: 0, encoding: 'linear16', vadEvents: false }, () => undefined)).toThrow(/sample rate/);
  });

  it('reports undecodable input as an error event and then goes quiet', async () => {
    const s = session({ encoding: 'ogg_opus' });
    s.live.push(Buffer.from('this is not an ogg stream at all'));
    s.live.push(Buffer.from('more'));
    await s.live.close();
    expect(s.events.map((e) => e.type)).toEqual(['error']);
    expect((s.events[0] as { message: string }).message).toMatch(/Ogg/);
  });

  it('answers finalize and close on a silent stream with empty finals, exactly one is_last', async () => {
    const s = session();
    await feed(s.live, chunks(encodeSamples(new Float32Array(RATE), 'linear16'), 320), 0.02, false);
    await s.live.finalize();
    await s.live.close();
    await s.live.close();
    s.live.push(Buffer.alloc(320));
    const t = s.transcripts();
    expect(t.map((e) => [e.transcript, e.isFinal, e.fromFinalize, e.isLast])).toEqual([
      ['', true, true, false],
      ['', true, false, true],
    ]);
    expect(s.events.some((e) => e.type === 'speech_started')).toBe(false);
  });
});

describe.skipIf(!corpus)('LiveTranscriber on real speech (Asterisk prompts, 8 kHz)', () => {
  it('streams two prompts in real time: interims, two ordered finals, VAD pairs, one is_last, low final latency', async () => {
    const names = ['cannot-complete-as-dialed', 'check-number-dial-again'];
    const { samples, spans } = layout(names);
    const s = session({ eouSilenceMs: 600 });
    const t0 = performance.now();
    await feed(s.live, chunks(encodeSamples(samples, 'linear16'), RATE * 2 * 0.02), CHUNK_MS / 1000, true, t0);
    await s.live.close();
    const wall0 = (t0 - s.t0) / 1000; // stream time 0 on the events' clock

    const finals = s.finals().filter((f) => !f.isLast);
    expect(finals.map((f) => f.transcript.length > 0)).toEqual([true, true]);
    names.forEach((name, i) => expect(recall(references.get(name)!, finals[i]!.transcript)).toBeGreaterThanOrEqual(0.8));
    expect(words(finals[0]!.transcript)).toEqual(expect.arrayContaining(['call', 'cannot', 'completed', 'dialed']));
    expect(words(finals[1]!.transcript)).toEqual(expect.arrayContaining(['check', 'number', 'dial', 'again']));

    // Finals cover their prompt's span; one is_last, last of all transcripts.
    finals.forEach((f, i) => {
      expect(f.start).toBeLessThan(spans[i]!.start + 0.3);
      expect(f.start).toBeGreaterThan(spans[i]!.start - 0.4);
      expect(f.end).toBeGreaterThan(spans[i]!.end - 0.4);
      expect(f.end).toBeLessThan(spans[i]!.end + 0.4);
      expect(f.fromFinalize).toBe(false);
    });
    const t = s.transcripts();
    expect(t.filter((e) => e.isLast)).toHaveLength(1);
    expect(t.at(-1)!.isLast).toBe(true);

    // Interims: some before the first final, all inside an utterance and before its final, none after the last final.
    const firstFinal = t.indexOf(finals[0]!);
    const interims = t.filter((e) => !e.isFinal);
    expect(t.slice(0, firstFinal).filter((e) => !e.isFinal).length).toBeGreaterThan(0);
    for (const e of interims) {
      const owner = finals.find((f) => Math.abs(f.start - e.start) < 1e-6);
      expect(owner).toBeDefined();
      expect(t.indexOf(e)).toBeLessThan(t.indexOf(owner!));
      expect(e.end).toBeLessThanOrEqual(owner!.end + 0.1);
    }

    // VAD events: started/ended alternate, one pair per prompt, times near the prompt bounds, before the final.
    const vad = s.events.filter((e) => e.type === 'speech_started' || e.type === 'speech_ended');
    expect(vad.map((e) => e.type)).toEqual(['speech_started', 'speech_ended', 'speech_started', 'speech_ended']);
    spans.forEach((span, i) => {
      const started = vad[2 * i] as { timestamp: number; wall: number };
      const ended = vad[2 * i + 1] as { timestamp: number; wall: number };
      expect(started.timestamp).toBeGreaterThan(span.start - 0.3);
      expect(started.timestamp).toBeLessThan(span.start + 0.3);
      expect(ended.timestamp).toBeGreaterThan(span.end - 0.4);
      expect(ended.timestamp).toBeLessThan(span.end + 0.4);
      expect(started.timestamp).toBe(finals[i]!.start);
      expect(ended.timestamp).toBe(finals[i]!.end);
      // Decided in real time: started ~minSpeech after onset, ended ~eou after the end of speech.
      expect(started.wall - wall0).toBeLessThan(started.timestamp + 0.8);
      expect(ended.wall - wall0).toBeLessThan(ended.timestamp + 0.6 + 0.5);
    });

    // Latency on the stream clock: from the end of speech (final.end) and from the end-of-utterance decision
    // (end of speech + 600 ms of silence) to the final's arrival.
    const afterSpeech = finals.map((f) => f.wall - wall0 - f.end);
    const afterEou = afterSpeech.map((x) => x - 0.6 + 0.03);
    console.log(`live final latency: after end of speech ${afterSpeech.map((x) => x.toFixed(3)).join(', ')} s; after EOU decision ${afterEou.map((x) => x.toFixed(3)).join(', ')} s`);
    for (const x of afterEou) expect(x).toBeLessThan(1.5);
    expect(s.live.stats.speculations).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('ends a finished sentence after a short silence (adaptive end of utterance) unless eou_timeout_ms is set', async () => {
    // The prompt, a little silence, then no more audio: a normal end of utterance (eouSilenceMs of silence) can
    // never fire, only the adaptive one, once the speculative final reads as a finished sentence.
    const { samples } = layout(['check-number-dial-again'], 0, 0.5, 0.2);
    const bytes = encodeSamples(samples, 'linear16');
    const adaptive = session();
    await feed(adaptive.live, chunks(bytes, 320), 0.02, false);
    await waitFor(() => adaptive.finals().length > 0, 15_000);
    const finals = adaptive.finals();
    expect(finals).toHaveLength(1);
    expect(finals[0]!.transcript).toMatch(/dial again[.!]$/i);
    expect(finals[0]!.isLast).toBe(false);
    expect(adaptive.live.stats.earlyEnds).toBe(1);
    const ended = adaptive.events.filter((e) => e.type === 'speech_ended');
    expect(ended).toHaveLength(1);
    expect(adaptive.events.indexOf(ended[0]!)).toBeLessThan(adaptive.events.indexOf(finals[0]!));
    expect((ended[0] as { timestamp: number }).timestamp).toBe(finals[0]!.end);
    await adaptive.live.close();
    expect(adaptive.finals().map((f) => [f.transcript, f.isLast])).toEqual([[finals[0]!.transcript, false], ['', true]]);

    // The same audio with an explicit end-of-utterance silence: the utterance stays open until close.
    const fixed = session({ eouSilenceMs: 300 });
    await feed(fixed.live, chunks(bytes, 320), 0.02, false);
    await new Promise((r) => setTimeout(r, 2000));
    // Speculative finals ran (one at each pause; the last one for the trailing silence), and none ended it.
    expect(fixed.live.stats.speculations).toBeGreaterThanOrEqual(1);
    expect(fixed.finals()).toHaveLength(0);
    await fixed.live.close();
    expect(fixed.finals().map((f) => [f.transcript, f.isLast])).toEqual([[finals[0]!.transcript, true]]);
    expect(fixed.live.stats.earlyEnds).toBe(0);
    expect(fixed.live.stats.speculationsUsed).toBe(1);
  }, 60_000);

  it('finalises a very short single word (a digit, a letter) sent alone and closed right after', async () => {
    for (const [name, expected] of [
      ['digits/h-3', /\b(third|3rd)\b/],
      ['letters/f', /\bf\b/],
    ] as const) {
      const { samples } = layout([name], 1.5, 0.5, 0.2);
      const s = session({ vadEvents: false });
      await feed(s.live, chunks(encodeSamples(samples, 'linear16'), RATE * 0.02 * 2), 0.02, true);
      await s.live.close();
      const text = s.finals().map((f) => f.transcript.toLowerCase()).join(' ');
      expect(text, name).toMatch(expected);
    }
  }, 60_000);

  it('works with mu-law input streamed faster than real time', async () => {
    const names = ['conf-getpin', 'all-circuits-busy-now'];
    const { samples } = layout(names);
    const s = session({ encoding: 'mulaw', vadEvents: false });
    await feed(s.live, chunks(encodeSamples(samples, 'mulaw'), RATE * 0.02), 0.02, false);
    await s.live.close();
    const finals = s.finals();
    expect(finals).toHaveLength(3);
    expect(finals[2]!.isLast).toBe(true);
    expect(finals[2]!.transcript).toBe('');
    names.forEach((name, i) => expect(recall(references.get(name)!, finals[i]!.transcript)).toBeGreaterThanOrEqual(0.8));
    expect(words(finals[0]!.transcript)).toEqual(expect.arrayContaining(['enter', 'conference', 'number']));
    expect(words(finals[1]!.transcript)).toEqual(expect.arrayContaining(['circuits', 'busy', 'now']));
    expect(s.events.some((e) => e.type === 'speech_started' || e.type === 'speech_ended')).toBe(false);
  }, 60_000);

  it('decodes raw Opus packets (one per push) at 48 kHz', async () => {
    const { samples } = layout(['auth-thankyou'], 1.5, 0.5, 1.0);
    const pcm48 = resample(samples, RATE, 48000);
    const encoder = new opus.OpusEncoder(48000, 1);
    const s = session({ encoding: 'opus', sampleRate: 48000 });
    const frame = 960;
    const packets: Buffer[] = [];
    for (let i = 0; i + frame <= pcm48.length; i += frame) packets.push(encoder.encode(encodeSamples(pcm48.subarray(i, i + frame), 'linear16')));
    for (const p of packets) s.live.push(p);
    await s.live.close();
    const text = s.finals().map((f) => f.transcript).join(' ');
    expect(words(text)).toEqual(expect.arrayContaining(['thank', 'you']));
  }, 60_000);

  it('finalize() mid-utterance emits a from_finalize final and recognition goes on', async () => {
    const { samples } = layout(['agent-alreadyon']);
    const bytes = encodeSamples(samples, 'linear16');
    const split = Math.round((0.5 + 1.9) * RATE) * 2; // "That agent is already logged on" has been said
    const s = session();
    await feed(s.live, chunks(bytes.subarray(0, split), 320), 0.02, false);
    await s.live.finalize();
    const afterFinalize = s.finals();
    expect(afterFinalize).toHaveLength(1);
    expect(afterFinalize[0]!.fromFinalize).toBe(true);
    expect(words(afterFinalize[0]!.transcript)).toEqual(expect.arrayContaining(['agent']));
    expect(afterFinalize[0]!.end).toBeCloseTo(split / 2 / RATE, 1);
    await feed(s.live, chunks(bytes.subarray(split), 320), 0.02, false);
    await s.live.close();
    const finals = s.finals();
    expect(finals.map((f) => [f.fromFinalize, f.isLast])).toEqual([
      [true, false],
      [false, false],
      [false, true],
    ]);
    expect(words(finals[1]!.transcript)).toEqual(expect.arrayContaining(['enter', 'number', 'pound', 'key']));
    expect(finals[1]!.start).toBeGreaterThanOrEqual(finals[0]!.end - 0.01);
    // VAD events are independent of finals: one speech segment.
    expect(s.events.filter((e) => e.type === 'speech_started')).toHaveLength(1);
    expect(s.events.filter((e) => e.type === 'speech_ended')).toHaveLength(1);
  }, 60_000);

  it('close() during speech emits the transcript as the is_last final', async () => {
    const { samples } = layout(['hello-world'], 0, 0.5, 0);
    const s = session();
    await feed(s.live, chunks(encodeSamples(samples, 'linear16'), 320), 0.02, false);
    await s.live.close();
    const finals = s.finals();
    expect(finals).toHaveLength(1);
    expect(finals[0]!.isLast).toBe(true);
    expect(words(finals[0]!.transcript)).toEqual(expect.arrayContaining(['hello', 'world']));
    expect(s.events.filter((e) => e.type === 'speech_ended')).toHaveLength(1);
    expect(s.events.at(-1)).toBe(finals[0]);
  }, 60_000);

  it('finalises an utterance at maxUtteranceSeconds and continues in the next', async () => {
    const { samples } = layout(['agent-alreadyon'], 0, 0.5, 1.5);
    const s = session({ maxUtteranceSeconds: 3, vadEvents: false });
    await feed(s.live, chunks(encodeSamples(samples, 'linear16'), 320), 0.02, false);
    await s.live.close();
    const finals = s.finals().filter((f) => f.transcript);
    expect(finals.length).toBeGreaterThanOrEqual(2);
    for (const f of finals) expect(f.end - f.start).toBeLessThanOrEqual(3.05);
    for (let i = 1; i < finals.length; i++) expect(finals[i]!.start).toBeGreaterThanOrEqual(finals[i - 1]!.end - 0.01);
    const all = words(finals.map((f) => f.transcript).join(' '));
    expect(all).toEqual(expect.arrayContaining(['agent', 'logged', 'enter', 'pound', 'key']));
  }, 60_000);

  it('abort() stops everything: no event after it', async () => {
    const { samples } = layout(['agent-alreadyon'], 0, 0.5, 1.0);
    const s = session();
    await feed(s.live, chunks(encodeSamples(samples, 'linear16'), 320), 0.02, false);
    const n = s.events.length;
    s.live.abort();
    await s.live.finalize();
    await s.live.close();
    await new Promise((r) => setTimeout(r, 2500));
    expect(s.events.length).toBe(n);
  }, 30_000);
});
