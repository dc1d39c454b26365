// Removing audiences without holding the event loop: an audience going away (a failed upload, a delete) is hidden
// first, then its members are deleted a slice at a time, in turns shared with the uploads under way. A removal a
// stopped server left unfinished, and an upload it never finished, are swept later.
import type { Db } from '../store/db.js';

/** Members deleted per statement. */
const REMOVE_BATCH = 500;
/** A pending upload with no batch written for this long is abandoned (its server died, or its client stalled). */
export const ABANDONED_AFTER_MS = 15 * 60_000;
/**
 * `pending_since` of an audience being removed: sorts before every time, so a removal cut short is swept again, and an
 * upload still writing to it finds it gone (its batches and its commit ask for a time after this).
 */
export const DISCARDING = '0';

/**
 * Uploads (and removals) take turns: one slice of one of them per turn of the event loop, so six at once hold the
 * loop no longer than one does. (Each yielding on its own would let all six run their slices back to back in the
 * same turn: setImmediate callbacks queued before a turn all run in it.)
 */
const waiting: (() => void)[] = [];
let turning = false;
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!turning) {
      turning = true;
      setImmediate(giveTurn);
    }
  });
}
function giveTurn(): void {
  // The one resumed runs right after this callback (a microtask), before the loop turns again.
  waiting.shift()?.();
  if (waiting.length) setImmediate(giveTurn);
  else turning = false;
}

/**
 * Deletes a pending audience (never a visible one): claims it first, so an upload still writing to it fails rather
 * than commit what is left, then deletes its members a slice at a time, then it. `seen`: the `pending_since` the
 * caller read (the claim fails if someone else took the audience since); DISCARDING for one already hidden.
 */
export async function removePending(db: Db, id: string, seen?: string): Promise<void> {
  const claim = db.updateTable('audiences').set({ pending_since: DISCARDING }).where('id', '=', id);
  const claimed = await (seen === undefined ? claim.where('pending_since', 'is not', null) : claim.where('pending_since', '=', seen)).executeTakeFirst();
  if (Number(claimed.numUpdatedRows) !== 1) return;
  for (;;) {
    const slice = db.selectFrom('audience_members').select('id').where('audience_id', '=', id).limit(REMOVE_BATCH);
    const res = await db.deleteFrom('audience_members').where('id', 'in', slice).executeTakeFirst();
    await nextTurn();
    if (Number(res.numDeletedRows) === 0) break;
  }
  await db.deleteFrom('audiences').where('id', '=', id).where('pending_since', '=', DISCARDING).execute();
}

/**
 * Removes uploads no batch has been written to for ABANDONED_AFTER_MS (their server died mid-upload, or their client
 * stalled), and removals a stopped server left unfinished; answers how many.
 */
export async function sweepAbandonedUploads(db: Db, now = Date.now()): Promise<number> {
  const cutoff = new Date(now - ABANDONED_AFTER_MS).toISOString();
  const rows = await db.selectFrom('audiences').select(['id', 'pending_since']).where('pending_since', 'is not', null).where('pending_since', '<', cutoff).execute();
  for (const { id, pending_since } of rows) await removePending(db, id, pending_since as string);
  return rows.length;
}
