// Campaign audiences (wire §5): audiences are listed, read and deleted; members are paged, searched, added and
// removed. The CSV upload that creates one (members: an E.164 number, an optional identifier, call variables from
// the other columns) is read as a stream in audience-upload.ts.
import { sql, type Selectable } from 'kysely';
import { isUniqueViolation, type Db, type Tx } from '../store/db.js';
import type { AudienceMembersTable, AudiencesTable } from '../store/schema.js';
import { isObjectId, newId, nowIso } from '../store/ids.js';
import { badRequest, conflict, notFound, ownRow } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { intParam } from '../query.js';
import { parseCallVariables, RESERVED_VARIABLES, type CallVariables } from '../calls/variables.js';
import { isE164 } from '../telephony/validation.js';
import { checkBody, collapseField, says, strictBody } from '../validation.js';
import { DISCARDING, nextTurn, removePending } from './audience-removal.js';
import { z } from 'zod';

export type AudienceRow = Selectable<AudiencesTable>;
type MemberRow = Selectable<AudienceMembersTable>;

/** Most members an audience holds (an upload's rows, and every later addition). */
export const MAX_MEMBERS = 100_000;
/** Most members one add or delete request names. */
const MAX_PER_REQUEST = 10_000;
/** Rows named in one error message; the rest are counted. */
export const SHOWN = 5;
/** Rows per INSERT (well under both dialects' bound-parameter limits). */
export const BATCH = 500;
/** Joins a member's searchable values: never part of a query, so a match cannot span two values. */
const SEPARATOR = '\u001f';

/** A member about to be stored. */
export interface NewMember {
  phoneNumber: string;
  identifier: string | null;
  variables: CallVariables;
}

/**
 * Who still needs an audience (a campaign): one description per user; any refuses the delete with 409
 * `audience_in_use`. Campaigns pass theirs to deleteAudience; until then nothing holds an audience.
 */
export type AudienceUsers = (q: Tx, audience: AudienceRow) => Promise<string[]>;

const audienceNotFound = () => notFound('Audience not found');

/** An audience of the actor's organization: 404 for unknown and malformed ids, 403 for another organization's. */
export async function loadAudience(q: Db | Tx, orgId: string, audienceId: string): Promise<AudienceRow> {
  if (!isObjectId(audienceId)) throw audienceNotFound();
  // One whose upload is still being written does not exist yet (audience-upload.ts).
  return ownRow(await q.selectFrom('audiences').selectAll().where('id', '=', audienceId).where('pending_since', 'is', null).executeTakeFirst(), orgId, audienceNotFound, 'audience');
}

/** `Audience`: the SDK's fields plus `memberCount`. */
export function audienceView(row: AudienceRow, memberCount: number): Record<string, unknown> {
  return {
    _id: row.id,
    name: row.name,
    description: row.description,
    phoneNumberColumnName: row.phone_number_column,
    identifierColumnName: row.identifier_column,
    organization: row.org_id,
    createdBy: row.created_by,
    memberCount,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** `AudienceMember`; `data` is the member as a row of its audience's CSV (the SDK reads that). */
function memberView(row: MemberRow, audience: AudienceRow): Record<string, unknown> {
  const variables = JSON.parse(row.variables) as CallVariables;
  const data: Record<string, unknown> = { [audience.phone_number_column]: row.phone_number };
  if (audience.identifier_column) data[audience.identifier_column] = row.identifier;
  return { _id: row.id, phoneNumber: row.phone_number, identifier: row.identifier, variables, data: { ...data, ...variables }, createdAt: row.created_at };
}

export async function memberCounts(q: Db | Tx, audienceIds: string[]): Promise<Map<string, number>> {
  if (!audienceIds.length) return new Map();
  const rows = await q
    .selectFrom('audience_members')
    .select(['audience_id', (eb) => eb.fn.countAll().as('n')])
    .where('audience_id', 'in', audienceIds)
    .groupBy('audience_id')
    .execute();
  return new Map(rows.map((r) => [r.audience_id, Number(r.n)]));
}

/** `line 3 ("555-0100"), line 7 ("x") and 12 more`: the first few of a list of offending rows. */
export function someLines(rows: { line: number; value?: string }[]): string {
  const shown = rows.slice(0, SHOWN).map((r) => (r.value === undefined ? `line ${r.line}` : `line ${r.line} (${JSON.stringify(r.value.slice(0, 40))})`));
  return rows.length > SHOWN ? `${shown.join(', ')} and ${rows.length - SHOWN} more` : shown.join(', ');
}

/** Errors for CSV columns that cannot be call variable names (parseCallVariables' rules; the platform's own names refused). */
export function columnNameErrors(columns: string[]): string[] {
  const all = parseCallVariables(Object.fromEntries(columns.map((c) => [c, ''])), 'file');
  const whole = all.errors.filter((e) => e.startsWith('file:'));
  if (whole.length) return whole;
  return columns.flatMap((c) => {
    if (RESERVED_VARIABLES.has(c)) return [`file: column "${c}" is a variable the platform sets itself at call start; rename it`];
    if (parseCallVariables({ [c]: '' }).errors.length) return [`file: column "${c}" is not a valid variable name (names start with a letter or _ and hold up to 64 letters, digits or _)`];
    return [];
  });
}

export const searchText = (m: NewMember): string =>
  [m.phoneNumber, m.identifier ?? '', ...Object.values(m.variables).map(String)].filter((v) => v !== '').join(SEPARATOR).toLowerCase();

/**
 * Inserts members in INSERTs of BATCH rows, positions from `firstPosition`; answers their ids in order. `turns`: a
 * turn of the event loop between batches (a large addition in one transaction does not hold the loop).
 */
export async function insertMembers(tx: Tx, audienceId: string, members: NewMember[], firstPosition: number, now: string, turns = false): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < members.length; start += BATCH) {
    if (turns && start > 0) await nextTurn();
    const rows = members.slice(start, start + BATCH).map((m, k) => ({
      id: ids[ids.push(newId()) - 1] as string,
      audience_id: audienceId,
      phone_number: m.phoneNumber,
      identifier: m.identifier,
      variables: JSON.stringify(m.variables),
      search_text: searchText(m),
      position: firstPosition + start + k,
      created_at: now,
    }));
    await tx.insertInto('audience_members').values(rows).execute();
  }
  return ids;
}

export async function getAudience(db: Db, actor: Actor, audienceId: string): Promise<Record<string, unknown>> {
  const row = await loadAudience(db, actor.orgId, audienceId);
  return audienceView(row, (await memberCounts(db, [row.id])).get(row.id) ?? 0);
}

/** The organization's audiences, newest first. */
export async function listAudiences(db: Db, actor: Actor): Promise<Record<string, unknown>[]> {
  const rows = await db.selectFrom('audiences').selectAll().where('org_id', '=', actor.orgId).where('pending_since', 'is', null).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  const counts = await memberCounts(db, rows.map((r) => r.id));
  return rows.map((r) => audienceView(r, counts.get(r.id) ?? 0));
}

/**
 * Deletes an audience and its members; 409 `audience_in_use` naming whatever `users` reports (campaigns). It is
 * hidden at once, then its members go a slice at a time (100,000 in one statement held the event loop a third of
 * a second); a delete a stopped server left unfinished is swept (audience-removal.ts).
 */
export async function deleteAudience(db: Db, actor: Actor, audienceId: string, users?: AudienceUsers): Promise<{ deleted: true }> {
  const row = await loadAudience(db, actor.orgId, audienceId);
  await db.transaction().execute(async (tx) => {
    const holding = users ? await users(tx, row) : [];
    if (holding.length) throw conflict('audience_in_use', `Audience ${row.id} is in use: ${holding.join('; ')}. Remove those first.`);
    await tx.updateTable('audiences').set({ pending_since: DISCARDING }).where('id', '=', row.id).execute();
  });
  await removePending(db, row.id, DISCARDING);
  return { deleted: true };
}

export interface MemberPage {
  members: Record<string, unknown>[];
  totalCount: number;
  page: number;
  offset: number;
  totalPages: number;
  hasMore: boolean;
}

/** One page of members in file order: `page` (from 1) and `offset` (the page size, as on call logs; the SDK's `limit` too). */
async function memberPage(db: Db, audience: AudienceRow, query: URLSearchParams, pattern: string | null): Promise<MemberPage> {
  const page = intParam(query, 'page', 1, 1, 1_000_000);
  const offset = intParam(query, !query.has('offset') && query.has('limit') ? 'limit' : 'offset', 10, 1, 100);
  let base = db.selectFrom('audience_members').where('audience_id', '=', audience.id);
  if (pattern !== null) base = base.where(sql<boolean>`search_text like ${pattern} escape '\\'`);
  const totalCount = Number((await base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const rows = await base.selectAll().orderBy('position').orderBy('id').limit(offset).offset((page - 1) * offset).execute();
  return {
    members: rows.map((r) => memberView(r, audience)),
    totalCount,
    page,
    offset,
    totalPages: Math.ceil(totalCount / offset),
    hasMore: page * offset < totalCount,
  };
}

export async function listMembers(db: Db, actor: Actor, audienceId: string, query: URLSearchParams): Promise<MemberPage> {
  return memberPage(db, await loadAudience(db, actor.orgId, audienceId), query, null);
}

/** Members whose number, identifier or any variable value contains `query` (case-insensitive), paged as the list. */
export async function searchMembers(db: Db, actor: Actor, audienceId: string, query: URLSearchParams): Promise<MemberPage & { query: string }> {
  const term = (query.get('query') ?? '').trim();
  if (term === '' || term.length > 200 || /[\u0000-\u001f]/.test(term)) throw badRequest('query: required, 1-200 characters without control characters');
  const audience = await loadAudience(db, actor.orgId, audienceId);
  const pattern = `%${term.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return { ...(await memberPage(db, audience, query, pattern)), query: term };
}

/** One `{phoneNumber, ...variables}` of an add request (the audience's CSV column names work for the number and identifier too). */
function readMember(raw: unknown, field: string, audience: AudienceRow, errors: string[]): NewMember | null {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    errors.push(`${field}: must be an object {phoneNumber, ...variables}`);
    return null;
  }
  const { phoneNumber, ...rest } = raw as Record<string, unknown>;
  const phoneColumn = audience.phone_number_column;
  const inColumn = phoneColumn in rest ? rest[phoneColumn] : undefined;
  delete rest[phoneColumn];
  const before = errors.length;
  const number = phoneNumber ?? inColumn;
  if (phoneNumber !== undefined && inColumn !== undefined && phoneNumber !== inColumn) errors.push(`${field}.phoneNumber: differs from ${field}.${phoneColumn}; give the number once`);
  else if (!isE164(number)) errors.push(`${field}.phoneNumber: required, an E.164 phone number such as +15550100`);
  let identifier: string | null = null;
  const idColumn = audience.identifier_column;
  if (idColumn) {
    const value = rest[idColumn];
    delete rest[idColumn];
    if ((typeof value === 'string' && value.trim() !== '') || (typeof value === 'number' && Number.isFinite(value))) identifier = String(value).trim();
    else errors.push(`${field}.${idColumn}: required, this audience's identifier (a non-empty string)`);
  }
  for (const key of Object.keys(rest)) if (RESERVED_VARIABLES.has(key)) errors.push(`${field}.${key}: a variable the platform sets itself at call start`);
  const parsed = parseCallVariables(rest, field);
  errors.push(...parsed.errors);
  return errors.length === before ? { phoneNumber: number as string, identifier, variables: parsed.variables } : null;
}

/** `DELETE /audience/{id}/members`: unknown fields refused. */
export const deleteMembersBody = strictBody({ memberIds: z.array(z.string().min(1)).min(1).max(MAX_PER_REQUEST).describe('Repeated ids count once.') });

/**
 * `POST /audience/{id}/members`: unknown fields refused. Each member is `{phoneNumber, ...}` whose other fields are the
 * audience's columns (its identifier column required when it has one) and call variables, so members are checked
 * in code against the audience, under the upload's rules.
 */
const MEMBERS = `required, 1-${MAX_PER_REQUEST} members {phoneNumber, ...variables}`;
export const addMembersBody = strictBody({
  members: z
    .array(z.record(z.unknown(), says('must be an object {phoneNumber, ...variables}')), says(MEMBERS))
    .min(1, MEMBERS)
    .max(MAX_PER_REQUEST, MEMBERS)
    .describe('Each `{phoneNumber, ...variables}` (E.164; the number may also come in the audience\'s phone column).'),
});

/** The string ids of a `{memberIds}` body, or a 400. */
function memberIdsOf(body: unknown): string[] {
  const { data, errors } = checkBody(deleteMembersBody, body);
  if (errors.length) throw badRequest(collapseField(errors, 'memberIds', `required, 1-${MAX_PER_REQUEST} member ids`));
  return [...new Set(data?.memberIds)];
}

function chunks<T>(items: T[], size = BATCH): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * `POST /audience/{id}/members`: adds members under the upload's rules. A number already in the audience (or
 * repeated in the request) is skipped and counted; an identifier another member holds is a 409.
 */
export async function addMembers(db: Db, actor: Actor, audienceId: string, body: unknown): Promise<{ members: Record<string, unknown>[]; added: number; skipped: number }> {
  const checked = checkBody(addMembersBody, body);
  if (checked.errors.length) throw badRequest(checked.errors.slice(0, 20));
  const list = checked.data?.members as unknown[];
  const errors: string[] = [];
  const audience = await loadAudience(db, actor.orgId, audienceId);
  // Up to 10,000 members: checked, looked up, written and read back a slice at a time, each slice in its own turn of
  // the event loop (shared with uploads and removals), so a large addition does not hold other requests and calls.
  // The writes stay one transaction: all are added, or none.
  const read: (NewMember | null)[] = [];
  for (const [k, part] of chunks(list).entries()) {
    if (k > 0) await nextTurn();
    read.push(...part.map((m, i) => readMember(m, `members[${k * BATCH + i}]`, audience, errors)));
  }
  if (errors.length) throw badRequest(errors.slice(0, 20));
  // The first of a repeated number counts; an identifier given to two numbers is refused.
  const byNumber = new Map<string, NewMember>();
  for (const m of read as NewMember[]) if (!byNumber.has(m.phoneNumber)) byNumber.set(m.phoneNumber, m);
  const fresh = [...byNumber.values()];
  const ids = new Set<string>();
  for (const m of fresh) {
    if (m.identifier === null) continue;
    if (ids.has(m.identifier)) errors.push(`members: identifier "${m.identifier}" is given to two different numbers`);
    ids.add(m.identifier);
  }
  if (errors.length) throw badRequest(errors);

  const added = await db.transaction().execute(async (tx) => {
    const present = new Set<string>();
    for (const [k, part] of chunks(fresh.map((m) => m.phoneNumber)).entries()) {
      if (k > 0) await nextTurn();
      const rows = await tx.selectFrom('audience_members').select('phone_number').where('audience_id', '=', audience.id).where('phone_number', 'in', part).execute();
      for (const r of rows) present.add(r.phone_number);
    }
    const adding = fresh.filter((m) => !present.has(m.phoneNumber));
    for (const part of chunks(adding.flatMap((m) => (m.identifier === null ? [] : [m.identifier])))) {
      const held = await tx.selectFrom('audience_members').select(['identifier', 'phone_number']).where('audience_id', '=', audience.id).where('identifier', 'in', part).executeTakeFirst();
      if (held) throw conflict('identifier_in_use', `members: identifier "${held.identifier}" already belongs to member ${held.phone_number} of this audience`);
    }
    const stats = await tx
      .selectFrom('audience_members')
      .select((eb) => [eb.fn.countAll().as('n'), eb.fn.max('position').as('last')])
      .where('audience_id', '=', audience.id)
      .executeTakeFirstOrThrow();
    if (Number(stats.n) + adding.length > MAX_MEMBERS) throw badRequest(`members: an audience holds at most ${MAX_MEMBERS} members; this one has ${Number(stats.n)}`);
    const now = nowIso();
    const memberIds = await insertMembers(tx, audience.id, adding, stats.last === null ? 0 : Number(stats.last) + 1, now, true);
    if (adding.length) await tx.updateTable('audiences').set({ updated_at: now }).where('id', '=', audience.id).execute();
    return memberIds;
  }).catch((err: unknown) => {
    if (isUniqueViolation(err)) throw conflict('member_exists', 'members: another request just added one of these numbers or identifiers; try again');
    throw err;
  });
  const members: Record<string, unknown>[] = [];
  for (const part of chunks(added)) {
    await nextTurn();
    const rows = await db.selectFrom('audience_members').selectAll().where('id', 'in', part).execute();
    members.push(...rows.sort((a, b) => a.position - b.position).map((r) => memberView(r, audience)));
  }
  return { members, added: added.length, skipped: list.length - added.length };
}

/** `DELETE /audience/{id}/members`: removes the named members of this audience (other ids are not counted). */
export async function deleteMembers(db: Db, actor: Actor, audienceId: string, body: unknown): Promise<{ deleted: number; deletedCount: number }> {
  const ids = memberIdsOf(body);
  const audience = await loadAudience(db, actor.orgId, audienceId);
  const deleted = await db.transaction().execute(async (tx) => {
    let n = 0;
    for (const part of chunks(ids)) {
      const res = await tx.deleteFrom('audience_members').where('audience_id', '=', audience.id).where('id', 'in', part).executeTakeFirst();
      n += Number(res.numDeletedRows);
    }
    if (n) await tx.updateTable('audiences').set({ updated_at: nowIso() }).where('id', '=', audience.id).execute();
    return n;
  });
  return { deleted, deletedCount: deleted };
}
