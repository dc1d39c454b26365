// Single-prompt agents over the agent WebSocket against a local server speaking the OpenAI streaming protocol;
// test calls of a draft during a config freeze; the demo workflow agent template.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { freshStore, startServer, type StoreEnv, type TestServer } from './support/server.js';
import { AgentCaller, connectUrl, endedCall, speech } from './support/agent-client.js';
import { mainBranchId } from './support/agents.js';
import { OpenAiMock, textPieces, type MockRequest, type MockReply } from './support/openai-mock.js';

const A = '/atoms/v1';
const RATE = 16000;
const LLM_KEY = 'sk-llm-test-secret-123456';
const LONG_ANSWER =
  'We are open from nine in the morning until six in the evening, Monday to Friday. On Saturdays we open at ten and close at two. ' +
  'We are closed on Sundays.';

let store: StoreEnv;
let server: TestServer;
let mock: OpenAiMock;
let llmBase: string;
let script: (req: MockRequest) => MockReply = () => ({ text: 'Hello.' });

async function singlePromptAgent(extra: Record<string, unknown> = {}): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, {
    body: {
      name: 'front desk',
      workflowType: 'single_prompt',
      prompt: 'You are the front desk of {{clinic}}. Today is {{current_day}}.',
      defaultVariables: { clinic: 'Bright Smile' },
      model: { provider: 'openai_compatible', baseUrl: llmBase, model: 'test-model', apiKeySecret: 'llm-key' },
      ...extra,
    },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.data as string;
}

beforeAll(async () => {
  mock = new OpenAiMock({ apiKey: LLM_KEY, respond: (req) => script(req) });
  llmBase = await mock.start();
  store = freshStore('sqlite');
  server = await startServer({ store, env: { PARLEY_WARM_MODELS: 'true' } });
  const secret = await server.request('POST', `${A}/secret`, { body: { name: 'llm-key', value: LLM_KEY } });
  expect(secret.status, secret.text).toBe(201);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await store?.cleanup();
  await mock?.close();
});

describe('single-prompt agent over the agent WebSocket', () => {
  it('answers speech with the streamed model reply, starting to speak before the model has finished', async () => {
    // The model holds its last words back until the caller hears the agent: speaking must begin while it streams.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    onTestFinished(() => release());
    script = (req) => {
      const last = (req.body.messages ?? []).at(-1) as { role: string; content: string };
      return last.role === 'user' && /hours|open/i.test(last.content) ? { text: LONG_ANSWER, chunkDelayMs: 40, holdLastPiece: held } : { text: 'Sorry?' };
    };
    const agentId = await singlePromptAgent({ firstMessage: 'Hi, this is {{clinic}}.' });
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(RATE) }), RATE);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    c.startMic();
    expect((await c.agentTurn(0)).text).toBe('Hi, this is Bright Smile.');
    const mark = c.frames.length;
    const requestsBefore = mock.requests.length;
    await c.say(await speech(server, 'What are your opening hours?'));
    const user = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 20_000, mark);
    expect(user.text.toLowerCase()).toContain('hours');
    // Speaking began while the model was still streaming (its last piece waits for this).
    await c.waitFor((f) => f.type === 'agent_start_talking', 40_000, mark);
    const streamed = (mock.chunkTimes[requestsBefore] as number[]).length;
    expect(streamed).toBeLessThan(textPieces(LONG_ANSWER).length + 1);
    release();
    const reply = await c.agentTurn(mark, 40_000);
    expect(reply.text).toBe(LONG_ANSWER);

    // The model request: system prompt rendered with variables, the history, the user's recognised words, the key.
    const req = mock.requests[requestsBefore] as MockRequest;
    expect(req.headers.authorization).toBe(`Bearer ${LLM_KEY}`);
    const messages = req.body.messages as { role: string; content: string }[];
    expect(messages[0]?.role).toBe('system');
    expect(messages[0]?.content).toMatch(/^You are the front desk of Bright Smile\. Today is [A-Z][a-z]+day\.$/);
    expect(messages.at(-2)).toMatchObject({ role: 'assistant', content: 'Hi, this is Bright Smile.' });
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: user.text });
    expect(req.body.stream).toBe(true);

    c.send({ type: 'session.close' });
    await c.closed;
    const call = await endedCall(server, created.call_id as string);
    // The model that answered (the model block's), not the configured hosted name (slmModel 'electron').
    expect(call.slmModelUsed).toBe('test-model');
    expect(JSON.stringify(call)).not.toContain(LLM_KEY);
    const m = call.turnMetrics[0];
    expect(m.brainFirstTokenMs).toBeGreaterThan(0);
    expect(m.brainFirstPhraseMs).toBeGreaterThanOrEqual(m.brainFirstTokenMs);
  }, 90_000);

  it('turns tool calls into function calls: an end-call tool ends the call; a function the agent does not have gets a spoken fallback and an error', async () => {
    script = (req) => {
      const messages = req.body.messages as { role: string; content: string | null }[];
      const last = messages.at(-1) as { role: string; content: string };
      if (last.role === 'user' && /order/i.test(last.content)) return { toolCalls: [{ name: 'lookup_order', arguments: '{"query":"order 12345"}' }], chunkDelayMs: 5 };
      if (last.role === 'user' && /bye/i.test(last.content)) return { text: 'Goodbye!', toolCalls: [{ name: 'hang_up', arguments: '{}' }] };
      return { text: 'How can I help?' };
    };
    // The model calls lookup_order, which the agent does not have (models do invent functions): the agent falls back.
    const agentId = await singlePromptAgent({ tools: [{ type: 'end_call', name: 'hang_up', description: 'End the call when the caller says goodbye' }] });
    const reg = await server.request('POST', `${A}/conversation/register-call`, { body: { agent_id: agentId, mode: 'chat' } });
    const c = new AgentCaller(connectUrl(server, { token: reg.body.data.access_token }), 24000);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    let mark = c.frames.length;
    const before = mock.requests.length;
    c.send({ type: 'input_text.send', text: 'Where is my order 12345?' });
    const err = await c.waitFor((f) => f.type === 'error', 10_000, mark);
    expect(err.code).toBe('tool_unavailable');
    expect(err.message).toContain('lookup_order');
    const fallback = await c.agentTurn(mark);
    expect(fallback.text).toBe("Sorry, I can't do that right now.");
    // The model was offered the agent's tool as a function with JSON-schema parameters, and nothing else.
    const tools = mock.requests[before]?.body.tools as { type: string; function: { name: string; parameters: any } }[];
    expect(tools.map((t) => t.function.name)).toEqual(['hang_up']);
    expect(tools[0]?.function.parameters).toMatchObject({ type: 'object' });

    mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'Thanks, bye.' });
    expect((await c.agentTurn(mark)).text).toBe('Goodbye!');
    const closed = await c.waitFor((f) => f.type === 'session.closed', 10_000, mark);
    expect(closed.reason).toBe('ended');
    const call = await endedCall(server, created.call_id as string);
    expect(call.transcript.map((t: any) => t.content)).toEqual(['Where is my order 12345?', "Sorry, I can't do that right now.", 'Thanks, bye.', 'Goodbye!']);
  }, 60_000);

  it('speaks a clear fallback and reports an error when the model endpoint fails', async () => {
    script = () => ({ status: 500 });
    const agentId = await singlePromptAgent();
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat' }), 24000);
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    const mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'Hello?' });
    const err = await c.waitFor((f) => f.type === 'error', 10_000, mark);
    expect(err.code).toBe('llm_unavailable');
    expect(err.message).not.toContain(LLM_KEY);
    expect((await c.agentTurn(mark)).text).toMatch(/trouble/);
    c.close();
    await c.closed;
  }, 30_000);
});

describe('post-call analytics by the language model', () => {
  it('asks the agent model for the summary and the configured metrics once the call ends', async () => {
    script = (req) => {
      if (req.body.stream === false) {
        return { text: '{"summary":"The caller asked about opening hours.","metrics":{"topic":{"value":"hours","confidence":0.9,"reasoning":"They asked when we open."}}}' };
      }
      return { text: 'We open at nine.' };
    };
    const agentId = await singlePromptAgent({
      postCallAnalyticsConfig: { dispositionMetrics: [{ identifier: 'topic', dispositionMetricPrompt: 'What was the call about?', dispositionMetricType: 'STRING' }] },
      callDispositionConfig: 'A call about opening hours is resolved when the caller heard the hours.',
    });
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat' }), 24000);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    const mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'When do you open?' });
    expect((await c.agentTurn(mark)).text).toBe('We open at nine.');
    c.send({ type: 'session.close' });
    await c.closed;
    let analytics: any = null;
    for (let i = 0; i < 50 && !analytics; i++) {
      analytics = (await server.request('GET', `${A}/conversation/${created.call_id}`)).body.data.postCallAnalytics;
      if (!analytics) await new Promise((r) => setTimeout(r, 100));
    }
    expect(analytics.method).toBe('llm');
    expect(analytics.summary).toBe('The caller asked about opening hours.');
    expect(analytics.dispositionMetrics[0]).toMatchObject({ identifier: 'topic', value: 'hours', confidence: 0.9, dispositionMetricType: 'STRING' });
    const request = mock.requests.filter((r) => r.body.stream === false).at(-1);
    expect(JSON.stringify(request?.body.messages)).toContain('Caller: When do you open?');
    expect(String(request?.body.messages?.[0]?.content)).toContain("How to judge the call's disposition (the agent's callDispositionConfig): A call about opening hours is resolved when the caller heard the hours.");
  }, 30_000);
});

describe('test calls and the demo agent', () => {
  it('a test call runs the branch draft through the same runtime during a config freeze', async () => {
    const created = await server.request('POST', `${A}/agent`, { body: { name: 'freeze', workflowType: 'workflow_graph', workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Live hello.' }], edges: [] } } });
    const agentId = created.body.data as string;
    const main = await mainBranchId(server, agentId);
    const draft = await server.request('PUT', `${A}/agent/${agentId}/branches/${main}/draft`, {
      body: { workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Draft hello.' }, { id: 'b', type: 'end_call', text: 'Draft goodbye.' }], edges: [{ from: 'a', to: 'b', condition: { type: 'any' } }] } },
    });
    expect(draft.status, draft.text).toBe(200);
    expect((await server.request('POST', `${A}/agent/${agentId}/config-freeze`, { body: { reason: 'release' } })).status).toBe(200);
    expect((await server.request('PUT', `${A}/agent/${agentId}/branches/${main}/draft`, { body: { firstMessage: 'x' } })).status).toBe(423);

    const tc = await server.request('POST', `${A}/agent/${agentId}/branches/${main}/test-call`, { body: { target: 'draft', mode: 'chat' } });
    expect(tc.status, tc.text).toBe(200);
    const c = new AgentCaller(connectUrl(server, { token: tc.body.data.access_token }), 24000);
    await c.opened;
    const session = await c.waitFor((f) => f.type === 'session.created');
    expect((await c.agentTurn(0)).text).toBe('Draft hello.');
    const mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'anything' });
    expect((await c.agentTurn(mark)).text).toBe('Draft goodbye.');
    await c.closed;
    const call = await endedCall(server, session.call_id as string);
    expect(call.isTest).toBe(true);
    expect(call.configSource).toBe('draft');
  }, 30_000);

  it('ships a demo workflow agent that holds a spoken conversation offline', async () => {
    const res = await server.request('POST', `${A}/agent/from-template`, { body: { templateId: 'parley-demo' } });
    expect(res.status, res.text).toBe(201);
    const agentId = res.body.data as string;
    const agent = await server.request('GET', `${A}/agent/${agentId}`);
    expect(agent.body.data.workflowType).toBe('workflow_graph');
    expect((await server.request('POST', `${A}/agent/from-template`, { body: { templateId: 'nope' } })).status).toBe(400);

    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(RATE) }), RATE);
    await c.opened;
    c.startMic();
    const opening = await c.agentTurn(0);
    expect(opening.text.length).toBeGreaterThan(10);
    const mark = c.frames.length;
    await c.say(await speech(server, 'I would like to book an appointment.'));
    const reply = await c.agentTurn(mark, 30_000);
    expect(reply.text.toLowerCase()).toContain('name');
    c.close();
    await c.closed;
  }, 60_000);
});
