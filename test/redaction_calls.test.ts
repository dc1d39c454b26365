// Redaction wired into the server: redact_pii / redact_pci on POST /stt/ and WSS /stt/live with real synthesized
// speech, and an agent's redactionConfig in calls: the transcript events, the call record and its turn rows, the
// post-conversation webhook, the language model's history, the logs, and the recording (a redacted caller turn is
// silence); without redaction the same words stay (so the checks can fail).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { freshStore, startServer, storeSql, type StoreEnv, type TestServer } from './support/server.js';
import { AgentCaller, connectUrl, endedCall, speech } from './support/agent-client.js';
import { OpenAiMock, type MockRequest } from './support/openai-mock.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const A = '/atoms/v1';
const W = '/waves/v1';
/**
 * A Luhn-valid card number (4539 1488 0343 6467), said digit by digit: Flite reads "4539" as a number, and Whisper
 * drops runs of repeated digits ("one one one one").
 */
const CARD = 'four five three nine, one four eight eight, zero three four three, six four six seven';
/** Its first eight digits as Whisper writes them (grouped or not), or as words. */
const CARD_DIGITS = /4\D{0,2}5\D{0,2}3\D{0,2}9\D{0,2}1\D{0,2}4\D{0,2}8\D{0,2}8|four five three nine/i;

let store: StoreEnv;
let server: TestServer;
let mock: OpenAiMock;
let llmBase: string;
const hooks = new WebhookReceiver();

beforeAll(async () => {
  mock = new OpenAiMock({ respond: (req: MockRequest) => ({ text: req.body.stream === false ? '{"summary":"A payment.","metrics":{}}' : 'Thank you, that is noted.' }) });
  llmBase = await mock.start();
  await hooks.start();
  store = freshStore('sqlite');
  server = await startServer({ store, env: { PARLEY_WARM_MODELS: 'true' } });
}, 90_000);

afterAll(async () => {
  await server?.stop();
  await store?.cleanup();
  await mock?.close();
  hooks.close();
});

const stt = (audio: Buffer, query: string) => server.request('POST', `${W}/stt/?model=pulse&language=en&${query}`, { raw: audio, headers: { 'content-type': 'audio/wav' } });

/** 16-bit PCM at 16 kHz as a WAV file. */
function wav(pcm: Buffer, rate = 16000): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(36 + pcm.length, 4);
  h.write('WAVEfmt ', 8);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36);
  h.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([h, pcm]);
}

describe('redact_pii and redact_pci on recognition', () => {
  it('POST /stt/ replaces a spoken card number and a name with tokens and lists them; without the flags they stay', async () => {
    const audio = wav(await speech(server, `My name is John Smith and my card number is ${CARD}.`));
    const plain = await stt(audio, '');
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body.transcription).toMatch(CARD_DIGITS);
    expect(plain.body.redacted_entities).toBeUndefined();
    const redacted = await stt(audio, 'redact_pci=true&redact_pii=true&word_timestamps=true');
    expect(redacted.status, redacted.text).toBe(200);
    expect(redacted.body.transcription).toContain('[CREDITCARDNUMBER_1]');
    expect(redacted.body.transcription).toContain('[FIRSTNAME_1]');
    expect(redacted.body.transcription).not.toMatch(CARD_DIGITS);
    expect(redacted.body.transcription).not.toMatch(/John|Smith/);
    expect(redacted.body.redacted_entities).toEqual(expect.arrayContaining(['[CREDITCARDNUMBER_1]', '[FIRSTNAME_1]']));
    expect(JSON.stringify(redacted.body.words)).not.toMatch(CARD_DIGITS);
    // PCI only: the name stays.
    const pciOnly = await stt(audio, 'redact_pci=true');
    expect(pciOnly.body.transcription).toContain('[CREDITCARDNUMBER_1]');
    expect(pciOnly.body.transcription).toMatch(/John/);
    const bad = await stt(audio, 'redact_pci=yes');
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/redact_pci: 'true' or 'false'/);
  }, 60_000);

  it('WSS /stt/live redacts finals (with redacted_entities) and interims', async () => {
    const pcm = await speech(server, `Sure, my credit card number is ${CARD}.`);
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}${W}/stt/live?language=en&sample_rate=16000&encoding=linear16&redact_pci=true`, { headers: { authorization: `Bearer ${server.key}` } });
    const msgs: any[] = [];
    ws.on('message', (d) => msgs.push(JSON.parse(d.toString())));
    await new Promise((r, j) => { ws.once('open', r); ws.once('error', j); });
    for (let at = 0; at < pcm.length; at += 6400) {
      ws.send(pcm.subarray(at, at + 6400));
      await new Promise((r) => setTimeout(r, 50));
    }
    ws.send(JSON.stringify({ type: 'close_stream' }));
    await new Promise((r) => ws.once('close', r));
    const finals = msgs.filter((m) => m.is_final);
    expect(finals.length).toBeGreaterThan(0);
    const text = finals.map((m) => m.transcript).join(' ');
    expect(text).toContain('[CREDITCARDNUMBER_1]');
    expect(finals.flatMap((m) => m.redacted_entities ?? [])).toContain('[CREDITCARDNUMBER_1]');
    for (const m of msgs) expect(JSON.stringify(m)).not.toMatch(CARD_DIGITS);
  }, 60_000);
});

async function agent(redactionConfig: Record<string, unknown> | undefined): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, {
    body: { name: 'payments', workflowType: 'single_prompt', prompt: 'You take card payments.', firstMessage: 'What is the card number?', model: { provider: 'openai_compatible', baseUrl: llmBase, model: 'm' }, ...(redactionConfig ? { redactionConfig } : {}) },
  });
  expect(res.status, res.text).toBe(201);
  const hook = await server.request('POST', `${A}/webhook`, { body: { endpoint: `${hooks.url}/${res.body.data}`, events: [{ agentId: res.body.data, eventType: 'post-conversation' }] } });
  expect(hook.status, hook.text).toBe(201);
  return res.body.data as string;
}

describe("an agent's redactionConfig in calls", () => {
  it('typed: the transcript events, record, turn rows, webhook, model history and logs carry tokens, never the card or the name', async () => {
    const agentId = await agent({ isEnabled: true });
    const before = mock.requests.length;
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, mode: 'chat' }), 24000);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    await c.agentTurn(0);
    const mark = c.frames.length;
    c.send({ type: 'input_text.send', text: 'It is 4539 1488 0343 6467, and my name is Ada Lovelace.' });
    expect((await c.agentTurn(mark)).text).toBe('Thank you, that is noted.');
    const rows = await storeSql(store, 'SELECT content FROM call_turns WHERE call_id = $1', [created.call_id]);
    c.send({ type: 'session.close' });
    await c.closed;
    const call = await endedCall(server, created.call_id as string);
    const user = call.transcript.find((t: { role: string }) => t.role === 'user');
    expect(user.content).toBe('It is [CREDITCARDNUMBER_1], and my name is [FIRSTNAME_1] [LASTNAME_1].');
    const post = await hooks.waitFor(created.call_id as string, 'post-conversation');
    const sent = mock.requests.slice(before).filter((r) => r.body.stream !== false);
    expect(JSON.stringify(sent.at(-1)?.body.messages)).toContain('[CREDITCARDNUMBER_1]');
    expect(String(sent.at(-1)?.body.messages?.[0]?.content)).toContain('Never read a placeholder aloud');
    const outputs = {
      frames: JSON.stringify(c.frames.filter((f) => f.type !== 'input_text.send')),
      record: JSON.stringify(call),
      turnRows: JSON.stringify(rows),
      calls: JSON.stringify(await storeSql(store, 'SELECT * FROM calls WHERE call_id = $1', [created.call_id])),
      webhook: JSON.stringify(post),
      model: JSON.stringify(mock.requests.slice(before)),
      logs: server.logs.join('\n'),
    };
    for (const [where, out] of Object.entries(outputs)) {
      expect(out, where).not.toMatch(CARD_DIGITS);
      expect(out, where).not.toContain('Lovelace');
    }
    expect(rows.length).toBeGreaterThan(0);
  }, 30_000);

  it('spoken: the caller turn with the card is redacted and silent in the recording; with redaction off it is kept and audible', async () => {
    const pcm = await speech(server, `The card number is ${CARD}.`);
    const run = async (redactionConfig: Record<string, unknown> | undefined) => {
      const agentId = await agent(redactionConfig);
      const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: '16000' }), 16000);
      await c.opened;
      const created = await c.waitFor((f) => f.type === 'session.created');
      c.startMic();
      await c.agentTurn(0);
      const mark = c.frames.length;
      await c.say(pcm);
      const user = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 30_000, mark);
      await c.agentTurn(mark, 40_000);
      c.send({ type: 'session.close' });
      await c.closed;
      const call = await endedCall(server, created.call_id as string);
      const dual = await server.request('GET', `${A}/recordings/${created.call_id}?channel=dual`);
      expect(dual.status, dual.text).toBe(200);
      const file = Buffer.from(await (await fetch(dual.body.data.url)).arrayBuffer());
      return { user: user.text as string, call, callerPeak: peakOfLeft(file) };
    };
    const on = await run({ isEnabled: true, pii: false });
    expect(on.user).toContain('[CREDITCARDNUMBER_1]');
    expect(JSON.stringify(on.call.transcript)).not.toMatch(CARD_DIGITS);
    const off = await run(undefined);
    expect(off.user).toMatch(CARD_DIGITS);
    // The caller said nothing but the card: with redaction the caller's channel is silent, without it is speech.
    expect(off.callerPeak).toBeGreaterThan(0.05);
    expect(on.callerPeak).toBeLessThan(0.01);
  }, 120_000);
});

/** Peak (0-1) of the left channel of a 16-bit stereo WAV (the dual recording: left is the caller). */
function peakOfLeft(file: Buffer): number {
  expect(file.readUInt16LE(22)).toBe(2);
  const data = file.indexOf('data', 12);
  const pcm = new Int16Array(file.buffer.slice(file.byteOffset + data + 8, file.byteOffset + data + 8 + file.readUInt32LE(data + 4)));
  let peak = 0;
  for (let i = 0; i < pcm.length; i += 2) peak = Math.max(peak, Math.abs(pcm[i]!) / 32768);
  return peak;
}
