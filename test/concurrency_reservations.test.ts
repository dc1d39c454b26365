// `GET /concurrency` and `PUT /concurrency/reservations` (issue 35 item 6) against the real server: the organization's
// speech-session limit, its agents' reservations (stored, validated, refused with 400 where they cannot be honoured)
// and their enforcement on real agent sessions: a reserved place is the agent's own, other calls share what is left.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createOrgKey, mediaDialects, runCliOn, sleep, startServer, testDialects } from './support/server.js';
import { killCallees, startSippCarrier } from './support/sip-callee.js';
import { sipServerForSuite, workflowAgent } from './support/phone-server.js';
import { serverForSuite } from './support/suite.js';
import { A, createAgent } from './support/agents.js';
import { connectUrl } from './support/agent-client.js';
import { upgradeRefusal } from './support/ws-refusal.js';

const open: WebSocket[] = [];
afterEach(async () => {
  for (const ws of open.splice(0)) ws.close();
  await sleep(300);
});

describe.each(testDialects())('concurrency reservations on %s', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_WARM_MODELS: 'false', PARLEY_MAX_SPEECH_SESSIONS: '4', PARLEY_MAX_SPEECH_SESSIONS_PER_KEY: '3' });

  const session = async (agentId: string, key = suite.server.key): Promise<WebSocket> => {
    const ws = new WebSocket(connectUrl(suite.server, { agent_id: agentId, mode: 'webcall', sample_rate: '16000' }), { headers: { authorization: `Bearer ${key}` } });
    open.push(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.once('error', reject);
    });
    return ws;
  };
  const refused = (agentId: string, key = suite.server.key) =>
    upgradeRefusal(connectUrl(suite.server, { agent_id: agentId, mode: 'webcall', sample_rate: '16000' }), { authorization: `Bearer ${key}` });
  const concurrency = async (key?: string) => {
    const res = await suite.server.request('GET', `${A}/concurrency`, { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.success).toBe(true);
    return res.body.data;
  };
  const reserve = (reservations: unknown, key?: string) => suite.server.request('PUT', `${A}/concurrency/reservations`, { body: { reservations }, key });

  it('refuses what cannot be honoured (400, naming why) and stores what can', async () => {
    const a1 = await createAgent(suite.server, { name: 'Reserved' });
    const otherKey = await createOrgKey(suite.store, 'other', 'other-org');
    const foreign = await createAgent(suite.server, { name: 'Foreign' }, otherKey);
    expect(await concurrency()).toEqual({ orgLimit: 3, totalReserved: 0, unreservedPool: 3, agents: [], active: 0, serverLimit: 4 });

    const empty = await suite.server.request('PUT', `${A}/concurrency/reservations`, { body: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.errors.join(' ')).toMatch(/reservations/);
    const cases: [unknown, RegExp][] = [
      [[{ agentId: a1, webcall: 1, outbound: 0, inbound: 0, chat: 1 }], /chat: chat places cannot be reserved here/],
      [[{ agentId: a1, webcall: 2, outbound: 1, inbound: 1, chat: 0 }], /4 places would be reserved, above the organization's limit of 3/],
      [[{ agentId: a1, webcall: -1, outbound: 0, inbound: 0, chat: 0 }], /reservations\.0\.webcall|reservations\[0\]\.webcall/],
      [[{ agentId: a1, webcall: 1.5, outbound: 0, inbound: 0, chat: 0 }], /webcall: must be a whole number/],
      [[{ agentId: 'nope', webcall: 1, outbound: 0, inbound: 0, chat: 0 }], /agentId: must be a 24-character hex agent id/],
      [[{ agentId: foreign, webcall: 1, outbound: 0, inbound: 0, chat: 0 }], new RegExp(`no agent ${foreign} in your organization`)],
      [[{ agentId: a1, webcall: 1, outbound: 0, inbound: 0, chat: 0 }, { agentId: a1, webcall: 1, outbound: 0, inbound: 0, chat: 0 }], /listed twice/],
      [[], /at least one agent/],
    ];
    for (const [body, message] of cases) {
      const res = await reserve(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.status).toBe(false);
      expect(res.body.errors.join(' ')).toMatch(message);
    }
    // The other organization may reserve up to the server's cap less ours: 4 - 3 = 1 once we hold 3.
    const ok = await reserve([{ agentId: a1, webcall: 1, outbound: 1, inbound: 1, chat: 0 }]);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual({ success: true, data: { updated: 1 } });
    const theirs = await reserve([{ agentId: foreign, webcall: 2, outbound: 0, inbound: 0, chat: 0 }], otherKey);
    expect(theirs.status).toBe(400);
    expect(theirs.body.errors.join(' ')).toMatch(/3 reserved by other organizations would be above the server's cap of 4/);

    const now = await concurrency();
    expect(now).toMatchObject({ orgLimit: 3, totalReserved: 3, unreservedPool: 0 });
    expect(now.agents).toEqual([{ agentId: a1, agentName: 'Reserved', avatarUrl: null, webcall: 1, outbound: 1, inbound: 1, chat: 0, active: { webcall: 0, outbound: 0, inbound: 0, chat: 0 } }]);
    expect((await concurrency(otherKey)).agents).toEqual([]);

    // Kept in the store: a second server on it reads them.
    const second = await startServer({ store: suite.store, env: { PARLEY_WARM_MODELS: 'false', PARLEY_MAX_SPEECH_SESSIONS: '4', PARLEY_MAX_SPEECH_SESSIONS_PER_KEY: '3' } });
    try {
      const seen = await second.request('GET', `${A}/concurrency`, { key: suite.server.key });
      expect(seen.body.data.agents.map((a: any) => [a.agentId, a.webcall, a.outbound, a.inbound])).toEqual([[a1, 1, 1, 1]]);
    } finally {
      await second.stop();
    }

    // All zero removes an agent's reservation.
    expect((await reserve([{ agentId: a1, webcall: 0, outbound: 0, inbound: 0, chat: 0 }])).status).toBe(200);
    expect(await concurrency()).toMatchObject({ totalReserved: 0, unreservedPool: 3, agents: [] });
  });

  it("enforces them on agent sessions: reserved places are the agent's own, the rest share the pools", async () => {
    const reserved = await createAgent(suite.server, { name: 'Front desk' });
    const plain = await createAgent(suite.server, { name: 'Plain' });
    const otherKey = await createOrgKey(suite.store, 'other-2', 'other-org-2');
    const foreign = await createAgent(suite.server, { name: 'Foreign 2' }, otherKey);
    expect((await reserve([{ agentId: reserved, webcall: 2, outbound: 0, inbound: 0, chat: 0 }])).status).toBe(200);

    // Our pool is 3 - 2 = 1: one session of the plain agent, then 429.
    await session(plain);
    const full = await refused(plain);
    expect(full.status).toBe(429);
    expect(full.body.errors.join(' ')).toMatch(/unreserved pool \(1 of its 3 .*2 are reserved for agents\)/);
    // The reserved agent's two places are free.
    await session(reserved);
    await session(reserved);
    expect((await refused(reserved)).status).toBe(429);
    const now = await concurrency();
    expect(now).toMatchObject({ active: 3, serverLimit: 4 });
    expect(now.serverActive).toBeUndefined();
    expect(now.agents.map((a: any) => [a.agentName, a.webcall, a.active.webcall])).toEqual([['Front desk', 2, 2], ['Plain', 0, 1]]);

    // The server's pool is 4 - 2 reserved = 2, one of them used: another organization gets one session, then 503.
    await session(foreign, otherKey);
    expect((await refused(foreign, otherKey)).status).toBe(503);

    // Closing a reserved session frees it for its agent only: the server's pool is still full for everyone else.
    (open[2] as WebSocket).close();
    await sleep(500);
    expect((await refused(plain)).status).toBe(503);
    expect((await refused(foreign, otherKey)).status).toBe(503);
    await session(reserved);
  });
});

// Outbound calls through the dialer and a real SIP carrier (sipp): a reserved agent's queued call is not held up
// behind a call of its organization that waits for the unreserved pool.
describe.each(mediaDialects())('concurrency reservations on outbound calls on %s', (dialect) => {
  const carrierPort = 41000 + Math.floor(Math.random() * 4000) * 2 + 1;
  // Organization limit 2: one place reserved for the reserved agent's outbound calls, one in the pool.
  const suite = sipServerForSuite(dialect, { PARLEY_CARRIER_ADDRESS: `127.0.0.1:${carrierPort}`, PARLEY_CARRIER_CPS: '10', PARLEY_MAX_SPEECH_SESSIONS_PER_KEY: '2' });
  afterEach(() => killCallees());

  it("dials the reserved agent's call while the other agent's second call waits for the pool", async () => {
    const server = suite.server;
    const added = await runCliOn(suite.store, 'numbers', ['add', '+15550200081', '--provider', 'carrier1', '--json']);
    expect(added.code, added.stderr).toBe(0);
    expect((await server.request('POST', `${A}/product/rent-number`, { body: { phoneNumber: '+15550200081' } })).status).toBe(200);
    const plain = await workflowAgent(server, 'Hello.');
    const reserved = await workflowAgent(server, 'Hello there.');
    const put = await server.request('PUT', `${A}/concurrency/reservations`, { body: { reservations: [{ agentId: reserved, webcall: 0, outbound: 1, inbound: 0, chat: 0 }] } });
    expect(put.status, put.text).toBe(200);
    const carrier = await startSippCarrier({ port: carrierPort, answer: 'ok', holdMs: 4000, calls: 3, timeoutS: 40 });
    try {
      const place = async (agentId: string, phoneNumber: string) => {
        const res = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber, fromNumber: '+15550200081' } });
        expect(res.status, res.text).toBe(200);
        return res.body.data.conversationId as string;
      };
      const p1 = await place(plain, '+15550400801');
      const p2 = await place(plain, '+15550400802');
      const r1 = await place(reserved, '+15550400803');
      for (const id of [p1, p2, r1]) {
        for (const until = Date.now() + 30_000; ; await sleep(50)) {
          const res = await server.request('GET', `${A}/conversation/${id}`);
          if (['completed', 'failed', 'no_answer', 'cancelled'].includes(res.body.data.status)) break;
          if (Date.now() > until) throw new Error(`call ${id} stayed ${res.body.data.status}`);
        }
      }
      const arrivals = carrier.arrivals();
      // The reserved agent's call went while the first plain call was up; the second plain call waited for it to end.
      expect(arrivals.map((a) => a.to)).toEqual(['+15550400801', '+15550400803', '+15550400802']);
      expect(arrivals[1]!.at - arrivals[0]!.at).toBeLessThan(2000);
      expect(arrivals[2]!.at - arrivals[0]!.at).toBeGreaterThan(3500);
    } finally {
      await carrier.stop();
    }
  }, 60_000);
});
