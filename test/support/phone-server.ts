// Telephony test fixtures over the real server: a server whose SIP leg listens on 127.0.0.2 (peers on 127.0.0.1) with
// its own RTP block (also one per describe block), workflow agents answering inbound trunks, peer RTP blocks, and our
// recognizer for what a peer heard.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';
import { freshStore, startServer, type Dialect, type StoreEnv, type TestServer } from './server.js';
import { freePort, STACK_HOST } from './sip-peers.js';
import type { SuiteServer } from './suite.js';

const A = '/atoms/v1';

/** Starts a server with SIP on 127.0.0.2 (a free port) and RTP in a random 100-port block of 10000-19999. */
export async function sipServer(dialect: Dialect, env: Record<string, string> = {}): Promise<{ server: TestServer; store: StoreEnv }> {
  const store = freshStore(dialect);
  const sipPort = await freePort(STACK_HOST);
  const rtpBase = 10000 + Math.floor(Math.random() * 100) * 100;
  const server = await startServer({
    store,
    env: { PARLEY_SIP_HOST: STACK_HOST, PARLEY_SIP_PORT: String(sipPort), PARLEY_RTP_PORTS: `${rtpBase}-${rtpBase + 99}`, PARLEY_WARM_MODELS: 'true', ...env },
  });
  return { server, store };
}

/** A `sipServer` for the enclosing describe block, stopped and its store dropped afterwards. */
export function sipServerForSuite(dialect: Dialect, env: Record<string, string> = {}): SuiteServer {
  let started: { server: TestServer; store: StoreEnv } | undefined;
  // Warming the speech models on a cold machine takes longer than the default hook timeout.
  beforeAll(async () => {
    started = await sipServer(dialect, env);
  }, 120_000);
  afterAll(async () => {
    await started?.server.stop();
    await started?.store.cleanup();
  });
  const get = () => {
    if (!started) throw new Error('SIP server not started yet');
    return started;
  };
  return {
    get server() {
      return get().server;
    },
    get store() {
      return get().store;
    },
  };
}

/** A workflow agent: a graph as given, or one node speaking `text` (an end_call node with `endCall`). */
export async function workflowAgent(server: TestServer, graph: string | Record<string, unknown>, endCall = false): Promise<string> {
  const workflowGraph = typeof graph === 'string' ? { nodes: [{ id: 'a', type: endCall ? 'end_call' : 'say', text: graph }], edges: [] } : graph;
  const res = await server.request('POST', `${A}/agent`, { body: { name: 'Line', workflowType: 'workflow_graph', workflowGraph } });
  expect(res.status, res.text).toBe(201);
  return res.body.data as string;
}

/** An inbound trunk (fields as given) that `agentId` answers (none with null); returns the trunk's id. */
export async function answeredTrunk(server: TestServer, agentId: string | null, body: Record<string, unknown>): Promise<string> {
  const trunk = await server.request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'Carrier', ...body } });
  expect(trunk.status, trunk.text).toBe(201);
  if (agentId) {
    const answers = await server.request('POST', `${A}/agent/${agentId}/answers`, { body: { sourceKind: 'sipTrunk', sourceId: trunk.body.data._id } });
    expect(answers.status, answers.text).toBe(201);
  }
  return trunk.body.data._id as string;
}

/** A workflow agent (as `workflowAgent` makes it) answering a new inbound trunk with `trunk`'s fields; returns its id. */
export async function trunkAgent(server: TestServer, trunk: Record<string, unknown>, graph: string | Record<string, unknown>, endCall = false): Promise<string> {
  const agentId = await workflowAgent(server, graph, endCall);
  await answeredTrunk(server, agentId, trunk);
  return agentId;
}

/** A random 100-port block of 20000-29999 for a peer's RTP. */
export function peerRtpPorts(): [number, number] {
  const base = 20000 + Math.floor(Math.random() * 100) * 100;
  return [base, base + 99];
}

/** The phone calls the server recorded (newest first). */
export async function phoneCalls(server: TestServer): Promise<{ callId: string }[]> {
  const list = await server.request('GET', `${A}/conversation?callTypes=telephony_inbound`);
  expect(list.status, list.text).toBe(200);
  return list.body.data.logs as { callId: string }[];
}

/** Recognises a WAV through the server's own recognizer (lower case). */
export async function transcribe(server: TestServer, wav: string): Promise<string> {
  const res = await fetch(`${server.base}/waves/v1/stt/`, { method: 'POST', headers: { authorization: `Bearer ${server.key}`, 'content-type': 'audio/wav' }, body: readFileSync(wav) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { transcription: string }).transcription.toLowerCase();
}
