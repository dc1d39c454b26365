// Knowledge-base routes (`/knowledgebase` as the hosted reference has them): knowledge bases, their items (text and
// Markdown in a JSON body, or a file uploaded as multipart `media`) and a search route. Logic in control-plane/knowledge/.
import busboy from 'busboy';
import type { HttpServer } from '../http/server.js';
import { docs, ok, type HttpRequest } from '../http/types.js';
import { badRequest } from '../../control-plane/errors.js';
import {
  addTextItem,
  createKnowledgeBase,
  deleteItem,
  deleteKnowledgeBase,
  failItem,
  finishItem,
  getKnowledgeBase,
  knowledgeBaseBody,
  listItems,
  listKnowledgeBases,
  ownKnowledgeBase,
  startItem,
  textItemBody,
  textOfFile,
  titleOf,
  updateKnowledgeBase,
} from '../../control-plane/knowledge/knowledge-bases.js';
import { searchChunks } from '../../control-plane/knowledge/search.js';
import { isPdf, pdfText } from '../../control-plane/knowledge/pdf.js';
import { completeBody, completeUpload, MAX_UPLOAD_BYTES, presignBody, presignUpload, receiveUpload } from '../../control-plane/knowledge/uploads.js';
import { loadSigningSecret } from '../../control-plane/auth/tokens.js';
import { deleteScrapedUrl, getSitemapUrls, listScrapedUrls, scrapeUrls, scrapeUrlsBody, sitemapBody } from '../../control-plane/knowledge/urls.js';
import { actorOf, type RouteContext } from './context.js';

/** Largest upload (the file and the form around it). */
const UPLOAD_MAX_BYTES = 25 * 1024 * 1024;

interface UploadedFile {
  fileName: string;
  contentType: string;
  bytes: Buffer;
}

/** The `media` file part of a multipart body (400 when the body is not multipart or has no such part). */
function mediaPart(req: HttpRequest): Promise<UploadedFile> {
  const type = req.headers['content-type'] ?? '';
  const notMultipart = 'media: the request must be multipart/form-data with the file in a part named "media"';
  if (!/^multipart\/form-data\s*;/i.test(type)) return Promise.reject(badRequest(notMultipart));
  return new Promise((resolve, reject) => {
    let form: busboy.Busboy;
    try {
      form = busboy({ headers: { 'content-type': type }, limits: { parts: 10, files: 1 } });
    } catch (err) {
      reject(badRequest(`${notMultipart} (${(err as Error).message})`));
      return;
    }
    let file: Promise<UploadedFile> | null = null;
    form.on('file', (name, stream, info) => {
      if (name !== 'media' || file) {
        stream.resume();
        return;
      }
      file = new Promise((res, rej) => {
        const parts: Buffer[] = [];
        stream.on('data', (c: Buffer) => parts.push(c));
        stream.on('error', rej);
        stream.on('end', () => res({ fileName: info.filename ?? 'upload', contentType: info.mimeType ?? 'application/octet-stream', bytes: Buffer.concat(parts) }));
      });
    });
    form.on('error', (err: Error) => reject(badRequest(`media: malformed multipart body: ${err.message}`)));
    form.on('close', () => {
      if (!file) reject(badRequest(notMultipart));
      else file.then(resolve, reject);
    });
    form.end(req.body);
  });
}

export function knowledgeBaseRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const d = docs('Knowledge bases');
  const p = `${prefix}/knowledgebase`;
  const id = (req: HttpRequest) => req.params.id as string;

  const urlOptions = { allowPrivateEgress: ctx.settings.allowPrivateEgress, logger: ctx.logger };

  // The presigned-upload flow, answered with an upload to this server (control-plane/knowledge/uploads.ts).
  let uploadSecret: Promise<Buffer> | null = null;
  const secret = () => (uploadSecret ??= loadSigningSecret(ctx.db, 'kb_upload_signing_key'));
  server.route('POST', `${p}/get-presigned-url`, async (req) => {
    const key = await presignUpload(ctx.db, actorOf(req), req.json(), await secret());
    const proto = req.headers['x-forwarded-proto'] === 'https' ? 'https' : 'http';
    const host = req.headers.host ?? `127.0.0.1:${ctx.settings.port}`;
    return ok({ url: `${proto}://${host}${p}/upload/${encodeURIComponent(key)}`, key });
  }, {
    ...auth,
    doc: d('Get an upload URL for a file (the presigned-URL flow)', {
      description: 'Answered with a URL of this server (no object store): PUT the file there within an hour (PDF, text or Markdown; at most `fileSize` bytes), then call `compelete-file-upload` with the same `key`. camelCase or the SDK\'s snake_case fields.',
      body: { schema: presignBody },
      response: { description: '`{url, key}`.' },
    }),
  });
  server.route('PUT', `${p}/upload/:key`, async (req) => {
    await receiveUpload(ctx.db, decodeURIComponent(req.params.key as string), req.body, await secret());
    return { status: 200, body: '' };
  }, {
    auth: 'none',
    maxBodyBytes: MAX_UPLOAD_BYTES,
    doc: d('Upload a file to its upload URL', { description: 'The body is the file. The signed key in the path authorizes it (no API key), once; the file is read and indexed before the answer.', body: { contentType: 'application/octet-stream' }, response: { description: 'Empty.' } }),
  });
  server.route('POST', `${p}/compelete-file-upload`, async (req) => ok(await completeUpload(ctx.db, actorOf(req), req.json(), await secret())), {
    ...auth,
    doc: d('Complete an upload (the presigned-URL flow)', { description: 'The path\'s spelling is the platform\'s. 400 when nothing was PUT with the key.', body: { schema: completeBody }, response: { description: 'The item.' } }),
  });

  // Before `/knowledgebase/:id`: a fixed path.
  server.route('POST', `${p}/get-sitemap-urls`, async (req) => ok(await getSitemapUrls(ctx.db, actorOf(req), req.json(), urlOptions)), {
    ...auth,
    doc: d('List the page URLs of a sitemap', {
      description: 'Fetched through the egress policy (a home page: its /sitemap.xml; a sitemap index: up to 10 of its sitemaps). 422 when there is no readable sitemap.',
      body: { schema: sitemapBody },
      response: { description: '`{urls, extractedAt}`.' },
    }),
  });

  server.route('GET', p, async (req) => ok(await listKnowledgeBases(ctx.db, actorOf(req))), {
    ...auth,
    doc: d('List knowledge bases', { response: { description: '`[{_id, name, description, organization, createdBy, processingStatus, createdAt, updatedAt}]`, newest first.' } }),
  });

  server.route('POST', p, async (req) => ok(await createKnowledgeBase(ctx.db, actorOf(req), req.json()), 201), {
    ...auth,
    doc: d('Create a knowledge base', { body: { schema: knowledgeBaseBody }, response: { status: 201, description: 'The new knowledge base id.' } }),
  });

  server.route('GET', `${p}/:id`, async (req) => ok(await getKnowledgeBase(ctx.db, actorOf(req), id(req))), {
    ...auth,
    doc: d('Read a knowledge base', { description: '`processingStatus`: pending (no items), processing (an item is being read), completed, or failed (every item failed).' }),
  });

  server.route('POST', `${p}/:id`, async (req) => {
    await updateKnowledgeBase(ctx.db, actorOf(req), id(req), req.json());
    return ok(undefined);
  }, { ...auth, doc: d('Rename a knowledge base (name and description)', { body: { schema: knowledgeBaseBody }, response: { description: '`{status: true}`.' } }) });

  server.route('DELETE', `${p}/:id`, async (req) => {
    await deleteKnowledgeBase(ctx.db, actorOf(req), id(req));
    return ok(undefined);
  }, {
    ...auth,
    doc: d('Delete a knowledge base', { description: 'With its items. 400 while an agent\'s configuration names it (`globalKnowledgeBaseId` or a `knowledge_base_search` tool).', response: { description: '`{status: true}`.' } }),
  });

  server.route('GET', `${p}/:id/items`, async (req) => ok(await listItems(ctx.db, actorOf(req), id(req))), {
    ...auth,
    doc: d('List the items of a knowledge base', { response: { description: '`[{_id, itemType, metadata, knowledgeBaseId, processingStatus, fileName, contentType, size, key, title, content, chunkCount, error, createdAt, updatedAt}]`.' } }),
  });

  server.route('POST', `${p}/:id/items/text`, async (req) => ok(await addTextItem(ctx.db, actorOf(req), id(req), req.json()), 201), {
    ...auth,
    maxBodyBytes: 4 * 1024 * 1024,
    doc: d('Add a plain-text or Markdown item', {
      description: 'Parley\'s route for text the hosted platform takes as files: the text is chunked and indexed before the answer (`processingStatus` completed).',
      body: { schema: textItemBody },
      response: { status: 201, description: 'The item.' },
    }),
  });

  server.route('POST', `${p}/:id/items/upload-media`, async (req) => {
    const actor = actorOf(req);
    await ownKnowledgeBase(ctx.db, actor.orgId, id(req));
    const file = await mediaPart(req);
    if (isPdf(file.fileName, file.contentType)) {
      // A PDF that cannot be read is still an item: failed, with the reason (as the hosted platform's processing reports it).
      const item = await startItem(ctx.db, actor.orgId, id(req), { itemType: 'file', title: file.fileName, fileName: file.fileName, contentType: 'application/pdf', size: file.bytes.length });
      let read: { text: string; pages: number };
      try {
        read = await pdfText(file.bytes);
      } catch (err) {
        await failItem(ctx.db, item, err instanceof Error ? err.message : String(err));
        return { status: 201, body: { status: true } };
      }
      await finishItem(ctx.db, item, read.text, { pages: read.pages });
      return { status: 201, body: { status: true } };
    }
    const read = textOfFile(file.fileName, file.contentType, file.bytes);
    if (!read) throw badRequest(`media: ${file.fileName} (${file.contentType}) is not a file this server reads: PDF (.pdf), text (.txt) or Markdown (.md)`);
    const item = await startItem(ctx.db, actor.orgId, id(req), { itemType: 'file', title: titleOf(read.text) ?? file.fileName, fileName: file.fileName, contentType: read.contentType, size: file.bytes.length });
    try {
      await finishItem(ctx.db, item, read.text);
    } catch (err) {
      await failItem(ctx.db, item, err instanceof Error ? err.message : String(err));
      throw err;
    }
    return { status: 201, body: { status: true } };
  }, {
    ...auth,
    maxBodyBytes: UPLOAD_MAX_BYTES,
    doc: d('Upload a file to a knowledge base', {
      description: 'Multipart form with the file in the part `media`: PDF (.pdf, application/pdf; its text, page by page), text (.txt, text/plain) or Markdown (.md, text/markdown). Indexed before the answer; its status is in the item list (a PDF that cannot be read: `failed` with `error`).',
      body: { contentType: 'multipart/form-data' },
      response: { status: 201, description: '`{status: true}`.' },
    }),
  });

  server.route('DELETE', `${p}/:kbId/items/:itemId`, async (req) => {
    await deleteItem(ctx.db, actorOf(req), req.params.kbId as string, req.params.itemId as string);
    return ok(undefined);
  }, { ...auth, doc: d('Delete a knowledge base item', { description: 'With its chunks (out of the search at once).', response: { description: '`{status: true}`.' } }) });

  server.route('POST', `${p}/:id/scrape-urls`, async (req) => {
    const started = await scrapeUrls(ctx.db, actorOf(req), id(req), req.json(), urlOptions);
    started.done.catch((err: unknown) => ctx.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'knowledge-base URL indexing stopped'));
    return ok({ knowledgeBaseId: id(req), urls: started.items });
  }, {
    ...auth,
    doc: d('Add web pages to a knowledge base', {
      description: 'Each URL becomes an item (`pending`), fetched in the background through the egress policy (HTML reduced to text, plain text, PDF), then indexed; poll `GET /knowledgebase/{id}/scraped-urls`.',
      body: { schema: scrapeUrlsBody },
      response: { description: '`{knowledgeBaseId, urls: [{_id, url, status, ...}]}`.' },
    }),
  });

  server.route('GET', `${p}/:id/scraped-urls`, async (req) => ok(await listScrapedUrls(ctx.db, actorOf(req), id(req))), {
    ...auth,
    doc: d('List the web pages of a knowledge base and their status', { response: { description: '`[{_id, url, status (pending, processing, completed, failed), title, error, chunkCount, createdAt, updatedAt}]`.' } }),
  });

  server.route('DELETE', `${p}/:kbId/scraped-urls/:urlId`, async (req) => {
    await deleteScrapedUrl(ctx.db, actorOf(req), req.params.kbId as string, req.params.urlId as string);
    return ok(undefined);
  }, { ...auth, doc: d('Remove a web page from a knowledge base', { description: 'With its chunks.', response: { description: '`{status: true}`.' } }) });

  server.route('GET', `${p}/:id/search`, async (req) => {
    const actor = actorOf(req);
    await ownKnowledgeBase(ctx.db, actor.orgId, id(req));
    const query = req.query.get('query') ?? '';
    if (!query.trim()) throw badRequest('query: required (the words to look for)');
    const limit = Number(req.query.get('limit') ?? '5');
    if (!Number.isInteger(limit) || limit < 1 || limit > 50) throw badRequest('limit: must be an integer from 1 to 50');
    const hits = await searchChunks(ctx.db, [id(req)], query, limit);
    return ok(hits.map((h) => ({ itemId: h.itemId, chunkId: h.chunkId, seq: h.seq, score: h.score, content: h.content })));
  }, {
    ...auth,
    doc: d('Search a knowledge base', {
      description: 'Parley\'s route: the ranked chunks a `knowledge_base_search` tool call would get (SQLite FTS5 bm25, PostgreSQL ts_rank_cd; scores compare within one store only).',
      query: [{ name: 'query', required: true }, { name: 'limit', description: '1-50, default 5.', schema: { type: 'string', pattern: '^[0-9]+$' } }],
      response: { description: '`[{itemId, chunkId, seq, score, content}]`, best first.' },
    }),
  });
}
