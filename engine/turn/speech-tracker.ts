// User speech from VAD probabilities (one per 32 ms window): onset, pause (silence begins), resumption; pure, no timers.
//
// States: quiet -> candidate (a window >= startThreshold) -> speech once `minSpeechWindows` windows in a row stayed
// >= endThreshold (a candidate falling below endThreshold first is dropped) -> pause at the first window below
// endThreshold -> speech again at a window >= startThreshold. Windows between the thresholds neither start nor end
// anything (hysteresis). Windows quieter than `minVolume` (RMS, full scale 1) count as silence.

export type SpeechSignal =
  /** Speech confirmed; `onset` is the window where it began. */
  | { type: 'start'; onset: number }
  /** The first silent window after speech. */
  | { type: 'pause'; window: number }
  /** Speech again after a pause. */
  | { type: 'resume'; window: number };

export interface SpeechTrackerOptions {
  startThreshold: number;
  endThreshold: number;
  minSpeechWindows: number;
  minVolume: number;
}

export type SpeechState = 'quiet' | 'candidate' | 'speech' | 'pause';

export class SpeechTracker {
  state: SpeechState = 'quiet';
  /** Window where the current speech began (valid in candidate, speech and pause). */
  onset = -1;
  /** First silent window of the current pause (valid in pause). */
  pauseStart = -1;
  private run = 0;

  constructor(readonly opts: SpeechTrackerOptions) {}

  /** Feeds window `w` with its probability and RMS; returns the signal it completes, if any. */
  push(w: number, prob: number, rms: number): SpeechSignal | null {
    const p = rms < this.opts.minVolume ? 0 : prob;
    const { startThreshold, endThreshold, minSpeechWindows } = this.opts;
    switch (this.state) {
      case 'quiet':
        if (p >= startThreshold) {
          this.state = 'candidate';
          this.onset = w;
          this.run = 1;
          if (this.run >= minSpeechWindows) {
            this.state = 'speech';
            return { type: 'start', onset: w };
          }
        }
        return null;
      case 'candidate':
        if (p < endThreshold) {
          this.state = 'quiet';
          this.onset = -1;
          return null;
        }
        this.run++;
        if (this.run >= minSpeechWindows) {
          this.state = 'speech';
          return { type: 'start', onset: this.onset };
        }
        return null;
      case 'speech':
        if (p < endThreshold) {
          this.state = 'pause';
          this.pauseStart = w;
          return { type: 'pause', window: w };
        }
        return null;
      case 'pause':
        if (p >= startThreshold) {
          this.state = 'speech';
          this.pauseStart = -1;
          return { type: 'resume', window: w };
        }
        return null;
    }
  }

  /** Takes speech still going on as paused from window `w` (a turn cut at its length limit). */
  pauseAt(w: number): void {
    this.state = 'pause';
    this.pauseStart = w;
  }

  /** Forgets the current speech (the turn was committed or discarded). */
  reset(): void {
    this.state = 'quiet';
    this.onset = -1;
    this.pauseStart = -1;
    this.run = 0;
  }
}

/** Root mean square of a window. */
export function rms(x: Float32Array): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += (x[i] as number) * (x[i] as number);
  return x.length ? Math.sqrt(s / x.length) : 0;
}

/** Words a listener says to show attention without taking the turn. */
const BACKCHANNELS = new Set([
  'uh-huh', 'uh huh', 'uhhuh', 'mm-hmm', 'mm hmm', 'mhm', 'mm', 'hmm', 'hm', 'yeah', 'yep', 'yup', 'okay', 'ok', 'right',
  'sure', 'alright', 'all right', 'i see', 'got it', 'uh', 'um', 'ah', 'oh',
]);

/** The words of a transcript without Whisper's non-speech annotations ("[coughs]", "(breathing)", "*sigh*", "<noise>"). */
export function spokenText(text: string): string {
  return text.replace(/\[[^\]]*\]|\([^)]*\)|\*[^*]*\*|<[^>]*>|♪/g, ' ').replace(/\s+/g, ' ').trim();
}

/** True when the recognised text is only backchannel words ("uh-huh", "yeah", "okay", "right", ...). */
export function isBackchannel(text: string): boolean {
  const norm = spokenText(text).toLowerCase().replace(/[^a-z\s-]/g, ' ').replace(/\s+/g, ' ').trim();
  if (!norm) return false;
  if (BACKCHANNELS.has(norm)) return true;
  const words = norm.split(' ');
  if (words.length > 4) return false;
  // "yeah, okay", "right right", "uh-huh yeah"
  let i = 0;
  while (i < words.length) {
    const two = i + 1 < words.length ? `${words[i]} ${words[i + 1]}` : '';
    if (two && BACKCHANNELS.has(two)) i += 2;
    else if (BACKCHANNELS.has(words[i] as string)) i += 1;
    else return false;
  }
  return true;
}
