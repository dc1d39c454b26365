// The SQL the analytics aggregates share (one text for SQLite and PostgreSQL): the organization's calls of a period
// and filters, each call's outcome, the counts and duration sums of a group, and percentiles of durations by a window
// query. Times are the records' ISO text (UTC), so a day is `substr(created_at, 1, 10)` and an hour characters 12-13.
import { PostgresAdapter, sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../store/db.js';
import type { Database } from '../store/schema.js';
import type { Filters, Period } from './params.js';
import type { Run } from './sqlite-readers.js';

export type CallsQuery = SelectQueryBuilder<Database, 'calls', object>;

export const isPostgres = (db: Db): boolean => db.getExecutor().adapter instanceof PostgresAdapter;

/** The organization's calls created in the period that pass the filters. */
export function callsOf(db: Db, orgId: string, filters: Filters, period: Period): CallsQuery {
  let q: CallsQuery = db
    .selectFrom('calls')
    .where('org_id', '=', orgId)
    .where('created_at', '>=', new Date(period.fromMs).toISOString())
    .where('created_at', '<', new Date(period.toMs).toISOString());
  if (filters.agentIds) q = q.where('agent_id', 'in', filters.agentIds);
  if (filters.types) q = q.where('type', 'in', filters.types);
  const campaigns = filters.campaignIds;
  if (campaigns) q = q.where('call_id', 'in', (eb) => eb.selectFrom('outbound_calls').select('call_id').where('campaign_id', 'in', campaigns));
  return q;
}

/** Answered by a machine (voicemail detection's verdict, or the end reason of a message left on one); null-safe. */
const MACHINE = `coalesce(answered_by in ('voicemail', 'ivr') or end_reason in ('voicemail', 'ivr'), false)`;
/** A call's outcome, as SQL conditions on its record. */
export const OUTCOME_SQL = {
  answered: `status = 'completed' and not ${MACHINE}`,
  voicemail: `status = 'completed' and ${MACHINE}`,
  noAnswer: `status = 'no_answer'`,
  failed: `status = 'failed'`,
  cancelled: `status = 'cancelled'`,
} as const;
/** A call that talked: its record has a duration above zero (unanswered calls end with 0, running calls have none). */
export const CONNECTED_SQL = 'duration_s > 0';
/** The platform's own number on a phone call (outbound: the caller id; inbound: the number called). */
export const OUR_NUMBER_SQL = `case when type = 'telephony_outbound' then from_number when type = 'telephony_inbound' then to_number end`;
/** The other party's number on a phone call (outbound: the number called; inbound: the caller). */
export const USER_NUMBER_SQL = `case when type = 'telephony_outbound' then to_number when type = 'telephony_inbound' then from_number end`;
/** Short and long calls (duration stats): under 30 s, 5 minutes or more. */
export const SHORT_CALL_S = 30;
export const LONG_CALL_S = 300;

/** `count(*) filter (where ...)`: SQLite (3.30+) and PostgreSQL alike, cheaper than a sum of cases. */
const countIf = (cond: string, alias: string) => sql<number | string>`count(*) filter (where ${sql.raw(cond)})`.as(alias);

/** The select list of a group's counts (see Counts): one pass, each call's columns read once. */
export function countSelections() {
  return [
    sql<number | string>`count(*)`.as('total'),
    countIf(`status = 'completed'`, 'completed'),
    countIf(OUTCOME_SQL.voicemail, 'voicemail'),
    countIf(OUTCOME_SQL.noAnswer, 'no_answer'),
    countIf(OUTCOME_SQL.failed, 'failed'),
    countIf(OUTCOME_SQL.cancelled, 'cancelled'),
    countIf(CONNECTED_SQL, 'connected'),
    // Summed as double precision: PostgreSQL's `real` column would sum as `real` (7 digits).
    sql<number | string | null>`sum(cast(duration_s as double precision)) filter (where ${sql.raw(CONNECTED_SQL)})`.as('duration_sum'),
    countIf(`${CONNECTED_SQL} and duration_s < ${SHORT_CALL_S}`, 'short_calls'),
    countIf(`duration_s >= ${LONG_CALL_S}`, 'long_calls'),
  ];
}

/** A group's counts: calls by outcome (the rest are still going: queued, dialing, up), and the talking calls' durations. */
export interface Counts {
  total: number;
  answered: number;
  voicemail: number;
  noAnswer: number;
  failed: number;
  cancelled: number;
  inProgress: number;
  /** Calls with a duration above zero, and the sum of those durations (seconds). */
  connected: number;
  durationSumS: number;
  shortCalls: number;
  longCalls: number;
}

/** A driver's number (PostgreSQL's bigint counts arrive as text; an empty sum as null) as a number. */
export const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));

export function countsOf(row: Record<string, unknown> | undefined): Counts {
  const r = row ?? {};
  const c: Counts = {
    total: num(r.total),
    answered: num(r.completed) - num(r.voicemail),
    voicemail: num(r.voicemail),
    noAnswer: num(r.no_answer),
    failed: num(r.failed),
    cancelled: num(r.cancelled),
    inProgress: 0,
    connected: num(r.connected),
    durationSumS: num(r.duration_sum),
    shortCalls: num(r.short_calls),
    longCalls: num(r.long_calls),
  };
  c.inProgress = c.total - c.answered - c.voicemail - c.noAnswer - c.failed - c.cancelled;
  return c;
}

export const EMPTY_COUNTS: Counts = countsOf(undefined);

/** The sum of several groups' counts. */
export function addCounts(groups: Iterable<Counts>): Counts {
  const out = { ...EMPTY_COUNTS };
  for (const c of groups) for (const k of Object.keys(out) as (keyof Counts)[]) out[k] += c[k];
  return out;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/** Answered calls per hundred calls whose outcome is known and that were tried (cancelled calls are not); null for none. */
export function pickupRate(c: Counts): number | null {
  const tried = c.answered + c.voicemail + c.noAnswer + c.failed;
  return tried ? round2((100 * c.answered) / tried) : null;
}

/** Mean duration of the talking calls in ms; null for none. */
export const avgDurationMs = (c: Counts): number | null => (c.connected ? Math.round((1000 * c.durationSumS) / c.connected) : null);
export const totalDurationMs = (c: Counts): number => Math.round(1000 * c.durationSumS);
export const percentOf = (part: number, whole: number): number | null => (whole ? round2((100 * part) / whole) : null);

/** The outcome counts as the reference's totals name them (`inProgress` and `voicemail` added). */
export const outcomeFields = (c: Counts) => ({ answered: c.answered, voicemail: c.voicemail, noAnswer: c.noAnswer, failed: c.failed, cancelled: c.cancelled, inProgress: c.inProgress, total: c.total });

/** Groups of `q` by an expression (no bound parameters in it, so PostgreSQL sees select and group by as one). */
export async function countsBy(run: Run, q: CallsQuery, key: RawBuilder<unknown>): Promise<Map<string, Counts>> {
  const rows = await run(q.select([key.as('k'), ...countSelections()]).groupBy(key));
  return new Map(rows.map((r) => [String((r as Record<string, unknown>).k), countsOf(r as Record<string, unknown>)]));
}

export async function countsAll(run: Run, q: CallsQuery): Promise<Counts> {
  return countsOf((await run(q.select(countSelections())))[0] as Record<string, unknown> | undefined);
}

/** The counts of `q` and its users reached (see usersReached), in one pass. */
export async function countsAndUsers(run: Run, q: CallsQuery): Promise<{ counts: Counts; users: number }> {
  const users = sql<number | string>`count(distinct ${sql.raw(USER_NUMBER_SQL)}) filter (where ${sql.raw(OUTCOME_SQL.answered)})`.as('users');
  const row = (await run(q.select([...countSelections(), users])))[0] as Record<string, unknown> | undefined;
  return { counts: countsOf(row), users: num(row?.users) };
}

/** Distinct numbers of the other party among the answered phone calls of `q`. */
export async function usersReached(run: Run, q: CallsQuery): Promise<number> {
  const rows = await run(q.where(sql.raw<boolean>(OUTCOME_SQL.answered)).select(sql<number | string>`count(distinct ${sql.raw(USER_NUMBER_SQL)})`.as('n')));
  return num((rows[0] as { n?: unknown } | undefined)?.n);
}

/**
 * Duration percentiles (ms) of the talking calls of `q`, interpolated between ranks as PostgreSQL's percentile_cont,
 * from their histogram at the runtime's 0.1 s resolution (one row per distinct duration, not per call).
 * `perMille`: e.g. [500, 900, 950]; nulls when no call talked.
 */
export async function percentilesOf(run: Run, q: CallsQuery, perMille: number[]): Promise<(number | null)[]> {
  const tenths = sql<number>`round(duration_s * 10)`;
  const rows = (await run(q.where(sql.raw<boolean>(CONNECTED_SQL)).select([tenths.as('d'), sql<number | string>`count(*)`.as('n')]).groupBy(tenths))) as { d: unknown; n: unknown }[];
  const hist = rows.map((r) => ({ d: num(r.d), n: num(r.n) })).sort((a, b) => a.d - b.d);
  const total = hist.reduce((s, h) => s + h.n, 0);
  if (!total) return perMille.map(() => null);
  /** The value at 0-based rank k. */
  const at = (k: number): number => {
    let seen = 0;
    for (const h of hist) {
      seen += h.n;
      if (k < seen) return h.d;
    }
    return (hist[hist.length - 1] as { d: number }).d;
  };
  return perMille.map((a) => {
    const pos = (a * (total - 1)) / 1000;
    const lo = at(Math.floor(pos));
    const hi = at(Math.ceil(pos));
    return Math.round(100 * (lo + (hi - lo) * (pos - Math.floor(pos))));
  });
}

/**
 * Duration percentiles (ms, interpolated as above) per group of `key`: a window query that returns only the two rows
 * around each wanted rank of each group (weekly trends).
 */
export async function percentilesBy(db: Db, run: Run, q: CallsQuery, perMille: number[], key: RawBuilder<unknown>): Promise<Map<string, (number | null)[]>> {
  const inner = q
    .where(sql.raw<boolean>(CONNECTED_SQL))
    .select([key.as('k'), 'duration_s', sql<number>`row_number() over (partition by ${key} order by duration_s)`.as('rn'), sql<number>`count(*) over (partition by ${key})`.as('n')]);
  // Ranks (1-based) around p(n-1): integer division is floor in both dialects for these non-negative values.
  const ranks = perMille.flatMap((a) => [sql`rn = (${sql.lit(a)} * (n - 1)) / 1000 + 1`, sql`rn = (${sql.lit(a)} * (n - 1) + 999) / 1000 + 1`]);
  const rows = (await run(db.selectFrom(inner.as('t')).selectAll().where(sql<boolean>`${sql.join(ranks, sql` or `)}`))) as unknown as { k: unknown; duration_s: number; rn: unknown; n: unknown }[];
  const groups = new Map<string, { n: number; at: Map<number, number> }>();
  for (const r of rows) {
    const k = String(r.k);
    const g = groups.get(k) ?? { n: num(r.n), at: new Map<number, number>() };
    g.at.set(num(r.rn) - 1, Number(r.duration_s));
    groups.set(k, g);
  }
  const out = new Map<string, (number | null)[]>();
  for (const [k, g] of groups) {
    out.set(
      k,
      perMille.map((a) => {
        const pos = (a * (g.n - 1)) / 1000;
        const lo = g.at.get(Math.floor(pos));
        const hi = g.at.get(Math.ceil(pos));
        if (lo === undefined || hi === undefined) return null;
        return Math.round(1000 * (lo + (hi - lo) * (pos - Math.floor(pos))));
      }),
    );
  }
  return out;
}

/** SQL for a creation time's day, hour and minute, and the Monday of its week (per dialect: the only dialect-specific bit). */
export const DAY_SQL = sql<string>`substr(created_at, 1, 10)`;
export const HOUR_SQL = sql<string>`substr(created_at, 12, 2)`;
/** A creation time's hour of its day: `YYYY-MM-DDTHH`. */
export const DAY_HOUR_SQL = sql<string>`substr(created_at, 1, 13)`;
export const MINUTE_SQL = sql<string>`substr(created_at, 12, 5)`;
export const weekSql = (db: Db): RawBuilder<string> =>
  isPostgres(db)
    ? sql<string>`to_char(date_trunc('week', cast(substr(created_at, 1, 10) as date)), 'YYYY-MM-DD')`
    : sql<string>`date(substr(created_at, 1, 10), 'weekday 0', '-6 days')`;
