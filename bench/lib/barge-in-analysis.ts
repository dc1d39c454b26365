// Reading one barge-in trial: when the agent's opening stopped at the caller after the caller spoke, and whether a
// false trial's sound interrupted the agent or only paused it. Pure functions over the trial's trace (times in ms,
// performance.now() of this process).

/** A gap in the opening's audio at the caller of at least this much is a pause. */
export const PAUSE_GAP_MS = 100;
/** A barge-in trial is missed when the agent still talks this long after the caller's onset. */
export const STILL_TALKING_MS = 3000;
/** A false trial interrupted the agent when its opening stays silent this long (and does not come back). */
export const SILENT_FOR_MS = 3000;
/** Pauses counted for a false trial start between its sound's onset and this long after the sound ends. */
const PAUSE_WINDOW_AFTER_MS = 2000;

export interface Trace {
  /** The agent's first audio at the caller. */
  firstAudioAt: number;
  /** The caller's sound: when its first sample was sent, and its end at real-time pace (NaN for a control call). */
  onset: number;
  soundEnd: number;
  /** When watching ended (the call was hung up just after). */
  endAt: number;
  /** The opening's audio at the caller, in order: [start, end] of each chunk played (web) or voiced packet (phone). */
  opening: [number, number][];
  /** The server said the opening was interrupted (web: an `interruption` frame), and when. */
  interruptionAt: number | null;
  /** Agent audio that was not the opening (a reply: the agent took the sound as a turn) first came then. */
  otherAudioAt: number | null;
  /** The opening ended whole (web: agent_stop_talking without an interruption) before watching ended. */
  openingCompleted: boolean;
  /** The call's id, where the caller learns it (web: session.created). */
  callId?: string;
  error?: string;
}

export interface Gap {
  start: number;
  end: number;
}

/** Gaps of at least PAUSE_GAP_MS between consecutive stretches of the opening. */
export function gaps(opening: readonly [number, number][]): Gap[] {
  const out: Gap[] = [];
  for (let i = 1; i < opening.length; i++) {
    const start = opening[i - 1]![1];
    const end = opening[i]![0];
    if (end - start >= PAUSE_GAP_MS) out.push({ start, end });
  }
  return out;
}

export interface BargeOutcome {
  /** Onset -> the opening's audio stopped at the caller for good; null when missed. */
  stopMs: number | null;
  missed: boolean;
  /** Onset -> the opening's audio first stopped (a gap of PAUSE_GAP_MS or its end), even if the agent resumed after. */
  firstStopMs: number | null;
  /** Onset -> the server's interruption event (web). */
  interruptionMs: number | null;
  why?: string;
}

/** A true barge-in: the stop is the end of the opening's last audio; still talking STILL_TALKING_MS after onset is a miss. */
export function bargeOutcome(t: Trace): BargeOutcome {
  const interruptionMs = t.interruptionAt === null ? null : t.interruptionAt - t.onset;
  const firstGap = gaps(t.opening).find((g) => g.start >= t.onset);
  const firstStop = firstGap?.start ?? t.opening.at(-1)?.[1];
  const base = { firstStopMs: firstStop === undefined || firstStop < t.onset ? null : firstStop - t.onset, interruptionMs };
  if (t.error) return { ...base, stopMs: null, missed: true, why: t.error };
  const last = t.opening.at(-1);
  if (!last || !Number.isFinite(t.onset)) return { ...base, stopMs: null, missed: true, why: 'no opening audio or no onset' };
  const stop = last[1] - t.onset;
  if (stop < 0) return { ...base, stopMs: null, missed: true, why: 'the opening ended before the caller spoke' };
  if (stop > STILL_TALKING_MS) return { ...base, stopMs: null, missed: true, why: `still talking ${STILL_TALKING_MS} ms after onset` };
  return { ...base, stopMs: stop, missed: false };
}

export interface FalseOutcome {
  interrupted: boolean;
  /** Only paused: a gap of PAUSE_GAP_MS or more after the sound, then the opening went on. */
  paused: boolean;
  /** Length of the longest such gap (ms), when there was one. */
  pauseMs: number | null;
  why?: string;
}

/**
 * A sound that is not a turn. Interrupted: the server's interruption event after the sound's onset, or a reply (agent
 * audio that is not the opening), or the opening silent SILENT_FOR_MS up to the end of watching while unfinished.
 * Paused (when not interrupted): a gap of PAUSE_GAP_MS or more in the opening, starting between the sound's onset and
 * PAUSE_WINDOW_AFTER_MS after its end, after which the opening resumed.
 */
export function falseOutcome(t: Trace): FalseOutcome {
  if (t.error) return { interrupted: false, paused: false, pauseMs: null, why: t.error };
  const pauses = gaps(t.opening).filter((g) => g.start >= t.onset && g.start <= t.soundEnd + PAUSE_WINDOW_AFTER_MS);
  const pauseMs = pauses.length ? Math.max(...pauses.map((g) => g.end - g.start)) : null;
  const last = t.opening.at(-1);
  let why: string | undefined;
  if (t.interruptionAt !== null && t.interruptionAt >= t.onset) why = 'interruption event';
  else if (t.otherAudioAt !== null && t.otherAudioAt >= t.onset) why = 'the agent replied';
  else if (!t.openingCompleted && last && last[1] >= t.onset && t.endAt - last[1] >= SILENT_FOR_MS) why = `opening silent ${SILENT_FOR_MS} ms`;
  if (why) return { interrupted: true, paused: false, pauseMs, why };
  return { interrupted: false, paused: pauseMs !== null, pauseMs };
}
