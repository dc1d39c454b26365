// Keypresses over the phone: sipp calls us offering telephone-event (RFC 4733) and plays Debian's recorded "1" key
// (dtmf_2833_1.pcap); the digit drives a workflow agent's `digits` edge, and the agent's reply for that edge ends the call.
import { afterEach, describe, expect, it } from 'vitest';
import { mediaDialects } from './support/server.js';
import { killPeers, sippByeAnswered, sippCallSetup, sippMessages, sippPlayPcap, sippScenario, sippSdp, startSipp, STACK_HOST, writeScenario } from './support/sip-peers.js';
import { endedCall } from './support/agent-client.js';
import { peerRtpPorts, sipServerForSuite, trunkAgent } from './support/phone-server.js';

const A = '/atoms/v1';
const PCAP = '/usr/share/sip-tester/dtmf_2833_1.pcap';

const MENU = {
  startNodeId: 'menu',
  nodes: [
    { id: 'menu', type: 'say', text: 'Press one for sales, or two for support.', noMatchText: 'Sorry, that is not an option.' },
    { id: 'sales', type: 'end_call', text: 'Connecting you to sales. Goodbye.' },
    { id: 'support', type: 'end_call', text: 'Connecting you to support. Goodbye.' },
  ],
  edges: [
    { from: 'menu', to: 'support', condition: { type: 'digits', digits: '2' } },
    { from: 'menu', to: 'sales', condition: { type: 'digits', digits: '1' } },
  ],
};

/** A caller offering PCMU and telephone-event/8000 on 101: 3.5 s after the answer it plays the pcap, then expects our BYE. */
const SCENARIO = sippScenario('keypad caller', [
  ...sippCallSetup(sippSdp('PCMU', true), '+15557770001'),
  '<pause milliseconds="3500" />',
  sippPlayPcap(PCAP),
  ...sippByeAnswered(15_000),
]);

afterEach(() => killPeers());

describe.each(mediaDialects())('DTMF over SIP on %s', (dialect) => {
  const suite = sipServerForSuite(dialect);

  it("sipp's RFC 4733 key 1 takes the workflow's digits edge: the transcript has (pressed 1) and the sales reply, then we hang up", async () => {
    const server = suite.server;
    const agentId = await trunkAgent(server, { numbers: ['+15550500001'] }, MENU);
    const sipp = await startSipp({
      scenario: writeScenario('dtmf', SCENARIO),
      remote: `${STACK_HOST}:${server.sipPort}`,
      service: '15550500001',
      timeoutS: 25,
      extra: ['-mp', String(peerRtpPorts()[0])],
    });
    const run = await sipp.done;
    expect(run.code, run.output).toBe(0);
    // Our BYE came after the key press.
    expect(sippMessages(run.messages).some((m) => m.direction === 'received' && m.method === 'BYE')).toBe(true);

    const list = await server.request('GET', `${A}/conversation?callTypes=telephony_inbound&agentIds=${agentId}`);
    expect(list.body.data.logs).toHaveLength(1);
    const call = await endedCall(server, list.body.data.logs[0].callId);
    expect(call).toMatchObject({ type: 'telephony_inbound', to: '+15550500001', from: '+15557770001', status: 'completed', endReason: 'ended' });
    expect((call.transcript as { role: string; content: string }[]).map(({ role, content }) => ({ role, content }))).toEqual([
      { role: 'agent', content: 'Press one for sales, or two for support.' },
      { role: 'user', content: '(pressed 1)' },
      { role: 'agent', content: 'Connecting you to sales. Goodbye.' },
    ]);
  }, 40_000);
});
