// Seeded randomness for everything made here that must come out the same every time (generated ambiences, test and
// bench corpora, the SIP fuzzer): mulberry32, a 32-bit generator of uniform numbers in [0, 1).

export type Rng = () => number;

/** A seeded uniform generator in [0, 1) (mulberry32). */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
