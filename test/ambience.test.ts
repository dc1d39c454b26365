// The background ambience rendered on a worker thread (prepareAmbience) is the very loop an in-place render gives, and
// is what calls then use (cached); the loop is at its level and seamless.
import { describe, expect, it } from 'vitest';
import { AMBIENCE_DBFS, ambienceLoop, prepareAmbience } from '../engine/audio/ambience.js';

describe('background ambience', () => {
  it('a loop prepared off the event loop equals the in-place render, at -35 dBFS, and is then cached', async () => {
    await prepareAmbience('static', 16000);
    const prepared = ambienceLoop('static', 16000);
    expect(ambienceLoop('static', 16000)).toBe(prepared);
    // A fresh module instance renders in place (its cache is empty).
    // @ts-expect-error: a query string makes a second instance of the module; its types are the module's.
    const fresh = (await import('../engine/audio/ambience.js?in-place')) as typeof import('../engine/audio/ambience.js');
    const inPlace = fresh.ambienceLoop('static', 16000);
    expect(inPlace).not.toBe(prepared);
    expect(Array.from(inPlace)).toEqual(Array.from(prepared));
    const rms = Math.sqrt(prepared.reduce((s, v) => s + v * v, 0) / prepared.length);
    expect(20 * Math.log10(rms)).toBeCloseTo(AMBIENCE_DBFS, 0);
    // No click at the seam: the jump from the last sample to the first is like any other step.
    const steps = prepared.slice(1).map((v, i) => Math.abs(v - prepared[i]!)).sort((a, b) => a - b);
    expect(Math.abs(prepared[0]! - prepared[prepared.length - 1]!)).toBeLessThanOrEqual(steps[Math.floor(steps.length * 0.999)]!);
  });
});
