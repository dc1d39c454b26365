// A Piper-format voice a user drops under the models directory is listed and served like the built-in ones.
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readWav } from '../engine/audio/wav.js';
import { serverForSuite } from './support/suite.js';
import { writeStandInVoice } from './support/piper-voice.js';

const modelsDir = mkdtempSync(path.join(os.tmpdir(), 'parley-models-'));
mkdirSync(path.join(modelsDir, 'voices', 'narrator'), { recursive: true });
await writeStandInVoice(path.join(modelsDir, 'voices', 'narrator'));

describe('user voices from PARLEY_MODELS_DIR', () => {
  const suite = serverForSuite('sqlite', { PARLEY_MODELS_DIR: modelsDir });
  afterAll(() => rmSync(modelsDir, { recursive: true, force: true }));

  it('lists the voice under the piper model and synthesises with it at the requested rate', async () => {
    const all = await suite.server.request('GET', '/waves/v1/voice/get-all-models');
    expect(all.body.voices).toContainEqual(expect.objectContaining({ voiceId: 'narrator', model: 'piper', sampleRate: 22050 }));
    const piper = await suite.server.request('GET', '/waves/v1/piper/get_voices');
    expect(piper.body.voices.map((v: { voiceId: string }) => v.voiceId)).toEqual(['narrator']);
    const res = await fetch(`${suite.server.base}/waves/v1/tts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.server.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hello world', voice_id: 'narrator', output_format: 'wav', sample_rate: 16000 }),
    });
    expect(res.status).toBe(200);
    const audio = readWav(Buffer.from(await res.arrayBuffer()));
    expect(audio.sampleRate).toBe(16000);
    // The stand-in model emits 64 samples at 22.05 kHz per phoneme id: a few hundred ms for two words.
    expect(audio.samples.length / 16000).toBeGreaterThan(0.05);
    expect(Math.max(...audio.samples.map(Math.abs))).toBeGreaterThan(0.1);
  });
});
