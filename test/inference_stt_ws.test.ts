// WSS /stt/live with real speech: interim and final transcripts per utterance, VAD events, finalize, close_stream.
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { encodeLinear16, encodeMuLaw } from '../engine/audio/codecs.js';
import type { MonoAudio } from '../engine/audio/types.js';
import { serverForSuite } from './support/suite.js';
import { asteriskAudio, asteriskText, werOf } from './support/speech.js';

const W = '/waves/v1';

interface Msg {
  type?: string;
  transcript?: string;
  transcription?: string;
  is_final?: boolean;
  is_last?: boolean;
  from_finalize?: boolean;
  timestamp?: number;
  session_id?: string;
  message?: string;
}

function connect(url: string, headers: Record<string, string>): Promise<{ ws: WebSocket; msgs: Msg[]; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const msgs: Msg[] = [];
    ws.on('message', (d) => msgs.push(JSON.parse(d.toString()) as Msg));
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.once('open', () => resolve({ ws, msgs, closed }));
    ws.once('unexpected-response', (_q, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
    ws.once('error', reject);
  });
}

/** Sends audio in 20 ms chunks; `pace` 1 is real time, larger is faster. */
async function stream(ws: WebSocket, bytes: Buffer, bytesPer20ms: number, pace: number): Promise<void> {
  for (let at = 0; at < bytes.length; at += bytesPer20ms) {
    ws.send(bytes.subarray(at, at + bytesPer20ms));
    if (pace > 0 && (at / bytesPer20ms) % 5 === 4) await new Promise((r) => setTimeout(r, 100 / pace));
  }
}

function withSilence(parts: MonoAudio[], seconds: number): Float32Array {
  const rate = 8000;
  const gap = Math.round(seconds * rate);
  const out = new Float32Array(parts.reduce((n, p) => n + p.samples.length + gap, gap));
  let at = gap;
  for (const p of parts) {
    out.set(p.samples, at);
    at += p.samples.length + gap;
  }
  return out;
}

describe('WSS /stt/live', () => {
  const suite = serverForSuite('sqlite', { PARLEY_WARM_MODELS: 'true' });
  const url = (q: string) => `ws://127.0.0.1:${suite.server.port}${W}/stt/live?${q}`;
  const auth = () => ({ authorization: `Bearer ${suite.server.key}` });

  it('gives interims while speech continues, one final per utterance in order, VAD events, and is_last on close', async () => {
    const names = ['conf-onlyperson', 'vm-intro'];
    const audio = withSilence(names.map(asteriskAudio), 1.5);
    const { ws, msgs, closed } = await connect(url('model=pulse&language=en&sample_rate=8000&encoding=linear16&vad_events=true'), auth());
    await stream(ws, encodeLinear16(audio), 320, 2);
    ws.send(JSON.stringify({ type: 'close_stream' }));
    expect(await closed).toBe(1000);

    const finals = msgs.filter((m) => m.type === 'transcription' && m.is_final);
    const spoken = finals.filter((m) => m.transcript);
    expect(spoken).toHaveLength(2);
    expect(werOf(asteriskText(names[0] as string), spoken[0]?.transcript ?? '')).toBeLessThanOrEqual(0.2);
    expect(werOf(asteriskText('vm-intro').replace(/\(.*\)/, ''), spoken[1]?.transcript ?? '')).toBeLessThanOrEqual(0.25);
    expect(msgs.filter((m) => m.is_last)).toHaveLength(1);
    expect(msgs.at(-1)?.is_last).toBe(true);
    for (const m of msgs.filter((x) => x.type === 'transcription')) {
      expect(m).toMatchObject({ status: 'success', transcription: m.transcript, session_id: msgs[0]?.session_id });
    }
    // Interims come before the final of their utterance.
    const firstFinal = msgs.indexOf(spoken[0] as Msg);
    expect(msgs.slice(0, firstFinal).some((m) => m.type === 'transcription' && m.is_final === false)).toBe(true);
    const vad = msgs.filter((m) => m.type === 'speech_started' || m.type === 'speech_ended').map((m) => [m.type, m.timestamp as number]);
    expect(vad.map(([t]) => t)).toEqual(['speech_started', 'speech_ended', 'speech_started', 'speech_ended']);
    const durations = names.map((n) => asteriskAudio(n).samples.length / 8000);
    expect(vad[0]?.[1]).toBeGreaterThan(1.2);
    expect(vad[0]?.[1]).toBeLessThan(2.0);
    expect(vad[2]?.[1]).toBeGreaterThan(1.5 + (durations[0] as number) + 1.2);
  });

  it('finalize gives a from_finalize final mid-stream and keeps the socket open; mu-law works', async () => {
    const audio = asteriskAudio('agent-alreadyon');
    const { ws, msgs, closed } = await connect(url('model=pulse&language=en&sample_rate=8000&encoding=mulaw'), auth());
    // Only the first ~2.5 s, then finalize while the caller is still talking.
    await stream(ws, encodeMuLaw(audio.samples.subarray(0, 20_000)), 160, 0);
    ws.send(JSON.stringify({ type: 'finalize' }));
    for (let i = 0; i < 100 && !msgs.some((m) => m.from_finalize); i++) await new Promise((r) => setTimeout(r, 50));
    const finalized = msgs.find((m) => m.from_finalize);
    expect(finalized).toMatchObject({ is_final: true });
    expect(finalized?.transcript).toMatch(/agent/i);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.send(JSON.stringify({ type: 'close_stream' }));
    await closed;
    expect(msgs.at(-1)?.is_last).toBe(true);
  });

  it('ends a finished sentence after a short silence by default; eou_timeout_ms makes the silence fixed', async () => {
    // The prompt, 0.2 s of silence, then the socket stays open with no more audio.
    const bytes = encodeLinear16(withSilence([asteriskAudio('check-number-dial-again')], 0.2));
    const finalsOf = (msgs: Msg[]) => msgs.filter((m) => m.type === 'transcription' && m.is_final);
    const adaptive = await connect(url('language=en&sample_rate=8000&encoding=linear16'), auth());
    await stream(adaptive.ws, bytes, 320, 0);
    for (let i = 0; i < 200 && finalsOf(adaptive.msgs).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(finalsOf(adaptive.msgs)).toEqual([expect.objectContaining({ transcript: expect.stringMatching(/dial again[.!]$/i) })]);
    expect(finalsOf(adaptive.msgs)[0]?.is_last).toBeUndefined();

    const fixed = await connect(url('language=en&sample_rate=8000&encoding=linear16&eou_timeout_ms=300'), auth());
    await stream(fixed.ws, bytes, 320, 0);
    await new Promise((r) => setTimeout(r, 2000));
    expect(finalsOf(fixed.msgs)).toHaveLength(0);
    for (const c of [adaptive, fixed]) c.ws.send(JSON.stringify({ type: 'close_stream' }));
    await Promise.all([adaptive.closed, fixed.closed]);
    expect(finalsOf(fixed.msgs)).toEqual([expect.objectContaining({ transcript: finalsOf(adaptive.msgs)[0]?.transcript, is_last: true })]);
  });

  it('refuses bad parameters before the upgrade (400) and unknown messages with an error frame', async () => {
    for (const q of ['model=pulse-max', 'language=fr', 'sample_rate=11025', 'encoding=flac']) {
      await expect(connect(url(q), auth())).rejects.toMatchObject({ status: 400 });
    }
    await expect(connect(url('language=en'), {})).rejects.toMatchObject({ status: 401 });
    const { ws, msgs, closed } = await connect(url('language=en'), auth());
    ws.send(JSON.stringify({ type: 'rewind' }));
    await closed;
    expect(msgs.at(-1)).toMatchObject({ type: 'error', status: 'error', message: expect.stringContaining('rewind') });
  });

  it('accepts an access token as api_key', async () => {
    const token = (await suite.server.request('POST', `${W}/auth/token`)).body.access_token as string;
    const { ws, msgs, closed } = await connect(url(`language=en&sample_rate=8000&api_key=${token}`), {});
    await stream(ws, encodeLinear16(withSilence([asteriskAudio('hello-world')], 0.5)), 320, 0);
    ws.send(JSON.stringify({ type: 'close_stream' }));
    await closed;
    const text = msgs.filter((m) => m.is_final).map((m) => m.transcript).join(' ');
    expect(werOf('Hello world.', text)).toBe(0);
  });
});
