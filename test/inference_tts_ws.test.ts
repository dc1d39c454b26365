// WSS /tts/live: streamed text in, ordered base64 PCM chunks out, complete and close; word timestamps (RHVoice); auth,
// token expiry, idle timeout.
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AccessTokens } from '../control-plane/auth/tokens.js';
import { storeSql } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { werOf } from './support/speech.js';
import { RHVOICE_INSTALLED, RHVOICE_SKIP_NOTE } from './support/rhvoice.js';

const W = '/waves/v1';

interface Frame {
  status: string;
  session_id?: string;
  request_id?: string;
  external_request_id?: string;
  data?: { audio: string };
  message?: string;
  error?: { message: string; code: string };
}

function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
    ws.once('error', reject);
  });
}

/** Collects frames until the server closes. */
function frames(ws: WebSocket): Promise<{ frames: Frame[]; code: number }> {
  const out: Frame[] = [];
  ws.on('message', (d) => out.push(JSON.parse(d.toString()) as Frame));
  return new Promise((resolve) => ws.once('close', (code) => resolve({ frames: out, code })));
}

describe('WSS /tts/live', () => {
  const suite = serverForSuite('sqlite', { PARLEY_WARM_MODELS: 'true' });
  const url = (q = '') => `ws://127.0.0.1:${suite.server.port}${W}/tts/live${q}`;
  const auth = () => ({ authorization: `Bearer ${suite.server.key}` });

  it('speaks incrementally sent text: chunks, then complete, then close; the audio says the text', async () => {
    const ws = await open(url(), auth());
    const done = frames(ws);
    const parts = ['Your order ', 'has shipped', ' and will arrive on Friday.', ' Thank you for shopping with us.'];
    for (const text of parts) ws.send(JSON.stringify({ voice_id: 'slt', text, sample_rate: 16000, continue: true, request_id: 'req-7' }));
    ws.send(JSON.stringify({ voice_id: 'slt', text: '', flush: true, complete_backoff_ms: 0 }));
    const { frames: got, code } = await done;
    expect(code).toBe(1000);
    expect(got.at(-1)).toMatchObject({ status: 'complete' });
    const chunks = got.filter((f) => f.status === 'chunk');
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    const ids = new Set(got.map((f) => `${f.session_id}|${f.request_id}|${f.external_request_id}`));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^ws_.+\|task_.+\|req-7$/);
    const pcm = Buffer.concat(chunks.map((c) => Buffer.from(c.data!.audio, 'base64')));
    expect(pcm.length / 2 / 16000).toBeGreaterThan(2);
    const heard = await suite.server.request('POST', `${W}/stt/?model=pulse&language=en&encoding=linear16&sample_rate=16000`, { raw: pcm, headers: { 'content-type': 'application/octet-stream' } });
    expect(werOf(parts.join(''), heard.body.transcription), heard.body.transcription).toBeLessThanOrEqual(0.15);
  });

  it.skipIf(!RHVOICE_INSTALLED)(`word_timestamps: a frame per word before its phrase's audio, timed from the stream's start; a voice without timings is refused${RHVOICE_SKIP_NOTE}`, async () => {
    const ws = await open(url(), auth());
    const done = frames(ws);
    const parts = ['Your order has shipped.', ' It will arrive on Friday.'];
    ws.send(JSON.stringify({ voice_id: 'rhvoice-slt', text: parts[0], sample_rate: 24000, continue: true, word_timestamps: true }));
    ws.send(JSON.stringify({ voice_id: 'rhvoice-slt', text: parts[1], complete_backoff_ms: 0 }));
    const { frames: got } = await done;
    expect(got.at(-1)).toMatchObject({ status: 'complete' });
    const words = got.filter((f) => f.status === 'word_timestamp').map((f) => (f as unknown as { data: { id: number; word: string; start: number; end: number } }).data);
    expect(words.map((w) => w.word)).toEqual(['Your', 'order', 'has', 'shipped', 'It', 'will', 'arrive', 'on', 'Friday']);
    expect(words.map((w) => w.id)).toEqual(words.map((_, i) => i));
    for (const [i, w] of words.entries()) {
      expect(w.end).toBeGreaterThanOrEqual(w.start);
      if (i > 0) expect(w.start).toBeGreaterThanOrEqual(words[i - 1]!.start);
    }
    // Each phrase's words come before its audio; the second phrase's are timed after the first phrase's audio.
    const firstChunk = got.findIndex((f) => f.status === 'chunk');
    expect(got.findIndex((f) => f.status === 'word_timestamp')).toBeLessThan(firstChunk);
    const pcm = Buffer.concat(got.filter((f) => f.status === 'chunk').map((c) => Buffer.from(c.data!.audio, 'base64')));
    const seconds = pcm.length / 2 / 24000;
    const firstPhrase = (await fetch(`${suite.server.base}${W}/tts`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ voice_id: 'rhvoice-slt', text: parts[0], sample_rate: 24000, output_format: 'pcm' }) }).then((r) => r.arrayBuffer())).byteLength / 2 / 24000;
    expect(words[4]!.start).toBeGreaterThanOrEqual(firstPhrase - 0.01);
    expect(words.at(-1)!.end).toBeLessThanOrEqual(seconds + 0.01);
    // Flite's slt gives no word timings: refused, naming the field, not silently left out.
    const flite = await open(url(), auth());
    const refused = frames(flite);
    flite.send(JSON.stringify({ voice_id: 'slt', text: 'Hello.', word_timestamps: true }));
    const error = await new Promise<Frame>((resolve) => flite.once('message', (d) => resolve(JSON.parse(d.toString()) as Frame)));
    expect(error).toMatchObject({ status: 'error', error: { code: 'invalid_request', message: expect.stringMatching(/^word_timestamps: voice "slt" gives no word timings \(voices that do: rhvoice-/) } });
    flite.close();
    await refused;
  });

  it('refuses an upgrade without a valid credential (401), and takes a token in api_key', async () => {
    await expect(open(url())).rejects.toMatchObject({ status: 401 });
    await expect(open(url('?api_key=wat_bogus'))).rejects.toMatchObject({ status: 401 });
    const token = (await suite.server.request('POST', `${W}/auth/token`)).body.access_token as string;
    const ws = await open(url(`?api_key=${token}`));
    const done = frames(ws);
    ws.send(JSON.stringify({ voice_id: 'kal', text: 'Hello.', complete_backoff_ms: 0 }));
    expect((await done).frames.at(-1)?.status).toBe('complete');
  });

  it('keeps an open socket working after its token expires; a new connection is refused', async () => {
    const [secret] = await storeSql(suite.store, "SELECT value FROM server_secrets WHERE name = 'access_token_signing_key'");
    const keyId = String((await storeSql(suite.store, "SELECT id FROM api_keys WHERE name = 'bootstrap'"))[0]?.id);
    // A 30-second token minted 28.5 s ago: it expires 1.5 s from now.
    const token = new AccessTokens(Buffer.from(String(secret?.value), 'base64'), 'local').mint(keyId, 30, Date.now() - 28_500).token;
    const ws = await open(url(`?api_key=${token}`));
    const done = frames(ws);
    await new Promise((r) => setTimeout(r, 2000));
    await expect(open(url(`?api_key=${token}`))).rejects.toMatchObject({ status: 401 });
    ws.send(JSON.stringify({ voice_id: 'kal', text: 'Still here.', complete_backoff_ms: 0 }));
    const { frames: got } = await done;
    expect(got.filter((f) => f.status === 'chunk').length).toBeGreaterThan(0);
    expect(got.at(-1)?.status).toBe('complete');
  });

  it('reports bad messages as error frames, and closes an idle socket with a timeout error', async () => {
    const ws = await open(url('?timeout=1'), auth());
    const done = frames(ws);
    ws.send('not json');
    ws.send(JSON.stringify({ voice_id: 'nobody', text: 'hi', continue: true }));
    const { frames: got } = await done;
    expect(got[0]).toMatchObject({ status: 'error', error: { code: 'invalid_request' } });
    expect(got[1]?.error?.message).toMatch(/voice_id/);
    expect(got.at(-1)).toMatchObject({ status: 'error', message: 'timed out after 1 seconds of inactivity' });
    await expect(open(url('?timeout=0'), auth())).rejects.toMatchObject({ status: 400 });
  });

  it('speaks a long text of many phrases without exhausting the inference queue', async () => {
    const ws = await open(url(), auth());
    const done = frames(ws);
    const sentence = 'This is sentence number one of many. ';
    for (let i = 0; i < 30; i++) ws.send(JSON.stringify({ voice_id: 'kal', text: sentence, sample_rate: 8000, continue: true }));
    ws.send(JSON.stringify({ voice_id: 'kal', text: '', complete_backoff_ms: 0 }));
    const { frames: got } = await done;
    expect(got.filter((f) => f.status === 'error')).toEqual([]);
    expect(got.filter((f) => f.status === 'chunk').length).toBeGreaterThanOrEqual(30);
    expect(got.at(-1)?.status).toBe('complete');
  });

  it('serves the legacy per-model socket', async () => {
    const ws = await open(`ws://127.0.0.1:${suite.server.port}${W}/lightning-v3.1/get_speech/stream`, auth());
    const done = frames(ws);
    ws.send(JSON.stringify({ voice_id: 'kal16', text: 'Legacy route.', sample_rate: 8000, complete_backoff_ms: 0 }));
    const { frames: got } = await done;
    expect(got.at(-1)?.status).toBe('complete');
    expect(got.some((f) => f.status === 'chunk')).toBe(true);
  });
});
