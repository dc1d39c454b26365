// The organization surfaces' tables (issue 35 item 6): agents' concurrency reservations and call actions, with their
// row types (kept here, seen through orgDb(), so that schema.ts stays as it is).
import type { Kysely, Migration } from 'kysely';
import type { Db, Tx } from '../store/db.js';

/** One agent's reserved places per channel (control-plane/organization/concurrency.ts). */
export interface ConcurrencyReservationsTable {
  agent_id: string;
  org_id: string;
  webcall: number;
  outbound: number;
  inbound: number;
  chat: number;
  updated_at: string;
}

/** A call action of an agent (control-plane/organization/call-actions.ts). */
export interface CallActionsTable {
  id: string;
  org_id: string;
  agent_id: string;
  category: string;
  provider: string;
  action_type: string | null;
  object: string | null;
  /** JSON: `{phoneNumberFieldName?, conditions?: [{field, operator, value}], body?, ...}`. */
  config: string;
  created_at: string;
  updated_at: string;
}

export interface OrganizationDatabase {
  concurrency_reservations: ConcurrencyReservationsTable;
  call_actions: CallActionsTable;
}

/** The store's connection (or a transaction) seen with these tables' types. */
export const orgDb = (db: Db | Tx): Kysely<OrganizationDatabase> => db as unknown as Kysely<OrganizationDatabase>;

export const organizationSurfacesMigration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('concurrency_reservations')
      .addColumn('agent_id', 'text', (c) => c.primaryKey().references('agents.id').onDelete('cascade'))
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('webcall', 'integer', (c) => c.notNull())
      .addColumn('outbound', 'integer', (c) => c.notNull())
      .addColumn('inbound', 'integer', (c) => c.notNull())
      .addColumn('chat', 'integer', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('concurrency_reservations_org').on('concurrency_reservations').columns(['org_id']).execute();
    await db.schema
      .createTable('call_actions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
      .addColumn('category', 'text', (c) => c.notNull())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('action_type', 'text')
      .addColumn('object', 'text')
      .addColumn('config', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('call_actions_agent').on('call_actions').columns(['org_id', 'agent_id', 'created_at']).execute();
  },
};
