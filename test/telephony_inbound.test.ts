// Callers reach agents over SIP: baresip dials a number an inbound trunk holds, talks to the demo agent over real
// RTP, and what it heard is recognised; the call record, its transcript and webhook events are those of a phone call.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { writeFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freshStore, startServer, mediaDialects, type StoreEnv, type TestServer } from './support/server.js';
import { baresipCall, callerScript, killBaresips } from './support/baresip.js';
import { freePort } from './support/sip-peers.js';
import { endedCall, speech } from './support/agent-client.js';
import { writeWav } from '../engine/audio/wav.js';
import { decodeLinear16 } from '../engine/audio/pcm.js';

const A = '/atoms/v1';
const NUMBER = '+15550100';

/** A server whose SIP leg listens on 127.0.0.2 (peers use 127.0.0.1), with a demo agent answering an inbound trunk. */
async function telephonyServer(dialect: 'sqlite' | 'postgres'): Promise<{ server: TestServer; store: StoreEnv; agentId: string; trunkId: string }> {
  const store = freshStore(dialect);
  const sipPort = await freePort('127.0.0.2');
  // RTP: ours in 10000-19999, baresip's in 20000-29999, SIP ports above 30000 (freePort).
  const rtpBase = 10000 + Math.floor(Math.random() * 100) * 100;
  const server = await startServer({
    store,
    env: { PARLEY_SIP_HOST: '127.0.0.2', PARLEY_SIP_PORT: String(sipPort), PARLEY_RTP_PORTS: `${rtpBase}-${rtpBase + 99}`, PARLEY_WARM_MODELS: 'true' },
  });
  const agent = await server.request('POST', `${A}/agent/from-template`, { body: { templateId: 'parley-demo', agentName: 'Front desk' } });
  expect(agent.status).toBe(201);
  const trunk = await server.request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'Carrier', numbers: [NUMBER] } });
  expect(trunk.status).toBe(201);
  const answers = await server.request('POST', `${A}/agent/${agent.body.data}/answers`, { body: { sourceKind: 'sipTrunk', sourceId: trunk.body.data._id } });
  expect(answers.status).toBe(201);
  return { server, store, agentId: agent.body.data as string, trunkId: trunk.body.data._id as string };
}

/** Recognises a WAV through the server's own recognizer. */
async function transcribe(server: TestServer, wav: string): Promise<string> {
  const res = await fetch(`${server.base}/waves/v1/stt/`, { method: 'POST', headers: { authorization: `Bearer ${server.key}`, 'content-type': 'audio/wav' }, body: readFileSync(wav) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { transcription: string }).transcription.toLowerCase();
}

afterEach(() => killBaresips());

function peerRtpPorts(): [number, number] {
  const base = 20000 + Math.floor(Math.random() * 100) * 100;
  return [base, base + 99];
}

describe.each(mediaDialects())('an inbound phone call on %s', (dialect) => {
  let env: Awaited<ReturnType<typeof telephonyServer>> | undefined;
  afterAll(async () => {
    await env?.server.stop();
    await env?.store.cleanup();
  });

  it('baresip calls the number, hears the agent, is answered, and the call is recorded as a phone call', async () => {
    env = await telephonyServer(dialect);
    const { server } = env;
    const said = await speech(server, 'I would like to book an appointment please.', 8000, 'rms');
    const dir = mkdtempSync(path.join(tmpdir(), 'parley-call-'));
    const line = path.join(dir, 'line.wav');
    writeFileSync(line, writeWav(decodeLinear16(said), 8000));
    // The caller listens to the greeting, says what they want, and listens to the answer.
    const script = callerScript([{ silence: 13 }, { wav: line }, { silence: 8 }]);
    const codec = dialect === 'sqlite' ? 'pcmu' : 'pcma';
    const result = await baresipCall({
      target: `sip:${NUMBER.slice(1)}@127.0.0.2:${server.sipPort}`,
      wav: script,
      sipPort: await freePort(),
      rtpPorts: peerRtpPorts(),
      codecs: [codec],
      timeoutS: 45,
    });
    expect(result.established, result.log).toBe(true);
    expect(result.heard).not.toBeNull();
    const heard = await transcribe(server, result.heard as string);
    // The agent's first message, then its answer to "book an appointment".
    expect(heard).toMatch(/thanks for calling/);
    expect(heard).toMatch(/what name should i put the appointment under/);

    const list = await server.request('GET', `${A}/conversation?callTypes=telephony_inbound`);
    expect(list.body.data.logs).toHaveLength(1);
    const call = await endedCall(server, list.body.data.logs[0].callId);
    expect(call).toMatchObject({ type: 'telephony_inbound', from: 'caller', to: NUMBER, status: 'completed', endReason: 'caller_hangup' });
    const user = (call.transcript as { role: string; content: string }[]).filter((t) => t.role === 'user').map((t) => t.content.toLowerCase());
    expect(user.join(' ')).toMatch(/book an appointment/);
    expect(call.variables).toMatchObject({ agent_number: NUMBER, conversation_type: 'telephonyInbound' });
    expect(call.recordingUrl).toBeTruthy();
    // The phone leg's metrics: the call was answered (INVITE to 200 timed) and is no longer up.
    const metrics = (await server.request('GET', '/metrics', { key: null })).text;
    expect(metrics).toMatch(/^parley_sip_answer_seconds_count\{direction="inbound"\} 1$/m);
    expect(metrics).toMatch(/^parley_phone_calls\{direction="inbound"\} 0$/m);
    expect(metrics).toMatch(/^parley_rtp_output_underrun_seconds_total\{direction="inbound"\} \d/m);
    // The send clock's timing: one interval per packet after the first (50 a second over a call of several seconds),
    // most within 5 ms of 20 ms.
    const bucket = (le: string) => Number(new RegExp(`^parley_rtp_send_interval_deviation_seconds_bucket\\{le="${le}",direction="inbound"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
    const intervals = Number(/^parley_rtp_send_interval_deviation_seconds_count\{direction="inbound"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(intervals).toBeGreaterThan(100);
    expect(bucket('0.005')).toBeGreaterThan(intervals / 2);
  }, 90_000);
});
