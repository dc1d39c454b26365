// Hosted-platform compatibility of calls: test-call fields and pinning over the returned host, call logs, the filtered
// GET /conversation, POST /conversation/search, and turn transitions in ms.
import { describe, expect, it } from 'vitest';
import http from 'node:http';
import { createOrgKey, sleep, testDialects, withStore, type TestServer } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, commit, createAgent, mainBranchId, putDraft } from './support/agents.js';
import { AgentCaller, endedCall } from './support/agent-client.js';
import { createCall, updateCall, type NewCall, type CallPatch } from '../control-plane/calls/calls.js';

const CALL_ID = /^CALL-\d{13}-[0-9a-f]{6}$/;
const graph = (text: string) => ({ nodes: [{ id: 'a', type: 'say', text }], edges: [] });
const LOG_KEYS = [
  '_id', 'callId', 'status', 'duration', 'from', 'to', 'type', 'agentId', 'recordingUrl', 'recordingDualUrl', 'disconnectionReason', 'retryCount', 'createdAt',
  'dispositionMetrics', 'callFailureReason', 'callCost', 'versionId', 'versionNumber', 'isTest', 'retryCallId', 'retryAttemptNumber', 'postCallAnalytics', 'turnLatencyMetrics',
].sort();

/** A chat session on a wct_ token at `host`: its call id and the agent's opening line; ends it with session.close. */
async function chatOnce(host: string, token: string): Promise<{ callId: string; opening: string }> {
  const c = new AgentCaller(`${host}?token=${encodeURIComponent(token)}`, 24000);
  await c.opened;
  const created = await c.waitFor((f) => f.type === 'session.created');
  const opening = (await c.agentTurn(0)).text as string;
  c.send({ type: 'session.close' });
  await c.closed;
  return { callId: created.call_id as string, opening };
}

/** POST with a Host header of our choosing (fetch always sends the real one). */
function postWithHost(server: TestServer, path: string, host: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: any }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: server.port, path, method: 'POST', headers: { host, authorization: `Bearer ${server.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe.each(testDialects())('hosted-platform call compatibility on %s', (dialect) => {
  const suite = serverForSuite(dialect);
  const req = (method: string, p: string, opts: Parameters<typeof suite.server.request>[2] = {}) => suite.server.request(method, `${A}${p}`, opts);

  it('test calls return conversationId, callId, token, roomName and host; includeDraft picks the draft or pins the head', async () => {
    const agent = await createAgent(suite.server, { workflowType: 'workflow_graph', workflowGraph: graph('Base hello.') });
    const main = await mainBranchId(suite.server, agent);
    const head = await commit(suite.server, agent, main, { workflowGraph: graph('Head hello.') });
    expect((await putDraft(suite.server, agent, main, { workflowGraph: graph('Draft hello.') })).status).toBe(200);
    const draftId = (await req('GET', `/agent/${agent}/branches/${main}/draft`)).body.data.latest._id as string;
    const host = `ws://127.0.0.1:${suite.server.port}/atoms/v1/agent/connect`;
    const tc = (body: unknown) => req('POST', `/agent/${agent}/branches/${main}/test-call`, { body });

    const pinned = await tc({ includeDraft: false, mode: 'chat' });
    expect(pinned.status, pinned.text).toBe(200);
    const callId = pinned.body.data.callId as string;
    expect(callId).toMatch(CALL_ID);
    expect(pinned.body.data).toEqual({
      conversationId: callId,
      callId,
      token: pinned.body.data.access_token,
      roomName: callId,
      host,
      access_token: expect.stringMatching(/^wct_/),
      expires_in: 30,
      sample_rate: 24000,
      mode: 'chat',
      target: 'revision',
      revisionId: head._id,
      draftId: null,
      branchId: main,
    });
    // The session opened on the returned host with the returned token is that call, on the head (not the open draft).
    const onHead = await chatOnce(pinned.body.data.host, pinned.body.data.token);
    expect(onHead).toEqual({ callId, opening: 'Head hello.' });
    expect(await endedCall(suite.server, callId)).toMatchObject({ callId, configSource: 'revision', revisionId: head._id, isTest: true, mode: 'chat' });

    // No includeDraft: the head as well; includeDraft true: the draft.
    const dflt = (await tc({ mode: 'chat' })).body.data;
    expect(dflt).toMatchObject({ target: 'revision', revisionId: head._id });
    expect((await chatOnce(dflt.host, dflt.token)).opening).toBe('Head hello.');
    const onDraft = await tc({ includeDraft: true, mode: 'chat' });
    expect(onDraft.body.data).toMatchObject({ target: 'draft', revisionId: draftId, draftId });
    const drafted = await chatOnce(onDraft.body.data.host, onDraft.body.data.token);
    expect(drafted).toEqual({ callId: onDraft.body.data.callId, opening: 'Draft hello.' });
    expect(await endedCall(suite.server, drafted.callId)).toMatchObject({ configSource: 'draft', revisionId: draftId });

    // v1: the version and draft test calls carry the same fields and pin the same way.
    for (const [path, opening] of [[`/agent/${agent}/versions/${head._id}/test-call`, 'Head hello.'], [`/agent/${agent}/drafts/${draftId}/test-call`, 'Draft hello.']] as const) {
      const v1 = await req('POST', path, { body: { mode: 'chat' } });
      expect(v1.status, v1.text).toBe(201);
      expect(v1.body.data).toMatchObject({ conversationId: v1.body.data.callId, callId: expect.stringMatching(CALL_ID), token: v1.body.data.access_token, roomName: v1.body.data.callId, host });
      expect(await chatOnce(v1.body.data.host, v1.body.data.token)).toEqual({ callId: v1.body.data.callId, opening });
    }

    // host follows the Host header and the proxy's scheme.
    const proxied = await postWithHost(suite.server, `${A}/agent/${agent}/branches/${main}/test-call`, 'voice.example.com:8443', { 'x-forwarded-proto': 'https' }, {});
    expect(proxied.status).toBe(200);
    expect(proxied.body.data).toMatchObject({ host: 'wss://voice.example.com:8443/atoms/v1/agent/connect', mode: 'webcall', target: 'revision' });
    const plain = await postWithHost(suite.server, `${A}/agent/${agent}/versions/${head._id}/test-call`, 'voice.example.com', {}, {});
    expect(plain.body.data.host).toBe('ws://voice.example.com/atoms/v1/agent/connect');

    // Bad input names the field; includeDraft with no open draft is 404.
    const bad = await tc({ includeDraft: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ status: false, errors: ['includeDraft: must be a boolean'] });
    const both = await tc({ includeDraft: true, revisionId: head._id });
    expect(both.status).toBe(400);
    expect(both.body.errors[0]).toMatch(/^includeDraft:.*revisionId/);
    expect((await tc({ includeDraft: false, target: 'draft' })).body.errors).toEqual(['includeDraft: false contradicts target draft']);
    expect((await req('DELETE', `/agent/${agent}/branches/${main}/draft`)).status).toBe(200);
    const none = await tc({ includeDraft: true });
    expect(none.status).toBe(404);
    expect(none.body).toEqual({ status: false, errors: ['No open draft on this branch'] });
  }, 60_000);

  it('GET /agent/{id}/call-logs: success, callLogs newest first with ms durations, page and offset; 404, 403, 400', async () => {
    const agent = await createAgent(suite.server, { name: 'Logs' });
    const other = await createAgent(suite.server, { name: 'Other' });
    const orgId = (await req('GET', `/agent/${agent}`)).body.data.organization as string;
    const made = await withStore(suite.store, async (db) => {
      const base: NewCall = { orgId, agentId: agent, configSource: 'live', type: 'webcall', mode: 'chat', isTest: false, variables: {}, voiceConfig: {} };
      const done = await createCall(db, { ...base, type: 'telephony_outbound', fromNumber: '+15550100000', toNumber: '+15550199999' });
      await updateCall(db, done.callId, { status: 'completed', durationS: 12.3456, endedAt: new Date().toISOString(), endReason: 'ended' });
      await sleep(5);
      const running = await createCall(db, base);
      await sleep(5);
      const failed = await createCall(db, base);
      await updateCall(db, failed.callId, { status: 'failed', durationS: 0.4, endReason: 'error' });
      await createCall(db, { ...base, agentId: other });
      const rows = await db.selectFrom('calls').select(['call_id', 'created_at']).where('agent_id', '=', agent).execute();
      return { done: done.callId, running: running.callId, failed: failed.callId, created: new Map(rows.map((r) => [r.call_id, r.created_at])) };
    });

    const res = await req('GET', `/agent/${agent}/call-logs`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        callLogs: [
          { callId: made.failed, callStatus: 'failed', callType: 'webcall', fromNumber: null, toNumber: null, createdAt: made.created.get(made.failed), callDuration: 400 },
          { callId: made.running, callStatus: 'in_progress', callType: 'webcall', fromNumber: null, toNumber: null, createdAt: made.created.get(made.running), callDuration: 0 },
          { callId: made.done, callStatus: 'completed', callType: 'telephony_outbound', fromNumber: '+15550100000', toNumber: '+15550199999', createdAt: made.created.get(made.done), callDuration: 12346 },
        ],
        totalCount: 3,
        page: 1,
        offset: 10,
      },
    });
    const second = await req('GET', `/agent/${agent}/call-logs?page=2&offset=2`);
    expect(second.body).toEqual({ success: true, data: { callLogs: [expect.objectContaining({ callId: made.done })], totalCount: 3, page: 2, offset: 2 } });
    expect((await req('GET', `/agent/${agent}/call-logs?page=3&offset=2`)).body.data.callLogs).toEqual([]);

    // The agent read is a different route (not shadowed either way).
    expect((await req('GET', `/agent/${agent}`)).body.data._id).toBe(agent);
    const unknown = await req('GET', '/agent/0123456789abcdef01234567/call-logs');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ status: false, errors: ['No agent found'] });
    const otherKey = await createOrgKey(suite.store, 'logs-other', 'logs-other-org');
    const foreign = await req('GET', `/agent/${agent}/call-logs`, { key: otherKey });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ status: false, errors: ['This API key has no access to this agent'] });
    for (const q of ['page=0', 'offset=0', 'offset=101', 'page=x']) {
      const bad = await req('GET', `/agent/${agent}/call-logs?${q}`);
      expect(bad.status, q).toBe(400);
      expect(bad.body.errors[0]).toMatch(new RegExp(`^${q.split('=')[0]}:`));
    }
    expect((await req('GET', `/agent/${agent}/call-logs`, { key: null })).status).toBe(401);
  });

  it('GET /conversation filters, sorts and pages call logs of exactly the wire shape; POST /conversation/search by call ids', async () => {
    // A separate organization, so the list holds exactly these calls.
    const key = await createOrgKey(suite.store, 'filters', 'filters-org');
    const list = (q: string) => req('GET', `/conversation${q ? `?${q}` : ''}`, { key });
    const ids = async (q: string) => {
      const res = await list(q);
      expect(res.status, `${q}: ${res.text}`).toBe(200);
      return (res.body.data.logs as { callId: string }[]).map((l) => l.callId);
    };
    const badParam = async (q: string, name: string) => {
      const res = await list(q);
      expect(res.status, q).toBe(400);
      expect(res.body.status).toBe(false);
      expect(res.body.errors[0], q).toMatch(new RegExp(`^${name}:`));
    };

    const a1 = await createAgent(suite.server, { name: 'One', workflowType: 'workflow_graph', workflowGraph: graph('One hello.') }, key);
    const a2 = await createAgent(suite.server, { name: 'Two', workflowType: 'workflow_graph', workflowGraph: graph('Two hello.') }, key);
    const main1 = (await req('GET', `/agent/${a1}/branches`, { key })).body.data.branches[0].branch._id as string;
    expect((await req('PUT', `/agent/${a1}/branches/${main1}/draft`, { key, body: { workflowGraph: graph('One, committed.') } })).status).toBe(200);
    const r1 = (await req('POST', `/agent/${a1}/branches/${main1}/draft/publish`, { key })).body.data.revision;
    expect(r1.revisionNumber).toBe(1);

    // One real call: a chat session on a2 (register-call token), ended by the client.
    const reg = await req('POST', '/conversation/register-call', { key, body: { agent_id: a2, mode: 'chat' } });
    const live = await chatOnce(`ws://127.0.0.1:${suite.server.port}/atoms/v1/agent/connect`, reg.body.data.access_token);
    expect(live.opening).toBe('Two hello.');
    for (let i = 0; i < 100 && (await req('GET', `/conversation/${live.callId}`, { key })).body.data.status === 'in_progress'; i++) await sleep(100);

    // Four more inserted through the store, for durations, statuses, types, numbers and dates hard to make live.
    const orgId = (await req('GET', `/agent/${a1}`, { key })).body.data.organization as string;
    const turns = [{ turn: 1, e2eMs: 640, userEnd: '2020-01-02T10:00:02.000Z', botStart: '2020-01-02T10:00:02.640Z' }];
    const analytics = {
      summary: 'Asked about hours.',
      dispositionMetrics: [
        { identifier: 'topic', value: 'hours', confidence: 0.9 },
        { identifier: 'resolved', value: true, confidence: 1 },
        { identifier: 'seats', value: 3, confidence: 1 },
        { identifier: 'callback_time', value: null, confidence: 0 },
      ],
    };
    const insert = (input: Partial<NewCall>, patch: CallPatch, createdAt: string) =>
      withStore(suite.store, async (db) => {
        const made = await createCall(db, { orgId, agentId: a1, configSource: 'live', type: 'webcall', mode: 'webcall', isTest: false, variables: {}, voiceConfig: {}, ...input });
        if (Object.keys(patch).length) await updateCall(db, made.callId, patch);
        await db.updateTable('calls').set({ created_at: createdAt, started_at: createdAt }).where('call_id', '=', made.callId).execute();
        return made;
      });
    const c1 = await insert({ fromNumber: '+15550001111', revisionId: r1._id, configSource: 'revision', branchId: main1 }, { status: 'completed', durationS: 10, endReason: 'client_requested' }, '2020-01-01T10:00:00.000Z');
    const c2 = await insert(
      { type: 'telephony_inbound', fromNumber: '+15550002222', toNumber: '+15559990000', isTest: true },
      { status: 'completed', durationS: 45, endReason: 'ended', metrics: { turns, analytics } },
      '2020-01-02T10:00:00.000Z',
    );
    const c3 = await insert({ agentId: a2, type: 'telephony_outbound', toNumber: '+15550003333' }, { status: 'failed', durationS: 90, endReason: 'error' }, '2020-01-03T10:00:00.000Z');
    const c4 = await insert({ agentId: a2 }, {}, '2020-01-04T10:00:00.000Z');
    const c5 = live.callId;
    const [k1, k2, k3, k4] = [c1.callId, c2.callId, c3.callId, c4.callId];

    // Exact entry shape.
    const all = await list('');
    expect(all.status, all.text).toBe(200);
    expect(all.body.data.pagination).toEqual({ total: 5, page: 1, limit: 20, hasMore: false, totalPages: 1 });
    expect(all.body.data.logs.map((l: any) => l.callId)).toEqual([c5, k4, k3, k2, k1]);
    for (const log of all.body.data.logs) expect(Object.keys(log).sort()).toEqual(LOG_KEYS);
    const byId = new Map(all.body.data.logs.map((l: any) => [l.callId, l]));
    expect(byId.get(k1)).toEqual({
      _id: c1.id, callId: k1, status: 'completed', duration: 10, from: '+15550001111', to: null, type: 'webcall', agentId: a1, recordingUrl: null, recordingDualUrl: null,
      disconnectionReason: 'client_requested', retryCount: 0, createdAt: '2020-01-01T10:00:00.000Z', dispositionMetrics: {}, callFailureReason: null, callCost: 0,
      versionId: r1._id, versionNumber: 1, isTest: false, retryCallId: null, retryAttemptNumber: 0, postCallAnalytics: null, turnLatencyMetrics: null,
    });
    expect(byId.get(k2)).toMatchObject({ type: 'telephony_inbound', to: '+15559990000', isTest: true, versionId: null, versionNumber: null, postCallAnalytics: analytics });
    // The SDK's dispositionMetrics: identifier -> value as text (undecided metrics left out); postCallAnalytics keeps the detail.
    expect((byId.get(k2) as any).dispositionMetrics).toEqual({ topic: 'hours', resolved: 'true', seats: '3' });
    // Transitions are ms from the start of the call, in the list and in the single read.
    const latency = { turns: 1, avgLatency: 640, medianLatency: 640, minLatency: 640, maxLatency: 640, latencies: [640], transitions: [{ turn: 1, user_end: 2000, bot_start: 2640, latency: 640 }] };
    expect((byId.get(k2) as any).turnLatencyMetrics).toMatchObject(latency);
    expect((await req('GET', `/conversation/${k2}`, { key })).body.data.turnLatencyMetrics).toMatchObject(latency);
    expect(byId.get(k3)).toMatchObject({ status: 'failed', callFailureReason: 'error', disconnectionReason: 'error', agentId: a2 });
    expect(byId.get(c5)).toMatchObject({ status: 'completed', type: 'webcall', agentId: a2, disconnectionReason: 'client_requested', versionId: null });
    expect((byId.get(c5) as any).duration).toBeLessThan(30);

    // Each filter, matching and not.
    expect(await ids(`agentIds=${a1}`)).toEqual([k2, k1]);
    expect(await ids(`agentIds=${a1},${a2}`)).toEqual([c5, k4, k3, k2, k1]);
    expect(await ids('agentIds=0123456789abcdef01234567')).toEqual([]);
    expect(await ids(`agentId=${a2}`)).toEqual([c5, k4, k3]);
    expect(await ids('campaignIds=0123456789abcdef01234567')).toEqual([]);
    expect(await ids('callTypes=telephony_inbound,telephony_outbound')).toEqual([k3, k2]);
    expect(await ids('callTypes=webcall')).toEqual([c5, k4, k1]);
    expect(await ids('search=0002222')).toEqual([k2]);
    expect(await ids('search=9990000')).toEqual([k2]);
    expect(await ids(`search=${k3.toLowerCase()}`)).toEqual([k3]);
    for (const miss of ['nomatch', '%25', '_']) expect(await ids(`search=${miss}`), miss).toEqual([]);
    expect(await ids('statusFilter=failed')).toEqual([k3]);
    expect(await ids('statusFilter=completed,in_progress')).toEqual([c5, k4, k2, k1]);
    expect(await ids('disconnectReasonFilter=error')).toEqual([k3]);
    expect(await ids('disconnectReasonFilter=ended,client_requested')).toEqual([c5, k2, k1]);
    expect(await ids('disconnectReasonFilter=nope')).toEqual([]);
    expect(await ids('callAttemptFilter=first')).toEqual([c5, k4, k3, k2, k1]);
    expect(await ids('callAttemptFilter=retry')).toEqual([]);
    expect(await ids('durationFilter=%3C30')).toEqual([c5, k1]);
    expect(await ids('durationFilter=30-60')).toEqual([k2]);
    expect(await ids('durationFilter=%3E60')).toEqual([k3]);
    expect(await ids('durationFilter=%3C30,%3E60')).toEqual([c5, k3, k1]);
    expect(await ids(`versionFilter=${r1._id}`)).toEqual([k1]);
    expect(await ids('versionFilter=0123456789abcdef01234567')).toEqual([]);
    expect(await ids('dateFrom=2020-01-02&dateTo=2020-01-03')).toEqual([k3, k2]);
    expect(await ids('dateFrom=2020-01-02T10:00:00Z&dateTo=2020-01-02T10:00:00Z')).toEqual([k2]);
    expect(await ids('dateTo=2020-01-02T09:59:59Z')).toEqual([k1]);
    expect(await ids('dateFrom=2020-01-05')).toEqual([c5]);
    expect(await ids(`agentIds=${a1}&callTypes=webcall&statusFilter=completed`)).toEqual([k1]);

    // Sorting: createdAt (default desc), duration (running calls last either way), status.
    expect(await ids('sortBy=createdAt&sortOrder=asc')).toEqual([k1, k2, k3, k4, c5]);
    expect(await ids('sortBy=duration&sortOrder=asc')).toEqual([c5, k1, k2, k3, k4]);
    expect(await ids('sortBy=duration')).toEqual([k3, k2, k1, c5, k4]);
    expect(await ids('sortBy=status&sortOrder=asc')).toEqual([c5, k2, k1, k3, k4]);

    // Pages.
    const p1 = await list('limit=2');
    expect(p1.body.data.pagination).toEqual({ total: 5, page: 1, limit: 2, hasMore: true, totalPages: 3 });
    expect(p1.body.data.logs.map((l: any) => l.callId)).toEqual([c5, k4]);
    const p3 = await list('limit=2&page=3');
    expect(p3.body.data).toEqual({ logs: [expect.objectContaining({ callId: k1 })], pagination: { total: 5, page: 3, limit: 2, hasMore: false, totalPages: 3 } });

    // Bad values: a 400 naming the parameter.
    await badParam('sortBy=name', 'sortBy');
    await badParam('sortOrder=up', 'sortOrder');
    await badParam('callTypes=webcall,sip', 'callTypes');
    await badParam('statusFilter=done', 'statusFilter');
    await badParam('callAttemptFilter=second', 'callAttemptFilter');
    await badParam('durationFilter=30to60', 'durationFilter');
    await badParam('agentIds=nope', 'agentIds');
    await badParam('campaignIds=nope', 'campaignIds');
    await badParam('versionFilter=v1', 'versionFilter');
    await badParam('dateFrom=yesterday', 'dateFrom');
    await badParam('dateTo=2020-13-45', 'dateTo');
    await badParam('dateFrom=2020-01-03&dateTo=2020-01-02', 'dateFrom');
    await badParam(`agentIds=${Array.from({ length: 101 }, (_, i) => i.toString(16).padStart(24, '0')).join(',')}`, 'agentIds');
    await badParam('limit=0', 'limit');

    // POST /conversation/search: the caller's calls among the ids, in the order asked.
    const theirs = await createAgent(suite.server);
    const theirOrg = (await req('GET', `/agent/${theirs}`)).body.data.organization as string;
    const outsider = await withStore(suite.store, async (db) =>
      (await createCall(db, { orgId: theirOrg, agentId: theirs, configSource: 'live', type: 'webcall', mode: 'chat', isTest: false, variables: {}, voiceConfig: {} })).callId,
    );
    const search = (body: unknown) => req('POST', '/conversation/search', { key, body });
    const found = await search({ callIds: [k3, k1, 'CALL-0000000000000-000000', outsider, k3] });
    expect(found.status, found.text).toBe(200);
    expect(found.body.data.total).toBe(2);
    expect(found.body.data.requestedCount).toBe(5);
    expect(found.body.data.logs).toEqual([byId.get(k3), byId.get(k1)]);
    expect(Object.keys(found.body.data).sort()).toEqual(['logs', 'requestedCount', 'total']);
    for (const body of [{}, { callIds: [] }, { callIds: [1] }, { callIds: 'x' }, [k1], { callIds: Array.from({ length: 101 }, () => k1) }]) {
      const res = await search(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.errors[0]).toMatch(/^callIds:|JSON object/);
    }
    expect((await req('POST', '/conversation/search', { body: { callIds: [k1] } })).body.data).toEqual({ logs: [], total: 0, requestedCount: 1 });
  }, 60_000);
});
