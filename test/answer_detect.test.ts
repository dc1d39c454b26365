// Answering-machine detection (engine/agent/answer-detect.ts): each rule on scripted models (a VAD that hears speech
// where the script says, a recognizer that says what the script says for as much audio as it is given), the beep
// detector (engine/audio/tone.ts) on generated tones against synthesized speech and line noise, the phrase evidence,
// and a few synthesized greetings through the real Silero VAD and Whisper.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnswerDetector, type AnswerDecision, type AnswerDetectorOptions, type GreetingEnd } from '../engine/agent/answer-detect.js';
import { machineKind, wordEvidence } from '../engine/agent/answer-detect-words.js';
import { decodeMuLaw, encodeMuLaw } from '../engine/audio/codecs.js';
import { resample } from '../engine/audio/resample.js';
import { ToneDetector } from '../engine/audio/tone.js';
import { readWav } from '../engine/audio/wav.js';
import { ModelRegistry } from '../engine/models/registry.js';
import type { InferenceKind } from '../engine/models/queue.js';
import { loadTurnModels } from '../engine/models/turn-models.js';
import type { SpeechRecognizer, Transcription, VoiceActivity } from '../engine/ports.js';
import { mulberry32 } from '../bench/lib/false-barge-sounds.js';
import { beep, lineNoise, someSynthGreetings } from '../bench/lib/greetings.js';

const RATE = 8000;

/** Speech probability 0.95 inside the script's spans (ms), 0.02 elsewhere, for each 32 ms window at 16 kHz. */
class ScriptedVad implements VoiceActivity {
  private buffered = 0;
  private windows = 0;
  constructor(private readonly spans: [number, number][]) {}
  get bufferedSamples(): number {
    return this.buffered;
  }
  async process(samples16k: Float32Array): Promise<number[]> {
    const out: number[] = [];
    this.buffered += samples16k.length;
    while (this.buffered >= 512) {
      this.buffered -= 512;
      const mid = this.windows++ * 32 + 16;
      out.push(this.spans.some(([a, b]) => mid >= a && mid < b) ? 0.95 : 0.02);
    }
    return out;
  }
  reset(): void {
    this.buffered = 0;
    this.windows = 0;
  }
}

/** Says `words(clipMs)` for a clip of clipMs of audio; `hold` keeps every answer back until released. */
class ScriptedRecognizer implements SpeechRecognizer {
  calls: { ms: number; kind: InferenceKind }[] = [];
  private held: (() => void)[] = [];
  constructor(
    private readonly words: (clipMs: number) => string,
    private readonly hold = false,
  ) {}
  transcribe(samples16k: Float32Array, kind: InferenceKind): Promise<Transcription> {
    const ms = samples16k.length / 16;
    this.calls.push({ ms, kind });
    const result = { text: this.words(ms), runMs: 1 };
    if (!this.hold) return Promise.resolve(result);
    return new Promise((resolve) => this.held.push(() => resolve(result)));
  }
  release(): void {
    for (const r of this.held.splice(0)) r();
  }
}

/** 8 kHz audio: a voice-like noise in the speech spans, optional beeps, silence elsewhere. */
function audio(totalMs: number, speech: [number, number][], beeps: { at: number; hz: number; ms: number }[] = []): Float32Array {
  const x = new Float32Array((totalMs * RATE) / 1000);
  const rnd = mulberry32(7);
  for (const [a, b] of speech) for (let i = (a * RATE) / 1000; i < (b * RATE) / 1000; i++) x[i] = 0.1 * (rnd() - 0.5) * (1 + Math.sin(i / 40));
  for (const b of beeps) x.set(beep(RATE, b.hz, b.ms, -14), (b.at * RATE) / 1000);
  return x;
}

interface Run {
  det: AnswerDetector;
  decisions: AnswerDecision[];
  ends: GreetingEnd[];
}

function detector(speech: [number, number][], words: (ms: number) => string, opts: AnswerDetectorOptions = {}, rec?: ScriptedRecognizer): Run {
  const det = new AnswerDetector({ vad: new ScriptedVad(speech), recognizer: rec ?? new ScriptedRecognizer(words) }, { rate: RATE, ...opts });
  const run: Run = { det, decisions: [], ends: [] };
  det.onDecision = (d) => run.decisions.push(d);
  det.onGreetingEnd = (g) => run.ends.push(g);
  return run;
}

/** Pushes `x` in 20 ms frames; recognition takes no audio time (each push waits for it). */
async function feed(run: Run, x: Float32Array, untilMs = Infinity): Promise<void> {
  for (let i = 0; i + 160 <= x.length && (i * 1000) / RATE < untilMs; i += 160) {
    await run.det.push(x.subarray(i, i + 160));
    await run.det.idle();
  }
}

describe('AnswerDetector rules (scripted models)', () => {
  it('a short greeting followed by silence is a person, decided soon after the greeting ends', async () => {
    const speech: [number, number][] = [[400, 1000]];
    const run = detector(speech, () => 'Hello?');
    await feed(run, audio(5000, speech));
    expect(run.decisions).toHaveLength(1);
    const d = run.decisions[0]!;
    expect(d).toMatchObject({ verdict: 'human', reason: 'short greeting then silence', words: 'Hello?' });
    // 700 ms of silence after the VAD's pause (plus a window or two of VAD and framing).
    expect(d.atMs - 1000).toBeGreaterThanOrEqual(700);
    expect(d.atMs - 1000).toBeLessThan(850);
    expect(run.ends).toHaveLength(0);
    expect(run.det.done).toBe(true);
  });

  it('a person who says nothing for a second, then hello, is a person (not silence)', async () => {
    const speech: [number, number][] = [[1100, 1600]];
    const run = detector(speech, () => 'Hello?');
    await feed(run, audio(5000, speech));
    expect(run.decisions.map((d) => d.verdict)).toEqual(['human']);
  });

  it('telling words make it a voicemail as soon as they are recognized', async () => {
    const speech: [number, number][] = [[300, 6000]];
    const run = detector(speech, (ms) => (ms >= 1400 ? "Hi, you've reached John, please leave a message after the tone" : "Hi, you've reached"));
    await feed(run, audio(8000, speech));
    const d = run.decisions[0]!;
    expect(d).toMatchObject({ verdict: 'voicemail', reason: 'words: leave a message' });
    // The first checkpoint: 1.2 s of greeting.
    expect(d.atMs).toBeGreaterThanOrEqual(1500);
    expect(d.atMs).toBeLessThan(1700);
    expect(run.decisions).toHaveLength(1);
    // No beep: the greeting ends after 1.5 s of silence following it.
    expect(run.ends).toEqual([{ atMs: expect.any(Number), beep: false }]);
    expect(run.ends[0]!.atMs - 6000).toBeGreaterThanOrEqual(1500);
    expect(run.ends[0]!.atMs - 6000).toBeLessThan(1650);
  });

  it('IVR and screening phrases make it an IVR', async () => {
    const speech: [number, number][] = [[300, 6000]];
    const run = detector(speech, () => 'Thank you for calling Acme. For sales, press 1.');
    await feed(run, audio(7000, speech), 2500);
    expect(run.decisions[0]).toMatchObject({ verdict: 'ivr', reason: 'words: press 1' });
    const screening = detector(speech, () => "The person you're calling is using a screening service. Please state your name.");
    await feed(screening, audio(7000, speech), 2500);
    expect(screening.decisions[0]).toMatchObject({ verdict: 'ivr', reason: 'words: screening' });
  });

  it('a beep ends the greeting: the moment to leave the message', async () => {
    const speech: [number, number][] = [[300, 4000]];
    const run = detector(speech, () => 'Please leave a message after the tone.');
    await feed(run, audio(7000, speech, [{ at: 4300, hz: 1000, ms: 400 }]));
    expect(run.decisions.map((d) => d.verdict)).toEqual(['voicemail']);
    expect(run.ends).toHaveLength(1);
    expect(run.ends[0]!.beep).toBe(true);
    // Just after the beep's end (4700 ms): a frame of tone detection and a VAD window.
    expect(run.ends[0]!.atMs).toBeGreaterThanOrEqual(4700);
    expect(run.ends[0]!.atMs).toBeLessThan(4800);
  });

  it('a beep with no greeting is a voicemail, and its end is the greeting end', async () => {
    const run = detector([], () => '');
    await feed(run, audio(4000, [], [{ at: 700, hz: 850, ms: 500 }]));
    expect(run.decisions[0]).toMatchObject({ verdict: 'voicemail', reason: 'beep' });
    expect(run.ends).toEqual([{ atMs: run.decisions[0]!.atMs, beep: true }]);
    expect(run.decisions[0]!.atMs).toBeLessThan(1300);
  });

  it('a screening service that beeps is an IVR when its words come in time', async () => {
    const speech: [number, number][] = [[300, 2300]];
    const rec = new ScriptedRecognizer(() => 'At the tone, please say your name.', true);
    const run = detector(speech, () => '', {}, rec);
    const x = audio(5000, speech, [{ at: 2500, hz: 1000, ms: 300 }]);
    for (let i = 0; i + 160 <= x.length; i += 160) {
      await run.det.push(x.subarray(i, i + 160));
      // The recognizer answers 200 ms (audio) after the beep.
      if (i / 8 >= 3000) rec.release();
    }
    await run.det.idle();
    expect(run.decisions[0]).toMatchObject({ verdict: 'ivr', reason: 'beep, words: state your name' });
    expect(run.ends[0]?.beep).toBe(true);
  });

  it('a long greeting without telling words is a voicemail by 4 s; with weak IVR words an IVR', async () => {
    const speech: [number, number][] = [[300, 7000]];
    const run = detector(speech, () => 'Hi, this is Tom and Lisa, we are probably out walking the dog');
    await feed(run, audio(9000, speech));
    expect(run.decisions[0]).toMatchObject({ verdict: 'voicemail', reason: 'long greeting' });
    expect(run.decisions[0]!.atMs).toBeGreaterThanOrEqual(4000);
    expect(run.decisions[0]!.atMs).toBeLessThan(4100);
    const ivr = detector(speech, () => 'Welcome to the Riverside Clinic, our office hours are nine to five');
    await feed(ivr, audio(9000, speech));
    expect(ivr.decisions[0]).toMatchObject({ verdict: 'ivr', reason: 'long greeting, words: welcome to' });
  });

  it('a short greeting with a machine-like phrase is not a person; its silence makes it a machine', async () => {
    const speech: [number, number][] = [[300, 1500]];
    const run = detector(speech, () => "You've reached John.");
    await feed(run, audio(6000, speech));
    expect(run.decisions[0]).toMatchObject({ verdict: 'voicemail', reason: "short greeting, words: you've reached" });
    expect(run.decisions[0]!.atMs - 1500).toBeGreaterThanOrEqual(1500);
  });

  it('nothing heard for 3 s is silence; a noise with no words is forgotten', async () => {
    const run = detector([], () => '');
    await feed(run, audio(6000, []));
    expect(run.decisions).toEqual([{ verdict: 'silence', atMs: 3000, reason: 'nothing heard', words: '' }]);
    const blip: [number, number][] = [[500, 700]];
    const noise = detector(blip, () => '');
    await feed(noise, audio(6000, blip));
    expect(noise.decisions.map((d) => [d.verdict, d.atMs])).toEqual([['silence', 3000]]);
  });

  it("a person's verdict waits for the words of the greeting, then goes without them", async () => {
    const speech: [number, number][] = [[400, 1000]];
    const rec = new ScriptedRecognizer(() => 'Hello?', true);
    const run = detector(speech, () => '', {}, rec);
    const x = audio(4000, speech);
    for (let i = 0; i + 160 <= x.length; i += 160) await run.det.push(x.subarray(i, i + 160));
    expect(rec.calls).toHaveLength(1);
    expect(run.decisions[0]).toMatchObject({ verdict: 'human', reason: 'short greeting then silence (words not ready)' });
    expect(run.decisions[0]!.atMs - 1000).toBeGreaterThanOrEqual(1200);
    expect(run.decisions[0]!.atMs - 1000).toBeLessThan(1350);
  });

  it('recognizes at a few moments, not every frame, and decides once', async () => {
    const speech: [number, number][] = [[300, 3000], [3200, 9000]];
    const run = detector(speech, () => 'Hi, this is Tom and Lisa', {}, undefined);
    const rec = (run.det as unknown as { models: { recognizer: ScriptedRecognizer } }).models.recognizer;
    await feed(run, audio(12_000, speech, [{ at: 9500, hz: 1000, ms: 500 }]));
    expect(rec.calls.length).toBeGreaterThan(0);
    expect(rec.calls.length).toBeLessThanOrEqual(5);
    expect(rec.calls.some((c) => c.kind === 'speculative')).toBe(true);
    expect(run.decisions).toHaveLength(1);
    expect(run.ends).toHaveLength(1);
    expect(run.ends[0]!.beep).toBe(true);
  });

  it('stop() ends it: no verdict, no greeting end, recognitions in flight ignored', async () => {
    const speech: [number, number][] = [[300, 5000]];
    const rec = new ScriptedRecognizer(() => 'Please leave a message after the tone.', true);
    const run = detector(speech, () => '', {}, rec);
    const x = audio(8000, speech, [{ at: 5200, hz: 1000, ms: 400 }]);
    for (let i = 0; i + 160 <= 1600 * 8; i += 160) await run.det.push(x.subarray(i, i + 160));
    expect(rec.calls.length).toBe(1);
    run.det.stop();
    rec.release();
    await feed(run, x.subarray(1600 * 8));
    expect(run.decisions).toEqual([]);
    expect(run.ends).toEqual([]);
    expect(run.det.done).toBe(true);
  });

  it('takes 16 kHz input too', async () => {
    const speech: [number, number][] = [[400, 1000]];
    const det = new AnswerDetector({ vad: new ScriptedVad(speech), recognizer: new ScriptedRecognizer(() => 'Hello?') }, { rate: 16000 });
    const x = resample(audio(3000, speech), RATE, 16000);
    for (let i = 0; i + 320 <= x.length; i += 320) {
      await det.push(x.subarray(i, i + 320));
      await det.idle();
    }
    expect(det.decision?.verdict).toBe('human');
  });
});

describe('phrase evidence', () => {
  it('names voicemail, IVR and screening phrases as Whisper writes them; people say none', () => {
    const vm = ["Hi, you've reached John. I can't take your call right now.", 'The person you are trying to reach is not available.', 'Leave your name and number.', 'Please record your message at the tone.', 'Welcome to the voice mail box of 5 5 5.', "Sorry I missed your call, I'll get back to you."];
    for (const t of vm) expect([t, wordEvidence(t).strong, machineKind(wordEvidence(t))]).toEqual([t, true, 'voicemail']);
    const ivr = ['Thank you for calling Acme. For sales, press 1.', 'Press one for English.', 'Your call is important to us, please stay on the line.', 'Please state your name and why you are calling.', 'The party you are trying to reach does not accept unidentified calls.'];
    for (const t of ivr) expect([t, wordEvidence(t).strong, machineKind(wordEvidence(t))]).toEqual([t, true, 'ivr']);
    for (const t of ['Hello?', 'Hi, this is Anna speaking.', "Hello, who's calling?", 'Good morning, Smith residence.', 'Yeah?', "Johnson's Plumbing, how can I help you?", 'Hello, this person is available.'])
      expect([t, wordEvidence(t).voicemail + wordEvidence(t).ivr]).toEqual([t, 0]);
    expect(wordEvidence('[BLANK_AUDIO]').spoken).toBe(false);
    expect(wordEvidence("You've reached the Millers.")).toMatchObject({ strong: false, voicemail: 1 });
  });
});

describe('beep detection', () => {
  const withNoise = (x: Float32Array, db: number, seed: number) => {
    const n = lineNoise(mulberry32(seed), RATE, x.length, db);
    return decodeMuLaw(encodeMuLaw(x.map((v, i) => v + (n[i] as number))));
  };
  const padded = (x: Float32Array, beforeMs = 500, afterMs = 500) => {
    const y = new Float32Array(x.length + ((beforeMs + afterMs) * RATE) / 1000);
    y.set(x, (beforeMs * RATE) / 1000);
    return y;
  };
  const tones = (x: Float32Array) => {
    const d = new ToneDetector({ rate: RATE });
    return [...d.push(x), ...d.flush()];
  };

  it('finds sine beeps of 400-2000 Hz and 150 ms-1.5 s, clean and under line noise, where they are', () => {
    for (const hz of [440, 700, 1000, 1400, 2000])
      for (const ms of [150, 400, 1500])
        for (const snr of [Infinity, 10]) {
          const x = padded(beep(RATE, hz, ms, -18));
          const found = tones(Number.isFinite(snr) ? withNoise(x, -18 - snr, hz + ms) : x);
          expect(found.length, `${hz} Hz ${ms} ms snr ${snr}`).toBe(1);
          expect(Math.abs(found[0]!.endMs - (500 + ms)), `${hz} Hz ${ms} ms`).toBeLessThanOrEqual(40);
          expect(Math.abs(found[0]!.hz - hz) / hz).toBeLessThan(0.03);
        }
    // A two-tone beep is one beep.
    expect(tones(padded(beep(RATE, 700, 160, -16, 1050)))).toHaveLength(1);
  });

  it('ignores tones too short or too long to be a beep (a click, a dial tone), line noise and silence', () => {
    expect(tones(padded(beep(RATE, 1000, 60)))).toEqual([]);
    expect(tones(padded(beep(RATE, 425, 3000)))).toEqual([]);
    expect(tones(lineNoise(mulberry32(3), RATE, RATE * 5, -40, true))).toEqual([]);
    expect(tones(new Float32Array(RATE * 2))).toEqual([]);
  });

  it('hears no beep in synthesized speech (espeak-ng voices, phone line)', () => {
    const voices = ['en-us', 'en-us+f2', 'en-us+f5', 'en-us+m7', 'en-gb-x-rp+f3'];
    const texts = ['Hello? Hi, this is Anna speaking.', 'Please leave a message after the tone.', 'Thank you for calling. For sales, press one.'];
    let seconds = 0;
    for (const v of voices)
      for (const t of texts) {
        const wav = readWav(execFileSync('espeak-ng', ['-v', v, '--stdout', t]));
        const x = decodeMuLaw(encodeMuLaw(resample(wav.samples, wav.sampleRate, RATE).map((s) => 0.3 * s)));
        seconds += x.length / RATE;
        expect(tones(x), `${v}: ${t}`).toEqual([]);
      }
    expect(seconds).toBeGreaterThan(20);
  });
});

describe('AnswerDetector with the real models (Silero VAD, Whisper)', () => {
  let registry: ModelRegistry;
  beforeAll(async () => {
    registry = new ModelRegistry({ cacheDir: path.join(os.tmpdir(), 'parley-models'), concurrency: 2, maxWaiting: 8, synthesisWorkers: 1 });
    await Promise.all([registry.recognizer(), registry.vad()]);
  }, 180_000);
  afterAll(async () => {
    await registry?.close();
  });

  it('classifies synthesized greetings: a person, a voicemail with its beep, an IVR menu, line noise', async () => {
    const items = await someSynthGreetings(['h03', 'h08', 'v03', 'i02', 's02']);
    expect(items).toHaveLength(5);
    for (const g of items) {
      const det = new AnswerDetector(await loadTurnModels(registry), { rate: 8000 });
      const ends: GreetingEnd[] = [];
      det.onGreetingEnd = (e) => ends.push(e);
      for (let i = 0; i + 160 <= g.samples.length && !det.done; i += 160) {
        await det.push(g.samples.subarray(i, i + 160));
        await det.idle();
      }
      det.stop();
      expect([g.id, det.decision?.verdict]).toEqual([g.id, g.expected]);
      if (g.expected === 'human') expect(det.decision!.atMs - g.speech[0]!.endMs, g.id).toBeLessThan(1200);
      if (g.beep) {
        expect(ends).toEqual([{ atMs: expect.any(Number), beep: true }]);
        expect(ends[0]!.atMs - g.beep.endMs).toBeLessThan(150);
      }
    }
  }, 180_000);

  it('in real time (recognition on the audio clock as it runs), a person is answered within about a second', async () => {
    const [g] = await someSynthGreetings(['h06']);
    const det = new AnswerDetector(await loadTurnModels(registry), { rate: 8000 });
    const t0 = performance.now();
    for (let i = 0; i + 160 <= g!.samples.length && !det.done; i += 160) {
      const wait = t0 + ((i + 160) * 1000) / RATE - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      await det.push(g!.samples.subarray(i, i + 160));
    }
    det.stop();
    expect(det.decision?.verdict).toBe('human');
    expect(det.decision!.atMs - g!.speech[0]!.endMs).toBeLessThan(1200);
  }, 60_000);
});
