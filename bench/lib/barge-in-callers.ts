// The barge-in bench's two callers, one trial each: a web caller on the agent WebSocket (16 kHz, 20 ms frames at
// real-time pace, the agent's audio through a modelled playout clock) and a phone caller over SIP/RTP (PCMU, the
// server's voiced packets timed at arrival). Each waits for the agent's first audio, plays its sound over the opening
// after the planned delay, watches, hangs up, and returns the trial's trace (bench/lib/barge-in-analysis.ts).
import { performance } from 'node:perf_hooks';
import { decodeMuLaw, encodeLinear16, encodeMuLaw } from '../../engine/audio/codecs.js';
import { AgentCaller, connectUrl } from '../../test/support/agent-client.js';
import type { TestServer } from '../../test/support/server.js';
import { PAUSE_GAP_MS, SILENT_FOR_MS, STILL_TALKING_MS, type Trace } from './barge-in-analysis.js';
import { FRAME_MS, PhoneCaller } from './phone-caller.js';
import { closeCaller } from './voice-agent.js';

export interface TrialPlan {
  /** `barge`: a sentence that should stop the agent; `false`: a sound that should not; `control`: no sound at all. */
  kind: 'barge' | 'false' | 'control';
  /** The caller's sound at the side's rate (sample 0 is its first speech sample); empty for a control call. */
  sound: Float32Array;
  /** The sound starts this long after the agent's first audio. */
  delayMs: number;
}

export const WEB_RATE = 16000;
export const PHONE_RATE = 8000;
/** A control call watches this long after the agent's first audio: longer than any trial's window. */
const CONTROL_MS = 11_000;
/** A barge-in call goes on this long after the caller's sentence. */
const AFTER_CLIP_MS = 2000;
/** A false trial watches at most this long after its sound, for a silence that began late to reach SILENT_FOR_MS. */
const FALSE_CAP_MS = 7000;
/** Extra watching past a deadline, so that a packet or chunk due at the deadline is seen. */
const MARGIN_MS = 200;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function emptyTrace(): Trace {
  return { firstAudioAt: NaN, onset: NaN, soundEnd: NaN, endAt: NaN, opening: [], interruptionAt: null, otherAudioAt: null, openingCompleted: false };
}

/** Waits until `ready()` is true, polling every 5 ms; throws after timeoutMs. */
async function until(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!ready()) {
    if (performance.now() > deadline) throw new Error(`${what}: timed out after ${timeoutMs} ms`);
    await sleep(5);
  }
}

/**
 * Watches until the trial is decided; returns when watching ended. Control: CONTROL_MS after the first audio. Barge-in:
 * STILL_TALKING_MS after onset and AFTER_CLIP_MS after the sentence, whichever is later. False: from SILENT_FOR_MS after
 * the sound, until the opening plays (not interrupted) or has been silent SILENT_FOR_MS, at most FALSE_CAP_MS after it.
 */
async function watch(plan: TrialPlan, t: Trace, lastAudioEnd: () => number, decided: () => boolean): Promise<number> {
  if (plan.kind === 'control') {
    await sleep(t.firstAudioAt + CONTROL_MS - performance.now());
    return performance.now();
  }
  await until(() => Number.isFinite(t.onset), plan.delayMs + 5000, 'the caller\'s sound was not sent');
  if (plan.kind === 'barge') {
    await sleep(Math.max(t.onset + STILL_TALKING_MS, t.soundEnd + AFTER_CLIP_MS) + MARGIN_MS - performance.now());
    return performance.now();
  }
  await sleep(t.soundEnd + SILENT_FOR_MS + MARGIN_MS - performance.now());
  for (;;) {
    const now = performance.now();
    const last = lastAudioEnd();
    if (decided() || last >= now - PAUSE_GAP_MS || now - last >= SILENT_FOR_MS + MARGIN_MS || now >= t.soundEnd + FALSE_CAP_MS) return now;
    await sleep(20);
  }
}

/** One web call: the agent WebSocket at 16 kHz. */
export async function webTrial(server: TestServer, agentId: string, plan: TrialPlan): Promise<Trace> {
  const t = emptyTrace();
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(WEB_RATE) }), WEB_RATE, {}, FRAME_MS);
  c.ws.on('error', () => undefined);
  const frameSamples = (WEB_RATE * FRAME_MS) / 1000;
  let sound: Float32Array | null = null;
  let soundAt = Infinity;
  let pos = 0;
  let mic: NodeJS.Timeout | null = null;
  // The opening's playout, kept up to date from the frames as they come.
  let seen = 0;
  let clock = 0;
  let openingOver = false;
  const follow = () => {
    for (; seen < c.frames.length; seen++) {
      const f = c.frames[seen]!;
      if (f.type === 'output_audio.delta') {
        const start = Math.max(f.at, clock);
        clock = start + (Buffer.byteLength(f.audio as string, 'base64') / 2 / WEB_RATE) * 1000;
        if (!openingOver) t.opening.push([start, clock]);
        else t.otherAudioAt ??= f.at;
      } else if (!openingOver && (f.type === 'interruption' || f.type === 'agent_stop_talking')) {
        openingOver = true;
        if (f.type === 'interruption') t.interruptionAt = f.at;
      } else if (f.type === 'interruption' && t.interruptionAt === null) t.interruptionAt = f.at;
    }
    return t.opening.at(-1)?.[1] ?? 0;
  };
  try {
    await c.opened;
    t.callId = (await c.nextFrame((f) => f.type === 'session.created', 0, 15_000, 'session.created')).call_id as string;
    // The microphone: one 20 ms frame per slot, caught up after timer drift; the sound begins at the start of the
    // first frame sent at or after soundAt, so its onset is that frame's send time.
    const started = performance.now();
    let sent = 0;
    const tick = () => {
      const due = Math.floor((performance.now() - started) / FRAME_MS) + 1;
      for (; sent < due && c.closeCode === null; sent++) {
        const frame = new Float32Array(frameSamples);
        const now = performance.now();
        const first = sound !== null && pos === 0 && now >= soundAt;
        if (sound && (pos > 0 || first)) {
          frame.set(sound.subarray(pos, pos + frameSamples));
          pos += frameSamples;
        }
        c.send({ type: 'input_audio_buffer.append', audio: encodeLinear16(frame).toString('base64') });
        if (first) {
          t.onset = performance.now();
          t.soundEnd = t.onset + ((sound as Float32Array).length / WEB_RATE) * 1000;
        }
        if (sound && pos >= sound.length) sound = null;
      }
      mic = setTimeout(tick, 5);
    };
    tick();
    t.firstAudioAt = (await c.nextFrame((f) => f.type === 'output_audio.delta', 0, 15_000, 'opening audio')).at;
    if (plan.sound.length) {
      sound = plan.sound;
      soundAt = t.firstAudioAt + plan.delayMs;
    }
    t.endAt = await watch(plan, t, follow, () => (follow(), t.interruptionAt !== null));
    follow();
    t.openingCompleted = openingOver && t.interruptionAt === null;
  } catch (err) {
    t.error = err instanceof Error ? err.message : String(err);
  } finally {
    if (mic) clearTimeout(mic);
    await closeCaller(c);
  }
  return t;
}

/** What the opening sounds like on the phone leg, from a control call: its voiced payloads and their samples. */
export interface PhoneReference {
  payloads: Set<string>;
  samples: Float32Array;
}

/** RMS of mu-law bytes in dBFS. */
function levelOf(payload: Buffer): number {
  const x = decodeMuLaw(payload);
  let e = 0;
  for (const v of x) e += v * v;
  return 10 * Math.log10(e / Math.max(1, x.length) + 1e-12);
}

/**
 * Whether the voiced packets after a gap are the opening going on: the first (up to) 8 of them above -45 dBFS (near
 * silence matches anything) are compared with the opening: an exact payload match, or their samples found in it
 * (normalised correlation > 0.99 at some lag: the same samples framed differently after a pause; speech that is not
 * the same samples stays well below, while 0.9 over 80 ms did find a reply somewhere in 11 s of opening).
 */
function isOpening(ref: PhoneReference | null, following: Buffer[]): boolean {
  if (!ref) return true;
  const run = following.filter((p) => levelOf(p) > -45).slice(0, 8);
  if (!run.length) return false;
  if (run.some((p) => ref.payloads.has(p.toString('hex')))) return true;
  const x = decodeMuLaw(Buffer.concat(run));
  const r = ref.samples;
  let ex = 0;
  for (const v of x) ex += v * v;
  for (let lag = 0; lag + x.length <= r.length; lag++) {
    let dot = 0;
    let er = 0;
    for (let i = 0; i < x.length; i++) {
      dot += x[i]! * r[lag + i]!;
      er += r[lag + i]! * r[lag + i]!;
    }
    if (er && dot / Math.sqrt(ex * er) > 0.99) return true;
  }
  return false;
}

/** One phone call to `number` over SIP/RTP (PCMU). `ref` (null for the control call) tells the opening from a reply. */
export async function phoneTrial(server: TestServer, number: string, plan: TrialPlan, ref: PhoneReference | null): Promise<Trace & { voiced: Buffer[] }> {
  const t = emptyTrace();
  const caller = new PhoneCaller();
  const packets: { at: number; payload: Buffer }[] = [];
  let armed = false;
  caller.onReceive = (at, payload, voiced) => {
    if (voiced) packets.push({ at, payload: Buffer.from(payload) });
  };
  caller.onSend = (at, speech) => {
    if (speech && armed && !Number.isFinite(t.onset)) {
      t.onset = at;
      t.soundEnd = at + (plan.sound.length / PHONE_RATE) * 1000;
    }
  };
  const lastAudioEnd = () => (packets.at(-1)?.at ?? 0) + FRAME_MS;
  try {
    await caller.dial(server.sipPort, number);
    await until(() => packets.length > 0, 15_000, 'opening audio');
    t.firstAudioAt = packets[0]!.at;
    if (plan.sound.length) {
      const ulaw = encodeMuLaw(plan.sound);
      await sleep(t.firstAudioAt + plan.delayMs - performance.now());
      armed = true;
      void caller.say(ulaw);
    }
    t.endAt = await watch(plan, t, lastAudioEnd, () => false);
  } catch (err) {
    t.error = err instanceof Error ? err.message : String(err);
  } finally {
    await caller.hangUp();
  }
  // The opening: voiced packets from the first on, across gaps under PAUSE_GAP_MS; after a longer gap, the packets that
  // follow are the opening resumed if they are found in it, else something else (a reply) and the opening has ended.
  for (let i = 0; i < packets.length; i++) {
    const p = packets[i]!;
    const prev = packets[i - 1];
    if (prev && p.at - prev.at - FRAME_MS >= PAUSE_GAP_MS && !isOpening(ref, packets.slice(i, i + 25).map((q) => q.payload))) {
      t.otherAudioAt = p.at;
      break;
    }
    t.opening.push([p.at, p.at + FRAME_MS]);
  }
  return { ...t, voiced: packets.slice(0, t.opening.length).map((p) => p.payload) };
}
