// WSS /waves/v1/s2s end to end: a real server with the built-in speech models, a local server speaking the OpenAI
// streaming protocol as the language model, real speech streamed at real-time pace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshStore, sleep, startServer, type StoreEnv, type TestServer } from './support/server.js';
import { AgentCaller, speech, type Frame } from './support/agent-client.js';
import { OpenAiMock, type MockReply, type MockRequest } from './support/openai-mock.js';
import { decodeLinear16 } from '../engine/audio/codecs.js';
import { writeWav } from '../engine/audio/wav.js';
import { upgradeRefusal } from './support/ws-refusal.js';

const W = '/waves/v1';
const RATE = 16000;
const OUT_RATE = 48000;
const TOOL_TIMEOUT_MS = 1500;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const LONG_ANSWER =
  'Our reading rooms are open from nine in the morning until eight in the evening on weekdays, and from ten until four on Saturdays. ' +
  'We are closed on Sundays and on public holidays. You can renew your books online, by phone, or at any branch of the library.';
const WEATHER_TOOL = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const TIME_TOOL = { type: 'function', name: 'get_time', description: 'The current local time' };

let mock: OpenAiMock;
let server: TestServer;
let bare: TestServer;
let store: StoreEnv;
let bareStore: StoreEnv;
let script: (req: MockRequest) => MockReply = () => ({ text: 'Hello.' });

type Msg = { role: string; content: string | null; tool_call_id?: string; tool_calls?: unknown[] };
const messages = (req: MockRequest | undefined): Msg[] => (req?.body.messages ?? []) as unknown as Msg[];

function s2sUrl(s: TestServer, query: Record<string, string>): string {
  return `ws://127.0.0.1:${s.port}${W}/s2s?${new URLSearchParams(query).toString()}`;
}

function client(query: Record<string, string> = {}, s: TestServer = server): AgentCaller {
  return new AgentCaller(s2sUrl(s, { model: 'hydra-v1.1', api_key: s.key, ...query }), RATE);
}


async function configure(c: AgentCaller, session: Record<string, unknown>): Promise<Frame> {
  const mark = c.frames.length;
  c.send({ type: 'session.configure', session });
  return c.waitFor((f) => f.type === 'session.configured' || f.type === 'error', 10_000, mark);
}

const errorsAfter = (c: AgentCaller, mark: number): Frame[] => c.frames.slice(mark).filter((f) => f.type === 'error');

/** Frame types from `from` to `to` (inclusive), runs of audio deltas collapsed into one `delta`. */
function sequence(frames: Frame[], from: number, to: number): string[] {
  const out: string[] = [];
  for (const f of frames.slice(from, to + 1)) {
    const name = f.type === 'response.output_audio.delta' ? 'delta' : f.type.startsWith('conversation.item') ? `${f.type}(${f.item.role ?? f.item.type})` : f.type;
    if (name === 'delta' && out.at(-1) === 'delta') continue;
    out.push(name);
  }
  return out;
}

/** The response's audio (PCM16 48 kHz) as samples. */
function audioOf(c: AgentCaller, responseId: string): Float32Array {
  const pcm = Buffer.concat(c.frames.filter((f) => f.type === 'response.output_audio.delta' && f.response_id === responseId).map((f) => Buffer.from(f.delta as string, 'base64')));
  return decodeLinear16(pcm);
}

async function recognise(samples: Float32Array, rate: number): Promise<string> {
  const res = await server.request('POST', `${W}/stt/?model=pulse&language=en`, { raw: writeWav(samples, rate), headers: { 'content-type': 'audio/wav' } });
  expect(res.status, res.text).toBe(200);
  return String(res.body.transcription ?? JSON.stringify(res.body)).toLowerCase();
}

beforeAll(async () => {
  mock = new OpenAiMock({ respond: (req) => script(req) });
  const llmBase = await mock.start();
  store = freshStore('sqlite');
  bareStore = freshStore('sqlite');
  [server, bare] = await Promise.all([
    startServer({
      store,
      env: { PARLEY_WARM_MODELS: 'true', PARLEY_LLM_BASE_URL: llmBase, PARLEY_LLM_MODEL: 'test-model', PARLEY_S2S_TOOL_TIMEOUT_MS: String(TOOL_TIMEOUT_MS) },
    }),
    // No default language model; at most one speech session (an s2s session is one).
    startServer({ store: bareStore, env: { PARLEY_LLM_BASE_URL: '', PARLEY_MAX_SPEECH_SESSIONS: '1' } }),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all([server?.stop(), bare?.stop()]);
  await Promise.all([store?.cleanup(), bareStore?.cleanup()]);
  await mock?.close();
});

describe('WSS /s2s: connecting', () => {
  it('refuses before the upgrade: 401 without or with a bad key, 400 without or with an unknown model', async () => {
    const noKey = await upgradeRefusal(`ws://127.0.0.1:${server.port}${W}/s2s?model=hydra-v1.1`);
    expect(noKey.status).toBe(401);
    expect(typeof noKey.body.error).toBe('string');
    const badKey = await upgradeRefusal(s2sUrl(server, { model: 'hydra-v1.1', api_key: 'sk_not_a_key' }));
    expect(badKey.status).toBe(401);
    expect(Object.keys(badKey.body)).toEqual(['error']);
    const noModel = await upgradeRefusal(s2sUrl(server, { api_key: server.key }));
    expect(noModel.status).toBe(400);
    expect(noModel.body.error).toMatch(/model/);
    const unknown = await upgradeRefusal(s2sUrl(server, { model: 'hydra-v2', api_key: server.key }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toContain('hydra-v2');
  });

  it('accepts a short-lived access token in api_key; session.created carries an sv_ event id and a uuid', async () => {
    const minted = await server.request('POST', `${W}/auth/token`, { body: { ttl_seconds: 60 } });
    expect(minted.status, minted.text).toBeLessThan(300);
    const token = minted.body.access_token as string;
    expect(token).toMatch(/^wat_/);
    const c = client({ api_key: token });
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    expect(c.frames[0]).toBe(created);
    expect(created.event_id).toMatch(/^sv_/);
    expect(created.session_id).toMatch(UUID);
    c.close();
    await c.closed;
  });

  it('model=hydra: a model_deprecated warning precedes session.created', async () => {
    const c = client({ model: 'hydra' });
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    expect(c.frames[0]?.type).toBe('warning');
    expect(c.frames[0]?.code).toBe('model_deprecated');
    expect(typeof c.frames[0]?.message).toBe('string');
    expect(c.frames[1]?.type).toBe('session.created');
    // Its own voice table: a hydra voice is accepted.
    const configured = await configure(c, { voice: 'wren' });
    expect(configured.type).toBe('session.configured');
    expect(configured.session.voice).toBe('wren');
    c.close();
    await c.closed;
  });
});

describe('WSS /s2s: session.configure and frame errors', () => {
  it('an unknown voice is an error naming the param and echoing event_id; a corrected configure is applied once', async () => {
    const c = client();
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    c.send({ type: 'session.configure', event_id: 'evt_voice', session: { voice: 'nobody' } });
    const err = await c.waitFor((f) => f.type === 'error');
    expect(err.event_id).toMatch(/^sv_/);
    expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request_error', param: 'session.configure.session.voice', event_id: 'evt_voice' });
    // A hydra-v1.0 voice is not a hydra-v1.1 voice.
    c.send({ type: 'session.configure', event_id: 'evt_voice2', session: { voice: 'vaughn' } });
    const err2 = await c.waitFor((f) => f.type === 'error' && f.error.event_id === 'evt_voice2');
    expect(err2.error.param).toBe('session.configure.session.voice');

    // Defaults: voice sterling, no tools, no initial response; unknown keys ignored.
    const configured = await configure(c, { whatever: 1 });
    expect(configured.type).toBe('session.configured');
    expect(configured.session).toEqual({ instructions: '', voice: 'sterling', tools: [], generate_initial_response: false });
    const mark = c.frames.length;
    c.send({ type: 'session.configure', event_id: 'evt_again', session: { voice: 'zoe', instructions: 'ignored' } });
    await sleep(400);
    expect(c.frames.length).toBe(mark);
    c.close();
    await c.closed;
  });

  it('invalid_frame and invalid_audio errors echo event_id and the session goes on; session.update applies only tools', async () => {
    const c = client();
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    // Audio before session.configured is dropped without a reply, even when malformed.
    c.send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(640).toString('base64') });
    c.send({ type: 'input_audio_buffer.append', audio: '!!' });
    await sleep(200);
    expect(c.frames.map((f) => f.type)).toEqual(['session.created']);
    expect((await configure(c, { instructions: 'Be brief.', tools: [WEATHER_TOOL] })).session.tools).toEqual([WEATHER_TOOL]);

    const mark = c.frames.length;
    c.ws.send('this is not json');
    c.send({ type: 'no.such.type', event_id: 'e_type' });
    c.send({ type: 'input_audio_buffer.append', event_id: 'e_b64', audio: 'not base64!' });
    c.send({ type: 'input_audio_buffer.append', event_id: 'e_short', audio: Buffer.alloc(100).toString('base64') });
    c.send({ type: 'input_audio_buffer.append', event_id: 'e_odd', audio: Buffer.alloc(641).toString('base64') });
    c.send({ type: 'session.update', event_id: 'e_upd', session: { voice: 'zoe' } });
    c.send({ type: 'session.update', event_id: 'e_upd2', session: { tools: [{ ...TIME_TOOL, strict: true }] } });
    c.send({ type: 'response.cancel', event_id: 'e_cancel' }); // nothing in flight: a no-op
    c.send({ type: 'conversation.item.create', event_id: 'e_item', item: { type: 'function_call_output', call_id: 'call_x', output: '{}' } });
    const errors = await (async () => {
      for (let i = 0; i < 100 && errorsAfter(c, mark).length < 8; i++) await sleep(20);
      return errorsAfter(c, mark).map((f) => f.error);
    })();
    expect(errors).toEqual([
      expect.objectContaining({ type: 'invalid_request_error', code: 'invalid_frame', event_id: null }),
      expect.objectContaining({ code: 'invalid_frame', param: 'type', event_id: 'e_type' }),
      expect.objectContaining({ code: 'invalid_audio', param: 'audio', event_id: 'e_b64' }),
      expect.objectContaining({ code: 'invalid_audio', param: 'audio', event_id: 'e_short' }),
      expect.objectContaining({ code: 'invalid_audio', param: 'audio', event_id: 'e_odd' }),
      expect.objectContaining({ code: 'invalid_frame', param: 'session.update.session.voice', event_id: 'e_upd' }),
      expect.objectContaining({ code: 'invalid_frame', param: 'session.update.session.tools[0].strict', event_id: 'e_upd2' }),
      expect.objectContaining({ code: 'invalid_request_error', param: 'item.call_id', event_id: 'e_item' }),
    ]);
    for (const e of errors) expect(typeof e.message).toBe('string');

    // Still alive: a tools patch is applied and echoed; the same patch again is a no-op without a frame.
    const m2 = c.frames.length;
    c.send({ type: 'session.update', event_id: 'e_ok', session: { tools: [WEATHER_TOOL, TIME_TOOL] } });
    const updated = await c.waitFor((f) => f.type === 'session.updated', 5000, m2);
    expect(updated.session).toEqual({ tools: [WEATHER_TOOL, TIME_TOOL] });
    c.send({ type: 'session.update', session: { tools: [WEATHER_TOOL, TIME_TOOL] } });
    c.send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(1280).toString('base64') });
    await sleep(400);
    expect(c.frames.length).toBe(m2 + 1);
    c.close();
    await c.closed;
  });
});

describe('WSS /s2s: without a default language model', () => {
  it('session.configure is refused with model_not_configured naming PARLEY_LLM_BASE_URL; the session stays unconfigured', async () => {
    const c = client({}, bare);
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    c.send({ type: 'session.configure', event_id: 'cfg1', session: { instructions: 'Hello', voice: 'zoe' } });
    const err = await c.waitFor((f) => f.type === 'error');
    expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_configured', event_id: 'cfg1' });
    expect(err.error.message).toContain('PARLEY_LLM_BASE_URL');
    // Not applied, so a second configure is not ignored: it is refused again; nothing else proceeds.
    c.send({ type: 'session.configure', event_id: 'cfg2', session: {} });
    const err2 = await c.waitFor((f) => f.type === 'error' && f.error.event_id === 'cfg2');
    expect(err2.error.code).toBe('model_not_configured');
    c.send({ type: 'response.create', event_id: 'rc' });
    const err3 = await c.waitFor((f) => f.type === 'error' && f.error.event_id === 'rc');
    expect(err3.error.code).toBe('invalid_request_error');
    expect(c.frames.some((f) => f.type === 'session.configured' || f.type === 'response.created')).toBe(false);
    c.close();
    await c.closed;
  });

  it('over the speech-session cap: 503 before the upgrade', async () => {
    const first = client({}, bare);
    await first.opened;
    await first.waitFor((f) => f.type === 'session.created');
    const second = await upgradeRefusal(s2sUrl(bare, { model: 'hydra-v1.1', api_key: bare.key }));
    expect(second.status).toBe(503);
    expect(String(second.body.error)).toMatch(/limit of 1 concurrent speech sessions/);
    first.close();
    await first.closed;
  });
});

describe('WSS /s2s: conversation', () => {
  it('a spoken turn: the documented event order, chained items, real 48 kHz speech out, instructions as the system message', async () => {
    const instructions = 'You are the front desk of the city library. Answer in one short sentence.';
    const answer = 'The library opens at nine in the morning.';
    script = (req) => (messages(req).at(-1)?.role === 'user' ? { text: answer, chunkDelayMs: 10 } : { text: 'Sorry?' });
    const c = client();
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    const configured = await configure(c, { instructions, voice: 'zoe' });
    expect(configured.session).toEqual({ instructions, voice: 'zoe', tools: [], generate_initial_response: false });
    c.startMic();
    const mark = c.frames.length;
    const requestsBefore = mock.requests.length;
    await c.say(await speech(server, 'What time does the library open?'));
    const done = await c.waitFor((f) => f.type === 'response.done', 40_000, mark);
    const started = c.frames.findIndex((f, i) => i >= mark && f.type === 'input_audio_buffer.speech_started');
    expect(started).toBeGreaterThanOrEqual(mark);
    expect(sequence(c.frames, started, c.frames.indexOf(done))).toEqual([
      'input_audio_buffer.speech_started',
      'conversation.item.added(user)',
      'input_audio_buffer.speech_stopped',
      'conversation.item.done(user)',
      'response.created',
      'conversation.item.added(assistant)',
      'delta',
      'response.output_audio.done',
      'conversation.item.done(assistant)',
      'response.done',
    ]);
    const after = c.frames.slice(started);
    const find = (type: string, role?: string) => after.find((f) => f.type === type && (!role || f.item?.role === role)) as Frame;
    const speechStarted = find('input_audio_buffer.speech_started');
    const speechStopped = find('input_audio_buffer.speech_stopped');
    const userAdded = find('conversation.item.added', 'user');
    const userDone = find('conversation.item.done', 'user');
    const created = find('response.created');
    const asstAdded = find('conversation.item.added', 'assistant');
    const audioDone = find('response.output_audio.done');
    const asstDone = find('conversation.item.done', 'assistant');
    const userId = userAdded.item.id as string;
    expect(speechStarted.item_id).toBe(userId);
    expect(speechStopped.item_id).toBe(userId);
    expect(Number.isInteger(speechStarted.audio_start_ms)).toBe(true);
    expect(speechStopped.audio_end_ms).toBeGreaterThan(speechStarted.audio_start_ms + 800);
    expect(userAdded.item).toMatchObject({ type: 'message', role: 'user', status: 'in_progress' });
    expect(userDone.item).toMatchObject({ id: userId, type: 'message', role: 'user', status: 'completed' });
    expect(userDone.previous_item_id).toBe(userAdded.previous_item_id);
    expect(userDone.item.content[0]).toMatchObject({ type: 'input_audio', text: null });
    expect(String(userDone.item.content[0].transcript).toLowerCase()).toContain('library');
    const responseId = created.response.id as string;
    expect(responseId).toBeTruthy();
    expect(asstAdded.previous_item_id).toBe(userId);
    expect(asstAdded.item).toMatchObject({ type: 'message', role: 'assistant', status: 'in_progress' });
    const deltas = after.filter((f) => f.type === 'response.output_audio.delta');
    expect(deltas.length).toBeGreaterThan(20);
    for (const d of deltas) expect(d).toMatchObject({ response_id: responseId, item_id: asstAdded.item.id, output_index: 0, content_index: 0 });
    expect(audioDone).toMatchObject({ response_id: responseId, item_id: asstAdded.item.id, output_index: 0, content_index: 0 });
    expect(asstDone.previous_item_id).toBe(userId);
    expect(asstDone.item).toMatchObject({ id: asstAdded.item.id, role: 'assistant', status: 'completed', content: [{ type: 'output_audio', text: null, transcript: answer }] });
    expect(done.response).toMatchObject({ id: responseId, status: 'completed', status_details: null });
    expect(done.response.output).toEqual([asstDone.item]);
    const usage = done.response.usage;
    expect(usage.output_tokens).toBe(Math.ceil(answer.length / 4));
    expect(usage.input_tokens).toBeGreaterThanOrEqual(Math.ceil(instructions.length / 4));
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    const eventIds = c.frames.map((f) => f.event_id as string);
    expect(new Set(eventIds).size).toBe(eventIds.length);

    // The language model got the instructions as the system message and the recognised words.
    const req = mock.requests[requestsBefore];
    expect(mock.requests.length).toBe(requestsBefore + 1);
    expect(req?.body.model).toBe('test-model');
    expect(messages(req)[0]).toEqual({ role: 'system', content: instructions });
    expect(messages(req).at(-1)?.role).toBe('user');
    expect(String(messages(req).at(-1)?.content).toLowerCase()).toContain('library');

    // The output is real speech at 48 kHz: recognising it gives back the model's words.
    const audio = audioOf(c, responseId);
    expect(audio.length / OUT_RATE).toBeGreaterThan(1.2);
    const heard = await recognise(audio, OUT_RATE);
    expect(heard).toMatch(/library|morning/);
    c.close();
    await c.closed;
  }, 90_000);

  it('generate_initial_response answers at once; response.cancel stops it (cancelled, client_cancelled, no more audio)', async () => {
    script = () => ({ text: LONG_ANSWER });
    const c = client();
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    const requestsBefore = mock.requests.length;
    const configured = await configure(c, { instructions: 'Tell the caller about the library.', generate_initial_response: true });
    expect(configured.session.generate_initial_response).toBe(true);
    c.startMic();
    const cfgIdx = c.frames.indexOf(configured);
    const created = await c.waitFor((f) => f.type === 'response.created', 10_000, cfgIdx);
    expect(c.frames.indexOf(created)).toBe(cfgIdx + 1);
    const responseId = created.response.id as string;
    for (let i = 0; i < 200 && c.of('response.output_audio.delta').length < 25; i++) await sleep(20);
    expect(messages(mock.requests[requestsBefore])).toEqual([{ role: 'system', content: 'Tell the caller about the library.' }]);
    c.send({ type: 'response.cancel', event_id: 'cancel_1', response_id: responseId });
    const done = await c.waitFor((f) => f.type === 'response.done', 5000);
    expect(done.response).toMatchObject({ id: responseId, status: 'cancelled', status_details: { type: 'cancelled', reason: 'client_cancelled' } });
    const asst = done.response.output[0];
    expect(asst).toMatchObject({ type: 'message', role: 'assistant', status: 'incomplete' });
    expect(asst.content[0].transcript.length).toBeLessThan(LONG_ANSWER.length / 2);
    const sequenceOfResponse = sequence(c.frames, c.frames.indexOf(created), c.frames.indexOf(done));
    expect(sequenceOfResponse).toEqual(['response.created', 'conversation.item.added(assistant)', 'delta', 'response.output_audio.done', 'conversation.item.done(assistant)', 'response.done']);
    const doneIdx = c.frames.indexOf(done);
    await sleep(700);
    expect(c.frames.slice(doneIdx + 1).filter((f) => f.type === 'response.output_audio.delta')).toEqual([]);
    // Nothing in flight any more: another cancel is a no-op.
    c.send({ type: 'response.cancel', event_id: 'cancel_2' });
    await sleep(300);
    expect(c.frames.length).toBe(doneIdx + 1);
    c.close();
    await c.closed;
  }, 30_000);

  it('barge-in: speech over the model cancels its response (interrupted), then the user turn is answered', async () => {
    script = (req) => {
      const last = messages(req).at(-1);
      if (last?.role === 'user' && /sunday/i.test(String(last.content))) return { text: 'We are closed on Sundays.' };
      return { text: LONG_ANSWER };
    };
    const c = client();
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    await configure(c, { instructions: 'Tell the caller about the library.', voice: 'zoe', generate_initial_response: true });
    c.startMic();
    const created = await c.waitFor((f) => f.type === 'response.created', 10_000);
    for (let i = 0; i < 200 && c.of('response.output_audio.delta').length < 60; i++) await sleep(20);
    const mark = c.frames.length;
    await c.say(await speech(server, 'Wait, are you open on Sundays?'));
    const cancelled = await c.waitFor((f) => f.type === 'response.done', 20_000, mark);
    expect(cancelled.response).toMatchObject({ id: created.response.id, status: 'cancelled', status_details: { type: 'cancelled', reason: 'interrupted' } });
    expect(cancelled.response.output[0].status).toBe('incomplete');
    const speechStarted = c.frames.find((f, i) => i >= mark && f.type === 'input_audio_buffer.speech_started') as Frame;
    expect(c.frames.indexOf(speechStarted)).toBeLessThan(c.frames.indexOf(cancelled));
    const answered = await c.waitFor((f) => f.type === 'response.done' && f !== cancelled, 30_000, mark);
    expect(answered.response.status).toBe('completed');
    expect(answered.response.output[0].content[0].transcript).toBe('We are closed on Sundays.');
    const userDone = c.frames.find((f, i) => i >= mark && f.type === 'conversation.item.done' && f.item.role === 'user' && f.item.status === 'completed') as Frame;
    expect(userDone.item.id).toBe(speechStarted.item_id);
    const created2 = c.frames.find((f, i) => i >= mark && f.type === 'response.created') as Frame;
    expect(c.frames.indexOf(cancelled)).toBeLessThan(c.frames.indexOf(created2));
    expect(c.frames.indexOf(userDone)).toBeLessThan(c.frames.indexOf(created2));
    // No audio of the interrupted response after its response.done.
    expect(c.frames.slice(c.frames.indexOf(cancelled)).filter((f) => f.type === 'response.output_audio.delta' && f.response_id === created.response.id)).toEqual([]);
    c.close();
    await c.closed;
  }, 60_000);

  it('a tool call round trip: arguments events, response.done with the call, output + response.create, narration in a new response', async () => {
    const narration = 'It is sunny in Paris today.';
    script = (req) => {
      const last = messages(req).at(-1);
      if (last?.role === 'tool') return { text: narration };
      if (last?.role === 'user' && /weather/i.test(String(last.content))) return { toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] };
      return { text: 'Sorry?' };
    };
    const c = client();
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    await configure(c, { instructions: 'You are a weather assistant.', voice: 'maya', tools: [WEATHER_TOOL] });
    c.send({ type: 'session.update', session: { tools: [WEATHER_TOOL, TIME_TOOL] } });
    await c.waitFor((f) => f.type === 'session.updated');
    c.startMic();
    const mark = c.frames.length;
    const requestsBefore = mock.requests.length;
    await c.say(await speech(server, 'What is the weather like in Paris?'));
    const argsDone = await c.waitFor((f) => f.type === 'response.function_call_arguments.done', 40_000, mark);
    const first = await c.waitFor((f) => f.type === 'response.done', 10_000, mark);
    const created = c.frames.find((f, i) => i >= mark && f.type === 'response.created') as Frame;
    expect(sequence(c.frames, c.frames.indexOf(created), c.frames.indexOf(first))).toEqual([
      'response.created',
      'conversation.item.added(function_call)',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'conversation.item.done(function_call)',
      'response.done',
    ]);
    const deltas = c.of('response.function_call_arguments.delta', (f) => f.call_id === argsDone.call_id);
    expect(deltas[0]?.name).toBe('get_weather');
    expect(deltas.map((d) => d.delta).join('')).toBe('{"city":"Paris"}');
    expect(argsDone).toMatchObject({ response_id: created.response.id, name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(first.response.status).toBe('completed');
    expect(first.response.output).toEqual([expect.objectContaining({ type: 'function_call', status: 'completed', call_id: argsDone.call_id, name: 'get_weather', arguments: '{"city":"Paris"}' })]);
    // The model was offered both tools (the update applied).
    const asked = mock.requests[requestsBefore];
    expect((asked?.body.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(['get_weather', 'get_time']);

    const m2 = c.frames.length;
    const output = '{"forecast":"sunny","high_c":24}';
    c.send({ type: 'conversation.item.create', event_id: 'out_1', item: { type: 'function_call_output', call_id: argsDone.call_id, output } });
    const outDone = await c.waitFor((f) => f.type === 'conversation.item.done' && f.item.type === 'function_call_output', 5000, m2);
    expect(outDone.item).toMatchObject({ call_id: argsDone.call_id, output });
    c.send({ type: 'response.create', event_id: 'go' });
    const created2 = await c.waitFor((f) => f.type === 'response.created', 5000, m2);
    expect(created2.response.id).not.toBe(created.response.id);
    const done2 = await c.waitFor((f) => f.type === 'response.done', 30_000, c.frames.indexOf(created2));
    expect(done2.response).toMatchObject({ id: created2.response.id, status: 'completed' });
    expect(done2.response.output[0].content[0].transcript).toBe(narration);
    expect(audioOf(c, created2.response.id).length / OUT_RATE).toBeGreaterThan(0.8);
    const toolMsg = messages(mock.requests.at(-1)).find((m) => m.role === 'tool');
    expect(toolMsg).toEqual({ role: 'tool', tool_call_id: argsDone.call_id, content: output });
    expect(errorsAfter(c, mark)).toEqual([]);
    c.close();
    await c.closed;
  }, 90_000);

  it('no tool output in time: error tool_response_timeout, the turn is abandoned, the conversation goes on', async () => {
    script = (req) => {
      const last = messages(req).at(-1);
      if (last?.role === 'system') return { text: 'Let me check the clock for you.', toolCalls: [{ name: 'get_time', arguments: '{}' }] };
      if (last?.role === 'tool') return { text: 'Sorry, I could not find the time.' };
      return { text: 'Sorry?' };
    };
    const c = client();
    await c.opened;
    await c.waitFor((f) => f.type === 'session.created');
    await configure(c, { instructions: 'Tell the time.', tools: [TIME_TOOL], generate_initial_response: true });
    c.startMic();
    const args = await c.waitFor((f) => f.type === 'response.function_call_arguments.done', 10_000);
    const first = await c.waitFor((f) => f.type === 'response.done', 5000);
    // The model spoke before calling: that speech is the response's message, and the response ends after its audio.
    expect(first.response.output.map((o: any) => o.type)).toEqual(['message', 'function_call']);
    expect(first.response.output[0].content[0].transcript).toBe('Let me check the clock for you.');
    const firstId = first.response.id as string;
    const lastDelta = c.frames.filter((f) => f.type === 'response.output_audio.delta' && f.response_id === firstId).at(-1) as Frame;
    expect(c.frames.indexOf(lastDelta)).toBeLessThan(c.frames.indexOf(first));
    expect(c.frames.indexOf(args)).toBeLessThan(c.frames.indexOf(first));
    expect(audioOf(c, firstId).length / OUT_RATE).toBeGreaterThan(1);
    const timeout = await c.waitFor((f) => f.type === 'error', TOOL_TIMEOUT_MS + 3000);
    expect(timeout.error).toMatchObject({ code: 'tool_response_timeout', event_id: null });
    expect(timeout.at - first.at).toBeGreaterThan(TOOL_TIMEOUT_MS - 100);
    // The call is no longer waiting.
    c.send({ type: 'conversation.item.create', event_id: 'late', item: { type: 'function_call_output', call_id: args.call_id, output: '"12:00"' } });
    const late = await c.waitFor((f) => f.type === 'error' && f.error.event_id === 'late');
    expect(late.error.param).toBe('item.call_id');
    // A new response: the model's history tells it the tool timed out.
    const mark = c.frames.length;
    c.send({ type: 'response.create' });
    const done = await c.waitFor((f) => f.type === 'response.done', 20_000, mark);
    expect(done.response.status).toBe('completed');
    expect(done.response.output[0].content[0].transcript).toBe('Sorry, I could not find the time.');
    const history = messages(mock.requests.at(-1));
    const toolMsg = history.find((m) => m.role === 'tool');
    expect(toolMsg?.tool_call_id).toBe(args.call_id);
    expect(String(toolMsg?.content)).toMatch(/error/);
    expect(c.of('response.done').length).toBe(2);
    expect(c.frames.slice(c.frames.indexOf(first) + 1, mark).filter((f) => f.type === 'response.output_audio.delta')).toEqual([]);
    c.close();
    await c.closed;
  }, 40_000);
});
