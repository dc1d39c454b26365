// The operator's platform number inventory (the numbers CLI): add, list and remove numbers held at the platform carrier.
import type { Selectable } from 'kysely';
import { isUniqueViolation, type Db } from '../store/db.js';
import type { PlatformNumbersTable } from '../store/schema.js';
import { newId, nowIso } from '../store/ids.js';
import { isE164 } from './validation.js';
import { platformNumberUsage } from './usage.js';

export type PlatformNumberRow = Selectable<PlatformNumbersTable>;

export interface NewPlatformNumber {
  phoneNumber: string;
  provider: string;
  /** ISO 3166 alpha-2; defaults to US for +1 numbers. */
  countryCode?: string;
  /** Defaults to the NANP area code for +1 numbers. */
  areaCode?: string;
  /** Name of an organization to hand the number to at once. */
  orgName?: string;
}

export interface InventoryEntry {
  id: string;
  phoneNumber: string;
  provider: string;
  countryCode: string;
  areaCode: string | null;
  orgId: string | null;
  orgName: string | null;
  rentedAt: string | null;
  createdAt: string;
}

/** Errors from the inventory are plain Errors: the CLI prints the message. */
export async function addPlatformNumber(db: Db, input: NewPlatformNumber): Promise<InventoryEntry> {
  const { phoneNumber } = input;
  if (!isE164(phoneNumber)) throw new Error(`${phoneNumber}: not an E.164 number (such as +15550100)`);
  if (!input.provider || !/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/.test(input.provider)) throw new Error('--provider: a carrier name of 1-64 letters, digits, spaces, . _ or -');
  const nanp = phoneNumber.startsWith('+1');
  const countryCode = (input.countryCode ?? (nanp ? 'US' : '')).toUpperCase();
  if (!/^[A-Z]{2}$/.test(countryCode)) throw new Error('--country: required for numbers outside +1, a two-letter ISO country code such as GB');
  const areaCode = input.areaCode ?? (nanp ? phoneNumber.slice(2, 5) : null);
  if (areaCode !== null && !/^\d{1,6}$/.test(areaCode)) throw new Error('--area: 1-6 digits');
  let orgId: string | null = null;
  if (input.orgName !== undefined) {
    const org = await db.selectFrom('organizations').select('id').where('name', '=', input.orgName).executeTakeFirst();
    if (!org) throw new Error(`--org: no organization named "${input.orgName}"`);
    orgId = org.id;
  }
  const trunk = await db.selectFrom('sip_trunk_numbers').select('trunk_id').where('unique_key', '=', `in:${phoneNumber}`).executeTakeFirst();
  if (trunk) throw new Error(`${phoneNumber} is an inbound number of SIP trunk ${trunk.trunk_id}; an inbound number is unique across the platform`);
  if (orgId) {
    const caller = await db.selectFrom('sip_trunk_numbers').select('trunk_id').where('unique_key', '=', `out:${orgId}:${phoneNumber}`).executeTakeFirst();
    if (caller) throw new Error(`${phoneNumber} is a caller ID of that organization's outbound trunk ${caller.trunk_id}`);
  }
  const id = newId();
  const now = nowIso();
  try {
    await db
      .insertInto('platform_numbers')
      .values({ id, phone_number: phoneNumber, provider: input.provider, country_code: countryCode, area_code: areaCode, org_id: orgId, rented_at: orgId ? now : null, created_at: now, updated_at: now })
      .execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw new Error(`${phoneNumber} is already in the inventory`);
    throw err;
  }
  return (await listPlatformNumbers(db)).find((n) => n.id === id) as InventoryEntry;
}

export async function listPlatformNumbers(db: Db): Promise<InventoryEntry[]> {
  const rows = await db
    .selectFrom('platform_numbers')
    .leftJoin('organizations', 'organizations.id', 'platform_numbers.org_id')
    .selectAll('platform_numbers')
    .select('organizations.name as org_name')
    .orderBy('platform_numbers.phone_number')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    phoneNumber: r.phone_number,
    provider: r.provider,
    countryCode: r.country_code,
    areaCode: r.area_code,
    orgId: r.org_id,
    orgName: r.org_name,
    rentedAt: r.rented_at,
    createdAt: r.created_at,
  }));
}

/**
 * Removes a number from the inventory. A number an organization holds is kept unless `force`; with it, the
 * number's answers, bridge caller IDs and transfer sources go with it.
 */
export async function removePlatformNumber(db: Db, phoneNumber: string, force = false): Promise<boolean> {
  const row = await db.selectFrom('platform_numbers').selectAll().where('phone_number', '=', phoneNumber).executeTakeFirst();
  if (!row) return false;
  if (row.org_id && !force) {
    const users = await platformNumberUsage(db, row.id);
    throw new Error(`${phoneNumber} is held by organization ${row.org_id}${users.length ? ` (${users.join('; ')})` : ''}; the organization releases it first (POST /product/release-number), or pass --force`);
  }
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('answer_sources').where('source_id', '=', row.id).execute();
    await tx.deleteFrom('caller_ids').where('platform_number_id', '=', row.id).execute();
    await tx.deleteFrom('transfer_sources').where('platform_number_id', '=', row.id).execute();
    await tx.deleteFrom('platform_numbers').where('id', '=', row.id).execute();
  });
  return true;
}
