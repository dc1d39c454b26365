// Query parameters of the analytics routes: filters (agents, campaign, call type), the period and its previous one,
// a day, paging and sorting. Each is read under the reference's camelCase name or the SDK's snake_case one; a bad
// value is a 400 naming the parameter as the client spelled it. An agent or campaign of another organization: 403,
// an unknown one: 404 (the project's ownRow rule).
import type { Db } from '../store/db.js';
import { isObjectId } from '../store/ids.js';
import { badRequest, forbidden, notFound } from '../errors.js';
import type { Actor } from '../agents/agents.js';

const DAY_MS = 86_400_000;
/** The period when neither end is given: the last 30 days, today (UTC) included. */
export const DEFAULT_DAYS = 30;
/** The longest period an aggregate covers. */
export const MAX_DAYS = 731;
/** Most ids a comma-separated filter may list. */
const MAX_LIST = 100;

/** The call types a `callType` filter takes: the reference's short names and the call records' own. */
const CALL_TYPE_NAMES: Record<string, string> = {
  inbound: 'telephony_inbound',
  outbound: 'telephony_outbound',
  webcall: 'webcall',
  telephony_inbound: 'telephony_inbound',
  telephony_outbound: 'telephony_outbound',
};

export interface Filters {
  agentIds: string[] | null;
  campaignIds: string[] | null;
  /** Call record types (`webcall`, `telephony_inbound`, `telephony_outbound`). */
  types: string[] | null;
}

/** A period of creation times: [from, to) in ms since the epoch. */
export interface Period {
  fromMs: number;
  toMs: number;
}

export const NO_FILTERS: Filters = { agentIds: null, campaignIds: null, types: null };

/** The value of the first of `names` present (and its name), or null. */
function param(query: URLSearchParams, names: readonly string[]): { name: string; value: string } | null {
  for (const name of names) {
    const all = query.getAll(name);
    if (all.length) return { name, value: all.join(',') };
  }
  return null;
}

/** camelCase and snake_case spellings of a parameter. */
const spellings = (camel: string): string[] => [camel, camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];

function listOf(query: URLSearchParams, camel: string, check: (v: string) => boolean, what: string): { name: string; items: string[] } | null {
  const got = param(query, spellings(camel));
  if (!got) return null;
  const items = [...new Set(got.value.split(',').map((v) => v.trim()).filter(Boolean))];
  if (!items.length) return null;
  if (items.length > MAX_LIST) throw badRequest(`${got.name}: at most ${MAX_LIST} values`);
  const bad = items.filter((v) => !check(v));
  if (bad.length) throw badRequest(`${got.name}: ${bad.map((b) => JSON.stringify(b)).join(', ')} ${bad.length > 1 ? 'are' : 'is'} not ${what}`);
  return { name: got.name, items };
}

/** Each id must be a row of `table` of the caller's organization: 404 for none, 403 for another organization's. */
async function owned(db: Db, actor: Actor, table: 'agents' | 'campaigns', ids: string[], what: string, missing: string): Promise<void> {
  const rows = await db.selectFrom(table).select(['id', 'org_id']).where('id', 'in', ids).execute();
  const org = new Map(rows.map((r) => [r.id, r.org_id] as const));
  for (const id of ids) {
    const o = org.get(id);
    if (o === undefined) throw notFound(missing);
    if (o !== actor.orgId) throw forbidden(`This API key has no access to this ${what}`);
  }
}

/** `agentId` (comma-separated), `campaignId` (comma-separated) and `callType` (comma-separated). */
export async function readFilters(db: Db, actor: Actor, query: URLSearchParams, which: { campaign: boolean; callType: boolean } = { campaign: true, callType: true }): Promise<Filters> {
  const agents = listOf(query, 'agentId', isObjectId, 'a 24-hex agent id');
  if (agents) await owned(db, actor, 'agents', agents.items, 'agent', 'No agent found');
  const campaigns = which.campaign ? listOf(query, 'campaignId', isObjectId, 'a 24-hex campaign id') : null;
  if (campaigns) await owned(db, actor, 'campaigns', campaigns.items, 'campaign', 'Campaign not found');
  const types = which.callType ? listOf(query, 'callType', (v) => Object.hasOwn(CALL_TYPE_NAMES, v), `a call type (inbound, outbound, webcall)`) : null;
  return {
    agentIds: agents?.items ?? null,
    campaignIds: campaigns?.items ?? null,
    types: types ? [...new Set(types.items.map((t) => CALL_TYPE_NAMES[t] as string))] : null,
  };
}

/**
 * An ISO date or date-time as ms; `end`: a bare date means the end of that day (exclusive), a date-time is inclusive.
 * Times without a zone are UTC; an offset whose `+` arrived as a space (an unencoded query string) is read as `+`.
 */
function instant(name: string, given: string, end: boolean): number {
  const raw = given.trim().replace(/ (\d{2}:?\d{2})$/, '+$1');
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(raw);
  const zoned = dateOnly || /(?:Z|[+-]\d{2}:?\d{2})$/.test(raw);
  const ms = Date.parse(zoned ? raw : `${raw}Z`);
  if (!/^\d{4}-\d{2}-\d{2}(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/.test(raw) || !Number.isFinite(ms) || (dateOnly && isoDate(ms) !== raw)) {
    throw badRequest(`${name}: must be an ISO 8601 date or date-time (e.g. 2026-05-08 or 2026-05-08T07:51:50Z)`);
  }
  if (!end) return ms;
  return dateOnly ? ms + DAY_MS : ms + 1;
}

/** Midnight (UTC) after `ms`'s day. */
const endOfDay = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS + DAY_MS;

/**
 * `dateFrom` / `dateTo`: the period. Neither: the last DEFAULT_DAYS days up to the end of today (UTC); only `dateFrom`:
 * up to the end of today; only `dateTo`: the DEFAULT_DAYS days before it. At most MAX_DAYS long.
 */
export function readPeriod(query: URLSearchParams, now = Date.now()): Period {
  const from = param(query, spellings('dateFrom'));
  const to = param(query, spellings('dateTo'));
  const toMs = to && to.value !== '' ? instant(to.name, to.value, true) : endOfDay(now);
  const fromMs = from && from.value !== '' ? instant(from.name, from.value, false) : toMs - DEFAULT_DAYS * DAY_MS;
  const fromName = from?.name ?? 'dateFrom';
  if (fromMs >= toMs) throw badRequest(`${fromName}: must be before ${to?.name ?? 'dateTo'}${to ? '' : ' (default: the end of today, UTC)'}`);
  if (toMs - fromMs > MAX_DAYS * DAY_MS) throw badRequest(`${fromName}: the period may span at most ${MAX_DAYS} days`);
  return { fromMs, toMs };
}

/** The period of the same length just before `p` (the summary's comparison). */
export const previousPeriod = (p: Period): Period => ({ fromMs: p.fromMs - (p.toMs - p.fromMs), toMs: p.fromMs });

/** `date` (YYYY-MM-DD, required): that UTC day as a period. */
export function readDay(query: URLSearchParams): Period & { date: string } {
  const raw = query.get('date');
  if (raw === null || raw === '') throw badRequest('date: required (YYYY-MM-DD)');
  const ms = Date.parse(raw);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(raw) || !Number.isFinite(ms) || isoDate(ms) !== raw) throw badRequest('date: must be a date as YYYY-MM-DD');
  return { date: raw, fromMs: ms, toMs: ms + DAY_MS };
}

/** A `true` / `false` parameter (either spelling); `dflt` when absent. */
export function boolParam(query: URLSearchParams, camel: string, dflt: boolean): boolean {
  const got = param(query, spellings(camel));
  if (!got || got.value === '') return dflt;
  if (got.value === 'true') return true;
  if (got.value === 'false') return false;
  throw badRequest(`${got.name}: must be true or false`);
}

/** An integer parameter (either spelling) in [min, max]; `dflt` when absent. */
export function intOf(query: URLSearchParams, camel: string, dflt: number, min: number, max: number): number {
  const got = param(query, spellings(camel));
  if (!got) return dflt;
  const n = Number(got.value);
  if (got.value.trim() === '' || !Number.isInteger(n) || n < min || n > max) throw badRequest(`${got.name}: must be an integer from ${min} to ${max}`);
  return n;
}

/** One of `allowed` (either spelling of the parameter); `dflt` when absent. */
export function oneOf<T extends string>(query: URLSearchParams, camel: string, allowed: readonly T[], dflt: T): T {
  const got = param(query, spellings(camel));
  if (!got || got.value === '') return dflt;
  if (!(allowed as readonly string[]).includes(got.value)) throw badRequest(`${got.name}: must be one of ${allowed.join(', ')}`);
  return got.value as T;
}

/** YYYY-MM-DD of an instant (UTC). */
export const isoDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** `{from, to}` as the reference shows a period: its first and last day (UTC). */
export const periodDates = (p: Period): { from: string; to: string } => ({ from: isoDate(p.fromMs), to: isoDate(p.toMs - 1) });

/** Every day (YYYY-MM-DD) the period touches, in order. */
export function daysOf(p: Period): string[] {
  const out: string[] = [];
  for (let d = Math.floor(p.fromMs / DAY_MS) * DAY_MS; d < p.toMs; d += DAY_MS) out.push(isoDate(d));
  return out;
}

export { DAY_MS };
