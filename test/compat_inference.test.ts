// Inference API compatibility: /streaming-tts/stream, string speakers, the marked default voice, one error shape per route kind.
import { describe, expect, it } from 'vitest';
import http from 'node:http';
import WebSocket from 'ws';
import { serverForSuite } from './support/suite.js';
import { testDialects } from './support/server.js';
import { asteriskWav } from './support/speech.js';
import { upgradeRefusal } from './support/ws-refusal.js';
import { RHVOICE_INSTALLED } from './support/rhvoice.js';
import { PICO_VOICE_IDS } from './support/pico.js';

const W = '/waves/v1';

interface Frame {
  status: string;
  data?: { audio: string };
  [key: string]: unknown;
}

/** Speaks one request over a synthesis socket; resolves with every frame and the close code. */
function speak(url: string, key: string, messages: object[]): Promise<{ frames: Frame[]; code: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${key}` } });
    const frames: Frame[] = [];
    ws.on('message', (d) => frames.push(JSON.parse(d.toString()) as Frame));
    ws.once('open', () => messages.forEach((m) => ws.send(JSON.stringify(m))));
    ws.once('close', (code) => resolve({ frames, code }));
    ws.once('unexpected-response', (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}


/** Any method with any body (fetch refuses a body on GET), each on a connection of its own. */
function rawHttp(port: number, method: string, path: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ agent: false, host: '127.0.0.1', port, method, path, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('speech compatibility', () => {
  const suite = serverForSuite('sqlite', { PARLEY_WARM_MODELS: 'true' });
  const ws = (path: string) => `ws://127.0.0.1:${suite.server.port}${W}${path}`;

  it('WSS /streaming-tts/stream serves what WSS /tts/live serves: the same frames and the same audio', async () => {
    const messages = [
      { voice_id: 'kal16', text: 'Your table is ready. ', sample_rate: 16000, continue: true, request_id: 'cmp-1' },
      { voice_id: 'kal16', text: 'Please follow me to the terrace.', continue: true },
      { voice_id: 'kal16', text: '', flush: true, complete_backoff_ms: 0 },
    ];
    const live = await speak(ws('/tts/live'), suite.server.key, messages);
    const older = await speak(ws('/streaming-tts/stream'), suite.server.key, messages);
    for (const run of [live, older]) {
      expect(run.code).toBe(1000);
      expect(run.frames.at(-1)).toEqual({ session_id: expect.stringMatching(/^ws_/), request_id: expect.stringMatching(/^task_/), external_request_id: 'cmp-1', status: 'complete' });
    }
    const chunks = (run: { frames: Frame[] }) => run.frames.filter((f) => f.status === 'chunk');
    expect(chunks(older).length).toBeGreaterThanOrEqual(2);
    expect(chunks(older).length).toBe(chunks(live).length);
    expect(older.frames.map((f) => Object.keys(f).sort())).toEqual(live.frames.map((f) => Object.keys(f).sort()));
    const pcm = (run: { frames: Frame[] }) => Buffer.concat(chunks(run).map((f) => Buffer.from(f.data!.audio, 'base64')));
    expect(pcm(older).length / 2 / 16000).toBeGreaterThan(1.5);
    expect(pcm(older).length).toBe(pcm(live).length);
    // Flite is deterministic: the two paths produce the same samples.
    expect(pcm(older).equals(pcm(live))).toBe(true);
    // Same query parameters and limits: a bad timeout is refused the same way on both paths.
    const auth = { authorization: `Bearer ${suite.server.key}` };
    const refusedLive = await upgradeRefusal(ws('/tts/live?timeout=0'), auth);
    expect(await upgradeRefusal(ws('/streaming-tts/stream?timeout=0'), auth)).toEqual(refusedLive);
    expect(refusedLive).toEqual({ status: 400, body: { error: 'InvalidRequest', message: expect.stringContaining('timeout') } });
  });

  it('utterances carry the speaker as a string ("speaker_0") on POST /stt/ and legacy get_text', async () => {
    for (const path of ['/stt/?model=pulse&language=en&word_timestamps=true', '/pulse/get_text?language=en&word_timestamps=true']) {
      const res = await suite.server.request('POST', `${W}${path}`, { raw: asteriskWav('hello-world'), headers: { 'content-type': 'audio/wav' } });
      expect(res.status, res.text).toBe(200);
      expect(res.body.utterances.length, path).toBeGreaterThanOrEqual(1);
      for (const u of res.body.utterances) expect(u).toEqual({ text: expect.any(String), start: expect.any(Number), end: expect.any(Number), speaker: 'speaker_0' });
    }
  });

  it('the voice catalog lists the default voice first (RHVoice slt when installed, else Flite slt), and marks it alone with isDefault', async () => {
    const flite = ['kal', 'kal16', 'awb', 'rms', 'slt'];
    const dflt = RHVOICE_INSTALLED ? 'rhvoice-slt' : 'slt';
    const all = [...(RHVOICE_INSTALLED ? ['rhvoice-slt', 'rhvoice-clb', 'rhvoice-bdl', 'rhvoice-alan', ...flite] : ['slt', 'kal', 'kal16', 'awb', 'rms']), ...PICO_VOICE_IDS];
    for (const path of ['/voice/get-all-models', '/lightning-v3.1/get_voices']) {
      const res = await suite.server.request('GET', `${W}${path}`);
      expect(res.status).toBe(200);
      const voices = res.body.voices as Record<string, unknown>[];
      expect(voices[0], path).toMatchObject({ voiceId: dflt, isDefault: true });
      expect(voices.filter((v) => 'isDefault' in v), path).toHaveLength(1);
      expect(voices.map((v) => v.voiceId)).toEqual(all);
    }
    // An engine's own list has its voices only.
    const own = await suite.server.request('GET', `${W}/flite/get_voices`);
    expect(own.body.voices.map((v: { voiceId: string }) => v.voiceId)).toEqual(RHVOICE_INSTALLED ? flite : ['slt', 'kal', 'kal16', 'awb', 'rms']);
    // The default voice is what the catalog says: it synthesises.
    const res = await suite.server.request('POST', `${W}/tts`, { body: { text: 'Hello.', voice_id: dflt, output_format: 'wav' } });
    expect(res.status).toBe(200);
  });
});

// --------------------------------------------------------------------------------------------------------------------
// One error shape per kind of route, whatever produced the error.

const TTS_NAMES: Record<number, string> = { 400: 'InvalidRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 413: 'PayloadTooLarge' };
type Kind = 'tts' | 'stt' | 'legacyStt' | 'token' | 's2s';
/** The expected body of an error with this status (and, on /auth/token, this code) per kind of route. */
const SHAPES: Record<Kind, (status: number, code?: string) => unknown> = {
  tts: (status) => ({ error: TTS_NAMES[status], message: expect.any(String) }),
  stt: () => ({ error: expect.any(String) }),
  legacyStt: (status) => (status === 401 ? { error: 'unauthorized' } : status === 400 ? { status: 'error', message: 'Error handling audio data', errors: expect.any(String) } : { error: expect.any(String) }),
  token: (status, code) =>
    status === 400 || status === 413
      ? { status: 'error', message: expect.any(String), errors: [{ code, message: expect.any(String), path: expect.any(Array) }] }
      : { error: expect.any(String) },
  s2s: () => ({ error: expect.any(String) }),
};

/** One request of a table row: method, path, body (JSON text or bytes), content type. */
interface Call {
  method: string;
  path: string;
  body?: string | Buffer;
  type?: string;
}

const STT_LIMIT = 2048;
const json = (value: unknown) => JSON.stringify(value);
const badJson = '{"text": "hello", ';
const oversize = (bytes: number) => Buffer.alloc(bytes + 16, 0x20);

/** Per kind of HTTP route: a valid-looking request, its bad JSON, oversize and validation failures. */
const HTTP_ROUTES: { kind: Kind; name: string; ok: Call; badJson?: Call; oversize: Call; invalid: Call; invalidCode?: string }[] = [
  ...['/tts', '/tts/live', '/lightning-v3.1/get_speech', '/lightning-v3.1/stream'].map((path) => ({
    kind: 'tts' as const,
    name: `POST ${path}`,
    ok: { method: 'POST', path, body: json({ text: 'Hi.', voice_id: 'slt' }), type: 'application/json' },
    badJson: { method: 'POST', path, body: badJson, type: 'application/json' },
    oversize: { method: 'POST', path, body: oversize(64 * 1024), type: 'application/json' },
    invalid: { method: 'POST', path, body: json({ text: '', voice_id: 'slt' }), type: 'application/json' },
  })),
  {
    kind: 'stt',
    name: 'POST /stt/',
    ok: { method: 'POST', path: '/stt/?model=pulse&language=en', body: json({ url: 'http://127.0.0.1:9/a.wav' }), type: 'application/json' },
    badJson: { method: 'POST', path: '/stt/?model=pulse&language=en', body: badJson, type: 'application/json' },
    oversize: { method: 'POST', path: '/stt/?model=pulse&language=en', body: oversize(STT_LIMIT), type: 'audio/wav' },
    invalid: { method: 'POST', path: '/stt/?model=whisper-large&language=en', body: Buffer.from('RIFF'), type: 'audio/wav' },
  },
  {
    kind: 'legacyStt',
    name: 'POST /pulse/get_text',
    ok: { method: 'POST', path: '/pulse/get_text?language=en', body: Buffer.from('RIFF'), type: 'audio/wav' },
    badJson: { method: 'POST', path: '/pulse/get_text?language=en', body: badJson, type: 'application/json' },
    oversize: { method: 'POST', path: '/pulse/get_text?language=en', body: oversize(STT_LIMIT), type: 'audio/wav' },
    invalid: { method: 'POST', path: '/pulse/get_text?language=fr', body: Buffer.from('RIFF'), type: 'audio/wav' },
  },
  {
    kind: 'token',
    name: 'POST /auth/token',
    ok: { method: 'POST', path: '/auth/token', body: json({ ttl_seconds: 60 }), type: 'application/json' },
    badJson: { method: 'POST', path: '/auth/token', body: badJson, type: 'application/json' },
    oversize: { method: 'POST', path: '/auth/token', body: oversize(4096), type: 'application/json' },
    invalid: { method: 'POST', path: '/auth/token', body: json({ ttl_seconds: 5 }), type: 'application/json' },
    invalidCode: 'invalid_ttl',
  },
  ...['/voice/get-all-models', '/lightning-v3.1/get_voices'].map((path) => ({
    kind: 'tts' as const,
    name: `GET ${path}`,
    ok: { method: 'GET', path },
    // A GET reads no body: any body is over its limit (0 bytes).
    oversize: { method: 'GET', path, body: Buffer.from('{}'), type: 'application/json' },
    invalid: { method: 'GET', path: '/nonsense/get_voices' },
  })),
];

describe.each(testDialects())('error bodies on /waves (%s)', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_STT_MAX_BYTES: String(STT_LIMIT) });
  const call = (c: Call, key: string | null = suite.server.key) => {
    const headers: Record<string, string> = c.type ? { 'content-type': c.type } : {};
    if (key) headers.authorization = `Bearer ${key}`;
    return rawHttp(suite.server.port, c.method, W + c.path, headers, Buffer.from(c.body ?? ''));
  };

  it.each(HTTP_ROUTES)('$name: bad JSON, oversize, missing key, bad key and validation errors share its one shape', async (route) => {
    const shape = SHAPES[route.kind];
    const cases: [string, () => ReturnType<typeof call>, number, unknown][] = [
      // The legacy recognition route's wire: no credential is `{message}`, oversize is a 400.
      ['missing key', () => call(route.ok, null), 401, route.kind === 'legacyStt' ? { message: 'no tokens provided' } : shape(401)],
      ['bad key', () => call(route.ok, 'sk_not_a_key'), 401, shape(401)],
      ['oversize', () => call(route.oversize), route.kind === 'legacyStt' ? 400 : 413, route.kind === 'legacyStt' ? shape(400) : shape(413, 'body_too_large')],
      ['validation', () => call(route.invalid), 400, shape(400, route.invalidCode ?? 'invalid_request')],
    ];
    if (route.badJson) cases.push(['bad JSON', () => call(route.badJson as Call), 400, shape(400, 'invalid_json')]);
    for (const [what, send, status, body] of cases) expect(await send(), `${route.name}: ${what}`).toEqual({ status, body });
  });

  it('access tokens refused (403) on /auth/token and legacy get_text answer those routes\' shapes', async () => {
    const token = (await call({ method: 'POST', path: '/auth/token' })).body as { access_token: string };
    expect(await call({ method: 'POST', path: '/auth/token' }, token.access_token)).toEqual({ status: 403, body: SHAPES.token(403) });
    expect(await call({ method: 'POST', path: '/pulse/get_text?language=en', body: Buffer.from('RIFF'), type: 'audio/wav' }, token.access_token)).toEqual({ status: 403, body: SHAPES.legacyStt(403) });
    // Unknown models on the legacy paths are route errors in the same shapes.
    expect(await call({ method: 'POST', path: '/gpt-9/get_speech', body: json({ text: 'Hi.', voice_id: 'slt' }), type: 'application/json' })).toEqual({ status: 404, body: SHAPES.tts(404) });
    expect(await call({ method: 'POST', path: '/whisper-9/get_text', body: Buffer.from('RIFF'), type: 'audio/wav' })).toEqual({ status: 404, body: SHAPES.legacyStt(404) });
  });

  it('a non-object JSON body is a clear 400, never a crash', async () => {
    expect(await call({ method: 'POST', path: '/stt/?model=pulse&language=en', body: 'null', type: 'application/json' })).toEqual({ status: 400, body: { error: expect.stringContaining('url') } });
    expect(await call({ method: 'POST', path: '/auth/token', body: '[1]', type: 'application/json' })).toEqual({ status: 400, body: SHAPES.token(400, 'invalid_body') });
    expect(await call({ method: 'POST', path: '/tts', body: '"text"', type: 'application/json' })).toEqual({ status: 400, body: SHAPES.tts(400) });
  });

  it('retired legacy synthesis families answer the documented 410 MODEL_DEPRECATED body', async () => {
    const res = await call({ method: 'POST', path: '/lightning-v2/get_speech', body: json({ text: 'Hi.', voice_id: 'slt' }), type: 'application/json' });
    expect(res).toEqual({
      status: 410,
      body: { status: 'error', error_code: 'MODEL_DEPRECATED', message: expect.stringContaining('lightning-v3.1'), recommended_endpoint: `${W}/lightning-v3.1/get_speech` },
    });
  });

  it.each([
    { kind: 'tts' as const, path: '/tts/live', invalid: '/tts/live?timeout=0' },
    { kind: 'tts' as const, path: '/streaming-tts/stream', invalid: '/streaming-tts/stream?timeout=0' },
    { kind: 'tts' as const, path: '/lightning-v3.1/get_speech/stream', invalid: '/lightning-v3.1/get_speech/stream?timeout=abc' },
    { kind: 'stt' as const, path: '/stt/live?language=en', invalid: '/stt/live?language=fr' },
    { kind: 'legacyStt' as const, path: '/pulse/get_text?language=en', invalid: '/pulse/get_text?sample_rate=11025' },
    { kind: 's2s' as const, path: '/s2s?model=hydra-v1.1', invalid: '/s2s?model=hydra-v9' },
  ])('WSS $path: upgrade refusals (missing key, bad key, validation) share its shape', async ({ kind, path, invalid }) => {
    const url = (p: string) => `ws://127.0.0.1:${suite.server.port}${W}${p}`;
    const shape = SHAPES[kind];
    expect(await upgradeRefusal(url(path), {})).toEqual({ status: 401, body: kind === 'legacyStt' ? { message: 'no tokens provided' } : shape(401) });
    expect(await upgradeRefusal(url(path), { authorization: 'Bearer sk_not_a_key' })).toEqual({ status: 401, body: shape(401) });
    expect(await upgradeRefusal(url(invalid), { authorization: `Bearer ${suite.server.key}` })).toEqual({ status: 400, body: shape(400) });
  });
});
