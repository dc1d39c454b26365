// The end-of-turn decision without models: lexical evidence from the words, prosody from synthetic voiced sounds, and
// the adaptive wait between endpointingConfig's bounds (smartTurnConfig on and off).
import { describe, expect, it } from 'vitest';
import { completeness, decide, silenceNeededMs, type TurnConfig } from '../engine/turn/end-of-turn.js';
import { expectation, lexicalFeatures, trailingDigits, words } from '../engine/turn/lexical.js';
import { ProsodyTracker } from '../engine/turn/prosody.js';

const SR = 16000;
const CFG: TurnConfig = { smartTurn: true, smartWaitMs: 0, minDelayMs: 200, maxDelayMs: 3000 };
/** Prosody of a phrase end: the pitch falls to the bottom of the voice and the energy fades. */
const FALL = { f0End: -4, f0Slope: -15, energyEnd: -8, energySlope: -40, finalLengthening: 0.3, voicedEnd: 0.4, f0Floor: 0.2, f0Range: 7, voicedFrames: 60 };

describe('lexical evidence', () => {
  it('ignores the final period and finds endings that cannot end a turn', () => {
    for (const text of ['My name is.', 'I would like to book the.', 'I paid the bill and.', "I'm calling to.", 'So I went with my.', 'Um.'])
      expect(lexicalFeatures(text).openEnding, text).toBe(1);
    for (const text of ['I would like to book a table.', 'My name is John Smith.', 'That is all.', 'Thank you.'])
      expect(lexicalFeatures(text).openEnding, text).toBe(0);
    expect(lexicalFeatures('I need eggs, milk,').trailingMark).toBe(1);
    expect(lexicalFeatures('I need eggs, milk, and bread.').trailingMark).toBe(0);
  });

  it('reads what the agent asked: a yes/no question is answered in a word, a number is not done until its digits are', () => {
    expect(expectation('Can I help you with anything else?')).toBe('yes_no');
    expect(expectation('Thanks. What is your phone number?')).toBe('number');
    expect(expectation('How can I help you today?')).toBe('open');
    expect(expectation('I will note that.')).toBe('none');
    expect(lexicalFeatures('No, thanks.', 'Can I help you with anything else?').shortAnswer).toBe(1);
    expect(lexicalFeatures('Yes.', 'Is that correct?').shortAnswer).toBe(1);
    const q = 'What is your phone number?';
    expect(lexicalFeatures('4 1 5.', q).numberOpen).toBe(1);
    expect(lexicalFeatures('four one five, two three two.', q).numberOpen).toBe(1);
    expect(lexicalFeatures('415-232-9876.', q)).toMatchObject({ numberOpen: 0, numberDone: 1 });
    expect(lexicalFeatures('My number is 415', undefined).numberOpen).toBeGreaterThan(0);
    expect(trailingDigits(words('it is 4 1 5 2'))).toBe(4);
  });

  it('scores complete sentences above hesitations at function words, and a short answer to a yes/no question as complete', () => {
    const pairs: [string, string][] = [
      ['I would like to book a table for two.', 'I would like to book a.'],
      ['My name is John Smith.', 'My name is.'],
      ['I paid the bill.', 'I paid the bill and.'],
      ['I want to cancel my order.', 'I want to cancel my.'],
    ];
    for (const [done, open] of pairs) expect(completeness({ text: done }), `${done} vs ${open}`).toBeGreaterThan(completeness({ text: open }));
    expect(completeness({ text: 'Yes.', agentText: 'Is that right?' })).toBeGreaterThan(0.5);
    expect(completeness({ text: '4 1 5.', agentText: 'What is your phone number?' })).toBeLessThan(completeness({ text: '4 1 5 2 3 2 9 8 7 6.', agentText: 'What is your phone number?' }));
  });
});

describe('the adaptive wait', () => {
  it('commits a confident turn at the shortest wait and waits up to the longest for a confident hesitation', () => {
    const policy = { minDelayMs: 200, maxDelayMs: 3000, threshold: 0.5 };
    expect(silenceNeededMs(0.9, policy)).toBe(200);
    expect(silenceNeededMs(0.5, policy)).toBe(200);
    expect(silenceNeededMs(0, policy)).toBe(3000);
    const mid = silenceNeededMs(0.25, policy);
    expect(mid).toBeGreaterThan(200);
    expect(mid).toBeLessThan(3000);
    expect(decide({ text: 'My name is.' }, CFG).waitMs).toBeGreaterThan(1000);
    expect(decide({ text: 'No, thank you.', agentText: 'Can I help you with anything else?', prosody: FALL }, CFG).waitMs).toBe(200);
    expect(decide({ text: 'I would like to book a table for two.', prosody: FALL }, CFG).waitMs).toBe(200);
    // A falling pitch does not finish "my name is": the words cap the probability.
    expect(decide({ text: 'My name is.', prosody: FALL }, CFG).waitMs).toBeGreaterThan(1000);
  });

  it('smartTurnConfig off: silence alone (minDelayMs) decides; waitTimeInSecs caps the wait for a hesitation', () => {
    expect(decide({ text: 'My name is.' }, { ...CFG, smartTurn: false }).waitMs).toBe(200);
    expect(decide({ text: 'My name is.' }, { ...CFG, smartWaitMs: 1200 }).waitMs).toBeLessThanOrEqual(1200);
    // The cap stays within endpointingConfig's bounds.
    expect(decide({ text: 'My name is.' }, { ...CFG, smartWaitMs: 9000 }).waitMs).toBeLessThanOrEqual(3000);
  });
});

/** A voiced sound: a pulse train (glottal-like) through a one-pole filter, F0 moving from f0a to f0b Hz, amplitude a0 -> a1. */
function voiced(seconds: number, f0a: number, f0b: number, a0 = 0.3, a1 = 0.3): Float32Array {
  const n = Math.round(seconds * SR);
  const out = new Float32Array(n);
  let phase = 0;
  let y = 0;
  for (let i = 0; i < n; i++) {
    const t = i / n;
    const f = f0a + (f0b - f0a) * t;
    phase += f / SR;
    const pulse = phase >= 1 ? 1 : 0;
    if (phase >= 1) phase -= 1;
    y = 0.9 * y + pulse;
    out[i] = (a0 + (a1 - a0) * t) * (y / 5 - 0.5) * 0.6 + 0.001 * Math.sin(i);
  }
  return out;
}

function track(x: Float32Array): { tracker: ProsodyTracker; windows: number } {
  const tracker = new ProsodyTracker();
  const windows = Math.floor(x.length / 512);
  for (let w = 0; w < windows; w++) tracker.push(x.subarray(w * 512, (w + 1) * 512));
  return { tracker, windows };
}

describe('prosody at the pause', () => {
  it('hears a falling pitch and a fading voice at a phrase end, a level or rising pitch before a hesitation', () => {
    const base = voiced(1.2, 180, 180);
    const fall = new Float32Array([...base, ...voiced(0.4, 180, 120, 0.3, 0.08)]);
    const rise = new Float32Array([...base, ...voiced(0.4, 180, 230, 0.3, 0.3)]);
    const a = track(fall);
    const b = track(rise);
    const fa = a.tracker.features(0, a.windows);
    const fb = b.tracker.features(0, b.windows);
    expect(fa.voicedFrames).toBeGreaterThan(60);
    expect(fa.f0Slope).toBeLessThan(-5);
    expect(fb.f0Slope).toBeGreaterThan(5);
    expect(fa.f0End).toBeLessThan(-3);
    expect(fb.f0End).toBeGreaterThan(2);
    expect(fa.energyEnd).toBeLessThan(fb.energyEnd);
  });

  it('hears a steady voice as level (no fall, no rise) at 110-240 Hz and nothing in silence', () => {
    for (const f0 of [110, 160, 240]) {
      const { tracker, windows } = track(voiced(0.6, f0, f0));
      const f = tracker.features(0, windows);
      // f0End is relative to the turn's median; a steady voice has none.
      expect(Math.abs(f.f0End)).toBeLessThan(0.5);
      expect(Math.abs(f.f0Slope)).toBeLessThan(2);
      expect(f.voicedFrames).toBeGreaterThan(30);
    }
    const { tracker, windows } = track(new Float32Array(SR));
    expect(tracker.features(0, windows).voicedFrames).toBe(0);
  });
});
