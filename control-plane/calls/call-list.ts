// Call lists: GET /conversation (filters, sort, pages) and POST /conversation/search, as the wire's call-log entries.
import { sql, type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { Db } from '../store/db.js';
import type { Database } from '../store/schema.js';
import { isObjectId } from '../store/ids.js';
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { loadAgent, type Actor } from '../agents/agents.js';
import { parseJson } from '../agents/records.js';
import { recordingIdentifier } from '../recordings/object-store.js';
import { intParam } from '../query.js';
import { CALL_STATUSES, CALL_TYPES, callDuration, postCallAnalytics, turnLatencyMetrics, type CallMetrics, type CallRow } from './calls.js';

type CallsQuery = SelectQueryBuilder<Database, 'calls', object>;
type Where = (eb: ExpressionBuilder<Database, 'calls'>) => Expression<SqlBool>;
/** A condition no row meets (filters on things that do not exist here yet). */

/** Most values a comma-separated filter (or a search body) may list. */
export const MAX_LIST = 100;
const SORT_COLUMNS = { createdAt: 'created_at', duration: 'duration_s', status: 'status' } as const;
const ATTEMPTS = ['all', 'first', 'retry'] as const;
/** `<N`, `>N` or `A-B` seconds (A <= d <= B); several buckets comma-separated match any of them. */
const BUCKET = /^(?:<(\d+(?:\.\d+)?)|>(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?))$/;

export interface CallLogPage {
  logs: Record<string, unknown>[];
  pagination: { total: number; page: number; limit: number; hasMore: boolean; totalPages: number };
}

/** A comma-separated list parameter: trimmed, empty items dropped; null when absent or empty. */
function listParam(query: URLSearchParams, name: string, check?: (v: string) => boolean, what?: string): string[] | null {
  const raw = query.getAll(name).join(',');
  const items = [...new Set(raw.split(',').map((v) => v.trim()).filter(Boolean))];
  if (!items.length) return null;
  if (items.length > MAX_LIST) throw badRequest(`${name}: at most ${MAX_LIST} values`);
  const bad = check ? items.filter((v) => !check(v)) : [];
  if (bad.length) throw badRequest(`${name}: ${bad.map((b) => JSON.stringify(b)).join(', ')} ${bad.length > 1 ? 'are' : 'is'} not ${what}`);
  return items;
}

function oneOf<T extends string>(query: URLSearchParams, name: string, allowed: readonly T[], dflt: T): T {
  const raw = query.get(name);
  if (raw === null || raw === '') return dflt;
  if (!(allowed as readonly string[]).includes(raw)) throw badRequest(`${name}: must be one of ${allowed.join(', ')}`);
  return raw as T;
}

/**
 * An ISO date or date-time; a bare date as `dateTo` means the whole of that day. Times without a zone are UTC (not
 * the server's zone); an offset whose `+` arrived as a space (an unencoded query string) is read as `+`.
 */
function dateParam(query: URLSearchParams, name: 'dateFrom' | 'dateTo'): { iso: string; exclusive: boolean } | null {
  const given = query.get(name);
  if (given === null || given === '') return null;
  const raw = given.replace(/ (\d{2}:?\d{2})$/, '+$1');
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(raw);
  const zoned = dateOnly || /(?:Z|[+-]\d{2}:?\d{2})$/.test(raw);
  const ms = Date.parse(zoned ? raw : `${raw}Z`);
  if (!/^\d{4}-\d{2}-\d{2}(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/.test(raw) || !Number.isFinite(ms)) {
    throw badRequest(`${name}: must be an ISO 8601 date or date-time (e.g. 2026-05-08 or 2026-05-08T07:51:50Z)`);
  }
  if (dateOnly && name === 'dateTo') return { iso: new Date(ms + 86_400_000).toISOString(), exclusive: true };
  return { iso: new Date(ms).toISOString(), exclusive: false };
}

function durationBuckets(query: URLSearchParams): Where | null {
  const buckets = listParam(query, 'durationFilter', (v) => BUCKET.test(v), 'a duration bucket (<N, >N or A-B seconds)');
  if (!buckets) return null;
  return (eb) =>
    eb.or(
      buckets.map((b) => {
        const [, lt, gt, lo, hi] = BUCKET.exec(b) as RegExpExecArray;
        if (lt !== undefined) return eb('duration_s', '<', Number(lt));
        if (gt !== undefined) return eb('duration_s', '>', Number(gt));
        return eb.and([eb('duration_s', '>=', Number(lo)), eb('duration_s', '<=', Number(hi))]);
      }),
    );
}

/** `search`: a case-insensitive substring of the call id or either phone number (transcripts are not searched). */
function searchFilter(query: URLSearchParams): Where | null {
  const raw = query.get('search')?.trim();
  if (!raw) return null;
  if (raw.length > 200) throw badRequest('search: at most 200 characters');
  const pattern = `%${raw.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const like = (column: 'call_id' | 'from_number' | 'to_number') => sql<SqlBool>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`;
  return (eb) => eb.or([like('call_id'), like('from_number'), like('to_number')]);
}

/** Voicemail detection's verdicts (`answeredBy` filter). */
const ANSWERED_BY = ['human', 'voicemail', 'ivr', 'silence'];

/** Applies every filter of the query string to the organization's calls (400 naming a bad parameter). */
async function filteredCalls(db: Db, actor: Actor, query: URLSearchParams): Promise<CallsQuery> {
  let q: CallsQuery = db.selectFrom('calls').where('org_id', '=', actor.orgId);
  // `agentId` (one, 404/403 when not the caller's) is the earlier form; `agentIds` filters without checking.
  const agentId = query.get('agentId');
  if (agentId !== null) {
    await loadAgent(db, actor, agentId);
    q = q.where('agent_id', '=', agentId);
  }
  const agentIds = listParam(query, 'agentIds', isObjectId, 'a 24-hex agent id');
  if (agentIds) q = q.where('agent_id', 'in', agentIds);
  const campaigns = listParam(query, 'campaignIds', isObjectId, 'a 24-hex campaign id');
  if (campaigns) q = q.where('call_id', 'in', (eb) => eb.selectFrom('outbound_calls').select('call_id').where('campaign_id', 'in', campaigns));
  const types = listParam(query, 'callTypes', (v) => (CALL_TYPES as readonly string[]).includes(v), `a call type (${CALL_TYPES.join(', ')})`);
  if (types) q = q.where('type', 'in', types);
  const statuses = listParam(query, 'statusFilter', (v) => (CALL_STATUSES as readonly string[]).includes(v), `a call status (${CALL_STATUSES.join(', ')})`);
  if (statuses) q = q.where('status', 'in', statuses);
  const answered = listParam(query, 'answeredBy', (v) => ANSWERED_BY.includes(v), `one of ${ANSWERED_BY.join(', ')}`);
  if (answered) q = q.where('answered_by', 'in', answered);
  const reasons = listParam(query, 'disconnectReasonFilter');
  if (reasons) q = q.where('end_reason', 'in', reasons);
  // A retry is a campaign's later attempt at a recipient (its outbound row names the call it retries).
  const attempt = oneOf(query, 'callAttemptFilter', ATTEMPTS, 'all');
  if (attempt !== 'all') {
    const retries = (eb: ExpressionBuilder<Database, 'calls'>) => eb.selectFrom('outbound_calls').select('call_id').where('retry_of', 'is not', null);
    q = q.where('call_id', attempt === 'retry' ? 'in' : 'not in', retries);
  }
  const buckets = durationBuckets(query);
  if (buckets) q = q.where(buckets);
  const versions = listParam(query, 'versionFilter', isObjectId, 'a 24-hex version (revision) id');
  if (versions) q = q.where('revision_id', 'in', versions);
  const search = searchFilter(query);
  if (search) q = q.where(search);
  const from = dateParam(query, 'dateFrom');
  const to = dateParam(query, 'dateTo');
  if (from && to && (to.exclusive ? from.iso >= to.iso : from.iso > to.iso)) throw badRequest('dateFrom: must not be after dateTo');
  if (from) q = q.where('created_at', '>=', from.iso);
  if (to) q = q.where('created_at', to.exclusive ? '<' : '<=', to.iso);
  return q;
}

/** `GET /conversation`: the organization's calls, filtered, sorted (`createdAt` desc by default) and paged. */
export async function listCallLogs(db: Db, actor: Actor, query: URLSearchParams): Promise<CallLogPage> {
  const page = intParam(query, 'page', 1, 1, 1_000_000);
  const limit = intParam(query, 'limit', 20, 1, 100);
  const sortBy = oneOf(query, 'sortBy', Object.keys(SORT_COLUMNS) as (keyof typeof SORT_COLUMNS)[], 'createdAt');
  const order = oneOf(query, 'sortOrder', ['asc', 'desc'] as const, 'desc');
  const base = await filteredCalls(db, actor, query);
  const total = Number((await base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  let rows = base.selectAll();
  // Calls still running have no duration: they sort last either way.
  if (sortBy === 'duration') rows = rows.orderBy(sql`case when duration_s is null then 1 else 0 end`);
  rows = rows.orderBy(SORT_COLUMNS[sortBy], order);
  if (sortBy !== 'createdAt') rows = rows.orderBy('created_at', 'desc');
  const found = await rows.orderBy('id', sortBy === 'createdAt' ? order : 'desc').limit(limit).offset((page - 1) * limit).execute();
  const totalPages = Math.ceil(total / limit);
  return { logs: await callLogs(db, found), pagination: { total, page, limit, hasMore: page * limit < total, totalPages } };
}

/** `POST /conversation/search`: other fields are ignored. */
export const searchCallsBody = z.object({ callIds: z.array(z.string()).min(1).max(MAX_LIST).describe('Repeated ids are read once.') }).passthrough();

/** `POST /conversation/search` `{callIds}`: those of the caller's calls, in the order asked; unknown ids are left out. */
export async function searchCallLogs(db: Db, actor: Actor, body: unknown): Promise<{ logs: Record<string, unknown>[]; total: number; requestedCount: number }> {
  const checked = searchCallsBody.safeParse(body);
  if (!checked.success) {
    // A list of strings that is only too long is told so; any other fault has one message, as this route always answered.
    const long = checked.error.issues.length === 1 && checked.error.issues[0]?.code === 'too_big';
    throw badRequest(long ? `callIds: at most ${MAX_LIST} call ids` : 'callIds: must be a non-empty array of call id strings');
  }
  const callIds = checked.data.callIds;
  const wanted = [...new Set(callIds)];
  const rows = await db.selectFrom('calls').selectAll().where('org_id', '=', actor.orgId).where('call_id', 'in', wanted).execute();
  const byId = new Map(rows.map((r) => [r.call_id, r]));
  const ordered = wanted.map((id) => byId.get(id)).filter((r): r is CallRow => r !== undefined);
  return { logs: await callLogs(db, ordered), total: ordered.length, requestedCount: callIds.length };
}

/** Call rows as call-log entries (one query for the revision numbers, a few for campaign retries). */
async function callLogs(db: Db, rows: CallRow[]): Promise<Record<string, unknown>[]> {
  const revisionIds = [...new Set(rows.map((r) => r.revision_id).filter((id): id is string => id !== null))];
  const numbers = new Map<string, number | null>();
  if (revisionIds.length) {
    for (const r of await db.selectFrom('revisions').select(['id', 'revision_number']).where('id', 'in', revisionIds).execute()) numbers.set(r.id, r.revision_number);
  }
  const retries = await retryLinks(db, rows.filter((r) => r.type === 'telephony_outbound').map((r) => r.call_id));
  return rows.map((row) => callLogDto(row, numbers.get(row.revision_id ?? '') ?? null, retries.get(row.call_id) ?? NO_RETRY));
}

/** Where a call stands among a campaign recipient's attempts (a call that is no campaign attempt: NO_RETRY). */
interface RetryLink {
  /** The attempt that retried this one (as `GET /conversation/{id}`), once placed. */
  retryCallId: string | null;
  /** How many attempts followed this one. */
  retryCount: number;
  /** 0 for a first attempt, n for the n-th retry. */
  retryAttemptNumber: number;
}
const NO_RETRY: RetryLink = { retryCallId: null, retryCount: 0, retryAttemptNumber: 0 };
/** The longest chain of attempts followed (a campaign's maxRetries is at most 10). */
const MAX_ATTEMPTS = 11;

/** Retry links of outbound calls: their attempts before and after, followed a level per query in each direction. */
async function retryLinks(db: Db, callIds: string[]): Promise<Map<string, RetryLink>> {
  const out = new Map<string, RetryLink>();
  if (!callIds.length) return out;
  const parentOf = new Map<string, string>();
  const childOf = new Map<string, string>();
  // Backwards: each call's retry_of, then theirs.
  let back = callIds;
  for (let i = 0; i < MAX_ATTEMPTS && back.length; i++) {
    const found = await db.selectFrom('outbound_calls').select(['call_id', 'retry_of']).where('call_id', 'in', back).where('retry_of', 'is not', null).execute();
    back = [];
    for (const r of found) {
      parentOf.set(r.call_id, r.retry_of as string);
      if (!parentOf.has(r.retry_of as string)) back.push(r.retry_of as string);
    }
  }
  // Forwards: the call retrying each, then the one retrying that.
  let ahead = callIds;
  for (let i = 0; i < MAX_ATTEMPTS && ahead.length; i++) {
    const found = await db.selectFrom('outbound_calls').select(['call_id', 'retry_of']).where('retry_of', 'in', ahead).execute();
    ahead = [];
    for (const r of found) {
      childOf.set(r.retry_of as string, r.call_id);
      ahead.push(r.call_id);
    }
  }
  for (const id of callIds) {
    let attempt = 0;
    for (let p = parentOf.get(id); p !== undefined && attempt < MAX_ATTEMPTS; p = parentOf.get(p)) attempt++;
    let after = 0;
    for (let c = childOf.get(id); c !== undefined && after < MAX_ATTEMPTS; c = childOf.get(c)) after++;
    if (attempt || after) out.set(id, { retryCallId: childOf.get(id) ?? null, retryCount: after, retryAttemptNumber: attempt });
  }
  return out;
}

/**
 * The SDK's `dispositionMetrics` of a call-log entry: an object of metric identifier -> value as text (the metrics
 * of `postCallAnalytics`, which keeps each one's confidence and reasoning); a metric left undecided (null) is absent.
 */
export function dispositionValues(analytics: Record<string, unknown> | null): Record<string, string> {
  const out: Record<string, string> = {};
  const list = analytics?.dispositionMetrics;
  if (!Array.isArray(list)) return out;
  for (const m of list as { identifier?: unknown; value?: unknown }[]) {
    if (!m || typeof m.identifier !== 'string' || m.value === null || m.value === undefined) continue;
    out[m.identifier] = typeof m.value === 'string' ? m.value : JSON.stringify(m.value);
  }
  return out;
}

/** One call-log entry: exactly the wire's fields (costs do not exist here: 0). */
function callLogDto(row: CallRow, versionNumber: number | null, retry: RetryLink): Record<string, unknown> {
  const metrics = parseJson<CallMetrics>(row.metrics);
  const analytics = postCallAnalytics(metrics);
  return {
    _id: row.id,
    callId: row.call_id,
    status: row.status,
    duration: callDuration(row),
    from: row.from_number,
    to: row.to_number,
    type: row.type,
    agentId: row.agent_id,
    recordingUrl: row.recording_mono ? recordingIdentifier(row.recording_mono) : null,
    recordingDualUrl: row.recording_dual ? recordingIdentifier(row.recording_dual) : null,
    disconnectionReason: row.end_reason,
    retryCount: retry.retryCount,
    createdAt: row.created_at,
    dispositionMetrics: dispositionValues(analytics),
    callFailureReason: row.status === 'failed' ? row.end_reason : null,
    callCost: 0,
    versionId: row.revision_id,
    versionNumber,
    isTest: Boolean(row.is_test),
    retryCallId: retry.retryCallId,
    retryAttemptNumber: retry.retryAttemptNumber,
    postCallAnalytics: analytics,
    turnLatencyMetrics: turnLatencyMetrics(metrics, row.updated_at, row.started_at),
  };
}
