// Turn-taking parts on their own: speech tracking from VAD probabilities, backchannels, end-of-turn text check, and
// the real-time output pacer (with a controlled clock).
import { describe, expect, it } from 'vitest';
import { SpeechTracker, isBackchannel, spokenText } from '../engine/turn/speech-tracker.js';
import { OutputPacer } from '../engine/agent/pacer.js';

const tracker = () => new SpeechTracker({ startThreshold: 0.5, endThreshold: 0.35, minSpeechWindows: 3, minVolume: 0 });

function run(t: SpeechTracker, probs: number[]): string[] {
  return probs.map((p, w) => t.push(w, p, 1)).flatMap((s) => (s ? [`${s.type}@${'onset' in s ? s.onset : s.window}`] : []));
}

describe('speech tracker', () => {
  it('confirms speech after the minimum windows, with hysteresis between the thresholds', () => {
    const t = tracker();
    expect(run(t, [0.1, 0.6, 0.4, 0.4, 0.2, 0.1, 0.45, 0.7])).toEqual(['start@1', 'pause@4', 'resume@7']);
    expect(t.state).toBe('speech');
  });

  it('drops a candidate that falls silent before it is confirmed, and ignores quiet windows', () => {
    const t = tracker();
    expect(run(t, [0.9, 0.9, 0.1, 0.2, 0.9, 0.9, 0.9])).toEqual(['start@4']);
    const quiet = new SpeechTracker({ startThreshold: 0.5, endThreshold: 0.35, minSpeechWindows: 2, minVolume: 0.05 });
    expect([0.9, 0.9, 0.9].map((p, w) => quiet.push(w, p, 0.01))).toEqual([null, null, null]);
    expect(quiet.push(3, 0.9, 0.2)).toBeNull();
    expect(quiet.push(4, 0.9, 0.2)).toEqual({ type: 'start', onset: 3 });
  });
});

describe('backchannels and non-speech', () => {
  it('recognises backchannels, alone or combined, and nothing else', () => {
    for (const text of ['Uh-huh.', 'Yeah.', 'Okay.', 'Right, right.', 'Mm-hmm', 'OK, yeah.', 'All right.', 'I see.']) expect(isBackchannel(text), text).toBe(true);
    for (const text of ['', 'Yes, I want the large one.', 'Okay, but what about Sunday?', 'Stop.', 'No.', 'Right now please.']) expect(isBackchannel(text), text).toBe(false);
  });

  it("hears Whisper's non-speech annotations as no words", () => {
    for (const text of ['[coughs]', '(breathing)', '*sigh*', '<noise>', ' [Music] ']) expect(spokenText(text), text).toBe('');
    expect(spokenText('(coughs) Wait, stop.')).toBe('Wait, stop.');
    expect(isBackchannel('(coughs) Mm-hmm.')).toBe(true);
  });
});

describe('output pacer', () => {
  const RATE = 1000; // 1 sample per ms keeps the arithmetic readable
  function pacer(leadMs = 40) {
    let now = 0;
    const sent: number[] = [];
    const events: string[] = [];
    const p = new OutputPacer({ sampleRate: RATE, frameMs: 20, leadMs, send: (f) => sent.push(f.length), onDrained: () => events.push('drained'), now: () => now });
    return { p, sent, events, advance: (ms: number) => (now += ms) };
  }

  it('sends the lead at once, then no faster than real time, and reports what was heard word by word', async () => {
    const { p, sent, advance } = pacer();
    p.push(new Float32Array(200), 'one two three four');
    // At t=0 only the lead (40 ms = 2 frames) may go out.
    expect(sent.reduce((a, b) => a + b, 0)).toBe(40);
    expect(p.heardText()).toBe('');
    advance(100);
    await new Promise((r) => setTimeout(r, 30));
    expect(p.sentSamples).toBeLessThanOrEqual(140 + 20);
    expect(p.sentSamples).toBeGreaterThanOrEqual(120);
    // 100 of 200 samples heard: half the words.
    expect(p.heardText()).toBe('one two');
    p.close();
  });

  it('stops at once on pause, keeps the clock still while paused, resumes where it was, and resets', async () => {
    const { p, advance } = pacer();
    p.push(new Float32Array(300), 'alpha beta gamma');
    advance(100);
    await new Promise((r) => setTimeout(r, 30));
    p.pause();
    const sentAtPause = p.sentSamples;
    const heardAtPause = p.heardSamples();
    advance(500);
    await new Promise((r) => setTimeout(r, 30));
    expect(p.sentSamples).toBe(sentAtPause);
    expect(p.heardSamples()).toBe(heardAtPause);
    p.resume();
    advance(50);
    await new Promise((r) => setTimeout(r, 30));
    expect(p.sentSamples).toBeGreaterThan(sentAtPause);
    p.reset();
    expect(p.pendingSamples).toBe(0);
    expect(p.heardText()).toBe('');
    expect(p.active).toBe(false);
  });

  it('after an underrun, playback restarts from what was sent (no burst), and drains once finished', async () => {
    const { p, events, advance } = pacer();
    p.push(new Float32Array(40), 'first');
    advance(1000); // nothing more arrived for a second: the listener heard silence
    await new Promise((r) => setTimeout(r, 10));
    p.push(new Float32Array(200), 'second phrase');
    // Only the lead beyond what was already played goes out now, not all 200 samples.
    expect(p.sentSamples).toBeLessThanOrEqual(40 + 40 + 20);
    p.finish();
    advance(400);
    await new Promise((r) => setTimeout(r, 60));
    expect(p.sentSamples).toBe(240);
    expect(events).toEqual(['drained']);
    expect(p.heardText()).toBe('first second phrase');
    p.close();
  });
});
