// Telephony resources: the numbers CLI and number routes, SIP trunks (every rule, uniqueness, passwords), answers,
// transfer sources, the caller-ids bridge, both sides of the 45-day window, and inbound routing through the store.
import { describe, expect, it } from 'vitest';
import { createOrgKey, runCliOn, storeSql, testDialects, withStore, type StoreEnv, type TestServer } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, createAgent } from './support/agents.js';
import { resolveInbound, trunkPassword, addressAllowed } from '../control-plane/telephony/routing.js';
import { SecretBox } from '../control-plane/secrets/secret-box.js';
import { loadMasterKey } from '../control-plane/secrets/vault.js';
import { initTelephonyWindow } from '../control-plane/telephony/window.js';
import { loadSettings } from '../server/settings.js';

const HEX24 = expect.stringMatching(/^[a-f\d]{24}$/);
const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/);
const DAY = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

const numbersCli = (store: StoreEnv, args: string[]) => runCliOn(store, 'numbers', args);

async function addNumber(store: StoreEnv, number: string, extra: string[] = []): Promise<string> {
  const res = await numbersCli(store, ['add', number, '--provider', 'carrier1', '--json', ...extra]);
  expect(res.code, res.stderr).toBe(0);
  return (JSON.parse(res.stdout.trim()) as { id: string }).id;
}

const errorsOf = (res: { body: any }) => (res.body.errors as string[]).join('\n');

/** Expects a 400 whose errors name each field (as `field:`). */
function expectFields(res: { status: number; body: any; text: string }, fields: string[]): void {
  expect(res.status, res.text).toBe(400);
  expect(res.body.status).toBe(false);
  for (const f of fields) expect(errorsOf(res)).toContain(`${f}:`);
}

async function trunk(server: TestServer, direction: 'inbound' | 'outbound', body: Record<string, unknown>, key?: string): Promise<any> {
  const res = await server.request('POST', `${A}/sip-trunk/${direction}`, { body, key });
  expect(res.status, res.text).toBe(201);
  return res.body.data;
}

async function rent(server: TestServer, phoneNumber: string, key?: string): Promise<any> {
  const res = await server.request('POST', `${A}/product/rent-number`, { body: { phoneNumber }, key });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

async function answer(server: TestServer, agentId: string, sourceKind: string, sourceId: string) {
  return server.request('POST', `${A}/agent/${agentId}/answers`, { body: { sourceKind, sourceId } });
}

describe.each(testDialects())('telephony resources on %s (inside the window)', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_TELEPHONY_REWORK_DATE: isoDay(Date.now()), PARLEY_SECRET_KEY: 'ab'.repeat(32) });
  const s = () => suite.server;

  it('the numbers CLI adds, lists and removes platform numbers; organizations see, rent and hold them', async () => {
    await addNumber(suite.store, '+15550100', ['--country', 'us', '--area', '555']);
    await addNumber(suite.store, '+15550101');
    await addNumber(suite.store, '+442071838750', ['--country', 'GB', '--area', '20']);
    const noCountry = await numbersCli(suite.store, ['add', '+442071838751', '--provider', 'carrier1']);
    expect(noCountry.code).toBe(1);
    expect(noCountry.stderr).toContain('--country');
    const dup = await numbersCli(suite.store, ['add', '+15550100', '--provider', 'carrier1']);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain('already in the inventory');
    expect((await numbersCli(suite.store, ['add', '15550199', '--provider', 'carrier1'])).stderr).toContain('not an E.164 number');
    const listed = await numbersCli(suite.store, ['list', '--json']);
    const all = JSON.parse(listed.stdout.trim()) as any[];
    expect(all.map((n) => n.phoneNumber)).toEqual(['+15550100', '+15550101', '+442071838750']);
    expect(all[1]).toMatchObject({ provider: 'carrier1', countryCode: 'US', areaCode: '555', orgId: null, orgName: null });

    const missing = await s().request('GET', `${A}/product/get-available-numbers`);
    expectFields(missing, ['countryCode']);
    expectFields(await s().request('GET', `${A}/product/get-available-numbers?countryCode=USA&areaCode=x`), ['countryCode', 'areaCode']);
    const us = await s().request('GET', `${A}/product/get-available-numbers?countryCode=us&areaCode=555&provider=carrier1`);
    expect(us.status).toBe(200);
    expect(us.body.data).toEqual([
      { phoneNumber: '+15550100', countryCode: 'US', areaCode: '555', provider: 'carrier1' },
      { phoneNumber: '+15550101', countryCode: 'US', areaCode: '555', provider: 'carrier1' },
    ]);
    expect((await s().request('GET', `${A}/product/get-available-numbers?countryCode=US&provider=other`)).body.data).toEqual([]);

    expectFields(await s().request('POST', `${A}/product/rent-number`, { body: { phoneNumber: '5550100', extra: 1 } }), ['phoneNumber', 'extra']);
    const absent = await s().request('POST', `${A}/product/rent-number`, { body: { phoneNumber: '+15550999' } });
    expect(absent.status).toBe(400);
    expect(errorsOf(absent)).toContain('not available');
    const rented = await s().request('POST', `${A}/product/rent-number`, { body: { phoneNumber: '+15550100', provider: 'carrier1' } });
    expect(rented.status, rented.text).toBe(200);
    expect(rented.headers.get('deprecation')).toBe('true');
    expect(rented.body.data).toEqual({
      _id: HEX24,
      productType: 'telephony',
      isActive: true,
      attributes: { provider: 'carrier1', phoneNumber: '+15550100', countryCode: 'US', areaCode: '555' },
      agentId: null,
      agent: null,
      createdAt: ISO,
      updatedAt: ISO,
    });
    const other = await createOrgKey(suite.store, 'other-numbers', 'org-numbers');
    const taken = await s().request('POST', `${A}/product/rent-number`, { body: { phoneNumber: '+15550100' }, key: other });
    expect(taken.status).toBe(400);
    expect((await s().request('GET', `${A}/product/get-available-numbers?countryCode=US`)).body.data.map((n: any) => n.phoneNumber)).toEqual(['+15550101']);
    const mine = await s().request('GET', `${A}/product/phone-numbers`);
    expect(mine.headers.get('deprecation')).toBe('true');
    expect(mine.body.data).toEqual([rented.body.data]);
    expect((await s().request('GET', `${A}/product/phone-numbers`, { key: other })).body.data).toEqual([]);

    const held = await numbersCli(suite.store, ['remove', '+15550100']);
    expect(held.code).toBe(1);
    expect(held.stderr).toContain('held by organization');
    const gone = await numbersCli(suite.store, ['remove', '+442071838750']);
    expect(gone.code, gone.stderr).toBe(0);
    expect((await numbersCli(suite.store, ['remove', '+442071838750'])).code).toBe(1);
  });

  it('creates an inbound trunk with every default, and names every bad field', async () => {
    const created = await trunk(s(), 'inbound', { name: ' Main line ', numbers: ['+15551000001'] });
    expect(created).toEqual({
      _id: HEX24,
      organizationId: HEX24,
      direction: 'inbound',
      name: 'Main line',
      numbers: ['+15551000001'],
      allowedAddresses: [],
      allowedNumbers: [],
      authUsername: null,
      hasAuthPassword: false,
      mediaEncryption: 'allow',
      noiseSuppression: false,
      ringingTimeoutSecs: 30,
      maxCallDurationSecs: 3600,
      headers: {},
      createdAt: ISO,
      updatedAt: ISO,
    });
    const bad = await s().request('POST', `${A}/sip-trunk/inbound`, {
      body: {
        numbers: ['+15551000002', '5551000003', '+15551000002'],
        allowedAddresses: ['10.0.0.0/8', '10.0.0.1/33', 'not-an-ip', '2001:db8::/129'],
        allowedNumbers: 'x',
        mediaEncryption: 'always',
        noiseSuppression: 'yes',
        ringingTimeoutSecs: 121,
        maxCallDurationSecs: 59,
        headers: { Via: 'x', 'X-Ok': 'a\r\nb', 'bad name': 'v' },
        authUsername: 'alice',
        cpsLimit: 2,
        bogus: true,
      },
    });
    expectFields(bad, [
      'name', 'numbers[1]', 'numbers[2]', 'allowedAddresses[1]', 'allowedAddresses[2]', 'allowedAddresses[3]', 'allowedNumbers', 'mediaEncryption',
      'noiseSuppression', 'ringingTimeoutSecs', 'maxCallDurationSecs', 'headers.Via', 'headers.X-Ok', 'headers.bad name', 'authPassword', 'cpsLimit', 'bogus',
    ]);
    expect(errorsOf(bad)).toContain('cpsLimit: not a field of inbound trunks');
    expectFields(await s().request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'x', ringingTimeoutSecs: 0, maxCallDurationSecs: 14401, authPassword: 'a-long-enough-password' } }), [
      'ringingTimeoutSecs', 'maxCallDurationSecs', 'authUsername',
    ]);
    expectFields(await s().request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'x', ringingTimeoutSecs: 1.5 } }), ['ringingTimeoutSecs']);
    expect((await s().request('POST', `${A}/sip-trunk/inbound`, { raw: '[1]', headers: { 'content-type': 'application/json' } })).status).toBe(400);
    const edges = await trunk(s(), 'inbound', {
      name: 'Edges',
      allowedAddresses: ['192.0.2.7', '198.51.100.0/24', '2001:db8::/32', '::1'],
      allowedNumbers: ['+15559990000'],
      mediaEncryption: 'require',
      noiseSuppression: true,
      ringingTimeoutSecs: 120,
      maxCallDurationSecs: 14400,
      headers: { 'X-Carrier': 'acme' },
    });
    expect(edges).toMatchObject({ numbers: [], allowedAddresses: ['192.0.2.7', '198.51.100.0/24', '2001:db8::/32', '::1'], ringingTimeoutSecs: 120, maxCallDurationSecs: 14400, mediaEncryption: 'require', noiseSuppression: true, headers: { 'X-Carrier': 'acme' } });
    const low = await trunk(s(), 'inbound', { name: 'Low', ringingTimeoutSecs: 1, maxCallDurationSecs: 60 });
    expect(low).toMatchObject({ ringingTimeoutSecs: 1, maxCallDurationSecs: 60 });
  });

  it('creates outbound trunks with defaults and normalised, unique carrier addresses', async () => {
    const out = await trunk(s(), 'outbound', { name: 'Carrier A', address: 'sip:Carrier-A.example.com', numbers: ['+15552000001'] });
    expect(out).toEqual({
      _id: HEX24,
      organizationId: HEX24,
      direction: 'outbound',
      name: 'Carrier A',
      address: 'Carrier-A.example.com',
      transport: 'udp',
      numbers: ['+15552000001'],
      authUsername: null,
      hasAuthPassword: false,
      mediaEncryption: 'allow',
      cpsLimit: 1,
      headers: {},
      createdAt: ISO,
      updatedAt: ISO,
    });
    const bad = await s().request('POST', `${A}/sip-trunk/outbound`, { body: { name: '', address: 'sip:user@host', transport: 'sctp', cpsLimit: 51, ringingTimeoutSecs: 5 } });
    expectFields(bad, ['name', 'address', 'transport', 'cpsLimit', 'ringingTimeoutSecs']);
    expectFields(await s().request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'x', address: 'h.example.com:70000', cpsLimit: 0 } }), ['address', 'cpsLimit']);

    for (const address of ['carrier-a.example.com:5060', 'SIP:CARRIER-A.EXAMPLE.COM.']) {
      const dup = await s().request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Again', address } });
      expect(dup.status, dup.text).toBe(409);
      expect(dup.body).toEqual({ status: false, error_type: 'trunk_address_exists', errors: [expect.stringContaining('udp:carrier-a.example.com:5060')] });
    }
    const other = await createOrgKey(suite.store, 'other-trunks', 'org-trunks');
    expect((await s().request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Theirs', address: 'carrier-a.example.com' }, key: other })).status).toBe(409);
    // Another transport or port is another address.
    expect((await trunk(s(), 'outbound', { name: 'A over TCP', address: 'carrier-a.example.com', transport: 'tcp' })).transport).toBe('tcp');
    expect((await trunk(s(), 'outbound', { name: 'A on 5080', address: 'carrier-a.example.com:5080' })).address).toBe('carrier-a.example.com:5080');
    const tls = await trunk(s(), 'outbound', { name: 'Secure', address: 'sips:[2001:db8::5]', cpsLimit: 50, mediaEncryption: 'require' });
    expect(tls).toMatchObject({ address: '[2001:db8::5]', transport: 'tls', cpsLimit: 50 });
    expect((await s().request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Same TLS', address: '[2001:DB8::5]:5061', transport: 'tls' } })).body.error_type).toBe('trunk_address_exists');
  });

  it('keeps inbound numbers unique across the platform and caller IDs unique within an organization', async () => {
    const other = await createOrgKey(suite.store, 'other-unique', 'org-unique');
    await trunk(s(), 'inbound', { name: 'In', numbers: ['+15553000001'] });
    for (const key of [undefined, other]) {
      const dup = await s().request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'Dup', numbers: ['+15553000009', '+15553000001'] }, key });
      expect(dup.status).toBe(409);
      expect(dup.body).toEqual({ status: false, error_type: 'number_in_use', errors: [expect.stringContaining('+15553000001')] });
    }
    await addNumber(suite.store, '+15553000002');
    const platform = await s().request('POST', `${A}/sip-trunk/inbound`, { body: { name: 'Platform', numbers: ['+15553000002'] } });
    expect(platform.body.error_type).toBe('number_in_use');
    expect((await numbersCli(suite.store, ['add', '+15553000001', '--provider', 'carrier1'])).stderr).toContain('inbound number of SIP trunk');

    await trunk(s(), 'outbound', { name: 'Out 1', address: 'unique-1.example.com', numbers: ['+15553000001'] });
    const callerDup = await s().request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Out 2', address: 'unique-2.example.com', numbers: ['+15553000001'] } });
    expect(callerDup.status).toBe(409);
    expect(callerDup.body.error_type).toBe('number_in_use');
    // Another organization may dial from the same caller ID through its own trunk.
    await trunk(s(), 'outbound', { name: 'Theirs', address: 'unique-3.example.com', numbers: ['+15553000001'] }, other);
    await rent(s(), '+15553000002');
    expect((await s().request('POST', `${A}/sip-trunk/outbound`, { body: { name: 'Out 4', address: 'unique-4.example.com', numbers: ['+15553000002'] } })).body.error_type).toBe('number_in_use');
  });

  it('updates trunks (address and transport immutable), keeps product ids of kept numbers, and seals passwords it never returns', async () => {
    const password = `pw-${Math.random().toString(36).slice(2)}-never-shown`;
    const inbound = await trunk(s(), 'inbound', { name: 'Creds', numbers: ['+15554000001', '+15554000002'], authUsername: 'carrier-in', authPassword: password });
    expect(inbound).toMatchObject({ authUsername: 'carrier-in', hasAuthPassword: true });
    const products = async () => (await s().request('GET', `${A}/product/all-numbers`)).body.data.customProducts.filter((p: any) => p.attributes.inboundSipTrunkId === inbound._id);
    const before = await products();
    expect(before.map((p: any) => p.attributes.phoneNumber)).toEqual(['+15554000001', '+15554000002']);

    const patched = await s().request('PATCH', `${A}/sip-trunk/${inbound._id}`, { body: { numbers: ['+15554000002', '+15554000003'], ringingTimeoutSecs: 45, allowedAddresses: ['203.0.113.0/24'] } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({ numbers: ['+15554000002', '+15554000003'], ringingTimeoutSecs: 45, allowedAddresses: ['203.0.113.0/24'], hasAuthPassword: true, name: 'Creds' });
    const after = await products();
    expect(after.find((p: any) => p.attributes.phoneNumber === '+15554000002')._id).toBe(before[1]._id);
    expectFields(await s().request('PATCH', `${A}/sip-trunk/${inbound._id}`, { body: { ringingTimeoutSecs: 500, address: 'x.example.com', direction: 'outbound' } }), ['ringingTimeoutSecs', 'address', 'direction']);
    expectFields(await s().request('PATCH', `${A}/sip-trunk/${inbound._id}`, { body: { authPassword: null } }), ['authPassword']);
    const cleared = await s().request('PATCH', `${A}/sip-trunk/${inbound._id}`, { body: { authUsername: null } });
    expect(cleared.body.data).toMatchObject({ authUsername: null, hasAuthPassword: false });
    const again = await s().request('PATCH', `${A}/sip-trunk/${inbound._id}`, { body: { authUsername: 'carrier-in', authPassword: password } });
    expect(again.body.data.hasAuthPassword).toBe(true);

    const out = await trunk(s(), 'outbound', { name: 'Patch me', address: 'patch.example.com', transport: 'tcp', authUsername: 'u1', authPassword: password });
    const same = await s().request('PATCH', `${A}/sip-trunk/${out._id}`, { body: { address: 'sip:PATCH.example.com:5060', transport: 'tcp', cpsLimit: 7, name: 'Patched' } });
    expect(same.status, same.text).toBe(200);
    expect(same.body.data).toMatchObject({ address: 'patch.example.com', transport: 'tcp', cpsLimit: 7, name: 'Patched', hasAuthPassword: true });
    const immutable = await s().request('PATCH', `${A}/sip-trunk/${out._id}`, { body: { address: 'elsewhere.example.com', transport: 'udp' } });
    expectFields(immutable, ['address', 'transport']);
    expect(errorsOf(immutable)).toContain('immutable');
    expectFields(await s().request('PATCH', `${A}/sip-trunk/${out._id}`, { body: { noiseSuppression: true } }), ['noiseSuppression']);

    const list = await s().request('GET', `${A}/sip-trunk?direction=outbound`);
    expect(list.status).toBe(200);
    expect(list.body.data.trunks.every((t: any) => t.direction === 'outbound')).toBe(true);
    expect(list.body.data.trunks.map((t: any) => t._id)).toContain(out._id);
    expect((await s().request('GET', `${A}/sip-trunk`)).body.data.trunks.length).toBeGreaterThan(list.body.data.trunks.length);
    expectFields(await s().request('GET', `${A}/sip-trunk?direction=sideways`), ['direction']);
    expect((await s().request('GET', `${A}/sip-trunk/${out._id}`)).body.data).toEqual(same.body.data);
    const other = await createOrgKey(suite.store, 'other-patch', 'org-patch');
    for (const [method, path] of [['GET', out._id], ['PATCH', out._id], ['DELETE', out._id], ['GET', 'nope']]) {
      const res = await s().request(method as string, `${A}/sip-trunk/${path}`, { key: path === 'nope' ? undefined : other, body: method === 'PATCH' ? { name: 'x' } : undefined });
      // Another organization's trunk: the spec's general 403; an unknown or malformed id: 404.
      if (path === 'nope') {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ status: false, errors: ['SIP trunk not found'] });
      } else {
        expect(res.status).toBe(403);
        expect(res.body.errors).toEqual(['This API key has no access to this SIP trunk']);
      }
    }

    // The password: never in a response or a log line, not stored in plaintext, and readable by the SIP leg.
    const texts = [(await s().request('GET', `${A}/sip-trunk`)).text, (await s().request('GET', `${A}/sip-trunk/${inbound._id}`)).text, (await s().request('GET', `${A}/product/all-numbers`)).text, again.text, same.text];
    for (const text of texts) expect(text).not.toContain(password);
    expect(s().logs.join('\n')).not.toContain(password);
    const stored = await storeSql(suite.store, 'SELECT auth_password FROM sip_trunks WHERE id = $1', [inbound._id]);
    expect(String(stored[0]?.auth_password)).not.toContain(password);
    const box = new SecretBox(loadMasterKey(suite.store.dataDir, 'ab'.repeat(32)));
    expect(await withStore(suite.store, (db) => trunkPassword(db, box, inbound._id))).toBe(password);
    expect(await withStore(suite.store, (db) => trunkPassword(db, box, out._id))).toBe(password);
    expect(await withStore(suite.store, (db) => trunkPassword(db, box, (list.body.data.trunks as any[]).find((t) => !t.hasAuthPassword)._id))).toBeNull();
  });

  it('answers: one agent per source, 409 naming it, phoneNumber on agent reads, and in-use refusals', async () => {
    await addNumber(suite.store, '+15555000001');
    const product = await rent(s(), '+15555000001');
    const inbound = await trunk(s(), 'inbound', { name: 'Answered', numbers: ['+15555000010', '+15555000011'] });
    const extension = await trunk(s(), 'inbound', { name: 'Extensions', allowedAddresses: ['192.0.2.50'] });
    const outbound = await trunk(s(), 'outbound', { name: 'Dialer', address: 'answers.example.com', numbers: ['+15555000020'] });
    const alice = await createAgent(s(), { name: 'Alice' });
    const bob = await createAgent(s(), { name: 'Bob' });
    const carol = await createAgent(s(), { name: 'Carol' });

    const first = await answer(s(), alice, 'phoneNumber', product._id);
    expect(first.status, first.text).toBe(201);
    expect(first.body).toEqual({ status: true, data: { agentId: alice, sourceKind: 'phoneNumber', sourceId: product._id, phoneNumbers: ['+15555000001'] } });
    expect((await answer(s(), alice, 'phoneNumber', product._id)).status).toBe(200);
    const clash = await answer(s(), bob, 'phoneNumber', product._id);
    expect(clash.status).toBe(409);
    expect(clash.body).toEqual({ status: false, error_type: 'source_already_answered', errors: [expect.stringContaining(`agent ${alice}`)] });

    const trunkAnswer = await answer(s(), bob, 'sipTrunk', inbound._id);
    expect(trunkAnswer.body.data).toEqual({ agentId: bob, sourceKind: 'sipTrunk', sourceId: inbound._id, phoneNumbers: ['+15555000010', '+15555000011'] });
    expect((await answer(s(), carol, 'sipTrunk', extension._id)).body.data.phoneNumbers).toEqual([]);
    expectFields(await s().request('POST', `${A}/agent/${carol}/answers`, { body: { sourceKind: 'fax', extra: 1 } }), ['sourceKind', 'sourceId', 'extra']);
    expect((await answer(s(), carol, 'sipTrunk', outbound._id)).status).toBe(400);
    expect((await answer(s(), carol, 'phoneNumber', 'ffffffffffffffffffffffff')).status).toBe(404);
    expect((await answer(s(), carol, 'sipTrunk', product._id)).status).toBe(404);
    const foreignKey = await createOrgKey(suite.store, 'other-answers', 'org-answers');
    const foreignTrunk = await trunk(s(), 'inbound', { name: 'Foreign', numbers: ['+15555000030'] }, foreignKey);
    expect((await answer(s(), carol, 'sipTrunk', foreignTrunk._id)).status).toBe(404);

    // A trunk's number answered on its own goes to that agent, not to the trunk's.
    const custom = (await s().request('GET', `${A}/product/all-numbers`)).body.data.customProducts.find((p: any) => p.attributes.phoneNumber === '+15555000011');
    expect(custom).toMatchObject({ productType: 'custom-telephony', agentId: bob, agent: { _id: bob, name: 'Bob' }, attributes: { inboundSipTrunkId: inbound._id, name: 'Answered' } });
    expect((await answer(s(), carol, 'phoneNumber', custom._id)).status).toBe(201);
    const read = async (id: string) => (await s().request('GET', `${A}/agent/${id}`)).body.data;
    expect((await read(alice)).phoneNumber).toEqual(['+15555000001']);
    expect((await read(bob)).phoneNumber).toEqual(['+15555000010']);
    expect((await read(carol)).phoneNumber).toEqual(['+15555000011']);
    expect((await read(alice)).allowInboundCall).toBe(true);
    const listed = await s().request('GET', `${A}/agent/${carol}/answers`);
    expect(listed.body.data.answers).toEqual([
      { agentId: carol, sourceKind: 'sipTrunk', sourceId: extension._id, phoneNumbers: [] },
      { agentId: carol, sourceKind: 'phoneNumber', sourceId: custom._id, phoneNumbers: ['+15555000011'] },
    ]);
    const all = (await s().request('GET', `${A}/product/all-numbers`)).body.data;
    expect(all.telephonyProducts.find((p: any) => p._id === product._id)).toMatchObject({ agentId: alice, agent: { _id: alice, name: 'Alice' } });
    expect(all.customProducts.find((p: any) => p._id === custom._id)).toMatchObject({ agentId: carol, agent: { _id: carol, name: 'Carol' } });

    // In use: deleting an answered trunk, removing an answered number, releasing an answered number.
    const busy = await s().request('DELETE', `${A}/sip-trunk/${inbound._id}`);
    expect(busy.status).toBe(409);
    expect(busy.body.error_type).toBe('trunk_in_use');
    expect(errorsOf(busy)).toContain(`agent ${bob} ("Bob") answers the trunk`);
    expect(errorsOf(busy)).toContain(`agent ${carol} ("Carol") answers +15555000011`);
    const shrink = await s().request('PATCH', `${A}/sip-trunk/${inbound._id}`, { body: { numbers: ['+15555000010'] } });
    expect(shrink.status).toBe(409);
    expect(shrink.body.error_type).toBe('trunk_in_use');
    const release = await s().request('POST', `${A}/product/release-number`, { body: { productId: product._id } });
    expect(release.status).toBe(400);
    expect(errorsOf(release)).toContain(`agent ${alice} ("Alice") answers it`);

    const removed = await s().request('DELETE', `${A}/agent/${carol}/answers/${custom._id}`);
    expect(removed.body).toEqual({ status: true, data: { removed: true } });
    expect((await s().request('DELETE', `${A}/agent/${carol}/answers/${custom._id}`)).status).toBe(404);
    expect((await read(bob)).phoneNumber).toEqual(['+15555000010', '+15555000011']);
    expect((await s().request('DELETE', `${A}/agent/${bob}/answers/${inbound._id}`)).status).toBe(200);
    expect((await s().request('DELETE', `${A}/sip-trunk/${inbound._id}`)).body).toEqual({ status: true, data: { deleted: true } });
    expect((await s().request('DELETE', `${A}/agent/${alice}/answers/${product._id}`)).status).toBe(200);
    expect((await s().request('POST', `${A}/product/release-number`, { body: { productId: product._id } })).body).toEqual({ status: true, data: { released: true } });
    expect((await s().request('POST', `${A}/product/release-number`, { body: { productId: product._id } })).status).toBe(404);
    expectFields(await s().request('POST', `${A}/product/release-number`, { body: {} }), ['productId']);
    // Deleting an agent lets go of what it answered.
    await answer(s(), alice, 'sipTrunk', extension._id).then((r) => expect(r.status).toBe(409));
    expect((await s().request('DELETE', `${A}/agent/${carol}`)).status).toBe(200);
    expect((await answer(s(), alice, 'sipTrunk', extension._id)).status).toBe(201);
  });

  it('transfer sources and the deprecated caller-ids bridge: numbers the organization dials from, refused release and delete', async () => {
    await addNumber(suite.store, '+15556000001');
    const product = await rent(s(), '+15556000001');
    const outbound = await trunk(s(), 'outbound', { name: 'Bridge', address: 'bridge.example.com', numbers: ['+15556000010', '+15556000011'] });
    const inbound = await trunk(s(), 'inbound', { name: 'Bridge in', numbers: ['+15556000020'] });
    const agent = await createAgent(s(), { name: 'Dialer' });

    const put = await s().request('PUT', `${A}/agent/${agent}/transfer-source`, { body: { fromNumber: '+15556000011' } });
    expect(put.body).toEqual({ status: true, data: { agentId: agent, fromNumber: '+15556000011' } });
    expect((await s().request('GET', `${A}/agent/${agent}/transfer-source`)).body.data).toEqual({ agentId: agent, fromNumber: '+15556000011' });
    for (const fromNumber of ['+15556000020', '+1555600001']) {
      const refused = await s().request('PUT', `${A}/agent/${agent}/transfer-source`, { body: { fromNumber } });
      expectFields(refused, ['fromNumber']);
    }
    expectFields(await s().request('PUT', `${A}/agent/${agent}/transfer-source`, { body: {} }), ['fromNumber']);
    const inUse = await s().request('DELETE', `${A}/sip-trunk/${outbound._id}`);
    expect(inUse.status).toBe(409);
    expect(errorsOf(inUse)).toContain(`+15556000011 is the transfer source of agent ${agent}`);
    expect((await s().request('PUT', `${A}/agent/${agent}/transfer-source`, { body: { fromNumber: '+15556000001' } })).body.data.fromNumber).toBe('+15556000001');
    const release = await s().request('POST', `${A}/product/release-number`, { body: { productId: product._id } });
    expect(release.status).toBe(400);
    expect(errorsOf(release)).toContain(`transfer source of agent ${agent}`);
    expect((await s().request('PUT', `${A}/agent/${agent}/transfer-source`, { body: { fromNumber: null } })).body.data).toEqual({ agentId: agent, fromNumber: null });

    const add = await s().request('POST', `${A}/agent/${agent}/caller-ids`, { body: { phoneNumber: '+15556000001' } });
    expect(add.status, add.text).toBe(201);
    expect(add.headers.get('deprecation')).toBe('true');
    expect(add.body.data).toEqual({ callerIds: [{ phoneNumber: '+15556000001', productId: product._id, sipTrunkId: null, isDefault: true, createdAt: ISO }] });
    const needsTrunk = await s().request('POST', `${A}/agent/${agent}/caller-ids`, { body: { phoneNumber: '+15556000010' } });
    expectFields(needsTrunk, ['sipTrunkId']);
    expect(needsTrunk.headers.get('deprecation')).toBe('true');
    expectFields(await s().request('POST', `${A}/agent/${agent}/caller-ids`, { body: { sipTrunkId: outbound._id, phoneNumber: '+15556000099' } }), ['phoneNumber']);
    expectFields(await s().request('POST', `${A}/agent/${agent}/caller-ids`, { body: { sipTrunkId: inbound._id, phoneNumber: '+15556000020' } }), ['sipTrunkId']);
    expect((await s().request('POST', `${A}/agent/${agent}/caller-ids`, { body: { phoneNumber: '+15556000098' } })).status).toBe(404);
    const second = await s().request('POST', `${A}/agent/${agent}/caller-ids`, { body: { sipTrunkId: outbound._id, phoneNumber: '+15556000010' } });
    expect(second.body.data.callerIds.map((c: any) => [c.phoneNumber, c.sipTrunkId, c.isDefault])).toEqual([
      ['+15556000001', null, true],
      ['+15556000010', outbound._id, false],
    ]);
    const list = await s().request('GET', `${A}/agent/${agent}/caller-ids`);
    expect(list.headers.get('deprecation')).toBe('true');
    expect(list.body.data).toEqual(second.body.data);
    const busy = await s().request('DELETE', `${A}/sip-trunk/${outbound._id}`);
    expect(errorsOf(busy)).toContain(`+15556000010 is a caller ID of agent ${agent}`);
    expect(errorsOf(await s().request('POST', `${A}/product/release-number`, { body: { productId: product._id } }))).toContain(`+15556000001 is a caller ID of agent ${agent}`);
    const del = await s().request('DELETE', `${A}/agent/${agent}/caller-ids/${encodeURIComponent('+15556000001')}`);
    expect(del.headers.get('deprecation')).toBe('true');
    expect(del.body.data.callerIds).toEqual([{ phoneNumber: '+15556000010', productId: null, sipTrunkId: outbound._id, isDefault: true, createdAt: ISO }]);
    expect((await s().request('DELETE', `${A}/agent/${agent}/caller-ids/+15556000001`)).status).toBe(404);
    expect((await s().request('POST', `${A}/product/release-number`, { body: { productId: product._id } })).status).toBe(200);
    await s().request('DELETE', `${A}/agent/${agent}/caller-ids/+15556000010`);
    expect((await s().request('DELETE', `${A}/sip-trunk/${outbound._id}`)).status).toBe(200);
  });

  it('deprecated items inside the window: import-phone-number, telephonyProductId on update (not on create), allowInboundCall', async () => {
    const imported = await s().request('POST', `${A}/product/import-phone-number`, { body: { phoneNumber: '+15557000001', sipTerminationUrl: 'sip:import.example.com:5070', sipUsername: 'imp', sipPassword: 'imp-secret' } });
    expect(imported.status, imported.text).toBe(200);
    expect(imported.headers.get('deprecation')).toBe('true');
    expect(imported.body.data).toEqual({
      _id: HEX24,
      productType: 'custom',
      isActive: true,
      attributes: { name: 'Imported +15557000001', phoneNumber: '+15557000001', outboundSipTrunkId: HEX24, inboundSipTrunkId: HEX24 },
      agentId: null,
      createdAt: ISO,
      updatedAt: ISO,
    });
    const attrs = imported.body.data.attributes;
    expect((await s().request('GET', `${A}/sip-trunk/${attrs.inboundSipTrunkId}`)).body.data).toMatchObject({ direction: 'inbound', numbers: ['+15557000001'], hasAuthPassword: false });
    expect((await s().request('GET', `${A}/sip-trunk/${attrs.outboundSipTrunkId}`)).body.data).toMatchObject({ direction: 'outbound', address: 'import.example.com:5070', transport: 'udp', numbers: ['+15557000001'], authUsername: 'imp', hasAuthPassword: true });
    const dup = await s().request('POST', `${A}/product/import-phone-number`, { body: { phoneNumber: '+15557000001', sipTerminationUrl: 'other.example.com' } });
    expect(dup.status).toBe(400);
    expect(dup.body).toEqual({ status: false, errors: ['Number already present'] });
    expect(dup.headers.get('deprecation')).toBe('true');
    const second = await s().request('POST', `${A}/product/import-phone-number`, { body: { phoneNumber: '+15557000002', sipTerminationUrl: 'import.example.com:5070', name: 'Second' } });
    expect(second.body.data.attributes.outboundSipTrunkId).toBe(attrs.outboundSipTrunkId);
    expectFields(await s().request('POST', `${A}/product/import-phone-number`, { body: { phoneNumber: 'abc', sipTerminationUrl: 'bad host!', sipUsername: 'only-user' } }), ['phoneNumber', 'sipTerminationUrl']);
    expectFields(await s().request('POST', `${A}/product/import-phone-number`, { body: { phoneNumber: '+15557000003', sipTerminationUrl: 'x.example.com', sipUsername: 'only-user' } }), ['sipPassword']);
    const custom = (await s().request('GET', `${A}/product/all-numbers`)).body.data.customProducts.find((p: any) => p._id === imported.body.data._id);
    expect(custom).toMatchObject({ productType: 'custom-telephony', attributes: { phoneNumber: '+15557000001', outboundSipTrunkId: attrs.outboundSipTrunkId, inboundSipTrunkId: attrs.inboundSipTrunkId } });

    // telephonyProductId: stripped on create (plain 201), replace semantics on update, foreign ids refused.
    await addNumber(suite.store, '+15557000010');
    const platform = await rent(s(), '+15557000010');
    const created = await s().request('POST', `${A}/agent`, { body: { name: 'Legacy', telephonyProductId: [platform._id] } });
    expect(created.status).toBe(201);
    expect(created.headers.get('deprecation')).toBeNull();
    const agent = created.body.data as string;
    expect((await s().request('GET', `${A}/agent/${agent}/answers`)).body.data.answers).toEqual([]);
    const trunkSource = await trunk(s(), 'inbound', { name: 'Kept', numbers: [] });
    await answer(s(), agent, 'sipTrunk', trunkSource._id);
    const patch = await s().request('PATCH', `${A}/agent/${agent}`, { body: { telephonyProductId: [platform._id, imported.body.data._id] } });
    expect(patch.status, patch.text).toBe(200);
    expect(patch.headers.get('deprecation')).toBe('true');
    expect((await s().request('GET', `${A}/agent/${agent}`)).body.data.phoneNumber.sort()).toEqual(['+15557000001', '+15557000010']);
    const replaced = await s().request('PATCH', `${A}/agent/${agent}`, { body: { telephonyProductId: [imported.body.data._id] } });
    expect(replaced.status).toBe(200);
    expect((await s().request('GET', `${A}/agent/${agent}/answers`)).body.data.answers.map((a: any) => a.sourceId)).toEqual([trunkSource._id, imported.body.data._id]);
    const foreignKey = await createOrgKey(suite.store, 'other-legacy', 'org-legacy');
    await addNumber(suite.store, '+15557000011', ['--org', 'org-legacy']);
    const foreign = (await s().request('GET', `${A}/product/phone-numbers`, { key: foreignKey })).body.data[0];
    expect(foreign.attributes.phoneNumber).toBe('+15557000011');
    expectFields(await s().request('PATCH', `${A}/agent/${agent}`, { body: { telephonyProductId: [foreign._id, 'nope'], allowInboundCall: 'no' } }), ['telephonyProductId[0]', 'telephonyProductId[1]', 'allowInboundCall']);
    const other = await createAgent(s(), { name: 'Other legacy' });
    const clash = await s().request('PATCH', `${A}/agent/${other}`, { body: { telephonyProductId: [imported.body.data._id] } });
    expect(clash.status).toBe(409);
    expect(clash.body.error_type).toBe('source_already_answered');

    const off = await s().request('PATCH', `${A}/agent/${agent}`, { body: { allowInboundCall: false } });
    expect(off.headers.get('deprecation')).toBe('true');
    expect((await s().request('GET', `${A}/agent/${agent}`)).body.data.allowInboundCall).toBe(false);
    const route = await withStore(suite.store, (db) => resolveInbound(db, { calledNumber: '+15557000001', sourceAddress: '198.51.100.1' }));
    expect(route).toMatchObject({ kind: 'found', agentId: agent, allowInboundCall: false });
    expect((await s().request('PATCH', `${A}/agent/${agent}`, { body: { name: 'Plain' } })).headers.get('deprecation')).toBeNull();
  });

  it('routes inbound calls through the store: platform numbers, trunk numbers, extension-only trunks by address and by username', async () => {
    const orgOf = async (key?: string) => (await s().request('GET', `${A}/sip-trunk?direction=inbound`, { key })).body.data.trunks[0]?.organizationId;
    await addNumber(suite.store, '+15558000001');
    await addNumber(suite.store, '+15558000002');
    const held = await rent(s(), '+15558000001');
    const agent = await createAgent(s(), { name: 'Router' });
    const viaNumber = await createAgent(s(), { name: 'Number override' });
    expect((await answer(s(), agent, 'phoneNumber', held._id)).status).toBe(201);
    const numbered = await trunk(s(), 'inbound', {
      name: 'Routed',
      numbers: ['+15558000010', '+15558000011'],
      allowedAddresses: ['198.51.100.0/24'],
      allowedNumbers: ['+15550001111'],
      authUsername: 'routed',
      authPassword: 'routed-password',
      mediaEncryption: 'require',
      noiseSuppression: true,
      ringingTimeoutSecs: 20,
      maxCallDurationSecs: 600,
      headers: { 'X-Tenant': 'acme' },
    });
    await answer(s(), agent, 'sipTrunk', numbered._id);
    const override = (await s().request('GET', `${A}/product/all-numbers`)).body.data.customProducts.find((p: any) => p.attributes.phoneNumber === '+15558000011');
    await answer(s(), viaNumber, 'phoneNumber', override._id);
    const byAddress = await trunk(s(), 'inbound', { name: 'PBX by address', allowedAddresses: ['10.20.0.0/16', 'fd00:20::/32'] });
    const byUser = await trunk(s(), 'inbound', { name: 'PBX by user', authUsername: 'pbx-user', authPassword: 'pbx-user-password' });
    await answer(s(), agent, 'sipTrunk', byAddress._id);
    const orgId = await orgOf();

    await withStore(suite.store, async (db) => {
      expect(await resolveInbound(db, { calledNumber: '+15558000001', sourceAddress: '203.0.113.9' })).toEqual({ kind: 'found', orgId, agentId: agent, trunk: null, allowInboundCall: true });
      expect(await resolveInbound(db, { calledNumber: '+15558000002', sourceAddress: '203.0.113.9' })).toEqual({ kind: 'none', tryCredentials: true });
      expect(await resolveInbound(db, { calledNumber: '+15558000010', sourceAddress: '198.51.100.7' })).toEqual({
        kind: 'found',
        orgId,
        agentId: agent,
        allowInboundCall: true,
        trunk: {
          id: numbered._id,
          mediaEncryption: 'require',
          noiseSuppression: true,
          ringingTimeoutSecs: 20,
          maxCallDurationSecs: 600,
          allowedAddresses: ['198.51.100.0/24'],
          allowedNumbers: ['+15550001111'],
          authUsername: 'routed',
          headers: { 'X-Tenant': 'acme' },
        },
      });
      expect(await resolveInbound(db, { calledNumber: '+15558000011', sourceAddress: '198.51.100.7' })).toMatchObject({ kind: 'found', agentId: viaNumber, trunk: { id: numbered._id } });
      expect(await resolveInbound(db, { calledNumber: '+15558099999', sourceAddress: '10.20.3.4' })).toMatchObject({ kind: 'found', orgId, agentId: agent, trunk: { id: byAddress._id } });
      expect(await resolveInbound(db, { calledNumber: '+15558099999', sourceAddress: 'fd00:20:1::9' })).toMatchObject({ kind: 'found', trunk: { id: byAddress._id } });
      expect(await resolveInbound(db, { calledNumber: '+15558099999', sourceAddress: '::ffff:10.20.3.4' })).toMatchObject({ kind: 'found', trunk: { id: byAddress._id } });
      expect(await resolveInbound(db, { calledNumber: '+15558099999', sourceAddress: '192.0.2.200', authUsername: 'pbx-user' })).toMatchObject({
        kind: 'found',
        orgId,
        agentId: null,
        trunk: { id: byUser._id, authUsername: 'pbx-user' },
      });
      expect(await resolveInbound(db, { calledNumber: '+15558099999', sourceAddress: '192.0.2.200', authUsername: 'stranger' })).toEqual({ kind: 'none', tryCredentials: false });
    });
    expect(addressAllowed([], '192.0.2.1')).toBe(true);
    expect(addressAllowed(['192.0.2.0/25'], '192.0.2.200')).toBe(false);
    expect(addressAllowed(['::ffff:192.0.2.0/120'], '192.0.2.200')).toBe(true);
    expect(addressAllowed(['192.0.2.1'], 'not an ip')).toBe(false);
  });
});

describe.each(testDialects())('telephony resources on %s (after the window)', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_TELEPHONY_REWORK_DATE: isoDay(Date.now() - 60 * DAY) });
  const s = () => suite.server;

  it('removes every deprecated item together; the current API keeps working', async () => {
    const imported = await s().request('POST', `${A}/product/import-phone-number`, { body: { phoneNumber: '+15559000001', sipTerminationUrl: 'late.example.com' } });
    expect(imported.status).toBe(404);
    expect(imported.headers.get('deprecation')).toBeNull();
    const agent = await createAgent(s(), { name: 'After', telephonyProductId: ['ffffffffffffffffffffffff'], allowInboundCall: false });
    for (const [method, path] of [['GET', 'caller-ids'], ['POST', 'caller-ids'], ['DELETE', 'caller-ids/+15559000001']]) {
      const res = await s().request(method as string, `${A}/agent/${agent}/${path}`, { body: method === 'POST' ? { phoneNumber: '+15559000001' } : undefined });
      expect(res.status).toBe(404);
      expect(res.headers.get('deprecation')).toBeNull();
    }
    const patch = await s().request('PATCH', `${A}/agent/${agent}`, { body: { telephonyProductId: [], allowInboundCall: true } });
    expectFields(patch, ['telephonyProductId', 'allowInboundCall']);
    expect(errorsOf(patch)).toContain('removed after the telephony migration window');
    const read = (await s().request('GET', `${A}/agent/${agent}`)).body.data;
    expect(read.phoneNumber).toEqual([]);
    expect(read).not.toHaveProperty('allowInboundCall');
    expect((await s().request('GET', `${A}/agent`)).body.data.agents[0]).not.toHaveProperty('allowInboundCall');

    await addNumber(suite.store, '+15559000010');
    const rented = await s().request('POST', `${A}/product/rent-number`, { body: { phoneNumber: '+15559000010' } });
    expect(rented.headers.get('deprecation')).toBeNull();
    expect(rented.body.data).toEqual({
      _id: HEX24,
      productType: 'telephony',
      isActive: true,
      attributes: { provider: 'carrier1', phoneNumber: '+15559000010', countryCode: 'US', areaCode: '555' },
      agent: null,
      createdAt: ISO,
      updatedAt: ISO,
    });
    expect((await answer(s(), agent, 'phoneNumber', rented.body.data._id)).status).toBe(201);
    await trunk(s(), 'inbound', { name: 'After trunk', numbers: ['+15559000020'] });
    const all = await s().request('GET', `${A}/product/all-numbers`);
    expect(all.headers.get('deprecation')).toBeNull();
    expect(all.body.data).toEqual({ telephonyProducts: [{ ...rented.body.data, agent: { _id: agent, name: 'After' }, updatedAt: ISO }] });
    const numbers = await s().request('GET', `${A}/product/phone-numbers`);
    expect(numbers.headers.get('deprecation')).toBeNull();
    expect(numbers.body.data[0]).not.toHaveProperty('agentId');
    expect((await s().request('GET', `${A}/agent/${agent}`)).body.data.phoneNumber).toEqual(['+15559000010']);

    // The kill switch no longer applies at routing (the SIP leg shares the server's store handle, window included).
    await storeSql(suite.store, 'UPDATE agents SET meta = $1 WHERE id = $2', [JSON.stringify({ allowInboundCall: false }), agent]);
    const route = await withStore(suite.store, async (db) => {
      await initTelephonyWindow(db, new Date(isoDay(Date.now() - 60 * DAY)));
      return resolveInbound(db, { calledNumber: '+15559000010', sourceAddress: '192.0.2.1' });
    });
    expect(route).toMatchObject({ kind: 'found', agentId: agent, allowInboundCall: true });
  });
});

describe('platform carrier settings', () => {
  it('reads the carrier from the environment, with defaults, and names a bad variable', () => {
    expect(loadSettings({}).carrier).toEqual({ name: 'carrier', address: undefined, transport: 'udp', cps: 1, allowedAddresses: [], username: undefined, password: undefined });
    expect(loadSettings({}).telephonyReworkDate).toBeUndefined();
    const env = {
      PARLEY_CARRIER_NAME: 'carrier1',
      PARLEY_CARRIER_ADDRESS: 'sip:sbc.carrier.example:5080',
      PARLEY_CARRIER_TRANSPORT: 'TCP',
      PARLEY_CARRIER_CPS: '5',
      PARLEY_CARRIER_ALLOWED_ADDRESSES: '203.0.113.0/24, 2001:db8::1',
      PARLEY_CARRIER_USERNAME: 'parley',
      PARLEY_CARRIER_PASSWORD: 'carrier-secret',
      PARLEY_TELEPHONY_REWORK_DATE: '2026-03-01',
    };
    const settings = loadSettings(env);
    expect(settings.carrier).toEqual({ name: 'carrier1', address: 'sbc.carrier.example:5080', transport: 'tcp', cps: 5, allowedAddresses: ['203.0.113.0/24', '2001:db8::1'], username: 'parley', password: 'carrier-secret' });
    expect(settings.telephonyReworkDate?.toISOString()).toBe('2026-03-01T00:00:00.000Z');
    for (const [name, value] of [
      ['PARLEY_CARRIER_ADDRESS', 'user@host'],
      ['PARLEY_CARRIER_TRANSPORT', 'sctp'],
      ['PARLEY_CARRIER_CPS', '51'],
      ['PARLEY_CARRIER_ALLOWED_ADDRESSES', '10.0.0.0/40'],
      ['PARLEY_CARRIER_PASSWORD', ''],
      ['PARLEY_TELEPHONY_REWORK_DATE', 'next tuesday'],
    ] as const) {
      const broken = { ...env, [name]: value };
      const expected = name === 'PARLEY_CARRIER_PASSWORD' ? 'PARLEY_CARRIER_USERNAME' : name;
      expect(() => loadSettings(broken)).toThrow(expected);
    }
  });
});
