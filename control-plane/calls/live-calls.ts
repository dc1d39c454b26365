// The calls that are up, in the store: each held by one server, which renews its rows while the calls run. A row
// not renewed for the lease belongs to a server that stopped (killed, crashed, its machine gone): the first live server
// to claim it ends the call (calls/live-calls.ts). Claims are conditional updates, so with several servers
// on one store each abandoned call is ended by one of them.
import type { Db } from '../store/db.js';
import { nowIso } from '../store/ids.js';
import type { LiveCallsTable } from '../store/schema.js';
import type { Selectable } from 'kysely';

export type LiveCallRow = Selectable<LiveCallsTable>;

/** Notes that `owner` holds call `callId` (a phone call with its SIP dialog); holding it again replaces the row. */
export async function holdLiveCall(db: Db, row: { callId: string; orgId: string; owner: string; sipDialog: unknown }): Promise<void> {
  const now = nowIso();
  const values = { call_id: row.callId, org_id: row.orgId, owner: row.owner, renewed_at: now, sip_dialog: row.sipDialog === null ? null : JSON.stringify(row.sipDialog), created_at: now };
  await db
    .insertInto('live_calls')
    .values(values)
    .onConflict((oc) => oc.column('call_id').doUpdateSet({ owner: values.owner, renewed_at: now, sip_dialog: values.sip_dialog }))
    .execute();
}

/** The call is over (its record final, its line closed): its row goes. Only its holder's row. */
export async function releaseLiveCall(db: Db, callId: string, owner: string): Promise<void> {
  await db.deleteFrom('live_calls').where('call_id', '=', callId).where('owner', '=', owner).execute();
}

/** Renews the rows of calls `callIds` that `owner` holds (one statement). */
export async function renewLiveCalls(db: Db, owner: string, callIds: string[]): Promise<void> {
  if (!callIds.length) return;
  await db.updateTable('live_calls').set({ renewed_at: nowIso() }).where('owner', '=', owner).where('call_id', 'in', callIds).execute();
}

/** Rows not renewed for `leaseMs` (their server stopped), oldest first, at most `limit`. */
export async function abandonedLiveCalls(db: Db, leaseMs: number, limit: number): Promise<LiveCallRow[]> {
  const before = new Date(Date.now() - leaseMs).toISOString();
  return db.selectFrom('live_calls').selectAll().where('renewed_at', '<', before).orderBy('renewed_at').limit(limit).execute();
}

/**
 * Takes an abandoned row for `owner`: true when this server is the one that ends the call (the row was still as read:
 * no other server claimed it meanwhile, and its holder did not come back to renew it).
 */
export async function claimLiveCall(db: Db, row: LiveCallRow, owner: string): Promise<boolean> {
  const result = await db
    .updateTable('live_calls')
    .set({ owner, renewed_at: nowIso() })
    .where('call_id', '=', row.call_id)
    .where('owner', '=', row.owner)
    .where('renewed_at', '=', row.renewed_at)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
