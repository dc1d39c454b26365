// The agent WebSocket end to end: real speech streamed at real-time pace, the built-in models, workflow agents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshStore, startServer, storeSql, type StoreEnv, type TestServer } from './support/server.js';
import { decodeLinear16 } from '../engine/audio/codecs.js';
import { writeWav } from '../engine/audio/wav.js';
import { AgentCaller, connectUrl, endedCall, speech, type Frame } from './support/agent-client.js';

const A = '/atoms/v1';
const RATE = 16000;

const GRAPH = {
  startNodeId: 'ask',
  nodes: [
    { id: 'ask', type: 'say', text: 'Would you like to hear about pizza or pasta?', noMatchText: 'Sorry, I did not catch that.' },
    { id: 'pizza', type: 'say', text: 'Pizza it is. What size would you like, small or large?', extract: [{ variable: 'size', regex: '\\b(small|large)\\b', flags: 'i' }] },
    { id: 'pasta', type: 'say', text: 'Pasta is great today. Say goodbye when you are done.' },
    { id: 'size', type: 'end_call', text: 'A {{size}} pizza is on its way. Goodbye!' },
    { id: 'bye', type: 'end_call', text: 'Goodbye!' },
  ],
  edges: [
    { from: 'ask', to: 'pizza', condition: { type: 'keyword', keywords: ['pizza'] } },
    { from: 'ask', to: 'pasta', condition: { type: 'keyword', keywords: ['pasta'] } },
    { from: 'pizza', to: 'size', condition: { type: 'regex', pattern: '\\b(small|large)\\b', flags: 'i' } },
    { from: 'pasta', to: 'bye', condition: { type: 'any' } },
  ],
};

const LONG_MESSAGE =
  'Welcome to the city library help line. Our opening hours are from nine in the morning until eight in the evening on weekdays, ' +
  'and from ten until four on Saturdays. We are closed on Sundays and on public holidays. You can renew your books online or at any branch.';

let store: StoreEnv;
let server: TestServer;

async function createAgent(body: Record<string, unknown>): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, { body: { name: 'session test', ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.data as string;
}

function caller(agentId: string, extra: Record<string, string> = {}): AgentCaller {
  return new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(RATE), ...extra }), RATE);
}

beforeAll(async () => {
  store = freshStore('sqlite');
  server = await startServer({ store, env: { PARLEY_WARM_MODELS: 'true' } });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await store?.cleanup();
});

describe('agent WebSocket: a workflow conversation held offline', () => {
  it('holds a multi-turn spoken conversation, ends it, and stores the call with timestamps and turn metrics', async () => {
    const agentId = await createAgent({ workflowType: 'workflow_graph', workflowGraph: GRAPH, firstMessage: 'Hello! Would you like to hear about pizza or pasta?' });
    const c = caller(agentId);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    expect(created.sample_rate).toBe(RATE);
    expect(created.call_id).toMatch(/^CALL-\d{13}-[0-9a-f]{6}$/);
    c.startMic();

    const opening = await c.agentTurn(0);
    expect(opening.text).toBe('Hello! Would you like to hear about pizza or pasta?');
    const startIdx = c.frames.findIndex((f) => f.type === 'agent_start_talking');
    const firstAudio = c.frames.findIndex((f) => f.type === 'output_audio.delta');
    const stopIdx = c.frames.findIndex((f) => f.type === 'agent_stop_talking');
    expect(startIdx).toBeGreaterThan(0);
    expect(firstAudio).toBeGreaterThan(startIdx);
    expect(stopIdx).toBeGreaterThan(firstAudio);
    expect(c.frames.indexOf(opening)).toBeGreaterThan(stopIdx);
    // Audio is paced in real time: the opening's ~3 s of audio took about that long to arrive.
    const audioBytes = c.audioBetween(startIdx, stopIdx).length;
    const audioMs = (audioBytes / 2 / RATE) * 1000;
    const spanMs = (c.frames[stopIdx] as Frame).at - (c.frames[firstAudio] as Frame).at;
    expect(audioMs).toBeGreaterThan(1500);
    expect(spanMs).toBeGreaterThan(audioMs - 400);

    let mark = c.frames.length;
    await c.say(await speech(server, 'I would like a pizza please.'));
    const user1 = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 20_000, mark);
    expect(user1.text.toLowerCase()).toContain('pizza');
    const reply1 = await c.agentTurn(mark);
    expect(reply1.text).toBe('Pizza it is. What size would you like, small or large?');

    mark = c.frames.length;
    await c.say(await speech(server, 'I would like the large size, please.'));
    const user2 = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 20_000, mark);
    expect(user2.text.toLowerCase()).toContain('large');
    const reply2 = await c.agentTurn(mark);
    expect(reply2.text).toBe('A large pizza is on its way. Goodbye!');
    const closed = await c.waitFor((f) => f.type === 'session.closed', 10_000, mark);
    expect(closed.reason).toBe('ended');
    await c.closed;
    expect(c.closeCode).toBe(1000);

    // The agent's audio is real speech: recognising it gives back what it said.
    const pcm = c.audioBetween(mark);
    const wav = writeWav(decodeLinear16(pcm), RATE);
    const stt = await server.request('POST', '/waves/v1/stt/?model=pulse&language=en', { raw: wav, headers: { 'content-type': 'audio/wav' } });
    expect(stt.status).toBe(200);
    expect(JSON.stringify(stt.body).toLowerCase()).toContain('pizza');

    const call = await endedCall(server, created.call_id as string);
    expect(call.status).toBe('completed');
    expect(call.endReason).toBe('ended');
    expect(call.type).toBe('webcall');
    expect(call.duration).toBeGreaterThan(3);
    expect(call.transcript.map((t: any) => t.role)).toEqual(['agent', 'user', 'agent', 'user', 'agent']);
    for (const t of call.transcript) expect(Date.parse(t.timestamp)).toBeGreaterThan(0);
    expect(call.variables.call_id).toBe(created.call_id);
    expect(call.variables.conversation_type).toBe('webcall');
    expect(call.turnLatencyMetrics.turns).toBe(2);
    expect(call.turnMetrics).toHaveLength(2);
    for (const m of call.turnMetrics) {
      expect(m.e2eMs).toBeGreaterThan(m.eouDelayMs);
      expect(m.recognitionMs).toBeGreaterThan(0);
      expect(m.ttsFirstByteMs).toBeGreaterThan(0);
      expect(m.engineOverheadMs).toBeGreaterThanOrEqual(0);
    }
    const metrics = await fetch(`${server.base}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/parley_agent_turn_seconds_count\{part="end_to_end",mode="webcall"\} [1-9]/);
  }, 90_000);
});

describe('agent WebSocket: sample rates', () => {
  for (const rate of [8000, 48000]) {
    it(`talks at ${rate} Hz in and out`, async () => {
      const agentId = await createAgent({ workflowType: 'workflow_graph', workflowGraph: GRAPH, firstMessage: 'Pizza or pasta?' });
      const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(rate) }), rate);
      await c.opened;
      expect((await c.waitFor((f) => f.type === 'session.created')).sample_rate).toBe(rate);
      c.startMic();
      await c.agentTurn(0);
      // The opening's audio is at the session rate: about a second of speech, whatever the rate.
      const seconds = c.audioBetween().length / 2 / rate;
      expect(seconds).toBeGreaterThan(0.6);
      expect(seconds).toBeLessThan(3);
      const mark = c.frames.length;
      await c.say(await speech(server, 'Pasta, please.', rate));
      const user = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 20_000, mark);
      expect(user.text.toLowerCase()).toContain('pasta');
      expect((await c.agentTurn(mark)).text).toBe('Pasta is great today. Say goodbye when you are done.');
      c.close();
      await c.closed;
    }, 60_000);
  }
});

describe('agent WebSocket: barge-in', () => {
  it('stops the agent at once when the user talks over it, and stores the cut transcript', async () => {
    const agentId = await createAgent({ workflowType: 'workflow_graph', workflowGraph: GRAPH, firstMessage: LONG_MESSAGE });
    const c = caller(agentId);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    c.startMic();
    await c.waitFor((f) => f.type === 'agent_start_talking');
    await new Promise((r) => setTimeout(r, 2500));
    const mark = c.frames.length;
    await c.say(await speech(server, 'Wait, I want to order a pizza instead.'));
    const interruption = await c.waitFor((f) => f.type === 'interruption', 10_000, mark);
    const cut = await c.waitFor((f) => f.type === 'transcript' && f.role === 'assistant', 5000, c.frames.indexOf(interruption));
    expect(cut.text.length).toBeGreaterThan(10);
    expect(LONG_MESSAGE.startsWith(cut.text)).toBe(true);
    expect(cut.text.length).toBeLessThan(LONG_MESSAGE.length - 40);
    // No audio of the interrupted turn after the interruption: the next audio belongs to the next turn.
    const after = c.frames.slice(c.frames.indexOf(interruption));
    const nextStart = after.findIndex((f) => f.type === 'agent_start_talking');
    const stray = after.slice(0, nextStart < 0 ? after.length : nextStart).filter((f) => f.type === 'output_audio.delta');
    expect(stray).toHaveLength(0);
    // The user's words become the next turn, answered by the graph.
    const user = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 15_000, mark);
    expect(user.text.toLowerCase()).toContain('pizza');
    const reply = await c.agentTurn(c.frames.indexOf(user));
    expect(reply.text).toContain('Pizza it is');
    c.send({ type: 'session.close' });
    const closed = await c.waitFor((f) => f.type === 'session.closed');
    expect(closed.reason).toBe('client_requested');
    await c.closed;

    const call = await endedCall(server, created.call_id as string);
    const agentTurns = call.transcript.filter((t: any) => t.role === 'agent');
    expect(agentTurns[0].interrupted).toBe(true);
    expect(agentTurns[0].content).toBe(cut.text);
    const [record] = call.turnMetrics.length ? (await storeSql(store, 'SELECT metrics FROM calls WHERE call_id = ?', [created.call_id])).map((r) => JSON.parse(r.metrics as string).interruptions) : [[]];
    expect(record).toHaveLength(1);
    // The agent's audio stopped within 100 ms of the barge-in being detected.
    expect(record[0].stopMs).toBeLessThanOrEqual(100);
  }, 90_000);

  it('does not interrupt for a backchannel', async () => {
    const agentId = await createAgent({ workflowType: 'workflow_graph', workflowGraph: GRAPH, firstMessage: LONG_MESSAGE });
    const c = caller(agentId);
    await c.opened;
    c.startMic();
    await c.waitFor((f) => f.type === 'agent_start_talking');
    await new Promise((r) => setTimeout(r, 2500));
    const mark = c.frames.length;
    await c.say(await speech(server, 'Okay.'));
    const done = await c.agentTurn(mark, 40_000);
    expect(done.text).toBe(LONG_MESSAGE);
    expect(c.of('interruption')).toHaveLength(0);
    expect(c.of('transcript', (f) => f.role === 'user')).toHaveLength(0);
    c.close();
    await c.closed;
  }, 90_000);
});

describe('agent WebSocket: idle user, chat mode, tokens', () => {
  it('reprompts a silent user, then ends the call with a reason', async () => {
    const agentId = await createAgent({
      workflowType: 'workflow_graph',
      workflowGraph: GRAPH,
      firstMessage: 'Hello there.',
      llmIdleTimeoutConfig: { webcallTimeoutTimeInSecs: 1, maxRetries: 1 },
    });
    const c = caller(agentId);
    await c.opened;
    c.startMic();
    await c.agentTurn(0);
    const reprompt = await c.agentTurn();
    expect(reprompt.text).toBe('Are you still there?');
    const bye = await c.agentTurn();
    expect(bye.text).toMatch(/end the call/);
    const closed = await c.waitFor((f) => f.type === 'session.closed');
    expect(closed.reason).toBe('idle_timeout');
    await c.closed;
  }, 60_000);

  it('chat mode: text in, text out, no audio; register-call tokens are single use', async () => {
    const agentId = await createAgent({ workflowType: 'workflow_graph', workflowGraph: GRAPH, firstMessage: 'Hi {{name}}! Pizza or pasta?', defaultVariables: { name: 'friend' } });
    const reg = await server.request('POST', `${A}/conversation/register-call`, { body: { agent_id: agentId, mode: 'chat', variables: { name: 'Ada' } } });
    expect(reg.status, reg.text).toBe(201);
    const token = reg.body.data.access_token as string;
    const c = new AgentCaller(connectUrl(server, { token }), 24000);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    expect(created.sample_rate).toBe(24000);
    const opening = await c.agentTurn(0);
    expect(opening.text).toBe('Hi Ada! Pizza or pasta?');
    let mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'pasta please' });
    const reply = await c.agentTurn(mark);
    expect(reply.text).toBe('Pasta is great today. Say goodbye when you are done.');
    mark = c.frames.length;
    c.send({ type: 'input_text.send', text: '' });
    const err = await c.waitFor((f) => f.type === 'error', 5000, mark);
    expect(err.code).toBe('invalid_event');
    c.send({ type: 'bogus' });
    await c.waitFor((f) => f.type === 'error' && /unknown message type/.test(f.message), 5000, mark);
    expect(c.of('output_audio.delta')).toHaveLength(0);

    // The token opened one connection; a second use is refused before the upgrade.
    const again = new AgentCaller(connectUrl(server, { token }), 24000);
    await expect(again.opened).rejects.toThrow('HTTP 401');

    c.send({ type: 'input_text.send', text: 'goodbye' });
    const closed = await c.waitFor((f) => f.type === 'session.closed', 10_000);
    expect(closed.reason).toBe('ended');
    const call = await endedCall(server, created.call_id as string);
    expect(call.mode).toBe('chat');
    expect(call.variables.name).toBe('Ada');
    expect(call.transcript.map((t: any) => t.content)).toEqual(['Hi Ada! Pizza or pasta?', 'pasta please', 'Pasta is great today. Say goodbye when you are done.', 'goodbye', 'Goodbye!']);
  }, 60_000);

  it('refuses bad credentials, unknown agents and bad parameters before the upgrade', async () => {
    const agentId = await createAgent({ workflowType: 'workflow_graph', workflowGraph: GRAPH });
    const refused = async (query: Record<string, string>) => {
      const c = new AgentCaller(connectUrl(server, query), RATE);
      const err = await c.opened.then(() => null, (e: Error) => e.message);
      c.close();
      return err;
    };
    expect(await refused({ agent_id: agentId })).toBe('HTTP 401');
    expect(await refused({ token: 'sk_nope', agent_id: agentId })).toBe('HTTP 401');
    expect(await refused({ token: `wct_00000000-0000-4000-8000-000000000000` })).toBe('HTTP 401');
    expect(await refused({ token: server.key, agent_id: '0123456789abcdef01234567' })).toBe('HTTP 401');
    expect(await refused({ token: server.key })).toBe('HTTP 401');
    expect(await refused({ token: server.key, agent_id: agentId, mode: 'video' })).toBe('HTTP 400');
    expect(await refused({ token: server.key, agent_id: agentId, sample_rate: '11025' })).toBe('HTTP 400');
  });

  it('disconnects a client that stops reading instead of buffering without bound', async () => {
    const graph = { ...GRAPH, nodes: GRAPH.nodes.map((n) => (n.id === 'ask' ? { ...n, text: `${LONG_MESSAGE} ${LONG_MESSAGE} ${LONG_MESSAGE}` } : n)) };
    const agentId = await createAgent({ workflowType: 'workflow_graph', workflowGraph: graph });
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: '48000' }), 48000);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    await c.waitFor((f) => f.type === 'output_audio.delta');
    // Stop reading from the socket: the server's send buffer fills.
    (c.ws as any)._socket.pause();
    await new Promise((r) => setTimeout(r, 12_000));
    (c.ws as any)._socket.resume();
    await c.closed;
    // The server gave up on the stalled socket (its close frame may be lost behind the unread data) and says why.
    const call = await endedCall(server, created.call_id as string);
    expect(call.endReason).toBe('client_too_slow');
    expect(call.status).toBe('completed');
    // What reached the client is bounded: far less than the ~40 s of audio the agent had to say.
    const receivedSeconds = c.audioBetween().length / 2 / 48000;
    expect(receivedSeconds).toBeLessThan(30);
  }, 60_000);
});
