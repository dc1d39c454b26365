// Barge-in benchmark (bench/barge-in.ts): how fast the agent stops talking when a caller talks over it, and how often
// sounds that are not a turn (backchannels, coughs, breaths, noises) interrupt or pause it. Measured on the server as
// it is, over the agent WebSocket and over a phone call, one call at a time (latency, not load).
//
// The agent is a workflow agent with a 17-18 s opening line, default settings otherwise (allowInterruptions, the default
// voiceDetectionConfig), idle timeouts out of the way. Every trial is a new call: the caller plays its sound over the
// opening at a seeded random moment 1.5-4 s after the agent's first audio (the same delays and sounds on both sides).
// - Barge-in trials: interrupting sentences synthesised with espeak-ng and Flite (bench/lib/caller-clips.ts). stopMs is
//   the caller's speech onset (the send time of the frame or RTP packet carrying its first speech sample) -> the end of
//   the opening's last audio at the caller: on the web, the playout end of the last chunk in a client that plays each
//   chunk in real time from when it arrives or the previous one ends, whichever is later; on the phone, the arrival of
//   the last voiced RTP packet of the opening + 20 ms. Still talking 3 s after onset (or an error) is a miss.
// - False trials (bench/lib/false-barge-sounds.ts, caller-clips.ts for backchannels): interrupted = the server's
//   interruption event (web), a reply, or the opening silent 3 s after the sound while unfinished; paused (only) = a gap
//   of >= 100 ms in the opening that then resumed. Details in bench/lib/barge-in-analysis.ts.
// - One control call per side first (no sound): the phone leg's reference for telling the opening from a reply, and the
//   gaps the opening has with nobody talking over it (expected 0).
import { performance } from 'node:perf_hooks';
import { decodeMuLaw, encodeMuLaw } from '../../engine/audio/codecs.js';
import { resample } from '../../engine/audio/resample.js';
import { SileroVad, VAD_SAMPLE_RATE } from '../../engine/models/silero.js';
import { endedCall } from '../../test/support/agent-client.js';
import type { TestServer } from '../../test/support/server.js';
import { bargeOutcome, falseOutcome, gaps, type Trace } from './barge-in-analysis.js';
import { PHONE_RATE, phoneTrial, WEB_RATE, webTrial, type PhoneReference, type TrialPlan } from './barge-in-callers.js';
import { BACKCHANNELS, CALLER_VOICES, ClipMaker, INTERRUPTIONS } from './caller-clips.js';
import { breath, cough, mulberry32, noise, NOISE_VARIANTS, seedOf } from './false-barge-sounds.js';
import { quantile } from './report.js';
import { GRAPH } from './voice-agent.js';

export type Side = 'web' | 'phone';

export interface BargeInOptions {
  /** Barge-in trials per side (default 20). */
  trials?: number;
  /** False barge-in trials per sound kind per side (default 5). */
  falseTrials?: number;
  sides?: Side[];
  /** Seeds the delays and the made sounds (default 1). */
  seed?: number;
  /** Progress lines (default: stderr). */
  log?: (msg: string) => void;
}

export interface BargeInResult {
  web?: SideResult;
  phone?: SideResult;
}

export interface SideResult {
  /** ms from the caller's speech onset to the agent's audio stopping at the caller; one per trial that was not missed */
  stopMs: number[];
  p50: number;
  p95: number;
  /** trials where the agent never stopped (error, or still talking 3 s after onset) */
  missed: number;
  /** per kind (backchannel, cough, breath, noise): trials, interrupted (turn ended / stopped for good), only paused */
  falses: Record<string, { trials: number; interrupted: number; paused: number }>;
  /** interrupted / trials over all kinds */
  falseRate: number;
  /** Every trial, in the order run. */
  trials: TrialRecord[];
  /** The control call (no sound): gaps of >= 100 ms in its opening's first 11 s (expected 0), and its error if any. */
  control: { gaps: number; openingMs: number; error?: string };
  /** False trials that failed (not counted in `falses`). */
  errors: string[];
  durationS: number;
}

export interface TrialRecord {
  kind: 'barge' | FalseKind;
  label: string;
  delayMs: number;
  soundMs: number;
  /** Barge-in: onset -> stop (null when missed), the first stop even if the agent resumed, the interruption event (web). */
  stopMs?: number | null;
  firstStopMs?: number | null;
  interruptionMs?: number | null;
  /** False trial: interrupted, only paused (and the longest gap), or neither. */
  interrupted?: boolean;
  paused?: boolean;
  pauseMs?: number | null;
  /** The sound's highest speech probability from Silero VAD (run here, at 16 kHz, 300 ms of silence either side). */
  vadPeak?: number;
  note?: string;
}

export const FALSE_KINDS = ['backchannel', 'cough', 'breath', 'noise'] as const;
export type FalseKind = (typeof FALSE_KINDS)[number];

/** The agent's opening: about 17.7 s with the default voice (slt), so every trial talks over it. */
export const LONG_OPENING =
  'Hello, and thank you for calling the travel desk. I can help you book a new trip, change the dates of a booking you already have, ' +
  'add a checked bag or a seat upgrade, or explain our cancellation rules and the refunds that apply to them. Please have your booking reference ready.';

const A = '/atoms/v1';
const r1 = (x: number) => Math.round(x * 10) / 10;

interface Planned extends TrialPlan {
  record: Pick<TrialRecord, 'kind' | 'label' | 'delayMs' | 'soundMs' | 'vadPeak'>;
}

export async function runBargeIn(server: TestServer, opts: BargeInOptions = {}): Promise<BargeInResult> {
  const trials = opts.trials ?? 20;
  const falseTrials = opts.falseTrials ?? 5;
  const sides = opts.sides ?? ['web', 'phone'];
  const seed = opts.seed ?? 1;
  const log = opts.log ?? ((m: string) => process.stderr.write(`${m}\n`));
  const agentId = await createAgent(server);
  const number = sides.includes('phone') ? await answerNumber(server, agentId) : '';
  const out: BargeInResult = {};
  for (const side of sides) {
    const started = performance.now();
    const rate = side === 'web' ? WEB_RATE : PHONE_RATE;
    log(`${side}: synthesising the callers' sounds at ${rate} Hz`);
    const plans = await planTrials(new ClipMaker(server, rate), trials, falseTrials, seed);
    let ref: PhoneReference | null = null;
    const run = async (plan: TrialPlan): Promise<Trace> => {
      if (side === 'web') return webTrial(server, agentId, plan);
      const t = await phoneTrial(server, number, plan, ref);
      if (plan.kind === 'control' && !t.error) {
        ref = { payloads: new Set(t.voiced.map((p) => p.toString('hex'))), samples: decodeMuLaw(Buffer.concat(t.voiced)) };
      }
      return t;
    };
    const control = await run({ kind: 'control', sound: new Float32Array(0), delayMs: 0 });
    const result: SideResult = {
      stopMs: [], p50: NaN, p95: NaN, missed: 0, falses: {}, falseRate: NaN, trials: [], errors: [], durationS: 0,
      control: { gaps: gaps(control.opening).length, openingMs: r1(control.opening.reduce((a, [s, e]) => a + e - s, 0)), ...(control.error ? { error: control.error } : {}) },
    };
    log(`${side}: control call, no sound: ${result.control.gaps} gaps of >= 100 ms in ${(result.control.openingMs / 1000).toFixed(1)} s of opening${control.error ? ` (error: ${control.error})` : ''}`);
    if (control.error) throw new Error(`${side} control call failed: ${control.error}`);
    for (const kind of FALSE_KINDS) result.falses[kind] = { trials: 0, interrupted: 0, paused: 0 };
    for (const [i, plan] of plans.entries()) {
      const t = await run(plan);
      const rec = await score(server, side, plan, t);
      if (rec.kind === 'barge') {
        if (rec.stopMs === null || rec.stopMs === undefined) result.missed++;
        else result.stopMs.push(rec.stopMs);
      } else if (t.error) result.errors.push(`${rec.kind} ${rec.label}: ${t.error}`);
      else {
        const f = result.falses[rec.kind]!;
        f.trials++;
        if (rec.interrupted) f.interrupted++;
        else if (rec.paused) f.paused++;
      }
      result.trials.push(rec);
      log(`${side} ${String(i + 1).padStart(2)}/${plans.length} ${describe(rec)}`);
    }
    const all = Object.values(result.falses);
    const falseTotal = all.reduce((a, f) => a + f.trials, 0);
    Object.assign(result, {
      p50: quantile(result.stopMs, 0.5),
      p95: quantile(result.stopMs, 0.95),
      falseRate: falseTotal ? all.reduce((a, f) => a + f.interrupted, 0) / falseTotal : NaN,
      durationS: Math.round((performance.now() - started) / 1000),
    });
    out[side] = result;
  }
  return out;
}

const nullableR1 = (x: number | null) => (x === null ? null : r1(x));

/** One trial's record from its trace (bench/lib/barge-in-analysis.ts); a false trial that interrupted gets the server's view. */
async function score(server: TestServer, side: Side, plan: Planned, t: Trace): Promise<TrialRecord> {
  const rec: TrialRecord = { ...plan.record };
  if (plan.kind === 'barge') {
    const o = bargeOutcome(t);
    Object.assign(rec, { stopMs: nullableR1(o.stopMs), firstStopMs: nullableR1(o.firstStopMs), interruptionMs: nullableR1(o.interruptionMs) });
    if (o.why) rec.note = o.why;
    return rec;
  }
  const o = falseOutcome(t);
  if (o.interrupted) {
    // What the server made of it: the caller's turns in its record of the call.
    const heard = await userTurns(server, t);
    const replied = o.why === 'the agent replied';
    o.why = `${o.why ?? ''}; the server's record: ${heard === null ? 'not found' : heard.length ? `user turn ${heard.map((h) => JSON.stringify(h)).join(', ')}` : 'no user turn'}`;
    if (side === 'phone' && replied && heard?.length === 0 && t.otherAudioAt !== null) {
      // The audio after the gap was not matched to the opening, but the server took no turn: the opening resumed.
      Object.assign(o, { interrupted: false, paused: true, pauseMs: t.otherAudioAt - (t.opening.at(-1)?.[1] ?? t.otherAudioAt) });
      o.why += ' (counted as paused)';
    }
  }
  Object.assign(rec, { interrupted: o.interrupted, paused: o.paused, pauseMs: nullableR1(o.pauseMs) });
  if (o.why) rec.note = o.why;
  return rec;
}

function describe(r: TrialRecord): string {
  const head = `${r.kind.padEnd(11)} ${JSON.stringify(r.label)} at +${(r.delayMs / 1000).toFixed(2)} s (${Math.round(r.soundMs)} ms)`;
  const note = r.note ? ` [${r.note}]` : '';
  if (r.kind === 'barge') return `${head}: ${r.stopMs === null ? 'MISSED' : `stop ${r.stopMs} ms`} (first stop ${r.firstStopMs ?? '-'}, interruption event ${r.interruptionMs ?? '-'})${note}`;
  return `${head}: ${r.interrupted ? 'INTERRUPTED' : r.paused ? `paused ${r.pauseMs} ms` : 'no effect'}${note}`;
}

/** The side's trials in order: the barge-in sentences, then the false sounds with the kinds interleaved. */
async function planTrials(clips: ClipMaker, trials: number, falseTrials: number, seed: number): Promise<Planned[]> {
  const delay = (...parts: (string | number)[]) => Math.round(1500 + 2500 * mulberry32(seedOf(seed, 'delay', ...parts))());
  const plans: Planned[] = [];
  const vad = await SileroVad.create();
  const add = async (kind: TrialPlan['kind'], recordKind: TrialRecord['kind'], label: string, sound: Float32Array, delayMs: number) => {
    const record: Planned['record'] = { kind: recordKind, label, delayMs, soundMs: r1((sound.length / clips.rate) * 1000) };
    if (kind === 'false') record.vadPeak = Math.round((await vadPeak(vad, sound, clips.rate)) * 100) / 100;
    plans.push({ kind, sound, delayMs, record });
  };
  for (let i = 0; i < trials; i++) {
    const text = INTERRUPTIONS[i % INTERRUPTIONS.length] as string;
    const voice = CALLER_VOICES[i % CALLER_VOICES.length] as string;
    await add('barge', 'barge', `${text} (${voice})`, await clips.say(text, voice), delay('barge', i));
  }
  for (let j = 0; j < falseTrials; j++) {
    for (const kind of FALSE_KINDS) {
      const rng = mulberry32(seedOf(seed, kind, j));
      let sound: Float32Array;
      let label: string;
      if (kind === 'backchannel') {
        const b = BACKCHANNELS[j % BACKCHANNELS.length]!;
        const voice = b.voices[Math.floor(j / BACKCHANNELS.length) % b.voices.length] as string;
        sound = await clips.say(b.text, voice, b.espeak);
        label = `${b.text} (${voice})`;
      } else if (kind === 'cough') {
        sound = cough(rng, clips.rate, j);
        label = j % 2 ? 'double cough' : 'cough';
      } else if (kind === 'breath') {
        sound = breath(rng, clips.rate);
        label = 'breath';
      } else {
        sound = noise(rng, clips.rate, j);
        label = NOISE_VARIANTS[j % NOISE_VARIANTS.length] as string;
      }
      await add('false', kind, label, sound, delay(kind, j));
    }
  }
  return plans;
}

/** The highest Silero speech probability over a sound (as the server hears it: mu-law for the phone, then 16 kHz). */
async function vadPeak(vad: SileroVad, sound: Float32Array, rate: number): Promise<number> {
  const heard = rate === PHONE_RATE ? decodeMuLaw(encodeMuLaw(sound)) : sound;
  const x = resample(heard, rate, VAD_SAMPLE_RATE);
  const pad = new Float32Array(Math.round(0.3 * VAD_SAMPLE_RATE));
  const padded = new Float32Array(pad.length * 2 + x.length);
  padded.set(x, pad.length);
  vad.reset();
  return Math.max(0, ...(await vad.process(padded)));
}

/** The caller's turns in the server's record of a trial's call (the newest phone call for the phone side); null if not found. */
async function userTurns(server: TestServer, t: Trace): Promise<string[] | null> {
  try {
    let id = t.callId;
    if (!id) {
      const list = await server.request('GET', `${A}/conversation?callTypes=telephony_inbound&limit=1`);
      id = (list.body?.data?.logs?.[0] as { callId?: string } | undefined)?.callId;
    }
    if (!id) return null;
    const call = await endedCall(server, id);
    return ((call.transcript ?? []) as { role: string; content: string }[]).filter((e) => e.role === 'user').map((e) => e.content);
  } catch {
    return null;
  }
}

/** The bench agent: the voice benches' workflow graph with LONG_OPENING as its first message; returns its id. */
async function createAgent(server: TestServer): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, {
    body: {
      name: 'barge-in bench',
      workflowType: 'workflow_graph',
      workflowGraph: GRAPH,
      firstMessage: LONG_OPENING,
      llmIdleTimeoutConfig: { chatTimeoutTimeInSecs: 300, webcallTimeoutTimeInSecs: 300, telephonyTimeoutTimeInSecs: 300, maxRetries: 0 },
    },
  });
  if (res.status !== 201) throw new Error(`POST /agent -> ${res.status}: ${res.text}`);
  return res.body.data as string;
}

/** An inbound trunk with a number of its own, answered by the agent; returns the number. */
async function answerNumber(server: TestServer, agentId: string): Promise<string> {
  if (!server.sipPort) throw new Error('the phone side needs the server\'s SIP leg (PARLEY_SIP_HOST)');
  const number = `+1555017${String(Math.floor(Math.random() * 10000)).padStart(4, '0')}`;
  const trunk = await server.request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'Barge-in bench carrier', numbers: [number] } });
  if (trunk.status !== 201) throw new Error(`POST /sip-trunk/inbound -> ${trunk.status}: ${trunk.text}`);
  const answers = await server.request('POST', `${A}/agent/${agentId}/answers`, { body: { sourceKind: 'sipTrunk', sourceId: trunk.body.data._id } });
  if (answers.status !== 201) throw new Error(`POST /agent/{id}/answers -> ${answers.status}: ${answers.text}`);
  return number;
}
