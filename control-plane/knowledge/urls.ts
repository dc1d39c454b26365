// URL items of knowledge bases (`scrape-urls`, `scraped-urls`, `get-sitemap-urls` in the hosted reference): each URL
// an item (itemType `url`) registered `pending`, then fetched in the background, one at a time, through the egress
// guard (control-plane/knowledge/web.ts), reduced to text and indexed; its status is polled with `scraped-urls`.
import { z } from 'zod';
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import { nowIso } from '../store/ids.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { bodyObject, parseBody, says } from '../validation.js';
import { failItem, finishItem, ownKnowledgeBase, startItem } from './knowledge-bases.js';
import { kbDb, type KbItemsTable } from './migration.js';
import { fetchPage, sitemapUrls } from './web.js';

/** URLs one `scrape-urls` takes. */
export const MAX_SCRAPE_URLS = 100;

const urlField = z
  .string(says('must be an http or https URL'))
  .max(2000, 'must be an http or https URL of at most 2000 characters')
  .refine((u) => {
    try {
      return ['http:', 'https:'].includes(new URL(u).protocol);
    } catch {
      return false;
    }
  }, 'must be an http or https URL');

export const scrapeUrlsBody = bodyObject({
  urls: z.array(urlField, says(`must be an array of 1-${MAX_SCRAPE_URLS} URLs`)).min(1, `must be an array of 1-${MAX_SCRAPE_URLS} URLs`).max(MAX_SCRAPE_URLS, `must be an array of 1-${MAX_SCRAPE_URLS} URLs`).describe('Pages to fetch and index (http or https).'),
});

export const sitemapBody = bodyObject({
  siteUrl: urlField.optional().describe('URL of a sitemap.xml (or of a site whose /sitemap.xml is one).'),
  site_url: urlField.optional().describe('The same, as the SDK spells it.'),
  knowledgeBaseId: z.string(says('must be a knowledge base id')).optional().describe('Checked for ownership only.'),
  knowledge_base_id: z.string(says('must be a knowledge base id')).optional(),
});

/** A URL item as `scraped-urls` shows it (the item's processing status as `status`). */
export function scrapedUrlDoc(row: KbItemsTable): Record<string, unknown> {
  return { _id: row.id, url: row.file_name, status: row.processing_status, title: row.title, error: row.error, chunkCount: row.chunk_count, createdAt: row.created_at, updatedAt: row.updated_at };
}

export interface UrlOptions {
  allowPrivateEgress: boolean;
  logger: Logger;
}

/** Registers the URLs as pending items and starts fetching them (not awaited); the items. */
export async function scrapeUrls(db: Db, actor: Actor, kbId: string, body: unknown, opts: UrlOptions): Promise<{ items: Record<string, unknown>[]; done: Promise<void> }> {
  const input = parseBody(scrapeUrlsBody, body);
  await ownKnowledgeBase(db, actor.orgId, kbId);
  const rows: KbItemsTable[] = [];
  for (const url of [...new Set(input.urls)]) {
    const row = await startItem(db, actor.orgId, kbId, { itemType: 'url', title: null, fileName: url, contentType: 'text/html', metadata: { url } });
    await kbDb(db).updateTable('kb_items').set({ processing_status: 'pending' }).where('id', '=', row.id).execute();
    rows.push({ ...row, processing_status: 'pending' });
  }
  const done = (async () => {
    for (const [k, row] of rows.entries()) {
      // The pages still waiting are touched as the queue moves, so a sweep (failStalledItems) never takes them.
      const waiting = rows.slice(k + 1).map((r) => r.id);
      if (waiting.length) await kbDb(db).updateTable('kb_items').set({ updated_at: nowIso() }).where('id', 'in', waiting).where('processing_status', '=', 'pending').execute();
      await scrapeOne(db, row, opts);
    }
  })();
  return { items: rows.map(scrapedUrlDoc), done };
}

async function scrapeOne(db: Db, row: KbItemsTable, opts: UrlOptions): Promise<void> {
  // Deleted meanwhile: nothing to do.
  const still = await kbDb(db).updateTable('kb_items').set({ processing_status: 'processing', updated_at: nowIso() }).where('id', '=', row.id).executeTakeFirst();
  if (Number(still.numUpdatedRows) === 0) return;
  try {
    const page = await fetchPage(row.file_name as string, opts.allowPrivateEgress);
    await kbDb(db).updateTable('kb_items').set({ title: page.title, content_type: page.contentType, size: page.size }).where('id', '=', row.id).execute();
    if (!(await kbDb(db).selectFrom('kb_items').select('id').where('id', '=', row.id).executeTakeFirst())) return;
    await finishItem(db, { ...row, title: page.title, content_type: page.contentType, size: page.size }, page.text);
  } catch (err) {
    const reason = err instanceof Error ? (err.name === 'TimeoutError' ? 'the page did not answer in time' : err.message) : String(err);
    opts.logger.info({ itemId: row.id, reason }, 'knowledge-base URL could not be indexed');
    await failItem(db, row, `Could not fetch ${row.file_name}: ${reason}`).catch(() => {});
  }
}

export async function listScrapedUrls(db: Db, actor: Actor, kbId: string): Promise<Record<string, unknown>[]> {
  await ownKnowledgeBase(db, actor.orgId, kbId);
  const rows = await kbDb(db).selectFrom('kb_items').selectAll().where('kb_id', '=', kbId).where('item_type', '=', 'url').orderBy('created_at', 'asc').orderBy('id', 'asc').execute();
  return rows.map(scrapedUrlDoc);
}

export async function deleteScrapedUrl(db: Db, actor: Actor, kbId: string, itemId: string): Promise<void> {
  await ownKnowledgeBase(db, actor.orgId, kbId);
  const item = await kbDb(db).selectFrom('kb_items').select('id').where('id', '=', itemId).where('kb_id', '=', kbId).where('item_type', '=', 'url').executeTakeFirst();
  if (!item) throw notFound(`Scraped URL ${itemId} not found`);
  await db.transaction().execute(async (tx) => {
    await kbDb(tx).deleteFrom('kb_chunks').where('item_id', '=', itemId).execute();
    await kbDb(tx).deleteFrom('kb_items').where('id', '=', itemId).execute();
  });
}

/** `POST /knowledgebase/get-sitemap-urls`: the sitemap's page URLs (422 when there is no readable sitemap). */
export async function getSitemapUrls(db: Db, actor: Actor, body: unknown, opts: UrlOptions): Promise<{ urls: string[]; extractedAt: string }> {
  const input = parseBody(sitemapBody, body);
  const site = input.siteUrl ?? input.site_url;
  if (!site) throw badRequest('siteUrl: required (the URL of a sitemap.xml or of a site)');
  const kbId = input.knowledgeBaseId ?? input.knowledge_base_id;
  if (kbId) await ownKnowledgeBase(db, actor.orgId, kbId);
  try {
    return { urls: await sitemapUrls(site, opts.allowPrivateEgress), extractedAt: new Date().toISOString() };
  } catch (err) {
    throw new ApiError(422, `No readable sitemap at ${site}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
