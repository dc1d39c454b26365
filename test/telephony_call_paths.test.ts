// How a phone call ends and what it is carried over, with baresip on real RTP: the caller hanging up while the agent
// speaks, the agent ending the call (our BYE after its last words played), SDES-SRTP under a trunk that requires it,
// and a Kamailio carrier proxy in front of us.
import { afterEach, describe, expect, it } from 'vitest';
import { mediaDialects, type TestServer } from './support/server.js';
import { baresipCall, callerScript, killBaresips, type BaresipOptions } from './support/baresip.js';
import { freePort, killPeers, STACK_HOST } from './support/sip-peers.js';
import { startCarrier, stopCarriers } from './support/kamailio.js';
import { endedCall } from './support/agent-client.js';
import { peerRtpPorts, sipServerForSuite, transcribe, trunkAgent } from './support/phone-server.js';

const A = '/atoms/v1';

const LONG_GREETING =
  'Welcome to the city library help line. Our opening hours are from nine in the morning until eight in the evening on weekdays, ' +
  'and from ten until four on Saturdays. We are closed on Sundays and on public holidays.';

/** Where the carrier proxy listens: apart from the callers (127.0.0.1), so a trunk can tell the two apart. */
const CARRIER_HOST = '127.0.0.3';

afterEach(() => {
  killBaresips();
  killPeers();
  stopCarriers();
});

/** baresip dials `number` (digits only) at our server (or at `extra.target`) with `silence` seconds of a silent microphone. */
async function dial(server: TestServer, number: string, silence: number, extra: Partial<BaresipOptions> = {}) {
  return baresipCall({
    target: `sip:${number}@${STACK_HOST}:${server.sipPort}`,
    wav: callerScript([{ silence }]),
    sipPort: await freePort(),
    rtpPorts: peerRtpPorts(),
    timeoutS: silence + 3,
    ...extra,
  });
}

/** The one phone call an agent took, once its record is written. */
async function callOf(server: TestServer, agentId: string): Promise<any> {
  const list = await server.request('GET', `${A}/conversation?callTypes=telephony_inbound&agentIds=${agentId}`);
  expect(list.status, list.text).toBe(200);
  expect(list.body.data.logs).toHaveLength(1);
  return endedCall(server, list.body.data.logs[0].callId);
}

describe.each(mediaDialects())('how a phone call ends, on %s', (dialect) => {
  const suite = sipServerForSuite(dialect);

  it('the caller hangs up while the agent speaks: the call ends as caller_hangup with the greeting cut where it was heard', async () => {
    const server = suite.server;
    const agentId = await trunkAgent(server, { numbers: ['+15550400001'] }, LONG_GREETING);
    const result = await dial(server, '15550400001', 4);
    expect(result.established, result.log).toBe(true);
    // baresip hung up itself (its microphone ended): the session was not closed by us.
    expect(result.log).not.toMatch(/Connection reset by peer/);
    const call = await callOf(server, agentId);
    expect(call).toMatchObject({ type: 'telephony_inbound', to: '+15550400001', status: 'completed', endReason: 'caller_hangup' });
    expect(call.transcript).toHaveLength(1);
    const [greeting] = call.transcript as { role: string; content: string; interrupted?: boolean }[];
    expect(greeting).toMatchObject({ role: 'agent', interrupted: true });
    expect(greeting!.content.length).toBeGreaterThan(10);
    expect(greeting!.content.length).toBeLessThan(LONG_GREETING.length / 2);
    expect(LONG_GREETING.startsWith(greeting!.content.replace(/[.…]+$/, ''))).toBe(true);
  }, 30_000);

  it('the agent ends the call: its last words play, then our BYE closes the call on baresip', async () => {
    const server = suite.server;
    const agentId = await trunkAgent(server, { numbers: ['+15550400002'] }, 'Thank you for calling the test line. Goodbye.', true);
    const result = await dial(server, '15550400002', 9);
    expect(result.established, result.log).toBe(true);
    // baresip reports the session closed by the remote side well before its 9 s microphone ran out.
    expect(result.log).toMatch(/session closed: Connection reset by peer/);
    const duration = Number(/terminated \(duration: (\d+) secs?\)/.exec(result.log)?.[1]);
    expect(duration).toBeLessThan(7);
    expect(await transcribe(server, result.heard as string)).toMatch(/thank you for calling\b.*\bgoodbye/);
    const call = await callOf(server, agentId);
    expect(call).toMatchObject({ type: 'telephony_inbound', status: 'completed', endReason: 'ended' });
    expect(call.transcript).toMatchObject([{ role: 'agent', content: 'Thank you for calling the test line. Goodbye.' }]);
  }, 30_000);

  it('SRTP: baresip offering SDES-SRTP only (srtp-mand) is answered under mediaEncryption require, and hears the agent', async () => {
    const server = suite.server;
    const agentId = await trunkAgent(server, { numbers: ['+15550400003'], mediaEncryption: 'require' }, 'This line is encrypted. How can I help you today?');
    const result = await dial(server, '15550400003', 6, { srtp: 'mand' });
    expect(result.established, result.log).toBe(true);
    expect(result.log).toMatch(/srtp: audio: SRTP is Enabled \(cryptosuite=AES_CM_128_HMAC_SHA1_80\)/);
    expect(await transcribe(server, result.heard as string)).toMatch(/encrypted\W+how can i help you\b/);
    expect(await callOf(server, agentId)).toMatchObject({ status: 'completed', endReason: 'caller_hangup' });
  }, 30_000);

  it('SRTP: the same srtp-mand offer is refused with 488 under mediaEncryption disable', async () => {
    const server = suite.server;
    await trunkAgent(server, { numbers: ['+15550400004'], mediaEncryption: 'disable' }, 'You will not hear this.');
    const result = await dial(server, '15550400004', 1, { srtp: 'mand' });
    expect(result.established, result.log).toBe(false);
    expect(result.log).toMatch(/488 Not Acceptable Here/);
  }, 20_000);

  it('a Kamailio carrier proxy in front of us: its relayed call is answered, while the caller dialing us directly is refused', async () => {
    const server = suite.server;
    // The trunk takes calls only from the carrier's address.
    const agentId = await trunkAgent(server, { numbers: ['+15550400005'], allowedAddresses: [CARRIER_HOST] }, 'Hello from the front desk, how can I help you?');
    const carrier = await startCarrier({ host: CARRIER_HOST, port: await freePort(CARRIER_HOST), customer: '127.0.0.1', target: `${STACK_HOST}:${server.sipPort}` });
    const direct = await dial(server, '15550400005', 1);
    expect(direct.established, direct.log).toBe(false);
    expect(direct.log).toMatch(/403 Forbidden/);

    const result = await dial(server, '15550400005', 6, { target: `sip:15550400005@${CARRIER_HOST}:${carrier.port}` });
    expect(result.established, result.log).toBe(true);
    expect(carrier.log()).toMatch(new RegExp(`CARRIER relays INVITE sip:15550400005@${CARRIER_HOST.replace(/\./g, '\\.')}:${carrier.port} from 127\\.0\\.0\\.1`));
    expect(await transcribe(server, result.heard as string)).toMatch(/front desk\W+how can i help you/);
    expect(await callOf(server, agentId)).toMatchObject({ type: 'telephony_inbound', to: '+15550400005', status: 'completed', endReason: 'caller_hangup' });
  }, 40_000);
});
