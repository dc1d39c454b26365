// The do-not-call list (issue 33 item 3) against the real server and a real SIP carrier (sipp): entries added (one or a
// batch, normalized, never twice per scope), listed (search, sort, pages, one agent's), read and removed, with 400s
// naming the field and 404s for other organizations' agents and entries; an outbound call to a listed number refused;
// campaign recipients on the list skipped and counted; and calls already queued whose number is then listed never
// dialed (taken out of the queue by the listing, or, listed by a writer that did not sweep the queue, at the claim).
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createOrgKey, sleep, storeSql, testDialects, type TestServer } from './support/server.js';
import { killCallees, startSippCarrier, type SippCarrier } from './support/sip-callee.js';
import { killPeers } from './support/sip-peers.js';
import { sipServerForSuite, workflowAgent } from './support/phone-server.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const A = '/atoms/v1';

afterEach(() => {
  killPeers();
  killCallees();
});

/** A number without its `+`, as the carrier logs it either way. */
const digits = (n: string) => n.replace(/^\+/, '');

const FINAL = new Set(['completed', 'failed', 'no_answer', 'cancelled']);

async function settled(server: TestServer, callId: string, timeoutMs = 20_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await server.request('GET', `${A}/conversation/${callId}`);
    expect(res.status, res.text).toBe(200);
    if (FINAL.has(res.body.data.status)) return res.body.data;
    if (Date.now() > until) throw new Error(`call ${callId} stayed ${res.body.data.status}`);
    await sleep(50);
  }
}

async function outboundTrunk(server: TestServer, port: number, numbers: string[], cpsLimit = 10): Promise<string> {
  const res = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: `Carrier ${port}`, address: `127.0.0.1:${port}`, numbers, cpsLimit } });
  expect(res.status, res.text).toBe(201);
  return res.body.data._id as string;
}

async function audience(server: TestServer, numbers: string[]): Promise<string> {
  const form = new FormData();
  form.append('name', 'List');
  form.append('phoneNumberColumnName', 'phone');
  form.append('file', new Blob([['phone', ...numbers].join('\n')], { type: 'text/csv' }), 'list.csv');
  const res = await fetch(`${server.base}${A}/audience`, { method: 'POST', headers: { authorization: `Bearer ${server.key}` }, body: form });
  const body = (await res.json()) as any;
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body.data._id as string;
}

describe.each(testDialects())('do-not-call list on %s', (dialect) => {
  const suite = sipServerForSuite(dialect, { PARLEY_WARM_MODELS: 'false', PARLEY_CAMPAIGN_MINUTE_MS: '300' });
  const carriers: SippCarrier[] = [];
  let server: TestServer;
  let agentA: string;
  let agentB: string;
  let otherKey: string;
  let otherAgent: string;

  beforeAll(async () => {
    server = suite.server;
    agentA = await workflowAgent(server, 'Hello.');
    agentB = await workflowAgent(server, 'Hello.');
    otherKey = await createOrgKey(suite.store, 'other-dnc', 'org-dnc-other');
    const created = await server.request('POST', `${A}/agent`, { key: otherKey, body: { name: 'Theirs', workflowType: 'workflow_graph', workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Hi.' }], edges: [] } } });
    expect(created.status, created.text).toBe(201);
    otherAgent = created.body.data as string;
  });
  afterEach(async () => {
    await Promise.all(carriers.splice(0).map((c) => c.stop()));
  });

  const add = (body: unknown, key?: string) => server.request('POST', `${A}/dnc`, { body, key });
  const list = (query = '', key?: string) => server.request('GET', `${A}/dnc${query}`, { key });

  it('adds numbers (normalized, never twice in one scope), lists, searches, sorts, pages and removes them', async () => {
    const one = await add({ phoneNumber: '+1 (555) 070-0001', reason: 'Asked not to be called' });
    expect(one.status, one.text).toBe(201);
    expect(one.body).toMatchObject({ status: true, data: { added: 1, existing: 0, cancelledCallIds: [] } });
    const entry = one.body.data.entries[0];
    expect(entry).toEqual({ _id: expect.stringMatching(/^[0-9a-f]{24}$/), phoneNumber: '+15550700001', agentId: null, reason: 'Asked not to be called', source: 'manual', createdBy: expect.any(String), createdAt: expect.any(String) });

    // Already there (in any writing): the same entry, nothing added.
    const again = await add({ phoneNumber: '+15550700001' });
    expect(again.status, again.text).toBe(200);
    expect(again.body.data).toMatchObject({ added: 0, existing: 1, entries: [{ _id: entry._id, reason: 'Asked not to be called' }] });

    // A batch: a number repeated in it counts once, one already listed is not listed again.
    const batch = await add({ phoneNumbers: ['+15550700001', '+15550700002', '+1-555-070-0003', '+1.555.070.0002'] });
    expect(batch.status, batch.text).toBe(201);
    expect(batch.body.data).toMatchObject({ added: 2, existing: 1 });
    expect(batch.body.data.entries.map((e: any) => e.phoneNumber)).toEqual(['+15550700001', '+15550700002', '+15550700003']);
    expect(batch.body.data.entries[0]._id).toBe(entry._id);

    // The same number for one agent is a second entry, in its own scope.
    const scoped = await add({ phoneNumber: '+15550700001', agentId: agentA });
    expect(scoped.status, scoped.text).toBe(201);
    expect(scoped.body.data.entries[0]).toMatchObject({ phoneNumber: '+15550700001', agentId: agentA });
    expect(scoped.body.data.entries[0]._id).not.toBe(entry._id);

    const all = await list();
    expect(all.status, all.text).toBe(200);
    expect(all.body.status).toBe(true);
    expect(all.body.data.pagination).toEqual({ page: 1, offset: 20, total: 4, totalPages: 1, hasMore: false });
    // Newest first by default.
    expect(all.body.data.entries[0]._id).toBe(scoped.body.data.entries[0]._id);

    const byNumber = await list('?sortField=phoneNumber&sortOrder=asc&offset=2&page=2');
    expect(byNumber.body.data.pagination).toEqual({ page: 2, offset: 2, total: 4, totalPages: 2, hasMore: false });
    expect(byNumber.body.data.entries.map((e: any) => e.phoneNumber)).toEqual(['+15550700002', '+15550700003']);
    const first = await list('?sortField=phoneNumber&sortOrder=asc&offset=2');
    expect(first.body.data.pagination).toMatchObject({ page: 1, hasMore: true });
    expect(first.body.data.entries.map((e: any) => e.phoneNumber)).toEqual(['+15550700001', '+15550700001']);
    // The page size is clamped to 1-500, as the wire says.
    expect((await list('?offset=0')).body.data.pagination).toMatchObject({ offset: 1, totalPages: 4, hasMore: true });
    expect((await list('?offset=100000')).body.data.pagination.offset).toBe(500);

    expect((await list('?search=070-0003')).body.data.entries.map((e: any) => e.phoneNumber)).toEqual(['+15550700003']);
    expect((await list('?search=%2B1555070')).body.data.pagination.total).toBe(4);
    expect((await list('?search=nobody')).body.data.pagination.total).toBe(0);
    const mine = await list(`?agentId=${agentA}`);
    expect(mine.body.data.entries).toEqual([scoped.body.data.entries[0]]);
    expect((await list(`?agentId=${agentB}`)).body.data.pagination.total).toBe(0);

    // Bad queries: 400 naming the parameter; an agent that is not the organization's is 404.
    for (const [query, message] of [
      ['?agentId=nope', /agentId: must be a 24-character hex agent id/],
      ['?page=0', /page: must be a positive integer/],
      ['?page=x', /page: must be a positive integer/],
      ['?offset=-3', /offset: must be a positive integer/],
      ['?sortField=reason', /sortField: one of createdAt, phoneNumber/],
      ['?sortOrder=up', /sortOrder: asc or desc/],
    ] as const) {
      const res = await list(query);
      expect(res.status, `${query} -> ${res.text}`).toBe(400);
      expect(res.body.status).toBe(false);
      expect(res.body.errors.join('\n')).toMatch(message);
    }
    expect((await list(`?agentId=${otherAgent}`)).status).toBe(404);
    expect((await list('?agentId=ffffffffffffffffffffffff')).status).toBe(404);

    // Another organization sees none of it.
    expect((await list('', otherKey)).body.data.pagination.total).toBe(0);
    expect((await server.request('GET', `${A}/dnc/${entry._id}`, { key: otherKey })).status).toBe(403);
    expect((await server.request('DELETE', `${A}/dnc/${entry._id}`, { key: otherKey })).status).toBe(403);

    // Removed by id, and by number in its scope.
    expect((await server.request('GET', `${A}/dnc/${entry._id}`)).body.data).toEqual(entry);
    const removed = await server.request('DELETE', `${A}/dnc/${entry._id}`);
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body.data).toEqual({ deleted: 1, entries: [entry] });
    expect((await server.request('GET', `${A}/dnc/${entry._id}`)).status).toBe(404);
    expect((await server.request('DELETE', `${A}/dnc/${entry._id}`)).status).toBe(404);
    expect((await server.request('DELETE', `${A}/dnc/nope`)).status).toBe(404);
    const byNum = await server.request('DELETE', `${A}/dnc?phoneNumber=${encodeURIComponent('+1 555 070 0003')}`);
    expect(byNum.status, byNum.text).toBe(200);
    expect(byNum.body.data.entries[0].phoneNumber).toBe('+15550700003');
    expect((await server.request('DELETE', `${A}/dnc?phoneNumber=%2B15550700003`)).status).toBe(404);
    // The org-wide entry of +15550700001 is gone; its entry for agent A is removed only in that scope.
    expect((await server.request('DELETE', `${A}/dnc?phoneNumber=%2B15550700001`)).status).toBe(404);
    expect((await server.request('DELETE', `${A}/dnc?phoneNumber=%2B15550700001&agentId=${agentA}`)).status).toBe(200);
    expect((await server.request('DELETE', `${A}/dnc?phoneNumber=555`)).status).toBe(400);
    expect((await server.request('DELETE', `${A}/dnc`)).status).toBe(400);
    expect((await list()).body.data.entries.map((e: any) => e.phoneNumber)).toEqual(['+15550700002']);
    expect((await server.request('DELETE', `${A}/dnc?phoneNumber=%2B15550700002`)).status).toBe(200);
  });

  it('refuses a malformed number with 400 naming the field (nothing listed), and another organization\'s agent with 404', async () => {
    const before = (await list()).body.data.pagination.total;
    const cases: Array<[unknown, RegExp]> = [
      [{ phoneNumber: '5550700009' }, /^phoneNumber: "5550700009" is not an E\.164 number/],
      [{ phoneNumber: '+0555070' }, /^phoneNumber: "\+0555070" is not an E\.164 number/],
      [{ phoneNumber: 15550700009 }, /^phoneNumber: must be an E\.164 number/],
      [{ phoneNumbers: ['+15550700010', 'call me maybe', '+15550700011', '12'] }, /^phoneNumbers\[1\]: "call me maybe", phoneNumbers\[3\]: "12": not an E\.164 number.*nothing was listed/],
      [{ phoneNumbers: [] }, /^phoneNumbers: an array of 1-1000 numbers/],
      [{ phoneNumbers: '+15550700012' }, /^phoneNumbers: an array of 1-1000 numbers/],
      [{ phoneNumber: '+15550700012', phoneNumbers: ['+15550700013'] }, /not both/],
      [{}, /^phoneNumber: required/],
      [{ phoneNumber: '+15550700012', agentId: 'abc' }, /^agentId: must be a 24-character hex agent id/],
      [{ phoneNumber: '+15550700012', reason: 'x'.repeat(501) }, /^reason: must be a string of at most 500 characters/],
      [{ phoneNumber: '+15550700012', colour: 'red' }, /^colour: unknown field/],
      [[], /JSON object/],
    ];
    for (const [body, message] of cases) {
      const res = await add(body);
      expect(res.status, `${JSON.stringify(body)} -> ${res.text}`).toBe(400);
      expect(res.body.status).toBe(false);
      expect(res.body.errors.join('\n')).toMatch(message);
    }
    const foreign = await add({ phoneNumber: '+15550700012', agentId: otherAgent });
    expect(foreign.status, foreign.text).toBe(404);
    expect(foreign.body).toMatchObject({ status: false, errors: [expect.stringMatching(/^agentId: no agent/)] });
    expect((await list()).body.data.pagination.total).toBe(before);
  });

  it('refuses an outbound call to a listed number (org-wide, or for that agent) with 400 naming phoneNumber', async () => {
    const carrier = await startSippCarrier({ answer: 486, timeoutS: 60 });
    carriers.push(carrier);
    const trunk = await outboundTrunk(server, carrier.port, ['+15550710001']);
    try {
      expect((await add({ phoneNumber: '+15550720001', reason: 'Complaint' })).status).toBe(201);
      expect((await add({ phoneNumber: '+15550720002', agentId: agentA })).status).toBe(201);
      const call = (agentId: string, phoneNumber: string) => server.request('POST', `${A}/conversation/outbound`, { body: { agentId, phoneNumber, fromNumber: '+15550710001' } });

      const refused = await call(agentB, '+15550720001');
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body.status).toBe(false);
      expect(refused.body.errors).toHaveLength(1);
      expect(refused.body.errors[0]).toMatch(/^phoneNumber: \+15550720001 is on the do-not-call list \(entry [0-9a-f]{24}, for the whole organization: Complaint\)/);
      const scoped = await call(agentA, '+15550720002');
      expect(scoped.status, scoped.text).toBe(400);
      expect(scoped.body.errors[0]).toMatch(new RegExp(`^phoneNumber: \\+15550720002 is on the do-not-call list \\(entry [0-9a-f]{24}, for agent ${agentA}\\)`));
      // A test call too.
      expect((await server.request('POST', `${A}/conversation/outbound`, { headers: { 'x-test-call': 'true' }, body: { agentId: agentA, phoneNumber: '+15550720001', fromNumber: '+15550710001' } })).status).toBe(400);

      // The agent entry does not bar another agent; removed, the number is called again.
      const other = await call(agentB, '+15550720002');
      expect(other.status, other.text).toBe(200);
      expect(await settled(server, other.body.data.conversationId)).toMatchObject({ status: 'failed', callFailureReason: 'busy' });
      const entry = (await list(`?agentId=${agentA}`)).body.data.entries[0];
      expect((await server.request('DELETE', `${A}/dnc/${entry._id}`)).status).toBe(200);
      const allowed = await call(agentA, '+15550720002');
      expect(allowed.status, allowed.text).toBe(200);
      await settled(server, allowed.body.data.conversationId);
      const dialed = carrier.arrivals().map((a) => digits(a.to));
      expect(dialed).toEqual([digits('+15550720002'), digits('+15550720002')]);
    } finally {
      await server.request('DELETE', `${A}/dnc?phoneNumber=%2B15550720001`);
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 40_000);

  it('skips campaign recipients on the list (org-wide or the campaign agent\'s) and counts them in the report', async () => {
    const carrier = await startSippCarrier({ answer: 486, timeoutS: 60 });
    carriers.push(carrier);
    const trunk = await outboundTrunk(server, carrier.port, ['+15550710002']);
    const recipients = ['+15550730001', '+15550730002', '+15550730003', '+15550730004'];
    expect((await add({ phoneNumber: recipients[0] })).status).toBe(201); // the whole organization
    expect((await add({ phoneNumber: recipients[1], agentId: agentB })).status).toBe(201); // another agent's: still called
    expect((await add({ phoneNumber: recipients[3], agentId: agentA })).status).toBe(201); // the campaign agent's
    const audienceId = await audience(server, recipients);
    const created = await server.request('POST', `${A}/campaign`, { body: { name: 'DNC', agentId: agentA, audienceId, fromNumbers: ['+15550710002'], maxRetries: 0 } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data._id as string;
    expect(created.body.data.dncSkippedCount).toBe(0);
    expect((await server.request('POST', `${A}/campaign/${id}/start`)).status).toBe(202);
    let done: any;
    for (const until = Date.now() + 30_000; ; await sleep(100)) {
      done = (await server.request('GET', `${A}/campaign/${id}`)).body.data;
      if (done.campaign.status === 'completed') break;
      if (Date.now() > until) throw new Error(`campaign stayed ${done.campaign.status}`);
    }
    expect(done.metrics).toEqual({ total_participants: 4, contacts_called: 2, contacts_connected: 0, contacts_skipped_dnc: 2, contacts_voicemail: 0 });
    expect(done.campaign).toMatchObject({ dncSkippedCount: 2, cancelledCallsCount: 0, participantsCount: 4 });
    const skipped = done.events.filter((e: any) => e.eventAction === 'dnc_skipped');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatchObject({ triggerSource: 'system', detail: `Skipped 2 recipients on the do-not-call list: ${recipients[0]}, ${recipients[3]}` });
    expect(carrier.arrivals().map((a) => digits(a.to)).sort()).toEqual([recipients[1]!, recipients[2]!].map(digits));
    const calls = (await server.request('GET', `${A}/conversation?campaignIds=${id}&offset=100`)).body.data.logs as any[];
    expect(calls.map((c) => c.to).sort()).toEqual([recipients[1], recipients[2]]);
    for (const n of [recipients[0], recipients[3]]) expect((await list(`?search=${digits(n!)}`)).body.data.pagination.total).toBe(1);
    expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
  }, 40_000);

  it('a queued call whose number is then listed is not dialed: the listing takes it out of the queue (cancelled, reason dnc, webhooks sent)', async () => {
    const hooks = new WebhookReceiver();
    await hooks.start();
    const hook = await server.request('POST', `${A}/webhook`, { body: { endpoint: hooks.url, events: [{ agentId: agentB, eventType: 'post-conversation' }] } });
    expect(hook.status, hook.text).toBe(201);
    const carrier = await startSippCarrier({ answer: 486, timeoutS: 60 });
    carriers.push(carrier);
    // cpsLimit 1: the first call is sent at once, the next one is marked for its slot, the ones after it wait (claimed
    // a few ahead, or queued) for seconds.
    const trunk = await outboundTrunk(server, carrier.port, ['+15550710003'], 1);
    try {
      const numbers = ['+15550740001', '+15550740002', '+15550740003', '+15550740004', '+15550740005'];
      const ids: string[] = [];
      for (const n of numbers) {
        const res = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId: agentB, phoneNumber: n, fromNumber: '+15550710003' } });
        expect(res.status, res.text).toBe(200);
        ids.push(res.body.data.conversationId);
      }
      // The third (claimed by the dialer, not yet marked for its slot) and the fifth (queued): both taken out.
      const listed = await add({ phoneNumbers: [numbers[2], numbers[4]] });
      expect(listed.status, listed.text).toBe(201);
      expect(listed.body.data.cancelledCallIds.sort()).toEqual([ids[2], ids[4]].sort());
      for (const i of [2, 4]) {
        expect(await settled(server, ids[i]!)).toMatchObject({ status: 'cancelled', endReason: 'dnc' });
        const post = await hooks.waitFor(ids[i]!, 'post-conversation');
        expect(post.metadata.callData).toMatchObject({ callStatus: 'canceled', toNumber: numbers[i] });
      }
      for (const i of [0, 1, 3]) expect(await settled(server, ids[i]!)).toMatchObject({ status: 'failed', callFailureReason: 'busy' });
      await sleep(1500);
      expect(carrier.arrivals().map((a) => digits(a.to))).toEqual([numbers[0]!, numbers[1]!, numbers[3]!].map(digits));
    } finally {
      await hooks.close();
      await server.request('DELETE', `${A}/dnc?phoneNumber=%2B15550740003`);
      await server.request('DELETE', `${A}/dnc?phoneNumber=%2B15550740005`);
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 40_000);

  it('a queued call listed by a writer that did not sweep the queue is closed when the dialer comes to claim it', async () => {
    const carrier = await startSippCarrier({ answer: 486, timeoutS: 60 });
    carriers.push(carrier);
    const trunk = await outboundTrunk(server, carrier.port, ['+15550710004'], 1);
    try {
      const numbers = Array.from({ length: 6 }, (_, i) => `+1555075000${i + 1}`);
      const ids: string[] = [];
      for (const n of numbers) {
        const res = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId: agentB, phoneNumber: n, fromNumber: '+15550710004' } });
        expect(res.status, res.text).toBe(200);
        ids.push(res.body.data.conversationId);
      }
      // The last one waits about five seconds at cps 1. Listed straight in the store (as an older server sharing it,
      // or a bulk import, would): nothing took it out of the queue.
      const [row] = await storeSql(suite.store, 'select org_id, state from outbound_calls where call_id = $1', [ids[5]]);
      expect(row?.state).toBe('queued');
      await storeSql(suite.store, 'insert into dnc_entries (id, org_id, phone_number, agent_id, scope, reason, source, created_by, created_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
        'aaaaaaaaaaaaaaaaaaaaaaaa', row!.org_id, numbers[5], agentB, agentB, null, 'manual', 'test', new Date().toISOString(),
      ]);
      expect(await settled(server, ids[5]!, 20_000)).toMatchObject({ status: 'cancelled', endReason: 'dnc' });
      for (const id of ids.slice(0, 5)) expect(await settled(server, id)).toMatchObject({ status: 'failed', callFailureReason: 'busy' });
      await sleep(1500);
      expect(carrier.arrivals().map((a) => digits(a.to))).toEqual(numbers.slice(0, 5).map(digits));
      const [closed] = await storeSql(suite.store, 'select state from outbound_calls where call_id = $1', [ids[5]]);
      expect(closed?.state).toBe('done');
    } finally {
      expect((await server.request('DELETE', `${A}/dnc/aaaaaaaaaaaaaaaaaaaaaaaa`)).status).toBe(200);
      expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    }
  }, 40_000);
});
