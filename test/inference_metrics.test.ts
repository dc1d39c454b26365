// Where inference time goes: the queue reports each job's wait for a slot and its run time by kind, and the server
// shows them as Prometheus histograms on /metrics (issue 15).
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { encodeLinear16 } from '../engine/audio/codecs.js';
import { InferenceQueue, QueueFullError, type InferenceKind } from '../engine/models/queue.js';
import { diffHistograms, histogramQuantile, parseHistograms, type Histogram } from '../bench/lib/prom.js';
import { serverForSuite } from './support/suite.js';
import { asteriskAudio, asteriskWav } from './support/speech.js';
import { mediaDialects } from './support/server.js';

const W = '/waves/v1';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Seen {
  kind: InferenceKind;
  wait: number;
  run: number;
}

function observed(queue: InferenceQueue): { jobs: Seen[]; refused: InferenceKind[] } {
  const out = { jobs: [] as Seen[], refused: [] as InferenceKind[] };
  queue.observer = {
    job: (kind, wait, run) => out.jobs.push({ kind, wait, run }),
    refused: (kind) => out.refused.push(kind),
  };
  return out;
}

describe('InferenceQueue timing', () => {
  it('reports a job waiting behind another as waiting about as long as the first one ran', async () => {
    const queue = new InferenceQueue(1, 4);
    const seen = observed(queue);
    const first = queue.run(() => sleep(300).then(() => 'a'), 'synthesis');
    const second = queue.run(() => sleep(50).then(() => 'b'), 'live');
    expect(await Promise.all([first, second])).toEqual(['a', 'b']);
    expect(seen.jobs.map((j) => j.kind)).toEqual(['synthesis', 'live']);
    const [a, b] = seen.jobs as [Seen, Seen];
    expect(a.wait).toBeLessThan(0.05);
    expect(a.run).toBeGreaterThanOrEqual(0.29);
    expect(a.run).toBeLessThan(1);
    // The second waited for the whole of the first's run, and no longer than that plus scheduling slack.
    expect(b.wait).toBeGreaterThanOrEqual(a.run - 0.02);
    expect(b.wait).toBeLessThan(a.run + 0.2);
    expect(b.run).toBeGreaterThanOrEqual(0.04);
    expect(b.run).toBeLessThan(0.5);
  });

  it('keeps kinds apart, times failed jobs and reports refusals by kind', async () => {
    const queue = new InferenceQueue(2, 0);
    const seen = observed(queue);
    const kinds: InferenceKind[] = ['speculative', 'file'];
    const running = kinds.map((kind, i) => queue.run(() => sleep(100 + i * 100), kind));
    await expect(queue.run(async () => 'never', 'interim')).rejects.toBeInstanceOf(QueueFullError);
    await Promise.all(running);
    await expect(queue.run(() => sleep(60).then(() => Promise.reject(new Error('boom'))), 'synthesis')).rejects.toThrow('boom');
    expect(seen.refused).toEqual(['interim']);
    const byKind = Object.fromEntries(seen.jobs.map((j) => [j.kind, j]));
    expect(Object.keys(byKind).sort()).toEqual(['file', 'speculative', 'synthesis']);
    expect(byKind.speculative?.run).toBeGreaterThanOrEqual(0.09);
    expect(byKind.file?.run).toBeGreaterThanOrEqual(0.19);
    expect(byKind.file?.run ?? 0).toBeGreaterThan(byKind.speculative?.run ?? Infinity);
    // Two slots: neither of the first two waited.
    expect(byKind.speculative?.wait).toBeLessThan(0.05);
    expect(byKind.file?.wait).toBeLessThan(0.05);
    expect(byKind.synthesis?.run).toBeGreaterThanOrEqual(0.05);
    expect(queue.depth).toEqual({ running: 0, waiting: 0 });
  });
});

describe.each(mediaDialects())('inference metrics on /metrics (%s)', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_WARM_MODELS: 'true' });
  const scrape = async () => {
    const res = await suite.server.request('GET', '/metrics', { key: null });
    expect(res.status).toBe(200);
    return { text: res.text, wait: parseHistograms(res.text, 'parley_inference_wait_seconds', 'kind'), run: parseHistograms(res.text, 'parley_inference_run_seconds', 'kind') };
  };
  const count = (h: Map<string, Histogram>, kind: string) => h.get(kind)?.count ?? 0;

  it('counts a synthesis and a whole-file recognition with their wait and run times', async () => {
    const before = await scrape();
    const tts = await fetch(`${suite.server.base}${W}/tts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.server.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Your table for two is booked.', voice_id: 'slt', output_format: 'wav', sample_rate: 16000 }),
    });
    expect(tts.status).toBe(200);
    await tts.arrayBuffer();
    const stt = await suite.server.request('POST', `${W}/stt/?model=pulse&language=en`, { raw: asteriskWav('hello-world'), headers: { 'content-type': 'audio/wav' } });
    expect(stt.status, stt.text).toBe(200);
    expect(stt.body.transcription.toLowerCase()).toContain('hello');

    const after = await scrape();
    const run = diffHistograms(after.run, before.run);
    const wait = diffHistograms(after.wait, before.wait);
    // One short sentence is one phrase; one prompt under 30 s is one Whisper run.
    expect(count(run, 'synthesis')).toBe(1);
    expect(count(run, 'file')).toBe(1);
    expect(count(wait, 'synthesis')).toBe(1);
    expect(count(wait, 'file')).toBe(1);
    expect([...run.keys()].sort()).toEqual(['file', 'synthesis']);
    for (const kind of ['synthesis', 'file']) {
      const h = run.get(kind) as Histogram;
      expect(h.sum, kind).toBeGreaterThan(0);
      expect(h.sum, kind).toBeLessThan(10);
      // Nothing else ran: no wait for a slot (the sum is seconds, well under the first bucket's 1 ms).
      expect((wait.get(kind) as Histogram).sum, kind).toBeLessThan(0.001);
      const p50 = histogramQuantile(h, 0.5);
      expect(p50).toBeGreaterThan(0);
      expect(p50).toBeLessThanOrEqual(10);
    }
    // Whisper on a 30 s window costs far more than one short Flite phrase.
    expect((run.get('file') as Histogram).sum).toBeGreaterThan((run.get('synthesis') as Histogram).sum);
    expect(after.text).toMatch(/^parley_inference_queue_jobs\{state="running"\} 0$/m);
    expect(after.text).toMatch(/^parley_inference_queue_jobs\{state="waiting"\} 0$/m);
    expect(after.text).toContain('parley_inference_run_seconds_bucket{le="0.001",kind="file"}');
    expect(after.text).toContain('parley_inference_run_seconds_bucket{le="10",kind="file"}');
  });

  it('labels live recognition (speculative finals, live finals, interims) apart from whole files', async () => {
    const before = await scrape();
    const ws = new WebSocket(`ws://127.0.0.1:${suite.server.port}${W}/stt/live?model=pulse&language=en&sample_rate=8000&encoding=linear16`, {
      headers: { authorization: `Bearer ${suite.server.key}` },
    });
    const finals: string[] = [];
    ws.on('message', (d) => {
      const m = JSON.parse(d.toString()) as { is_final?: boolean; transcript?: string };
      if (m.is_final && m.transcript) finals.push(m.transcript);
    });
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    // One prompt then 1.5 s of silence, at twice real time in 20 ms chunks: the end of the utterance is seen.
    const speech = asteriskAudio('vm-intro').samples;
    const audio = new Float32Array(speech.length + 12_000);
    audio.set(speech, 0);
    const bytes = encodeLinear16(audio);
    for (let at = 0, i = 0; at < bytes.length; at += 320, i++) {
      ws.send(bytes.subarray(at, at + 320));
      if (i % 5 === 4) await sleep(50);
    }
    ws.send(JSON.stringify({ type: 'close_stream' }));
    expect(await closed).toBe(1000);
    expect(finals.length).toBeGreaterThanOrEqual(1);

    const after = await scrape();
    const run = diffHistograms(after.run, before.run);
    const kinds = [...run.keys()];
    expect(kinds.every((k) => ['live', 'speculative', 'interim'].includes(k)), kinds.join()).toBe(true);
    // The utterance's final came from a speculation (started in the trailing silence) or a live final.
    expect(count(run, 'speculative') + count(run, 'live')).toBeGreaterThanOrEqual(1);
    for (const k of kinds) expect((run.get(k) as Histogram).sum, k).toBeGreaterThan(0);
  });
});
