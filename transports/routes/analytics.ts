// The analytics surfaces of the hosted reference ("Analytics"): aggregates over the organization's call records, under
// `/analytics`. Logic in control-plane/analytics/. These answer `{success: true, data}` as the reference shows (errors
// keep the usual envelope).
import type { HttpServer } from '../http/server.js';
import { docs, type HttpRequest, type HttpResponse, type QueryDoc } from '../http/types.js';
import { actorOf, type RouteContext } from './context.js';
import { AGENT_SORTS, Report } from '../../control-plane/analytics/aggregates.js';
import { boolParam, DEFAULT_DAYS, intOf, MAX_DAYS, oneOf, readDay, readFilters, readPeriod } from '../../control-plane/analytics/params.js';
import { callStartDistribution, concurrency, dailyCallSummary } from '../../control-plane/analytics/day.js';
import { callCountsLog, conversationDetails } from '../../control-plane/analytics/records.js';
import { analyticsReaders, type Run } from '../../control-plane/analytics/sqlite-readers.js';

/** What a day route's query gives its report. */
interface DayArgs {
  orgId: string;
  filters: Awaited<ReturnType<typeof readFilters>>;
  day: ReturnType<typeof readDay>;
}

const success = (data: unknown): HttpResponse => ({ status: 200, body: { success: true, data } });
const SUCCESS_DOC = { type: 'object', properties: { success: { const: true }, data: {} } } as const;

const ids = (what: string) => `Comma-separated ${what} ids (24-hex; each must be the organization's: 404 unknown, 403 another organization's). \`${what}_id\` also works.`;
const AGENT_Q: QueryDoc = { name: 'agentId', description: ids('agent') };
const FILTER_Q: QueryDoc[] = [
  AGENT_Q,
  { name: 'campaignId', description: `${ids('campaign')} Only the calls those campaigns placed, retries included.` },
  { name: 'callType', description: 'Comma-separated: `inbound`, `outbound`, `webcall` (or the records\' `telephony_inbound`, `telephony_outbound`). `call_type` also works.' },
  {
    name: 'dateFrom',
    description: `Start of the period (ISO 8601 date or date-time; UTC when no zone). Default: ${DEFAULT_DAYS} days before \`dateTo\`. \`date_from\` also works.`,
    schema: { type: 'string' },
  },
  {
    name: 'dateTo',
    description: `End of the period: a date-time is included, a bare date means that whole day. Default: the end of today (UTC). At most ${MAX_DAYS} days after \`dateFrom\`. \`date_to\` also works.`,
    schema: { type: 'string' },
  },
];
const DAY_Q: QueryDoc[] = [{ name: 'date', required: true, description: 'The day (YYYY-MM-DD, UTC).', schema: { type: 'string', format: 'date' } }, AGENT_Q];
const PERIOD = '`period` is `{from, to}`, its first and last day.';
const OUTCOMES = 'Outcomes: `answered` (completed, not by a machine), `voicemail` (completed on a voicemail or IVR), `noAnswer`, `failed`, `cancelled`, `inProgress` (not ended yet); `total` is all of them.';
const PICKUP = '`pickupRate` is answered calls per hundred answered, voicemail, unanswered and failed calls (cancelled and unfinished ones are no attempt), null without any.';
const DURATIONS = 'Durations are of calls that talked (a recorded duration above zero), in ms; null without any.';

/** Registers the routes; the returned `close` stops the SQLite reader threads (at shutdown, before the store closes). */
export async function analyticsRoutes(server: HttpServer, prefix: string, ctx: RouteContext): Promise<{ close(): Promise<void> }> {
  const auth = { auth: 'key' as const };
  const d = docs('Analytics');
  const p = `${prefix}/analytics`;
  // SQLite: the aggregates run on reader threads, not on the thread every call of this server runs on.
  const readers = await analyticsReaders(ctx.db);
  const run: Run = readers.run;

  /** A period report of the request's filters and dates (400 / 403 / 404 on a bad one). */
  async function report(req: HttpRequest): Promise<Report> {
    const actor = actorOf(req);
    const filters = await readFilters(ctx.db, actor, req.query);
    return new Report(ctx.db, run, actor.orgId, filters, readPeriod(req.query));
  }

  const periodRoute = (path: string, summary: string, description: string, response: string, run: (r: Report, req: HttpRequest) => Promise<unknown>, extraQuery: QueryDoc[] = []) =>
    server.route('GET', `${p}/${path}`, async (req) => success(await run(await report(req), req)), {
      ...auth,
      doc: d(summary, { description, query: [...FILTER_Q, ...extraQuery], response: { description: response, schema: SUCCESS_DOC }, errors: [403, 404] }),
    });

  periodRoute(
    'summary',
    'Summary KPIs of a period against the one before it',
    `Each KPI is \`{current, previous, percentChange}\` (the previous period has the same length, just before; \`percentChange\` null when the previous value is 0 or null). ${PICKUP} ` +
      `\`uniqueUsersReached\`: distinct numbers of the other party among answered phone calls (web and chat calls carry no number). \`totalCost\` is null: this server charges nothing and does not know what carriers bill. ${DURATIONS}`,
    '`{success: true, data: {orgId, totalCalls, pickupRate, avgDurationMs, medianDurationMs, totalDurationMs, uniqueUsersReached, totalCost, period, previousPeriod}}`.',
    (r) => r.summary(),
  );

  periodRoute(
    'dashboard',
    'The dashboard: six panels in one request',
    'The data of `summary`, `call-volume-timeseries`, `call-outcomes-timeseries`, `pickup-rate-by-number`, `hourly-performance` and `duration-stats` for the same filters; a panel whose query failed is absent.',
    '`{success: true, data: {summary, callVolumeTimeseries, callOutcomesTimeseries, pickupRateByNumber, hourlyPerformance, durationStats}}`.',
    (r) => r.dashboard((panel, err) => ctx.logger.error({ err: err instanceof Error ? err.message : String(err), panel }, 'analytics dashboard panel failed')),
  );

  periodRoute(
    'call-counts-by-day',
    'Calls per day',
    `Every day of the period (UTC), zeros included. ${PERIOD}`,
    '`{success: true, data: {orgId, callCountsByDay: [{date, count}], period}}`.',
    (r) => r.callCountsByDay(),
  );

  server.route(
    'GET',
    `${p}/call-counts-log`,
    async (req) => {
      const actor = actorOf(req);
      const filters = await readFilters(ctx.db, actor, req.query);
      const period = readPeriod(req.query);
      return success(await callCountsLog(ctx.db, run, actor.orgId, filters, period, intOf(req.query, 'page', 1, 1, 1_000_000), intOf(req.query, 'limit', 10, 1, 100)));
    },
    {
      ...auth,
      doc: d("The period's calls, newest first, a page at a time", {
        query: [...FILTER_Q, { name: 'page', schema: { type: 'integer', minimum: 1, default: 1 } }, { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 100, default: 10 } }],
        response: {
          description:
            '`{success: true, data: {calls: [{_id, callId, agentId, agentName, campaignId, callType, mode, status, outcome, fromNumber, toNumber, durationMs, disconnectionReason, answeredBy, isTest, startedAt, endedAt, createdAt}], totalCalls, totalPages, currentPage, limit}}`.',
          schema: SUCCESS_DOC,
        },
        errors: [403, 404],
      }),
    },
  );

  periodRoute(
    'call-volume-timeseries',
    'Calls per day by outcome, with pickup rate and durations',
    `Every day of the period (UTC). ${OUTCOMES} ${PICKUP} ${DURATIONS}`,
    '`{success: true, data: {orgId, dataPoints: [{date, answered, voicemail, noAnswer, failed, cancelled, inProgress, total, pickupRate, totalDurationMs, avgDurationMs}], period}}`.',
    (r) => r.callVolumeTimeseries(),
  );

  periodRoute(
    'call-outcomes-timeseries',
    'Call outcomes per day, and their totals',
    `Every day of the period (UTC). ${OUTCOMES}`,
    '`{success: true, data: {orgId, dataPoints: [{date, answered, voicemail, noAnswer, failed, cancelled, inProgress, total}], totals: {answered, voicemail, noAnswer, failed, cancelled, inProgress, total}, period}}`.',
    (r) => r.callOutcomesTimeseries(),
  );

  periodRoute(
    'duration-stats',
    'Call duration statistics',
    `${DURATIONS} Percentiles interpolate between ranks (as percentile_cont). Short calls last under 30 s, long ones 5 minutes or more (percent of the calls that talked). \`totalCalls\` counts the calls that talked.`,
    '`{success: true, data: {orgId, avgDurationMs, medianDurationMs, p90DurationMs, p95DurationMs, shortCallsPercent, longCallsPercent, totalCalls, totalDurationMs, shortCallThresholdMs, longCallThresholdMs, period}}`.',
    (r) => r.durationStats(),
  );

  periodRoute(
    'pickup-rate-by-number',
    'Pickup rate and calls per phone number of ours',
    `Per number on the platform's side of a phone call (outbound: the number called from; inbound: the number called), most calls first. ${PICKUP} ${OUTCOMES}`,
    '`{success: true, data: {orgId, numbers: [{phoneNumber, totalCalls, answeredCalls, pickupRate, answered, voicemail, noAnswer, failed, cancelled, inProgress, total, avgDurationMs}], period}}`.',
    (r) => r.pickupRateByNumber(),
  );

  periodRoute(
    'phone-number-trends',
    'Calls and pickup rate per phone number of ours, day by day',
    `Each number with calls in the period (as \`pickup-rate-by-number\`), with every day of the period. ${PICKUP}`,
    '`{success: true, data: {orgId, trends: [{phoneNumber, totalCalls, dataPoints: [{date, totalCalls, answeredCalls, pickupRate}]}], period}}`.',
    (r) => r.phoneNumberTrends(),
  );

  periodRoute(
    'hourly-performance',
    'Calls and pickup rate by hour of the day',
    `Hours 0-23 (UTC) over the whole period, each listed. ${PICKUP} ${DURATIONS}`,
    '`{success: true, data: {orgId, hours: [{hour, totalCalls, answeredCalls, pickupRate, answered, voicemail, noAnswer, failed, cancelled, inProgress, total, avgDurationMs, totalDurationMs}], period}}`.',
    (r) => r.hourlyPerformance(),
  );

  periodRoute(
    'agent-performance',
    'Calls, pickup rate and durations per agent',
    `Agents with calls in the period; a deleted agent's calls count under \`agentName: null\`. Sorted by \`sortBy\` (nulls last), then agent id. ${PICKUP} ${DURATIONS}`,
    '`{success: true, data: {orgId, agents: [{agentId, agentName, totalCalls, answeredCalls, pickupRate, avgDurationMs, totalDurationMs, answered, voicemail, noAnswer, failed, cancelled, inProgress, total}], totalAgents, period}}`.',
    (r, req) => r.agentPerformance(oneOf(req.query, 'sortBy', AGENT_SORTS, 'totalCalls'), oneOf(req.query, 'sortOrder', ['asc', 'desc'] as const, 'desc'), intOf(req.query, 'limit', 50, 1, 500)),
    [
      { name: 'sortBy', description: '`sort_by` also works.', schema: { type: 'string', enum: [...AGENT_SORTS], default: 'totalCalls' } },
      { name: 'sortOrder', description: '`sort_order` also works.', schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' } },
      { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 } },
    ],
  );

  periodRoute(
    'weekly-trends',
    'Calls, pickup rate and duration percentiles per week',
    `Weeks start on Monday (UTC); every week the period touches is listed, the first and last cut by the period. ${PICKUP} ${DURATIONS}`,
    '`{success: true, data: {orgId, weeks: [{weekStart, weekEnd, totalCalls, answeredCalls, pickupRate, avgDurationMs, p50DurationMs, p90DurationMs, totalDurationMs}], period}}`.',
    (r) => r.weeklyTrends(),
  );

  periodRoute(
    'attempt-cohort',
    'Pickup rate by attempt number to the same number',
    'Outbound calls of the period to each number, in creation order, are attempts 1, 2, ... (cancelled and never-dialed calls are none). Per attempt: `totalCalls`, `answeredCalls`, `pickupRate`; ' +
      '`cumulativeNumbersReached` / `cumulativePickupRate`: the numbers answered by that attempt, of all numbers; `marginalGain`: what that attempt added (percentage points). `avgAttemptsToPickup`: over the numbers reached.',
    '`{success: true, data: {orgId, cohorts: [{attemptNumber, totalCalls, answeredCalls, pickupRate, cumulativeNumbersReached, cumulativePickupRate, marginalGain}], totalUniqueNumbers, maxAttemptsSeen, avgAttemptsToPickup, period}}`.',
    (r) => r.attemptCohort(),
  );

  server.route(
    'GET',
    `${p}/usage/timeseries`,
    async (req) => success(await new Report(ctx.db, run, actorOf(req).orgId, { agentIds: null, campaignIds: null, types: null }, readPeriod(req.query)).usageTimeseries()),
    {
      ...auth,
      doc: d('Usage per day', {
        description: 'No credits are charged on this server: `credits` and `totalCredits` are 0. Each day also has the usage this server does track: `calls` (created that day) and `durationMs` (their talk).',
        query: FILTER_Q.slice(3),
        response: { description: '`{success: true, data: {dateRange: {from, to}, dayWiseCredits: [{date, credits, calls, durationMs}], totalCredits}}`.', schema: SUCCESS_DOC },
      }),
    },
  );

  /** A route over one UTC day (`date`) of the organization's calls, optionally one agent's. */
  const dayRoute = (path: string, summary: string, description: string, response: string, query: QueryDoc[], run: (args: DayArgs, req: HttpRequest) => Promise<unknown>) =>
    server.route(
      'GET',
      `${p}/${path}`,
      async (req) => {
        const actor = actorOf(req);
        const day = readDay(req.query);
        const filters = await readFilters(ctx.db, actor, req.query, { campaign: false, callType: false });
        return success(await run({ orgId: actor.orgId, filters, day }, req));
      },
      { ...auth, doc: d(summary, { description, query, response: { description: response, schema: SUCCESS_DOC }, errors: [403, 404] }) },
    );

  dayRoute(
    'concurrency',
    'Concurrent calls minute by minute on a day',
    'A call counts in each minute (UTC) its talk overlaps, from its start to its end (a call still up: to now); calls that never talked are not counted. `dataPoints` lists all 1440 minutes; ' +
      '`peakConcurrent` is the most at once, `totalMinutes` the minutes with a call up, `avgConcurrent` the mean over those minutes. `byAgent` (only with `includeAgents=true`) gives each agent\'s.',
    '`{success: true, data: {date, dataPoints: [{minute: "HH:MM", timestamp, concurrent}], peakConcurrent, avgConcurrent, totalMinutes, byAgent?: [{agentId, agentName, peakConcurrent, avgConcurrent, totalMinutes}]}}`.',
    [...DAY_Q, { name: 'includeAgents', description: '`include_agents` also works.', schema: { type: 'string', enum: ['true', 'false'], default: 'false' } }],
    (a, req) => concurrency(ctx.db, run, a.orgId, a.filters, a.day, boolParam(req.query, 'includeAgents', false)),
  );

  dayRoute(
    'call-start-distribution',
    'Calls created per minute of a day',
    'All 1440 minutes (UTC) of the day, zeros included.',
    '`{success: true, data: {date, dataPoints: [{minute: "HH:MM", count}], totalCalls}}`.',
    DAY_Q,
    (a) => callStartDistribution(ctx.db, run, a.orgId, a.filters, a.day),
  );

  dayRoute(
    'daily-call-summary',
    "A day's calls by outcome, with those still queued or up",
    `The calls created that day (UTC). \`unansweredCalls\`: not answered or answered by a machine; \`inProgressCalls\` / \`inQueueCalls\`: those of them up (or being connected) and queued now, read from the records. ${PICKUP}`,
    '`{success: true, data: {date, totalCalls, answeredCalls, unansweredCalls, failedCalls, cancelledCalls, voicemailCalls, pickupRate, inProgressCalls, inQueueCalls, totalDurationMs, avgDurationMs}}`.',
    DAY_Q,
    (a) => dailyCallSummary(ctx.db, run, a.orgId, a.filters, a.day),
  );

  server.route('GET', `${p}/conversation-details/:callId`, async (req) => success(await conversationDetails(ctx.db, actorOf(req), req.params.callId as string)), {
    ...auth,
    doc: d("A call's transcript and events", {
      description:
        'From the call record (a running call: its turns so far). `events` in time order: `call_started`, `user_message` / `agent_message`, `turn_metrics` (each turn\'s latencies), `knowledge_base_search`, `call_ended` (status, reason). ' +
        '404 unknown call, 403 another organization\'s.',
      params: { callId: 'The call id (`CALL-...`).' },
      response: {
        description: '`{success: true, data: {orgId, callId, agentId, agentName, workflowType, status, outcome, callType, transcript: [{role, content, timestamp}], events, fromNumber, toNumber, callDurationMs, startedAt, endedAt}}`.',
        schema: SUCCESS_DOC,
      },
      errors: [403],
    }),
  });

  return { close: () => readers.close() };
}
