// Pronunciation dictionaries (issue 35 item 3) against the real server on both stores: `/waves/v1/pronunciation-dicts`
// list, create, replace and delete per organization with the wire's shapes and its 400 body naming the field; the
// words said as their pronunciation by POST /tts, its SSE stream and the live synthesis socket (heard back by our own
// recognizer); unknown ids refused (400) on synthesis and on an agent's `pronunciationDicts`; and an agent naming a
// dictionary (and an inline entry) speaks the alias on a voice call; speech-to-speech sessions naming one say it too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createOrgKey, testDialects, type TestServer } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { AgentCaller, connectUrl } from './support/agent-client.js';
import { decodeLinear16 } from '../engine/audio/pcm.js';
import { writeWav } from '../engine/audio/wav.js';
import { OpenAiMock } from './support/openai-mock.js';

const W = '/waves/v1';
const P = `${W}/pronunciation-dicts`;
const A = '/atoms/v1';
const SENTENCE = 'My favourite animal is the cat.';

/** What our recognizer hears in 16-bit PCM at `rate` (lower case, letters and spaces). */
async function hear(server: TestServer, pcm: Buffer, rate: number): Promise<string> {
  const wav = writeWav(decodeLinear16(pcm), rate);
  const res = await fetch(`${server.base}${W}/stt/`, { method: 'POST', headers: { authorization: `Bearer ${server.key}`, 'content-type': 'audio/wav' }, body: new Uint8Array(wav) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { transcription: string }).transcription.toLowerCase().replace(/[^a-z ]/g, ' ');
}

async function tts(server: TestServer, body: Record<string, unknown>): Promise<{ status: number; pcm: Buffer; json: any }> {
  const res = await fetch(`${server.base}${W}/tts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ voice_id: 'kal16', output_format: 'pcm', sample_rate: 16000, ...body }),
  });
  const buf = Buffer.from(await res.arrayBuffer());
  return { status: res.status, pcm: buf, json: res.status === 200 ? null : JSON.parse(buf.toString()) };
}

describe.each(testDialects())('pronunciation dictionaries on %s', (dialect) => {
  // The speech-to-speech model: says the sentence.
  const mock = new OpenAiMock({ respond: () => ({ text: SENTENCE }) });
  const env: Record<string, string> = { PARLEY_WARM_MODELS: 'false' };
  beforeAll(async () => {
    env.PARLEY_LLM_BASE_URL = await mock.start();
    env.PARLEY_LLM_MODEL = 'mock-model';
  });
  afterAll(() => mock.close());
  const suite = serverForSuite(dialect, env);

  it('creates, lists, replaces and deletes per organization, in the wire shapes', async () => {
    const { server } = suite;
    const created = await server.request('POST', P, { body: { items: [{ word: 'mysql', pronunciation: 'my-sequel' }] } });
    expect(created.status, created.text).toBe(200);
    expect(Object.keys(created.body).sort()).toEqual(['createdAt', 'id', 'items']);
    expect(created.body.items).toEqual([{ word: 'mysql', pronunciation: 'my-sequel' }]);
    expect(new Date(created.body.createdAt).toISOString()).toBe(created.body.createdAt);
    const id = created.body.id as string;

    const list = await server.request('GET', P);
    expect(list.status).toBe(200);
    expect(list.body).toContainEqual({ id, items: [{ word: 'mysql', pronunciation: 'my-sequel' }], createdAt: created.body.createdAt });

    const items = [{ word: 'mysql', pronunciation: 'my-sequel' }, { word: 'goodbye', pronunciation: 'goodbai' }];
    const updated = await server.request('PUT', P, { body: { id, items } });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toEqual({ id, items });
    expect((await server.request('GET', P)).body.find((d: any) => d.id === id).items).toEqual(items);

    // Another organization sees none of it and cannot touch it.
    const other = await createOrgKey(suite.store, 'other', `other-${dialect}`);
    expect((await server.request('GET', P, { key: other })).body).toEqual([]);
    const foreign = await server.request('PUT', P, { key: other, body: { id, items } });
    expect(foreign.status).toBe(404);
    expect(typeof foreign.body.error).toBe('string');
    expect((await server.request('DELETE', P, { key: other, body: { id } })).status).toBe(404);

    const deleted = await server.request('DELETE', P, { body: { id } });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ id, deleted: true });
    expect((await server.request('GET', P)).body.some((d: any) => d.id === id)).toBe(false);
    expect((await server.request('DELETE', P, { body: { id } })).status).toBe(404);
  });

  it('answers 400 with the wire body naming each wrong field, 401 without a key', async () => {
    const { server } = suite;
    const bad = async (method: string, body: unknown) => {
      const res = await server.request(method, P, { body });
      expect(res.status, res.text).toBe(400);
      expect(res.body.error).toBe('Invalid request body');
      expect(Array.isArray(res.body.details)).toBe(true);
      return res.body.details as { code: string; path: (string | number)[]; message: string }[];
    };
    expect((await bad('POST', {}))[0]).toMatchObject({ code: 'invalid_type', expected: 'array', received: 'undefined', path: ['items'] });
    expect((await bad('POST', { items: [] }))[0]?.path).toEqual(['items']);
    const missing = await bad('POST', { items: [{ word: 'x', pronunciation: 'ok' }, { word: '', pronunciation: 'y' }, { word: 'z' }] });
    expect(missing.map((d) => d.path)).toEqual([['items', 1, 'word'], ['items', 2, 'pronunciation']]);
    const ipa = await bad('POST', { items: [{ word: 'tomato', pronunciation: 'təˈmɑːtoʊ' }] });
    expect(ipa[0]?.path).toEqual(['items', 0, 'pronunciation']);
    expect(ipa[0]?.message).toMatch(/IPA/);
    expect((await bad('PUT', { items: [{ word: 'a', pronunciation: 'b' }] }))[0]?.path).toEqual(['id']);
    expect((await bad('DELETE', {}))[0]?.path).toEqual(['id']);
    const unauth = await server.request('GET', P, { key: null });
    expect(unauth.status).toBe(401);
    expect(unauth.body.error).toBe('Unauthorized');
  });

  it('says the word as its pronunciation on POST /tts (heard by our recognizer); unknown ids are refused', async () => {
    const { server } = suite;
    const dict = await server.request('POST', P, { body: { items: [{ word: 'CAT', pronunciation: 'elephant' }] } });
    expect(dict.status, dict.text).toBe(200);
    const plain = await tts(server, { text: SENTENCE });
    expect(plain.status).toBe(200);
    const heardPlain = await hear(server, plain.pcm, 16000);
    expect(heardPlain).toMatch(/\bcat\b/);
    expect(heardPlain).not.toMatch(/elephant/);

    const replaced = await tts(server, { text: SENTENCE, pronunciation_dicts: [dict.body.id] });
    expect(replaced.status).toBe(200);
    const heard = await hear(server, replaced.pcm, 16000);
    expect(heard).toMatch(/elephant/);
    expect(heard).not.toMatch(/\bcat\b/);

    const unknown = await tts(server, { text: SENTENCE, pronunciation_dicts: [dict.body.id, '64f1234567890abcdef12345'] });
    expect(unknown.status).toBe(400);
    expect(unknown.json.message).toMatch(/^pronunciation_dicts: .*64f1234567890abcdef12345/);
    const malformed = await tts(server, { text: SENTENCE, pronunciation_dicts: 'x' });
    expect(malformed.status).toBe(400);
    expect(malformed.json.message).toMatch(/pronunciation_dicts/);
    // Another organization's dictionary is unknown to this one.
    const other = await createOrgKey(suite.store, 'other2', `other2-${dialect}`);
    const res = await fetch(`${server.base}${W}/tts`, { method: 'POST', headers: { authorization: `Bearer ${other}`, 'content-type': 'application/json' }, body: JSON.stringify({ text: SENTENCE, voice_id: 'kal16', pronunciation_dicts: [dict.body.id] }) });
    expect(res.status).toBe(400);

    // The SSE stream says it too.
    const sse = await fetch(`${server.base}${W}/tts/live`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: SENTENCE, voice_id: 'kal16', output_format: 'pcm', sample_rate: 16000, pronunciation_dicts: [dict.body.id] }),
    });
    expect(sse.status).toBe(200);
    const frames = (await sse.text()).split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as { audio?: string });
    const streamed = await hear(server, Buffer.concat(frames.filter((f) => f.audio).map((f) => Buffer.from(f.audio as string, 'base64'))), 16000);
    expect(streamed).toMatch(/elephant/);
    expect(streamed).not.toMatch(/\bcat\b/);
  });

  it('says it on the live synthesis socket', async () => {
    const { server } = suite;
    const dict = await server.request('POST', P, { body: { items: [{ word: 'cat', pronunciation: 'elephant' }] } });
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}${W}/tts/live`, { headers: { authorization: `Bearer ${server.key}` } });
    const chunks: Buffer[] = [];
    const done = new Promise<void>((resolve, reject) => {
      ws.on('message', (data) => {
        const m = JSON.parse(data.toString()) as { status: string; data?: { audio: string }; error?: unknown };
        if (m.status === 'chunk' && m.data) chunks.push(Buffer.from(m.data.audio, 'base64'));
        if (m.status === 'complete') resolve();
        if (m.status === 'error') reject(new Error(JSON.stringify(m)));
      });
      ws.on('close', () => resolve());
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ voice_id: 'kal16', text: 'My favourite animal ', sample_rate: 16000, continue: true, pronunciation_dicts: [dict.body.id], complete_backoff_ms: 0 }));
    ws.send(JSON.stringify({ voice_id: 'kal16', text: 'is the cat.', continue: false }));
    await done;
    ws.close();
    const heard = await hear(server, Buffer.concat(chunks), 16000);
    expect(heard).toMatch(/elephant/);
    expect(heard).not.toMatch(/\bcat\b/);
  });

  it('refuses unknown ids in an agent config and speaks the alias on an agent voice call', async () => {
    const { server } = suite;
    const unknown = await server.request('POST', `${A}/agent`, { body: { name: 'dict agent', workflowType: 'workflow_graph', pronunciationDicts: ['64f1234567890abcdef12345'] } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors.join(' ')).toMatch(/pronunciationDicts: no pronunciation dictionary 64f1234567890abcdef12345/);
    const ipa = await server.request('POST', `${A}/agent`, { body: { name: 'dict agent', workflowType: 'workflow_graph', pronunciationDicts: [{ word: 'tomato', pronunciation: 'təˈmɑːtoʊ' }] } });
    expect(ipa.status).toBe(400);
    expect(ipa.body.errors.join(' ')).toMatch(/pronunciationDicts\.0\.pronunciation: .*IPA/);

    const dict = await server.request('POST', P, { body: { items: [{ word: 'cat', pronunciation: 'elephant' }] } });
    const graph = { startNodeId: 'hi', nodes: [{ id: 'hi', type: 'say', text: 'Hello there.' }], edges: [] };
    const created = await server.request('POST', `${A}/agent`, { body: { name: 'dict agent', workflowType: 'workflow_graph', workflowGraph: graph, firstMessage: SENTENCE, pronunciationDicts: [dict.body.id, { word: 'animal', pronunciation: 'dinosaur' }], speechFormatting: true } });
    expect(created.status, created.text).toBe(201);
    const agentId = created.body.data as string;
    // Updating the agent to another organization's (or a missing) id is refused too.
    const patched = await server.request('PATCH', `${A}/agent/${agentId}`, { body: { pronunciationDicts: [dict.body.id, 'nope'] } });
    expect(patched.status, patched.text).toBe(400);
    expect(patched.text).toMatch(/pronunciationDicts/);

    const rate = 16000;
    const caller = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(rate) }), rate);
    await caller.opened;
    caller.startMic();
    const turn = await caller.agentTurn(0, 30_000);
    // The transcript keeps the words written; the audio says the pronunciation.
    expect(turn.text).toBe(SENTENCE);
    const heard = await hear(server, caller.audioBetween(0, caller.frames.indexOf(turn) + 1), rate);
    caller.close();
    await caller.closed;
    expect(heard).toMatch(/elephant/);
    expect(heard).not.toMatch(/\bcat\b/);
    // The inline entry too.
    expect(heard).toMatch(/dinosaur/);
    expect(heard).not.toMatch(/animal/);
  });

  it('says it in a speech-to-speech session naming the dictionary; unknown ids are refused naming the field', async () => {
    const { server } = suite;
    const dict = await server.request('POST', P, { body: { items: [{ word: 'cat', pronunciation: 'elephant' }] } });
    const url = (q: Record<string, string>) => `ws://127.0.0.1:${server.port}${W}/s2s?${new URLSearchParams({ model: 'hydra-v1.1', api_key: server.key, ...q }).toString()}`;
    const bad = new AgentCaller(url({}), 16000);
    await bad.opened;
    bad.send({ type: 'session.configure', session: { voice: 'zoe', pronunciation_dicts: ['64f1234567890abcdef12345'] } });
    const err = await bad.waitFor((f) => f.type === 'error' || f.type === 'session.configured', 10_000);
    expect(err.type).toBe('error');
    expect(err.error.param).toBe('session.configure.session.pronunciation_dicts');
    bad.close();

    const c = new AgentCaller(url({}), 16000);
    await c.opened;
    c.send({ type: 'session.configure', session: { voice: 'zoe', generate_initial_response: true, pronunciation_dicts: [dict.body.id] } });
    expect((await c.waitFor((f) => f.type === 'session.configured' || f.type === 'error', 10_000)).type).toBe('session.configured');
    const done = await c.waitFor((f) => f.type === 'response.done', 30_000);
    const pcm = Buffer.concat(c.frames.filter((f) => f.type === 'response.output_audio.delta' && f.response_id === done.response.id).map((f) => Buffer.from(f.delta as string, 'base64')));
    c.close();
    const heard = await hear(server, pcm, 48000);
    expect(heard).toMatch(/elephant/);
    expect(heard).not.toMatch(/\bcat\b/);
  });
});
