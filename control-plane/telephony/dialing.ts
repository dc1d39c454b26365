// Who dials (wire §3): numbers an organization dials from, an agent's transfer source, the deprecated caller-ids bridge.
import type { Db, Tx } from '../store/db.js';
import { nowIso, newId } from '../store/ids.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import { loadAgent, loadAgentForWrite, type Actor } from '../agents/agents.js';
import { loadTrunk, trunkNumbers } from './trunks.js';
import { z } from 'zod';
import { parseBody, says, strictBody } from '../validation.js';
import { E164 } from './validation.js';

type Q = Db | Tx;

export interface DialingNumber {
  phoneNumber: string;
  /** The platform number it is (one the organization holds), or the outbound trunk it belongs to. */
  platformNumberId: string | null;
  trunkId: string | null;
}

/** Exact match of an E.164 number against the numbers the organization dials from: platform numbers it holds, outbound trunk numbers. */
export async function findDialingNumber(q: Q, orgId: string, phoneNumber: string): Promise<DialingNumber | null> {
  const platform = await q.selectFrom('platform_numbers').select('id').where('phone_number', '=', phoneNumber).where('org_id', '=', orgId).executeTakeFirst();
  if (platform) return { phoneNumber, platformNumberId: platform.id, trunkId: null };
  const trunk = await q.selectFrom('sip_trunk_numbers').select('trunk_id').where('unique_key', '=', `out:${orgId}:${phoneNumber}`).executeTakeFirst();
  return trunk ? { phoneNumber, platformNumberId: null, trunkId: trunk.trunk_id } : null;
}

/** The number an agent's transfers dial from, or null when none is set. */
export async function transferSourceOf(q: Q, agentId: string): Promise<string | null> {
  const row = await q.selectFrom('transfer_sources').select('phone_number').where('agent_id', '=', agentId).executeTakeFirst();
  return row?.phone_number ?? null;
}

/** `PUT /agent/{agentId}/transfer-source` `{fromNumber}`: a number the organization dials from, or null to clear. */
/** `PUT /agent/{agentId}/transfer-source`: unknown fields refused. */
export const transferSourceBody = strictBody({
  fromNumber: z.string(says('required, an E.164 number your organization dials from, or null to clear')).regex(E164).nullable(),
});

export async function setTransferSource(db: Db, actor: Actor, agentId: string, body: unknown): Promise<{ agentId: string; fromNumber: string | null }> {
  const input = parseBody(transferSourceBody, body);
  await loadAgentForWrite(db, actor, agentId);
  if (input.fromNumber === null) {
    await db.deleteFrom('transfer_sources').where('agent_id', '=', agentId).execute();
    return { agentId, fromNumber: null };
  }
  const found = await findDialingNumber(db, actor.orgId, input.fromNumber);
  if (!found) throw badRequest(`fromNumber: ${input.fromNumber} is not a number your organization dials from (a platform number it holds or an outbound trunk number; exact match)`);
  const row = { org_id: actor.orgId, phone_number: found.phoneNumber, platform_number_id: found.platformNumberId, trunk_id: found.trunkId, updated_at: nowIso() };
  await db
    .insertInto('transfer_sources')
    .values({ agent_id: agentId, ...row })
    .onConflict((oc) => oc.column('agent_id').doUpdateSet(row))
    .execute();
  return { agentId, fromNumber: found.phoneNumber };
}

export async function getTransferSource(db: Db, actor: Actor, agentId: string): Promise<{ agentId: string; fromNumber: string | null }> {
  await loadAgent(db, actor, agentId);
  return { agentId, fromNumber: await transferSourceOf(db, agentId) };
}

export interface CallerIdView {
  phoneNumber: string;
  productId: string | null;
  sipTrunkId: string | null;
  isDefault: boolean;
  createdAt: string;
}

/** An agent's bridge caller IDs, first attached first (that one is the default). */
export async function callerIdsOf(q: Q, agentId: string): Promise<CallerIdView[]> {
  const rows = await q.selectFrom('caller_ids').selectAll().where('agent_id', '=', agentId).orderBy('position').execute();
  return rows.map((r, i) => ({ phoneNumber: r.phone_number, productId: r.platform_number_id, sipTrunkId: r.trunk_id, isDefault: i === 0, createdAt: r.created_at }));
}

/** `POST /agent/{agentId}/caller-ids` `{phoneNumber}` (a platform number) or `{sipTrunkId, phoneNumber}` (which of an outbound trunk's numbers). */
/** `POST /agent/{agentId}/caller-ids` (deprecated bridge): unknown fields refused. */
export const callerIdBody = strictBody({
  phoneNumber: z.string(says('required, an E.164 number')).regex(E164),
  sipTrunkId: z.string(says('must be an outbound SIP trunk id')).min(1).optional(),
});

export async function addCallerId(db: Db, actor: Actor, agentId: string, body: unknown): Promise<{ callerIds: CallerIdView[] }> {
  const input = parseBody(callerIdBody, body);
  await loadAgentForWrite(db, actor, agentId);
  const phone = input.phoneNumber;
  let ref: { platform_number_id: string | null; trunk_id: string | null };
  if (input.sipTrunkId !== undefined) {
    const trunk = await loadTrunk(db, actor.orgId, input.sipTrunkId).catch((err: unknown) => {
      // A reference in the body: 400 naming it, whether the trunk is missing or another organization's.
      throw err instanceof ApiError && (err.status === 403 || err.status === 404) ? badRequest('sipTrunkId: no SIP trunk with this id in your organization') : err;
    });
    if (trunk.direction !== 'outbound') throw badRequest('sipTrunkId: names an inbound trunk; caller IDs come from outbound trunks');
    if (!(await trunkNumbers(db, trunk.id)).includes(phone)) throw badRequest(`phoneNumber: ${phone} is not one of the numbers of trunk ${trunk.id}`);
    ref = { platform_number_id: null, trunk_id: trunk.id };
  } else {
    const found = await findDialingNumber(db, actor.orgId, phone);
    if (found?.trunkId) throw badRequest(`sipTrunkId: required for a trunk number (${phone} is a number of outbound trunk ${found.trunkId})`);
    if (!found) throw notFound(`Number not found: ${phone} is not a platform number your organization holds`);
    ref = { platform_number_id: found.platformNumberId, trunk_id: null };
  }
  await db.transaction().execute(async (tx) => {
    const last = await tx.selectFrom('caller_ids').select((eb) => eb.fn.max('position').as('max')).where('agent_id', '=', agentId).executeTakeFirst();
    const position = last?.max === null || last?.max === undefined ? 0 : Number(last.max) + 1;
    await tx
      .insertInto('caller_ids')
      .values({ id: newId(), org_id: actor.orgId, agent_id: agentId, phone_number: phone, ...ref, position, created_at: nowIso() })
      .onConflict((oc) => oc.columns(['agent_id', 'phone_number']).doNothing())
      .execute();
  });
  return { callerIds: await callerIdsOf(db, agentId) };
}

export async function listCallerIds(db: Db, actor: Actor, agentId: string): Promise<{ callerIds: CallerIdView[] }> {
  await loadAgent(db, actor, agentId);
  return { callerIds: await callerIdsOf(db, agentId) };
}

export async function removeCallerId(db: Db, actor: Actor, agentId: string, phoneNumber: string): Promise<{ callerIds: CallerIdView[] }> {
  await loadAgentForWrite(db, actor, agentId);
  const result = await db.deleteFrom('caller_ids').where('agent_id', '=', agentId).where('phone_number', '=', phoneNumber).executeTakeFirst();
  if (Number(result.numDeletedRows) === 0) throw notFound(`${phoneNumber} is not a caller ID of this agent`);
  return { callerIds: await callerIdsOf(db, agentId) };
}
