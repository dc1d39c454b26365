// Knowledge bases of an organization (issue 35 item 1; `/knowledgebase` in the hosted reference): create, list, read,
// rename, delete (refused while an agent uses it), and their items: text and Markdown given in the body or uploaded
// as a file, each chunked (control-plane/knowledge/chunking.ts) into the store's full-text index with its processing
// status. Another organization's knowledge base answers the project's general 403, an unknown id 404 (errors.ts).
import { z } from 'zod';
import type { Db, Tx } from '../store/db.js';
import { newId, nowIso } from '../store/ids.js';
import { badRequest, notFound, ownRow } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { bodyObject, parseBody, says } from '../validation.js';
import { chunkText } from './chunking.js';
import { kbDb, type KbItemsTable, type KnowledgeBasesTable } from './migration.js';

type KbRow = KnowledgeBasesTable;
type ItemRow = KbItemsTable;

/** Largest text of one item (characters); about 1,500 chunks. */
export const MAX_ITEM_CHARS = 1_000_000;
/** Chunks per INSERT (well under both dialects' bound-parameter limits). */
const INSERT_BATCH = 200;

const nameField = z
  .string(says('must be a string of 1-40 characters'))
  .transform((s) => s.trim())
  .pipe(z.string().min(1, 'must be a string of 1-40 characters').max(40, 'must be a string of 1-40 characters'));
const descriptionField = z.string(says('must be a string of at most 2000 characters')).max(2000, 'must be a string of at most 2000 characters').nullish();

/** `POST /knowledgebase` and `POST /knowledgebase/{id}`: a name (1-40 characters, trimmed) and an optional description. */
export const knowledgeBaseBody = bodyObject({
  name: nameField.describe('Name of the knowledge base (1-40 characters, trimmed).'),
  description: descriptionField.describe('Free text shown with the knowledge base.'),
});

export const TEXT_CONTENT_TYPES = ['text/plain', 'text/markdown'] as const;

/** `POST /knowledgebase/{id}/items/text`: an item of plain text or Markdown. */
export const textItemBody = bodyObject({
  content: z
    .string(says(`must be a string of 1-${MAX_ITEM_CHARS} characters`))
    .min(1, `must be a string of 1-${MAX_ITEM_CHARS} characters`)
    .max(MAX_ITEM_CHARS, `must be a string of 1-${MAX_ITEM_CHARS} characters`)
    .describe('The text to index (plain text or Markdown).'),
  title: z.string(says('must be a string of at most 200 characters')).max(200, 'must be a string of at most 200 characters').nullish().describe('Shown in the item list; defaults to the first line.'),
  contentType: z.enum(TEXT_CONTENT_TYPES, says(`must be one of ${TEXT_CONTENT_TYPES.join(', ')}`)).optional().describe('Default text/plain.'),
});

const missingKb = (id: string) => () => notFound(`Knowledge base ${id} not found`);

export function knowledgeBaseDoc(row: KbRow, processingStatus: string): Record<string, unknown> {
  return {
    _id: row.id,
    name: row.name,
    description: row.description,
    organization: row.org_id,
    createdBy: row.created_by,
    processingStatus,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function itemDoc(row: ItemRow): Record<string, unknown> {
  return {
    _id: row.id,
    itemType: row.item_type,
    metadata: JSON.parse(row.metadata) as unknown,
    knowledgeBaseId: row.kb_id,
    processingStatus: row.processing_status,
    fileName: row.file_name,
    contentType: row.content_type,
    size: row.size,
    key: null,
    title: row.title,
    content: row.content,
    chunkCount: row.chunk_count,
    error: row.error,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A knowledge base's status from its items': processing while any is, failed when all failed, else completed; pending when empty. */
function statusOf(items: string[]): string {
  if (!items.length) return 'pending';
  if (items.some((s) => s === 'pending' || s === 'processing')) return 'processing';
  if (items.every((s) => s === 'failed')) return 'failed';
  return 'completed';
}

async function statuses(q: Db | Tx, kbIds: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string[]>();
  if (kbIds.length) {
    const rows = await kbDb(q).selectFrom('kb_items').select(['kb_id', 'processing_status']).where('kb_id', 'in', kbIds).execute();
    for (const r of rows) (out.get(r.kb_id) ?? out.set(r.kb_id, []).get(r.kb_id)!).push(r.processing_status);
  }
  return new Map(kbIds.map((id) => [id, statusOf(out.get(id) ?? [])]));
}

/** The organization's knowledge base (404 unknown, 403 another organization's). */
export async function ownKnowledgeBase(q: Db | Tx, orgId: string, id: string): Promise<KbRow> {
  const row = await kbDb(q).selectFrom('knowledge_bases').selectAll().where('id', '=', id).executeTakeFirst();
  return ownRow(row, orgId, missingKb(id), 'knowledge base');
}

/** Which of these ids are knowledge bases of the organization. */
export async function existingKnowledgeBases(q: Db | Tx, orgId: string, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await kbDb(q).selectFrom('knowledge_bases').select('id').where('org_id', '=', orgId).where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

export async function createKnowledgeBase(db: Db, actor: Actor, body: unknown): Promise<string> {
  const input = parseBody(knowledgeBaseBody, body);
  const now = nowIso();
  const id = newId();
  await kbDb(db)
    .insertInto('knowledge_bases')
    .values({ id, org_id: actor.orgId, name: input.name, description: input.description ?? null, created_by: actor.name, created_at: now, updated_at: now })
    .execute();
  return id;
}

export async function listKnowledgeBases(db: Db, actor: Actor): Promise<Record<string, unknown>[]> {
  const rows = await kbDb(db).selectFrom('knowledge_bases').selectAll().where('org_id', '=', actor.orgId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  const status = await statuses(db, rows.map((r) => r.id));
  return rows.map((r) => knowledgeBaseDoc(r, status.get(r.id)!));
}

export async function getKnowledgeBase(db: Db, actor: Actor, id: string): Promise<Record<string, unknown>> {
  const row = await ownKnowledgeBase(db, actor.orgId, id);
  return knowledgeBaseDoc(row, (await statuses(db, [id])).get(id)!);
}

export async function updateKnowledgeBase(db: Db, actor: Actor, id: string, body: unknown): Promise<void> {
  const input = parseBody(knowledgeBaseBody, body);
  await ownKnowledgeBase(db, actor.orgId, id);
  await kbDb(db)
    .updateTable('knowledge_bases')
    .set({ name: input.name, ...(input.description !== undefined ? { description: input.description } : {}), updated_at: nowIso() })
    .where('id', '=', id)
    .execute();
}

/** Non-archived agents of the organization whose configuration (any version of it) names the knowledge base. */
export async function agentsUsingKnowledgeBase(q: Db | Tx, orgId: string, id: string): Promise<string[]> {
  // Blocks are the agents' configuration sections as JSON; the id is 24 hex characters, so a LIKE on it is exact enough.
  const rows = await q
    .selectFrom('blocks')
    .innerJoin('agents', 'agents.id', 'blocks.agent_id')
    .select('agents.id as id')
    .distinct()
    .where('agents.org_id', '=', orgId)
    .where('agents.archived', '=', 0)
    .where('blocks.content', 'like', `%"${id}"%`)
    .execute();
  return rows.map((r) => r.id);
}

export async function deleteKnowledgeBase(db: Db, actor: Actor, id: string): Promise<void> {
  await ownKnowledgeBase(db, actor.orgId, id);
  if ((await agentsUsingKnowledgeBase(db, actor.orgId, id)).length) {
    throw badRequest('This knowledge base is connected to an agent. Please detach it from the agent before deleting.');
  }
  await db.transaction().execute(async (tx) => {
    // Chunks first (on SQLite their delete trigger keeps the FTS index), then items, then the knowledge base.
    await kbDb(tx).deleteFrom('kb_chunks').where('kb_id', '=', id).execute();
    await kbDb(tx).deleteFrom('kb_items').where('kb_id', '=', id).execute();
    await kbDb(tx).deleteFrom('knowledge_bases').where('id', '=', id).execute();
  });
}

export async function listItems(db: Db, actor: Actor, id: string): Promise<Record<string, unknown>[]> {
  await ownKnowledgeBase(db, actor.orgId, id);
  const rows = await kbDb(db).selectFrom('kb_items').selectAll().where('kb_id', '=', id).orderBy('created_at', 'asc').orderBy('id', 'asc').execute();
  return rows.map(itemDoc);
}

export async function deleteItem(db: Db, actor: Actor, kbId: string, itemId: string): Promise<void> {
  await ownKnowledgeBase(db, actor.orgId, kbId);
  const item = await kbDb(db).selectFrom('kb_items').select('id').where('id', '=', itemId).where('kb_id', '=', kbId).executeTakeFirst();
  if (!item) throw notFound(`Knowledge base item ${itemId} not found`);
  await db.transaction().execute(async (tx) => {
    await kbDb(tx).deleteFrom('kb_chunks').where('item_id', '=', itemId).execute();
    await kbDb(tx).deleteFrom('kb_items').where('id', '=', itemId).execute();
  });
  await kbDb(db).updateTable('knowledge_bases').set({ updated_at: nowIso() }).where('id', '=', kbId).execute();
}

export interface NewItem {
  itemType: 'text' | 'file' | 'url';
  title: string | null;
  fileName?: string | null;
  contentType: string;
  size?: number | null;
  metadata?: Record<string, unknown>;
}

/** Registers an item as `processing` (visible in the item list while its text is read); its row. */
export async function startItem(db: Db, orgId: string, kbId: string, item: NewItem): Promise<ItemRow> {
  const now = nowIso();
  const row: ItemRow = {
    id: newId(),
    org_id: orgId,
    kb_id: kbId,
    item_type: item.itemType,
    title: item.title,
    file_name: item.fileName ?? null,
    content_type: item.contentType,
    size: item.size ?? null,
    content: null,
    processing_status: 'processing',
    error: null,
    chunk_count: 0,
    metadata: JSON.stringify(item.metadata ?? {}),
    created_at: now,
    updated_at: now,
  };
  await kbDb(db).insertInto('kb_items').values(row).execute();
  return row;
}

/** Chunks an item's text into the index and marks it completed (failed, with the reason, when there is no text). */
export async function finishItem(db: Db, item: ItemRow, text: string, metadata?: Record<string, unknown>): Promise<ItemRow> {
  const chunks = chunkText(text);
  const now = nowIso();
  if (!chunks.length) return failItem(db, item, 'The item has no text to index');
  await db.transaction().execute(async (tx) => {
    for (let i = 0; i < chunks.length; i += INSERT_BATCH) {
      const values = chunks.slice(i, i + INSERT_BATCH).map((content, j) => ({ org_id: item.org_id, kb_id: item.kb_id, item_id: item.id, seq: i + j, content }));
      await kbDb(tx).insertInto('kb_chunks').values(values).execute();
    }
    await kbDb(tx)
      .updateTable('kb_items')
      .set({ content: text, processing_status: 'completed', chunk_count: chunks.length, error: null, updated_at: now, ...(metadata ? { metadata: JSON.stringify(metadata) } : {}) })
      .where('id', '=', item.id)
      .execute();
    await kbDb(tx).updateTable('knowledge_bases').set({ updated_at: now }).where('id', '=', item.kb_id).execute();
  });
  return { ...item, content: text, processing_status: 'completed', chunk_count: chunks.length, updated_at: now, ...(metadata ? { metadata: JSON.stringify(metadata) } : {}) };
}

export async function failItem(db: Db, item: ItemRow, reason: string): Promise<ItemRow> {
  const now = nowIso();
  await kbDb(db).updateTable('kb_items').set({ processing_status: 'failed', error: reason, updated_at: now }).where('id', '=', item.id).execute();
  return { ...item, processing_status: 'failed', error: reason, updated_at: now };
}

/**
 * An item no server has touched for this long while `pending` or `processing` was left by a server that stopped: a
 * page fetch times out in seconds and a queue of pages keeps its pending ones fresh (urls.ts), so 15 minutes of
 * stillness means no server is reading it.
 */
export const STALLED_ITEM_MS = 15 * 60_000;
export const STALLED_ITEM_ERROR = 'The server reading this item stopped before it finished; add it again';

/** Marks the items a stopped server left unread as failed (STALLED_ITEM_ERROR); answers how many. */
export async function failStalledItems(db: Db, now = Date.now()): Promise<number> {
  const res = await kbDb(db)
    .updateTable('kb_items')
    .set({ processing_status: 'failed', error: STALLED_ITEM_ERROR, updated_at: new Date(now).toISOString() })
    .where('processing_status', 'in', ['pending', 'processing'])
    .where('updated_at', '<', new Date(now - STALLED_ITEM_MS).toISOString())
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** The first line of a text, without Markdown heading marks, as a title (at most 200 characters). */
export function titleOf(text: string): string | null {
  const line = text.split(/\r?\n/).map((l) => l.replace(/^#+\s*/, '').trim()).find((l) => l.length > 0);
  return line ? line.slice(0, 200) : null;
}

/** `POST /knowledgebase/{id}/items/text`: a plain-text or Markdown item, indexed before the answer. */
export async function addTextItem(db: Db, actor: Actor, kbId: string, body: unknown): Promise<Record<string, unknown>> {
  const input = parseBody(textItemBody, body);
  await ownKnowledgeBase(db, actor.orgId, kbId);
  const contentType = input.contentType ?? 'text/plain';
  const item = await startItem(db, actor.orgId, kbId, { itemType: 'text', title: input.title ?? titleOf(input.content), contentType, size: Buffer.byteLength(input.content) });
  return itemDoc(await finishItem(db, item, input.content));
}

/** A file's text by its type (text and Markdown; PDF is read elsewhere): null when the type is not one of these. */
export function textOfFile(fileName: string, contentType: string, bytes: Buffer): { text: string; contentType: string } | null {
  const ext = fileName.toLowerCase().split('.').pop() ?? '';
  const type = contentType.toLowerCase().split(';')[0]!.trim();
  if (type === 'text/markdown' || ext === 'md' || ext === 'markdown') return { text: bytes.toString('utf8'), contentType: 'text/markdown' };
  if (type === 'text/plain' || ext === 'txt') return { text: bytes.toString('utf8'), contentType: 'text/plain' };
  return null;
}
