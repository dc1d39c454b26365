// The knowledge-base tables (issue 35 item 1) and their typed view: knowledge bases, their items (text, Markdown, files)
// and the items' chunks, ranked by the store's own full-text index (SQLite FTS5 over the chunks, PostgreSQL a
// generated english `tsvector` with a GIN index). The migration is listed in control-plane/store/migrations.ts.
import { PostgresAdapter, sql, type Generated, type Kysely, type Migration } from 'kysely';
import type { Db, Tx } from '../store/db.js';

export interface KnowledgeBasesTable {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface KbItemsTable {
  id: string;
  org_id: string;
  kb_id: string;
  /** `text` (plain text or Markdown), `file` (an uploaded file), `url`. */
  item_type: string;
  title: string | null;
  file_name: string | null;
  content_type: string | null;
  size: number | null;
  /** The item's text as indexed (Markdown kept as written). */
  content: string | null;
  /** pending, processing, completed, failed. */
  processing_status: string;
  error: string | null;
  chunk_count: number;
  /** JSON object. */
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface KbChunksTable {
  /** Integer key: FTS5's rowid on SQLite. */
  n: Generated<number>;
  org_id: string;
  kb_id: string;
  item_id: string;
  seq: number;
  content: string;
}

export interface KnowledgeDatabase {
  knowledge_bases: KnowledgeBasesTable;
  kb_items: KbItemsTable;
  kb_chunks: KbChunksTable;
}

export type KbDb = Kysely<KnowledgeDatabase>;

/** The store's connection (or a transaction) seen with the knowledge-base tables' types. */
export const kbDb = (db: Db | Tx): KbDb => db as unknown as KbDb;

/** Whether the store is PostgreSQL (the search differs by dialect; everything else is one code path). */
export const isPostgres = (db: Db | Tx | KbDb): boolean => db.getExecutor().adapter instanceof PostgresAdapter;

export const knowledgeBaseMigration: Migration = {
  async up(db: Kysely<any>) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    await db.schema
      .createTable('knowledge_bases')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('knowledge_bases_org').on('knowledge_bases').columns(['org_id', 'created_at']).execute();
    await db.schema
      .createTable('kb_items')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('kb_id', 'text', (c) => c.notNull().references('knowledge_bases.id').onDelete('cascade'))
      .addColumn('item_type', 'text', (c) => c.notNull())
      .addColumn('title', 'text')
      .addColumn('file_name', 'text')
      .addColumn('content_type', 'text')
      .addColumn('size', 'integer')
      .addColumn('content', 'text')
      .addColumn('processing_status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('chunk_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('kb_items_kb').on('kb_items').columns(['kb_id', 'created_at']).execute();
    await db.schema
      .createTable('kb_chunks')
      .addColumn('n', postgres ? 'bigserial' : 'integer', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('kb_id', 'text', (c) => c.notNull())
      .addColumn('item_id', 'text', (c) => c.notNull().references('kb_items.id').onDelete('cascade'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('kb_chunks_item').on('kb_chunks').columns(['item_id', 'seq']).execute();
    await db.schema.createIndex('kb_chunks_kb').on('kb_chunks').columns(['kb_id']).execute();
    if (postgres) {
      // English stemming and stop words; ranked with ts_rank_cd (control-plane/knowledge/search.ts).
      await sql`ALTER TABLE kb_chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED`.execute(db);
      await sql`CREATE INDEX kb_chunks_tsv ON kb_chunks USING GIN (tsv)`.execute(db);
    } else {
      // FTS5 over the chunks' text (external content, kept by triggers); Porter stemming, ranked with bm25().
      await sql`CREATE VIRTUAL TABLE kb_chunks_fts USING fts5(content, content='kb_chunks', content_rowid='n', tokenize='porter unicode61')`.execute(db);
      await sql`CREATE TRIGGER kb_chunks_ai AFTER INSERT ON kb_chunks BEGIN INSERT INTO kb_chunks_fts(rowid, content) VALUES (new.n, new.content); END`.execute(db);
      await sql`CREATE TRIGGER kb_chunks_ad AFTER DELETE ON kb_chunks BEGIN INSERT INTO kb_chunks_fts(kb_chunks_fts, rowid, content) VALUES ('delete', old.n, old.content); END`.execute(db);
    }
  },
};
