// The analytics index (issue 35 item 6): one covering index over the call columns the analytics routes read, so their
// aggregates read the index alone (SQLite) or by an index-only scan (PostgreSQL), never the call rows with their
// transcripts. Led by organization and creation time, as every analytics query is scoped and ranged on those.
import type { Kysely, Migration } from 'kysely';

/** The columns the aggregates of control-plane/analytics/ read, in the index's order. */
export const ANALYTICS_INDEX_COLUMNS = [
  'org_id',
  'created_at',
  'status',
  'duration_s',
  'agent_id',
  'type',
  'answered_by',
  'end_reason',
  'from_number',
  'to_number',
  'started_at',
  'ended_at',
] as const;

export const analyticsMigration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex('calls_org_analytics').on('calls').columns([...ANALYTICS_INDEX_COLUMNS]).execute();
  },
};
