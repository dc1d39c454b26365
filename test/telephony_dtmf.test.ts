// Keypresses over the phone: sipp calls us offering telephone-event (RFC 4733) and plays Debian's recorded "1" key
// (dtmf_2833_1.pcap); the digit drives a workflow agent's `digits` edge, and the agent's reply for that edge ends the call.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testDialects, type StoreEnv, type TestServer } from './support/server.js';
import { killPeers, sippMessages, startSipp, STACK_HOST, writeScenario } from './support/sip-peers.js';
import { endedCall } from './support/agent-client.js';
import { answeredTrunk, peerRtpPorts, sipServer, workflowAgent } from './support/phone-server.js';

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

/** A UAC that offers PCMU and telephone-event/8000 on 101, waits `pauseMs`, plays the pcap, then expects our BYE. */
const SCENARIO = (pauseMs: number) => `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="keypad caller">
  <send retrans="500">
    <![CDATA[
      INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+15557770001@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Max-Forwards: 70
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=sipp 53655765 2353687637 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio [media_port] RTP/AVP 0 101
      a=rtpmap:0 PCMU/8000
      a=rtpmap:101 telephone-event/8000
      a=fmtp:101 0-15
      a=ptime:20
    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="200" rtd="true" rrs="true"/>
  <send>
    <![CDATA[
      ACK [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:+15557770001@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Max-Forwards: 70
      Content-Length: 0
    ]]>
  </send>
  <pause milliseconds="${pauseMs}"/>
  <nop>
    <action>
      <exec play_pcap_audio="${PCAP}"/>
    </action>
  </nop>
  <recv request="BYE" timeout="15000"/>
  <send>
    <![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:]
      [last_Call-ID:]
      [last_CSeq:]
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Content-Length: 0
    ]]>
  </send>
</scenario>
`;

afterEach(() => killPeers());

describe.each(testDialects())('DTMF over SIP on %s', (dialect) => {
  let server: TestServer;
  let store: StoreEnv;

  beforeAll(async () => {
    ({ server, store } = await sipServer(dialect));
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await store?.cleanup();
  });

  it("sipp's RFC 4733 key 1 takes the workflow's digits edge: the transcript has (pressed 1) and the sales reply, then we hang up", async () => {
    const agentId = await workflowAgent(server, MENU);
    await answeredTrunk(server, agentId, { numbers: ['+15550500001'] });
    const sipp = await startSipp({
      scenario: writeScenario('dtmf', SCENARIO(3500)),
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
