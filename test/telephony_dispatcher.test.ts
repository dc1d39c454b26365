// Several servers behind Kamailio's dispatcher (docs/several-servers.md): two server processes on one PostgreSQL
// schema and one Redis, SIP on 127.0.0.2 at two ports, Kamailio's dispatcher on 127.0.0.1 spreading sipp's calls
// over them. Calls land on both servers, each call's webhooks go out once although both run a webhook dispatcher,
// and a killed server's share of the calls moves to the other: first by the failure route (no answer in time),
// then by OPTIONS probing (the dead server leaves the rotation). A trunk with digest credentials works under
// round-robin: a challenge one server made is accepted by the other (the nonce secret is in the shared store).
// PostgreSQL only: two processes cannot share the SQLite file store.
import { execFileSync } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freshStore, ROOT, sleep, startServer, testDialects, type StoreEnv, type TestServer } from './support/server.js';
import { freePort, killPeers, PEER_HOST, sippByeAnswered, sippCallSetup, sippScenario, sippSdp, STACK_HOST, startSipp, writeScenario } from './support/sip-peers.js';
import { answeredTrunk, workflowAgent } from './support/phone-server.js';
import { dispatcherConfig, dispatcherList, startDispatcher, stopDispatchers, type Dispatcher } from './support/kamailio-dispatcher.js';
import { endedCall } from './support/agent-client.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const A = '/atoms/v1';
const NUMBER = '+15550700001';
const GREETING = 'Hello from the shared front desk. Goodbye.';

/** A caller's INVITE (CSeq `cseq`, `extra` header lines) and the ACK of its 2xx, with the Route set of the 200. */
const invite = (cseq: number, extra: string[] = []) =>
  sippCallSetup(sippSdp('PCMU'), '+15550799999').map((step) =>
    step.replace('CSeq: 1 INVITE\n', [`CSeq: ${cseq} INVITE`, ...extra, ''].join('\n')).replace('CSeq: 1 ACK\n', `CSeq: ${cseq} ACK\n[routes]\n`),
  );

/**
 * A caller: INVITE through the dispatcher, ACK, then our BYE (the agent greets and ends the call). The ACK carries the
 * Route set from the 200's Record-Route ([routes]), so the dispatcher passes it to the server that answered.
 */
const CALLER = sippScenario('caller through the dispatcher', [...invite(1), ...sippByeAnswered(20_000)]);

/** A caller on a trunk with digest credentials: the INVITE is challenged (401), ACKed, and sent again answering it. */
const AUTH_CALLER = sippScenario('caller answering a challenge through the dispatcher', [
  (invite(1)[0] as string),
  '<recv response="100" optional="true" />',
  '<recv response="401" auth="true" />',
  '<send><![CDATA[\nACK sip:[service]@[remote_ip]:[remote_port] SIP/2.0\n[last_Via:]\n[last_From:]\n[last_To:]\n[last_Call-ID:]\nCSeq: 1 ACK\nMax-Forwards: 70\nContent-Length: 0\n\n]]></send>',
  ...invite(2, ['[authentication username=pbx password=shared-front-desk]']),
  ...sippByeAnswered(20_000),
]);

/** How many inbound calls this server answered, from its own /metrics (the store is shared; the metrics are not). */
async function answeredBy(server: TestServer): Promise<number> {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  return Number(/^parley_sip_answer_seconds_count\{direction="inbound"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

/** The call ids this server logged as answered. */
function callsIn(server: TestServer): string[] {
  return server.logs.flatMap((line) => {
    try {
      const entry = JSON.parse(line) as { msg?: string; callId?: string };
      return entry.msg === 'inbound call answered' && entry.callId ? [entry.callId] : [];
    } catch {
      return [];
    }
  });
}

/** Delivery ids this server logged as sent (DELIVERED). */
function deliveriesBy(server: TestServer): string[] {
  return server.logs.flatMap((line) => {
    try {
      const entry = JSON.parse(line) as { msg?: string; delivery?: string; status?: string };
      return entry.msg === 'webhook delivery' && entry.status === 'DELIVERED' && entry.delivery ? [entry.delivery] : [];
    } catch {
      return [];
    }
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

afterEach(() => killPeers());

describe('the several-servers guide', () => {
  it("shows the dispatcher list and kamailio.cfg the tests run, and Kamailio's config check accepts that config", () => {
    const doc = readFileSync(path.join(ROOT, 'docs/several-servers.md'), 'utf8');
    const blocks = [...doc.matchAll(/^```\w*\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
    expect(blocks).toContain(dispatcherList(['10.0.0.21:5060', '10.0.0.22:5060']));
    const config = dispatcherConfig({ host: '10.0.0.10', port: 5060, listFile: '/etc/kamailio/dispatcher.list', ctl: '/run/kamailio/kamailio_ctl' });
    expect(blocks).toContain(config);
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'parley-kamailio-check-')), 'kamailio.cfg');
    writeFileSync(file, config);
    // Parses the whole config and resolves every module and parameter; exits non-zero on any error.
    expect(execFileSync('timeout', ['10', 'kamailio', '-f', file, '-c'], { stdio: ['ignore', 'pipe', 'pipe'] }).toString()).toMatch(/udp: 10\.0\.0\.10/);
  });
});

describe.runIf(testDialects().includes('postgres'))("several servers behind Kamailio's dispatcher (PostgreSQL, Redis)", () => {
  let store: StoreEnv;
  let one: TestServer;
  let two: TestServer;
  let dispatcher: Dispatcher;
  let agentId: string;
  let secret: string;
  const hooks = new WebhookReceiver();
  /** Every call placed so far (ids from the servers' logs). */
  const placed: string[] = [];

  /**
   * Places `calls` calls through a dispatcher (`ratePerS` a second; the plain caller to NUMBER unless told); resolves
   * with the new call ids once all ended.
   */
  async function callThrough(calls: number, ratePerS: number, o: { via?: Dispatcher; scenario?: string; number?: string } = {}): Promise<string[]> {
    const via = o.via ?? dispatcher;
    const before = new Set([...callsIn(one), ...callsIn(two)]);
    const sipp = await startSipp({
      scenario: writeScenario('dispatcher-caller', o.scenario ?? CALLER),
      remote: `${via.host}:${via.port}`,
      service: (o.number ?? NUMBER).slice(1),
      calls,
      timeoutS: 60,
      extra: ['-r', String(ratePerS), '-l', String(calls)],
    });
    const result = await sipp.done;
    expect(result.code, `${result.output}\n${via.log()}`).toBe(0);
    expect(result.output).toMatch(new RegExp(`Successful call\\s*\\|\\s*\\d+\\s*\\|\\s*${calls}\\b`));
    const fresh = await until('the servers to log every call', () => {
      const ids = [...callsIn(one), ...callsIn(two)].filter((id) => !before.has(id));
      return ids.length >= calls ? ids : undefined;
    });
    expect(fresh).toHaveLength(calls);
    placed.push(...fresh);
    return fresh;
  }

  beforeAll(async () => {
    store = freshStore('postgres');
    const portOne = await freePort(STACK_HOST);
    let portTwo = await freePort(STACK_HOST);
    while (portTwo === portOne) portTwo = await freePort(STACK_HOST);
    const rtp = 10000 + Math.floor(Math.random() * 50) * 200;
    // What docs/several-servers.md gives every server: the one store, the one Redis, SIP on its own address and port,
    // the same bootstrap key (and the same PARLEY_SECRET_KEY: here the shared data dir's key file). The webhook
    // dispatchers poll often, so both compete for every delivery.
    const shared = { PARLEY_SIP_HOST: STACK_HOST, PARLEY_REDIS_URL: 'redis://127.0.0.1:6379', PARLEY_WARM_MODELS: 'true', PARLEY_WEBHOOK_POLL_MS: '50' };
    one = await startServer({ store, env: { ...shared, PARLEY_SIP_PORT: String(portOne), PARLEY_RTP_PORTS: `${rtp}-${rtp + 99}` } });
    two = await startServer({ store, env: { ...shared, PARLEY_SIP_PORT: String(portTwo), PARLEY_RTP_PORTS: `${rtp + 100}-${rtp + 199}`, PARLEY_BOOTSTRAP_KEY: one.key } });
    dispatcher = await startDispatcher({ host: PEER_HOST, port: await freePort(PEER_HOST), destinations: [`${STACK_HOST}:${one.sipPort}`, `${STACK_HOST}:${two.sipPort}`], timeoutS: 300 });

    // The trunk takes calls from the dispatcher's address only; it is in the store, so both servers answer it.
    agentId = await workflowAgent(one, GREETING, true);
    await answeredTrunk(one, agentId, { numbers: [NUMBER], allowedAddresses: [PEER_HOST] });
    await hooks.start();
    const hook = await one.request('POST', `${A}/webhook`, { body: { endpoint: hooks.url, events: ['pre-conversation', 'post-conversation'].map((eventType) => ({ agentId, eventType })) } });
    expect(hook.status, hook.text).toBe(201);
    // Read back through the other server: the secret is sealed in the store, and opens there as well.
    const read = await two.request('GET', `${A}/webhook?webhookId=${hook.body.data}`, { key: one.key });
    expect(read.status, read.text).toBe(200);
    secret = read.body.data.decryptedSecretKey as string;
    expect(secret).toMatch(/^whsec_/);
    // Both servers answer the dispatcher's OPTIONS probes before any call is placed.
    await until('both servers active in the dispatcher', async () => {
      const states = await dispatcher.states();
      return Object.values(states).length === 2 && Object.values(states).every((f) => f.startsWith('A')) ? states : undefined;
    });
  }, 180_000);

  afterAll(async () => {
    stopDispatchers();
    await Promise.all([one?.stop(), two?.stop()]);
    await hooks?.close();
    await store?.cleanup();
  });

  it('spreads inbound calls over both servers; every call is answered, held and recorded once in the shared store', async () => {
    const ids = await callThrough(8, 4);
    const [byOne, byTwo] = [callsIn(one), callsIn(two)];
    // Each call was answered by exactly one server, and both took calls.
    expect(byOne.filter((id) => byTwo.includes(id))).toEqual([]);
    expect(byOne.length).toBeGreaterThan(0);
    expect(byTwo.length).toBeGreaterThan(0);
    expect([await answeredBy(one), await answeredBy(two)]).toEqual([byOne.length, byTwo.length]);
    expect(byOne.length + byTwo.length).toBe(8);
    expect(dispatcher.log().match(/DISPATCH INVITE/g)).toHaveLength(8);
    // The shared store has every call, whichever server took it: the agent greeted and ended each.
    for (const id of ids) {
      const call = await endedCall(one, id);
      expect(call).toMatchObject({ type: 'telephony_inbound', to: NUMBER, status: 'completed', endReason: 'ended' });
      expect(call.transcript).toMatchObject([{ role: 'agent', content: GREETING }]);
    }
    const list = await two.request('GET', `${A}/conversation?callTypes=telephony_inbound&agentIds=${agentId}`, { key: one.key });
    expect(list.body.data.logs.map((l: { callId: string }) => l.callId).sort()).toEqual([...ids].sort());
  }, 90_000);

  it('delivers each call\'s pre- and post-conversation webhook exactly once, although both servers run a webhook dispatcher', async () => {
    expect(placed).toHaveLength(8);
    for (const id of placed) await until(`post-conversation of ${id}`, () => (hooks.of(id, 'post-conversation').length ? true : undefined));
    // Both dispatchers keep polling the outbox: give them time to send anything twice.
    await sleep(1500);
    for (const id of placed) {
      for (const eventType of ['pre-conversation', 'post-conversation']) {
        const got = hooks.of(id, eventType);
        expect(got, `${eventType} of ${id}`).toHaveLength(1);
        const expected = createHmac('sha256', secret).update(got[0]!.raw).digest();
        expect(timingSafeEqual(expected, Buffer.from(String(got[0]!.headers['x-signature']), 'hex'))).toBe(true);
      }
    }
    expect(hooks.got).toHaveLength(placed.length * 2);
    // Each delivery id went out from one server only, and the receiver saw each id once.
    const [sentByOne, sentByTwo] = [deliveriesBy(one), deliveriesBy(two)];
    expect(sentByOne.filter((d) => sentByTwo.includes(d))).toEqual([]);
    expect([...sentByOne, ...sentByTwo].sort()).toEqual(hooks.got.map((r) => r.body.id as string).sort());
  }, 60_000);

  // Digest nonces are signed with a secret kept in the shared store (telephony/sip/digest.ts, useNonceSecret): under
  // round-robin the retry answering one server's challenge reaches the other server, which accepts it.
  it('a trunk with digest credentials under round-robin: a challenge one server made is answered at the other', async () => {
    const AUTH_NUMBER = '+15550700002';
    await answeredTrunk(one, agentId, { numbers: [AUTH_NUMBER], allowedAddresses: [PEER_HOST], authUsername: 'pbx', authPassword: 'shared-front-desk' });
    const rotating = await startDispatcher({ host: PEER_HOST, port: await freePort(PEER_HOST), destinations: [`${STACK_HOST}:${one.sipPort}`, `${STACK_HOST}:${two.sipPort}`], timeoutS: 120 });
    await until('both servers active in the second dispatcher', async () => {
      const states = Object.values(await rotating.states());
      return states.length === 2 && states.every((f) => f.startsWith('A')) ? true : undefined;
    });
    // One call at a time: round-robin then sends each call's challenged INVITE and its answered retry to different servers.
    const ids = await callThrough(6, 1, { via: rotating, scenario: AUTH_CALLER, number: AUTH_NUMBER });
    for (const id of ids) expect(await endedCall(one, id)).toMatchObject({ to: AUTH_NUMBER, status: 'completed', endReason: 'ended' });
    const sent = new Map<string, Set<string>>();
    for (const m of rotating.log().matchAll(/DISPATCH INVITE \S+ call (\S+) to (\S+)/g)) sent.set(m[1] as string, (sent.get(m[1] as string) ?? new Set()).add(m[2] as string));
    expect(sent.size).toBe(6);
    expect(rotating.log().match(/DISPATCH INVITE/g)).toHaveLength(12);
    const split = [...sent.values()].filter((servers) => servers.size === 2).length;
    expect(split, 'calls whose challenge and answer reached different servers').toBeGreaterThanOrEqual(3);
  }, 90_000);

  it('one server killed: the next calls all land on the other, first through the failure route, then by probing alone', async () => {
    const answeredBefore = await answeredBy(one);
    two.proc.kill('SIGKILL');
    await two.waitExit();
    const deadUri = `sip:${STACK_HOST}:${two.sipPort}`;

    // At once: the dispatcher still has the dead server in its rotation; the INVITE it sends there gets no answer
    // within fr_timer and the failure route moves the call to the live server.
    const failoversBefore = dispatcher.log().match(/FAILOVER INVITE/g)?.length ?? 0;
    const first = await callThrough(4, 2);
    expect(first.every((id) => callsIn(one).includes(id))).toBe(true);
    expect(dispatcher.log().match(/FAILOVER INVITE/g)?.length ?? 0).toBeGreaterThan(failoversBefore);

    // Then probing: the dead server stays inactive (it answers no OPTIONS), so no call is sent to it at all.
    const states = await until('the killed server to be inactive', async () => {
      const s = await dispatcher.states();
      return s[deadUri]?.startsWith('I') ? s : undefined;
    });
    expect(states[`sip:${STACK_HOST}:${one.sipPort}`]).toMatch(/^A/);
    const failovers = dispatcher.log().match(/FAILOVER INVITE/g)?.length ?? 0;
    const later = await callThrough(4, 4);
    expect(later.every((id) => callsIn(one).includes(id))).toBe(true);
    expect(dispatcher.log().match(/FAILOVER INVITE/g)?.length ?? 0).toBe(failovers);

    expect(await answeredBy(one)).toBe(answeredBefore + 8);
    for (const id of [...first, ...later]) expect(await endedCall(one, id)).toMatchObject({ status: 'completed', endReason: 'ended' });
    // Their webhooks too, once each, from the server left.
    for (const id of [...first, ...later]) await until(`post-conversation of ${id}`, () => (hooks.of(id, 'post-conversation').length ? true : undefined));
    for (const id of [...first, ...later]) {
      expect(hooks.of(id, 'pre-conversation')).toHaveLength(1);
      expect(hooks.of(id, 'post-conversation')).toHaveLength(1);
    }
  }, 120_000);
});
