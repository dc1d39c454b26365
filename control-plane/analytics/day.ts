// The one-day analytics: concurrent calls minute by minute, call starts per minute, and the day's summary (with the
// calls still queued or up). Days and minutes are UTC, as the records' times.
import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { DAY_MS, type Filters, type Period } from './params.js';
import type { Run } from './sqlite-readers.js';
import { avgDurationMs, callsOf, countsAll, countsBy, MINUTE_SQL, num, pickupRate, totalDurationMs } from './query.js';

const MINUTES = 1440;
/** How long before its day a call may have been created and still be counted up in it (concurrency). */
const LOOKBACK_MS = DAY_MS;

const minuteLabel = (m: number): string => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
const minuteOf = (label: string): number => Number(label.slice(0, 2)) * 60 + Number(label.slice(3, 5));

interface Curve {
  points: number[];
  peak: number;
  avg: number;
  minutes: number;
}

function curve(diff: number[]): Curve {
  const points: number[] = [];
  let level = 0;
  let peak = 0;
  let sum = 0;
  let minutes = 0;
  for (let m = 0; m < MINUTES; m++) {
    level += diff[m] ?? 0;
    points.push(level);
    if (level > peak) peak = level;
    if (level > 0) {
      sum += level;
      minutes++;
    }
  }
  return { points, peak, avg: minutes ? Math.round((sum / minutes) * 100) / 100 : 0, minutes };
}

/**
 * Calls up in each minute of the day: a call counts in every minute its talk overlaps (from `started_at` to `ended_at`;
 * one still up, to now). Calls that never talked (unanswered, queued) are not counted.
 */
export async function concurrency(db: Db, run: Run, orgId: string, filters: Filters, day: Period & { date: string }, includeAgents: boolean, now = Date.now()) {
  const dayStart = new Date(day.fromMs).toISOString();
  const dayEnd = new Date(day.toMs).toISOString();
  const up = callsOf(db, orgId, filters, { fromMs: day.fromMs - LOOKBACK_MS, toMs: day.toMs })
    .where('started_at', '<', dayEnd)
    .where((eb) =>
      eb.or([
        eb.and([eb('ended_at', '>=', dayStart), eb('duration_s', '>', 0)]),
        eb.and([eb('ended_at', 'is', null), eb('status', 'in', ['in_progress', 'active'])]),
      ]),
    );
  const startKey = sql<string>`case when started_at < ${sql.lit(dayStart)} then '00:00' else substr(started_at, 12, 5) end`;
  const endKey = sql<string>`case when ended_at is null then 'now' when ended_at >= ${sql.lit(dayEnd)} then 'later' else substr(ended_at, 12, 5) end`;
  const [starts, ends] = await Promise.all([
    run(up.select(['agent_id', startKey.as('k'), sql<number>`count(*)`.as('n')]).groupBy(['agent_id', startKey])),
    run(up.select(['agent_id', endKey.as('k'), sql<number>`count(*)`.as('n')]).groupBy(['agent_id', endKey])),
  ]);
  // +1 in a call's first minute, -1 in the minute after its last.
  const nowMinute = now >= day.toMs ? null : Math.floor((now - day.fromMs) / 60_000);
  const diffs = new Map<string, number[]>();
  const diffOf = (agent: string) => diffs.get(agent) ?? (diffs.set(agent, new Array<number>(MINUTES + 1).fill(0)), diffs.get(agent) as number[]);
  const add = (d: number[], i: number, n: number) => (d[i] = (d[i] ?? 0) + n);
  for (const r of starts) add(diffOf(r.agent_id), minuteOf(r.k), num(r.n));
  for (const r of ends) {
    const end = r.k === 'later' ? null : r.k === 'now' ? nowMinute : minuteOf(r.k);
    if (end === null || end < 0) continue;
    add(diffOf(r.agent_id), Math.min(MINUTES, end + 1), -num(r.n));
  }
  const total = new Array<number>(MINUTES + 1).fill(0);
  for (const d of diffs.values()) d.forEach((v, i) => add(total, i, v));
  const all = curve(total);
  const data: Record<string, unknown> = {
    date: day.date,
    dataPoints: all.points.map((concurrent, m) => ({ minute: minuteLabel(m), timestamp: new Date(day.fromMs + m * 60_000).toISOString(), concurrent })),
    peakConcurrent: all.peak,
    avgConcurrent: all.avg,
    totalMinutes: all.minutes,
  };
  if (includeAgents) {
    const ids = [...diffs.keys()];
    const names = new Map(ids.length ? (await run(db.selectFrom('agents').select(['id', 'name']).where('id', 'in', ids))).map((a) => [a.id, a.name] as const) : []);
    data.byAgent = [...diffs]
      .map(([agentId, d]) => {
        const c = curve(d);
        return { agentId, agentName: names.get(agentId) ?? null, peakConcurrent: c.peak, avgConcurrent: c.avg, totalMinutes: c.minutes };
      })
      .sort((a, b) => b.peakConcurrent - a.peakConcurrent || b.totalMinutes - a.totalMinutes || a.agentId.localeCompare(b.agentId));
  }
  return data;
}

/** Calls created in each minute of the day (every minute listed, zeros included). */
export async function callStartDistribution(db: Db, run: Run, orgId: string, filters: Filters, day: Period & { date: string }) {
  const by = await countsBy(run, callsOf(db, orgId, filters, day), MINUTE_SQL);
  let totalCalls = 0;
  const dataPoints = Array.from({ length: MINUTES }, (_, m) => {
    const count = by.get(minuteLabel(m))?.total ?? 0;
    totalCalls += count;
    return { minute: minuteLabel(m), count };
  });
  return { date: day.date, dataPoints, totalCalls };
}

/** Queued or dialing, and up: statuses of calls not yet ended. */
const IN_QUEUE = ['pending', 'in_queue'];
const IN_PROGRESS = ['processing', 'in_progress', 'active'];

/** The calls created that day by outcome, with those of them still queued and still up read from the records now. */
export async function dailyCallSummary(db: Db, run: Run, orgId: string, filters: Filters, day: Period & { date: string }) {
  const q = callsOf(db, orgId, filters, day);
  const [c, byStatus] = await Promise.all([countsAll(run, q), countsBy(run, q, sql`status`)]);
  const sum = (statuses: string[]) => statuses.reduce((n, s) => n + (byStatus.get(s)?.total ?? 0), 0);
  return {
    date: day.date,
    totalCalls: c.total,
    answeredCalls: c.answered,
    // Reached nobody: not answered, or answered by a machine.
    unansweredCalls: c.noAnswer + c.voicemail,
    failedCalls: c.failed,
    cancelledCalls: c.cancelled,
    voicemailCalls: c.voicemail,
    pickupRate: pickupRate(c),
    inProgressCalls: sum(IN_PROGRESS),
    inQueueCalls: sum(IN_QUEUE),
    totalDurationMs: totalDurationMs(c),
    avgDurationMs: avgDurationMs(c),
  };
}
