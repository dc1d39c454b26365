// The inference API over HTTP with real speech: voices, synthesis (body, SSE, legacy), recognition (bytes, url, webhook).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readWav } from '../engine/audio/wav.js';
import { serverForSuite } from './support/suite.js';
import { asteriskAudio, asteriskText, asteriskWav, joinWithSilence, werOf } from './support/speech.js';

const W = '/waves/v1';
const SENTENCE = 'Your appointment is confirmed for Tuesday morning. Please arrive ten minutes early.';

describe('inference over HTTP', () => {
  const suite = serverForSuite('sqlite', { PARLEY_WARM_MODELS: 'true', PARLEY_STT_MAX_SECONDS: '120' });
  const tts = (body: Record<string, unknown>, path = '/tts', key?: string | null) =>
    fetch(`${suite.server.base}${W}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key ?? suite.server.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const stt = (audio: Buffer, query = 'model=pulse&language=en', path = '/stt/', key?: string) =>
    suite.server.request('POST', `${W}${path}?${query}`, { raw: audio, key, headers: { 'content-type': 'audio/wav' } });

  // A receiver for webhook deliveries and a host for `{url}` inputs.
  let receiver: http.Server;
  let receiverBase = '';
  const delivered: unknown[] = [];
  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/audio/hello.wav') {
        res.writeHead(200, { 'content-type': 'audio/wav' }).end(asteriskWav('hello-world'));
        return;
      }
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        delivered.push(JSON.parse(body));
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    receiverBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => receiver.close(() => r())));

  it('lists voices on both voice routes, also to an access token', async () => {
    const all = await suite.server.request('GET', `${W}/voice/get-all-models`);
    expect(all.status).toBe(200);
    const ids = all.body.voices.map((v: { voiceId: string }) => v.voiceId);
    expect(ids).toEqual(expect.arrayContaining(['kal', 'kal16', 'awb', 'rms', 'slt']));
    expect(all.body.models.map((m: { id: string }) => m.id)).toEqual(expect.arrayContaining(['whisper-tiny.en', 'flite']));
    const token = (await suite.server.request('POST', `${W}/auth/token`)).body.access_token as string;
    for (const model of ['lightning-v3.1', 'flite']) {
      const res = await suite.server.request('GET', `${W}/${model}/get_voices`, { key: token });
      expect(res.status, model).toBe(200);
      expect(res.body.voices[0]).toMatchObject({ voiceId: expect.any(String), displayName: expect.any(String), tags: expect.any(Object) });
    }
    expect((await suite.server.request('GET', `${W}/nonsense/get_voices`)).status).toBe(400);
  });

  it('round trip: a synthesised sentence is recognised as that sentence', async () => {
    const res = await tts({ text: SENTENCE, voice_id: 'slt', output_format: 'wav', sample_rate: 16000 });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/wav');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const wav = Buffer.from(await res.arrayBuffer());
    const audio = readWav(wav);
    expect(audio.sampleRate).toBe(16000);
    expect(audio.samples.length / 16000).toBeGreaterThan(3);
    const heard = await stt(wav);
    expect(heard.status, heard.text).toBe(200);
    expect(heard.body).toMatchObject({ status: 'success', metadata: { duration: expect.any(Number) } });
    expect(werOf(SENTENCE, heard.body.transcription)).toBeLessThanOrEqual(0.1);
  });

  it('serves pcm, ulaw and alaw at the requested rate, with correlation ids echoed', async () => {
    const lengths: Record<string, number> = {};
    for (const [format, rate, bytesPerSample] of [['pcm', 8000, 2], ['pcm', 24000, 2], ['ulaw', 8000, 1], ['alaw', 8000, 1]] as const) {
      const res = await tts({ text: 'Good morning.', voice_id: 'kal16', output_format: format, sample_rate: rate, session_id: 's-1', request_id: 'r.2' });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-external-session-id')).toBe('s-1');
      expect(res.headers.get('x-external-request-id')).toBe('r.2');
      lengths[`${format}@${rate}`] = (await res.arrayBuffer()).byteLength / bytesPerSample / rate;
    }
    const mp3 = await tts({ text: 'Good morning.', voice_id: 'kal16', output_format: 'mp3', sample_rate: 24000 });
    expect(mp3.headers.get('content-type')).toBe('audio/mpeg');
    const mp3Bytes = Buffer.from(await mp3.arrayBuffer());
    // MPEG-2 layer III frame sync, and about 64 kb/s for the same duration.
    expect(mp3Bytes[0]).toBe(0xff);
    expect((mp3Bytes[1] as number) & 0xe0).toBe(0xe0);
    expect(mp3Bytes.length).toBeGreaterThan((lengths['pcm@8000'] as number) * 6000);
    // The same speech lasts as long whatever the encoding and rate.
    const seconds = Object.values(lengths);
    for (const s of seconds) expect(Math.abs(s - (seconds[0] as number))).toBeLessThan(0.01);
    expect(seconds[0]).toBeGreaterThan(0.4);
  });

  it('streams SSE audio frames, the first holding only the first phrase, then a done frame', async () => {
    const text = 'Thank you for calling the Northside dental clinic, my name is Ava. How can I help you today? We are open until six.';
    const res = await tts({ text, voice_id: 'kal16', output_format: 'pcm', sample_rate: 16000 }, '/tts/live');
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = (await res.text()).split('\n\n').filter(Boolean);
    const frames = events.map((e) => JSON.parse(e.split('\n').find((l) => l.startsWith('data: '))!.slice(6)));
    expect(frames.at(-1)).toEqual({ status: '200', done: true });
    const audio = frames.slice(0, -1);
    expect(audio.length).toBeGreaterThanOrEqual(3);
    for (const f of audio) expect(f).toMatchObject({ done: false, status: '206', audio: expect.any(String) });
    expect(events[0]).toMatch(/^event: audio\n/);
    const firstPhrase = await tts({ text: 'Thank you for calling the Northside dental clinic,', voice_id: 'kal16', output_format: 'pcm', sample_rate: 16000 });
    const firstBytes = Buffer.from(audio[0].audio, 'base64').length;
    const alone = (await firstPhrase.arrayBuffer()).byteLength;
    expect(Math.abs(firstBytes - alone) / alone).toBeLessThan(0.05);
    const total = audio.reduce((n, f) => n + Buffer.from(f.audio, 'base64').length, 0);
    expect(total).toBeGreaterThan(firstBytes * 2);
  });

  it('keeps the legacy per-model routes: get_speech and the {audio}/{done} stream', async () => {
    const speech = await tts({ text: 'Hello world.', voice_id: 'rms', output_format: 'wav', sample_rate: 8000 }, '/lightning-v3.1/get_speech');
    expect(speech.status).toBe(200);
    expect(readWav(Buffer.from(await speech.arrayBuffer())).sampleRate).toBe(8000);
    const stream = await tts({ text: 'Hello world. Goodbye.', voice_id: 'rms' }, '/lightning-v3.1/stream');
    const frames = (await stream.text()).split('\n\n').filter(Boolean).map((e) => JSON.parse(e.split('\n').find((l) => l.startsWith('data: '))!.slice(6)));
    expect(frames.at(-1)).toEqual({ done: true });
    expect(Object.keys(frames[0])).toEqual(['audio']);
    const unknown = await tts({ text: 'x', voice_id: 'rms' }, '/unknown-model/get_speech');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'NotFound', message: 'Unknown model "unknown-model"' });
  });

  it('answers bad synthesis input with 400 {error, message} naming each problem', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ text: '', voice_id: 'slt' }, /text/],
      [{ text: 'hi', voice_id: 'nobody' }, /voice_id/],
      [{ text: 'hi', voice_id: 'slt', sample_rate: 11025 }, /sample_rate/],
      [{ text: 'hi', voice_id: 'slt', output_format: 'flac' }, /output_format/],
      [{ text: 'hi', voice_id: 'slt', speed: 3 }, /speed/],
      [{ text: 'hi', voice_id: 'slt', model: 'gpt-9' }, /model/],
      [{ text: 'x'.repeat(5001), voice_id: 'slt' }, /text/],
    ];
    for (const [body, field] of cases) {
      const res = await tts(body);
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      const json = (await res.json()) as { error: string; message: string };
      expect(json.error).toBe('InvalidRequest');
      expect(json.message).toMatch(field);
    }
  });

  it('recognises Asterisk prompts sent as bytes, with estimated word times on request', async () => {
    for (const name of ['hello-world', 'conf-onlyperson', 'tt-weasels']) {
      const res = await stt(asteriskWav(name), 'model=pulse&language=en&word_timestamps=true');
      expect(res.status, res.text).toBe(200);
      expect(werOf(asteriskText(name), res.body.transcription), res.body.transcription).toBeLessThanOrEqual(0.2);
      expect(res.body.words.length).toBe(res.body.transcription.split(/\s+/).length);
      expect(res.body.words[0].start).toBeGreaterThanOrEqual(0);
    }
  });

  it('fetches audio by url, and posts to a webhook when asked', async () => {
    const byUrl = await suite.server.request('POST', `${W}/stt/?model=pulse&language=en`, { body: { url: `${receiverBase}/audio/hello.wav` } });
    expect(byUrl.status, byUrl.text).toBe(200);
    expect(werOf('Hello world.', byUrl.body.transcription)).toBe(0);
    const queued = await stt(asteriskWav('auth-thankyou'), `model=pulse-pro&language=en&webhook_url=${encodeURIComponent(`${receiverBase}/hook`)}&webhook_extra=job:42`);
    expect(queued.body).toEqual({ status: 'processing', request_id: expect.any(String) });
    for (let i = 0; i < 100 && delivered.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(delivered[0]).toMatchObject({ status: 'success', request_id: queued.body.request_id, job: '42' });
    expect(werOf('Thank you.', (delivered[0] as { transcription: string }).transcription)).toBe(0);
  });

  it('cuts audio over 30 s at pauses and stitches the pieces', async () => {
    const names = ['vm-options', 'agent-alreadyon', 'conf-onlyperson', 'vm-intro', 'tt-weasels'];
    const wav = joinWithSilence(names.map(asteriskAudio), 1.2);
    expect(readWav(wav).samples.length / 8000).toBeGreaterThan(30);
    const res = await stt(wav);
    expect(res.status, res.text).toBe(200);
    expect(res.body.metadata.num_chunks).toBeGreaterThan(1);
    const reference = names.map(asteriskText).join(' ').replace(/\(simple tone sound plays\)/, '');
    expect(werOf(reference, res.body.transcription), res.body.transcription).toBeLessThanOrEqual(0.2);
  });

  it('answers bad recognition input with clear 4xx errors', async () => {
    const garbage = await stt(Buffer.from('this is not audio at all'));
    expect(garbage.status).toBe(400);
    expect(garbage.body.error).toMatch(/container|audio/i);
    expect((await stt(asteriskWav('hello-world'), 'model=pulse&language=fr')).body.error).toMatch(/English/);
    expect((await stt(asteriskWav('hello-world'), 'model=whisper-large')).status).toBe(400);
    const long = joinWithSilence(Array.from({ length: 14 }, () => asteriskAudio('vm-options')), 1);
    const tooLong = await stt(long);
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toMatch(/at most 120 s/);
    // Raw telephone audio needs its encoding and rate.
    const raw = Buffer.from(asteriskWav('hello-world').subarray(44));
    expect((await stt(raw, 'model=pulse&language=en&encoding=linear16&sample_rate=8000')).body.transcription).toMatch(/hello/i);
    const legacyBad = await stt(Buffer.from('nope'), 'language=en', '/pulse/get_text');
    expect(legacyBad.body).toMatchObject({ status: 'error', message: 'Error handling audio data', errors: expect.any(String) });
  });

  it('legacy get_text serves keys and refuses access tokens with 403', async () => {
    const ok = await stt(asteriskWav('vm-goodbye'), 'language=en', '/pulse/get_text');
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'success', audio_length: expect.any(Number) });
    expect(werOf('Goodbye', ok.body.transcription)).toBe(0);
    const token = (await suite.server.request('POST', `${W}/auth/token`)).body.access_token as string;
    const refused = await stt(asteriskWav('vm-goodbye'), 'language=en', '/pulse/get_text', token);
    expect(refused.status).toBe(403);
    const viaToken = await stt(asteriskWav('vm-goodbye'), 'model=pulse&language=en', '/stt/', token);
    expect(viaToken.status).toBe(200);
  });
});

describe('a full inference queue', () => {
  const suite = serverForSuite('sqlite', { PARLEY_WARM_MODELS: 'true', PARLEY_INFERENCE_CONCURRENCY: '1', PARLEY_INFERENCE_QUEUE: '0' });

  it('answers 503 with Retry-After instead of queueing without bound', async () => {
    const wav = joinWithSilence(['vm-options', 'vm-intro'].map(asteriskAudio), 0.5);
    const results = await Promise.all(
      Array.from({ length: 4 }, () => suite.server.request('POST', `${W}/stt/?model=pulse&language=en`, { raw: wav, headers: { 'content-type': 'audio/wav' } })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses[0]).toBe(200);
    expect(statuses).toContain(503);
    const busy = results.find((r) => r.status === 503)!;
    expect(Number(busy.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(busy.body).toEqual({ error: expect.stringMatching(/busy/) });
  });
});
