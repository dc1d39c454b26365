// The period analytics (summary, time series, durations, numbers, hours, agents, weeks, attempts, usage): aggregates in
// SQL over the organization's call records of a period, shaped as the hosted reference's `data`. One Report per
// request memoizes its queries, so the dashboard's six panels share them: the period's counts by hour (which give the
// days, the hours of the day and the totals), by number, the durations' histogram, the users reached, and the
// previous period's totals with its users reached: five queries, run side by side.
import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import type { Filters, Period } from './params.js';
import { daysOf, DAY_MS, isoDate, periodDates, previousPeriod } from './params.js';
import {
  addCounts,
  avgDurationMs,
  callsOf,
  countsAndUsers,
  countsBy,
  DAY_HOUR_SQL,
  EMPTY_COUNTS,
  LONG_CALL_S,
  num,
  OUR_NUMBER_SQL,
  OUTCOME_SQL,
  outcomeFields,
  percentilesBy,
  percentilesOf,
  percentOf,
  pickupRate,
  SHORT_CALL_S,
  totalDurationMs,
  usersReached,
  weekSql,
  type Counts,
} from './query.js';
import type { Run } from './sqlite-readers.js';

/** A KPI as the summary shows it: this period, the previous one, and the change in percent (null from nothing). */
function kpi(current: number | null, previous: number | null) {
  const change = current === null || previous === null || previous === 0 ? null : Math.round(((current - previous) / previous) * 10000) / 100;
  return { current, previous, percentChange: change };
}

export const AGENT_SORTS = ['totalCalls', 'answeredCalls', 'pickupRate', 'avgDuration', 'avgDurationMs', 'totalDuration', 'totalDurationMs', 'agentName'] as const;
export type AgentSort = (typeof AGENT_SORTS)[number];

export class Report {
  private readonly memo = new Map<string, Promise<unknown>>();

  constructor(
    private readonly db: Db,
    private readonly run: Run,
    readonly orgId: string,
    readonly filters: Filters,
    readonly period: Period,
  ) {}

  private once<T>(key: string, run: () => Promise<T>): Promise<T> {
    let p = this.memo.get(key) as Promise<T> | undefined;
    if (!p) {
      p = run();
      this.memo.set(key, p);
    }
    return p;
  }

  private calls(period = this.period) {
    return callsOf(this.db, this.orgId, this.filters, period);
  }

  /** The period's counts per hour (`YYYY-MM-DDTHH`): the days, the hours of the day and the totals are sums of these. */
  private byDayHour = () => this.once('byDayHour', () => countsBy(this.run, this.calls(), DAY_HOUR_SQL));
  private totals = async () => addCounts((await this.byDayHour()).values());
  private previous = () => this.once('previous', () => countsAndUsers(this.run, this.calls(previousPeriod(this.period))));
  private users = () => this.once('users', () => usersReached(this.run, this.calls()));
  /** Median, p90 and p95 of the period's talking calls. */
  private percentiles = () => this.once('percentiles', () => percentilesOf(this.run, this.calls(), [500, 900, 950]));
  private async byDay(): Promise<Map<string, Counts>> {
    return sumBy(await this.byDayHour(), (k) => k.slice(0, 10));
  }

  async summary() {
    const [cur, { counts: prev, users: previousUsers }, [median], users] = await Promise.all([this.totals(), this.previous(), this.percentiles(), this.users()]);
    return {
      orgId: this.orgId,
      totalCalls: kpi(cur.total, prev.total),
      pickupRate: kpi(pickupRate(cur), pickupRate(prev)),
      avgDurationMs: kpi(avgDurationMs(cur), avgDurationMs(prev)),
      medianDurationMs: median ?? null,
      totalDurationMs: kpi(totalDurationMs(cur), totalDurationMs(prev)),
      uniqueUsersReached: kpi(users, previousUsers),
      // Not tracked here: this server charges nothing, and what carriers bill for the calls is not known to it.
      totalCost: { current: null, previous: null, percentChange: null },
      period: periodDates(this.period),
      previousPeriod: periodDates(previousPeriod(this.period)),
    };
  }

  /** Every day of the period, zeros included. */
  private async days(): Promise<[string, Counts][]> {
    const by = await this.byDay();
    return daysOf(this.period).map((d) => [d, by.get(d) ?? EMPTY_COUNTS]);
  }

  async callCountsByDay() {
    return { orgId: this.orgId, callCountsByDay: (await this.days()).map(([date, c]) => ({ date, count: c.total })), period: periodDates(this.period) };
  }

  async callVolumeTimeseries() {
    const days = await this.days();
    return {
      orgId: this.orgId,
      dataPoints: days.map(([date, c]) => ({ date, ...outcomeFields(c), pickupRate: pickupRate(c), totalDurationMs: totalDurationMs(c), avgDurationMs: avgDurationMs(c) })),
      period: periodDates(this.period),
    };
  }

  async callOutcomesTimeseries() {
    const [days, totals] = await Promise.all([this.days(), this.totals()]);
    return { orgId: this.orgId, dataPoints: days.map(([date, c]) => ({ date, ...outcomeFields(c) })), totals: outcomeFields(totals), period: periodDates(this.period) };
  }

  async durationStats() {
    const [c, [median, p90, p95]] = await Promise.all([this.totals(), this.percentiles()]);
    return {
      orgId: this.orgId,
      avgDurationMs: avgDurationMs(c),
      medianDurationMs: median ?? null,
      p90DurationMs: p90 ?? null,
      p95DurationMs: p95 ?? null,
      shortCallsPercent: percentOf(c.shortCalls, c.connected),
      longCallsPercent: percentOf(c.longCalls, c.connected),
      totalCalls: c.connected,
      totalDurationMs: totalDurationMs(c),
      shortCallThresholdMs: SHORT_CALL_S * 1000,
      longCallThresholdMs: LONG_CALL_S * 1000,
      period: periodDates(this.period),
    };
  }

  /** Per number of ours (outbound: the caller id; inbound: the number called), most calls first. */
  async pickupRateByNumber() {
    const by = await this.once('byNumber', () => countsBy(this.run, this.calls().where(sql.raw<boolean>(`(${OUR_NUMBER_SQL}) is not null`)), sql.raw(OUR_NUMBER_SQL)));
    const numbers = [...by]
      .map(([phoneNumber, c]) => ({ phoneNumber, totalCalls: c.total, answeredCalls: c.answered, pickupRate: pickupRate(c), ...outcomeFields(c), avgDurationMs: avgDurationMs(c) }))
      .sort((a, b) => b.totalCalls - a.totalCalls || a.phoneNumber.localeCompare(b.phoneNumber));
    return { orgId: this.orgId, numbers, period: periodDates(this.period) };
  }

  /** Per number of ours and day: every day of the period for each number that has calls in it. */
  async phoneNumberTrends() {
    const key = sql.raw(`(${OUR_NUMBER_SQL}) || '|' || substr(created_at, 1, 10)`);
    const by = await countsBy(this.run, this.calls().where(sql.raw<boolean>(`(${OUR_NUMBER_SQL}) is not null`)), key);
    const perNumber = new Map<string, Map<string, Counts>>();
    for (const [k, c] of by) {
      const cut = k.lastIndexOf('|');
      const phone = k.slice(0, cut);
      const days = perNumber.get(phone) ?? new Map<string, Counts>();
      days.set(k.slice(cut + 1), c);
      perNumber.set(phone, days);
    }
    const dates = daysOf(this.period);
    const trends = [...perNumber].map(([phoneNumber, days]) => {
      const total = [...days.values()].reduce((n, c) => n + c.total, 0);
      return {
        phoneNumber,
        totalCalls: total,
        dataPoints: dates.map((date) => {
          const c = days.get(date) ?? EMPTY_COUNTS;
          return { date, totalCalls: c.total, answeredCalls: c.answered, pickupRate: pickupRate(c) };
        }),
      };
    });
    trends.sort((a, b) => b.totalCalls - a.totalCalls || a.phoneNumber.localeCompare(b.phoneNumber));
    return { orgId: this.orgId, trends, period: periodDates(this.period) };
  }

  /** Hours of the day 0-23 (UTC) over the whole period. */
  async hourlyPerformance() {
    const by = sumBy(await this.byDayHour(), (k) => k.slice(11, 13));
    const hours = Array.from({ length: 24 }, (_, hour) => {
      const c = by.get(String(hour).padStart(2, '0')) ?? EMPTY_COUNTS;
      return { hour, totalCalls: c.total, answeredCalls: c.answered, pickupRate: pickupRate(c), ...outcomeFields(c), avgDurationMs: avgDurationMs(c), totalDurationMs: totalDurationMs(c) };
    });
    return { orgId: this.orgId, hours, period: periodDates(this.period) };
  }

  async agentPerformance(sortBy: AgentSort, order: 'asc' | 'desc', limit: number) {
    const by = await countsBy(this.run, this.calls(), sql`agent_id`);
    const ids = [...by.keys()];
    const names = new Map<string, string>();
    for (let i = 0; i < ids.length; i += 500) {
      for (const a of await this.run(this.db.selectFrom('agents').select(['id', 'name']).where('id', 'in', ids.slice(i, i + 500)))) names.set(a.id, a.name);
    }
    const agents = [...by].map(([agentId, c]) => ({
      agentId,
      // Call records outlive their agent: a deleted agent's calls still count, under a null name.
      agentName: names.get(agentId) ?? null,
      totalCalls: c.total,
      answeredCalls: c.answered,
      pickupRate: pickupRate(c),
      avgDurationMs: avgDurationMs(c),
      totalDurationMs: totalDurationMs(c),
      ...outcomeFields(c),
    }));
    const value = (a: (typeof agents)[number]): number | string | null =>
      sortBy === 'agentName' ? a.agentName : sortBy === 'pickupRate' ? a.pickupRate : sortBy.startsWith('avgDuration') ? a.avgDurationMs : sortBy.startsWith('totalDuration') ? a.totalDurationMs : sortBy === 'answeredCalls' ? a.answeredCalls : a.totalCalls;
    const sign = order === 'asc' ? 1 : -1;
    agents.sort((a, b) => {
      const x = value(a);
      const y = value(b);
      if (x === null || y === null) return x === y ? a.agentId.localeCompare(b.agentId) : x === null ? 1 : -1; // nulls last either way
      const d = typeof x === 'string' ? x.localeCompare(y as string) : x - (y as number);
      return d ? sign * d : a.agentId.localeCompare(b.agentId);
    });
    return { orgId: this.orgId, agents: agents.slice(0, limit), totalAgents: agents.length, period: periodDates(this.period) };
  }

  /** Weeks from Monday (UTC) that the period touches; the first and last may be cut by the period. */
  async weeklyTrends() {
    const week = weekSql(this.db);
    const [by, pct] = await Promise.all([countsBy(this.run, this.calls(), week), percentilesBy(this.db, this.run, this.calls(), [500, 900], week)]);
    const weeks: Record<string, unknown>[] = [];
    const first = Math.floor(this.period.fromMs / DAY_MS) * DAY_MS;
    const monday = first - ((new Date(first).getUTCDay() + 6) % 7) * DAY_MS;
    for (let w = monday; w < this.period.toMs; w += 7 * DAY_MS) {
      const start = isoDate(w);
      const c = by.get(start) ?? EMPTY_COUNTS;
      const [p50, p90] = pct.get(start) ?? [null, null];
      weeks.push({
        weekStart: start,
        weekEnd: isoDate(w + 6 * DAY_MS),
        totalCalls: c.total,
        answeredCalls: c.answered,
        pickupRate: pickupRate(c),
        avgDurationMs: avgDurationMs(c),
        p50DurationMs: p50 ?? null,
        p90DurationMs: p90 ?? null,
        totalDurationMs: totalDurationMs(c),
      });
    }
    return { orgId: this.orgId, weeks, period: periodDates(this.period) };
  }

  /**
   * Outbound calls to each number, ranked by creation time within the period (attempt 1, 2, ...); calls cancelled or
   * not yet dialed are no attempt. Per attempt number: calls, answered, pickup rate; cumulatively, the share of the
   * numbers reached by then, and what that attempt added (percentage points).
   */
  async attemptCohort() {
    const attempts = this.calls()
      .where('type', '=', 'telephony_outbound')
      .where('to_number', 'is not', null)
      .where('status', 'not in', ['cancelled', 'in_queue', 'pending'])
      .select([
        'to_number',
        sql<number>`case when ${sql.raw(OUTCOME_SQL.answered)} then 1 else 0 end`.as('ans'),
        sql<number>`row_number() over (partition by to_number order by created_at, id)`.as('attempt'),
      ]);
    const [perAttempt, firstPickups] = await Promise.all([
      this.run(this.db.selectFrom(attempts.as('a')).select(['a.attempt', sql<number>`count(*)`.as('calls'), sql<number>`sum(a.ans)`.as('answered')]).groupBy('a.attempt')),
      this.run(
        this.db
          .selectFrom(
            this.db
              .selectFrom(attempts.as('a'))
              .select(['a.to_number', sql<number | null>`min(case when a.ans = 1 then a.attempt end)`.as('first')])
              .groupBy('a.to_number')
              .as('f'),
          )
          .select(['f.first', sql<number>`count(*)`.as('numbers')])
          .groupBy('f.first'),
      ),
    ]);
    let totalNumbers = 0;
    let reached = 0;
    let attemptSum = 0;
    const reachedAt = new Map<number, number>();
    for (const r of firstPickups) {
      const n = num(r.numbers);
      totalNumbers += n;
      if (r.first === null) continue;
      reachedAt.set(num(r.first), n);
      reached += n;
      attemptSum += num(r.first) * n;
    }
    const rows = perAttempt.map((r) => ({ attempt: num(r.attempt), calls: num(r.calls), answered: num(r.answered) })).sort((a, b) => a.attempt - b.attempt);
    let cumulative = 0;
    let previousRate = 0;
    const cohorts = rows.map((r) => {
      cumulative += reachedAt.get(r.attempt) ?? 0;
      const rate = percentOf(cumulative, totalNumbers) ?? 0;
      const cohort = {
        attemptNumber: r.attempt,
        totalCalls: r.calls,
        answeredCalls: r.answered,
        pickupRate: percentOf(r.answered, r.calls),
        cumulativeNumbersReached: cumulative,
        cumulativePickupRate: rate,
        marginalGain: Math.round((rate - previousRate) * 100) / 100,
      };
      previousRate = rate;
      return cohort;
    });
    return {
      orgId: this.orgId,
      cohorts,
      totalUniqueNumbers: totalNumbers,
      maxAttemptsSeen: rows.length ? (rows[rows.length - 1] as { attempt: number }).attempt : 0,
      avgAttemptsToPickup: reached ? Math.round((attemptSum / reached) * 100) / 100 : null,
      period: periodDates(this.period),
    };
  }

  /** No credits are charged here (0); each day's calls and the minutes they talked, the usage this server does track. */
  async usageTimeseries() {
    const days = await this.days();
    return {
      dateRange: periodDates(this.period),
      dayWiseCredits: days.map(([date, c]) => ({ date, credits: 0, calls: c.total, durationMs: totalDurationMs(c) })),
      totalCredits: 0,
    };
  }

  /** The dashboard: six panels from five queries; a panel whose query failed is absent (the others are still sent). */
  async dashboard(onError: (panel: string, err: unknown) => void) {
    const panels = {
      summary: () => this.summary(),
      callVolumeTimeseries: () => this.callVolumeTimeseries(),
      callOutcomesTimeseries: () => this.callOutcomesTimeseries(),
      pickupRateByNumber: () => this.pickupRateByNumber(),
      hourlyPerformance: () => this.hourlyPerformance(),
      durationStats: () => this.durationStats(),
    };
    const names = Object.keys(panels) as (keyof typeof panels)[];
    const settled = await Promise.allSettled(names.map((n) => panels[n]()));
    // Nothing answered (the store is down): an error, not an empty dashboard.
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed && settled.every((s) => s.status === 'rejected')) throw failed.reason;
    const out: Record<string, unknown> = {};
    settled.forEach((s, i) => {
      const name = names[i] as string;
      if (s.status === 'fulfilled') out[name] = s.value;
      else onError(name, s.reason);
    });
    return out;
  }
}

/** Groups' counts summed under a shorter key (hours into days, or into hours of the day). */
function sumBy(groups: Map<string, Counts>, key: (k: string) => string): Map<string, Counts> {
  const parts = new Map<string, Counts[]>();
  for (const [k, c] of groups) {
    const to = key(k);
    const list = parts.get(to);
    if (list) list.push(c);
    else parts.set(to, [c]);
  }
  return new Map([...parts].map(([k, list]) => [k, addCounts(list)]));
}
