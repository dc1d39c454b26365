// The call timers of a phone call against the whole server process: a trunk's maxCallDurationSecs ends a call still
// up with our BYE (max_duration), and a caller whose RTP stops is hung up after PARLEY_RTP_TIMEOUT_SECS
// (media_timeout); the agent's pre-call API runs while the caller hears ringing, before the answer. Mostly waiting on those timers (over a minute), so this file runs in the shared tier, beside others,
// rather than in the timing tier with the rest of telephony_server_hardening.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sleep, mediaDialects, type TestServer } from './support/server.js';
import { STACK_HOST } from './support/sip-peers.js';
import { RawCaller } from './support/raw-caller.js';
import { answeredTrunk, phoneCalls, sipServerForSuite, workflowAgent } from './support/phone-server.js';
import { endedCall } from './support/agent-client.js';
import { lookupAgent, startCrm } from './support/crm.js';

const A = '/atoms/v1';

const peers: { close(): void }[] = [];
afterEach(() => {
  for (const p of peers.splice(0)) p.close();
});

describe.each(mediaDialects())('phone call timers on %s', (dialect) => {
  // Private egress: the pre-call test's CRM listens on loopback.
  const suite = sipServerForSuite(dialect, { PARLEY_RTP_TIMEOUT_SECS: '5', PARLEY_ALLOW_PRIVATE_EGRESS: '1' });
  let server: TestServer;
  let agentId: string;

  beforeAll(async () => {
    server = suite.server;
    agentId = await workflowAgent(server, 'Hello, this is the front desk.');
  });

  it.skipIf(dialect !== 'sqlite')('maxCallDurationSecs: the server hangs up a call still up after 60 s with a BYE, and records max_duration', async () => {
    // The caller stays silent: idle reprompts must not end the call before the maximum duration does.
    const agent = await server.request('POST', `${A}/agent`, {
      body: {
        name: 'Patient line',
        workflowType: 'workflow_graph',
        workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Hello, take your time.' }], edges: [] },
        llmIdleTimeoutConfig: { telephonyTimeoutTimeInSecs: 300 },
      },
    });
    expect(agent.status, agent.text).toBe(201);
    await answeredTrunk(server, agent.body.data as string, { numbers: ['+15550600002'], maxCallDurationSecs: 60 });
    const caller = await RawCaller.open({ host: STACK_HOST, port: server.sipPort });
    peers.push(caller);
    const call = await caller.invite({ to: '+15550600002' });
    expect(call.final.status, call.final.text).toBe(200);
    const stopRtp = caller.sendRtp(call); // a live line: the media timeout (5 s here) must not end it first
    const bye = await caller.awaitBye(call, 75_000).finally(stopRtp);
    const after = bye.at - call.final.at;
    expect(after).toBeGreaterThanOrEqual(59_000);
    expect(after).toBeLessThan(70_000);
    const [latest] = await phoneCalls(server);
    const record = await endedCall(server, latest!.callId);
    expect(record).toMatchObject({ type: 'telephony_inbound', to: '+15550600002', status: 'completed', endReason: 'max_duration', callFailureReason: null });
    // Measured from the agent session's start, a moment after the timer started.
    expect(record.duration).toBeGreaterThanOrEqual(58);
    expect(record.duration).toBeLessThan(70);
  }, 100_000);

  it('hangs up a caller that sends no RTP for PARLEY_RTP_TIMEOUT_SECS with a BYE, and records media_timeout', async () => {
    await answeredTrunk(server, agentId, { numbers: ['+15550600003'] });
    const caller = await RawCaller.open({ host: STACK_HOST, port: server.sipPort });
    peers.push(caller);
    const call = await caller.invite({ to: '+15550600003' });
    expect(call.final.status, call.final.text).toBe(200);
    // Packets for 2 s, then the line goes dead: the BYE comes 5 s after the last packet.
    const stopRtp = caller.sendRtp(call, 200);
    await sleep(2000);
    stopRtp();
    const silentFrom = Date.now();
    const bye = await caller.awaitBye(call, 15_000);
    expect(bye.at - silentFrom).toBeGreaterThanOrEqual(4500);
    expect(bye.at - silentFrom).toBeLessThan(8000);
    const [latest] = await phoneCalls(server);
    expect(await endedCall(server, latest!.callId)).toMatchObject({ to: '+15550600003', status: 'completed', endReason: 'media_timeout' });
  }, 30_000);

  it('runs the agent\'s pre-call API while the caller hears ringing: the 200 OK comes once the lookup has answered, and the first words use it', async () => {
    const LOOKUP_MS = 800;
    const crm = await startCrm('Grace', LOOKUP_MS);
    peers.push({ close: () => void crm.close() });
    const { hits } = crm;
    const agent = await server.request('POST', `${A}/agent`, { body: lookupAgent(crm, 'Hello {{customer_name}}, goodbye.') });
    expect(agent.status, agent.text).toBe(201);
    await answeredTrunk(server, agent.body.data as string, { numbers: ['+15550600004'] });
    const caller = await RawCaller.open({ host: STACK_HOST, port: server.sipPort });
    peers.push(caller);
    const call = await caller.invite({ to: '+15550600004', from: '+15550909090' });
    expect(call.final.status, call.final.text).toBe(200);
    const ringing = call.responses.find((r) => r.status === 180);
    expect(ringing).toBeDefined();
    // One lookup with the caller's number, after the ringing began; the answer only once the lookup had answered.
    expect(hits).toHaveLength(1);
    expect(hits[0]!.url).toBe(`/lookup/${encodeURIComponent('+15550909090')}`);
    expect(hits[0]!.at).toBeGreaterThanOrEqual(ringing!.at - 20);
    expect(call.final.at - hits[0]!.at).toBeGreaterThanOrEqual(LOOKUP_MS - 20);
    await caller.awaitBye(call, 15_000);
    const [latest] = await phoneCalls(server);
    const record = await endedCall(server, latest!.callId);
    expect(record).toMatchObject({ type: 'telephony_inbound', to: '+15550600004', status: 'completed' });
    expect(record.transcript.map((t: { content: string }) => t.content).join(' ')).toMatch(/Hello Grace, goodbye/);
    expect(record.variables).toMatchObject({ customer_name: 'Grace', user_number: '+15550909090' });
    expect(record.preCallApi).toMatchObject({ ok: true, status: 200, error: null, variables: ['customer_name'] });
  }, 30_000);
});
