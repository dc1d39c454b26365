// SIP trunks of an organization (wire §2): create, list, get, update, delete; uniqueness of numbers and carrier addresses.
import type { Selectable } from 'kysely';
import { isUniqueViolation, type Db, type Tx } from '../store/db.js';
import type { SipTrunksTable } from '../store/schema.js';
import { isObjectId, newId, nowIso } from '../store/ids.js';
import { badRequest, conflict, notFound, ownRow } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { DIRECTIONS, readTrunkInput, type Direction, type TrunkFields, type TrunkInput } from './trunk-input.js';
import { sealTrunkPassword } from './trunk-secrets.js';
import { trunkUsage } from './usage.js';
import { objectBody } from './validation.js';

export type TrunkRow = Selectable<SipTrunksTable>;

export interface TrunkDeps {
  db: Db;
  /** Seals trunk passwords with the vault's master key. */
  box: SecretBox;
}

const trunkNotFound = () => notFound('SIP trunk not found');

/** The unique key of a trunk number: inbound numbers across the platform, outbound caller IDs within an organization. */
export const numberKey = (direction: string, orgId: string, number: string): string => (direction === 'inbound' ? `in:${number}` : `out:${orgId}:${number}`);

export async function trunkNumbers(q: Db | Tx, trunkId: string): Promise<string[]> {
  const rows = await q.selectFrom('sip_trunk_numbers').select('phone_number').where('trunk_id', '=', trunkId).orderBy('position').execute();
  return rows.map((r) => r.phone_number);
}

export function trunkFields(row: TrunkRow, numbers: string[]): TrunkFields {
  return {
    name: row.name,
    numbers,
    allowedAddresses: JSON.parse(row.allowed_addresses) as string[],
    allowedNumbers: JSON.parse(row.allowed_numbers) as string[],
    authUsername: row.auth_username,
    mediaEncryption: row.media_encryption,
    noiseSuppression: Boolean(row.noise_suppression),
    ringingTimeoutSecs: row.ringing_timeout_secs,
    maxCallDurationSecs: row.max_call_duration_secs,
    headers: JSON.parse(row.headers) as Record<string, string>,
    address: row.address,
    addressKey: row.address_key,
    transport: row.transport as TrunkFields['transport'],
    cpsLimit: row.cps_limit,
  };
}

/** `SipTrunk`: every input field of its direction except the password, plus `hasAuthPassword`. */
export function trunkView(row: TrunkRow, numbers: string[]): Record<string, unknown> {
  const f = trunkFields(row, numbers);
  const common = { _id: row.id, organizationId: row.org_id, direction: row.direction, name: f.name };
  const auth = { authUsername: f.authUsername, hasAuthPassword: row.auth_password !== null, mediaEncryption: f.mediaEncryption };
  const times = { createdAt: row.created_at, updatedAt: row.updated_at };
  if (row.direction === 'inbound') {
    return {
      ...common,
      numbers: f.numbers,
      allowedAddresses: f.allowedAddresses,
      allowedNumbers: f.allowedNumbers,
      ...auth,
      noiseSuppression: f.noiseSuppression,
      ringingTimeoutSecs: f.ringingTimeoutSecs,
      maxCallDurationSecs: f.maxCallDurationSecs,
      headers: f.headers,
      ...times,
    };
  }
  return { ...common, address: f.address, transport: f.transport, numbers: f.numbers, ...auth, cpsLimit: f.cpsLimit, headers: f.headers, ...times };
}

/** A trunk of the actor's organization: 404 for unknown and malformed ids, 403 for another organization's. */
export async function loadTrunk(q: Db | Tx, orgId: string, trunkId: string): Promise<TrunkRow> {
  if (!isObjectId(trunkId)) throw trunkNotFound();
  return ownRow(await q.selectFrom('sip_trunks').selectAll().where('id', '=', trunkId).executeTakeFirst(), orgId, trunkNotFound, 'SIP trunk');
}

/** 409s for numbers or a carrier address another trunk (or a platform number) already holds. */
async function checkUnique(q: Db | Tx, orgId: string, direction: Direction, f: TrunkFields, selfId: string | null): Promise<void> {
  if (f.numbers.length) {
    const keys = f.numbers.map((n) => numberKey(direction, orgId, n));
    const taken = await q.selectFrom('sip_trunk_numbers').select(['phone_number', 'trunk_id', 'org_id']).where('unique_key', 'in', keys).execute();
    const other = taken.find((t) => t.trunk_id !== selfId);
    if (other) {
      const where = other.org_id === orgId ? `${direction} trunk ${other.trunk_id}` : 'another organization';
      throw conflict('number_in_use', `numbers: ${other.phone_number} is already ${direction === 'inbound' ? 'an inbound number' : 'a caller ID'} of ${where}`);
    }
    let platform = q.selectFrom('platform_numbers').select(['phone_number', 'org_id']).where('phone_number', 'in', f.numbers);
    // Inbound: a platform number (held or not) is already routed by the platform; outbound: one the organization holds.
    if (direction === 'outbound') platform = platform.where('org_id', '=', orgId);
    const held = await platform.executeTakeFirst();
    if (held) {
      throw conflict('number_in_use', `numbers: ${held.phone_number} is a platform number${held.org_id === orgId ? ' your organization holds' : ''}; ${direction === 'inbound' ? 'it is answered through the platform carrier' : 'it already is one of your caller IDs'}`);
    }
  }
  if (f.addressKey) {
    const same = await q.selectFrom('sip_trunks').select(['id', 'org_id']).where('address_key', '=', f.addressKey).executeTakeFirst();
    if (same && same.id !== selfId) {
      throw conflict('trunk_address_exists', `address: an outbound trunk for ${f.addressKey} already exists${same.org_id === orgId ? ` (${same.id})` : ''}; there is one outbound trunk per carrier address`);
    }
  }
}

/** Makes the trunk's number rows exactly `numbers`, in order, keeping the ids (product ids) of numbers that stay. */
async function syncNumbers(tx: Tx, trunk: { id: string; org_id: string; direction: string }, numbers: string[]): Promise<void> {
  const existing = new Map((await tx.selectFrom('sip_trunk_numbers').select(['id', 'phone_number']).where('trunk_id', '=', trunk.id).execute()).map((r) => [r.phone_number, r.id]));
  const gone = [...existing.entries()].filter(([n]) => !numbers.includes(n)).map(([, id]) => id);
  if (gone.length) await tx.deleteFrom('sip_trunk_numbers').where('id', 'in', gone).execute();
  const now = nowIso();
  for (const [position, number] of numbers.entries()) {
    const id = existing.get(number);
    if (id) await tx.updateTable('sip_trunk_numbers').set({ position }).where('id', '=', id).execute();
    else {
      await tx
        .insertInto('sip_trunk_numbers')
        .values({ id: newId(), trunk_id: trunk.id, org_id: trunk.org_id, direction: trunk.direction, phone_number: number, unique_key: numberKey(trunk.direction, trunk.org_id, number), position, created_at: now })
        .execute();
    }
  }
}

function columns(f: TrunkFields): Omit<SipTrunksTable, 'id' | 'org_id' | 'direction' | 'auth_password' | 'created_at' | 'updated_at'> {
  return {
    name: f.name,
    address: f.address,
    address_key: f.addressKey,
    transport: f.transport,
    allowed_addresses: JSON.stringify(f.allowedAddresses),
    allowed_numbers: JSON.stringify(f.allowedNumbers),
    auth_username: f.authUsername,
    media_encryption: f.mediaEncryption,
    noise_suppression: f.noiseSuppression ? 1 : 0,
    ringing_timeout_secs: f.ringingTimeoutSecs,
    max_call_duration_secs: f.maxCallDurationSecs,
    cps_limit: f.cpsLimit,
    headers: JSON.stringify(f.headers),
  };
}

/** A unique violation lost to a concurrent writer: the same 409 the checks give, or a generic one. */
async function uniqueRace<T>(q: Db, orgId: string, direction: Direction, f: TrunkFields, selfId: string | null, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    await checkUnique(q, orgId, direction, f, selfId);
    throw conflict('number_in_use', 'numbers: one of these numbers was just taken by another trunk');
  }
}

/** Inserts a validated trunk (its numbers too) inside `tx`; returns its id. */
export async function insertTrunk(tx: Tx, box: SecretBox, orgId: string, direction: Direction, input: TrunkInput): Promise<string> {
  const id = newId();
  const now = nowIso();
  await tx
    .insertInto('sip_trunks')
    .values({ id, org_id: orgId, direction, ...columns(input.fields), auth_password: input.password ? sealTrunkPassword(box, id, input.password) : null, created_at: now, updated_at: now })
    .execute();
  await syncNumbers(tx, { id, org_id: orgId, direction }, input.fields.numbers);
  return id;
}

export async function createTrunk(deps: TrunkDeps, actor: Actor, direction: Direction, body: unknown): Promise<Record<string, unknown>> {
  const input = readTrunkInput(direction, objectBody(body));
  await checkUnique(deps.db, actor.orgId, direction, input.fields, null);
  const id = await uniqueRace(deps.db, actor.orgId, direction, input.fields, null, () =>
    deps.db.transaction().execute((tx) => insertTrunk(tx, deps.box, actor.orgId, direction, input)));
  return getTrunk(deps.db, actor, id);
}

export async function getTrunk(db: Db, actor: Actor, trunkId: string): Promise<Record<string, unknown>> {
  const row = await loadTrunk(db, actor.orgId, trunkId);
  return trunkView(row, await trunkNumbers(db, row.id));
}

export async function listTrunks(db: Db, actor: Actor, query: URLSearchParams): Promise<{ trunks: Record<string, unknown>[] }> {
  const direction = query.get('direction');
  if (direction !== null && !DIRECTIONS.includes(direction as Direction)) throw badRequest(`direction: must be one of ${DIRECTIONS.join(', ')}`);
  let q = db.selectFrom('sip_trunks').selectAll().where('org_id', '=', actor.orgId);
  if (direction) q = q.where('direction', '=', direction);
  const rows = await q.orderBy('created_at').orderBy('id').execute();
  const numbers = new Map<string, string[]>();
  if (rows.length) {
    const all = await db.selectFrom('sip_trunk_numbers').select(['trunk_id', 'phone_number']).where('org_id', '=', actor.orgId).orderBy('position').execute();
    for (const n of all) numbers.set(n.trunk_id, [...(numbers.get(n.trunk_id) ?? []), n.phone_number]);
  }
  return { trunks: rows.map((r) => trunkView(r, numbers.get(r.id) ?? [])) };
}

export async function updateTrunk(deps: TrunkDeps, actor: Actor, trunkId: string, body: unknown): Promise<Record<string, unknown>> {
  const patch = objectBody(body);
  const row = await loadTrunk(deps.db, actor.orgId, trunkId);
  const direction = row.direction as Direction;
  const before = await trunkNumbers(deps.db, row.id);
  const input = readTrunkInput(direction, patch, { fields: trunkFields(row, before), hasPassword: row.auth_password !== null });
  const removed = before.filter((n) => !input.fields.numbers.includes(n));
  const users = await trunkUsage(deps.db, row, removed);
  if (users.length) throw conflict('trunk_in_use', `numbers: cannot remove ${removed.join(', ')} while in use: ${users.join('; ')}`);
  await checkUnique(deps.db, actor.orgId, direction, input.fields, row.id);
  await uniqueRace(deps.db, actor.orgId, direction, input.fields, row.id, () =>
    deps.db.transaction().execute(async (tx) => {
      const password = input.password === undefined ? {} : { auth_password: input.password === null ? null : sealTrunkPassword(deps.box, row.id, input.password) };
      await tx.updateTable('sip_trunks').set({ ...columns(input.fields), ...password, updated_at: nowIso() }).where('id', '=', row.id).execute();
      await syncNumbers(tx, row, input.fields.numbers);
    }));
  return getTrunk(deps.db, actor, row.id);
}

/** Deletes a trunk; 409 `trunk_in_use` naming each agent that answers it or dials from its numbers. */
export async function deleteTrunk(db: Db, actor: Actor, trunkId: string): Promise<{ deleted: true }> {
  const row = await loadTrunk(db, actor.orgId, trunkId);
  await db.transaction().execute(async (tx) => {
    const users = await trunkUsage(tx, row);
    if (users.length) throw conflict('trunk_in_use', `SIP trunk ${row.id} is in use: ${users.join('; ')}. Remove those first.`);
    await tx.deleteFrom('sip_trunk_numbers').where('trunk_id', '=', row.id).execute();
    await tx.deleteFrom('sip_trunks').where('id', '=', row.id).execute();
  });
  return { deleted: true };
}
