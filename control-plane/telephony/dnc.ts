// The do-not-call list (issue 33 item 3; `GET /dnc` in the hosted reference): per organization, numbers it must not
// call, each for the whole organization or for one agent. Entries are added, listed, searched and removed here; the
// checks outbound calls (refused), campaigns (recipients skipped) and the outbound queue (calls not yet dialed are
// closed as `cancelled`, reason `dnc`) make against the list are here too.
import { sql, type Expression, type RawBuilder, type Selectable, type SqlBool } from 'kysely';
import { z } from 'zod';
import type { Db, Tx } from '../store/db.js';
import type { DncEntriesTable, OutboundCallsTable } from '../store/schema.js';
import { isObjectId, newId, nowIso } from '../store/ids.js';
import { badRequest, notFound, ownRow } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { checkBody, NOT_AN_OBJECT, says, strictBody } from '../validation.js';
import { E164 } from './validation.js';

export type DncRow = Selectable<DncEntriesTable>;
type OutboundRow = Selectable<OutboundCallsTable>;

/** Most numbers one `POST /dnc` adds. */
export const MAX_DNC_BATCH = 1000;
/** Page size bounds of `GET /dnc` (the wire clamps to 1-500), and its default. */
const MAX_PAGE_SIZE = 500;
const DEFAULT_PAGE_SIZE = 20;
/** Rows per INSERT / IN list (well under both dialects' bound-parameter limits). */
const BATCH = 400;
/** Numbers named in one error message or campaign event; the rest are counted. */
const SHOWN = 10;
/** `source` of an entry added through the API. */
const MANUAL = 'manual';
/** `scope` of an entry for the whole organization (an agent's entry has the agent id). */
const ORG_SCOPE = 'org';
/** The `end_reason` (`callFailureReason`) of a queued call closed because its number was listed. */
export const DNC_REASON = 'dnc';

/** Characters people write inside a number that carry no meaning: spaces, dashes, dots, parentheses. */
const SEPARATORS = /[\s\-.()]/g;
const NUMBER_RULE = 'an E.164 number: + and 7-15 digits (spaces, dashes, dots and parentheses are ignored)';

/** The E.164 form of a number as people write it (`+1 (555) 030-0001` -> `+15550300001`); null when it is not one. */
export function normalizePhone(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const compact = raw.replace(SEPARATORS, '');
  return E164.test(compact) ? compact : null;
}

const phoneField = z.string(says(`must be ${NUMBER_RULE}`)).max(40);
/** `POST /dnc`: one number or a batch, for the organization or one agent. Unknown fields refused. */
export const dncAddBody = strictBody({
  phoneNumber: phoneField.optional().describe('One number to list (give this or `phoneNumbers`).'),
  phoneNumbers: z
    .array(phoneField, says(`an array of 1-${MAX_DNC_BATCH} numbers, each ${NUMBER_RULE}`))
    .min(1)
    .max(MAX_DNC_BATCH)
    .optional()
    .describe(`A batch of 1-${MAX_DNC_BATCH} numbers (one bad number refuses the whole batch; numbers already listed in this scope are not listed twice).`),
  agentId: z.string(says('must be a 24-character hex agent id')).optional().describe("Lists the numbers for this agent's calls only; omitted: for every call of the organization."),
  reason: z.string(says('must be a string of at most 500 characters')).max(500).nullish().describe('Why the number is listed (kept with the entry).'),
});

/** The entry as the API shows it. */
export function dncDoc(row: DncRow): Record<string, unknown> {
  return { _id: row.id, phoneNumber: row.phone_number, agentId: row.agent_id, reason: row.reason, source: row.source, createdBy: row.created_by, createdAt: row.created_at };
}

/**
 * The agent a request scopes to: 400 when `agentId` is not a 24-hex id, 404 when no agent of the organization has it
 * (another organization's agent included).
 */
async function scopeAgent(q: Db | Tx, orgId: string, agentId: string): Promise<string> {
  if (!/^[0-9a-f]{24}$/i.test(agentId)) throw badRequest(`agentId: must be a 24-character hex agent id (got ${JSON.stringify(agentId.slice(0, 40))})`);
  const id = agentId.toLowerCase();
  const agent = await q.selectFrom('agents').select('id').where('id', '=', id).where('org_id', '=', orgId).executeTakeFirst();
  if (!agent) throw notFound(`agentId: no agent ${id} in your organization`);
  return id;
}

/** Splits a list into chunks of BATCH. */
function chunks<T>(list: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += BATCH) out.push(list.slice(i, i + BATCH));
  return out;
}

export interface DncAdded {
  /** The entries of the numbers asked for, in the order given (each once): new ones and those already listed. */
  entries: Record<string, unknown>[];
  added: number;
  existing: number;
  /** Calls of these numbers that were waiting in the outbound queue, taken out of it: the caller records them (cancelled, `dnc`). */
  closed: OutboundRow[];
}

/**
 * `POST /dnc`: lists the numbers (normalized to E.164) in one scope; a number already listed in that scope stays as it
 * was. Then calls of these numbers still waiting in the outbound queue (queued, or claimed and not yet being dialed)
 * leave it: they are returned for the caller to record as cancelled with reason `dnc`.
 */
export async function addDncEntries(db: Db, actor: Actor, body: unknown): Promise<DncAdded> {
  const { errors } = checkBody(dncAddBody, body);
  if (errors.length === 1 && errors[0] === NOT_AN_OBJECT) throw badRequest(errors);
  const input = (body ?? {}) as Record<string, unknown>;
  if (!errors.length) {
    if (input.phoneNumber !== undefined && input.phoneNumbers !== undefined) errors.push('phoneNumbers: give phoneNumber or phoneNumbers, not both');
    else if (input.phoneNumber === undefined && input.phoneNumbers === undefined) errors.push(`phoneNumber: required (or phoneNumbers, a batch), ${NUMBER_RULE}`);
  }
  const numbers: string[] = [];
  if (!errors.length) {
    if (typeof input.phoneNumber === 'string') {
      const n = normalizePhone(input.phoneNumber);
      if (n) numbers.push(n);
      else errors.push(`phoneNumber: ${JSON.stringify(input.phoneNumber)} is not ${NUMBER_RULE}`);
    } else {
      const bad: string[] = [];
      (input.phoneNumbers as string[]).forEach((raw, i) => {
        const n = normalizePhone(raw);
        if (n) numbers.push(n);
        else bad.push(`phoneNumbers[${i}]: ${JSON.stringify(raw)}`);
      });
      if (bad.length) errors.push(`${bad.slice(0, SHOWN).join(', ')}${bad.length > SHOWN ? ` and ${bad.length - SHOWN} more` : ''}: not ${NUMBER_RULE}; nothing was listed`);
    }
  }
  if (errors.length) throw badRequest(errors);
  const agentId = typeof input.agentId === 'string' ? await scopeAgent(db, actor.orgId, input.agentId) : null;
  const scope = agentId ?? ORG_SCOPE;
  const reason = typeof input.reason === 'string' && input.reason.trim() ? input.reason.trim() : null;
  const unique = [...new Set(numbers)];

  // A number already listed in this scope keeps its entry (the insert skips it, whoever listed it meanwhile): the
  // entries whose ids were made here are the ones added.
  const now = nowIso();
  const ids = new Set<string>();
  await db.transaction().execute(async (tx) => {
    for (const part of chunks(unique)) {
      const values = part.map((n) => ({ id: newId(), org_id: actor.orgId, phone_number: n, agent_id: agentId, scope, reason, source: MANUAL, created_by: actor.name, created_at: now }));
      for (const v of values) ids.add(v.id);
      await tx.insertInto('dnc_entries').values(values).onConflict((oc) => oc.columns(['org_id', 'phone_number', 'scope']).doNothing()).execute();
    }
  });
  const rows: DncRow[] = [];
  for (const part of chunks(unique)) {
    rows.push(...(await db.selectFrom('dnc_entries').selectAll().where('org_id', '=', actor.orgId).where('scope', '=', scope).where('phone_number', 'in', part).execute()));
  }
  const byNumber = new Map(rows.map((r) => [r.phone_number, r]));
  const added = rows.filter((r) => ids.has(r.id)).length;
  const closed = await takeListedFromQueue(db, actor.orgId, agentId, unique);
  return { entries: unique.map((n) => dncDoc(byNumber.get(n)!)), added, existing: unique.length - added, closed };
}

/**
 * Calls of the organization (of `agentId`'s, when given) to `numbers` that are still only waiting in the outbound
 * queue (queued, or claimed by a dialer and not yet marked for their pace slot): each leaves the queue (`done`) in one
 * guarded update, so a dialer that claimed it no longer sends it. A call marked for its slot (`slotted`) or ringing
 * goes on. Returns the calls taken out (their records are still `in_queue`: the caller records their outcome).
 */
export async function takeListedFromQueue(db: Db, orgId: string, agentId: string | null, numbers: readonly string[]): Promise<OutboundRow[]> {
  const taken: OutboundRow[] = [];
  for (const part of chunks(numbers)) {
    let q = db.selectFrom('outbound_calls').selectAll().where('org_id', '=', orgId).where('to_number', 'in', part).where('state', 'in', ['queued', 'claimed']);
    if (agentId) q = q.where('agent_id', '=', agentId);
    for (const row of await q.execute()) {
      const res = await db.updateTable('outbound_calls').set({ state: 'done', updated_at: nowIso() }).where('call_id', '=', row.call_id).where('state', 'in', ['queued', 'claimed']).executeTakeFirst();
      if (Number(res.numUpdatedRows) === 1) taken.push(row);
    }
  }
  return taken;
}

/**
 * True when a number is listed for a call of `agent` in organization `org` (an entry for the whole organization, or
 * one for that agent), as an SQL condition over column references or values: one code path for queries that check a
 * row (the outbound queue's claim, a campaign's recipients) and for a single number.
 */
export function listedSql(org: Expression<unknown>, agent: Expression<unknown>, phone: Expression<unknown>): RawBuilder<SqlBool> {
  return sql<SqlBool>`exists (select 1 from dnc_entries dnc where dnc.org_id = ${org} and dnc.phone_number = ${phone} and (dnc.agent_id is null or dnc.agent_id = ${agent}))`;
}

/** The entry that bars `agentId` from calling `phone` (the organization's own first), or null. */
export async function dncEntryFor(q: Db | Tx, orgId: string, agentId: string, phone: string): Promise<DncRow | null> {
  const rows = await q
    .selectFrom('dnc_entries')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('phone_number', '=', phone)
    .where((eb) => eb.or([eb('agent_id', 'is', null), eb('agent_id', '=', agentId)]))
    .orderBy('created_at')
    .execute();
  return rows.find((r) => r.agent_id === null) ?? rows[0] ?? null;
}

/** A 400 naming `field` when `phone` is on the do-not-call list for `agentId`'s calls. */
export async function refuseListed(q: Db | Tx, orgId: string, agentId: string, phone: string, field: string): Promise<void> {
  const entry = await dncEntryFor(q, orgId, agentId, phone);
  if (!entry) return;
  const scope = entry.agent_id ? `for agent ${entry.agent_id}` : 'for the whole organization';
  throw badRequest(`${field}: ${phone} is on the do-not-call list (entry ${entry.id}, ${scope}${entry.reason ? `: ${entry.reason}` : ''}); remove the entry (DELETE /dnc/${entry.id}) to call it`);
}

/** The record of a queued call taken out of the queue for the list: `cancelled`, reason `dnc`, no duration. */
export async function endListedRecord(q: Db | Tx, callId: string): Promise<void> {
  const now = nowIso();
  await q
    .updateTable('calls')
    .set({ status: 'cancelled', end_reason: DNC_REASON, ended_at: now, duration_s: 0, updated_at: now })
    .where('call_id', '=', callId)
    .where('status', '=', 'in_queue')
    .execute();
}

/** Numbers of a list as an event's text: the first few, then how many more. */
export function numbersText(numbers: readonly string[]): string {
  return `${numbers.slice(0, SHOWN).join(', ')}${numbers.length > SHOWN ? ` and ${numbers.length - SHOWN} more` : ''}`;
}

const SORT_FIELDS = { createdAt: 'created_at', phoneNumber: 'phone_number' } as const;

/** A `page`-like query parameter: a positive integer string; 400 naming it otherwise. */
function positiveInt(query: URLSearchParams, name: string): number | null {
  const raw = query.get(name);
  if (raw === null || raw.trim() === '') return null;
  if (!/^\d+$/.test(raw.trim())) throw badRequest(`${name}: must be a positive integer`);
  return Number(raw.trim());
}

/** `GET /dnc`: the organization's entries (one agent's with `agentId`), searched by number, sorted and paged. */
export async function listDnc(db: Db, actor: Actor, query: URLSearchParams): Promise<Record<string, unknown>> {
  const page = positiveInt(query, 'page') ?? 1;
  if (page < 1 || page > 1_000_000) throw badRequest('page: must be a positive integer from 1 to 1000000');
  // The page size is clamped, as the wire says, rather than refused.
  const offset = Math.min(MAX_PAGE_SIZE, Math.max(1, positiveInt(query, 'offset') ?? DEFAULT_PAGE_SIZE));
  const sortField = query.get('sortField') ?? 'createdAt';
  if (!(sortField in SORT_FIELDS)) throw badRequest(`sortField: one of ${Object.keys(SORT_FIELDS).join(', ')}`);
  const sortOrder = query.get('sortOrder') ?? 'desc';
  if (sortOrder !== 'asc' && sortOrder !== 'desc') throw badRequest('sortOrder: asc or desc');
  const search = (query.get('search') ?? '').trim();
  if (search.length > 100) throw badRequest('search: at most 100 characters');
  const agentParam = query.get('agentId');
  const agentId = agentParam !== null ? await scopeAgent(db, actor.orgId, agentParam) : null;

  let base = db.selectFrom('dnc_entries').where('org_id', '=', actor.orgId);
  if (agentId) base = base.where('agent_id', '=', agentId);
  if (search) {
    // Numbers are stored as + and digits: the search's digits are looked for anywhere in them (a search with no
    // digit matches no number).
    const digits = search.replace(/\D/g, '');
    base = digits ? base.where('phone_number', 'like', `%${digits}%`) : base.where(sql<SqlBool>`1 = 0`);
  }
  const total = Number((await base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const rows = await base.selectAll().orderBy(SORT_FIELDS[sortField as keyof typeof SORT_FIELDS], sortOrder).orderBy('id', sortOrder).limit(offset).offset((page - 1) * offset).execute();
  return {
    entries: rows.map(dncDoc),
    pagination: { page, offset, total, totalPages: Math.ceil(total / offset), hasMore: page * offset < total },
  };
}

const entryNotFound = () => notFound('Do-not-call entry not found');

/** An entry of the organization: 404 for unknown and malformed ids, 403 for another organization's. */
async function loadEntry(db: Db, orgId: string, id: string): Promise<DncRow> {
  if (!isObjectId(id)) throw entryNotFound();
  return ownRow(await db.selectFrom('dnc_entries').selectAll().where('id', '=', id).executeTakeFirst(), orgId, entryNotFound, 'do-not-call entry');
}

/** `GET /dnc/{id}`. */
export async function getDnc(db: Db, actor: Actor, id: string): Promise<Record<string, unknown>> {
  return dncDoc(await loadEntry(db, actor.orgId, id));
}

/** `DELETE /dnc/{id}`: the number may be called again (in that scope); answers the entry removed. */
export async function deleteDnc(db: Db, actor: Actor, id: string): Promise<Record<string, unknown>> {
  const row = await loadEntry(db, actor.orgId, id);
  await db.deleteFrom('dnc_entries').where('id', '=', row.id).execute();
  return { deleted: 1, entries: [dncDoc(row)] };
}

/**
 * `DELETE /dnc?phoneNumber=&agentId=`: removes a number's entry in one scope (without `agentId` the organization-wide
 * one, with it that agent's), as `POST /dnc` made it; 404 when there is none.
 */
export async function deleteDncByNumber(db: Db, actor: Actor, query: URLSearchParams): Promise<Record<string, unknown>> {
  const raw = query.get('phoneNumber');
  if (raw === null || raw.trim() === '') throw badRequest(`phoneNumber: required (or DELETE /dnc/{id}), ${NUMBER_RULE}`);
  const phone = normalizePhone(raw);
  if (!phone) throw badRequest(`phoneNumber: ${JSON.stringify(raw)} is not ${NUMBER_RULE}`);
  const agentParam = query.get('agentId');
  const agentId = agentParam !== null ? await scopeAgent(db, actor.orgId, agentParam) : null;
  const row = await db.selectFrom('dnc_entries').selectAll().where('org_id', '=', actor.orgId).where('phone_number', '=', phone).where('scope', '=', agentId ?? ORG_SCOPE).executeTakeFirst();
  if (!row) throw notFound(`${phone} is not on the do-not-call list ${agentId ? `for agent ${agentId}` : 'for the whole organization'}`);
  await db.deleteFrom('dnc_entries').where('id', '=', row.id).execute();
  return { deleted: 1, entries: [dncDoc(row)] };
}
