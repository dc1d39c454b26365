// The agent's pre-call API against the real server and a real local HTTP server standing for the customer's CRM: the
// request (method, templated URL, query, headers, body, vault credentials), its responseVariables in the first thing
// the agent says and in the record; a failure or timeout leaves the defaults and the record says why; a disabled one
// is not called; bad configurations are 400 naming the field.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshStore, startServer, storeSql, type StoreEnv, type TestServer } from './support/server.js';
import { AgentCaller, connectUrl, endedCall } from './support/agent-client.js';

const A = '/atoms/v1';
const CRM_TOKEN = 'crm-precall-secret-5d4c3b2a19';

let store: StoreEnv;
let server: TestServer;
let crm: Server;
let crmBase: string;
const crmRequests: { method: string; url: string; headers: Record<string, string | string[] | undefined>; body: string }[] = [];

beforeAll(async () => {
  crm = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      crmRequests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (req.url?.startsWith('/slow')) return; // never answers
      if (req.url?.startsWith('/down')) return void res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"maintenance"}');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ customer: { first: 'Ada', tier: 'gold' }, echo: req.headers.authorization }));
    });
  });
  await new Promise<void>((r) => crm.listen(0, '127.0.0.1', r));
  crmBase = `http://127.0.0.1:${(crm.address() as AddressInfo).port}`;
  store = freshStore('sqlite');
  server = await startServer({ store, env: { PARLEY_ALLOW_PRIVATE_EGRESS: '1' } });
  expect((await server.request('POST', `${A}/secret`, { body: { name: 'crm-token', value: CRM_TOKEN } })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await store?.cleanup();
  crm?.closeAllConnections();
  await new Promise((r) => crm?.close(r));
});

async function agent(preCallAPI: Record<string, unknown>): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, {
    body: {
      name: 'pre-call',
      workflowType: 'workflow_graph',
      workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Hello {{customer_name}}, you are on the {{plan}} plan.' }], edges: [] },
      defaultVariables: { customer_name: 'there', plan: 'basic' },
      preCallAPI,
    },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.data as string;
}

/** A chat call with per-call variables: the agent's first words and the finished record. */
async function firstWords(agentId: string, variables: Record<string, string> = {}): Promise<{ text: string; call: any; frames: string; ms: number }> {
  const started = Date.now();
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat', variables: JSON.stringify(variables) }), 24000);
  await c.opened;
  const created = await c.waitFor((f) => f.type === 'session.created');
  const turn = await c.agentTurn(0);
  const ms = Date.now() - started;
  c.send({ type: 'session.close' });
  await c.closed;
  return { text: turn.text as string, call: await endedCall(server, created.call_id as string), frames: JSON.stringify(c.frames), ms };
}

describe('pre-call API', () => {
  it('calls the endpoint before the agent speaks (templated URL, query, headers, body, vault bearer) and its responseVariables fill the call', async () => {
    const agentId = await agent({
      isEnabled: true,
      url: `${crmBase}/customers/{{account}}`,
      method: 'POST',
      headers: { 'x-call': '{{call_id}}' },
      queryParams: { v: 2 },
      body: { account: '{{account}}', source: 'parley' },
      timeout: 5,
      responseVariables: [
        { variableName: 'customer_name', jsonPath: '$.customer.first' },
        { variableName: 'plan', jsonPath: '$.customer.tier' },
      ],
      auth: { type: 'bearer', token: 'crm-token' },
    });
    const before = crmRequests.length;
    const { text, call, frames } = await firstWords(agentId, { account: 'A-7' });
    expect(text).toBe('Hello Ada, you are on the gold plan.');
    const hit = crmRequests.slice(before);
    expect(hit).toHaveLength(1);
    expect(hit[0]).toMatchObject({ method: 'POST', url: '/customers/A-7?v=2' });
    expect(hit[0]!.headers.authorization).toBe(`Bearer ${CRM_TOKEN}`);
    expect(hit[0]!.headers['x-call']).toBe(call.callId);
    expect(JSON.parse(hit[0]!.body)).toEqual({ account: 'A-7', source: 'parley' });
    expect(call.variables).toMatchObject({ customer_name: 'Ada', plan: 'gold', account: 'A-7' });
    expect(call.preCallApi).toMatchObject({ ok: true, status: 200, error: null, variables: ['customer_name', 'plan'] });
    // The CRM echoed the credential back: it is in no frame, record, store row or log.
    for (const out of [frames, JSON.stringify(call), JSON.stringify(await storeSql(store, 'SELECT * FROM calls')), server.logs.join('\n')]) expect(out).not.toContain(CRM_TOKEN);
  }, 30_000);

  it('without a body, POST sends the call variables; GET sends none', async () => {
    const post = await agent({ isEnabled: true, url: `${crmBase}/lookup`, method: 'POST', responseVariables: [{ variableName: 'customer_name', jsonPath: '$.customer.first' }] });
    let before = crmRequests.length;
    expect((await firstWords(post, { account: 'B-2' })).text).toBe('Hello Ada, you are on the basic plan.');
    expect(JSON.parse(crmRequests[before]!.body)).toMatchObject({ account: 'B-2', customer_name: 'there', conversation_type: 'webcall' });
    const get = await agent({ isEnabled: true, url: `${crmBase}/lookup?account={{account}}`, method: 'GET' });
    before = crmRequests.length;
    await firstWords(get, { account: 'B 3' });
    expect(crmRequests[before]).toMatchObject({ method: 'GET', url: '/lookup?account=B%203', body: '' });
  }, 30_000);

  it('a timeout or an error status leaves the defaults, and the record says why; a disabled one is not called', async () => {
    const slow = await agent({ isEnabled: true, url: `${crmBase}/slow`, method: 'GET', timeout: 1, responseVariables: [{ variableName: 'customer_name', jsonPath: '$.customer.first' }] });
    const timedOut = await firstWords(slow);
    expect(timedOut.text).toBe('Hello there, you are on the basic plan.');
    expect(timedOut.call.preCallApi).toMatchObject({ ok: false, status: null, variables: [] });
    expect(timedOut.call.preCallApi.error).toMatch(/timed out|timeout/i);
    expect(timedOut.call.preCallApi.latencyMs).toBeGreaterThanOrEqual(900);
    expect(timedOut.call.preCallApi.latencyMs).toBeLessThan(3000);

    const down = await agent({ isEnabled: true, url: `${crmBase}/down`, method: 'GET', responseVariables: [{ variableName: 'plan', jsonPath: '$.customer.tier' }] });
    const failed = await firstWords(down);
    expect(failed.text).toBe('Hello there, you are on the basic plan.');
    expect(failed.call.preCallApi).toMatchObject({ ok: false, status: 503, error: 'the API answered HTTP 503', variables: [] });

    const off = await agent({ isEnabled: false, url: `${crmBase}/off`, method: 'GET' });
    const before = crmRequests.length;
    const disabled = await firstWords(off);
    expect(disabled.text).toBe('Hello there, you are on the basic plan.');
    expect(crmRequests.slice(before)).toEqual([]);
    expect(disabled.call.preCallApi).toBeNull();
  }, 30_000);

  it('refuses a bad configuration with 400 naming the field: a refused address, a method, a body on GET, an unknown field, a secret value', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ isEnabled: true, url: 'http://169.254.169.254/latest/meta-data', method: 'GET' }, /preCallAPI\.url: refused by the egress policy/],
      [{ isEnabled: true, url: 'ftp://crm.example.com/x', method: 'GET' }, /preCallAPI\.url: must be an http or https URL/],
      [{ isEnabled: true, url: `${crmBase}/x`, method: 'FETCH' }, /preCallAPI\.method/],
      [{ isEnabled: true, url: `${crmBase}/x`, method: 'GET', body: { a: 1 } }, /preCallAPI\.body: a GET request cannot carry a body/],
      [{ isEnabled: true, url: `${crmBase}/x`, method: 'GET', timeout: 60 }, /preCallAPI\.timeout/],
      [{ isEnabled: true, url: `${crmBase}/x`, method: 'GET', colour: 'blue' }, /preCallAPI/],
      [{ isEnabled: true, url: `${crmBase}/x`, method: 'GET', responseVariables: [{ variableName: 'x', jsonPath: 'customer' }] }, /preCallAPI\.responseVariables\.0\.jsonPath/],
      [{ isEnabled: true, url: `${crmBase}/x`, method: 'GET', auth: { type: 'bearer', token: 'Bearer abc def' } }, /preCallAPI\.auth\.token: must be a secret name/],
    ];
    for (const [preCallAPI, message] of cases) {
      const res = await server.request('POST', `${A}/agent`, { body: { name: 'bad', workflowType: 'workflow_graph', workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Hi.' }], edges: [] }, preCallAPI } });
      expect(res.status, `${JSON.stringify(preCallAPI)} -> ${res.text}`).toBe(400);
      expect(JSON.stringify(res.body)).toMatch(message);
    }
  });
});
