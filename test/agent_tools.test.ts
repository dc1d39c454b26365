// Tools inside calls: a library api_call tool with vault-injected auth reaching a real HTTP server (the secret
// appears nowhere else), and client tools over the agent WebSocket (round trip, filler phrase, timeout).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshStore, startServer, storeSql, type StoreEnv, type TestServer } from './support/server.js';
import { AgentCaller, connectUrl, endedCall } from './support/agent-client.js';
import { OpenAiMock, type MockRequest, type MockReply } from './support/openai-mock.js';

const A = '/atoms/v1';
const CRM_TOKEN = 'crm-secret-token-9f8e7d6c5b4a';

let store: StoreEnv;
let server: TestServer;
let mock: OpenAiMock;
let llmBase: string;
let crm: Server;
let crmBase: string;
const crmRequests: { url: string; headers: Record<string, string | string[] | undefined>; body: string }[] = [];
let script: (req: MockRequest) => MockReply = () => ({ text: 'Hello.' });

const lastMessage = (req: MockRequest) => (req.body.messages ?? []).at(-1) as { role: string; content: string | null; tool_call_id?: string };

async function agentWithTools(toolRefs: string[]): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, {
    body: { name: 'tools', workflowType: 'single_prompt', prompt: 'You help with orders.', toolRefs, model: { provider: 'openai_compatible', baseUrl: llmBase, model: 'm' } },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.data as string;
}

async function tool(definition: Record<string, unknown>): Promise<string> {
  const res = await server.request('POST', `${A}/tool`, { body: { definition } });
  expect(res.status, res.text).toBe(201);
  return res.body.data.toolId as string;
}

beforeAll(async () => {
  crm = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      crmRequests.push({ url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ order: { status: 'shipped', eta: 'Friday' } }));
    });
  });
  await new Promise<void>((r) => crm.listen(0, '127.0.0.1', r));
  crmBase = `http://127.0.0.1:${(crm.address() as AddressInfo).port}`;
  mock = new OpenAiMock({ respond: (req) => script(req) });
  llmBase = await mock.start();
  store = freshStore('sqlite');
  server = await startServer({ store, env: { PARLEY_ALLOW_PRIVATE_EGRESS: '1' } });
  expect((await server.request('POST', `${A}/secret`, { body: { name: 'crm-token', value: CRM_TOKEN } })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await store?.cleanup();
  await mock?.close();
  await new Promise((r) => crm?.close(r));
});

describe('api_call tools in a call', () => {
  it('calls the API with the vault secret injected, feeds the answer to the model, and keeps the secret out of every output', async () => {
    const toolId = await tool({
      type: 'api_call',
      name: 'order_status',
      description: 'Look up the status of an order',
      url: `${crmBase}/orders/{{order_id}}`,
      method: 'GET',
      queryParams: [{ key: 'card', value: '{{card}}' }],
      llmParameters: [{ name: 'order_id', description: 'Order number', type: 'text', required: true }],
      responseVariables: [{ variableName: 'order_eta', jsonPath: '$.order.eta' }],
      auth: { type: 'bearer', token: 'crm-token' },
    });
    const agentId = await agentWithTools([toolId]);
    script = (req) => {
      const last = lastMessage(req);
      if (last.role === 'user') return { toolCalls: [{ name: 'order_status', arguments: '{"order_id":"A-100"}' }] };
      if (last.role === 'tool') return { text: `Your order is ${JSON.parse(last.content ?? '{}').order?.status ?? 'unknown'}.` };
      return { text: 'Sorry?' };
    };
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat', variables: JSON.stringify({ card: 'C9' }) }), 24000);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    const mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'Where is my order A-100?' });
    expect((await c.agentTurn(mark)).text).toBe('Your order is shipped.');
    c.send({ type: 'session.close' });
    await c.closed;

    const hit = crmRequests.at(-1)!;
    expect(hit.url).toBe('/orders/A-100?card=C9');
    expect(hit.headers.authorization).toBe(`Bearer ${CRM_TOKEN}`);
    // The model saw the tool's answer but not the credential; the function it was offered has the parameters.
    const toolMessage = mock.requests.flatMap((r) => r.body.messages ?? []).find((m) => m.role === 'tool');
    expect(String(toolMessage?.content)).toContain('shipped');
    const offered = (mock.requests.find((r) => Array.isArray(r.body.tools))?.body.tools as any[]).find((t) => t.function.name === 'order_status');
    expect(offered.function.parameters).toMatchObject({ properties: { order_id: { type: 'string' } }, required: ['order_id'] });

    const call = await endedCall(server, created.call_id as string);
    expect(call.variables.order_eta).toBe('Friday');
    // The secret appears nowhere but in the request to the API: not in frames, the call record, the store's call
    // and tool rows, the tool read, the model's requests or the server logs.
    const outputs = [
      JSON.stringify(c.frames),
      JSON.stringify(call),
      JSON.stringify(await storeSql(store, 'SELECT * FROM calls')),
      JSON.stringify(await storeSql(store, 'SELECT * FROM tools')),
      JSON.stringify((await server.request('GET', `${A}/tool/${toolId}`)).body),
      JSON.stringify(mock.requests),
      server.logs.join('\n'),
    ];
    for (const out of outputs) expect(out).not.toContain(CRM_TOKEN);
  }, 30_000);
});

describe('client tools over the agent WebSocket', () => {
  it('sends function_call to the app, speaks a filler while waiting, and narrates the function_call.result', async () => {
    const toolId = await tool({ type: 'client_tool', name: 'open_cart', description: 'Show the cart in the app', timeoutMs: 3000, fillerPhrases: ['One moment please.'] });
    const agentId = await agentWithTools([toolId]);
    script = (req) => {
      const last = lastMessage(req);
      if (last.role === 'user') return { toolCalls: [{ name: 'open_cart', arguments: '{"highlight":"shoes"}' }] };
      if (last.role === 'tool') return { text: `The app says: ${last.content}` };
      return { text: '?' };
    };
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat' }), 24000);
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    const mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'Show me my cart' });
    const fc = await c.waitFor((f) => f.type === 'function_call', 10_000, mark);
    expect(fc).toMatchObject({ name: 'open_cart', arguments: '{"highlight":"shoes"}' });
    expect(typeof fc.call_id).toBe('string');
    // The filler is said while the app works.
    await c.waitFor((f) => f.type === 'transcript.delta' && f.role === 'assistant' && f.text.includes('One moment please.'), 5000, mark);
    c.send({ type: 'function_call.result', call_id: 'nope', result: 'x' });
    expect((await c.waitFor((f) => f.type === 'error', 5000, mark)).code).toBe('invalid_event');
    c.send({ type: 'function_call.result', call_id: fc.call_id, result: 'cart opened with 2 items' });
    const reply = await c.agentTurn(mark);
    expect(reply.text).toBe('One moment please. The app says: cart opened with 2 items');
    c.close();
    await c.closed;
  }, 30_000);

  it('fire-and-forget client tools (expectsResponse false) do not wait for the app', async () => {
    const toolId = await tool({ type: 'client_tool', name: 'vibrate', description: 'Vibrate the phone', timeoutMs: 5000, expectsResponse: false });
    const agentId = await agentWithTools([toolId]);
    script = (req) => {
      const last = lastMessage(req);
      if (last.role === 'user') return { toolCalls: [{ name: 'vibrate', arguments: '{}' }] };
      if (last.role === 'tool') return { text: `Done: ${last.content}` };
      return { text: '?' };
    };
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat' }), 24000);
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    const mark = c.frames.length;
    const t0 = Date.now();
    c.send({ type: 'input_text.send', text: 'Buzz me' });
    const fc = await c.waitFor((f) => f.type === 'function_call', 10_000, mark);
    expect(fc.expects_response).toBe(false);
    expect((await c.agentTurn(mark)).text).toBe('Done: {"status":"sent"}');
    // Well under the tool's 5 s timeout: nothing waited for an answer.
    expect(Date.now() - t0).toBeLessThan(2000);
    c.close();
    await c.closed;
  }, 30_000);

  it('recovers verbally when the app does not answer within timeoutMs', async () => {
    const toolId = await tool({ type: 'client_tool', name: 'slow_thing', description: 'Something slow', timeoutMs: 500 });
    const agentId = await agentWithTools([toolId]);
    script = (req) => {
      const last = lastMessage(req);
      if (last.role === 'user') return { toolCalls: [{ name: 'slow_thing', arguments: '{}' }] };
      if (last.role === 'tool') return { text: /did not answer/.test(last.content ?? '') ? 'Sorry, that is taking too long. Anything else?' : 'Done.' };
      return { text: '?' };
    };
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat' }), 24000);
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    const mark = c.frames.length;
    const t0 = Date.now();
    c.send({ type: 'input_text.send', text: 'Do the slow thing' });
    await c.waitFor((f) => f.type === 'function_call', 10_000, mark);
    expect((await c.agentTurn(mark)).text).toBe('Sorry, that is taking too long. Anything else?');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(450);
    c.close();
    await c.closed;
  }, 30_000);
});
