// Deprecated `POST /product/import-phone-number`: one inbound trunk holding the number, one outbound trunk to the carrier.
import { isUniqueViolation } from '../store/db.js';
import { ApiError, badRequest, conflict } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { newId, nowIso } from '../store/ids.js';
import { readTrunkInput, trunkShape, type TrunkInput } from './trunk-input.js';
import { insertTrunk, numberKey, trunkNumbers, type TrunkDeps } from './trunks.js';
import { E164, carrierAddressKey, parseCarrierAddress } from './validation.js';
import { NOT_AN_OBJECT, checkBody, says, strictBody } from '../validation.js';
import { z } from 'zod';

const ADDRESS_MESSAGE = 'required, the carrier as host or host:port (an optional sip: or sips: prefix is stripped)';

/** The body: unknown fields refused; the carrier address form and the trunks' own rules are checked in code after it. */
export const importNumberBody = strictBody({
  phoneNumber: z.string(says('required, an E.164 number such as +15550100')).regex(E164),
  sipTerminationUrl: z.string(says(ADDRESS_MESSAGE)).describe('The carrier as host or host:port (an optional sip: or sips: prefix is stripped).'),
  name: z.string(says('must be a non-empty string')).regex(/\S/).optional(),
  sipUsername: trunkShape.authUsername.optional(),
  sipPassword: trunkShape.authPassword.optional(),
});
/** Trunk field names in validation messages, as this route's body calls them. */
const RENAMES: [RegExp, string][] = [
  [/^authUsername:/, 'sipUsername:'],
  [/^authPassword:/, 'sipPassword:'],
  [/^address:/, 'sipTerminationUrl:'],
];

function trunkInput(direction: 'inbound' | 'outbound', body: Record<string, unknown>, errors: string[]): TrunkInput | undefined {
  try {
    return readTrunkInput(direction, body);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    for (const e of err.errors) {
      const renamed = RENAMES.reduce((text, [from, to]) => text.replace(from, to), e);
      if (!errors.includes(renamed)) errors.push(renamed);
    }
    return undefined;
  }
}

const present = () => badRequest('Number already present');

export async function importPhoneNumber(deps: TrunkDeps, actor: Actor, body: unknown): Promise<Record<string, unknown>> {
  const { data: input, errors } = checkBody(importNumberBody, body);
  const address = parseCarrierAddress((body as Record<string, unknown> | null)?.sipTerminationUrl);
  if (!address && !errors.some((e) => e.startsWith('sipTerminationUrl: ') || e === NOT_AN_OBJECT)) errors.push(`sipTerminationUrl: ${ADDRESS_MESSAGE}`);
  if (errors.length || !input) throw badRequest(errors);
  const phone = input.phoneNumber;
  const name = input.name?.trim() ?? `Imported ${phone}`;
  const credentials = { authUsername: input.sipUsername ?? null, authPassword: input.sipPassword ?? null };
  const inbound = trunkInput('inbound', { name, numbers: [phone] }, errors);
  const outbound = trunkInput('outbound', { name, address: input.sipTerminationUrl, numbers: [phone], ...credentials }, errors);
  if (errors.length || !inbound || !outbound) throw badRequest(errors);

  const { db } = deps;
  const inUse = await db.selectFrom('sip_trunk_numbers').select('id').where('unique_key', '=', numberKey('inbound', actor.orgId, phone)).executeTakeFirst();
  const platform = await db.selectFrom('platform_numbers').select('id').where('phone_number', '=', phone).executeTakeFirst();
  if (inUse || platform) throw present();
  // One outbound trunk per carrier address: the organization's own trunk there takes the number; another's refuses.
  const key = carrierAddressKey(address as NonNullable<typeof address>, outbound.fields.transport ?? 'udp');
  const existing = await db.selectFrom('sip_trunks').select(['id', 'org_id']).where('address_key', '=', key).executeTakeFirst();
  if (existing && existing.org_id !== actor.orgId) throw conflict('trunk_address_exists', `sipTerminationUrl: an outbound trunk for ${key} already exists; there is one outbound trunk per carrier address`);
  const caller = await db.selectFrom('sip_trunk_numbers').select('trunk_id').where('unique_key', '=', numberKey('outbound', actor.orgId, phone)).executeTakeFirst();
  if (caller && caller.trunk_id !== existing?.id) throw present();

  const now = nowIso();
  const ids = await db.transaction().execute(async (tx) => {
    const inboundId = await insertTrunk(tx, deps.box, actor.orgId, 'inbound', inbound);
    let outboundId = existing?.id;
    if (outboundId) {
      const numbers = await trunkNumbers(tx, outboundId);
      if (!numbers.includes(phone)) {
        await tx
          .insertInto('sip_trunk_numbers')
          .values({ id: newId(), trunk_id: outboundId, org_id: actor.orgId, direction: 'outbound', phone_number: phone, unique_key: numberKey('outbound', actor.orgId, phone), position: numbers.length, created_at: now })
          .execute();
        await tx.updateTable('sip_trunks').set({ updated_at: now }).where('id', '=', outboundId).execute();
      }
    } else outboundId = await insertTrunk(tx, deps.box, actor.orgId, 'outbound', outbound);
    const product = await tx.selectFrom('sip_trunk_numbers').select(['id', 'created_at']).where('trunk_id', '=', inboundId).executeTakeFirstOrThrow();
    return { inboundId, outboundId, product };
  }).catch((err: unknown) => {
    throw isUniqueViolation(err) ? present() : err;
  });
  return {
    _id: ids.product.id,
    productType: 'custom',
    isActive: true,
    attributes: { name, phoneNumber: phone, outboundSipTrunkId: ids.outboundId, inboundSipTrunkId: ids.inboundId },
    agentId: null,
    createdAt: ids.product.created_at,
    updatedAt: ids.product.created_at,
  };
}
