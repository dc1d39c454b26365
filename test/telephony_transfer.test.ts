// Transfers of phone calls against real peers: a baresip caller following our REFER to a baresip target (the target
// hears the caller), the bridged fallback when the caller refuses REFER (a second call from the transfer source's
// trunk, the caller's audio reaching the target, one side's BYE ending the other, the call's recording going on through
// the bridge), a warm transfer of a single-prompt agent (ringback while the target rings, a person detected by the
// target's short greeting, the private handoff written by the agent's model, then the caller), a target answering with
// a long machine greeting (not joined; silence on hold with onHoldMusic none), a busy target, and an inbound call
// without a transfer source (refused, the call goes on). The hold sounds themselves are checked without peers.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sleep, mediaDialects, type TestServer } from './support/server.js';
import { baresipCall, callerScript, killBaresips, type BaresipOptions } from './support/baresip.js';
import { baresipCallee, killCallees, startSippCarrier } from './support/sip-callee.js';
import { freePort, killPeers, STACK_HOST } from './support/sip-peers.js';
import { endedCall } from './support/agent-client.js';
import { answeredTrunk, peerRtpPorts, sipServerForSuite, transcribe, workflowAgent } from './support/phone-server.js';
import { ASTERISK_SOUNDS_DIR } from '../bench/lib/asterisk-corpus.js';
import { OpenAiMock, type MockRequest } from './support/openai-mock.js';
import { blocksOf, blocksOfWav, isRingback, longestQuiet } from './support/tone.js';
import { holdLoop, type HoldMusic } from '../telephony/hold-sound.js';
import { readWav } from '../engine/audio/wav.js';

const A = '/atoms/v1';
const HELLO = `${ASTERISK_SOUNDS_DIR}/hello-world.wav`;
/** "Goodbye. Thank you for trying out the Asterisk Open Source PBX." */
const THANKS = `${ASTERISK_SOUNDS_DIR}/demo-thanks.wav`;
/** "Congratulations. You have successfully installed and executed the Asterisk open source PBX..." (30 s, few pauses). */
const LONG_GREETING = `${ASTERISK_SOUNDS_DIR}/demo-congrats.wav`;

afterEach(() => {
  killBaresips();
  killCallees();
  killPeers();
});

/** What the agents say before they transfer. */
const HOLD_ON = 'Please hold on, I will transfer your call now.';

/**
 * A workflow agent that says HOLD_ON and transfers to `number` at once (the opening turn), answering inbound
 * `trunkNumber`; `settings` are the node's onHoldMusic, transferOnlyIfHuman, detectionTimeout.
 */
async function transferringAgent(server: TestServer, trunkNumber: string, number: string, transferOption?: Record<string, unknown>, settings: Record<string, unknown> = {}): Promise<string> {
  const agentId = await workflowAgent(server, {
    nodes: [{ id: 'hand', type: 'transfer', text: HOLD_ON, transferNumber: number, ...(transferOption ? { transferOption } : {}), ...settings }],
    edges: [],
  });
  await answeredTrunk(server, agentId, { numbers: [trunkNumber] });
  return agentId;
}

/** An outbound trunk to a peer on 127.0.0.1:`port` dialing from `number`, set as the agent's transfer source. */
async function transferSource(server: TestServer, agentId: string, port: number, number: string): Promise<string> {
  const trunk = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Transfers out', address: `127.0.0.1:${port}`, numbers: [number] } });
  expect(trunk.status, trunk.text).toBe(201);
  const put = await server.request('PUT', `${A}/agent/${agentId}/transfer-source`, { body: { fromNumber: number } });
  expect(put.status, put.text).toBe(200);
  return trunk.body.data._id as string;
}

/** baresip calls `number` at our server, saying what `script` holds. */
async function dial(server: TestServer, number: string, script: string, timeoutS: number, extra: Partial<BaresipOptions> = {}) {
  return baresipCall({
    target: `sip:${number.replace('+', '')}@${STACK_HOST}:${server.sipPort}`,
    wav: script,
    sipPort: await freePort(),
    rtpPorts: peerRtpPorts(),
    timeoutS,
    ...extra,
  });
}

/** A WAV holding `wav` from `from` seconds (to `to` seconds, or its end). */
function span(wav: string, from: number, to?: number): string {
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'parley-span-')), 'span.wav');
  execFileSync('sox', [wav, out, 'trim', String(from), ...(to === undefined ? [] : [`=${to}`])]);
  return out;
}

/** The one phone call an agent took, once its record is written. */
async function callOf(server: TestServer, agentId: string): Promise<any> {
  for (let i = 0; i < 100; i++) {
    const list = await server.request('GET', `${A}/conversation?callTypes=telephony_inbound&agentIds=${agentId}`);
    expect(list.status, list.text).toBe(200);
    if (list.body.data.logs.length) {
      expect(list.body.data.logs).toHaveLength(1);
      return endedCall(server, list.body.data.logs[0].callId);
    }
    await sleep(100);
  }
  throw new Error(`agent ${agentId} took no call`);
}

/** The call's mono recording as a WAV file, once it is at least `minS` seconds long (it is saved again when a bridge ends). */
async function recordingOf(server: TestServer, callId: string, minS: number): Promise<{ path: string; seconds: number }> {
  let seconds = 0;
  for (let i = 0; i < 100; i++) {
    const res = await server.request('GET', `${A}/recordings/${callId}?channel=mono`);
    if (res.status === 200) {
      const wav = Buffer.from(await (await fetch(res.body.data.url)).arrayBuffer());
      const audio = readWav(wav);
      seconds = audio.samples.length / audio.sampleRate;
      if (seconds >= minS) {
        const out = path.join(mkdtempSync(path.join(tmpdir(), 'parley-rec-')), 'mono.wav');
        writeFileSync(out, wav);
        return { path: out, seconds };
      }
    }
    await sleep(200);
  }
  throw new Error(`the recording of ${callId} stayed at ${seconds} s (wanted ${minS} s)`);
}

describe('hold sounds', () => {
  it('ringtone is 440 + 480 Hz for 2 s then 4 s of silence; relaxing_sound and uplifting_beats are two distinct audible loops; none is silence', () => {
    const asFloat = (kind: HoldMusic) => Float32Array.from(holdLoop(kind), (v) => v / 32768);
    const ring = blocksOf(asFloat('ringtone'), 8000);
    expect(ring).toHaveLength(60);
    expect(ring.slice(0, 20).every(isRingback)).toBe(true);
    expect(ring.slice(20).every((b) => b.rms === 0)).toBe(true);
    const loops = (['relaxing_sound', 'uplifting_beats'] as const).map((kind) => blocksOf(asFloat(kind), 8000));
    for (const blocks of loops) {
      expect(blocks.some(isRingback)).toBe(false);
      // Audible most of the time, and never clipping.
      expect(blocks.filter((b) => b.rms > 0.01).length / blocks.length).toBeGreaterThan(0.6);
      expect(Math.max(...blocks.map((b) => b.rms))).toBeLessThan(0.5);
    }
    expect(holdLoop('relaxing_sound').length).not.toBe(holdLoop('uplifting_beats').length);
    expect(holdLoop('none')).toHaveLength(0);
  });
});

describe.each(mediaDialects())('call transfers, on %s', (dialect) => {
  const suite = sipServerForSuite(dialect);

  it('checks transferOption on the transfer_call tool and the workflow transfer node; an absent one is a cold transfer', async () => {
    const server = suite.server;
    const tool = (extra: Record<string, unknown>) => ({ type: 'transfer_call', name: 'to_desk', description: 'Transfer to the desk', transferNumber: '+15550500000', ...extra });
    const create = (body: Record<string, unknown>) => server.request('POST', `${A}/agent`, { body: { name: 'Transfers', ...body } });
    for (const extra of [{}, { transferOption: { type: 'cold_transfer' } }, { transferOption: { type: 'warm_transfer', privateHandoffOption: { type: 'static', prompt: 'A caller for you.' } } }]) {
      const ok = await create({ workflowType: 'single_prompt', prompt: 'Help the caller.', tools: [tool(extra)] });
      expect(ok.status, ok.text).toBe(201);
    }
    const bad = await create({ workflowType: 'single_prompt', prompt: 'Help the caller.', tools: [tool({ transferOption: { type: 'blind_transfer' } })] });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.text).toMatch(/tools\.0\.transferOption\.type/);
    const settings = await create({ workflowType: 'single_prompt', prompt: 'Help the caller.', tools: [tool({ onHoldMusic: 'jazz', transferOnlyIfHuman: 'yes', detectionTimeout: 61 })] });
    expect(settings.status, settings.text).toBe(400);
    for (const field of ['onHoldMusic', 'transferOnlyIfHuman', 'detectionTimeout']) expect(settings.text).toMatch(new RegExp(`tools\\.0\\.${field}`));
    const node = { id: 'hand', type: 'transfer', text: 'One moment.', transferNumber: '+15550500000' };
    const badNode = await create({ workflowType: 'workflow_graph', workflowGraph: { nodes: [{ ...node, transferOption: { type: 'warm_transfer', privateHandoffOption: { prompt: 7 } } }] } });
    expect(badNode.status, badNode.text).toBe(400);
    expect(badNode.text).toMatch(/nodes\.0\.transferOption\.privateHandoffOption\.prompt/);
    const badSettings = await create({ workflowType: 'workflow_graph', workflowGraph: { nodes: [{ ...node, detectionTimeout: 4 }] } });
    expect(badSettings.status, badSettings.text).toBe(400);
    expect(badSettings.text).toMatch(/nodes\.0\.detectionTimeout/);
    const okSettings = await create({ workflowType: 'workflow_graph', workflowGraph: { nodes: [{ ...node, onHoldMusic: 'uplifting_beats', transferOnlyIfHuman: false, detectionTimeout: 5 }] } });
    expect(okSettings.status, okSettings.text).toBe(201);
  });

  it('cold transfer by REFER: the baresip caller follows it to the baresip target, which hears the caller; our call ends transferred', async () => {
    const server = suite.server;
    const target = await baresipCallee({ user: '+15550500001', timeoutS: 40 });
    // REFER hands the caller to whoever answers: only without transferOnlyIfHuman.
    const agentId = await transferringAgent(server, '+15550400101', '+15550500001', undefined, { transferOnlyIfHuman: false });
    await transferSource(server, agentId, target.port, '+15550200101');
    try {
      // The caller waits out the agent's line and the transfer, then says hello (to whoever is on the line then).
      const result = await dial(server, '+15550400101', callerScript([{ silence: 5 }, { wav: HELLO }, { silence: 1 }]), 20);
      expect(result.established, result.log).toBe(true);
      // It was told to call the target at the transfer source trunk's address.
      expect(result.log).toMatch(new RegExp(`transferring call \\S+ to '<sip:\\+15550500001@127\\.0\\.0\\.1:${target.port}>'`));
      await target.established;
      // Our BYE ended the first call as soon as the caller's NOTIFY said the target answered (not after the 5 s wait).
      const first = new RegExp(`Call with sip:15550400101@${STACK_HOST.replace(/\./g, '\\.')}:\\d+ terminated \\(duration: (\\d+) secs?\\)`).exec(result.log);
      expect(Number(first?.[1]), result.log).toBeLessThan(7);
      expect(result.log).toMatch(/sip:15550400101@\S+: session closed: Connection reset by peer/);
      const call = await callOf(server, agentId);
      expect(call).toMatchObject({ type: 'telephony_inbound', status: 'completed', endReason: 'transferred' });
      expect(call.transcript).toMatchObject([{ role: 'agent', content: HOLD_ON }]);
      // The caller heard the agent before it moved on.
      expect(await transcribe(server, result.heard as string)).toMatch(/transfer your call/);
      expect(await transcribe(server, await target.recording())).toMatch(/hello\W+world/);
    } finally {
      await target.stop();
    }
  }, 60_000);

  it('a caller talking over the announcement does not stop the transfer: the words are cut, the REFER still goes out', async () => {
    const server = suite.server;
    const target = await baresipCallee({ user: '+15550500008', timeoutS: 40 });
    const agentId = await transferringAgent(server, '+15550400108', '+15550500008', undefined, { transferOnlyIfHuman: false });
    await transferSource(server, agentId, target.port, '+15550200108');
    try {
      // "Hello world" 0.8 s into the agent's 3 s line: a barge-in (before, the transfer was dropped with the cut turn
      // and the agent went on to answer the caller).
      const result = await dial(server, '+15550400108', callerScript([{ silence: 0.8 }, { wav: HELLO }, { silence: 6 }]), 20);
      expect(result.established, result.log).toBe(true);
      expect(result.log).toMatch(new RegExp(`transferring call \\S+ to '<sip:\\+15550500008@127\\.0\\.0\\.1:${target.port}>'`));
      await target.established;
      const call = await callOf(server, agentId);
      expect(call).toMatchObject({ type: 'telephony_inbound', status: 'completed', endReason: 'transferred' });
      // The agent's line was cut short (what the caller heard of it), and the agent said nothing after it.
      expect(call.transcript).toHaveLength(1);
      expect(call.transcript[0]).toMatchObject({ role: 'agent', interrupted: true });
      expect(HOLD_ON.startsWith(call.transcript[0].content.replace(/[.…]+$/, ''))).toBe(true);
    } finally {
      await target.stop();
    }
  }, 60_000);

  it('bridged fallback: a caller refusing REFER is joined to a second call from the transfer source trunk; each hears the other, the target hanging up ends the caller, and the recording covers the bridge', async () => {
    const server = suite.server;
    // The target answers, says its line after 3 s, and hangs up when it is said.
    const target = await baresipCallee({ user: '+15550500003', wav: callerScript([{ silence: 3 }, { wav: THANKS }]), hangUpAfterWav: true, timeoutS: 40 });
    const agentId = await transferringAgent(server, '+15550400103', '+15550500003', undefined, { transferOnlyIfHuman: false });
    await transferSource(server, agentId, target.port, '+15550200103');
    try {
      const result = await dial(server, '+15550400103', callerScript([{ silence: 5 }, { wav: HELLO }, { silence: 14 }]), 20, { accountParams: ['call_transfer=no'] });
      expect(result.established, result.log).toBe(true);
      expect(result.log).not.toMatch(/transferring call/);
      // Our REFER was sent and refused by the caller.
      const refused = await server.waitForLog(/"to":"\+15550500003".*REFER refused/);
      expect(refused).toMatch(/"status":[4-6]\d\d\b/);
      // Our BYE ended the caller once the target hung up (about 9 s after it answered), long before its microphone
      // ran out (20 s).
      const duration = Number(/terminated \(duration: (\d+) secs?\)/.exec(result.log)?.[1]);
      expect(duration, result.log).toBeLessThan(16);
      await target.established;
      // The second call came from the transfer source's number.
      expect(target.log()).toMatch(/\+15550200103@/);
      const call = await callOf(server, agentId);
      expect(call).toMatchObject({ status: 'completed', endReason: 'transferred' });
      expect(await transcribe(server, await target.recording())).toMatch(/hello\W+world/);
      // The caller heard the agent, then the target (apart: a long silence between the two can end recognition early).
      expect(await transcribe(server, span(result.heard as string, 0, 5))).toMatch(/transfer your call/);
      expect(await transcribe(server, span(result.heard as string, 5))).toMatch(/thank you for trying/);
      // The record ends at the handover; the recording goes on until the bridge ended, and holds the target.
      expect(call.duration).toBeLessThan(duration - 3);
      const recording = await recordingOf(server, call.callId, duration - 2);
      expect(recording.seconds).toBeLessThan(duration + 2);
      expect(await transcribe(server, span(recording.path, 0, 5))).toMatch(/transfer your call/);
      expect(await transcribe(server, span(recording.path, 5))).toMatch(/thank you for trying/);
    } finally {
      await target.stop();
    }
  }, 60_000);

  it('warm transfer of a single-prompt agent: ringback while the target rings, its short greeting taken for a person, the private handoff written by the model, then the caller joined', async () => {
    const server = suite.server;
    const PRIVATE = 'Tell the colleague in one sentence why the caller is calling.';
    const WRITTEN = 'I have a caller for you about their order.';
    const mock = new OpenAiMock({
      respond: (req: MockRequest) => {
        const last = (req.body.messages ?? []).at(-1) as { role: string; content: string };
        if (last.role === 'system') return { text: WRITTEN };
        return { text: HOLD_ON, toolCalls: [{ name: 'to_desk', arguments: '{}' }] };
      },
    });
    const llmBase = await mock.start();
    // A person: "hello world", then silence.
    const target = await baresipCallee({ user: '+15550500004', wav: HELLO, timeoutS: 50 });
    const created = await server.request('POST', `${A}/agent`, {
      body: {
        name: 'Help line',
        workflowType: 'single_prompt',
        prompt: 'You answer the help line. Transfer callers to the desk.',
        model: { provider: 'openai_compatible', baseUrl: llmBase, model: 'test-model' },
        tools: [
          {
            type: 'transfer_call',
            name: 'to_desk',
            description: 'Transfer to the desk',
            transferNumber: '+15550500004',
            transferOption: {
              type: 'warm_transfer',
              privateHandoffOption: { type: 'prompt', prompt: PRIVATE },
              publicHandoffOption: { type: 'static', prompt: 'You are now connected.' },
            },
            detectionTimeout: 15,
          },
        ],
      },
    });
    expect(created.status, created.text).toBe(201);
    const agentId = created.body.data as string;
    await answeredTrunk(server, agentId, { numbers: ['+15550400104'] });
    await transferSource(server, agentId, target.port, '+15550200104');
    try {
      // The caller asks for the desk, waits out the agent, the ringing and the handoffs, says hello to whoever is on
      // the line then, and hangs up: that ends the target's call too.
      const result = await dial(server, '+15550400104', callerScript([{ silence: 1 }, { wav: HELLO }, { silence: 18 }, { wav: HELLO }, { silence: 1.5 }]), 30);
      expect(result.established, result.log).toBe(true);
      expect(result.log).not.toMatch(/transferring call/);
      await target.established;
      await target.exited;
      const call = await callOf(server, agentId);
      expect(call).toMatchObject({ status: 'completed', endReason: 'transferred' });
      expect(await server.waitForLog(/"verdict":"human"/)).toMatch(/"to":"\+15550500004"/);
      // The model was asked for the handoff with its prompt and the conversation so far.
      const asked = mock.requests.find((r) => JSON.stringify(r.body.messages).includes(PRIVATE));
      expect(asked, JSON.stringify(mock.requests.map((r) => r.body.messages))).toBeDefined();
      expect(JSON.stringify(asked!.body.messages)).toMatch(/hello\W+world/i);
      expect(asked!.body.tools).toBeUndefined();
      // The target heard the written handoff, the public one, then the caller.
      // Recognised words in order; "connect" leaves room for the recognizer's variants of "now connected" (one run
      // on a loaded machine failed the stricter pattern), punctuation between words too (a CI run heard "hello,
      // world."), and the message shows the whole text.
      const heardByTarget = await transcribe(server, await target.recording());
      expect(heardByTarget, heardByTarget).toMatch(/about their order\b.*\bconnect.*\bhello\W+world/);
      // The caller heard ringback between the agent's line and the public handoff, and not the private handoff.
      const blocks = blocksOfWav(result.heard as string);
      const ringing = blocks.filter(isRingback);
      expect(ringing.length, 'blocks of ringback').toBeGreaterThanOrEqual(10);
      const from = ringing[0]!.at;
      const to = ringing.at(-1)!.at + 0.1;
      expect(await transcribe(server, span(result.heard as string, 0, from))).toMatch(/transfer your call/);
      const later = await transcribe(server, span(result.heard as string, to));
      expect(later, later).toMatch(/\bconnect/);
      expect(later).not.toMatch(/order/);
    } finally {
      await target.stop();
      await mock.close();
    }
  }, 70_000);

  it('a target answering with a long greeting (a machine) is not joined: the caller hears silence on hold (onHoldMusic none), then the agent says so, and the call goes on', async () => {
    const server = suite.server;
    const target = await baresipCallee({ user: '+15550500007', wav: LONG_GREETING, timeoutS: 40 });
    // Cold, transferOnlyIfHuman by default: we place the call ourselves to hear who answers (no REFER).
    const agentId = await transferringAgent(server, '+15550400107', '+15550500007', undefined, { onHoldMusic: 'none' });
    await transferSource(server, agentId, target.port, '+15550200107');
    try {
      const result = await dial(server, '+15550400107', callerScript([{ silence: 17 }]), 24);
      expect(result.established, result.log).toBe(true);
      expect(result.log).not.toMatch(/transferring call/);
      expect(result.log).not.toMatch(/Connection reset by peer/);
      await target.established;
      // We hung up the target long before its greeting (30 s) ended.
      await Promise.race([target.exited, sleep(5000)]);
      expect(target.log()).toMatch(/terminated \(duration: [0-9] secs?\)/);
      expect(await server.waitForLog(/"verdict":"machine"/)).toMatch(/"to":"\+15550500007"/);
      const call = await callOf(server, agentId);
      expect(call).toMatchObject({ status: 'completed', endReason: 'caller_hangup' });
      expect(call.transcript.map((t: { content: string }) => t.content)).toEqual([HOLD_ON, "I'm sorry, the transfer did not go through: I couldn't reach a person at that number. I'm still here to help."]);
      expect(await transcribe(server, result.heard as string)).toMatch(/transfer your call\b.*\bcould ?n'?t reach a person/);
      // On hold: silence, no ringback, for the seconds the greeting was judged.
      const blocks = blocksOfWav(result.heard as string);
      expect(blocks.some(isRingback)).toBe(false);
      const loud = blocks.flatMap((b, i) => (b.rms > 0.02 ? [i] : []));
      expect(longestQuiet(blocks.slice(loud[0], loud.at(-1)))).toBeGreaterThanOrEqual(2.5);
    } finally {
      await target.stop();
    }
  }, 50_000);

  it('warm transfer to a busy target (486): the agent tells the caller, and the call goes on', async () => {
    const server = suite.server;
    const carrier = await startSippCarrier({ answer: 486, timeoutS: 30 });
    const agentId = await transferringAgent(server, '+15550400105', '+15550500005', { type: 'warm_transfer' });
    await transferSource(server, agentId, carrier.port, '+15550200105');
    try {
      const result = await dial(server, '+15550400105', callerScript([{ silence: 11 }]), 17);
      expect(result.established, result.log).toBe(true);
      expect(result.log).not.toMatch(/Connection reset by peer/);
      // The second call went out through the transfer source's trunk, from its number.
      expect(carrier.arrivals()).toMatchObject([{ from: '+15550200105', to: '+15550500005' }]);
      const call = await callOf(server, agentId);
      expect(call).toMatchObject({ status: 'completed', endReason: 'caller_hangup' });
      expect(call.transcript.map((t: { content: string }) => t.content)).toEqual([HOLD_ON, "I'm sorry, that line is busy. I'm still here to help."]);
      expect(await transcribe(server, result.heard as string)).toMatch(/that line is busy/);
    } finally {
      await carrier.stop();
    }
  }, 40_000);

  it('an outbound call whose agent has no transfer source transfers from its own line: the second call leaves through its trunk, from its fromNumber', async () => {
    const server = suite.server;
    // Both calls are answered at the carrier and hung up by it 6 s later: the callee's BYE ends the bridge.
    const carrier = await startSippCarrier({ answer: 'ok', holdMs: 6000, timeoutS: 40 });
    const agentId = await workflowAgent(server, {
      // sipp sends no audio: a person could never be heard there.
      nodes: [{ id: 'hand', type: 'transfer', text: HOLD_ON, transferNumber: '+15550500006', transferOption: { type: 'warm_transfer' }, transferOnlyIfHuman: false }],
      edges: [],
    });
    const trunk = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Own line', address: `127.0.0.1:${carrier.port}`, numbers: ['+15550200106'] } });
    expect(trunk.status, trunk.text).toBe(201);
    try {
      const res = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber: '+15550300106', fromNumber: '+15550200106' } });
      expect(res.status, res.text).toBe(200);
      const callId = res.body.data.conversationId as string;
      let record: any;
      for (let i = 0; i < 200 && !['completed', 'failed', 'no_answer', 'cancelled'].includes(record?.status); i++) {
        await sleep(100);
        record = (await server.request('GET', `${A}/conversation/${callId}`)).body.data;
      }
      expect(record).toMatchObject({ type: 'telephony_outbound', status: 'completed', endReason: 'transferred' });
      expect(carrier.arrivals()).toMatchObject([
        { from: '+15550200106', to: '+15550300106' },
        { from: '+15550200106', to: '+15550500006' },
      ]);
      // Both calls went through to their BYE (the target's from our side once the callee hung up).
      const done = await Promise.race([carrier.done, sleep(10_000).then(() => null)]);
      expect(done ?? (await carrier.stop())).toMatchObject({ successful: 2, failed: 0 });
    } finally {
      await carrier.stop();
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk.body.data._id}`)).status).toBe(200);
    }
  }, 40_000);

  it('an inbound call whose agent has no transfer source: the transfer is refused, the agent says so, and the call goes on', async () => {
    const server = suite.server;
    const agentId = await transferringAgent(server, '+15550400102', '+15550500002');
    const result = await dial(server, '+15550400102', callerScript([{ silence: 12 }]), 20);
    expect(result.established, result.log).toBe(true);
    // The caller hung up when its microphone ran out, not us.
    expect(result.log).not.toMatch(/Connection reset by peer/);
    expect(result.log).not.toMatch(/transferring call/);
    const call = await callOf(server, agentId);
    expect(call).toMatchObject({ status: 'completed', endReason: 'caller_hangup' });
    expect(call.transcript.map((t: { content: string }) => t.content)).toEqual([HOLD_ON, "I'm sorry, I can't transfer this call. I'm still here to help."]);
    expect(await transcribe(server, result.heard as string)).toMatch(/transfer your call\b.*\bcan'?t transfer this call/);
  }, 40_000);
});
