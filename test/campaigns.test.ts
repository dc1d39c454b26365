// Campaigns (wire §5, agent-platform §7) against the real server and real SIP carriers (sipp): the create checks and
// errors, a campaign over two fromNumbers whose numbers rotate (one carrier answers and the agent speaks, the other is
// busy and each busy recipient is retried from the number it saw), metrics and events, scheduledAt, pause and resume,
// delete and the audience it holds, and a server killed mid-campaign whose successor finishes it with nobody called
// more often than the retries allow.
import { afterEach, describe, expect, it } from 'vitest';
import { createOrgKey, freshStore, sleep, startServer, storeSql, testDialects, withStore, type TestServer } from './support/server.js';
import { PREPARING, sweepUnfinishedCampaigns } from '../control-plane/campaigns/campaigns.js';
import { killCallees, startSippCarrier, type Arrival, type SippCarrier } from './support/sip-callee.js';
import { STACK_HOST, killPeers } from './support/sip-peers.js';
import { sipServerForSuite, workflowAgent } from './support/phone-server.js';

const A = '/atoms/v1';

afterEach(() => {
  killPeers();
  killCallees();
});

/** An audience of the given numbers (one CSV row each, with a `first_name` variable); returns its id. */
async function audience(server: TestServer, numbers: string[], key = server.key): Promise<string> {
  const form = new FormData();
  form.append('name', 'Renewals');
  form.append('phoneNumberColumnName', 'phone');
  const csv = ['phone,first_name', ...numbers.map((n, i) => `${n},Person${i}`)].join('\n');
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'list.csv');
  const res = await fetch(`${server.base}${A}/audience`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const body = (await res.json()) as any;
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body.data._id as string;
}

/** An outbound trunk to a carrier on 127.0.0.1:`port` with these numbers; returns its id. */
async function outboundTrunk(server: TestServer, port: number, numbers: string[], cpsLimit = 10, key?: string): Promise<string> {
  const res = await server.request('POST', `${A}/sip-trunk/outbound`, { body: { name: `Carrier ${port}`, address: `127.0.0.1:${port}`, numbers, cpsLimit }, key });
  expect(res.status, res.text).toBe(201);
  return res.body.data._id as string;
}

async function createCampaign(server: TestServer, body: Record<string, unknown>, key?: string): Promise<any> {
  const res = await server.request('POST', `${A}/campaign`, { body: { name: 'Spring renewals', ...body }, key });
  expect(res.status, res.text).toBe(201);
  return res.body.data;
}

async function campaign(server: TestServer, id: string, key?: string): Promise<any> {
  const res = await server.request('GET', `${A}/campaign/${id}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

async function waitForCampaign(server: TestServer, id: string, status: string, timeoutMs = 30_000, key?: string): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const c = await campaign(server, id, key);
    if (c.campaign.status === status) return c;
    if (Date.now() > until) throw new Error(`campaign ${id} stayed ${c.campaign.status} (wanted ${status}): ${JSON.stringify(c.metrics)}`);
    await sleep(100);
  }
}

/** The campaign's calls (the call list filtered by campaignIds), oldest first. */
async function campaignCalls(server: TestServer, id: string, key?: string): Promise<any[]> {
  const res = await server.request('GET', `${A}/conversation?campaignIds=${id}&offset=100&sortOrder=asc`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body.data.logs as any[];
}

/** A number without its `+` (how it is keyed, whichever way the carrier logged it). */
const digits = (n: string) => n.replace(/^\+/, '');
/** INVITE arrivals by the number dialled. */
const byNumber = (arrivals: Arrival[]) => {
  const m = new Map<string, Arrival[]>();
  for (const a of arrivals) m.set(digits(a.to), [...(m.get(digits(a.to)) ?? []), a]);
  return m;
};

describe.each(testDialects())('campaigns on %s', (dialect) => {
  // One minute of retryDelay lasts 300 ms here.
  const suite = sipServerForSuite(dialect, { PARLEY_CAMPAIGN_MINUTE_MS: '300' });
  const carriers: SippCarrier[] = [];
  afterEach(async () => {
    await Promise.all(carriers.splice(0).map((c) => c.stop()));
  });

  it('refuses a campaign that cannot run with 400 naming the field; unknown and foreign campaigns are 404', async () => {
    const server = suite.server;
    const agentId = await workflowAgent(server, 'Hello.');
    const trunk = await outboundTrunk(server, 5998, ['+15550600001']);
    const audienceId = await audience(server, ['+15550610001']);
    const ok = { agentId, audienceId, fromNumbers: ['+15550600001'] };
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...ok, name: '' }, /name: required/],
      [{ ...ok, agentId: undefined }, /agentId: required/],
      [{ ...ok, audienceId: undefined }, /audienceId: required/],
      [{ ...ok, audienceId: 'ffffffffffffffffffffffff' }, /audienceId: ffffffffffffffffffffffff is not an audience of your organization/],
      [{ ...ok, maxRetries: 11 }, /maxRetries: an integer from 0 to 10/],
      [{ ...ok, retryDelay: 0 }, /retryDelay: minutes between attempts, an integer from 1 to 1440/],
      [{ ...ok, retryDelay: 1.5 }, /retryDelay/],
      [{ ...ok, scheduledAt: 'tomorrow' }, /scheduledAt: an ISO 8601 date-time/],
      [{ ...ok, fromNumbers: [] }, /fromNumbers: 1-50 E\.164 numbers/],
      [{ ...ok, fromNumbers: ['555'] }, /fromNumbers: not E\.164 numbers: "555"/],
      [{ ...ok, fromNumbers: ['+15550600001', '+15550600001'] }, /fromNumbers: each number once/],
      [{ ...ok, fromNumbers: ['+15550600001', '+15550699999'] }, /fromNumbers: \+15550699999 is not a number your organization dials from/],
      [{ ...ok, fromNumbers: undefined, phoneNumberIds: ['nope'] }, /phoneNumberIds: none of these ids is a number your organization dials from/],
      [{ ...ok, phoneNumberIds: ['x'] }, /not both/],
      [{ ...ok, colour: 'blue' }, /colour: unknown field/],
    ];
    for (const [body, message] of cases) {
      const res = await server.request('POST', `${A}/campaign`, { body: { name: 'x', ...body } });
      expect(res.status, `${JSON.stringify(body)} -> ${res.text}`).toBe(400);
      expect(res.body.status).toBe(false);
      expect((res.body.errors as string[]).join('\n')).toMatch(message);
    }
    const unknownAgent = await server.request('POST', `${A}/campaign`, { body: { name: 'x', ...ok, agentId: 'ffffffffffffffffffffffff' } });
    expect(unknownAgent.status).toBe(400);
    expect(unknownAgent.text).toMatch(/agentId: ffffffffffffffffffffffff is not an agent of your organization/);

    const created = await createCampaign(server, ok);
    expect(created).toMatchObject({ agentId, audienceId, fromNumbers: ['+15550600001'], status: 'draft', maxRetries: 3, retryDelay: 15, participantsCount: 1, scheduledAt: null });
    const other = await createOrgKey(suite.store, 'other-campaigns', 'org-campaigns');
    for (const [method, path] of [['GET', ''], ['DELETE', ''], ['POST', '/start'], ['POST', '/pause']] as const) {
      // Another organization's campaign: the spec's general 403; an unknown or malformed id: 404.
      expect((await server.request(method, `${A}/campaign/${created._id}${path}`, { key: other })).status, `${method} ${path}`).toBe(403);
      expect((await server.request(method, `${A}/campaign/ffffffffffffffffffffffff${path}`)).status).toBe(404);
      expect((await server.request(method, `${A}/campaign/nope${path}`)).status).toBe(404);
    }
    // The trunk it dials through is in use while the campaign is not finished (409 naming it); deleted, it is free.
    const trunkDelete = await server.request('DELETE', `${A}/sip-trunk/${trunk}`);
    expect(trunkDelete.status, trunkDelete.text).toBe(409);
    expect(trunkDelete.body.errors.join(' ')).toContain(`campaign ${created._id}`);
    const pauseDraft = await server.request('POST', `${A}/campaign/${created._id}/pause`);
    expect(pauseDraft.status).toBe(400);
    expect(pauseDraft.text).toMatch(/only a scheduled or running campaign can be paused/);
    expect((await server.request('DELETE', `${A}/campaign/${created._id}`)).status).toBe(200);
    expect((await server.request('DELETE', `${A}/sip-trunk/${trunk}`)).status).toBe(200);
    const list = await server.request('GET', `${A}/campaign?status=nope`);
    expect(list.status).toBe(400);
    expect(list.text).toMatch(/status: one of draft, scheduled/);
    // The deprecated phoneNumberIds during the window: the ids of numbers it dials from, with Deprecation: true.
    const imported = await server.request('POST', `${A}/product/import-phone-number`, { body: { phoneNumber: '+15550600009', sipTerminationUrl: '127.0.0.1:5997' } });
    expect(imported.status, imported.text).toBe(200);
    const legacy = await server.request('POST', `${A}/campaign`, { body: { name: 'legacy', agentId, audienceId, phoneNumberIds: [imported.body.data._id, 'ffffffffffffffffffffffff'] } });
    expect(legacy.status, legacy.text).toBe(201);
    expect(legacy.headers.get('deprecation')).toBe('true');
    expect(legacy.body.data.fromNumbers).toEqual(['+15550600009']);
    // The list: filtered by name and status, paged, with the agent and audience named.
    const found = await server.request('GET', `${A}/campaign?search=LEG&status=draft&offset=1`);
    expect(found.status, found.text).toBe(200);
    expect(found.body.data.pagination).toEqual({ total: 1, page: 1, offset: 1, hasMore: false, totalPages: 1 });
    expect(found.body.data.campaigns[0]).toMatchObject({ _id: legacy.body.data._id, name: 'legacy', status: 'draft', agent: { _id: agentId, workflowType: 'workflow_graph' }, audience: { _id: audienceId, name: 'Renewals' } });
    expect(found.body.data.totalCampaignCount).toBeGreaterThanOrEqual(1);
    expect((await server.request('GET', `${A}/campaign?search=LEG&status=running`)).body.data.pagination.total).toBe(0);
  });

  it('copies a large audience into the campaign in slices: every member in order, each number in turn; a copy a stopped server left is invisible and swept', async () => {
    const server = suite.server;
    const agentId = await workflowAgent(server, 'Hello.');
    const trunk = await outboundTrunk(server, 5993, ['+15550600007', '+15550600008']);
    // 1,001 members: three slices, the last one short.
    const numbers = Array.from({ length: 1001 }, (_, i) => `+1555062${String(i).padStart(4, '0')}`);
    const audienceId = await audience(server, numbers);
    try {
      const created = (await createCampaign(server, { agentId, audienceId, fromNumbers: ['+15550600007', '+15550600008'] }))._id as string;
      const rows = await storeSql(suite.store, 'SELECT position, phone_number, from_number FROM campaign_recipients WHERE campaign_id = $1 ORDER BY position', [created]);
      expect(rows.map((r) => Number(r.position))).toEqual(numbers.map((_, i) => i));
      expect(rows.map((r) => r.phone_number)).toEqual(numbers);
      expect(rows.map((r) => r.from_number)).toEqual(numbers.map((_, i) => (i % 2 ? '+15550600008' : '+15550600007')));
      const got = await server.request('GET', `${A}/campaign/${created}`);
      expect(got.body.data.metrics.total_participants).toBe(1001);
      // A copy a stopped server left: invisible to reads and lists, then removed with its recipients by the sweep.
      await storeSql(suite.store, 'UPDATE campaigns SET status = $1, updated_at = $2 WHERE id = $3', [PREPARING, '2020-01-01T00:00:00.000Z', created]);
      expect((await server.request('GET', `${A}/campaign/${created}`)).status).toBe(404);
      const listed = await server.request('GET', `${A}/campaign?offset=100`);
      expect(listed.body.data.campaigns.map((c: { _id: string }) => c._id)).not.toContain(created);
      expect(await withStore(suite.store, (db) => sweepUnfinishedCampaigns(db))).toBe(1);
      expect(await storeSql(suite.store, 'SELECT id FROM campaign_recipients WHERE campaign_id = $1', [created])).toEqual([]);
      expect(await storeSql(suite.store, 'SELECT id FROM campaigns WHERE id = $1', [created])).toEqual([]);
    } finally {
      await server.request('DELETE', `${A}/sip-trunk/${trunk}`);
    }
  }, 60_000);

  it('runs a campaign over two fromNumbers: they rotate, answered calls are held by the agent, busy ones are retried from the number the recipient saw', async () => {
    const server = suite.server;
    const agentId = await workflowAgent(server, 'Hello, this is Parley about your renewal. Goodbye.', true);
    const answering = await startSippCarrier({ answer: 'ok', timeoutS: 60 });
    const busy = await startSippCarrier({ answer: 486, timeoutS: 60 });
    carriers.push(answering, busy);
    await outboundTrunk(server, answering.port, ['+15550600101']);
    await outboundTrunk(server, busy.port, ['+15550600102']);
    const recipients = ['+15550610101', '+15550610102', '+15550610103', '+15550610104'];
    const audienceId = await audience(server, recipients);
    const created = await createCampaign(server, { agentId, audienceId, fromNumbers: ['+15550600101', '+15550600102'], maxRetries: 1, retryDelay: 1 });
    expect(created.status).toBe('draft');

    // The audience is in use while the campaign may still call it.
    const audienceDelete = await server.request('DELETE', `${A}/audience/${audienceId}`);
    expect(audienceDelete.status).toBe(409);
    expect(audienceDelete.body.errors.join(' ')).toContain(created._id);

    const start = await server.request('POST', `${A}/campaign/${created._id}/start`);
    expect(start.status, start.text).toBe(202);
    expect(start.body.data).toMatchObject({ campaignId: created._id, taskId: expect.stringMatching(/^[0-9a-f]{24}$/), message: expect.any(String) });
    const running = await server.request('DELETE', `${A}/campaign/${created._id}`);
    expect(running.status).toBe(409);
    expect(running.body.errors.join(' ')).toMatch(/pause it before deleting it/);

    // While it runs: every call seen answered (in progress or completed) counts as connected in a read made after it,
    // without waiting for the call to end and the runner to write its outcome.
    let sawAnswered = 0;
    for (const until = Date.now() + 60_000; Date.now() < until; await sleep(100)) {
      const answeredNow = (await campaignCalls(server, created._id)).filter((c) => c.status === 'in_progress' || c.status === 'completed').length;
      const c = await campaign(server, created._id);
      expect(c.metrics.contacts_connected, `${answeredNow} calls answered`).toBeGreaterThanOrEqual(answeredNow);
      if (answeredNow && c.campaign.status === 'running') sawAnswered++;
      if (c.campaign.status === 'completed') break;
    }
    expect(sawAnswered, 'the campaign was read while answered calls were going on').toBeGreaterThan(0);
    const done = await waitForCampaign(server, created._id, 'completed', 1000);
    expect(done.metrics).toEqual({ total_participants: 4, contacts_called: 4, contacts_connected: 2, contacts_skipped_dnc: 0, contacts_voicemail: 0 });
    expect(done.campaign).toMatchObject({ participantsCount: 4, retryAttempts: 2, agent: { _id: agentId }, audience: { _id: audienceId } });
    expect(done.events.map((e: any) => [e.eventAction, e.triggerSource])).toEqual([['created', 'user'], ['started', 'user'], ['completed', 'system']]);

    // Rotation: recipients 1 and 3 were called from the first number (the answering carrier), 2 and 4 from the second;
    // each busy recipient twice (the call and its one retry), always from the number it saw first.
    const answered = byNumber(answering.arrivals());
    const refused = byNumber(busy.arrivals());
    expect([...answered.keys()].sort()).toEqual([recipients[0]!, recipients[2]!].map(digits));
    expect([...refused.keys()].sort()).toEqual([recipients[1]!, recipients[3]!].map(digits));
    for (const r of [recipients[0]!, recipients[2]!]) {
      const got = answered.get(digits(r))!;
      expect(got, r).toHaveLength(1);
      expect(digits(got[0]!.from)).toBe(digits('+15550600101'));
    }
    for (const r of [recipients[1]!, recipients[3]!]) {
      const got = refused.get(digits(r))!;
      expect(got, r).toHaveLength(2);
      for (const a of got) expect(digits(a.from)).toBe(digits('+15550600102'));
    }

    // The records: two completed calls with the member's variables, two busy calls each with its retry linked.
    const calls = await campaignCalls(server, created._id);
    expect(calls).toHaveLength(6);
    const completed = calls.filter((c) => c.status === 'completed');
    expect(completed.map((c) => c.to).sort()).toEqual([recipients[0], recipients[2]]);
    const busyCalls = calls.filter((c) => c.to === recipients[1]);
    expect(busyCalls).toHaveLength(2);
    for (const c of busyCalls) expect(c).toMatchObject({ status: 'failed', callFailureReason: 'busy', from: '+15550600102' });
    const read = await Promise.all(busyCalls.map((c) => server.request('GET', `${A}/conversation/${c.callId}`)));
    const original = read.find((r) => r.body.data.retryCallId !== null)!;
    expect(original, 'one of the two is the first attempt, naming its retry').toBeTruthy();
    const retries = await server.request('GET', `${A}/conversation/${original.body.data.callId}/retries`);
    expect(retries.status).toBe(200);
    expect(retries.body.data.retries.map((r: any) => r.callId)).toEqual([original.body.data.retryCallId]);
    const retryList = await server.request('GET', `${A}/conversation?campaignIds=${created._id}&callAttemptFilter=retry&offset=100`);
    expect(retryList.body.data.logs.map((l: any) => l.to).sort()).toEqual([recipients[1], recipients[3]]);
    // The list rows link the attempts as the detail does: the first names its retry, the retry is attempt 1.
    const rows = new Map(calls.map((c) => [c.callId, c]));
    const first = rows.get(original.body.data.callId);
    const second = rows.get(original.body.data.retryCallId);
    expect(first).toMatchObject({ retryCallId: original.body.data.retryCallId, retryCount: 1, retryAttemptNumber: 0 });
    expect(second).toMatchObject({ retryCallId: null, retryCount: 0, retryAttemptNumber: 1 });
    for (const c of completed) expect(c).toMatchObject({ retryCallId: null, retryCount: 0, retryAttemptNumber: 0 });
    const vars = await server.request('GET', `${A}/conversation/${completed[0].callId}`);
    expect(vars.body.data.variables).toMatchObject({ first_name: expect.stringMatching(/^Person[02]$/) });

    // Completed: the audience is free again, and the campaign can be deleted (its calls stay).
    expect((await server.request('POST', `${A}/campaign/${created._id}/start`)).status).toBe(400);
    expect((await server.request('DELETE', `${A}/campaign/${created._id}`)).status).toBe(200);
    expect((await server.request('GET', `${A}/campaign/${created._id}`)).status).toBe(404);
    expect((await server.request('GET', `${A}/conversation/${completed[0].callId}`)).status).toBe(200);
    expect((await server.request('DELETE', `${A}/audience/${audienceId}`)).status).toBe(200);
  }, 90_000);

  it('starts at scheduledAt by itself; a pause stops new calls and takes back the queued ones, and start resumes it', async () => {
    const server = suite.server;
    const agentId = await workflowAgent(server, 'Hello.');
    const carrier = await startSippCarrier({ answer: 486, timeoutS: 60 });
    carriers.push(carrier);
    await outboundTrunk(server, carrier.port, ['+15550600201'], 2);
    const recipients = Array.from({ length: 8 }, (_, i) => `+155506102${String(i).padStart(2, '0')}`);
    const audienceId = await audience(server, recipients);
    const at = new Date(Date.now() + 1500).toISOString();
    const created = await createCampaign(server, { agentId, audienceId, fromNumbers: ['+15550600201'], maxRetries: 0, scheduledAt: at });
    expect(created).toMatchObject({ status: 'scheduled', scheduledAt: at });
    expect(carrier.arrivals()).toHaveLength(0);

    // At 2 calls per second: pause after the second INVITE.
    for (let i = 0; i < 200 && carrier.arrivals().length < 2; i++) await sleep(25);
    expect(carrier.arrivals().length).toBeGreaterThanOrEqual(2);
    expect(carrier.arrivals()[0]!.at).toBeGreaterThanOrEqual(Date.parse(at) - 5);
    const pause = await server.request('POST', `${A}/campaign/${created._id}/pause`);
    expect(pause.status, pause.text).toBe(200);
    const paused = await campaign(server, created._id);
    expect(paused.campaign).toMatchObject({ status: 'paused', pausedAt: expect.any(String) });
    // A call already slotted for its pace slot still goes (two at most: one slotted, one a dialer moved from claimed to
    // slotted while the pause took the queue back), each within a slot interval (510 ms at cps 2).
    await sleep(1200);
    const atPause = carrier.arrivals().length;
    await sleep(1500);
    expect(carrier.arrivals().length, 'no call after the pause').toBe(atPause);
    expect(atPause).toBeLessThan(recipients.length);
    const calls = await campaignCalls(server, created._id);
    expect(calls.length, 'queued calls were taken back').toBe(atPause);

    const resume = await server.request('POST', `${A}/campaign/${created._id}/start`);
    expect(resume.status).toBe(202);
    const done = await waitForCampaign(server, created._id, 'completed', 30_000);
    expect(done.metrics).toEqual({ total_participants: 8, contacts_called: 8, contacts_connected: 0, contacts_skipped_dnc: 0, contacts_voicemail: 0 });
    expect(done.events.map((e: any) => [e.eventAction, e.triggerSource])).toEqual([
      ['scheduled', 'user'], ['started', 'scheduler'], ['paused', 'user'], ['resumed', 'user'], ['completed', 'system'],
    ]);
    // maxRetries 0: everyone called exactly once, in audience order.
    expect(carrier.arrivals().map((a) => digits(a.to))).toEqual(recipients.map(digits));
  }, 60_000);
});

describe('campaigns after the telephony window', () => {
  const suite = sipServerForSuite('sqlite', { PARLEY_TELEPHONY_REWORK_DATE: '2020-01-01' });
  it('requires fromNumbers: an omitted list and the removed phoneNumberIds are 400', async () => {
    const server = suite.server;
    const agentId = await workflowAgent(server, 'Hello.');
    const audienceId = await audience(server, ['+15550610301']);
    const omitted = await server.request('POST', `${A}/campaign`, { body: { name: 'x', agentId, audienceId } });
    expect(omitted.status).toBe(400);
    expect(omitted.text).toMatch(/fromNumbers: required/);
    const legacy = await server.request('POST', `${A}/campaign`, { body: { name: 'x', agentId, audienceId, phoneNumberIds: ['x'] } });
    expect(legacy.status).toBe(400);
    expect(legacy.text).toMatch(/phoneNumberIds: unknown field/);
  });
});

describe('a campaign survives its server being killed', () => {
  it('the next server on the store finishes it: numbers keep rotating, nobody is called more often than maxRetries allows', async () => {
    const store = freshStore('sqlite');
    const carrier = await startSippCarrier({ answer: 486, timeoutS: 60 });
    const env = { PARLEY_SIP_HOST: STACK_HOST, PARLEY_OUTBOUND_LEASE_SECS: '2', PARLEY_CAMPAIGN_MINUTE_MS: '300' };
    const first = await startServer({ store, env });
    let second: TestServer | null = null;
    try {
      const agentId = await workflowAgent(first, 'Hello.');
      await outboundTrunk(first, carrier.port, ['+15550600301', '+15550600302'], 4);
      const recipients = Array.from({ length: 8 }, (_, i) => `+155506103${String(i).padStart(2, '0')}`);
      const audienceId = await audience(first, recipients);
      const created = await createCampaign(first, { agentId, audienceId, fromNumbers: ['+15550600301', '+15550600302'], maxRetries: 1, retryDelay: 1 });
      expect((await first.request('POST', `${A}/campaign/${created._id}/start`)).status).toBe(202);
      for (let i = 0; i < 200 && carrier.arrivals().length < 5; i++) await sleep(20);
      first.proc.kill('SIGKILL');
      await first.waitExit();
      const before = carrier.arrivals().length;
      expect(before).toBeGreaterThanOrEqual(5);
      expect(before).toBeLessThan(16);

      second = await startServer({ store, env: { ...env, PARLEY_BOOTSTRAP_KEY: first.key } });
      const done = await waitForCampaign(second, created._id, 'completed', 45_000, first.key);
      expect(done.metrics.total_participants).toBe(8);
      expect(done.metrics.contacts_called).toBe(8);
      const calls = await campaignCalls(second, created._id, first.key);
      const arrivals = byNumber(carrier.arrivals());
      for (const [i, r] of recipients.entries()) {
        const mine = calls.filter((c) => c.to === r);
        const got = arrivals.get(digits(r)) ?? [];
        // Two attempts each (busy, then the one retry), never more; an attempt its dying server may have rung is closed
        // as server_stopped and counts as one.
        expect(mine.length, r).toBe(2);
        expect(got.length, r).toBeLessThanOrEqual(mine.length);
        const stopped = mine.filter((c) => c.callFailureReason === 'server_stopped').length;
        expect(got.length, r).toBeGreaterThanOrEqual(mine.length - stopped);
        const from = i % 2 === 0 ? '+15550600301' : '+15550600302';
        for (const c of mine) expect(c.from, r).toBe(from);
        for (const a of got) expect(digits(a.from), r).toBe(digits(from));
      }
    } finally {
      await second?.stop();
      await first.stop();
      await carrier.stop();
      await store.cleanup();
    }
  }, 90_000);
});

describe.runIf(testDialects().includes('postgres'))('a campaign with two servers on one store', () => {
  it('is run once: both servers run their campaign runner and dialer, and each recipient is called once', async () => {
    const store = freshStore('postgres');
    const carrier = await startSippCarrier({ answer: 486, timeoutS: 60 });
    const env = { PARLEY_SIP_HOST: STACK_HOST, PARLEY_REDIS_URL: 'redis://127.0.0.1:6379' };
    const a = await startServer({ store, env });
    const b = await startServer({ store, env: { ...env, PARLEY_BOOTSTRAP_KEY: a.key } });
    try {
      const agentId = await workflowAgent(a, 'Hello.');
      await outboundTrunk(a, carrier.port, ['+15550600401'], 20);
      const recipients = Array.from({ length: 12 }, (_, i) => `+155506104${String(i).padStart(2, '0')}`);
      const audienceId = await audience(a, recipients);
      const created = await createCampaign(a, { agentId, audienceId, fromNumbers: ['+15550600401'], maxRetries: 0 });
      // Started through the second server: the first one's runner and dialer share the work.
      expect((await b.request('POST', `${A}/campaign/${created._id}/start`, { key: a.key })).status).toBe(202);
      const done = await waitForCampaign(a, created._id, 'completed', 30_000);
      expect(done.metrics).toEqual({ total_participants: 12, contacts_called: 12, contacts_connected: 0, contacts_skipped_dnc: 0, contacts_voicemail: 0 });
      expect(done.events.filter((e: any) => e.eventAction === 'completed')).toHaveLength(1);
      expect(carrier.arrivals().map((x) => digits(x.to)).sort()).toEqual(recipients.map(digits).sort());
      expect(await campaignCalls(a, created._id)).toHaveLength(12);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await carrier.stop();
      await store.cleanup();
    }
  }, 60_000);
});
