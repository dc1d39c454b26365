// Turn-taking behaviour of an agent session on scripted inputs: a VAD that says what each 32 ms window is, a
// recognizer that says what each speculation heard, a synthesizer that returns so many ms of audio, and a fake clock.
// No models, no server: the session's own logic (endpointing, barge-in, backchannels, idle, cancel, the agent's audio
// options) on the audio clock.
import { describe, expect, it } from 'vitest';
import { AgentSession, type SessionEvent } from '../engine/agent/session.js';
import type { AgentSpec, Brain, BrainEvent } from '../engine/agent/types.js';
import type { Clock, SpeechRecognizer, Synthesizer, VoiceActivity } from '../engine/ports.js';
import { decide } from '../engine/turn/end-of-turn.js';
import { s2sSpec } from '../transports/ws/s2s-protocol.js';

const RATE = 16000;
const WIN = 512;
const WIN_MS = 32;
const SPEECH = 0.9;
const SILENCE = 0.05;

/** Time moves only when a test says so; timers fire in order, and promises settle between them. */
class FakeClock implements Clock {
  t = 0;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): number {
    this.timers.set(++this.seq, { at: this.t + Math.max(0, ms), fn });
    return this.seq;
  }

  clearTimeout(timer: unknown): void {
    this.timers.delete(timer as number);
  }

  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) if (entry[1].at <= end && (!next || entry[1].at < next[1].at)) next = entry;
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
    }
    this.t = end;
    await settle();
  }
}

async function settle(): Promise<void> {
  // Enough turns of the event loop for synthesis handed over in slices (tts/output.ts yields every 100 ms of audio).
  for (let i = 0; i < 64; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Each window's speech probability, as the test queues them. */
class ScriptedVad implements VoiceActivity {
  bufferedSamples = 0;
  readonly queue: number[] = [];

  async process(samples: Float32Array): Promise<number[]> {
    const probs: number[] = [];
    this.bufferedSamples += samples.length;
    while (this.bufferedSamples >= WIN) {
      this.bufferedSamples -= WIN;
      probs.push(this.queue.shift() ?? SILENCE);
    }
    return probs;
  }

  reset(): void {
    this.bufferedSamples = 0;
  }
}

/** The words of each speculation in turn, ready `delayMs` later on the fake clock. */
class ScriptedRecognizer implements SpeechRecognizer {
  readonly texts: string[] = [];
  readonly heard: { kind: string; ms: number }[] = [];

  constructor(
    private readonly clock: FakeClock,
    private readonly delayMs = 60,
  ) {}

  transcribe(samples: Float32Array, kind: string): Promise<{ text: string; runMs: number }> {
    this.heard.push({ kind, ms: (samples.length * 1000) / RATE });
    const text = this.texts.shift() ?? '';
    return new Promise((resolve) => void this.clock.setTimeout(() => resolve({ text, runMs: this.delayMs }), this.delayMs));
  }
}

/** `msPerPhrase` of audio for every phrase, `delayMs` after it is asked for. */
class ScriptedSynthesizer implements Synthesizer {
  readonly phrases: { text: string; signal?: AbortSignal }[] = [];

  constructor(
    private readonly clock: FakeClock,
    private readonly msPerPhrase: number,
    private readonly delayMs = 20,
  ) {}

  synthesize(_voiceId: string, text: string, _speed: number, opts: { signal?: AbortSignal } = {}) {
    this.phrases.push({ text, signal: opts.signal });
    const audio = { sampleRate: RATE, samples: new Float32Array((RATE * this.msPerPhrase) / 1000) };
    return new Promise<typeof audio>((resolve) => void this.clock.setTimeout(() => resolve(audio), this.delayMs));
  }
}

function brain(opening: string, answer: (user: string) => string) {
  const truncated: string[] = [];
  const said = async function* (text: string): AsyncGenerator<BrainEvent> {
    if (text) yield { type: 'text', text };
  };
  const b: Brain = {
    opening: () => said(opening),
    reply: (user) => said(user === null ? '' : answer(user)),
    addToolResult: () => undefined,
    truncateLastReply: (heard) => void truncated.push(heard),
  };
  return { brain: b, truncated };
}

/** The agent /s2s runs (every setting explicit), opening by itself, with a short maximum wait and no time limit. */
function spec(over: Partial<AgentSpec> = {}): AgentSpec {
  return { ...s2sSpec('scripted', ''), waitForUserToSpeakFirst: false, endpointing: { minDelayMs: 200, maxDelayMs: 1000 }, sessionTimeoutSeconds: 0, ...over };
}

interface Setup {
  spec?: Partial<AgentSpec>;
  opening?: string;
  answer?: (user: string) => string;
  /** Audio per synthesized phrase, and how long synthesis takes. */
  phraseMs?: number;
  synthDelayMs?: number;
  mode?: 'webcall' | 'chat';
}

function call(setup: Setup = {}) {
  const clock = new FakeClock();
  const vad = new ScriptedVad();
  const recognizer = new ScriptedRecognizer(clock);
  const synthesizer = new ScriptedSynthesizer(clock, setup.phraseMs ?? 1000, setup.synthDelayMs);
  const b = brain(setup.opening ?? '', setup.answer ?? (() => 'Sure.'));
  const events: (SessionEvent & { at: number })[] = [];
  const session = new AgentSession({
    mode: setup.mode ?? 'webcall',
    conversationType: 'webcall',
    spec: spec(setup.spec),
    brain: b.brain,
    variables: {},
    models: { turn: async () => ({ vad, recognizer }), synthesizer },
    clock,
    inputRate: RATE,
    outputRate: RATE,
    emit: (e) => void events.push({ ...e, at: clock.now() }),
  });
  const silentWindow = new Uint8Array(2 * WIN);
  /** `ms` of the caller's audio in real time, each window with probability `p`. */
  const audio = async (p: number, ms: number) => {
    for (let t = 0; t < ms; t += WIN_MS) {
      await clock.advance(WIN_MS);
      vad.queue.push(p);
      session.pushAudio(silentWindow);
    }
    await clock.advance(0);
  };
  const types = () => events.filter((e) => e.type !== 'audio' && e.type !== 'agent_transcript_delta').map((e) => e.type);
  const first = <T extends SessionEvent['type']>(type: T) => events.find((e) => e.type === type) as (Extract<SessionEvent, { type: T }> & { at: number }) | undefined;
  const all = <T extends SessionEvent['type']>(type: T) => events.filter((e) => e.type === type) as (Extract<SessionEvent, { type: T }> & { at: number })[];
  return { clock, vad, recognizer, synthesizer, session, events, truncated: b.truncated, audio, speak: (ms: number) => audio(SPEECH, ms), silence: (ms: number) => audio(SILENCE, ms), types, first, all };
}

describe('endpointing', () => {
  it('commits a complete turn at minDelayMs of silence, not before', async () => {
    const c = call({ spec: { waitForUserToSpeakFirst: true } });
    c.session.start();
    const text = 'What time do you open on Sunday?';
    expect(decide({ text }, { smartTurn: true, smartWaitMs: 0, minDelayMs: 200, maxDelayMs: 1000 }).waitMs).toBe(200);
    c.recognizer.texts.push(text);
    await c.speak(600);
    const stoppedAt = c.clock.now();
    await c.silence(150);
    expect(c.first('user_speech_stopped')).toBeDefined();
    expect(c.first('user_transcript')).toBeUndefined();
    await c.silence(200);
    const committed = c.first('user_transcript')!;
    expect(committed.text).toBe(text);
    expect(committed.at - stoppedAt).toBeGreaterThanOrEqual(200);
    expect(committed.at - stoppedAt).toBeLessThanOrEqual(200 + 2 * WIN_MS);
    // One speculation, at the pause, on the turn so far (its pre-roll included).
    expect(c.recognizer.heard.map((h) => h.kind)).toEqual(['speculative']);
    await c.clock.advance(2000);
    const metrics = c.first('turn_metrics')!.metrics;
    expect(metrics.eouDelayMs).toBeGreaterThanOrEqual(200);
    expect(metrics.eouDelayMs).toBeLessThanOrEqual(200 + 2 * WIN_MS);
    expect(metrics.recognitionMs).toBe(60);
  });

  it('holds a hesitation ("my name is") past minDelayMs, and speech resuming drops its speculation', async () => {
    const c = call({ spec: { waitForUserToSpeakFirst: true } });
    c.session.start();
    c.recognizer.texts.push('My name is', 'My name is John Smith.');
    await c.speak(500);
    await c.silence(600);
    expect(c.first('user_transcript')).toBeUndefined();
    await c.speak(500);
    await c.silence(400);
    expect(c.all('user_transcript').map((e) => e.text)).toEqual(['My name is John Smith.']);
    expect(c.all('user_speech_started')).toHaveLength(1);
    expect(c.all('user_speech_stopped')).toHaveLength(2);
  });

  it('waits for an unfinished turn as the decision says, never past maxDelayMs', async () => {
    const c = call({ spec: { waitForUserToSpeakFirst: true } });
    c.session.start();
    c.recognizer.texts.push('My name is');
    const wait = decide({ text: 'My name is' }, { smartTurn: true, smartWaitMs: 0, minDelayMs: 200, maxDelayMs: 1000 }).waitMs;
    expect(wait).toBeGreaterThan(200);
    expect(wait).toBeLessThanOrEqual(1000);
    await c.speak(500);
    const stoppedAt = c.clock.now();
    await c.silence(wait - WIN_MS);
    expect(c.first('user_transcript')).toBeUndefined();
    await c.silence(1000 + 2 * WIN_MS - (wait - WIN_MS));
    const committed = c.first('user_transcript')!;
    expect(committed.text).toBe('My name is');
    expect(committed.at - stoppedAt).toBeGreaterThanOrEqual(wait);
    expect(committed.at - stoppedAt).toBeLessThanOrEqual(1000 + 2 * WIN_MS);
  });

  it('with smartTurnConfig off, silence alone decides: minDelayMs even for an open ending', async () => {
    const c = call({ spec: { waitForUserToSpeakFirst: true, smartTurn: { enabled: false, waitMs: 0 } } });
    c.session.start();
    c.recognizer.texts.push('My name is');
    await c.speak(500);
    const stoppedAt = c.clock.now();
    await c.silence(300);
    const committed = c.first('user_transcript')!;
    expect(committed.at - stoppedAt).toBeGreaterThanOrEqual(200);
    expect(committed.at - stoppedAt).toBeLessThanOrEqual(200 + 2 * WIN_MS);
  });

  it('discards a turn with no words (noise, or only annotations)', async () => {
    const c = call({ spec: { waitForUserToSpeakFirst: true } });
    c.session.start();
    c.recognizer.texts.push('[coughs]');
    await c.speak(300);
    await c.silence(400);
    expect(c.first('user_transcript')).toBeUndefined();
    expect(c.first('user_turn_discarded')).toMatchObject({ reason: 'noise' });
  });
});

describe('barge-in', () => {
  const long = 'Thanks for calling the Riverside clinic, we are open every day from eight until six.';
  /** A call whose agent has been talking for a second; the recognizer will hear `heard`. */
  async function talking(setup: Setup, ...heard: string[]) {
    const c = call({ opening: long, phraseMs: 3000, ...setup });
    c.session.start();
    await c.clock.advance(1000);
    c.recognizer.texts.push(...heard);
    return c;
  }

  it('holds the agent at the first windows of speech over it, then interrupts it when the speech goes on', async () => {
    const c = await talking({ phraseMs: 4000, answer: () => 'Of course.' }, 'I need to move my appointment.');
    expect(c.first('agent_start_talking')).toBeDefined();
    await c.speak(2 * WIN_MS);
    const paused = c.first('agent_audio_paused')!;
    expect(paused).toBeDefined();
    expect(c.first('interruption')).toBeUndefined();
    const framesAtPause = c.all('audio').length;
    await c.speak(1100);
    expect(c.all('audio').length).toBe(framesAtPause);
    expect(c.first('interruption')!.at - paused.at).toBeGreaterThanOrEqual(900);
    await c.silence(400);
    expect(c.types()).toEqual([
      'agent_turn_started', 'agent_start_talking', 'agent_audio_paused', 'user_speech_started', 'interruption',
      'agent_stop_talking', 'agent_transcript', 'agent_turn_ended', 'user_speech_stopped', 'user_transcript_delta',
      'user_transcript', 'agent_turn_started', 'agent_start_talking', 'turn_metrics',
    ]);
    expect(c.first('agent_turn_ended')).toMatchObject({ status: 'interrupted' });
    const cut = c.first('agent_transcript')!;
    expect(cut.interrupted).toBe(true);
    expect(long.startsWith(cut.text)).toBe(true);
    expect(cut.text.length).toBeLessThan(long.length);
    expect(c.truncated).toEqual([cut.text]);
    expect(c.session.interruptions).toHaveLength(1);
    expect(c.session.interruptions[0]!.heard).toBe(cut.text);
  });

  it('interrupts at once when the words over the agent are not a backchannel', async () => {
    const c = await talking({ phraseMs: 4000 }, 'Wait, stop.');
    await c.speak(300);
    await c.silence(150);
    expect(c.first('interruption')).toBeDefined();
    await c.silence(1000);
    expect(c.first('user_transcript')).toMatchObject({ text: 'Wait, stop.' });
  });

  it('a short noise over the agent: paused, then resumed where it was; the agent finishes', async () => {
    const c = await talking({});
    await c.speak(2 * WIN_MS);
    expect(c.first('agent_audio_paused')).toBeDefined();
    await c.silence(WIN_MS);
    expect(c.first('agent_audio_resumed')).toBeDefined();
    expect(c.first('user_speech_started')).toBeUndefined();
    expect(c.first('user_turn_discarded')).toBeUndefined();
    await c.clock.advance(8000);
    expect(c.first('interruption')).toBeUndefined();
    expect(c.first('agent_turn_ended')).toMatchObject({ status: 'completed', text: long });
    // The held audio was not dropped: all of it was sent.
    expect(c.all('audio').reduce((n, e) => n + e.samples.length, 0)).toBe(c.synthesizer.phrases.length * 3 * RATE);
  });

  it('speech over the agent in which recognition finds no words resumes it (noise)', async () => {
    const c = await talking({}, '');
    await c.speak(200);
    await c.silence(150);
    expect(c.types().slice(2)).toEqual(['agent_audio_paused', 'user_speech_started', 'user_speech_stopped', 'user_turn_discarded', 'agent_audio_resumed']);
    expect(c.first('user_turn_discarded')).toMatchObject({ reason: 'noise' });
  });

  it('a backchannel ("mm-hmm") over the agent does not interrupt it', async () => {
    const c = await talking({}, 'Mm-hmm.');
    await c.speak(250);
    await c.silence(200);
    expect(c.first('user_turn_discarded')).toMatchObject({ reason: 'backchannel' });
    expect(c.first('agent_audio_resumed')).toBeDefined();
    await c.clock.advance(8000);
    expect(c.first('interruption')).toBeUndefined();
    expect(c.first('user_transcript')).toBeUndefined();
    expect(c.first('agent_turn_ended')).toMatchObject({ status: 'completed', text: long });
  });

  it('with allowInterruptions off, speech over the agent is not a turn', async () => {
    const c = await talking({ spec: { allowInterruptions: false } }, 'Hello?');
    await c.speak(400);
    await c.silence(400);
    expect(c.first('agent_audio_paused')).toBeUndefined();
    expect(c.first('user_speech_started')).toBeUndefined();
    expect(c.recognizer.heard).toEqual([]);
  });
});

describe('idle and cancel', () => {
  it('reprompts a silent caller after the idle timeout, then says goodbye and ends the call', async () => {
    const c = call({ opening: 'Hello.', phraseMs: 500, spec: { idle: { chatSeconds: 0, webcallSeconds: 3, telephonySeconds: 0, maxRetries: 1 } } });
    c.session.start();
    await c.clock.advance(1000);
    const opened = c.first('agent_turn_ended')!;
    expect(opened).toMatchObject({ status: 'completed', text: 'Hello.' });
    await c.clock.advance(opened.at + 2900 - c.clock.now());
    expect(c.all('agent_turn_started')).toHaveLength(1);
    await c.clock.advance(200);
    const started = c.all('agent_turn_started');
    expect(started.map((e) => e.kind)).toEqual(['opening', 'reprompt']);
    expect(started[1]!.at - opened.at).toBe(3000);
    await c.clock.advance(1000);
    expect(c.all('agent_transcript').map((e) => e.text)).toEqual(['Hello.', 'Are you still there?']);
    await c.clock.advance(5000);
    expect(c.all('agent_turn_started').map((e) => e.kind)).toEqual(['opening', 'reprompt', 'reprompt']);
    expect(c.first('ended')).toMatchObject({ reason: 'idle_timeout' });
    expect(c.session.endReason).toBe('idle_timeout');
  });

  it('a caller who speaks resets the idle timer', async () => {
    const c = call({ opening: 'Hello.', phraseMs: 500, spec: { idle: { chatSeconds: 0, webcallSeconds: 3, telephonySeconds: 0, maxRetries: 1 } } });
    c.session.start();
    await c.clock.advance(2500);
    c.recognizer.texts.push('What time do you open on Sunday?');
    await c.speak(400);
    await c.silence(400);
    expect(c.first('user_transcript')).toBeDefined();
    await c.clock.advance(2000);
    expect(c.all('agent_turn_started').map((e) => e.kind)).toEqual(['opening', 'reply']);
  });

  it('cancel while the reply is still being synthesized: nothing is played, the reply ends cancelled', async () => {
    const c = call({ opening: 'Hello, how can I help you today?', synthDelayMs: 500 });
    c.session.start();
    await c.clock.advance(100);
    expect(c.session.speaking).toBe(true);
    expect(c.session.cancelResponse()).toBe(true);
    expect(c.session.speaking).toBe(false);
    await c.clock.advance(2000);
    expect(c.types()).toEqual(['agent_turn_started', 'agent_turn_ended']);
    expect(c.first('agent_turn_ended')).toMatchObject({ status: 'cancelled', text: '' });
    expect(c.all('audio')).toEqual([]);
    expect(c.synthesizer.phrases.length).toBeGreaterThan(0);
    expect(c.synthesizer.phrases.every((p) => p.signal?.aborted)).toBe(true);
    expect(c.truncated).toEqual(['']);
    expect(c.session.cancelResponse()).toBe(false);
  });
});

describe('audio options', () => {
  const long = 'Thanks for calling the Riverside clinic, we are open every day from eight until six.';
  const rmsDb = (x: Float32Array) => 10 * Math.log10(x.reduce((a, v) => a + v * v, 0) / Math.max(1, x.length));
  const join = (events: { samples: Float32Array }[]) => {
    const out = new Float32Array(events.reduce((n, e) => n + e.samples.length, 0));
    let at = 0;
    for (const e of events) {
      out.set(e.samples, at);
      at += e.samples.length;
    }
    return out;
  };

  it('muteUserUntilFirstBotResponse: speech during the greeting is not heard at all; once it has played out, it is', async () => {
    const c = call({ opening: long, phraseMs: 3000, spec: { muteUserUntilFirstBotResponse: true } });
    c.session.start();
    await c.clock.advance(1000);
    c.recognizer.texts.push('Wait, stop.');
    await c.speak(1500);
    await c.silence(300);
    // Not even the VAD ran: every window the test queued for it is still there.
    expect(c.vad.queue.length).toBe(Math.ceil(1500 / WIN_MS) + Math.ceil(300 / WIN_MS));
    for (const type of ['agent_audio_paused', 'user_speech_started', 'interruption', 'user_transcript'] as const) expect(c.first(type), type).toBeUndefined();
    expect(c.recognizer.heard).toEqual([]);
    c.vad.queue.length = 0;
    c.recognizer.texts.length = 0;
    // The greeting plays out whole.
    await c.clock.advance(8000);
    const ended = c.first('agent_turn_ended')!;
    expect(ended).toMatchObject({ status: 'completed', text: long });
    const audioMs = (c.all('audio').reduce((n, e) => n + e.samples.length, 0) * 1000) / RATE;
    expect(ended.at - c.first('agent_start_talking')!.at).toBeGreaterThanOrEqual(audioMs);
    c.recognizer.texts.push('I need to move my appointment.');
    await c.speak(600);
    await c.silence(400);
    expect(c.first('user_speech_started')).toBeDefined();
    expect(c.first('user_transcript')).toMatchObject({ text: 'I need to move my appointment.' });
  });

  it('muteUserUntilFirstBotResponse: the mute ends with the first reply however it ends (typed text over it); text is never muted', async () => {
    const c = call({ opening: long, phraseMs: 3000, spec: { muteUserUntilFirstBotResponse: true } });
    c.session.start();
    await c.clock.advance(1000);
    c.session.sendText('Can I book for Monday?');
    expect(c.first('agent_turn_ended')).toMatchObject({ status: 'interrupted' });
    expect(c.first('user_transcript')).toMatchObject({ text: 'Can I book for Monday?' });
    await c.clock.advance(4000);
    c.recognizer.texts.push('Thank you.');
    await c.speak(500);
    await c.silence(400);
    expect(c.all('user_transcript').map((e) => e.text)).toEqual(['Can I book for Monday?', 'Thank you.']);

    // Chat: text before the first response is answered as always.
    const chat = call({ mode: 'chat', opening: 'Hello, how can I help?', spec: { muteUserUntilFirstBotResponse: true } });
    chat.session.start();
    chat.session.sendText('Hi');
    await chat.clock.advance(100);
    expect(chat.first('user_transcript')).toMatchObject({ text: 'Hi' });
    expect(chat.all('agent_transcript').map((e) => e.text)).toEqual(['Sure.']);
  });

  it('muteUserUntilFirstBotResponse with waitForUserToSpeakFirst: no first reply to wait for, the caller is heard', async () => {
    const c = call({ spec: { muteUserUntilFirstBotResponse: true, waitForUserToSpeakFirst: true } });
    c.session.start();
    c.recognizer.texts.push('Hello?');
    await c.speak(400);
    await c.silence(400);
    expect(c.first('user_transcript')).toMatchObject({ text: 'Hello?' });
  });

  it('backgroundSound: one continuous real-time stream for the whole call, the agent over the ambience, the ambience alone between turns', async () => {
    const c = call({ opening: 'Hello there.', phraseMs: 1000, spec: { backgroundSound: 'office' } });
    c.session.start();
    const sentMs = () => (c.all('audio').reduce((n, e) => n + e.samples.length, 0) * 1000) / RATE;
    // Never behind real time by more than a frame, never ahead by more than the pacer's lead and a frame.
    for (let t = 0; t < 5000; t += 100) {
      await c.clock.advance(100);
      const ahead = sentMs() - c.clock.now();
      expect(ahead, `at ${c.clock.now()} ms`).toBeGreaterThanOrEqual(-20);
      expect(ahead, `at ${c.clock.now()} ms`).toBeLessThanOrEqual(80 + 20);
    }
    const ended = c.first('agent_turn_ended')!;
    expect(ended).toMatchObject({ status: 'completed', text: 'Hello there.' });
    // The turn ends when its last sample has played: after the ambience queued before it and its second of audio.
    expect(ended.at - c.first('agent_start_talking')!.at).toBeGreaterThanOrEqual(1000);
    expect(ended.at - c.first('agent_start_talking')!.at).toBeLessThanOrEqual(1000 + 40 + 20);
    // The synthesizer's audio is silence here: every frame, the agent's included, is the ambience at its level.
    const quiet = join(c.all('audio').filter((e) => e.at > ended.at));
    expect(quiet.length / RATE).toBeGreaterThan(3);
    expect(rmsDb(quiet)).toBeGreaterThan(-38);
    expect(rmsDb(quiet)).toBeLessThan(-32);
    for (const e of c.all('audio')) expect(rmsDb(e.samples)).toBeGreaterThan(-70);
    c.session.end('client_requested');
    const frames = c.all('audio').length;
    await c.clock.advance(1000);
    expect(c.all('audio').length).toBe(frames);

    // Off: nothing at all between the agent's turns.
    const off = call({ opening: 'Hello there.', phraseMs: 1000 });
    off.session.start();
    await off.clock.advance(5000);
    const offEnded = off.first('agent_turn_ended')!;
    expect(off.all('audio').length).toBeGreaterThan(0);
    expect(off.all('audio').filter((e) => e.at > offEnded.at)).toEqual([]);
  });

  it('backgroundSound: barge-in is unchanged (held: nothing goes out; interrupted: the ambience goes on)', async () => {
    const c = call({ opening: long, phraseMs: 4000, answer: () => 'Of course.', spec: { backgroundSound: 'cafe' } });
    c.session.start();
    await c.clock.advance(1000);
    c.recognizer.texts.push('I need to move my appointment.');
    await c.speak(2 * WIN_MS);
    const paused = c.first('agent_audio_paused')!;
    expect(paused).toBeDefined();
    const framesAtPause = c.all('audio').length;
    await c.speak(1100);
    const interruption = c.first('interruption')!;
    expect(interruption.at - paused.at).toBeGreaterThanOrEqual(900);
    expect(c.all('audio').filter((e) => e.at < interruption.at).length).toBe(framesAtPause);
    await c.silence(400);
    expect(c.types()).toEqual([
      'agent_turn_started', 'agent_start_talking', 'agent_audio_paused', 'user_speech_started', 'interruption',
      'agent_stop_talking', 'agent_transcript', 'agent_turn_ended', 'user_speech_stopped', 'user_transcript_delta',
      'user_transcript', 'agent_turn_started', 'agent_start_talking', 'turn_metrics',
    ]);
    // After the interruption the stream restarts at once (the transport dropped what it had queued).
    const after = c.all('audio').filter((e) => e.at >= interruption.at && e.at < c.all('agent_start_talking')[1]!.at);
    expect(after.length).toBeGreaterThan(0);
  });
});
