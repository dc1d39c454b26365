// Voicemail detection on outbound calls against the real server and a real SIP callee (baresip) that answers and
// plays real audio: a person's "hello" gets the agent's greeting; a voicemail greeting with a beep gets the agent's
// endText after the beep, then our BYE; a silent line gets the agent speaking first. The verdict is in the record, the
// post-conversation webhook and the call list's filter; endText over 200 characters is a 400.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sleep, type TestServer } from './support/server.js';
import { baresipCallee, killCallees } from './support/sip-callee.js';
import { callerScript } from './support/baresip.js';
import { sipServerForSuite, transcribe } from './support/phone-server.js';
import { killPeers } from './support/sip-peers.js';
import { speech } from './support/agent-client.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import { outcomeOfCall } from '../control-plane/campaigns/runner.js';

const A = '/atoms/v1';
const MESSAGE = 'Hi, this is Parley calling about your order. Please call us back. Goodbye.';

afterEach(() => {
  killPeers();
  killCallees();
});

/** Speech from the server's own voices as an 8 kHz WAV file. */
async function spoken(server: TestServer, text: string, voice = 'slt'): Promise<string> {
  const pcm = await speech(server, text, 8000, voice);
  const dir = mkdtempSync(path.join(tmpdir(), 'parley-greeting-'));
  const raw = path.join(dir, 'speech.raw');
  writeFileSync(raw, pcm);
  const wav = path.join(dir, 'speech.wav');
  execFileSync('sox', ['-t', 'raw', '-r', '8000', '-e', 'signed', '-b', '16', '-c', '1', raw, wav]);
  return wav;
}

/** A voicemail beep: 1000 Hz for half a second. */
function beep(): string {
  const wav = path.join(mkdtempSync(path.join(tmpdir(), 'parley-beep-')), 'beep.wav');
  execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', wav, 'synth', '0.5', 'sine', '1000', 'vol', '0.5']);
  return wav;
}

describe('voicemail detection on outbound calls', () => {
  const suite = sipServerForSuite('sqlite');
  const hooks = new WebhookReceiver();
  let agentId = '';
  beforeAll(async () => {
    await hooks.start();
    const server = suite.server;
    const res = await server.request('POST', `${A}/agent`, {
      body: {
        name: 'Order line',
        workflowType: 'workflow_graph',
        workflowGraph: { nodes: [{ id: 'a', type: 'end_call', text: 'Hello, this is Parley calling about your order. Goodbye.' }], edges: [] },
        voiceMailDetectionConfig: { enabled: true, endText: MESSAGE },
      },
    });
    expect(res.status, res.text).toBe(201);
    agentId = res.body.data as string;
    const hook = await server.request('POST', `${A}/webhook`, { body: { endpoint: hooks.url, events: [{ agentId, eventType: 'post-conversation' }] } });
    expect(hook.status, hook.text).toBe(201);
  });
  afterAll(() => hooks.close());

  /** One call to a baresip callee that plays `script`; the record once it ended, and what the callee heard. */
  async function callOnce(script: string, n: number): Promise<{ record: any; heard: string; post: any }> {
    const server = suite.server;
    const to = `+1555039000${n}`;
    const callee = await baresipCallee({ user: to, wav: script, timeoutS: 45 });
    const trunk = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: `Callee ${n}`, address: `127.0.0.1:${callee.port}`, numbers: [`+1555029000${n}`] } });
    expect(trunk.status, trunk.text).toBe(201);
    try {
      const placed = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: to, fromNumber: `+1555029000${n}` } });
      expect(placed.status, placed.text).toBe(200);
      const callId = placed.body.data.conversationId as string;
      await callee.established;
      let record: any;
      for (const until = Date.now() + 40_000; Date.now() < until; await sleep(100)) {
        record = (await server.request('GET', `${A}/conversation/${callId}`)).body.data;
        if (['completed', 'failed', 'no_answer', 'cancelled'].includes(record.status)) break;
      }
      await callee.exited;
      return { record, heard: await transcribe(server, await callee.recording()), post: await hooks.waitFor(callId, 'post-conversation') };
    } finally {
      await callee.stop();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk.body.data._id}`)).status).toBe(200);
    }
  }

  it('a person says hello: the agent greets them; answeredBy human', async () => {
    const hello = await spoken(suite.server, 'Hello?', 'rms');
    const { record, heard, post } = await callOnce(callerScript([{ silence: 0.4 }, { wav: hello }, { silence: 12 }]), 1);
    expect(record).toMatchObject({ status: 'completed', endReason: 'ended', answeredBy: 'human' });
    expect(record.answerDetection).toMatchObject({ verdict: 'human', messageLeft: null });
    expect(record.transcript.map((t: { content: string }) => t.content).join(' ')).toMatch(/calling about your order/);
    expect(heard).toMatch(/calling about your order/);
    expect(heard).not.toMatch(/call us back/);
    expect(post.metadata.callData.answeredBy).toBe('human');
  }, 60_000);

  it('a voicemail greeting with a beep: the agent leaves its endText after the beep and hangs up; answeredBy voicemail', async () => {
    const greeting = await spoken(suite.server, "Hi, you've reached John. I can't take your call right now. Please leave a message after the tone.", 'rms');
    const { record, heard, post } = await callOnce(callerScript([{ silence: 0.3 }, { wav: greeting }, { silence: 0.3 }, { wav: beep() }, { silence: 15 }]), 2);
    expect(record).toMatchObject({ status: 'completed', endReason: 'voicemail', answeredBy: 'voicemail' });
    expect(record.answerDetection).toMatchObject({ verdict: 'voicemail', messageLeft: true });
    expect(record.transcript).toEqual([expect.objectContaining({ role: 'agent', content: MESSAGE })]);
    // The machine recorded the message, not the conversation's greeting.
    expect(heard).toMatch(/call us back/);
    expect(heard).not.toMatch(/hello, this is parley/);
    expect(post.metadata.callData).toMatchObject({ answeredBy: 'voicemail', callStatus: 'completed' });
    const listed = await suite.server.request('GET', `${A}/conversation?answeredBy=voicemail`);
    expect(listed.status, listed.text).toBe(200);
    expect(JSON.stringify(listed.body.data)).toContain(record.callId);
    expect(JSON.stringify((await suite.server.request('GET', `${A}/conversation?answeredBy=human`)).body.data)).not.toContain(record.callId);
    expect((await suite.server.request('GET', `${A}/conversation?answeredBy=robot`)).status).toBe(400);
  }, 60_000);

  it('an IVR menu: named ivr, the message is left once the menu stops, and the call hangs up', async () => {
    const menu = await spoken(suite.server, 'Thank you for calling Acme Insurance. For sales, press one. For claims, press two. To speak with a representative, press zero.', 'slt');
    const { record, heard, post } = await callOnce(callerScript([{ silence: 0.3 }, { wav: menu }, { silence: 15 }]), 4);
    expect(record).toMatchObject({ status: 'completed', endReason: 'ivr', answeredBy: 'ivr' });
    expect(record.answerDetection).toMatchObject({ verdict: 'ivr', messageLeft: true });
    expect(heard).toMatch(/call us back/);
    expect(post.metadata.callData.answeredBy).toBe('ivr');
  }, 60_000);

  it('nobody speaks: the agent speaks first after a short wait; answeredBy silence', async () => {
    const { record, heard } = await callOnce(callerScript([{ silence: 14 }]), 3);
    expect(record).toMatchObject({ status: 'completed', endReason: 'ended', answeredBy: 'silence' });
    expect(heard).toMatch(/calling about your order/);
  }, 60_000);

  it('refuses an endText over 200 characters with 400 naming the field', async () => {
    const res = await suite.server.request('PATCH', `${A}/agent/${agentId}`, { body: { voiceMailDetectionConfig: { enabled: true, endText: 'x'.repeat(201) } } });
    expect(res.status, res.text).toBe(400);
    expect(res.text).toMatch(/voiceMailDetectionConfig\.endText/);
  });
});

describe('campaign outcomes of calls a machine answered', () => {
  it('a message left on a voicemail or an IVR is outcome voicemail (retried as unanswered), a conversation is completed', () => {
    expect(outcomeOfCall('completed', 'voicemail')).toBe('voicemail');
    expect(outcomeOfCall('completed', 'ivr')).toBe('voicemail');
    expect(outcomeOfCall('completed', 'ended')).toBe('completed');
    expect(outcomeOfCall('no_answer', 'no_answer')).toBe('no_answer');
  });
});
