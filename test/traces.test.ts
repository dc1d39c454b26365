// OpenTelemetry traces against an OTLP/HTTP receiver in the test that decodes the protobuf the server sends: a web
// call with a spoken turn, a tool call and webhook deliveries gives a call span, turn spans with the call record's
// latency figures, a tool span and delivery spans, each with the call id, and no secret in any attribute; the spans
// held in the batch are sent on SIGTERM. A server without OTEL_EXPORTER_OTLP_ENDPOINT sends nothing.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshStore, sleep, startServer, storeSql, type StoreEnv, type TestServer } from './support/server.js';
import { AgentCaller, connectUrl, endedCall, speech } from './support/agent-client.js';
import { OpenAiMock, type MockRequest } from './support/openai-mock.js';
import { OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.js';

const A = '/atoms/v1';
const RATE = 16000;
// Secrets that pass through the call: none may appear in a span.
const CRM_TOKEN = 'crm-token-5f4e3d2c1b0a';
const LLM_KEY = 'sk-llm-traces-0a1b2c3d4e';
const HOOK_QUERY_TOKEN = 'hook-query-token-77aa88bb';
const COLLECTOR_KEY = 'collector-key-9z8y7x6w';
// What the tool is called with (the model's arguments) and the caller's variables: not in spans either.
const ORDER = 'A-4711';
const CARD = 'card-31337';

let traced: { store: StoreEnv; server: TestServer };
let plain: { store: StoreEnv; server: TestServer };
const otlp = new OtlpReceiver();
/** A receiver on the SDK's default endpoint (127.0.0.1:4318) when that port is free: where a wrongly loaded SDK would send. */
const fallback = new OtlpReceiver();
let fallbackBound = false;
let mock: OpenAiMock;
let llmBase: string;
let crm: Server;
let crmBase: string;
let hooks: Server;
let hooksBase: string;
const deliveries: { url: string; body: any }[] = [];

const listen = async (server: Server) => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  crm = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ order: { status: 'shipped' } })));
  });
  crmBase = await listen(crm);
  hooks = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({ url: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      res.writeHead(200).end('ok');
    });
  });
  hooksBase = await listen(hooks);
  mock = new OpenAiMock({
    respond: (req: MockRequest) => {
      const last = (req.body.messages ?? []).at(-1) as { role: string };
      if (last.role === 'user') return { toolCalls: [{ name: 'order_status', arguments: JSON.stringify({ order_id: ORDER }) }] };
      if (last.role === 'tool') return { text: 'Your order has shipped.' };
      return { text: 'Sorry?' };
    },
  });
  llmBase = await mock.start();
  await otlp.start();
  fallbackBound = await fallback.start(4318).then(
    () => true,
    () => false,
  );
  const off = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' };
  const start = async (env: Record<string, string>) => {
    const store = freshStore('sqlite');
    return { store, server: await startServer({ store, env }) };
  };
  [traced, plain] = await Promise.all([
    start({
      ...off,
      PARLEY_WARM_MODELS: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_HEADERS: `x-collector-key=${COLLECTOR_KEY}`,
      OTEL_SERVICE_NAME: 'parley-traces-test',
      // The batch is held until shutdown: what arrives was sent by the flush on SIGTERM.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    }),
    start(off),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all([traced?.server.stop(), plain?.server.stop()]);
  await Promise.all([traced?.store.cleanup(), plain?.store.cleanup()]);
  await Promise.all([otlp.close(), fallback.close(), mock?.close()]);
  await Promise.all([crm, hooks].map((s) => new Promise((r) => s?.close(r))));
});

/** An agent on the mock model (its key in the vault) with an api_call tool whose bearer token is a vault secret. */
async function agentWithTool(server: TestServer): Promise<string> {
  for (const [name, value] of [['crm-token', CRM_TOKEN], ['llm-key', LLM_KEY]]) {
    expect((await server.request('POST', `${A}/secret`, { body: { name, value } })).status).toBe(201);
  }
  const tool = await server.request('POST', `${A}/tool`, {
    body: {
      definition: {
        type: 'api_call',
        name: 'order_status',
        description: 'Look up the status of an order',
        url: `${crmBase}/orders/{{order_id}}`,
        method: 'GET',
        queryParams: [{ key: 'card', value: '{{card}}' }],
        llmParameters: [{ name: 'order_id', description: 'Order number', type: 'text', required: true }],
        auth: { type: 'bearer', token: 'crm-token' },
      },
    },
  });
  expect(tool.status, tool.text).toBe(201);
  const agent = await server.request('POST', `${A}/agent`, {
    body: {
      name: 'orders',
      workflowType: 'single_prompt',
      prompt: 'You help with orders.',
      firstMessage: 'Hello, order desk.',
      toolRefs: [tool.body.data.toolId],
      model: { provider: 'openai_compatible', baseUrl: llmBase, model: 'm', apiKeySecret: 'llm-key' },
    },
  });
  expect(agent.status, agent.text).toBe(201);
  return agent.body.data as string;
}

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe('traces over OTLP/HTTP', () => {
  it('a web call gives a call span, turn spans with the latency figures, a tool span and webhook spans; no secret in any of them; sent on SIGTERM', async () => {
    const { server, store } = traced;
    expect(server.logs.join('\n')).toContain('traces: exporting spans over OTLP/HTTP');
    const agentId = await agentWithTool(server);
    const hook = await server.request('POST', `${A}/webhook`, {
      body: { endpoint: `${hooksBase}/hooks?token=${HOOK_QUERY_TOKEN}`, events: ['pre-conversation', 'post-conversation'].map((eventType) => ({ agentId, eventType })) },
    });
    expect(hook.status, hook.text).toBe(201);
    const read = await server.request('GET', `${A}/webhook?webhookId=${hook.body.data as string}`);
    const signingSecret = (read.body.data.decryptedSecretKey ?? read.body.data[0]?.decryptedSecretKey) as string;
    expect(signingSecret).toBeTruthy();

    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(RATE), variables: JSON.stringify({ card: CARD }) }), RATE);
    await c.opened;
    const callId = (await c.waitFor((f) => f.type === 'session.created')).call_id as string;
    c.startMic();
    expect((await c.agentTurn(0)).text).toBe('Hello, order desk.');
    const mark = c.frames.length;
    await c.say(await speech(server, 'Where is my order?'));
    expect((await c.agentTurn(mark, 40_000)).text).toBe('Your order has shipped.');
    c.send({ type: 'session.close' });
    await c.closed;
    const call = await endedCall(server, callId);
    const orgId = (await storeSql(store, 'SELECT org_id FROM calls WHERE call_id = $1', [callId]))[0]?.org_id as string;
    for (let i = 0; i < 100 && deliveries.length < 2; i++) await sleep(100);
    expect(deliveries.map((d) => d.body.metadata.eventType).sort()).toEqual(['post-conversation', 'pre-conversation']);
    await sleep(300); // the deliveries' rows (and spans) are finished just after the receiver answered

    // Held in the batch until now; SIGTERM sends them.
    expect(otlp.requests).toEqual([]);
    expect(await server.stop()).toBe(0);
    expect(otlp.errors).toEqual([]);
    expect(otlp.requests.length).toBeGreaterThan(0);
    for (const r of otlp.requests) {
      expect(r.path).toBe('/v1/traces');
      expect(r.headers['content-type']).toBe('application/x-protobuf');
      expect(r.headers['x-collector-key']).toBe(COLLECTOR_KEY);
    }
    const spans = otlp.spans.filter((s) => s.attributes['parley.call_id'] === callId);
    for (const s of otlp.spans) {
      expect(s.resource['service.name']).toBe('parley-traces-test');
      expect(s.scope).toBe('parley');
    }

    // The call.
    const [callSpan, ...more] = byName(spans, 'parley.call');
    expect(more).toEqual([]);
    expect(callSpan!.parentSpanId).toBe('');
    expect(callSpan!.attributes).toMatchObject({
      'parley.call_id': callId,
      'parley.org_id': orgId,
      'parley.agent_id': agentId,
      'parley.call.mode': 'webcall',
      'parley.call.type': 'webcall',
      'parley.call.is_test': false,
      'parley.call.status': 'completed',
      'parley.call.end_reason': call.endReason,
      'parley.call.turns': call.turnMetrics.length,
    });
    expect(callSpan!.endMs - callSpan!.startMs).toBeGreaterThan(1000);

    // Each spoken turn, under the call, with the figures the call record stores.
    const turns = byName(spans, 'parley.turn');
    expect(turns.length).toBe(call.turnMetrics.length);
    expect(turns.length).toBeGreaterThanOrEqual(1);
    for (const t of turns) {
      expect(t.traceId).toBe(callSpan!.traceId);
      expect(t.parentSpanId).toBe(callSpan!.spanId);
      expect(t.attributes['parley.org_id']).toBe(orgId);
      const m = call.turnMetrics.find((x: any) => x.turn === t.attributes['parley.turn.number']);
      expect(m).toBeDefined();
      expect(t.attributes).toMatchObject({
        'parley.turn.eou_delay_ms': m.eouDelayMs,
        'parley.turn.recognition_ms': m.recognitionMs,
        'parley.turn.brain_first_text_ms': m.brainFirstTokenMs,
        'parley.turn.first_audio_ms': m.e2eMs,
      });
      expect(m.e2eMs).toBeGreaterThan(0);
      // From the end of speech to the first audio.
      expect(Math.abs(t.endMs - t.startMs - m.e2eMs)).toBeLessThan(2);
      expect(t.events.map((e) => e.name)).toContain('turn.committed');
      expect(t.startMs).toBeGreaterThanOrEqual(callSpan!.startMs);
      expect(t.endMs).toBeLessThanOrEqual(callSpan!.endMs);
    }

    // The tool call: name, outcome, HTTP status; its span lasts the request.
    const [tool] = byName(spans, 'parley.tool');
    expect(tool!.parentSpanId).toBe(callSpan!.spanId);
    expect(tool!.attributes).toMatchObject({ 'parley.call_id': callId, 'parley.org_id': orgId, 'parley.tool.name': 'order_status', 'parley.tool.type': 'api_call', 'parley.tool.outcome': 'ok', 'http.response.status_code': 200 });
    expect(tool!.endMs).toBeGreaterThan(tool!.startMs);

    // Each webhook delivery attempt: event, status, attempt, the receiver's host and port only.
    const hookSpans = byName(spans, 'parley.webhook');
    expect(hookSpans.map((s) => s.attributes['parley.webhook.event']).sort()).toEqual(['post-conversation', 'pre-conversation']);
    for (const s of hookSpans) {
      expect(s.attributes).toMatchObject({ 'parley.org_id': orgId, 'parley.agent_id': agentId, 'http.response.status_code': 200, 'parley.webhook.attempt': 1, 'parley.webhook.outcome': 'DELIVERED', 'server.address': '127.0.0.1' });
    }

    // No secret, tool argument, variable or the webhook's path and query in any span, event or resource.
    const everything = JSON.stringify(otlp.spans);
    for (const secret of [CRM_TOKEN, LLM_KEY, HOOK_QUERY_TOKEN, signingSecret, COLLECTOR_KEY, ORDER, CARD, '/hooks', '/orders']) expect(everything).not.toContain(secret);
    expect(server.logs.join('\n')).not.toContain(COLLECTOR_KEY);
  }, 120_000);

  it('a server without OTEL_EXPORTER_OTLP_ENDPOINT sends nothing', async () => {
    const { server } = plain;
    expect(server.logs.join('\n')).not.toContain('traces:');
    const before = otlp.requests.length;
    const agentId = await agentWithTool(server);
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat', variables: JSON.stringify({ card: CARD }) }), 24000);
    await c.opened;
    const callId = (await c.waitFor((f) => f.type === 'session.created')).call_id as string;
    const mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'Where is my order?' });
    expect((await c.agentTurn(mark)).text).toBe('Your order has shipped.');
    c.send({ type: 'session.close' });
    await c.closed;
    await endedCall(server, callId);
    expect(await server.stop()).toBe(0);
    expect(otlp.requests.length).toBe(before);
    // Had the SDK been loaded with its defaults, the spans would have gone to 127.0.0.1:4318.
    if (fallbackBound) expect(fallback.requests).toEqual([]);
    expect(otlp.spans.some((s) => s.attributes['parley.call_id'] === callId)).toBe(false);
  }, 60_000);
});
