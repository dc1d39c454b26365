// Analytics (issue 35 item 6): the hosted reference's `/analytics/*` routes over call records, on both stores. One real
// chat call (through the agent WebSocket) and calls written through the store's own call functions at chosen times and
// outcomes; exact aggregates, organization isolation, and a 400 naming each bad parameter.
import { beforeAll, describe, expect, it } from 'vitest';
import { createOrgKey, sleep, testDialects, withStore } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, createAgent } from './support/agents.js';
import { AgentCaller } from './support/agent-client.js';
import { createCall, updateCall, type CallPatch, type CallStatus, type CallType } from '../control-plane/calls/calls.js';
import { insertQueuedCall } from '../control-plane/telephony/outbound.js';

const graph = (text: string) => ({ nodes: [{ id: 'a', type: 'say', text }], edges: [] });
const OURS = '+15550000001';
const OURS_2 = '+15550000002';

interface Seed {
  at: string;
  agent: 'a1' | 'a2' | 'x';
  type: CallType;
  from?: string;
  to?: string;
  status: CallStatus;
  durationS?: number;
  answeredBy?: string;
  endReason?: string;
}

/** Calls at chosen times (UTC) and outcomes; the numbers in comments are the seeds' names in the expectations below. */
const SEEDS: Seed[] = [
  /* 1 */ { at: '2025-03-03T10:05:00.000Z', agent: 'a1', type: 'telephony_outbound', from: OURS, to: '+15551110001', status: 'completed', durationS: 20, endReason: 'client_requested' },
  /* 2 */ { at: '2025-03-03T10:20:00.000Z', agent: 'a1', type: 'telephony_outbound', from: OURS, to: '+15551110002', status: 'no_answer', durationS: 0, endReason: 'ringing_timeout' },
  /* 3 */ { at: '2025-03-03T11:32:00.000Z', agent: 'a1', type: 'telephony_outbound', from: OURS, to: '+15551110001', status: 'completed', durationS: 15, answeredBy: 'voicemail', endReason: 'voicemail' },
  /* 4 */ { at: '2025-03-03T11:30:00.000Z', agent: 'a2', type: 'telephony_inbound', from: '+15552220001', to: OURS_2, status: 'completed', durationS: 400, endReason: 'ended' },
  /* 5 */ { at: '2025-03-04T09:00:00.000Z', agent: 'a1', type: 'telephony_outbound', from: OURS, to: '+15551110002', status: 'completed', durationS: 60, endReason: 'ended' },
  /* 6 */ { at: '2025-03-04T09:10:00.000Z', agent: 'a2', type: 'webcall', status: 'failed', durationS: 5, endReason: 'error' },
  /* 7 */ { at: '2025-03-04T09:15:00.000Z', agent: 'a2', type: 'telephony_outbound', from: OURS_2, to: '+15551110003', status: 'cancelled', durationS: 0, endReason: 'canceled' },
  /* 8 */ { at: '2025-03-10T14:00:00.000Z', agent: 'a1', type: 'telephony_outbound', from: OURS, to: '+15551110003', status: 'failed', durationS: 0, endReason: 'busy' },
  /* 9 */ { at: '2025-03-10T14:30:00.000Z', agent: 'a1', type: 'webcall', status: 'in_progress' },
  /* previous period */ { at: '2025-02-28T08:00:00.000Z', agent: 'a1', type: 'telephony_outbound', from: OURS, to: '+15551110004', status: 'completed', durationS: 30, endReason: 'ended' },
  /* another organization's, same day */ { at: '2025-03-03T10:06:00.000Z', agent: 'x', type: 'telephony_outbound', from: OURS, to: '+15551110001', status: 'completed', durationS: 100, endReason: 'ended' },
];
const RANGE = 'dateFrom=2025-03-03&dateTo=2025-03-10';

describe.each(testDialects())('analytics on %s', (dialect) => {
  const suite = serverForSuite(dialect);
  let key = '';
  let otherKey = '';
  let a1 = '';
  let a2 = '';
  let x = '';
  let orgId = '';
  let callIds: string[] = [];
  let live = { callId: '', durationMs: 0 };
  const get = (p: string, k = key) => suite.server.request('GET', `${A}/analytics/${p}`, { key: k });
  const data = async (p: string, k = key) => {
    const res = await get(p, k);
    expect(res.status, `${p}: ${res.text}`).toBe(200);
    expect(res.body.success, p).toBe(true);
    return res.body.data;
  };

  beforeAll(async () => {
    [key, otherKey] = await Promise.all([createOrgKey(suite.store, 'analytics', 'analytics-org'), createOrgKey(suite.store, 'analytics-other', 'analytics-other-org')]);
    a1 = await createAgent(suite.server, { name: 'Sales', workflowType: 'workflow_graph', workflowGraph: graph('Hello from sales.') }, key);
    a2 = await createAgent(suite.server, { name: 'Support', workflowType: 'workflow_graph', workflowGraph: graph('Hello from support.') }, key);
    x = await createAgent(suite.server, { name: 'Theirs' }, otherKey);
    orgId = (await suite.server.request('GET', `${A}/agent/${a1}`, { key })).body.data.organization;
    const otherOrg = (await suite.server.request('GET', `${A}/agent/${x}`, { key: otherKey })).body.data.organization;

    // One real call: a chat session on a1, ended by the client.
    const reg = await suite.server.request('POST', `${A}/conversation/register-call`, { key, body: { agent_id: a1, mode: 'chat' } });
    expect(reg.status, reg.text).toBe(201);
    const c = new AgentCaller(`ws://127.0.0.1:${suite.server.port}${A}/agent/connect?token=${encodeURIComponent(reg.body.data.access_token)}`, 24000);
    await c.opened;
    const created = await c.waitFor((f) => f.type === 'session.created');
    await c.agentTurn(0);
    c.send({ type: 'session.close' });
    await c.closed;
    live.callId = created.call_id as string;
    for (let i = 0; i < 100; i++) {
      const rec = (await suite.server.request('GET', `${A}/conversation/${live.callId}`, { key })).body.data;
      if (rec.status !== 'in_progress') {
        expect(rec.status).toBe('completed');
        live.durationMs = Math.round(rec.duration * 1000);
        break;
      }
      await sleep(100);
    }

    // The seeds, through the store's own call functions; then their times set as if made then.
    callIds = await withStore(suite.store, async (db) => {
      const made: string[] = [];
      for (const s of SEEDS) {
        const agentId = s.agent === 'a1' ? a1 : s.agent === 'a2' ? a2 : x;
        const call = await createCall(db, {
          orgId: s.agent === 'x' ? otherOrg : orgId,
          agentId,
          configSource: 'live',
          type: s.type,
          mode: 'webcall',
          isTest: false,
          variables: {},
          voiceConfig: {},
          fromNumber: s.from ?? null,
          toNumber: s.to ?? null,
        });
        const ended = s.durationS === undefined ? null : new Date(Date.parse(s.at) + s.durationS * 1000).toISOString();
        const patch: CallPatch = { status: s.status, ...(ended ? { endedAt: ended, durationS: s.durationS, endReason: s.endReason ?? null } : {}), ...(s.answeredBy ? { answeredBy: s.answeredBy } : {}) };
        if (ended) patch.transcript = [{ role: 'agent', content: 'Hello there.', timestamp: s.at }, { role: 'user', content: 'Hi.', timestamp: new Date(Date.parse(s.at) + 2000).toISOString() }];
        await updateCall(db, call.callId, patch);
        await db.updateTable('calls').set({ created_at: s.at, started_at: s.at }).where('call_id', '=', call.callId).execute();
        made.push(call.callId);
      }
      return made;
    });
  }, 60_000);

  it('summary: KPIs of the period against the previous one of the same length; cost null', async () => {
    expect(await data(`summary?${RANGE}`)).toEqual({
      orgId,
      totalCalls: { current: 9, previous: 1, percentChange: 800 },
      pickupRate: { current: 42.86, previous: 100, percentChange: -57.14 },
      avgDurationMs: { current: 100000, previous: 30000, percentChange: 233.33 },
      medianDurationMs: 20000,
      totalDurationMs: { current: 500000, previous: 30000, percentChange: 1566.67 },
      uniqueUsersReached: { current: 3, previous: 1, percentChange: 200 },
      totalCost: { current: null, previous: null, percentChange: null },
      period: { from: '2025-03-03', to: '2025-03-10' },
      previousPeriod: { from: '2025-02-23', to: '2025-03-02' },
    });
    // The SDK's snake_case parameters, and filters.
    expect((await data('summary?date_from=2025-03-03&date_to=2025-03-10')).totalCalls.current).toBe(9);
    expect((await data(`summary?${RANGE}&agentId=${a2}`)).totalCalls).toEqual({ current: 3, previous: 0, percentChange: null });
    expect((await data(`summary?${RANGE}&agent_id=${a1},${a2}`)).totalCalls.current).toBe(9);
    expect((await data(`summary?${RANGE}&callType=outbound`)).totalCalls.current).toBe(6);
    expect((await data(`summary?${RANGE}&call_type=inbound,webcall`)).totalCalls.current).toBe(3);
    // A date-time dateTo is inclusive: up to 2025-03-03T11:30 takes seeds 1, 2 and 4.
    expect((await data('summary?dateFrom=2025-03-03T00:00:00Z&dateTo=2025-03-03T11:30:00Z')).totalCalls.current).toBe(3);
  });

  it('time series: calls per day, volume and outcomes with every day of the period', async () => {
    const days = ['2025-03-03', '2025-03-04', '2025-03-05', '2025-03-06', '2025-03-07', '2025-03-08', '2025-03-09', '2025-03-10'];
    const byDay = await data(`call-counts-by-day?${RANGE}`);
    expect(byDay).toEqual({ orgId, callCountsByDay: days.map((date, i) => ({ date, count: [4, 3, 0, 0, 0, 0, 0, 2][i] })), period: { from: '2025-03-03', to: '2025-03-10' } });
    const zero = { answered: 0, voicemail: 0, noAnswer: 0, failed: 0, cancelled: 0, inProgress: 0, total: 0 };
    const outcomes = [
      { ...zero, answered: 2, voicemail: 1, noAnswer: 1, total: 4 },
      { ...zero, answered: 1, failed: 1, cancelled: 1, total: 3 },
      zero, zero, zero, zero, zero,
      { ...zero, failed: 1, inProgress: 1, total: 2 },
    ];
    const o = await data(`call-outcomes-timeseries?${RANGE}`);
    expect(o.dataPoints).toEqual(days.map((date, i) => ({ date, ...outcomes[i] })));
    expect(o.totals).toEqual({ answered: 3, voicemail: 1, noAnswer: 1, failed: 2, cancelled: 1, inProgress: 1, total: 9 });
    const v = await data(`call-volume-timeseries?${RANGE}`);
    expect(v.dataPoints[0]).toEqual({ date: '2025-03-03', ...outcomes[0], pickupRate: 50, totalDurationMs: 435000, avgDurationMs: 145000 });
    expect(v.dataPoints[1]).toEqual({ date: '2025-03-04', ...outcomes[1], pickupRate: 50, totalDurationMs: 65000, avgDurationMs: 32500 });
    expect(v.dataPoints[2]).toEqual({ date: '2025-03-05', ...zero, pickupRate: null, totalDurationMs: 0, avgDurationMs: null });
    expect(v.dataPoints[7]).toEqual({ date: '2025-03-10', ...outcomes[7], pickupRate: 0, totalDurationMs: 0, avgDurationMs: null });
  });

  it('duration stats: mean, interpolated percentiles and short/long shares of the calls that talked', async () => {
    expect(await data(`duration-stats?${RANGE}`)).toEqual({
      orgId,
      avgDurationMs: 100000,
      medianDurationMs: 20000,
      p90DurationMs: 264000,
      p95DurationMs: 332000,
      shortCallsPercent: 60,
      longCallsPercent: 20,
      totalCalls: 5,
      totalDurationMs: 500000,
      shortCallThresholdMs: 30000,
      longCallThresholdMs: 300000,
      period: { from: '2025-03-03', to: '2025-03-10' },
    });
    const none = await data('duration-stats?dateFrom=2025-03-05&dateTo=2025-03-06');
    expect(none).toMatchObject({ avgDurationMs: null, medianDurationMs: null, p90DurationMs: null, shortCallsPercent: null, totalCalls: 0, totalDurationMs: 0 });
  });

  it('pickup rate by number and number trends: our side of each phone call', async () => {
    const n = await data(`pickup-rate-by-number?${RANGE}`);
    expect(n.numbers).toEqual([
      { phoneNumber: OURS, totalCalls: 5, answeredCalls: 2, pickupRate: 40, answered: 2, voicemail: 1, noAnswer: 1, failed: 1, cancelled: 0, inProgress: 0, total: 5, avgDurationMs: 31667 },
      { phoneNumber: OURS_2, totalCalls: 2, answeredCalls: 1, pickupRate: 100, answered: 1, voicemail: 0, noAnswer: 0, failed: 0, cancelled: 1, inProgress: 0, total: 2, avgDurationMs: 400000 },
    ]);
    const t = await data(`phone-number-trends?${RANGE}`);
    expect(t.trends.map((x: any) => [x.phoneNumber, x.totalCalls, x.dataPoints.length])).toEqual([[OURS, 5, 8], [OURS_2, 2, 8]]);
    expect(t.trends[0].dataPoints.slice(0, 2)).toEqual([
      { date: '2025-03-03', totalCalls: 3, answeredCalls: 1, pickupRate: 33.33 },
      { date: '2025-03-04', totalCalls: 1, answeredCalls: 1, pickupRate: 100 },
    ]);
    expect(t.trends[0].dataPoints[7]).toEqual({ date: '2025-03-10', totalCalls: 1, answeredCalls: 0, pickupRate: 0 });
  });

  it('hourly performance, agent performance (sorted, limited) and weekly trends', async () => {
    const h = await data(`hourly-performance?${RANGE}`);
    expect(h.hours).toHaveLength(24);
    expect(h.hours.map((x: any) => x.totalCalls)).toEqual(Array.from({ length: 24 }, (_, i) => ({ 9: 3, 10: 2, 11: 2, 14: 2 })[i] ?? 0));
    expect(h.hours[11]).toMatchObject({ hour: 11, totalCalls: 2, answeredCalls: 1, voicemail: 1, pickupRate: 50, avgDurationMs: 207500, totalDurationMs: 415000 });

    const ag = await data(`agent-performance?${RANGE}`);
    const one = { agentId: a1, agentName: 'Sales', totalCalls: 6, answeredCalls: 2, pickupRate: 40, avgDurationMs: 31667, totalDurationMs: 95000, answered: 2, voicemail: 1, noAnswer: 1, failed: 1, cancelled: 0, inProgress: 1, total: 6 };
    const two = { agentId: a2, agentName: 'Support', totalCalls: 3, answeredCalls: 1, pickupRate: 50, avgDurationMs: 202500, totalDurationMs: 405000, answered: 1, voicemail: 0, noAnswer: 0, failed: 1, cancelled: 1, inProgress: 0, total: 3 };
    expect(ag).toEqual({ orgId, agents: [one, two], totalAgents: 2, period: { from: '2025-03-03', to: '2025-03-10' } });
    expect((await data(`agent-performance?${RANGE}&sortBy=pickupRate`)).agents.map((a: any) => a.agentId)).toEqual([a2, a1]);
    expect((await data(`agent-performance?${RANGE}&sort_by=avgDuration&sort_order=asc&limit=1`)).agents).toEqual([one]);

    const w = await data(`weekly-trends?${RANGE}`);
    expect(w.weeks).toEqual([
      { weekStart: '2025-03-03', weekEnd: '2025-03-09', totalCalls: 7, answeredCalls: 3, pickupRate: 50, avgDurationMs: 100000, p50DurationMs: 20000, p90DurationMs: 264000, totalDurationMs: 500000 },
      { weekStart: '2025-03-10', weekEnd: '2025-03-16', totalCalls: 2, answeredCalls: 0, pickupRate: 0, avgDurationMs: null, p50DurationMs: null, p90DurationMs: null, totalDurationMs: 0 },
    ]);
  });

  it('attempt cohort: pickup by attempt number to the same number, cumulative and marginal', async () => {
    expect(await data(`attempt-cohort?${RANGE}`)).toEqual({
      orgId,
      cohorts: [
        { attemptNumber: 1, totalCalls: 3, answeredCalls: 1, pickupRate: 33.33, cumulativeNumbersReached: 1, cumulativePickupRate: 33.33, marginalGain: 33.33 },
        { attemptNumber: 2, totalCalls: 2, answeredCalls: 1, pickupRate: 50, cumulativeNumbersReached: 2, cumulativePickupRate: 66.67, marginalGain: 33.34 },
      ],
      totalUniqueNumbers: 3,
      maxAttemptsSeen: 2,
      avgAttemptsToPickup: 1.5,
      period: { from: '2025-03-03', to: '2025-03-10' },
    });
  });

  it('one day: summary with calls still up, call starts per minute, concurrency minute by minute (per agent on request)', async () => {
    expect(await data('daily-call-summary?date=2025-03-03')).toEqual({
      date: '2025-03-03',
      totalCalls: 4,
      answeredCalls: 2,
      unansweredCalls: 2,
      failedCalls: 0,
      cancelledCalls: 0,
      voicemailCalls: 1,
      pickupRate: 50,
      inProgressCalls: 0,
      inQueueCalls: 0,
      totalDurationMs: 435000,
      avgDurationMs: 145000,
    });
    expect(await data('daily-call-summary?date=2025-03-10')).toMatchObject({ totalCalls: 2, failedCalls: 1, inProgressCalls: 1, pickupRate: 0 });

    const starts = await data('call-start-distribution?date=2025-03-03');
    expect(starts.dataPoints).toHaveLength(1440);
    expect(starts.dataPoints.filter((p: any) => p.count)).toEqual([
      { minute: '10:05', count: 1 },
      { minute: '10:20', count: 1 },
      { minute: '11:30', count: 1 },
      { minute: '11:32', count: 1 },
    ]);
    expect(starts.totalCalls).toBe(4);
    expect((await data(`call-start-distribution?date=2025-03-03&agentId=${a2}`)).totalCalls).toBe(1);

    // Seed 1 talks in 10:05; seed 4 from 11:30 to 11:36:40; seed 3 in 11:32 (two at once). Unanswered calls never count.
    const c = await data('concurrency?date=2025-03-03&includeAgents=true');
    expect(c.dataPoints).toHaveLength(1440);
    expect(c.dataPoints[0]).toEqual({ minute: '00:00', timestamp: '2025-03-03T00:00:00.000Z', concurrent: 0 });
    expect(c.dataPoints.filter((p: any) => p.concurrent).map((p: any) => `${p.minute}=${p.concurrent}`)).toEqual(['10:05=1', '11:30=1', '11:31=1', '11:32=2', '11:33=1', '11:34=1', '11:35=1', '11:36=1']);
    expect(c).toMatchObject({ date: '2025-03-03', peakConcurrent: 2, avgConcurrent: 1.13, totalMinutes: 8 });
    expect(c.byAgent).toEqual([
      { agentId: a2, agentName: 'Support', peakConcurrent: 1, avgConcurrent: 1, totalMinutes: 7 },
      { agentId: a1, agentName: 'Sales', peakConcurrent: 1, avgConcurrent: 1, totalMinutes: 2 },
    ]);
    expect(Object.hasOwn(await data('concurrency?date=2025-03-03'), 'byAgent')).toBe(false);
    // A call whose record is still up counts until now (here: to the end of its day).
    expect(await data('concurrency?date=2025-03-10')).toMatchObject({ peakConcurrent: 1, totalMinutes: 570 });
  });

  it('call log pages the period newest first; conversation details rebuild transcript and events', async () => {
    const [c1, c2, c3, c4, c5, c6, c7, c8, c9] = callIds;
    const log = await data(`call-counts-log?${RANGE}`);
    expect(log).toMatchObject({ totalCalls: 9, totalPages: 1, currentPage: 1, limit: 10 });
    expect(log.calls.map((c: any) => c.callId)).toEqual([c9, c8, c7, c6, c5, c3, c4, c2, c1]);
    expect(log.calls[5]).toMatchObject({ callId: c3, agentId: a1, agentName: 'Sales', campaignId: null, callType: 'telephony_outbound', status: 'completed', outcome: 'voicemail', fromNumber: OURS, toNumber: '+15551110001', durationMs: 15000, answeredBy: 'voicemail', createdAt: '2025-03-03T11:32:00.000Z' });
    const page = await data(`call-counts-log?${RANGE}&page=2&limit=4`);
    expect(page).toMatchObject({ totalCalls: 9, totalPages: 3, currentPage: 2, limit: 4 });
    expect(page.calls.map((c: any) => c.callId)).toEqual([c5, c3, c4, c2]);

    const d4 = await data(`conversation-details/${c4}`);
    expect(d4).toMatchObject({ orgId, callId: c4, agentId: a2, agentName: 'Support', workflowType: 'workflow_graph', status: 'completed', outcome: 'answered', fromNumber: '+15552220001', toNumber: OURS_2, callDurationMs: 400000 });
    expect(d4.transcript.map((t: any) => t.role)).toEqual(['agent', 'user']);
    expect(d4.events.map((e: any) => e.type)).toEqual(['call_started', 'agent_message', 'user_message', 'call_ended']);
    expect(d4.events[3]).toMatchObject({ timestamp: '2025-03-03T11:36:40.000Z', status: 'completed', reason: 'ended' });
    // The real call: its greeting and its end.
    const real = await data(`conversation-details/${live.callId}`);
    expect(real).toMatchObject({ callId: live.callId, agentName: 'Sales', callType: 'webcall', status: 'completed', callDurationMs: live.durationMs });
    expect(real.transcript[0]).toMatchObject({ role: 'agent', content: 'Hello from sales.' });
    expect(real.events[0].type).toBe('call_started');
    expect(real.events.at(-1).type).toBe('call_ended');
    // Another organization's call: 403; none such: 404.
    const theirs = await get(`conversation-details/${callIds[10]}`);
    expect(theirs.status).toBe(403);
    expect(theirs.body).toMatchObject({ status: false, errors: ['This API key has no access to this conversation'] });
    expect((await get('conversation-details/CALL-1700000000000-abcdef')).status).toBe(404);
  });

  it('defaults to the last 30 days up to today: the real chat call is today', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const byDay = await data('call-counts-by-day');
    expect(byDay.callCountsByDay).toHaveLength(30);
    expect(byDay.callCountsByDay.at(-1)).toEqual({ date: today, count: 1 });
    expect(byDay.callCountsByDay.reduce((n: number, d: any) => n + d.count, 0)).toBe(1);
    const s = await data('summary');
    expect(s.totalCalls.current).toBe(1);
    expect(s.pickupRate.current).toBe(100);
    expect(s.totalDurationMs.current).toBe(live.durationMs);
    expect(s.period.to).toBe(today);
    const usage = await data('usage/timeseries');
    expect(usage.totalCredits).toBe(0);
    expect(usage.dayWiseCredits.at(-1)).toEqual({ date: today, credits: 0, calls: 1, durationMs: live.durationMs });
  });

  it('dashboard: the six panels, each exactly its own route', async () => {
    const dash = await data(`dashboard?${RANGE}&agentId=${a1}`);
    expect(Object.keys(dash).sort()).toEqual(['callOutcomesTimeseries', 'callVolumeTimeseries', 'durationStats', 'hourlyPerformance', 'pickupRateByNumber', 'summary']);
    const q = `${RANGE}&agentId=${a1}`;
    expect(dash.summary).toEqual(await data(`summary?${q}`));
    expect(dash.callVolumeTimeseries).toEqual(await data(`call-volume-timeseries?${q}`));
    expect(dash.callOutcomesTimeseries).toEqual(await data(`call-outcomes-timeseries?${q}`));
    expect(dash.pickupRateByNumber).toEqual(await data(`pickup-rate-by-number?${q}`));
    expect(dash.hourlyPerformance).toEqual(await data(`hourly-performance?${q}`));
    expect(dash.durationStats).toEqual(await data(`duration-stats?${q}`));
    expect(dash.summary.totalCalls.current).toBe(6);
  });

  it("another organization sees only its own calls; its agents are 403, unknown ones 404", async () => {
    const theirs = await data(`summary?${RANGE}`, otherKey);
    expect(theirs.totalCalls.current).toBe(1);
    expect(theirs.avgDurationMs.current).toBe(100000);
    expect((await data(`pickup-rate-by-number?${RANGE}`, otherKey)).numbers).toEqual([expect.objectContaining({ phoneNumber: OURS, totalCalls: 1, answeredCalls: 1 })]);
    expect((await data(`call-counts-log?${RANGE}`, otherKey)).calls.map((c: any) => c.callId)).toEqual([callIds[10]]);
    // Our numbers and totals hold nothing of theirs (same number, same day).
    expect((await data('daily-call-summary?date=2025-03-03')).totalCalls).toBe(4);

    const foreign = await get(`summary?agentId=${x}`);
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ status: false, errors: ['This API key has no access to this agent'] });
    expect((await get(`concurrency?date=2025-03-03&agentId=${x}`)).status).toBe(403);
    const unknown = await get('dashboard?agentId=0123456789abcdef01234567');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ status: false, errors: ['No agent found'] });
    const campaign = await get('summary?campaignId=0123456789abcdef01234567');
    expect(campaign.status).toBe(404);
    expect(campaign.body).toEqual({ status: false, errors: ['Campaign not found'] });
    expect((await get('summary', '')).status).toBe(401);
    // Access tokens (wat_) are for the inference routes only: analytics refuse them.
    const minted = await suite.server.request('POST', '/waves/v1/auth/token', { key, body: {} });
    expect(minted.status, minted.text).toBe(201);
    expect((await get('summary', minted.body.access_token)).status).toBe(403);
  });

  it('campaignId: only the calls a campaign placed (its queued calls, as the dialer leaves them); another organization\'s campaign is 403', async () => {
    const from = '+15550700001';
    const trunk = await suite.server.request('POST', `${A}/sip-trunk/outbound`, { key, body: { name: 'Analytics carrier', address: '127.0.0.1:5999', numbers: [from], cpsLimit: 1 } });
    expect(trunk.status, trunk.text).toBe(201);
    const form = new FormData();
    form.append('name', 'Analytics list');
    form.append('phoneNumberColumnName', 'phone');
    form.append('file', new Blob(['phone\n+15551119001\n+15551119002\n'], { type: 'text/csv' }), 'list.csv');
    const aud = await fetch(`${suite.server.base}${A}/audience`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    const audienceId = ((await aud.json()) as any).data._id as string;
    const made = await suite.server.request('POST', `${A}/campaign`, { key, body: { name: 'Analytics campaign', agentId: a1, audienceId, fromNumbers: [from] } });
    expect(made.status, made.text).toBe(201);
    const campaignId = made.body.data._id as string;
    expect(made.body.data.status).toBe('draft');

    // Two calls of the campaign (queued and finished in one transaction, so the dialer never sees them queued) and one
    // placed by the API, on a day of their own.
    const ids = await withStore(suite.store, async (db) => {
      const out: string[] = [];
      const calls: [string, CallStatus, number, string | undefined][] = [
        ['+15551119001', 'completed', 30.3, campaignId],
        ['+15551119002', 'no_answer', 0, campaignId],
        ['+15551119003', 'completed', 10.1, undefined],
      ];
      for (const [i, [to, status, durationS, campaign]] of calls.entries()) {
        const at = `2025-04-07T10:${String(i * 10).padStart(2, '0')}:00.000Z`;
        const callId = `CALL-${Date.parse(at)}-00000${i}`;
        await db.transaction().execute(async (tx) => {
          await insertQueuedCall(tx, { callId, orgId, agentId: a1, to, from, route: { trunkId: null, paceKey: 'udp:127.0.0.1:5999', cps: 1 }, revisionId: null, variables: {}, isTest: false, ...(campaign ? { campaignId: campaign } : {}) });
          await tx.updateTable('outbound_calls').set({ state: 'done' }).where('call_id', '=', callId).execute();
          await updateCall(tx, callId, { status, durationS, endedAt: new Date(Date.parse(at) + durationS * 1000).toISOString(), endReason: status === 'completed' ? 'ended' : 'ringing_timeout' });
          await tx.updateTable('calls').set({ created_at: at, started_at: at }).where('call_id', '=', callId).execute();
        });
        out.push(callId);
      }
      return out;
    });
    const day = 'dateFrom=2025-04-07&dateTo=2025-04-07';
    // Durations in the runtime's 0.1 s steps sum and average exactly on both stores (PostgreSQL keeps them as real).
    const whole = await data(`summary?${day}`);
    expect(whole.totalCalls.current).toBe(3);
    expect(whole.totalDurationMs.current).toBe(40400);
    expect(whole.avgDurationMs.current).toBe(20200);
    expect((await data(`duration-stats?${day}`)).medianDurationMs).toBe(20200);
    const s = await data(`summary?${day}&campaignId=${campaignId}`);
    expect(s.totalCalls.current).toBe(2);
    expect(s.pickupRate.current).toBe(50);
    const log = await data(`call-counts-log?${day}&campaign_id=${campaignId}`);
    expect(log.calls.map((c: any) => [c.callId, c.campaignId, c.durationMs])).toEqual([[ids[1], campaignId, 0], [ids[0], campaignId, 30300]]);
    expect((await data(`call-counts-log?${day}`)).calls[0]).toMatchObject({ callId: ids[2], campaignId: null });
    expect((await get(`summary?campaignId=${campaignId}`, otherKey)).status).toBe(403);
  });

  it('a bad parameter is a 400 naming it', async () => {
    const cases: [string, string][] = [
      ['summary?dateFrom=yesterday', 'dateFrom'],
      ['summary?date_from=2025-13-01', 'date_from'],
      ['summary?dateTo=2025-02-30', 'dateTo'],
      ['summary?dateFrom=2025-03-10&dateTo=2025-03-03', 'dateFrom'],
      ['summary?dateFrom=2020-01-01&dateTo=2025-01-01', 'dateFrom'],
      ['summary?agentId=sales', 'agentId'],
      ['summary?campaign_id=nope', 'campaign_id'],
      ['dashboard?callType=fax', 'callType'],
      ['call-counts-log?page=0', 'page'],
      ['call-counts-log?limit=101', 'limit'],
      ['agent-performance?sortBy=mood', 'sortBy'],
      ['agent-performance?sortOrder=up', 'sortOrder'],
      ['agent-performance?limit=0', 'limit'],
      ['concurrency', 'date'],
      ['concurrency?date=2025-02-30', 'date'],
      ['concurrency?date=2025-03-03&includeAgents=yes', 'includeAgents'],
      ['call-start-distribution?date=03/03/2025', 'date'],
      ['daily-call-summary', 'date'],
      ['usage/timeseries?dateTo=soon', 'dateTo'],
    ];
    for (const [p, name] of cases) {
      const res = await get(p);
      expect(res.status, p).toBe(400);
      expect(res.body.status, p).toBe(false);
      expect(res.body.errors[0], p).toMatch(new RegExp(`^${name}:`));
    }
  });
});
