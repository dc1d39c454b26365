// The preferred English voices by gender: RHVoice's when it is installed, else Flite's; American English either way. The
// voice table (voice-table.ts) ranks these first among equally near voices, which makes them the server's default voice
// and what a hosted id such as `nyah` speaks with in English.

export const FALLBACK_VOICES = {
  /** RHVoice (Debian rhvoice-english): clearer than Flite; bdl rather than alan (Scottish) for the same accent as slt. */
  rhvoice: { female: 'rhvoice-slt', male: 'rhvoice-bdl' },
  /** Flite, always present. */
  flite: { female: 'slt', male: 'rms' },
} as const;

/** The voice for `gender` (`male`; anything else is female, the agents' default) among the voices `has` knows. */
export function fallbackVoice(gender: string | undefined, has: (voiceId: string) => boolean): string {
  const key = gender === 'male' ? 'male' : 'female';
  const rhvoice = FALLBACK_VOICES.rhvoice[key];
  return has(rhvoice) ? rhvoice : FALLBACK_VOICES.flite[key];
}
