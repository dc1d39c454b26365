// Webhooks: CRUD and subscriptions with their errors; signed deliveries to real receivers (headers, exact bytes),
// per-call order, failures recorded without retry, and pending deliveries surviving a SIGKILL exactly once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { freshStore, startServer, storeSql, createOrgKey, sleep, testDialects, type StoreEnv, type TestServer, withStore } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, createAgent } from './support/agents.js';
import { newCallId } from '../control-plane/calls/calls.js';
import { enqueueEvent, type CallEvent } from '../control-plane/webhooks/outbox.js';

const HEX24 = /^[a-f\d]{24}$/;
const ASSIGNED = 'Webhook cannot be deleted while it is assigned to agents. Remove the assignments first.';
type EventType = CallEvent['eventType'];

// ------------------------------------------------------------------------------------------ helpers

interface Received {
  path: string;
  method: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  body: any;
  at: number;
  answeredAt?: number;
}

type Behaviour = (r: Received) => { status?: number; delayMs?: number; hang?: boolean } | undefined;

/** A real HTTP receiver: records every request with its raw bytes; `/fail` answers 500, `/hang` never answers. */
class Receiver {
  readonly requests: Received[] = [];
  private constructor(
    private readonly server: http.Server,
    readonly base: string,
  ) {}

  static async start(behave: Behaviour = () => undefined): Promise<Receiver> {
    let self: Receiver | undefined;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        let body: unknown = null;
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          /* not JSON */
        }
        const r: Received = { path: req.url ?? '/', method: req.method ?? '', headers: req.headers, raw, body, at: Date.now() };
        self?.requests.push(r);
        const plan = behave(r) ?? {};
        if (plan.hang || r.path === '/hang') return;
        const status = plan.status ?? (r.path === '/fail' ? 500 : 200);
        setTimeout(() => {
          r.answeredAt = Date.now();
          res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'nope');
        }, plan.delayMs ?? 0);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    self = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  url(path: string): string {
    return `${this.base}${path}`;
  }

  on(path: string): Received[] {
    return this.requests.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Queues events the way the call runtime does: in one transaction on the shared store (as another process would). */
function enqueue(store: StoreEnv, events: CallEvent[]): Promise<number[]> {
  return withStore(store, (db) =>
    db.transaction().execute(async (tx) => {
      const counts: number[] = [];
      for (const e of events) counts.push(await enqueueEvent(tx, e));
      return counts;
    }),
  );
}

async function orgOf(store: StoreEnv, agentId: string): Promise<string> {
  return (await storeSql(store, 'SELECT org_id FROM agents WHERE id = $1', [agentId]))[0]!.org_id as string;
}

function metadata(agentId: string, callId: string, eventType: EventType): Record<string, unknown> {
  const common = { agentId, eventType, conversationType: 'telephonyInbound', callId };
  if (eventType === 'pre-conversation') return { ...common, toPhone: '+14155550100', fromPhone: '+14155550199' };
  const callData = { fromNumber: '+14155550199', toNumber: '+14155550100', callDuration: 12.5, callStatus: 'completed', answerTime: '2026-05-08T07:51:50Z', endTime: '2026-05-08T07:52:02Z' };
  if (eventType === 'post-conversation') return { ...common, callData: { ...callData, callDirection: 'telephony_inbound' }, transcript: [{ role: 'agent', content: 'Hi! Ünïcödé ✓', timestamp: '2026-05-08T07:51:51Z' }], variables: { call_id: callId } };
  return { ...common, callData, analytics: { summary: 'Short call.', dispositionMetrics: [], successMetrics: [] } };
}

const event = (orgId: string, agentId: string, callId: string, eventType: EventType): CallEvent => ({ orgId, agentId, callId, eventType, metadata: metadata(agentId, callId, eventType) });

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

function expectSigned(r: Received, secret: string): void {
  const header = r.headers['x-signature'];
  expect(header).toMatch(/^[0-9a-f]{64}$/);
  const expected = createHmac('sha256', secret).update(r.raw).digest();
  expect(timingSafeEqual(expected, Buffer.from(header as string, 'hex'))).toBe(true);
}

function api(server: () => TestServer) {
  const req = (method: string, p: string, opts: Parameters<TestServer['request']>[2] = {}) => server().request(method, `${A}${p}`, opts);
  return {
    req,
    async createWebhook(body: Record<string, unknown>): Promise<string> {
      const res = await req('POST', '/webhook', { body });
      expect(res.status, res.text).toBe(201);
      return res.body.data as string;
    },
    async webhook(id: string): Promise<any> {
      const res = await req('GET', `/webhook?webhookId=${id}`);
      expect(res.status, res.text).toBe(200);
      return res.body.data;
    },
    async deliveries(id: string, query = ''): Promise<any[]> {
      const res = await req('GET', `/webhook/${id}/deliveries${query}`);
      expect(res.status, res.text).toBe(200);
      return res.body.data.deliveries;
    },
  };
}

const settled = (ds: any[], n: number) => ds.length === n && ds.every((d) => d.status === 'DELIVERED' || d.status === 'FAILED') && ds;

// ------------------------------------------------------------------------------------------ suites

describe.each(testDialects())('webhooks on %s', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_WEBHOOK_POLL_MS: '250', PARLEY_WEBHOOK_TIMEOUT_MS: '1500', PARLEY_WEBHOOK_CONCURRENCY: '4' });
  const { req, createWebhook, webhook, deliveries } = api(() => suite.server);
  const receivers: Receiver[] = [];
  const receiver = async (behave?: Behaviour) => {
    const r = await Receiver.start(behave);
    receivers.push(r);
    return r;
  };
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  it('creates a webhook (201 with only its id) and reads it back with its secret and subscriptions', async () => {
    const agent = await createAgent(suite.server, { name: 'Collections', description: 'Collects' });
    const created = await req('POST', '/webhook', {
      body: {
        endpoint: 'https://hooks.example.com/parley?tenant=1',
        description: 'Collections endpoint',
        events: [
          { agentId: agent, eventType: 'post-conversation' },
          { agentId: agent, eventType: 'pre-conversation' },
          { agentId: agent, eventType: 'post-conversation' },
        ],
        headers: { 'X-Api-Key': 'abc-123' },
      },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({ status: true, data: expect.stringMatching(HEX24) });
    const id = created.body.data as string;

    const one = await webhook(id);
    expect(one).toEqual({
      _id: id,
      url: 'https://hooks.example.com/parley?tenant=1',
      description: 'Collections endpoint',
      status: 'enabled',
      organizationId: await orgOf(suite.store, agent),
      createdBy: 'bootstrap',
      headers: { 'X-Api-Key': 'abc-123' },
      subscriptions: expect.any(Array),
      decryptedSecretKey: expect.stringMatching(/^whsec_[0-9a-f]{64}$/),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const subs = [...one.subscriptions].sort((a: any, b: any) => a.eventType.localeCompare(b.eventType));
    expect(subs).toEqual(
      ['post-conversation', 'pre-conversation'].map((eventType) => ({
        _id: expect.stringMatching(HEX24),
        webhookId: id,
        agentId: { _id: agent, name: 'Collections', description: 'Collects' },
        eventType,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      })),
    );

    // The secret is sealed at rest and stays the same across reads.
    const [row] = await storeSql(suite.store, 'SELECT secret FROM webhooks WHERE id = $1', [id]);
    expect(row!.secret).toMatch(/^v1\./);
    expect(String(row!.secret)).not.toContain(one.decryptedSecretKey.slice(6));
    expect((await webhook(id)).decryptedSecretKey).toBe(one.decryptedSecretKey);

    const list = await req('GET', '/webhook');
    expect(list.status).toBe(200);
    expect(list.body.data.find((w: any) => w._id === id)).toEqual(one);

    // Without events or description.
    const bare = await createWebhook({ endpoint: 'https://hooks.example.com/bare' });
    expect(await webhook(bare)).toMatchObject({ description: '', headers: {}, subscriptions: [] });
    expect((await req('GET', '/webhook', { key: null })).status).toBe(401);
  });

  it('refuses bad create bodies naming each field, duplicate endpoints and metadata endpoints', async () => {
    const missing = await req('POST', '/webhook', { body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ status: false, errors: ['endpoint: required, an http(s) URL'] });

    const bad = await req('POST', '/webhook', {
      body: {
        endpoint: 'ftp://hooks.example.com/x',
        description: 5,
        events: [{ agentId: 'nope', eventType: 'call-started' }, 'x'],
        headers: { 'Content-Type': 'text/plain', 'bad name': 'v', 'X-Long': 'a'.repeat(1025), 'X-Num': 5, 'X-Crlf': 'a\r\nb', 'x-signature': 's' },
        status: 'disabled',
      },
    });
    expect(bad.status).toBe(400);
    const errors = (bad.body.errors as string[]).join('\n');
    for (const field of ['status: unknown field', 'endpoint: must be an http or https URL', 'description:', 'events[0].agentId', 'events[0].eventType', 'events[1]:', 'headers.Content-Type: reserved', 'headers.bad name: not a valid header name', 'headers.X-Long: value longer than 1024', 'headers.X-Num: value must be a string', 'headers.X-Crlf', 'headers.x-signature: reserved']) {
      expect(errors).toContain(field);
    }
    const many = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`X-H${i}`, 'v']));
    expect((await req('POST', '/webhook', { body: { endpoint: 'https://a.example.com/', headers: many } })).body.errors).toEqual(['headers: at most 10 headers']);
    for (const headers of [[], 'x', null]) {
      expect((await req('POST', '/webhook', { body: { endpoint: 'https://a.example.com/', headers } })).body.errors, JSON.stringify(headers)).toEqual(['headers: must be an object of header names to string values']);
    }
    expect((await req('POST', '/webhook', { body: { endpoint: 'https://a.example.com/', events: {} } })).body.errors).toEqual(['events: must be an array of {agentId, eventType}']);
    expect((await req('POST', '/webhook', { body: { endpoint: 'not a url' } })).body.errors).toEqual(['endpoint: not a valid URL']);
    expect((await req('POST', '/webhook', { body: { endpoint: 'https://u:p@a.example.com/' } })).body.errors[0]).toMatch(/^endpoint: must not embed credentials/);
    expect((await req('POST', '/webhook', { body: ['x'] })).body.errors).toEqual(['Request body must be a JSON object']);

    const unknownAgent = await req('POST', '/webhook', { body: { endpoint: 'https://a.example.com/u', events: [{ agentId: '0123456789abcdef01234567', eventType: 'pre-conversation' }] } });
    expect(unknownAgent.status).toBe(400);
    expect(unknownAgent.body.errors).toEqual(['events[0].agentId: no agent with this id in your organization']);

    const metadataEndpoint = await req('POST', '/webhook', { body: { endpoint: 'http://169.254.169.254/latest/meta-data/' } });
    expect(metadataEndpoint.status).toBe(400);
    expect(metadataEndpoint.body.errors).toEqual(['endpoint: refused by the egress policy: 169.254.169.254 is a cloud metadata address (never allowed)']);

    await createWebhook({ endpoint: 'https://dup.example.com/hook', description: 'first' });
    for (const endpoint of ['https://dup.example.com/hook', 'HTTPS://DUP.example.com:443/hook']) {
      const dup = await req('POST', '/webhook', { body: { endpoint, description: 'second' } });
      expect(dup.status, endpoint).toBe(400);
      expect(dup.body).toEqual({ status: false, errors: ['endpoint: a webhook with this URL already exists in your organization'] });
    }
    // Another organization may use the same endpoint.
    const otherKey = await createOrgKey(suite.store, 'other', `other-${dialect}-dup`);
    expect((await req('POST', '/webhook', { body: { endpoint: 'https://dup.example.com/hook' }, key: otherKey })).status).toBe(201);
  });

  it('PATCH changes only endpoint, description and headers (replace, clear), and names anything else', async () => {
    const id = await createWebhook({ endpoint: 'https://patch.example.com/a', description: 'A', headers: { 'X-One': '1', 'X-Two': '2' } });
    const other = await createWebhook({ endpoint: 'https://patch.example.com/b' });

    const res = await req('PATCH', `/webhook/${id}`, { body: { description: 'A2', headers: { 'X-Three': '3' } } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ status: true, data: id });
    expect(await webhook(id)).toMatchObject({ url: 'https://patch.example.com/a', description: 'A2', headers: { 'X-Three': '3' } });
    expect((await req('PATCH', `/webhook/${id}`, { body: { endpoint: 'https://patch.example.com/a2' } })).status).toBe(200);
    expect(await webhook(id)).toMatchObject({ url: 'https://patch.example.com/a2', description: 'A2', headers: { 'X-Three': '3' } });
    expect((await req('PATCH', `/webhook/${id}`, { body: { headers: {} } })).status).toBe(200);
    expect((await webhook(id)).headers).toEqual({});

    const cases: [unknown, string[]][] = [
      [{ events: [] }, ['events: subscriptions cannot be changed here; use POST /agent/{agentId}/webhook-subscriptions', 'Request body must contain at least one of endpoint, description, headers']],
      [{ description: 'x', subscriptions: [] }, ['subscriptions: subscriptions cannot be changed here; use POST /agent/{agentId}/webhook-subscriptions']],
      [{ description: 'x', status: 'disabled' }, ['status: cannot be changed here; use POST /webhook/{id}/enable or /webhook/{id}/disable']],
      [{ description: 'x', secret: 'mine' }, ['secret: cannot be updated (only endpoint, description, headers)']],
      [{}, ['Request body must contain at least one of endpoint, description, headers']],
      [{ endpoint: 'gopher://x' }, ['endpoint: must be an http or https URL']],
      [{ headers: { Host: 'evil' } }, ['headers.Host: reserved, set by the platform (x-signature, host, content-length, content-type, connection, transfer-encoding)']],
      [{ headers: { 'X-A': '1', 'x-a': '2' } }, ['headers.x-a: given twice (header names are case-insensitive)']],
    ];
    for (const [body, errors] of cases) {
      const bad = await req('PATCH', `/webhook/${id}`, { body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.errors, JSON.stringify(body)).toEqual(errors);
    }
    const dup = await req('PATCH', `/webhook/${id}`, { body: { endpoint: 'https://patch.example.com/b' } });
    expect(dup.status).toBe(400);
    expect(dup.body.errors).toEqual(['endpoint: a webhook with this URL already exists in your organization']);
    expect(other).toMatch(HEX24);

    const notFound = { status: false, errors: ['Webhook not found'] };
    for (const target of ['0123456789abcdef01234567', 'not-an-id']) {
      const res404 = await req('PATCH', `/webhook/${target}`, { body: { description: 'x' } });
      expect(res404.status).toBe(404);
      expect(res404.body).toEqual(notFound);
      expect((await req('GET', `/webhook?webhookId=${target}`)).body).toEqual(notFound);
    }
    const otherKey = await createOrgKey(suite.store, 'other', `other-${dialect}-patch`);
    expect((await req('PATCH', `/webhook/${id}`, { body: { description: 'x' }, key: otherKey })).status).toBe(403);
    expect((await req('GET', `/webhook?webhookId=${id}`, { key: otherKey })).status).toBe(403);
    expect((await req('GET', '/webhook', { key: otherKey })).body.data.some((w: any) => w._id === id)).toBe(false);
  });

  it('per-agent subscriptions: list, replace across webhooks, remove; enable and disable', async () => {
    const agent = await createAgent(suite.server);
    const first = await createWebhook({ endpoint: 'https://subs.example.com/1', events: [{ agentId: agent, eventType: 'pre-conversation' }] });
    const second = await createWebhook({ endpoint: 'https://subs.example.com/2' });
    const path = `/agent/${agent}/webhook-subscriptions`;

    const listed = await req('GET', path);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([{ _id: expect.stringMatching(HEX24), webhookId: first, agentId: agent, eventType: 'pre-conversation', createdAt: expect.any(String), updatedAt: expect.any(String) }]);

    const replaced = await req('POST', path, { body: { webhookId: second, eventTypes: ['post-conversation', 'analytics-completed', 'post-conversation'] } });
    expect(replaced.status, replaced.text).toBe(201);
    expect(replaced.body).toEqual({ status: true, data: 'Webhook subscriptions updated' });
    const after = (await req('GET', path)).body.data as any[];
    expect(after.map((s) => `${s.webhookId}:${s.eventType}`).sort()).toEqual([`${second}:analytics-completed`, `${second}:post-conversation`]);
    expect((await webhook(first)).subscriptions).toEqual([]);

    const bad = await req('POST', path, { body: { eventTypes: 'pre-conversation', extra: 1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual(['extra: unknown field (expected webhookId, eventTypes)', 'webhookId: required, a 24-hex webhook id', 'eventTypes: required, a non-empty array of pre-conversation, post-conversation, analytics-completed']);
    expect((await req('POST', path, { body: { webhookId: second, eventTypes: ['pre-conversation', 'call-ended'] } })).body.errors).toEqual(['eventTypes[1]: must be one of pre-conversation, post-conversation, analytics-completed']);
    expect((await req('POST', path, { body: { webhookId: second, eventTypes: [] } })).status).toBe(400);
    const unknownHook = await req('POST', path, { body: { webhookId: '0123456789abcdef01234567', eventTypes: ['pre-conversation'] } });
    expect(unknownHook.status).toBe(404);
    expect(unknownHook.body.errors).toEqual(['Webhook not found']);
    const unknownAgent = await req('GET', '/agent/0123456789abcdef01234567/webhook-subscriptions');
    expect(unknownAgent.status).toBe(404);
    expect(unknownAgent.body).toEqual({ status: false, errors: ['Agent not found'] });
    const otherKey = await createOrgKey(suite.store, 'other', `other-${dialect}-subs`);
    expect((await req('GET', path, { key: otherKey })).status).toBe(403);
    expect((await req('POST', path, { key: otherKey, body: { webhookId: second, eventTypes: ['pre-conversation'] } })).status).toBe(403);

    const removed = await req('DELETE', path);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ status: true, data: 'Webhook subscriptions removed' });
    expect((await req('GET', path)).body.data).toEqual([]);

    const disabled = await req('POST', `/webhook/${first}/disable`);
    expect(disabled.status).toBe(200);
    expect(disabled.body.data).toEqual({ _id: first, status: 'disabled' });
    expect((await webhook(first)).status).toBe('disabled');
    expect((await req('POST', `/webhook/${first}/enable`)).body.data).toEqual({ _id: first, status: 'enabled' });
    expect((await req('POST', '/webhook/0123456789abcdef01234567/enable')).status).toBe(404);
  });

  it('DELETE is refused while agents are subscribed; allowed once they are removed or the agent is deleted', async () => {
    const agent = await createAgent(suite.server);
    const id = await createWebhook({ endpoint: 'https://delete.example.com/1', events: [{ agentId: agent, eventType: 'analytics-completed' }] });
    const refused = await req('DELETE', `/webhook/${id}`);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ status: false, errors: [ASSIGNED] });
    expect((await webhook(id)).subscriptions).toHaveLength(1);

    expect((await req('DELETE', `/agent/${agent}/webhook-subscriptions`)).status).toBe(200);
    const deleted = await req('DELETE', `/webhook/${id}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ status: true, data: 'Webhook deleted successfully' });
    expect((await req('GET', `/webhook?webhookId=${id}`)).status).toBe(404);
    expect((await req('DELETE', `/webhook/${id}`)).status).toBe(404);
    expect((await req('DELETE', '/webhook/0123456789abcdef01234567')).body).toEqual({ status: false, errors: ['Webhook not found'] });

    // Deleting the agent drops its subscriptions.
    const gone = await createAgent(suite.server);
    const second = await createWebhook({ endpoint: 'https://delete.example.com/2', events: [{ agentId: gone, eventType: 'pre-conversation' }] });
    expect((await req('DELETE', `/webhook/${second}`)).status).toBe(400);
    expect((await req('DELETE', `/agent/${gone}`)).status).toBe(200);
    expect((await req('DELETE', `/webhook/${second}`)).status).toBe(200);
  });

  it('delivers signed envelopes with the configured headers; the bytes signed are the bytes stored', async () => {
    const rx = await receiver();
    const agent = await createAgent(suite.server);
    const orgId = await orgOf(suite.store, agent);
    const id = await createWebhook({
      endpoint: rx.url('/signed'),
      description: 'Signed endpoint',
      headers: { 'X-Api-Key': 'key-4b1d-secret', 'X-Tenant': 'acme' },
      events: (['pre-conversation', 'post-conversation', 'analytics-completed'] as const).map((eventType) => ({ agentId: agent, eventType })),
    });
    const secret = (await webhook(id)).decryptedSecretKey as string;
    const callId = newCallId();

    expect(await enqueue(suite.store, [event(orgId, agent, callId, 'pre-conversation')])).toEqual([1]);
    await waitFor('the pre-conversation delivery', () => rx.requests.length === 1);
    const r = rx.requests[0]!;
    expect(r.method).toBe('POST');
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['x-api-key']).toBe('key-4b1d-secret');
    expect(r.headers['x-tenant']).toBe('acme');
    expectSigned(r, secret);
    expect(Object.keys(r.body)).toEqual(['url', 'description', 'event', 'metadata', 'id']);
    expect(r.body).toEqual({ url: rx.url('/signed'), description: 'Signed endpoint', event: `${agent}.pre-conversation`, metadata: metadata(agent, callId, 'pre-conversation'), id: expect.stringMatching(HEX24) });
    expect(r.body.id).not.toBe(callId);
    const [row] = await storeSql(suite.store, 'SELECT body FROM webhook_outbox WHERE id = $1', [r.body.id]);
    expect(Buffer.from(row!.body as string, 'utf8').equals(r.raw)).toBe(true);

    const log = await waitFor('the delivery to be recorded', async () => {
      const ds = await deliveries(id);
      return settled(ds, 1);
    });
    expect(log).toEqual([{ id: r.body.id, event: `${agent}.pre-conversation`, callId, status: 'DELIVERED', responseCode: 200, latencyMs: expect.any(Number), error: null, createdAt: expect.any(String), sentAt: expect.any(String) }]);

    // Non-ASCII metadata: the signature covers the UTF-8 bytes as sent.
    expect(await enqueue(suite.store, [event(orgId, agent, callId, 'post-conversation')])).toEqual([1]);
    await waitFor('the post-conversation delivery', () => rx.requests.length === 2);
    expectSigned(rx.requests[1]!, secret);
    expect(rx.requests[1]!.body.metadata.transcript[0].content).toBe('Hi! Ünïcödé ✓');

    // Deliveries commit with the caller's transaction: a rolled-back enqueue sends nothing.
    await expect(
      withStore(suite.store, (db) =>
        db.transaction().execute(async (tx) => {
          expect(await enqueueEvent(tx, event(orgId, agent, callId, 'analytics-completed'))).toBe(1);
          throw new Error('call update failed');
        }),
      ),
    ).rejects.toThrow('call update failed');
    // A disabled webhook gets nothing queued.
    expect((await req('POST', `/webhook/${id}/disable`)).status).toBe(200);
    expect(await enqueue(suite.store, [event(orgId, agent, callId, 'analytics-completed')])).toEqual([0]);
    // Another agent's or another organization's events do not reach this webhook.
    const stranger = await createAgent(suite.server);
    expect((await req('POST', `/webhook/${id}/enable`)).status).toBe(200);
    expect(await enqueue(suite.store, [event(orgId, stranger, callId, 'pre-conversation'), event('someone-else', agent, callId, 'pre-conversation')])).toEqual([0, 0]);
    await sleep(800);
    expect(rx.requests).toHaveLength(2);
    expect(await deliveries(id, `?callId=${callId}&status=delivered`)).toHaveLength(2);
    expect(await deliveries(id, '?status=FAILED')).toEqual([]);
    expect(await deliveries(id, '?limit=1')).toHaveLength(1);
    const badQuery = await req('GET', `/webhook/${id}/deliveries?status=LOST&limit=0`);
    expect(badQuery.status).toBe(400);
    expect(badQuery.body.errors).toEqual(['status: must be one of PENDING, SENDING, DELIVERED, FAILED', 'limit: must be an integer from 1 to 500']);
    expect((await req('GET', '/webhook/0123456789abcdef01234567/deliveries')).status).toBe(404);

    // Neither the signing secret nor header values appear in the server's logs.
    const logs = suite.server.logs.join('\n');
    expect(logs).toContain('webhook delivery');
    expect(logs).not.toContain(secret.slice(6));
    expect(logs).not.toContain('key-4b1d-secret');
  });

  it('delivers one call\'s events in order while other calls go out in parallel', async () => {
    let callA = '';
    const rx = await receiver((r) => (r.body?.metadata?.callId === callA && r.body.metadata.eventType === 'pre-conversation' ? { delayMs: 700 } : undefined));
    const agent = await createAgent(suite.server);
    const orgId = await orgOf(suite.store, agent);
    const id = await createWebhook({
      endpoint: rx.url('/ordered'),
      events: (['pre-conversation', 'post-conversation', 'analytics-completed'] as const).map((eventType) => ({ agentId: agent, eventType })),
    });
    callA = newCallId();
    const callB = newCallId();
    const counts = await enqueue(suite.store, [
      event(orgId, agent, callA, 'pre-conversation'),
      event(orgId, agent, callA, 'post-conversation'),
      event(orgId, agent, callA, 'analytics-completed'),
      event(orgId, agent, callB, 'pre-conversation'),
    ]);
    expect(counts).toEqual([1, 1, 1, 1]);
    await waitFor('four deliveries', () => rx.requests.length === 4 && rx.requests.every((r) => r.answeredAt));
    const ofA = rx.requests.filter((r) => r.body.metadata.callId === callA);
    expect(ofA.map((r) => r.body.metadata.eventType)).toEqual(['pre-conversation', 'post-conversation', 'analytics-completed']);
    // The later events waited for the slow first one to be answered ...
    expect(ofA[1]!.at).toBeGreaterThanOrEqual(ofA[0]!.answeredAt!);
    expect(ofA[2]!.at).toBeGreaterThanOrEqual(ofA[1]!.answeredAt!);
    // ... while the other call's event did not.
    const ofB = rx.requests.find((r) => r.body.metadata.callId === callB)!;
    expect(ofB.at).toBeLessThan(ofA[0]!.answeredAt!);
    const log = await waitFor('all recorded', async () => settled(await deliveries(id, `?callId=${callA}`), 3));
    expect(log.map((d: any) => d.status)).toEqual(['DELIVERED', 'DELIVERED', 'DELIVERED']);
  });

  it('records 500s, timeouts and refused connections as FAILED, once, and keeps serving', async () => {
    const rx = await receiver();
    const agent = await createAgent(suite.server);
    const orgId = await orgOf(suite.store, agent);
    const downPort = await closedPort();
    const endpoints = { fail: rx.url('/fail'), hang: rx.url('/hang'), down: `http://127.0.0.1:${downPort}/hook`, ok: rx.url('/ok') };
    const ids: Record<string, string> = {};
    for (const [name, endpoint] of Object.entries(endpoints)) ids[name] = await createWebhook({ endpoint, events: [{ agentId: agent, eventType: 'post-conversation' }] });

    const callId = newCallId();
    const started = Date.now();
    expect(await enqueue(suite.store, [event(orgId, agent, callId, 'post-conversation')])).toEqual([4]);
    const ok = await waitFor('the healthy delivery', async () => settled(await deliveries(ids.ok!), 1));
    expect(ok[0]).toMatchObject({ status: 'DELIVERED', responseCode: 200, error: null });
    // The healthy endpoint was not held up by the one that never answers.
    expect(Date.now() - started).toBeLessThan(1500 + 1000);
    expect((await suite.server.request('GET', '/health')).status).toBe(200);

    const fail = await waitFor('the 500', async () => settled(await deliveries(ids.fail!), 1));
    expect(fail[0]).toMatchObject({ status: 'FAILED', responseCode: 500, error: 'HTTP 500', sentAt: expect.any(String) });
    const down = await waitFor('the refused connection', async () => settled(await deliveries(ids.down!), 1));
    expect(down[0]).toMatchObject({ status: 'FAILED', responseCode: null, error: expect.stringMatching(/^connection refused \(ECONNREFUSED\)/) });
    const hang = await waitFor('the timeout', async () => settled(await deliveries(ids.hang!), 1));
    expect(hang[0]).toMatchObject({ status: 'FAILED', responseCode: null, error: 'timeout: no answer within 1500 ms' });
    expect(hang[0].latencyMs).toBeGreaterThanOrEqual(1400);
    expect((await suite.server.request('GET', '/health')).status).toBe(200);

    // No retry: each endpoint saw exactly one attempt; later deliveries still go out.
    await sleep(1000);
    expect(rx.on('/fail')).toHaveLength(1);
    expect(rx.on('/hang')).toHaveLength(1);
    expect(rx.on('/ok')).toHaveLength(1);
    expect(await enqueue(suite.store, [event(orgId, agent, newCallId(), 'post-conversation')])).toEqual([4]);
    await waitFor('the next healthy delivery', () => rx.on('/ok').length === 2);
  });
});

describe.each(testDialects())('webhook outbox across a crash on %s', (dialect) => {
  let store: StoreEnv | undefined;
  const servers: TestServer[] = [];
  let rx: Receiver | undefined;
  const env = { PARLEY_WEBHOOK_POLL_MS: '250', PARLEY_WEBHOOK_TIMEOUT_MS: '1500' };
  beforeAll(async () => {
    store = freshStore(dialect);
    rx = await Receiver.start();
  });
  afterAll(async () => {
    for (const s of servers) await s.stop();
    await rx?.close();
    await store?.cleanup();
  });

  it('after SIGKILL, pending deliveries go out exactly once and an interrupted one is FAILED, never resent', { timeout: 60_000 }, async () => {
    const first = await startServer({ store: store!, env });
    servers.push(first);
    const one = api(() => first);
    const interruptedAgent = await createAgent(first);
    const pendingAgent = await createAgent(first);
    const orgId = await orgOf(store!, pendingAgent);
    const hangHook = await one.createWebhook({ endpoint: rx!.url('/hang'), events: [{ agentId: interruptedAgent, eventType: 'pre-conversation' }] });
    const okHook = await one.createWebhook({
      endpoint: rx!.url('/after-restart'),
      events: (['pre-conversation', 'post-conversation', 'analytics-completed'] as const).map((eventType) => ({ agentId: pendingAgent, eventType })),
    });
    const secret = (await one.webhook(okHook)).decryptedSecretKey as string;

    // One delivery is in flight (the receiver never answers) when the server dies.
    const interruptedCall = newCallId();
    await enqueue(store!, [event(orgId, interruptedAgent, interruptedCall, 'pre-conversation')]);
    await waitFor('the attempt in flight', () => rx!.on('/hang').length === 1);
    expect((await one.deliveries(hangHook))[0].status).toBe('SENDING');
    first.proc.kill('SIGKILL');
    await first.waitExit();

    // Three events of one call are queued while no server runs.
    const call = newCallId();
    expect(await enqueue(store!, (['pre-conversation', 'post-conversation', 'analytics-completed'] as const).map((t) => event(orgId, pendingAgent, call, t)))).toEqual([1, 1, 1]);
    const pending = await storeSql(store!, "SELECT id FROM webhook_outbox WHERE status = 'PENDING' ORDER BY seq");
    expect(pending).toHaveLength(3);

    const second = await startServer({ store: store!, env });
    servers.push(second);
    const two = api(() => second);
    await waitFor('the pending deliveries', () => rx!.on('/after-restart').length === 3);
    const arrived = rx!.on('/after-restart');
    expect(arrived.map((r) => r.body.id)).toEqual(pending.map((p) => p.id));
    expect(arrived.map((r) => r.body.metadata.eventType)).toEqual(['pre-conversation', 'post-conversation', 'analytics-completed']);
    for (const r of arrived) expectSigned(r, secret);

    const interrupted = await waitFor('the interrupted delivery to be closed', async () => settled(await two.deliveries(hangHook), 1), 20_000);
    expect(interrupted[0]).toMatchObject({ callId: interruptedCall, status: 'FAILED', responseCode: null, error: 'interrupted by restart' });
    const delivered = await waitFor('the log', async () => settled(await two.deliveries(okHook), 3));
    expect(delivered.map((d: any) => d.status)).toEqual(['DELIVERED', 'DELIVERED', 'DELIVERED']);

    // Exactly once: nothing is sent again.
    await sleep(1500);
    expect(rx!.on('/after-restart')).toHaveLength(3);
    expect(rx!.on('/hang')).toHaveLength(1);
    expect(await second.stop()).toBe(0);

    // Restarted with private egress off, the loopback endpoint is refused at delivery time and recorded.
    const third = await startServer({ store: store!, env: { ...env, PARLEY_ALLOW_PRIVATE_EGRESS: '0' } });
    servers.push(third);
    const three = api(() => third);
    const refusedCall = newCallId();
    expect(await enqueue(store!, [event(orgId, pendingAgent, refusedCall, 'pre-conversation')])).toEqual([1]);
    const refused = await waitFor('the refused delivery', async () => settled(await three.deliveries(okHook, `?callId=${refusedCall}`), 1));
    expect(refused[0]).toMatchObject({ status: 'FAILED', responseCode: null, error: 'refused by the egress policy: 127.0.0.1 is a loopback address; this server does not allow requests to private networks' });
    expect(rx!.on('/after-restart')).toHaveLength(3);
  });
});
