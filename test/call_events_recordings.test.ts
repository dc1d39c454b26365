// Call events from a real web call (pre, post, analytics, signed, in order) and its recordings behind signed URLs.
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readWav } from '../engine/audio/wav.js';
import { ObjectStore } from '../control-plane/recordings/object-store.js';
import { freshStore, startServer, type StoreEnv, type TestServer } from './support/server.js';
import { AgentCaller, connectUrl, speech } from './support/agent-client.js';

const A = '/atoms/v1';
const RATE = 16000;

interface Received {
  raw: Buffer;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

let store: StoreEnv;
let server: TestServer;
let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];

const GRAPH = {
  nodes: [
    { id: 'ask', type: 'say', text: 'Do you want to renew your books?' },
    { id: 'done', type: 'end_call', text: 'Your books are renewed. Goodbye!' },
  ],
  edges: [{ from: 'ask', to: 'done', condition: { type: 'any' } }],
};

async function waitFor<T>(get: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      received.push({ raw, headers: req.headers, body: JSON.parse(raw.toString('utf8')) });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  store = freshStore('sqlite');
  server = await startServer({ store, env: { PARLEY_WARM_MODELS: 'true', PARLEY_ALLOW_PRIVATE_EGRESS: '1' } });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await store?.cleanup();
  await new Promise((r) => receiver?.close(r));
});

describe('a web call produces its events and recordings', () => {
  it('delivers pre-conversation, post-conversation and analytics-completed, signed and in order; records mono and dual WAV', async () => {
    const created = await server.request('POST', `${A}/agent`, {
      body: {
        name: 'library',
        workflowType: 'workflow_graph',
        workflowGraph: GRAPH,
        defaultVariables: { branch: 'Central' },
        postCallAnalyticsConfig: {
          dispositionMetrics: [
            { identifier: 'wants_renewal', dispositionMetricPrompt: 'Did the caller want a renewal?', dispositionMetricType: 'BOOLEAN', extractor: { type: 'keyword', keywords: ['yes', 'renew'] } },
            { identifier: 'item', dispositionMetricPrompt: 'What did the caller want renewed?', dispositionMetricType: 'STRING', extractor: { type: 'regex', pattern: 'renew (?:my |the )?(\\w+)' } },
            { identifier: 'card', dispositionMetricPrompt: 'Library card number?', dispositionMetricType: 'INTEGER', extractor: { type: 'regex', pattern: 'card (\\d+)' } },
          ],
        },
      },
    });
    expect(created.status, created.text).toBe(201);
    const agentId = created.body.data as string;
    const hook = await server.request('POST', `${A}/webhook`, {
      body: {
        endpoint: receiverUrl,
        description: 'library events',
        events: ['pre-conversation', 'post-conversation', 'analytics-completed'].map((eventType) => ({ agentId, eventType })),
        headers: { 'x-team': 'circulation' },
      },
    });
    expect(hook.status, hook.text).toBe(201);
    const webhookId = hook.body.data as string;
    const record = await server.request('GET', `${A}/webhook?webhookId=${webhookId}`);
    const secret = (record.body.data.decryptedSecretKey ?? record.body.data[0]?.decryptedSecretKey) as string;
    expect(secret).toBeTruthy();

    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(RATE), variables: JSON.stringify({ card: 'A-17' }) }), RATE);
    await c.opened;
    const session = await c.waitFor((f) => f.type === 'session.created');
    const callId = session.call_id as string;
    c.startMic();
    await c.agentTurn(0);
    const mark = c.frames.length;
    await c.say(await speech(server, 'Yes, please renew my books.'));
    await c.waitFor((f) => f.type === 'session.closed', 30_000, mark);
    await c.closed;

    const ours = () => received.filter((r) => r.body.metadata?.callId === callId);
    await waitFor(() => (ours().length >= 3 ? true : undefined));
    const events = ours();
    expect(events.map((e) => e.body.metadata.eventType)).toEqual(['pre-conversation', 'post-conversation', 'analytics-completed']);
    for (const e of events) {
      // The signature is over the exact bytes received.
      expect(e.headers['x-signature']).toBe(createHmac('sha256', secret).update(e.raw).digest('hex'));
      expect(e.headers['x-team']).toBe('circulation');
      expect(e.body.url).toBe(receiverUrl);
      expect(e.body.description).toBe('library events');
      expect(e.body.event).toBe(`${agentId}.${e.body.metadata.eventType}`);
      expect(e.body.id).toMatch(/^[0-9a-f]{24}$/);
      expect(e.body.id).not.toBe(callId);
      expect(e.body.metadata).toMatchObject({ agentId, callId, conversationType: 'webcall' });
    }
    expect(new Set(events.map((e) => e.body.id)).size).toBe(3);
    const [pre, post, analytics] = events.map((e) => e.body.metadata);
    expect(pre).toHaveProperty('toPhone');
    expect(pre).not.toHaveProperty('transcript');
    expect(post.transcript.map((t: any) => t.role)).toEqual(['agent', 'user', 'agent']);
    expect(post.transcript[1].content.toLowerCase()).toContain('renew');
    for (const key of ['call_id', 'user_number', 'agent_number', 'conversation_type', 'agent_gender', 'default_language', 'supported_languages', 'current_date', 'current_time', 'current_day', 'timezone']) {
      expect(post.variables, key).toHaveProperty(key);
    }
    expect(post.variables).toMatchObject({ call_id: callId, card: 'A-17', branch: 'Central' });
    expect(post.callData).toMatchObject({ callStatus: 'completed', callDirection: 'webcall' });
    expect(post.callData.callDuration).toBeGreaterThan(2);
    expect(post.recordingUrl).toMatch(new RegExp(`${callId}/mono\\.wav$`));
    expect(analytics.analytics.summary).toContain('renew');
    const metrics = Object.fromEntries(analytics.analytics.dispositionMetrics.map((m: any) => [m.identifier, m.value]));
    expect(metrics).toEqual({ wants_renewal: true, item: 'books', card: null });
    expect(analytics.callData.callStatus).toBe('completed');

    // The delivery log says what happened to each.
    const log = await server.request('GET', `${A}/webhook/${webhookId}/deliveries?callId=${callId}`);
    expect(log.status, log.text).toBe(200);
    expect(log.body.data.deliveries.map((d: any) => d.status)).toEqual(['DELIVERED', 'DELIVERED', 'DELIVERED']);

    // Recordings: a signed URL per channel, served by the same server.
    const mono = await server.request('GET', `${A}/recordings/${callId}?channel=mono`);
    expect(mono.status, mono.text).toBe(200);
    const monoWav = Buffer.from(await (await fetch(mono.body.data.url)).arrayBuffer());
    const monoAudio = readWav(monoWav);
    expect(monoAudio.sampleRate).toBe(16000);
    expect(monoAudio.samples.length / 16000).toBeGreaterThan(post.callData.callDuration - 1.5);
    const dual = await server.request('GET', `${A}/recordings/${callId}?channel=dual`);
    const dualRes = await fetch(dual.body.data.url);
    expect(dualRes.headers.get('content-type')).toBe('audio/wav');
    const dualWav = Buffer.from(await dualRes.arrayBuffer());
    expect(dualWav.readUInt16LE(22)).toBe(2); // channels
    // The recording holds the conversation: recognising the mono mix finds both sides.
    const stt = await server.request('POST', '/waves/v1/stt/?model=pulse&language=en', { raw: monoWav, headers: { 'content-type': 'audio/wav' } });
    const heard = JSON.stringify(stt.body).toLowerCase();
    expect(heard).toContain('renew');
    expect(heard).toContain('goodbye');

    // Tampered or foreign links are refused; the wire's download-url route works too.
    const tampered = mono.body.data.url.replace(/signature=([0-9a-f])/, (_m: string, ch: string) => `signature=${ch === 'a' ? 'b' : 'a'}`);
    expect((await fetch(tampered)).status).toBe(403);
    expect((await fetch(mono.body.data.url.replace(/expires=\d+/, 'expires=9999999999'))).status).toBe(403);
    const dl = await server.request('GET', `${A}/conversation/${callId}/recording/download-url`);
    expect(dl.status).toBe(200);
    expect((await fetch(dl.body.data.presignedUrl)).status).toBe(200);
    expect((await server.request('GET', `${A}/recordings/${callId}?channel=stereo`)).status).toBe(400);
    const call = await server.request('GET', `${A}/conversation/${callId}`);
    expect(call.body.data.recordingUrl).toBe(post.recordingUrl);
    expect(call.body.data.postCallAnalytics.summary).toBe(analytics.analytics.summary);
  }, 90_000);

  it('signed URLs expire', () => {
    const objects = new ObjectStore('/nonexistent', Buffer.alloc(32, 7));
    const key = 'org1/CALL-1795451257102-731734/mono.wav';
    const { expires, signature } = objects.sign(key, 1_000);
    expect(objects.verify(key, expires, signature, 999_000)).toBe(true);
    expect(objects.verify(key, expires, signature, 1_001_000)).toBe(false);
    expect(objects.verify('org1/CALL-1795451257102-731734/dual.wav', expires, signature, 999_000)).toBe(false);
  });

  it('a chat call has no recording', async () => {
    const created = await server.request('POST', `${A}/agent`, { body: { name: 'chat', workflowType: 'workflow_graph', workflowGraph: GRAPH } });
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: created.body.data, mode: 'chat' }), 24000);
    await c.opened;
    const session = await c.waitFor((f) => f.type === 'session.created');
    await c.agentTurn(0);
    c.send({ type: 'input_text.send', text: 'yes' });
    await c.closed;
    for (let i = 0; i < 30; i++) {
      const res = await server.request('GET', `${A}/conversation/${session.call_id}`);
      if (res.body.data.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await server.request('GET', `${A}/recordings/${session.call_id}?channel=mono`)).status).toBe(404);
  }, 30_000);
});
