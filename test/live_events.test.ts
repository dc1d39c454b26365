// Live call events (issue 35 item 5): `GET /events?callId=` streams a running call's events as server-sent events in
// the hosted reference's shape, from `sse_init` to `sse_close` when the call ends (a chat call, and a spoken web call
// with its speech turn and latency figures); refusals as the conversation routes
// answer them; on PostgreSQL a subscriber on a second server sharing the store gets the events of a call on the first
// (LISTEN/NOTIFY, and Redis pub/sub when PARLEY_REDIS_URL is set).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrgKey, freshStore, startServer, testDialects, type StoreEnv, type TestServer } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { AgentCaller, connectUrl, endedCall, speech } from './support/agent-client.js';
import { OpenAiMock, type MockRequest, type MockReply } from './support/openai-mock.js';
import { SseReader } from './support/sse-client.js';

const A = '/atoms/v1';

function respond(req: MockRequest): MockReply {
  if (!Array.isArray(req.body.tools) && !req.body.stream) return { text: '{}' };
  const last = (req.body.messages as { role: string; content: string | null }[]).at(-1)!;
  return { text: `You said ${String(last.content ?? '').toLowerCase().replace(/[^a-z ]/g, '')}.` };
}

async function agentOn(server: TestServer, llmBase: string): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, {
    body: { name: 'Echo', workflowType: 'single_prompt', prompt: 'Repeat what you hear.', model: { provider: 'openai_compatible', baseUrl: llmBase, model: 'test-model' } },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.data as string;
}

async function chatSession(server: TestServer, agentId: string): Promise<{ c: AgentCaller; callId: string }> {
  const reg = await server.request('POST', `${A}/conversation/register-call`, { body: { agent_id: agentId, mode: 'chat' } });
  expect(reg.status, reg.text).toBeLessThan(300);
  const c = new AgentCaller(connectUrl(server, { token: reg.body.data.access_token }), 24000);
  await c.opened;
  const created = await c.waitFor((f) => f.type === 'session.created');
  const callId = created.call_id as string;
  // session.created names the call as its record is being written: until then the call is unknown (404).
  for (let i = 0; (await server.request('GET', `${A}/conversation/${callId}`)).status !== 200; i++) {
    if (i > 100) throw new Error(`call ${callId} has no record`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { c, callId };
}

/** A chat call on `caller`, followed from `watcher`: the transcript both ways, the turn events, the end. */
async function followCall(caller: TestServer, watcher: TestServer, agentId: string): Promise<void> {
  const { c, callId } = await chatSession(caller, agentId);
  // The key of the caller's server (the second server of a pair was started with the first's as its bootstrap key).
  const sse = new SseReader(`${watcher.base}${A}/events?callId=${callId}`, caller.key);
  const init = await sse.waitFor('sse_init').catch((err: Error) => {
    throw new Error(`${err.message} (status ${sse.status})`);
  });
  expect(sse.status).toBe(200);
  expect(init).toMatchObject({ call_id: callId, status: 'in_progress' });
  expect(typeof init.event_id).toBe('string');
  expect(Number.isNaN(Date.parse(init.timestamp))).toBe(false);
  const mark = c.frames.length;
  c.send({ type: 'input_text.send', text: 'Hello live world' });
  const turn = await c.agentTurn(mark, 20_000);
  expect(turn.text).toBe('You said hello live world.');
  const user = await sse.waitFor('user_transcription');
  expect(user).toMatchObject({ call_id: callId, user_transcription_text: 'Hello live world', turn_index: 1 });
  const spoken = await sse.waitFor('tts_completed');
  expect(spoken.tts_text).toBe('You said hello live world.');
  await sse.waitFor('agent_turn_end');
  c.send({ type: 'session.close' });
  await c.closed;
  await sse.done;
  const types = sse.events.map((e) => e.event_type);
  expect(types[0]).toBe('sse_init');
  expect(types.at(-1)).toBe('sse_close');
  expect(types.at(-2)).toBe('call_end');
  expect(types).toContain('user_interim_transcription');
  expect(types).toContain('agent_turn_start');
  expect(types.indexOf('user_transcription')).toBeLessThan(types.indexOf('tts_completed'));
  expect(sse.events.at(-2)).toMatchObject({ status: 'completed', metadata: { endReason: 'client_requested' } });
  expect(sse.events.at(-1).metadata.reason).toBe('call_ended');
  // Once ended, the call can no longer be subscribed to.
  await endedCall(caller, callId);
  const late = await watcher.request('GET', `${A}/events?callId=${callId}`, { key: caller.key });
  expect(late.status).toBe(400);
}

for (const dialect of testDialects()) {
  describe(`live call events (${dialect})`, () => {
    const suite = serverForSuite(dialect, { PARLEY_SIP_PORT: 'off' });
    let mock: OpenAiMock;
    let llmBase: string;

    beforeAll(async () => {
      mock = new OpenAiMock({ respond });
      llmBase = await mock.start();
    });
    afterAll(async () => {
      await mock?.close();
    });

    it('streams a chat call from sse_init to sse_close: the transcript, the turns, the end', async () => {
      const agentId = await agentOn(suite.server, llmBase);
      await followCall(suite.server, suite.server, agentId);
    });

    it.runIf(dialect === 'sqlite')('streams a spoken web call: the caller\'s speech turn, what was heard, the turn latency, the spoken reply', async () => {
      const { server } = suite;
      const agentId = await agentOn(server, llmBase);
      const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: '16000' }), 16000);
      await c.opened;
      const callId = (await c.waitFor((f) => f.type === 'session.created')).call_id as string;
      for (let i = 0; (await server.request('GET', `${A}/conversation/${callId}`)).status !== 200; i++) {
        if (i > 100) throw new Error(`call ${callId} has no record`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const sse = new SseReader(`${server.base}${A}/events?callId=${callId}`, server.key);
      await sse.waitFor('sse_init');
      c.startMic();
      const mark = c.frames.length;
      await c.say(await speech(server, 'Please book a table for two.'));
      const heard = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 30_000, mark);
      const reply = await c.agentTurn(mark, 40_000);
      expect(reply.text).toBe(`You said ${String(heard.text).toLowerCase().replace(/[^a-z ]/g, '')}.`);
      // The events of the spoken turn, in order: the caller's speech began and stopped, what was heard, the agent's
      // turn with its words, and the turn's latency figures (measured, so positive).
      const start = await sse.waitFor('user_turn_start');
      const user = await sse.waitFor('user_transcription');
      expect(user).toMatchObject({ call_id: callId, user_transcription_text: heard.text, turn_index: 1 });
      expect((await sse.waitFor('tts_completed')).tts_text).toBe(reply.text);
      const latency = await sse.waitFor('turn_latency');
      expect(latency.turn_index).toBe(1);
      for (const k of ['turn_latency', 'stt_api_ms', 'tts_api_ms', 'llm_api_ms']) expect(latency[k], `${k} in ${JSON.stringify(latency)}`).toBeGreaterThan(0);
      const types = sse.events.map((e) => e.event_type);
      expect(types.indexOf('user_turn_start')).toBeLessThan(types.indexOf('user_turn_end'));
      expect(types.indexOf('user_turn_end')).toBeLessThan(types.indexOf('user_transcription'));
      expect(types.indexOf('user_transcription')).toBeLessThan(types.lastIndexOf('agent_turn_start'));
      expect(start.turn_index).toBe(1);
      c.send({ type: 'session.close' });
      await c.closed;
      await sse.done;
      expect(sse.events.at(-2)).toMatchObject({ event_type: 'call_end', status: 'completed' });
    }, 90_000);

    it("refuses without callId (400), an unknown call (404), another organization's call (403), no key (401)", async () => {
      const { server } = suite;
      const agentId = await agentOn(server, llmBase);
      expect((await server.request('GET', `${A}/events`)).status).toBe(400);
      expect((await server.request('GET', `${A}/events?callId=CALL-0-none`)).status).toBe(404);
      expect((await server.request('GET', `${A}/events?callId=CALL-0-none`, { key: null })).status).toBe(401);
      const { c, callId } = await chatSession(server, agentId);
      const other = await createOrgKey(suite.store, `live-${dialect}`, `org-live-${dialect}`);
      const foreign = await server.request('GET', `${A}/events?callId=${callId}`, { key: other });
      expect(foreign.status, foreign.text).toBe(403);
      expect(foreign.body.status).toBe(false);
      c.send({ type: 'session.close' });
      await c.closed;
    });
  });
}

const pgOnly = testDialects().includes('postgres');

for (const bus of ['postgres', 'redis'] as const) {
  describe.runIf(pgOnly)(`live call events across servers (PostgreSQL store, ${bus === 'redis' ? 'Redis pub/sub' : 'LISTEN/NOTIFY'})`, () => {
    let store: StoreEnv;
    let first: TestServer;
    let second: TestServer;
    let mock: OpenAiMock;
    let llmBase: string;
    const env: Record<string, string> = { PARLEY_SIP_PORT: 'off', ...(bus === 'redis' ? { PARLEY_REDIS_URL: 'redis://127.0.0.1:6379' } : {}) };

    beforeAll(async () => {
      mock = new OpenAiMock({ respond });
      llmBase = await mock.start();
      store = freshStore('postgres');
      first = await startServer({ store, env });
      second = await startServer({ store, env: { ...env, PARLEY_BOOTSTRAP_KEY: first.key } });
    }, 60_000);
    afterAll(async () => {
      await second?.stop();
      await first?.stop();
      await store?.cleanup();
      await mock?.close();
    });

    it('a subscriber on the second server gets the events of a call on the first, to its end', async () => {
      await first.waitForLog(new RegExp(`"transport":"${bus}"`));
      const agentId = await agentOn(first, llmBase);
      await followCall(first, second, agentId);
    });
  });
}
