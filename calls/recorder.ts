// Call recording: the caller's and the agent's audio on one 16 kHz timeline, written as mono (mixed) and dual WAV.
import { Resampler, qualityFor } from '../engine/audio/resample.js';
import { writePcm16WavHeader } from '../engine/audio/wav.js';
import { floatToInt16 } from '../engine/audio/pcm.js';

const RATE = 16000;
/** Samples encoded between two turns of the event loop: a long call's recording at once would hold it for 100 ms. */
const SLICE = RATE / 2;
/** Longest recording kept (an hour); audio beyond it is not recorded. */
const MAX_SAMPLES = 3600 * RATE;

/**
 * A growable mono track addressed by sample index; writes past the end leave silence in between. It starts at one
 * second and doubles: ten seconds up front (two 640 KB arrays a call, zeroed) took 1.7 ms of the main thread per
 * call start, and their garbage more, at 50 answered calls a second (bench:outbound).
 */
class Track {
  data = new Float32Array(RATE);
  length = 0;

  write(at: number, x: Float32Array): void {
    const end = Math.min(MAX_SAMPLES, at + x.length);
    if (end <= at) return;
    this.reserve(end);
    this.data.set(x.subarray(0, end - at), at);
    this.length = Math.max(this.length, end);
  }

  /** Silence up to `to` (the track goes on from there). */
  pad(to: number): void {
    const end = Math.min(MAX_SAMPLES, to);
    if (end <= this.length) return;
    this.reserve(end);
    this.length = end;
  }

  private reserve(end: number): void {
    if (end <= this.data.length) return;
    const grown = new Float32Array(Math.min(MAX_SAMPLES, Math.max(end, this.data.length * 2)));
    grown.set(this.data.subarray(0, this.length));
    this.data = grown;
  }
}

/**
 * Audio beyond the agent's turns (a transfer: the hold sound, handoffs, then the caller bridged to the target), placed
 * on the wall clock from the moment it was opened: the session takes no caller audio meanwhile.
 */
export interface RecordingExtension {
  /** What the caller said (16-bit at the extension's rate). */
  caller(pcm: Int16Array): void;
  /** What the caller heard besides the agent's turns. */
  heard(pcm: Int16Array): void;
  /** Done: the conversation's own audio (a transfer refused) goes on after the time the extension covered. */
  end(): void;
}

export class CallRecorder {
  private readonly caller = new Track();
  private readonly agent = new Track();
  private readonly out: Resampler;
  /** Where the agent's audio continues when frames follow each other without a gap. */
  private agentAt = 0;
  private lastOutput = 0;

  constructor(outputRate: number) {
    this.out = new Resampler(outputRate, RATE, { quality: qualityFor(outputRate) });
  }

  /** Caller audio at 16 kHz, in arrival order (the caller streams continuously, so arrival order is time). */
  input(samples16k: Float32Array): void {
    this.caller.write(this.caller.length, samples16k);
  }

  /** Caller samples recorded so far (16 kHz): the caller's "now" on the recording's timeline. */
  get callerSamples(): number {
    return this.caller.length;
  }

  /** Silences the caller's track over [from, to) (16 kHz samples): a turn that carried redacted data. */
  silenceCaller(from: number, to: number): void {
    const end = Math.min(to, this.caller.length);
    if (end > from) this.caller.data.fill(0, Math.max(0, from), end);
  }

  /** Agent audio as sent: placed where the caller's timeline is now, or right after the previous frame. */
  output(samples: Float32Array): void {
    const x = this.out.push(samples);
    const now = performance.now();
    // A new stretch of agent speech (a pause of over 100 ms since the last frame) starts at the caller's "now".
    if (now - this.lastOutput > 100) this.agentAt = Math.max(this.agentAt, this.caller.length);
    this.lastOutput = now;
    this.agent.write(this.agentAt, x);
    this.agentAt += x.length;
  }

  /** Opens a RecordingExtension for audio at `rate` Hz. */
  extend(rate: number): RecordingExtension {
    const origin = { at: Math.max(this.caller.length, this.agentAt), t: performance.now() };
    const wall = () => origin.at + Math.round(((performance.now() - origin.t) * RATE) / 1000);
    const stream = (track: Track) => {
      const resampler = new Resampler(rate, RATE, { quality: qualityFor(rate) });
      let at = 0;
      let last = -Infinity;
      return (pcm: Int16Array) => {
        const x = resampler.push(Float32Array.from(pcm, (v) => v / 32768));
        const now = performance.now();
        // As for the agent's audio: a new stretch starts at the wall clock's "now", a continuing one right after.
        if (now - last > 100) at = Math.max(at, wall());
        last = now;
        track.write(at, x);
        at += x.length;
      };
    };
    return {
      caller: stream(this.caller),
      heard: stream(this.agent),
      end: () => {
        const to = Math.max(wall(), this.agent.length);
        this.caller.pad(to);
        this.agentAt = Math.max(this.agentAt, to);
      },
    };
  }

  get hasAudio(): boolean {
    return this.caller.length > 0 || this.agent.length > 0;
  }

  /**
   * The two WAV files: mono (caller + agent mixed) and dual (left caller, right agent), encoded half a second at a time
   * with the event loop free in between (it sends every other call's RTP).
   */
  async finish(): Promise<{ mono: Buffer; dual: Buffer; seconds: number }> {
    const n = Math.max(this.caller.length, this.agent.length);
    const mono = Buffer.allocUnsafe(44 + n * 2);
    const dual = Buffer.allocUnsafe(44 + n * 4);
    writePcm16WavHeader(mono, 1, RATE);
    writePcm16WavHeader(dual, 2, RATE);
    const { data: c, length: cn } = this.caller;
    const { data: a, length: an } = this.agent;
    for (let from = 0; from < n; from += SLICE) {
      if (from > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      for (let i = from, end = Math.min(n, from + SLICE); i < end; i++) {
        const x = i < cn ? (c[i] as number) : 0;
        const y = i < an ? (a[i] as number) : 0;
        mono.writeInt16LE(floatToInt16(Math.max(-1, Math.min(1, x + y))), 44 + i * 2);
        dual.writeInt16LE(floatToInt16(x), 44 + i * 4);
        dual.writeInt16LE(floatToInt16(y), 46 + i * 4);
      }
    }
    return { mono, dual, seconds: n / RATE };
  }
}
