// The pronunciation dictionaries' table (control-plane/pronunciation/dicts.ts): per organization, items kept as JSON.
import type { Kysely, Migration } from 'kysely';

export const pronunciationDictsMigration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('pronunciation_dicts')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('items', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('pronunciation_dicts_org').on('pronunciation_dicts').columns(['org_id', 'created_at']).execute();
  },
};
