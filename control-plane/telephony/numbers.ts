// An organization's numbers (wire §1): Product reads, platform numbers available to rent, rent and release.
import type { Db } from '../store/db.js';
import { isObjectId, nowIso } from '../store/ids.js';
import { badRequest, conflict, notFound, ownRow } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import type { PlatformNumberRow } from './inventory.js';
import { answeringAgents, type AgentRef } from './sources.js';
import { platformNumberUsage } from './usage.js';
import { z } from 'zod';
import { parseBody, says, strictBody } from '../validation.js';
import { E164 } from './validation.js';

/** `agent` (and, during the window, the deprecated `agentId`) of a number read. */
function answeredBy(agent: AgentRef | undefined, windowOpen: boolean): Record<string, unknown> {
  return { ...(windowOpen ? { agentId: agent?._id ?? null } : {}), agent: agent ?? null };
}

function platformProduct(row: PlatformNumberRow, agent: AgentRef | undefined, windowOpen: boolean): Record<string, unknown> {
  return {
    _id: row.id,
    productType: 'telephony',
    isActive: true,
    attributes: { provider: row.provider, phoneNumber: row.phone_number, countryCode: row.country_code, areaCode: row.area_code },
    ...answeredBy(agent, windowOpen),
    createdAt: row.rented_at ?? row.created_at,
    updatedAt: row.updated_at,
  };
}

/** `GET /product/phone-numbers`: the platform numbers the organization holds. */
export async function platformProducts(db: Db, actor: Actor, windowOpen: boolean): Promise<Record<string, unknown>[]> {
  const rows = await db.selectFrom('platform_numbers').selectAll().where('org_id', '=', actor.orgId).orderBy('rented_at').orderBy('phone_number').execute();
  const agents = await answeringAgents(db, rows.map((r) => r.id));
  return rows.map((r) => platformProduct(r, agents.get(r.id), windowOpen));
}

/**
 * The deprecated `customProducts`: derived live from the organization's inbound trunks, one product per number
 * (its id stable while the number stays on the trunk). A number is answered by the agent answering it, else by
 * the agent answering its trunk.
 */
export async function customProducts(db: Db, actor: Actor, windowOpen: boolean): Promise<Record<string, unknown>[]> {
  const rows = await db
    .selectFrom('sip_trunk_numbers')
    .innerJoin('sip_trunks', 'sip_trunks.id', 'sip_trunk_numbers.trunk_id')
    .select(['sip_trunk_numbers.id', 'sip_trunk_numbers.phone_number', 'sip_trunk_numbers.created_at', 'sip_trunks.id as trunk_id', 'sip_trunks.name', 'sip_trunks.updated_at'])
    .where('sip_trunk_numbers.org_id', '=', actor.orgId)
    .where('sip_trunk_numbers.direction', '=', 'inbound')
    .orderBy('sip_trunks.created_at')
    .orderBy('sip_trunk_numbers.position')
    .execute();
  const outbound = new Map(
    (await db.selectFrom('sip_trunk_numbers').select(['phone_number', 'trunk_id']).where('org_id', '=', actor.orgId).where('direction', '=', 'outbound').execute()).map((r) => [
      r.phone_number,
      r.trunk_id,
    ]),
  );
  const agents = await answeringAgents(db, [...rows.map((r) => r.id), ...new Set(rows.map((r) => r.trunk_id))]);
  return rows.map((r) => ({
    _id: r.id,
    productType: 'custom-telephony',
    isActive: true,
    attributes: {
      provider: 'sip-trunk',
      phoneNumber: r.phone_number,
      countryCode: null,
      areaCode: null,
      name: r.name,
      inboundSipTrunkId: r.trunk_id,
      outboundSipTrunkId: outbound.get(r.phone_number) ?? null,
    },
    ...answeredBy(agents.get(r.id) ?? agents.get(r.trunk_id), windowOpen),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }));
}

/** `GET /product/get-available-numbers`: the operator's unassigned numbers in a country (and area, and provider). */
export async function availableNumbers(db: Db, query: URLSearchParams): Promise<Record<string, unknown>[]> {
  const country = query.get('countryCode');
  const area = query.get('areaCode');
  const provider = query.get('provider');
  const errors: string[] = [];
  if (country === null || !/^[A-Za-z]{2}$/.test(country)) errors.push('countryCode: required, a two-letter ISO country code such as US');
  if (area !== null && !/^\d{1,6}$/.test(area)) errors.push('areaCode: must be 1-6 digits');
  if (provider !== null && provider.trim() === '') errors.push('provider: must not be empty');
  if (errors.length) throw badRequest(errors);
  let q = db.selectFrom('platform_numbers').selectAll().where('org_id', 'is', null).where('country_code', '=', (country as string).toUpperCase());
  if (area !== null) q = q.where('area_code', '=', area);
  if (provider !== null) q = q.where('provider', '=', provider);
  const rows = await q.orderBy('phone_number').limit(100).execute();
  return rows.map((r) => ({ phoneNumber: r.phone_number, countryCode: r.country_code, areaCode: r.area_code, provider: r.provider }));
}

/** `POST /product/rent-number`: unknown fields refused. */
export const rentNumberBody = strictBody({
  phoneNumber: z.string(says('required, an E.164 number such as +15550100')).regex(E164),
  provider: z.string(says('must be a non-empty string')).min(1).optional(),
});

/** `POST /product/release-number`: unknown fields refused. */
export const releaseNumberBody = strictBody({ productId: z.string(says('required, the _id of a number your organization holds')).min(1) });

/** `POST /product/rent-number` `{phoneNumber, provider?}`: the organization takes an available platform number. */
export async function rentNumber(db: Db, actor: Actor, body: unknown, windowOpen: boolean): Promise<Record<string, unknown>> {
  const input = parseBody(rentNumberBody, body);
  const phone = input.phoneNumber;
  let q = db.selectFrom('platform_numbers').selectAll().where('phone_number', '=', phone).where('org_id', 'is', null);
  if (input.provider !== undefined) q = q.where('provider', '=', input.provider);
  const row = await q.executeTakeFirst();
  if (!row) throw badRequest(`phoneNumber: ${phone} is not available${input.provider !== undefined ? ` from ${input.provider}` : ''} (see GET /product/get-available-numbers)`);
  const caller = await db.selectFrom('sip_trunk_numbers').select('trunk_id').where('unique_key', '=', `out:${actor.orgId}:${phone}`).executeTakeFirst();
  if (caller) throw conflict('number_in_use', `phoneNumber: ${phone} is already a caller ID of your outbound trunk ${caller.trunk_id}`);
  const now = nowIso();
  const taken = await db.updateTable('platform_numbers').set({ org_id: actor.orgId, rented_at: now, updated_at: now }).where('id', '=', row.id).where('org_id', 'is', null).executeTakeFirst();
  if (Number(taken.numUpdatedRows) === 0) throw badRequest(`phoneNumber: ${phone} is not available`);
  return platformProduct({ ...row, org_id: actor.orgId, rented_at: now, updated_at: now }, undefined, windowOpen);
}

/** `POST /product/release-number` `{productId}`: gives a platform number back; 400 naming who answers on it or dials from it. */
export async function releaseNumber(db: Db, actor: Actor, body: unknown): Promise<{ released: true }> {
  const id = parseBody(releaseNumberBody, body).productId;
  const found = isObjectId(id) ? await db.selectFrom('platform_numbers').selectAll().where('id', '=', id).executeTakeFirst() : undefined;
  // A number no organization holds is not found; another organization's is theirs (403).
  const row = ownRow(found?.org_id ? found : undefined, actor.orgId, () => notFound('Number not found: no platform number with this product id in your organization'), 'number');
  await db.transaction().execute(async (tx) => {
    const users = await platformNumberUsage(tx, row.id);
    if (users.length) throw badRequest(`Cannot release ${row.phone_number} while it is in use: ${users.join('; ')}`);
    await tx.updateTable('platform_numbers').set({ org_id: null, rented_at: null, updated_at: nowIso() }).where('id', '=', row.id).execute();
  });
  return { released: true };
}
