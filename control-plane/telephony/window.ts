// The telephony rework's 45-day migration window: deprecated telephony paths and fields work (with `Deprecation: true`) until it ends.
import type { Db } from '../store/db.js';
import { nowIso } from '../store/ids.js';

export const WINDOW_DAYS = 45;
const NAME = 'telephony_rework_date';
export const DEPRECATION = { Deprecation: 'true' } as const;

/** Release date per store handle: set at start-up (stored date or PARLEY_TELEPHONY_REWORK_DATE), else read once. */
const releases = new WeakMap<Db, Date>();

/** The stored release date (written by the telephony migration, the day the deployment first ran with telephony). */
async function storedRelease(db: Db): Promise<Date> {
  const row = await db.selectFrom('server_secrets').select('value').where('name', '=', NAME).executeTakeFirst();
  if (row) return new Date(row.value);
  const now = nowIso();
  await db.insertInto('server_secrets').values({ name: NAME, value: now, created_at: now }).onConflict((oc) => oc.column('name').doNothing()).execute();
  return storedRelease(db);
}

/** Fixes this process's release date: the override when given, else the stored one. */
export async function initTelephonyWindow(db: Db, override?: Date): Promise<Date> {
  const release = override ?? (await storedRelease(db));
  releases.set(db, release);
  return release;
}

export interface TelephonyWindow {
  release: Date;
  endsAt: Date;
  /** Deprecated telephony items still work. */
  open: boolean;
}

export async function telephonyWindow(db: Db, now = Date.now()): Promise<TelephonyWindow> {
  const release = releases.get(db) ?? (await initTelephonyWindow(db));
  const endsAt = new Date(release.getTime() + WINDOW_DAYS * 86_400_000);
  return { release, endsAt, open: now < endsAt.getTime() };
}

/** Parses PARLEY_TELEPHONY_REWORK_DATE (an ISO date or date-time); throws naming the variable. */
export function parseReworkDate(raw: string | undefined): Date | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = raw.trim();
  const date = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(date.getTime())) throw new Error('PARLEY_TELEPHONY_REWORK_DATE must be an ISO date such as 2026-07-01');
  return date;
}
