// SIP digest password guessing (issue 34) against the real server over raw SIP from several loopback addresses: a
// burst of wrong passwords from one address is cut off after 10 (403 without a challenge, even for the right
// password), another address still authenticates; a spray from many addresses cuts the trunk off for addresses that
// never authenticated on it, not for its carrier; each is logged (without what was presented) and counted on
// /metrics; with PARLEY_REDIS_URL the counts live in Redis. New inbound trunk passwords are at least 12 characters.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { mediaDialects, storeSql, type StoreEnv, type TestServer } from './support/server.js';
import { STACK_HOST } from './support/sip-peers.js';
import { RawCaller, digestAnswer, type Answered } from './support/raw-caller.js';
import { answeredTrunk, sipServerForSuite, workflowAgent } from './support/phone-server.js';
import { SecretBox } from '../control-plane/secrets/secret-box.js';
import { loadMasterKey } from '../control-plane/secrets/vault.js';
import { sealTrunkPassword } from '../control-plane/telephony/trunk-secrets.js';
import type { GuardScope } from '../telephony/digest-guard.js';

const A = '/atoms/v1';
const REDIS_URL = 'redis://127.0.0.1:6379';
const PASSWORD = 'right-horse-battery-staple';

const callers: RawCaller[] = [];
afterEach(() => {
  for (const c of callers.splice(0)) c.close();
});

/** A raw caller from `host` (each loopback address is another source to the server). */
async function callerFrom(server: TestServer, host: string): Promise<RawCaller> {
  const c = await RawCaller.open({ host: STACK_HOST, port: server.sipPort }, 'udp', host);
  callers.push(c);
  return c;
}

/** The values of the digest guard's counters on /metrics. */
async function authMetrics(server: TestServer): Promise<{ failures: number; lockouts: Record<GuardScope, number>; refused: Record<GuardScope, number> }> {
  const text = (await server.request('GET', '/metrics', { key: null })).text;
  const value = (name: string, scope?: string) => Number(new RegExp(`^${name}${scope ? `\\{scope="${scope}"\\}` : ''} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    failures: value('parley_sip_auth_failures_total'),
    lockouts: { source: value('parley_sip_auth_lockouts_total', 'source'), trunk: value('parley_sip_auth_lockouts_total', 'trunk') },
    refused: { source: value('parley_sip_auth_refused_total', 'source'), trunk: value('parley_sip_auth_refused_total', 'trunk') },
  };
}

/** A 403 that carries no challenge. */
function refusedWithoutChallenge(a: Answered): void {
  expect(a.final.startLine).toBe('SIP/2.0 403 Forbidden');
  expect(a.final.headers['www-authenticate']).toBeUndefined();
  expect(a.final.text).not.toMatch(/WWW-Authenticate/i);
}

/** Challenged (401), then answered with `password`: the final response to the answer. */
async function authenticate(caller: RawCaller, to: string, password: string, username = 'carrier'): Promise<Answered> {
  const challenged = await caller.invite({ to });
  expect(challenged.final.status, challenged.final.startLine).toBe(401);
  return caller.invite({ to, retry: challenged.invite, authorization: digestAnswer(challenged.final, challenged.invite.uri, username, password) });
}

async function answeredAndHungUp(caller: RawCaller, a: Answered): Promise<void> {
  expect(a.final.status, a.final.startLine).toBe(200);
  expect(await caller.bye(a)).toBe(200);
}

const modes = mediaDialects().flatMap((dialect) => [
  { dialect, name: 'in process', env: {} as Record<string, string> },
  { dialect, name: 'in Redis', env: { PARLEY_REDIS_URL: REDIS_URL } },
]);

describe.each(modes)('digest guessing limits on $dialect, counted $name', ({ dialect, env }) => {
  const suite = sipServerForSuite(dialect, env);
  let server: TestServer;
  let agentId: string;

  beforeAll(async () => {
    server = suite.server;
    agentId = await workflowAgent(server, 'Hello, this is the front desk.');
  });

  it('cuts off a burst of wrong passwords from one address after 10; the right one is refused while it cools off; another address authenticates', async () => {
    const number = env.PARLEY_REDIS_URL ? '+15550700002' : '+15550700001';
    const trunkId = await answeredTrunk(server, agentId, { numbers: [number], authUsername: 'carrier', authPassword: PASSWORD });
    const before = await authMetrics(server);
    const guesser = await callerFrom(server, '127.0.0.1');
    const challenged = await guesser.invite({ to: number });
    expect(challenged.final.status).toBe(401);
    const uri = challenged.invite.uri;
    const answers: string[] = [];
    const statuses: number[] = [];
    const started = performance.now();
    // 30 wrong passwords as fast as the answers come (one challenge's nonce serves them all).
    for (let i = 0; i < 30; i++) {
      const authorization = digestAnswer(challenged.final, uri, 'carrier', `guess-${i}-${PASSWORD}`);
      answers.push(/response="([0-9a-f]+)"/.exec(authorization)![1]!);
      const a = await guesser.invite({ to: number, authorization });
      refusedWithoutChallenge(a);
      statuses.push(a.final.status!);
    }
    const burstMs = performance.now() - started;
    expect(statuses.every((s) => s === 403)).toBe(true);
    // From this address: the right password, and a fresh INVITE, get 403 and no challenge.
    refusedWithoutChallenge(await guesser.invite({ to: number, authorization: digestAnswer(challenged.final, uri, 'carrier', PASSWORD) }));
    refusedWithoutChallenge(await guesser.invite({ to: number }));
    // Only 10 answers were counted: the other 22 requests were refused whatever they carried.
    const after = await authMetrics(server);
    expect(after.failures - before.failures).toBe(10);
    expect(after.lockouts.source - before.lockouts.source).toBe(1);
    expect(after.lockouts.trunk - before.lockouts.trunk).toBe(0);
    expect(after.refused.source - before.refused.source).toBe(22);
    // Another address is not affected: challenged, and answered with the right password.
    const carrier = await callerFrom(server, '127.0.0.3');
    await answeredAndHungUp(carrier, await authenticate(carrier, number, PASSWORD));
    // The lockout is logged with the trunk and the address, never with what was presented.
    const line = await server.waitForLog(/too many wrong answers from one address/);
    expect(JSON.parse(line)).toMatchObject({ level: 40, trunk: trunkId, source: '127.0.0.1', scope: 'source', coolingSecs: 300, repeat: 1 });
    const logs = server.logs.join('\n');
    expect(logs).not.toContain(PASSWORD);
    for (const response of answers) expect(logs).not.toContain(response);
    if (env.PARLEY_REDIS_URL) {
      // Kept in Redis, where every server sharing it reads it.
      const redis = new Redis(REDIS_URL);
      try {
        const ttl = await redis.pttl(`parley:sipauth:{${trunkId}}:block:127.0.0.1`);
        expect(ttl).toBeGreaterThan(200_000);
        expect(ttl).toBeLessThanOrEqual(300_000);
      } finally {
        await redis.quit();
      }
    }
    console.log(`30 wrong answers from one address in ${burstMs.toFixed(0)} ms: 10 counted, 20 refused`);
  });

  it('cuts off 40 wrong passwords sent at once from one address at exactly 10 counted', async () => {
    const number = env.PARLEY_REDIS_URL ? '+15550700022' : '+15550700021';
    await answeredTrunk(server, agentId, { numbers: [number], authUsername: 'carrier', authPassword: PASSWORD });
    const before = await authMetrics(server);
    const guesser = await callerFrom(server, '127.0.0.6');
    const challenged = await guesser.invite({ to: number });
    const burst = Array.from({ length: 40 }, (_, i) => guesser.send({ to: number, authorization: digestAnswer(challenged.final, challenged.invite.uri, 'carrier', `at-once-${i}`) }));
    for (const p of burst) refusedWithoutChallenge(await guesser.final(p));
    const after = await authMetrics(server);
    // The cooling-off is looked up and the failure counted in one step, so answers in flight together cannot all pass.
    expect(after.failures - before.failures).toBe(10);
    expect(after.refused.source - before.refused.source).toBe(30);
    expect(after.lockouts.source - before.lockouts.source).toBe(1);
    refusedWithoutChallenge(await guesser.invite({ to: number, authorization: digestAnswer(challenged.final, challenged.invite.uri, 'carrier', PASSWORD) }));
  });

  it('cuts a trunk off for addresses that never authenticated on it after 50 wrong answers from many; its carrier goes on', async () => {
    const number = env.PARLEY_REDIS_URL ? '+15550700012' : '+15550700011';
    await answeredTrunk(server, agentId, { numbers: [number], authUsername: 'carrier', authPassword: PASSWORD });
    // The carrier authenticates first (from 127.0.0.4): it is exempt from the trunk's cooling-off.
    const carrier = await callerFrom(server, '127.0.0.4');
    await answeredAndHungUp(carrier, await authenticate(carrier, number, PASSWORD));
    const before = await authMetrics(server);
    // 9 wrong answers from each of 6 addresses: none reaches its own limit; the 50th cuts the trunk off.
    const statuses: number[] = [];
    for (let s = 0; s < 6; s++) {
      const guesser = await callerFrom(server, `127.0.1.${s + 1}`);
      const challenged = await guesser.invite({ to: number });
      statuses.push(challenged.final.status!);
      for (let i = 0; i < 9; i++) {
        const a = await guesser.invite({ to: number, authorization: digestAnswer(challenged.final, challenged.invite.uri, 'carrier', `spray-${s}-${i}`) });
        refusedWithoutChallenge(a);
      }
    }
    // The first 6 addresses were challenged (the trunk's cooling-off started at the 50th wrong answer, from the 6th).
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401]);
    const after = await authMetrics(server);
    expect(after.failures - before.failures).toBe(50);
    expect(after.lockouts.trunk - before.lockouts.trunk).toBe(1);
    expect(after.lockouts.source - before.lockouts.source).toBe(0);
    expect(after.refused.trunk - before.refused.trunk).toBe(4);
    // A new address gets no challenge, even one that would know the password.
    const stranger = await callerFrom(server, '127.0.2.1');
    refusedWithoutChallenge(await stranger.invite({ to: number }));
    // The carrier, which authenticated before, is still challenged and answered.
    await answeredAndHungUp(carrier, await authenticate(carrier, number, PASSWORD));
    await server.waitForLog(/too many wrong answers on this trunk/);
  });
});

describe.each(mediaDialects())('trunk passwords on %s', (dialect) => {
  const suite = sipServerForSuite(dialect);
  let server: TestServer;
  let store: StoreEnv;

  beforeAll(() => {
    ({ server, store } = suite);
  });

  it('refuses a new inbound trunk password shorter than 12 characters with 400 naming authPassword; outbound passwords are the carrier\'s', async () => {
    const short = await server.request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'Short', numbers: ['+15550700101'], authUsername: 'carrier', authPassword: 'p' } });
    expect(short.status).toBe(400);
    expect(short.body.status).toBe(false);
    expect(short.body.errors).toContain('authPassword: must be at least 12 characters (a new inbound trunk password; one stored shorter keeps working until it is changed)');
    expect((short.body.errors as string[]).every((e) => e.startsWith('authPassword: '))).toBe(true);
    expect((await server.request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'Eleven', authUsername: 'carrier', authPassword: 'x'.repeat(11) } })).status).toBe(400);
    const twelve = await server.request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'Twelve', numbers: ['+15550700102'], authUsername: 'carrier', authPassword: 'x'.repeat(12) } });
    expect(twelve.status, twelve.text).toBe(201);
    const patched = await server.request('PATCH', `${A}/sip-trunk/${twelve.body.data._id}`, { body: { authPassword: 'too-short' } });
    expect(patched.status).toBe(400);
    expect(patched.body.errors[0]).toMatch(/^authPassword: must be at least 12 characters/);
    // An outbound trunk carries the password its carrier issued, whatever its length.
    const outbound = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Carrier', address: 'short-pw.example.com', authUsername: 'u', authPassword: 'pw' } });
    expect(outbound.status, outbound.text).toBe(201);
  });

  it('a trunk stored with a short password keeps working (calls and other changes) until the password is rotated', async () => {
    const agentId = await workflowAgent(server, 'Hello, this is the old line.');
    const number = '+15550700111';
    const trunkId = await answeredTrunk(server, agentId, { numbers: [number], authUsername: 'legacy', authPassword: 'placeholder-long-password' });
    // As a trunk made before the minimum: its stored password is 4 characters.
    const box = new SecretBox(loadMasterKey(store.dataDir, server.env.PARLEY_SECRET_KEY));
    await storeSql(store, 'UPDATE sip_trunks SET auth_password = $1 WHERE id = $2', [sealTrunkPassword(box, trunkId, 'old1'), trunkId]);
    const caller = await callerFrom(server, '127.0.0.5');
    await answeredAndHungUp(caller, await authenticate(caller, number, 'old1', 'legacy'));
    const renamed = await server.request('PATCH', `${A}/sip-trunk/${trunkId}`, { body: { name: 'Old line', ringingTimeoutSecs: 40 } });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data.hasAuthPassword).toBe(true);
    await answeredAndHungUp(caller, await authenticate(caller, number, 'old1', 'legacy'));
    // Rotating it (PATCH authPassword) takes a long one; the old one is refused from then on.
    const rotated = await server.request('PATCH', `${A}/sip-trunk/${trunkId}`, { body: { authPassword: 'a-new-long-password' } });
    expect(rotated.status, rotated.text).toBe(200);
    expect((await authenticate(caller, number, 'old1', 'legacy')).final.status).toBe(403);
    await answeredAndHungUp(caller, await authenticate(caller, number, 'a-new-long-password', 'legacy'));
  });
});
