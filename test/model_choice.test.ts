// Model choice (issue 35 item 4): an agent's `slmModel` names one of the operator's OpenAI-compatible models
// (PARLEY_LLM_MODELS, or a file), two stand-in models speaking the real wire answer as configured and the call record
// names the one that did; an agent whose model is not configured ends its call `llm_not_configured` (a log line, a
// publish warning); POST /waves/v1/chat/completions forwards to the default or a named model, streaming or not; the
// models' keys are never in a log line or a response.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freshStore, mediaDialects, startServer, type StoreEnv, type TestServer } from './support/server.js';
import { AgentCaller, connectUrl, endedCall } from './support/agent-client.js';
import { A, mainBranchId, putDraft, publish } from './support/agents.js';
import { OpenAiMock, type MockRequest } from './support/openai-mock.js';

const KEY_A = 'sk-model-a-secret-0001Qv7a';
const KEY_B = 'sk-model-b-secret-0002Wj3b';
const KEY_D = 'sk-default-secret-0003Xk9d';
/** A key model A refuses: its 401 message echoes the key masked (`sk-*****ZZZZ`), which must not reach a client. */
const KEY_WRONG = 'sk-wrong-secret-0004Zq5w';
const SECRETS = [KEY_A, KEY_B, KEY_D, KEY_WRONG, 'Qv7a', 'Wj3b', 'Xk9d', 'Zq5w'];

/** Every stand-in answers with its own words, so a reply says which model wrote it; `fail` scripts an error. */
function mockModel(apiKey: string, words: string): OpenAiMock {
  return new OpenAiMock({
    apiKey,
    respond: (req: MockRequest) => {
      const last = JSON.stringify(req.body.messages?.at(-1) ?? {});
      if (last.includes('please fail')) return { status: 500 };
      return { text: words };
    },
  });
}

const mockA = mockModel(KEY_A, 'Model A answers.');
const mockB = mockModel(KEY_B, 'Model B answers.');
const mockD = mockModel(KEY_D, 'The default model answers.');
let baseA = '';
let baseB = '';
let baseD = '';
const dir = mkdtempSync(path.join(tmpdir(), 'parley-models-'));

beforeAll(async () => {
  [baseA, baseB, baseD] = await Promise.all([mockA.start(), mockB.start(), mockD.start()]);
});

afterAll(async () => {
  await Promise.all([mockA.close(), mockB.close(), mockD.close()]);
  rmSync(dir, { recursive: true, force: true });
});

/** A server started with `env(…)` (the mocks' URLs are known only once they listen). */
function serverWith(dialect: 'sqlite' | 'postgres', env: () => Record<string, string>) {
  let store: StoreEnv | undefined;
  let server: TestServer | undefined;
  beforeAll(async () => {
    store = freshStore(dialect);
    server = await startServer({ store, env: env() });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await store?.cleanup();
  });
  return () => server as TestServer;
}

/** An unversioned single-prompt agent with these configuration fields. */
async function agent(server: TestServer, fields: Record<string, unknown>): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, { body: { name: 'Model choice', workflowType: 'single_prompt', prompt: 'Answer briefly.', ...fields } });
  expect(res.status, res.text).toBe(201);
  return res.body.data as string;
}

/** A text-only call: says `text`, returns the agent's answer, ends the call and returns its record. */
async function chatCall(server: TestServer, agentId: string, text: string): Promise<{ answer: string; record: any }> {
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat' }), 24000);
  await c.opened;
  const created = await c.waitFor((f) => f.type === 'session.created');
  const mark = c.frames.length;
  c.send({ type: 'input_text.send', text });
  const answer = (await c.agentTurn(mark)).text as string;
  c.send({ type: 'session.close' });
  await c.closed;
  return { answer, record: await endedCall(server, created.call_id as string) };
}

/** `POST /waves/v1/chat/completions` with the server's key (or `key`). */
async function complete(server: TestServer, body: unknown, key: string | null = server.key): Promise<Response> {
  return fetch(`${server.base}/waves/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
}

/** Requests a stand-in got for a conversation (streamed; post-call analytics ask without streaming). */
const streamed = (mock: OpenAiMock) => mock.requests.filter((r) => r.body.stream === true);

/** The one JSON log line matching `pattern` (the log arrives in chunks of several lines). */
async function logLine(server: TestServer, pattern: RegExp): Promise<Record<string, unknown>> {
  await server.waitForLog(pattern);
  const line = server.logs.join('\n').split('\n').find((l) => pattern.test(l)) as string;
  return JSON.parse(line) as Record<string, unknown>;
}

/** The `data:` payloads of an SSE body. */
const sseData = (text: string) => text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));

function expectNoSecrets(text: string, where: string): void {
  for (const secret of SECRETS) expect(text.includes(secret), `${where} contains ${secret}`).toBe(false);
}

describe.each(mediaDialects())('named models, no default (%s)', (dialect) => {
  const server = serverWith(dialect, () => ({
    // Publishes wait for their scan (200 committed), so the next publish on the branch is never refused as in progress.
    PARLEY_SCAN_BUDGET_MS: '20000',
    PARLEY_LLM_MODELS: JSON.stringify({
      'gpt-4o': { baseUrl: baseA, model: 'model-a', apiKey: KEY_A },
      electron: { baseUrl: `${baseB}/`, model: 'model-b', apiKey: KEY_B },
      'refused-key': { baseUrl: baseA, model: 'model-a', apiKey: KEY_WRONG },
    }),
  }));

  it("an agent's slmModel chooses the model that answers, and the call record names it; a model block wins over slmModel", async () => {
    const s = server();
    const before = { a: streamed(mockA).length, b: streamed(mockB).length };
    const a = await chatCall(s, await agent(s, { slmModel: 'gpt-4o' }), 'Who is there?');
    expect(a.answer).toBe('Model A answers.');
    expect(a.record).toMatchObject({ slmModelUsed: 'gpt-4o', status: 'completed', endReason: 'client_requested' });
    const asked = streamed(mockA).slice(before.a);
    expect(asked).toHaveLength(1);
    expect(asked[0]?.body.model).toBe('model-a');
    expect(asked[0]?.headers.authorization).toBe(`Bearer ${KEY_A}`);
    expect(streamed(mockB).length).toBe(before.b);

    const b = await chatCall(s, await agent(s, { slmModel: 'electron' }), 'Who is there?');
    expect(b.answer).toBe('Model B answers.');
    expect(b.record.slmModelUsed).toBe('electron');
    expect(streamed(mockB).at(-1)?.body.model).toBe('model-b');
    expect(streamed(mockB).at(-1)?.headers.authorization).toBe(`Bearer ${KEY_B}`);

    // The agent's own model block (an endpoint it names itself) is used before its slmModel.
    expect((await s.request('POST', `${A}/secret`, { body: { name: 'block-key', value: KEY_B } })).status).toBe(201);
    const requestsA = streamed(mockA).length;
    const block = await chatCall(s, await agent(s, { slmModel: 'gpt-4o', model: { provider: 'openai_compatible', baseUrl: baseB, model: 'block-model', apiKeySecret: 'block-key' } }), 'Who is there?');
    expect(block.answer).toBe('Model B answers.');
    expect(block.record.slmModelUsed).toBe('block-model');
    expect(streamed(mockB).at(-1)?.body.model).toBe('block-model');
    expect(streamed(mockA).length).toBe(requestsA);
    expectNoSecrets(JSON.stringify([a.record, b.record, block.record]), 'call records');
  }, 60_000);

  it('an slmModel no configured model answers: publish warns, the call apologises and ends llm_not_configured, a log line says why', async () => {
    const s = server();
    const agentId = await agent(s, { slmModel: 'gpt-4.1' });
    const main = await mainBranchId(s, agentId);
    expect((await putDraft(s, agentId, main, { prompt: 'Answer in one sentence.' })).status).toBe(200);
    const published = await publish(s, agentId, main);
    expect(published.status, published.text).toBe(200);
    expect(published.body.data.state).toBe('committed');
    expect(published.body.data.warnings).toEqual([expect.stringContaining('slmModel "gpt-4.1" is not configured on this server')]);
    expect(published.body.data.warnings[0]).toContain('llm_not_configured');
    expect(published.body.data.warnings[0]).toContain('"gpt-4o"');
    expectNoSecrets(published.text, 'the publish answer');

    const c = new AgentCaller(connectUrl(s, { token: s.key, agent_id: agentId, mode: 'chat' }), 24000);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    const mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'Hello?' });
    const err = await c.waitFor((f) => f.type === 'error', 10_000, mark);
    expect(err.code).toBe('llm_not_configured');
    expect(err.message).toContain('slmModel "gpt-4.1" is not configured');
    expect((await c.agentTurn(mark)).text).toMatch(/can't answer/);
    expect((await c.waitFor((f) => f.type === 'session.closed', 10_000, mark)).reason).toBe('llm_not_configured');
    await c.closed;
    const record = await endedCall(s, created.call_id as string);
    expect(record).toMatchObject({ status: 'failed', endReason: 'llm_not_configured', callFailureReason: 'llm_not_configured', slmModelUsed: null });
    expect(await logLine(s, new RegExp(`"level":40.*"callId":"${created.call_id}".*"code":"llm_not_configured"`))).toMatchObject({ agentId, slmModel: 'gpt-4.1', reason: expect.stringContaining('slmModel "gpt-4.1" is not configured') });

    // A configured slmModel publishes without warnings.
    expect((await putDraft(s, agentId, main, { slmModel: 'gpt-4o' })).status).toBe(200);
    const clean = await publish(s, agentId, main);
    expect(clean.status, clean.text).toBe(200);
    expect(clean.body.data.warnings).toBeUndefined();
  }, 60_000);

  it('chat completions: a named model, whole and streamed (its chunks passed through), refusals in OpenAI\'s error shape', async () => {
    const s = server();
    const whole = await complete(s, { model: 'electron', messages: [{ role: 'user', content: 'Hi' }], temperature: 0.2 });
    expect(whole.status).toBe(200);
    expect(whole.headers.get('x-parley-model')).toBe('electron');
    const body = (await whole.json()) as any;
    expect(body).toMatchObject({ object: 'chat.completion', choices: [{ message: { role: 'assistant', content: 'Model B answers.' }, finish_reason: 'stop' }] });
    const sent = mockB.requests.at(-1) as MockRequest;
    expect(sent.body).toMatchObject({ model: 'model-b', messages: [{ role: 'user', content: 'Hi' }], temperature: 0.2 });
    expect(sent.headers.authorization).toBe(`Bearer ${KEY_B}`);

    const streamed = await complete(s, { model: 'gpt-4o', stream: true, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toBe('text/event-stream');
    const events = sseData(await streamed.text());
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) expect(chunk).toMatchObject({ object: 'chat.completion.chunk', model: 'model-a', choices: [expect.any(Object)] });
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('Model A answers.');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');

    // No model named and no default; a name not configured: 404 model_not_found. Bad bodies, no key.
    const unnamed = await complete(s, { messages: [{ role: 'user', content: 'Hi' }] });
    expect(unnamed.status).toBe(404);
    expect(await unnamed.json()).toEqual({ error: { message: expect.stringContaining('is not configured'), type: 'invalid_request_error', param: null, code: 'model_not_found' } });
    expect((await complete(s, { model: 'gpt-5.2', messages: [{ role: 'user', content: 'Hi' }] })).status).toBe(404);
    const empty = await complete(s, {});
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as any).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('messages') });
    const badRole = await complete(s, { messages: [{ role: 'robot', content: 'Hi' }] });
    expect(badRole.status).toBe(400);
    // An access token works as on the other inference routes.
    const token = await s.request('POST', '/waves/v1/auth/token', { body: {} });
    expect(token.status, token.text).toBe(201);
    expect((await complete(s, { model: 'electron', messages: [{ role: 'user', content: 'Hi' }] }, token.body.access_token as string)).status).toBe(200);
    const noKey = await complete(s, { messages: [{ role: 'user', content: 'Hi' }] }, null);
    expect(noKey.status).toBe(401);
    expect(((await noKey.json()) as any).error).toMatchObject({ type: 'authentication_error' });

    // The model failing: 502 without its body (model A refusing our key echoes it masked), in a stream too.
    const refused = await complete(s, { model: 'refused-key', messages: [{ role: 'user', content: 'Hi' }] });
    expect(refused.status).toBe(502);
    const refusedText = await refused.text();
    expect(JSON.parse(refusedText)).toEqual({ error: { message: 'The model "refused-key" answered HTTP 401', type: 'server_error', param: null, code: 'upstream_error' } });
    expectNoSecrets(refusedText, 'the refusal');
    const failing = await complete(s, { model: 'electron', stream: true, messages: [{ role: 'user', content: 'please fail' }] });
    expect(failing.status).toBe(502);
    expect(((await failing.json()) as any).error.code).toBe('upstream_error');
  }, 60_000);

  it('keys are in no log line, no answer and not in /openapi.json', async () => {
    const s = server();
    expectNoSecrets(s.logs.join('\n'), 'the server log');
    expect(await logLine(s, /"msg":"language models"/)).toMatchObject({ models: [{ name: 'gpt-4o', model: 'model-a' }, { name: 'electron', model: 'model-b' }, { name: 'refused-key' }], default: null });
    expectNoSecrets(await (await fetch(`${s.base}/openapi.json`)).text(), '/openapi.json');
    const agents = await s.request('GET', `${A}/agent?limit=100`);
    expectNoSecrets(agents.text, 'the agent list');
  });
});

describe.each(mediaDialects())('models from a file, with a default (%s)', (dialect) => {
  const file = path.join(dir, 'models.json');
  const server = serverWith(dialect, () => {
    writeFileSync(file, JSON.stringify({ 'gpt-4.1': { baseUrl: baseA, model: 'model-a41', apiKey: KEY_A } }));
    return { PARLEY_LLM_MODELS_FILE: file, PARLEY_LLM_BASE_URL: baseD, PARLEY_LLM_MODEL: 'model-default', PARLEY_LLM_API_KEY: KEY_D };
  });

  it('chat completions without a model (or with the SDK default "electron", not configured here) go to the default; a named one to its model', async () => {
    const s = server();
    for (const body of [{ messages: [{ role: 'user', content: 'Hi' }] }, { model: 'electron', messages: [{ role: 'user', content: 'Hi' }], stream: true }]) {
      const res = await complete(s, body);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-parley-model')).toBe('model-default');
      const text = await res.text();
      const content = body.stream ? sseData(text).slice(0, -1).map((e) => JSON.parse(e).choices[0].delta.content ?? '').join('') : JSON.parse(text).choices[0].message.content;
      expect(content).toBe('The default model answers.');
      expect(mockD.requests.at(-1)?.body.model).toBe('model-default');
      expect(mockD.requests.at(-1)?.body.stream).toBe(body.stream);
      expect(mockD.requests.at(-1)?.headers.authorization).toBe(`Bearer ${KEY_D}`);
    }
    const named = await complete(s, { model: 'gpt-4.1', messages: [{ role: 'user', content: 'Hi' }] });
    expect(((await named.json()) as any).choices[0].message.content).toBe('Model A answers.');
    expect(mockA.requests.at(-1)?.body.model).toBe('model-a41');
  });

  it('an agent whose slmModel is not configured falls back to the default (recorded as its model id); publish says so', async () => {
    const s = server();
    const agentId = await agent(s, { slmModel: 'gpt-4o' });
    const call = await chatCall(s, agentId, 'Hello?');
    expect(call.answer).toBe('The default model answers.');
    expect(call.record.slmModelUsed).toBe('model-default');
    const named = await chatCall(s, await agent(s, { slmModel: 'gpt-4.1' }), 'Hello?');
    expect(named.answer).toBe('Model A answers.');
    expect(named.record.slmModelUsed).toBe('gpt-4.1');

    const main = await mainBranchId(s, agentId);
    expect((await putDraft(s, agentId, main, { prompt: 'Answer briefly, please.' })).status).toBe(200);
    const published = await publish(s, agentId, main);
    expect(published.body.data.warnings).toEqual(['slmModel "gpt-4o" is not one of the configured models (gpt-4.1): calls use the server default model (model-default)']);
    expectNoSecrets(s.logs.join('\n'), 'the server log');
    expect(s.logs.join('\n')).toContain(`"file":"${file}"`);
  }, 60_000);
});
