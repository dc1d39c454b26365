// A running call's transcript in the store: one row per entry, upserted as turns happen, so a turn costs its own
// size and not the whole transcript's. When the call ends its record gets the whole transcript and the rows go.
import type { Db, Tx } from '../store/db.js';
import type { TranscriptEntry } from './calls.js';

export interface TurnWrite {
  seq: number;
  entry: TranscriptEntry;
}

/** Inserts or replaces the given entries of a call's transcript. */
export async function saveTurns(db: Db | Tx, callId: string, turns: TurnWrite[]): Promise<void> {
  if (!turns.length) return;
  await db
    .insertInto('call_turns')
    .values(turns.map(({ seq, entry }) => ({ call_id: callId, seq, role: entry.role, content: entry.content, at: entry.timestamp, interrupted: entry.interrupted ? 1 : 0 })))
    .onConflict((oc) =>
      oc.columns(['call_id', 'seq']).doUpdateSet((eb) => ({
        role: eb.ref('excluded.role'),
        content: eb.ref('excluded.content'),
        at: eb.ref('excluded.at'),
        interrupted: eb.ref('excluded.interrupted'),
      })),
    )
    .execute();
}

/** The transcript of a call that is still running, in order. */
export async function loadTurns(db: Db | Tx, callId: string): Promise<TranscriptEntry[]> {
  const rows = await db.selectFrom('call_turns').selectAll().where('call_id', '=', callId).orderBy('seq').execute();
  return rows.map((r) => ({ role: r.role as TranscriptEntry['role'], content: r.content, timestamp: r.at, ...(r.interrupted ? { interrupted: true } : {}) }));
}

/** Removes a call's turn rows (its record now holds the whole transcript). */
export async function clearTurns(db: Db | Tx, callId: string): Promise<void> {
  await db.deleteFrom('call_turns').where('call_id', '=', callId).execute();
}
