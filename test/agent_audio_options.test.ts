// The agent's audio options on real calls: muteUserUntilFirstBotResponse, backgroundSound and denoisingConfig over the
// agent WebSocket (real speech streamed at real-time pace, the built-in models), and the first two on a phone call
// (baresip over SIP and RTP) through the same runtime.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freshStore, sleep, startServer, type StoreEnv, type TestServer } from './support/server.js';
import { decodeLinear16, encodeLinear16 } from '../engine/audio/pcm.js';
import { readWav, writeWav } from '../engine/audio/wav.js';
import { AgentCaller, connectUrl, endedCall, speech } from './support/agent-client.js';
import { baresipCall, callerScript, killBaresips } from './support/baresip.js';
import { mulberry32 } from '../engine/random.js';
import { freePort } from './support/sip-peers.js';

const A = '/atoms/v1';
const RATE = 16000;
const NUMBER = '+15550177';

const GRAPH = {
  startNodeId: 'ask',
  nodes: [
    { id: 'ask', type: 'say', text: 'Would you like to hear about pizza or pasta?', noMatchText: 'Sorry, I did not catch that.' },
    { id: 'pizza', type: 'say', text: 'Pizza it is. What size would you like, small or large?' },
    { id: 'pasta', type: 'say', text: 'Pasta is great today. Say goodbye when you are done.' },
  ],
  edges: [
    { from: 'ask', to: 'pizza', condition: { type: 'keyword', keywords: ['pizza'] } },
    { from: 'ask', to: 'pasta', condition: { type: 'keyword', keywords: ['pasta'] } },
  ],
};

const GREETING = 'Welcome to the city pizza and pasta line. We are open every day from eleven in the morning until ten at night. Would you like to hear about pizza or pasta?';

let store: StoreEnv;
let server: TestServer;

async function createAgent(body: Record<string, unknown>): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, { body: { name: 'audio options', workflowType: 'workflow_graph', workflowGraph: GRAPH, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.data as string;
}

function caller(agentId: string): AgentCaller {
  return new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(RATE) }), RATE);
}

const dbfs = (x: Float32Array) => 10 * Math.log10(x.reduce((a, v) => a + v * v, 0) / Math.max(1, x.length));
const userTurns = (c: AgentCaller, after = 0) => c.frames.slice(after).filter((f) => f.type === 'transcript' && f.role === 'user');

/** Seeded white noise (mulberry32), `seconds` long at `rms`. */
function whiteNoise(seconds: number, rms: number, seed = 7): Float32Array {
  const rnd = mulberry32(seed);
  // Uniform in [-1, 1) has an RMS of 1/sqrt(3).
  return Float32Array.from({ length: Math.round(seconds * RATE) }, () => (rnd() * 2 - 1) * rms * Math.sqrt(3));
}

/** The caller's channel (left) of a dual recording, as floats. */
async function recordedCaller(callId: string): Promise<Float32Array> {
  const dual = await server.request('GET', `${A}/recordings/${callId}?channel=dual`);
  expect(dual.status, dual.text).toBe(200);
  const wav = Buffer.from(await (await fetch(dual.body.data.url)).arrayBuffer());
  const n = (wav.length - 44) / 4;
  return Float32Array.from({ length: n }, (_, i) => wav.readInt16LE(44 + i * 4) / 32768);
}

beforeAll(async () => {
  store = freshStore('sqlite');
  const sipPort = await freePort('127.0.0.2');
  const rtpBase = 10000 + Math.floor(Math.random() * 100) * 100;
  server = await startServer({
    store,
    env: { PARLEY_WARM_MODELS: 'true', PARLEY_SIP_HOST: '127.0.0.2', PARLEY_SIP_PORT: String(sipPort), PARLEY_RTP_PORTS: `${rtpBase}-${rtpBase + 99}` },
  });
}, 120_000);

afterAll(async () => {
  killBaresips();
  await server?.stop();
  await store?.cleanup();
});

afterEach(() => killBaresips());

describe('muteUserUntilFirstBotResponse on the agent WebSocket', () => {
  it('speech over the greeting neither interrupts it nor makes a turn; speech after it does', async () => {
    const agentId = await createAgent({ firstMessage: GREETING, muteUserUntilFirstBotResponse: true });
    const c = caller(agentId);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    c.startMic();
    await c.waitFor((f) => f.type === 'agent_start_talking');
    await sleep(800);
    await c.say(await speech(server, 'Wait, I want to order a pasta instead.'));
    const greeting = await c.agentTurn(0);
    // The words were all said while the greeting was playing, and it played on to its end.
    const stopped = c.frames.find((f) => f.type === 'agent_stop_talking')!;
    expect(c.lastSpeechEndAt).toBeLessThan(stopped.at);
    expect(greeting.text).toBe(GREETING);
    expect(c.of('interruption')).toHaveLength(0);
    expect(userTurns(c)).toHaveLength(0);
    // Without a background sound nothing is sent between the agent's turns.
    await sleep(1500);
    expect(c.frames.slice(c.frames.indexOf(greeting)).filter((f) => f.type === 'output_audio.delta')).toHaveLength(0);

    const mark = c.frames.length;
    await c.say(await speech(server, 'I would like a pizza please.'));
    const user = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 20_000, mark);
    expect(user.text.toLowerCase()).toContain('pizza');
    expect((await c.agentTurn(c.frames.indexOf(user))).text).toBe('Pizza it is. What size would you like, small or large?');
    c.close();
    await c.closed;
    const call = await endedCall(server, created.call_id as string);
    expect(call.transcript.map((t: any) => [t.role, Boolean(t.interrupted)])).toEqual([['agent', false], ['user', false], ['agent', false]]);
  }, 90_000);
});

describe('backgroundSound on the agent WebSocket', () => {
  it('an office ambience for the whole call at about -35 dBFS, under the agent and alone between turns; barge-in and recognition unchanged', async () => {
    const agentId = await createAgent({ firstMessage: GREETING, backgroundSound: 'office' });
    const c = caller(agentId);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    c.startMic();
    await c.waitFor((f) => f.type === 'agent_start_talking');
    await sleep(2000);
    // Barge-in as without an ambience: the agent stops, the words are the next turn.
    const mark = c.frames.length;
    await c.say(await speech(server, 'Wait, I want to order a pizza instead.'));
    const interruption = await c.waitFor((f) => f.type === 'interruption', 10_000, mark);
    const user = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 15_000, mark);
    expect(user.text.toLowerCase()).toContain('pizza');
    const reply = await c.agentTurn(c.frames.indexOf(user));
    const replyStart = c.frames.findIndex((f, i) => i > c.frames.indexOf(interruption) && f.type === 'agent_start_talking');
    expect(replyStart).toBeGreaterThan(0);
    expect(reply.text).toBe('Pizza it is. What size would you like, small or large?');
    const replyAt = c.frames.indexOf(reply);
    await sleep(2500);
    const end = c.frames.length;
    c.close();
    await c.closed;

    // Between the turns: the ambience alone, never digital silence, at its level.
    const quiet = decodeLinear16(c.audioBetween(replyAt, end));
    expect(quiet.length / RATE).toBeGreaterThan(2);
    expect(quiet.filter((v) => v === 0).length / quiet.length).toBeLessThan(0.01);
    const level = dbfs(quiet);
    expect(level).toBeGreaterThan(-38);
    expect(level).toBeLessThan(-32);
    // From the start of the call, before the greeting's first word...
    const first = c.frames.find((f) => f.type === 'output_audio.delta')!;
    expect(first.at - created.at).toBeLessThan(c.frames.find((f) => f.type === 'agent_start_talking')!.at - created.at);
    // ...and after the barge-in (held meanwhile: nothing is sent), as much audio as time went by: one continuous stream,
    // no gaps, no overlaps.
    const streamMs = (c.audioBetween(replyStart, end).length / 2 / RATE) * 1000;
    const spanMs = c.frames[end - 1]!.at - c.frames[replyStart]!.at;
    expect(streamMs).toBeGreaterThan(spanMs - 150);
    expect(streamMs).toBeLessThan(spanMs + 250);
    // The agent's reply is still clear under it: recognising it gives back its words (as clean: Whisper hears Flite's
    // "Pizza it is" as "Feet soon it is" even without an ambience).
    const stop = c.frames.findIndex((f, i) => i > replyStart && f.type === 'agent_stop_talking');
    const wav = writeWav(decodeLinear16(c.audioBetween(replyStart, stop + 1)), RATE);
    const stt = await server.request('POST', '/waves/v1/stt/?model=pulse&language=en', { raw: wav, headers: { 'content-type': 'audio/wav' } });
    expect(stt.status).toBe(200);
    const words = JSON.stringify(stt.body).toLowerCase();
    expect(words).toMatch(/what size would you like/);
    expect(words).toMatch(/large/);
    const call = await endedCall(server, created.call_id as string);
    expect(call.transcript[0]).toMatchObject({ role: 'agent', interrupted: true });
  }, 90_000);
});

describe('denoisingConfig on the agent WebSocket', () => {
  /** A call that streams `pcm` (the greeting is short) and ends; its id and the frames. */
  async function streamCall(agentId: string, pcm: Buffer, expectPizza: boolean): Promise<{ callId: string; c: AgentCaller }> {
    const c = caller(agentId);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    c.startMic();
    await c.say(pcm);
    if (expectPizza) {
      const user = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user' && /pizza/i.test(f.text as string), 20_000);
      expect((await c.agentTurn(c.frames.indexOf(user))).text).toContain('Pizza it is');
    }
    c.close();
    await c.closed;
    await endedCall(server, created.call_id as string);
    return { callId: created.call_id as string, c };
  }

  it('RNNoise runs on the caller audio before the VAD: speech in noise is recognised, noise alone is much quieter', async () => {
    const said = decodeLinear16(await speech(server, 'I would like a pizza please.'));
    // White noise 15 dB below the speech clip's level (about -43 dBFS: a fan, a line's hiss), for 3 s before it, under
    // it and 1.5 s after it. (Whisper loses "pizza" in white noise 10 dB down, denoised or not.)
    const noiseRms = Math.sqrt(said.reduce((a, v) => a + v * v, 0) / said.length) / 10 ** (15 / 20);
    const noise = whiteNoise(3 + said.length / RATE + 1.5, noiseRms);
    const mixed = noise.slice();
    for (let i = 0; i < said.length; i++) mixed[3 * RATE + i]! += said[i]!;
    const pcm = encodeLinear16(mixed);

    const on = await createAgent({ firstMessage: 'Pizza or pasta?', denoisingConfig: { isEnabled: true } });
    const off = await createAgent({ firstMessage: 'Pizza or pasta?', denoisingConfig: { isEnabled: false } });
    const denoised = await streamCall(on, pcm, true);
    const raw = await streamCall(off, encodeLinear16(noise.subarray(0, 3 * RATE)), false);
    // The recording keeps the caller's audio as the VAD heard it: the same noise, 1 to 2.8 s into the call.
    const window = (x: Float32Array) => x.subarray(1 * RATE, Math.round(2.8 * RATE));
    const denoisedDb = dbfs(window(await recordedCaller(denoised.callId)));
    const rawDb = dbfs(window(await recordedCaller(raw.callId)));
    expect(rawDb).toBeGreaterThan(20 * Math.log10(noiseRms) - 1.5);
    expect(denoisedDb).toBeLessThan(rawDb - 10);
  }, 120_000);
});

describe('on a phone call (baresip over SIP and RTP, the same runtime)', () => {
  it('the greeting is not interrupted by the caller, the caller is heard after it, and the office ambience reaches the phone', async () => {
    const agentId = await createAgent({ firstMessage: 'Hello! Thanks for calling the pizza and pasta place. Would you like to hear about pizza or pasta?', muteUserUntilFirstBotResponse: true, backgroundSound: 'office' });
    const trunk = await server.request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'Carrier', numbers: [NUMBER] } });
    expect(trunk.status, trunk.text).toBe(201);
    const answers = await server.request('POST', `${A}/agent/${agentId}/answers`, { body: { sourceKind: 'sipTrunk', sourceId: trunk.body.data._id } });
    expect(answers.status, answers.text).toBe(201);
    const dir = mkdtempSync(path.join(tmpdir(), 'parley-audio-options-'));
    const line = async (text: string, name: string) => {
      const file = path.join(dir, `${name}.wav`);
      writeFileSync(file, writeWav(decodeLinear16(await speech(server, text, 8000, 'rms')), 8000));
      return file;
    };
    // "Pasta" over the greeting (muted: not a turn, no barge-in), then "pizza" after it, then quiet to the end.
    const script = callerScript([{ silence: 1 }, { wav: await line('Pasta, please.', 'pasta') }, { silence: 7 }, { wav: await line('I would like a pizza please.', 'pizza') }, { silence: 9 }]);
    const base = 20000 + Math.floor(Math.random() * 100) * 100;
    const result = await baresipCall({ target: `sip:${NUMBER.slice(1)}@127.0.0.2:${server.sipPort}`, wav: script, sipPort: await freePort(), rtpPorts: [base, base + 99], codecs: ['pcmu'], timeoutS: 45 });
    expect(result.established, result.log).toBe(true);

    const list = await server.request('GET', `${A}/conversation?callTypes=telephony_inbound`);
    const call = await endedCall(server, list.body.data.logs[0].callId);
    const turns = (call.transcript as { role: string; content: string; interrupted?: boolean }[]).map((t) => [t.role, t.content.toLowerCase(), Boolean(t.interrupted)]);
    expect(turns[0]).toEqual(['agent', 'hello! thanks for calling the pizza and pasta place. would you like to hear about pizza or pasta?', false]);
    expect(turns.filter((t) => t[0] === 'user').map((t) => t[1])).toEqual([expect.stringContaining('pizza')]);
    expect(turns[2]).toEqual(['agent', 'pizza it is. what size would you like, small or large?', false]);

    // What the phone heard: the agent's words, and at the end (the agent quiet for seconds) the ambience at its level.
    const heard = readWav(readFileSync(result.heard!));
    expect(heard.sampleRate).toBe(8000);
    const tail = heard.samples.subarray(heard.samples.length - 3 * 8000, heard.samples.length - 8000 / 2);
    expect(tail.filter((v) => v === 0).length / tail.length).toBeLessThan(0.05);
    expect(dbfs(tail)).toBeGreaterThan(-39);
    expect(dbfs(tail)).toBeLessThan(-31);
  }, 120_000);
});
