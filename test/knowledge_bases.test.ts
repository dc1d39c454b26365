// Knowledge bases (issue 35 item 1) on each store: create, list, read, rename, delete (refused while an agent names
// it); text and Markdown items (JSON body and multipart upload) and PDFs made by Ghostscript, chunked and indexed
// with their status (an unreadable PDF a failed item); ranked search
// finding the same best passages on SQLite (FTS5, bm25) and PostgreSQL (tsvector, ts_rank_cd); another organization's
// knowledge base answering the project's 403, unknown ids 404; pages a killed server left unread failed by the next.
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createOrgKey, freshStore, sleep, startServer, storeSql, testDialects, type TestServer } from './support/server.js';
import { serverForSuite } from './support/suite.js';

const A = '/atoms/v1';

export const DOCS = {
  hours:
    'Opening hours. The Bright Smile clinic is open from nine in the morning until six in the evening, Monday to Friday. ' +
    'On Saturdays we open at ten and close at two. We are closed on Sundays and public holidays.',
  parking:
    'Parking and directions. Free parking is available behind the building on Elm Street. The clinic is a five minute walk ' +
    'from the central station; buses 12 and 40 stop outside.',
  prices:
    '# Prices\n\nA check-up costs 80 euros. Teeth whitening costs 250 euros per session. Children under twelve are treated ' +
    'for free when they come with a parent who is a patient.\n\n## Insurance\n\nWe accept every public health insurance card.',
  pets:
    'Pets. Guide dogs are welcome in the clinic. Other animals must wait outside, and we cannot look after them during a treatment.',
};

/** Queries and the document each must rank first, on either store. */
export const QUERIES: [string, keyof typeof DOCS][] = [
  ['When are you open on Saturday?', 'hours'],
  ['Where can I park my car?', 'parking'],
  ['How much does teeth whitening cost?', 'prices'],
  ['Do you take my insurance?', 'prices'],
  ['Can I bring my dog?', 'pets'],
  ['Do any buses stop near you?', 'parking'],
];

/** A PDF of these pages (lines of text) made by Ghostscript from PostScript. */
function makePdf(pages: string[][]): Buffer {
  const dir = mkdtempSync(path.join(tmpdir(), 'kb-pdf-'));
  try {
    const esc = (t: string) => t.replace(/[\\()]/g, (c) => `\\${c}`);
    const ps = pages.map((lines) => ['/Helvetica findfont 12 scalefont setfont', ...lines.map((l, i) => `72 ${720 - i * 20} moveto (${esc(l)}) show`), 'showpage'].join('\n')).join('\n');
    writeFileSync(path.join(dir, 'in.ps'), ps);
    execFileSync('gs', ['-q', '-dNOPAUSE', '-dBATCH', '-dSAFER', '-sDEVICE=pdfwrite', `-sOutputFile=${path.join(dir, 'out.pdf')}`, path.join(dir, 'in.ps')]);
    return readFileSync(path.join(dir, 'out.pdf'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function kb(server: TestServer, name: string, key?: string): Promise<string> {
  const res = await server.request('POST', `${A}/knowledgebase`, { body: { name, description: 'Clinic facts' }, key });
  expect(res.status, res.text).toBe(201);
  expect(res.body).toEqual({ status: true, data: expect.stringMatching(/^[0-9a-f]{24}$/) });
  return res.body.data as string;
}

async function textItem(server: TestServer, kbId: string, content: string, extra: Record<string, unknown> = {}): Promise<any> {
  const res = await server.request('POST', `${A}/knowledgebase/${kbId}/items/text`, { body: { content, ...extra } });
  expect(res.status, res.text).toBe(201);
  return res.body.data;
}

for (const dialect of testDialects()) {
  describe(`knowledge bases (${dialect})`, () => {
    const suite = serverForSuite(dialect);

    it('creates, lists, reads, renames and deletes knowledge bases with the reference shapes', async () => {
      const server = suite.server;
      for (const name of ['', '   ', 'x'.repeat(41)]) {
        const bad = await server.request('POST', `${A}/knowledgebase`, { body: { name } });
        expect(bad.status, name).toBe(400);
        expect(bad.body).toEqual({ status: false, errors: ['name: must be a string of 1-40 characters'] });
      }
      const id = await kb(server, '  FAQ  ');
      const got = await server.request('GET', `${A}/knowledgebase/${id}`);
      expect(got.status).toBe(200);
      expect(got.body).toEqual({
        status: true,
        data: { _id: id, name: 'FAQ', description: 'Clinic facts', organization: expect.any(String), createdBy: expect.any(String), processingStatus: 'pending', createdAt: expect.any(String), updatedAt: expect.any(String) },
      });
      const list = await server.request('GET', `${A}/knowledgebase`);
      expect(list.body.status).toBe(true);
      expect(list.body.data.map((k: any) => k._id)).toContain(id);
      const renamed = await server.request('POST', `${A}/knowledgebase/${id}`, { body: { name: 'Q4 Pricing Updates' } });
      expect(renamed.status, renamed.text).toBe(200);
      expect(renamed.body).toEqual({ status: true });
      expect((await server.request('GET', `${A}/knowledgebase/${id}`)).body.data).toMatchObject({ name: 'Q4 Pricing Updates', description: 'Clinic facts' });
      const deleted = await server.request('DELETE', `${A}/knowledgebase/${id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ status: true });
      const gone = await server.request('GET', `${A}/knowledgebase/${id}`);
      expect(gone.status).toBe(404);
      expect(gone.body).toEqual({ status: false, errors: [`Knowledge base ${id} not found`] });
    });

    it('indexes text and Markdown items with their status, and ranks the passage that answers first', async () => {
      const server = suite.server;
      const id = await kb(server, 'Clinic');
      const items: Record<string, string> = {};
      for (const [name, content] of Object.entries(DOCS)) {
        if (name === 'prices') continue;
        const item = await textItem(server, id, content);
        expect(item).toMatchObject({ itemType: 'text', knowledgeBaseId: id, processingStatus: 'completed', contentType: 'text/plain', content, chunkCount: 1 });
        items[name] = item._id;
      }
      // Markdown as a file upload (the reference's upload-media, multipart part `media`).
      const form = new FormData();
      form.append('media', new Blob([DOCS.prices], { type: 'text/markdown' }), 'prices.md');
      const up = await fetch(`${server.base}${A}/knowledgebase/${id}/items/upload-media`, { method: 'POST', headers: { authorization: `Bearer ${server.key}` }, body: form });
      expect(up.status).toBe(201);
      expect(await up.json()).toEqual({ status: true });
      const bad = new FormData();
      bad.append('media', new Blob([Buffer.from([0, 1, 2])], { type: 'application/zip' }), 'a.zip');
      const refused = await fetch(`${server.base}${A}/knowledgebase/${id}/items/upload-media`, { method: 'POST', headers: { authorization: `Bearer ${server.key}` }, body: bad });
      expect(refused.status).toBe(400);
      const listed = await server.request('GET', `${A}/knowledgebase/${id}/items`);
      expect(listed.status).toBe(200);
      const md = listed.body.data.find((i: any) => i.fileName === 'prices.md');
      expect(md).toMatchObject({ itemType: 'file', contentType: 'text/markdown', processingStatus: 'completed', title: 'Prices', size: Buffer.byteLength(DOCS.prices), metadata: {} });
      items.prices = md._id;
      expect(Object.keys(listed.body.data[0]).sort()).toEqual(
        ['_id', 'itemType', 'metadata', 'knowledgeBaseId', 'processingStatus', 'fileName', 'contentType', 'size', 'key', 'title', 'content', 'chunkCount', 'error', 'createdAt', 'updatedAt'].sort(),
      );
      expect((await server.request('GET', `${A}/knowledgebase/${id}`)).body.data.processingStatus).toBe('completed');

      for (const [query, doc] of QUERIES) {
        const res = await server.request('GET', `${A}/knowledgebase/${id}/search?query=${encodeURIComponent(query)}`);
        expect(res.status, res.text).toBe(200);
        expect(res.body.data[0]?.itemId, `${query} -> ${JSON.stringify(res.body.data.map((h: any) => h.content.slice(0, 30)))}`).toBe(items[doc]);
      }
      // Stemming: "parked" finds "parking"; nothing searchable finds nothing.
      expect((await server.request('GET', `${A}/knowledgebase/${id}/search?query=parked`)).body.data[0]?.itemId).toBe(items.parking);
      expect((await server.request('GET', `${A}/knowledgebase/${id}/search?query=${encodeURIComponent('what is the')}`)).body.data).toEqual([]);

      // A long item is cut into overlapping chunks; deleting an item takes it out of the search.
      const long = Array.from({ length: 60 }, (_, i) => `Paragraph ${i} is about the subject number ${i}, in words that fill the page.`).join('\n\n') + ' The secret word is marmalade.';
      const big = await textItem(server, id, long, { title: 'Long', contentType: 'text/markdown' });
      expect(big.chunkCount).toBeGreaterThan(4);
      expect((await server.request('GET', `${A}/knowledgebase/${id}/search?query=marmalade`)).body.data[0]?.itemId).toBe(big._id);
      const del = await server.request('DELETE', `${A}/knowledgebase/${id}/items/${big._id}`);
      expect(del.body).toEqual({ status: true });
      expect((await server.request('GET', `${A}/knowledgebase/${id}/search?query=marmalade`)).body.data).toEqual([]);
      expect((await server.request('DELETE', `${A}/knowledgebase/${id}/items/${big._id}`)).status).toBe(404);
    });

    it('reads uploaded PDFs made by Ghostscript page by page; an unreadable one is a failed item', async () => {
      const server = suite.server;
      const id = await kb(server, 'Handbook');
      const upload = async (bytes: Buffer, name: string, type = 'application/pdf') => {
        const form = new FormData();
        form.append('media', new Blob([new Uint8Array(bytes)], { type }), name);
        const res = await fetch(`${server.base}${A}/knowledgebase/${id}/items/upload-media`, { method: 'POST', headers: { authorization: `Bearer ${server.key}` }, body: form });
        expect(res.status).toBe(201);
        expect(await res.json()).toEqual({ status: true });
        const items = (await server.request('GET', `${A}/knowledgebase/${id}/items`)).body.data as any[];
        return items.find((i) => i.fileName === name);
      };
      const pdf = makePdf([
        ['Staff handbook.', 'Holidays are booked through the front office.'],
        ['Page two of the handbook.', 'The emergency exit is behind the x-ray room.', 'The secret word is marmalade.'],
        ['Page three.', 'Lunch is from noon until one.'],
      ]);
      const item = await upload(pdf, 'handbook.pdf');
      expect(item).toMatchObject({ itemType: 'file', contentType: 'application/pdf', processingStatus: 'completed', metadata: { pages: 3 }, size: pdf.length, error: null });
      expect(item.content).toContain('The emergency exit is behind the x-ray room.');
      expect(item.content.indexOf('Staff handbook.')).toBeLessThan(item.content.indexOf('Lunch is from noon'));
      const found = await server.request('GET', `${A}/knowledgebase/${id}/search?query=${encodeURIComponent('where is the emergency exit?')}`);
      expect(found.body.data[0]).toMatchObject({ itemId: item._id });
      expect(found.body.data[0].content).toContain('emergency exit');
      // Named .pdf but not one; a PDF cut short: both failed items with the reason.
      const fake = await upload(Buffer.from('just some text'), 'fake.pdf');
      expect(fake).toMatchObject({ processingStatus: 'failed', error: 'The file is not a PDF (no %PDF- header)', chunkCount: 0 });
      const cut = await upload(pdf.subarray(0, 200), 'cut.pdf');
      expect(cut.processingStatus).toBe('failed');
      expect(cut.error).toMatch(/^The PDF cannot be read|no text/);
      expect((await server.request('GET', `${A}/knowledgebase/${id}`)).body.data.processingStatus).toBe('completed');
    });

    it('answers the presigned-upload flow with an upload to this server', async () => {
      const server = suite.server;
      const id = await kb(server, 'Uploads');
      const pdf = makePdf([['Uploaded handbook.', 'Parcels are collected at four.']]);
      const presigned = await server.request('POST', `${A}/knowledgebase/get-presigned-url`, { body: { file_name: 'handbook.pdf', file_size: pdf.length, content_type: 'application/pdf', knowledge_base_id: id } });
      expect(presigned.status, presigned.text).toBe(200);
      const { url, key } = presigned.body.data;
      expect(url).toBe(`${server.base}${A}/knowledgebase/upload/${key}`);
      const early = await server.request('POST', `${A}/knowledgebase/compelete-file-upload`, { body: { key, knowledgeBaseId: id, fileName: 'handbook.pdf', contentType: 'application/pdf', fileSize: pdf.length } });
      expect(early.status).toBe(400);
      const put = await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/pdf' }, body: new Uint8Array(pdf) });
      expect(put.status).toBe(200);
      expect((await fetch(url, { method: 'PUT', body: new Uint8Array(pdf) })).status).toBe(409);
      const done = await server.request('POST', `${A}/knowledgebase/compelete-file-upload`, { body: { key, knowledge_base_id: id, file_name: 'handbook.pdf', content_type: 'application/pdf', file_size: pdf.length } });
      expect(done.status, done.text).toBe(200);
      expect(done.body.data).toMatchObject({ itemType: 'file', fileName: 'handbook.pdf', processingStatus: 'completed', metadata: { pages: 1 } });
      expect((await server.request('GET', `${A}/knowledgebase/${id}/search?query=parcels`)).body.data[0].itemId).toBe(done.body.data._id);
      // A key changed by the client, a file larger than announced, another organization completing: refused.
      expect((await fetch(`${url.slice(0, -3)}xyz`, { method: 'PUT', body: new Uint8Array(pdf) })).status).toBe(404);
      const small = (await server.request('POST', `${A}/knowledgebase/get-presigned-url`, { body: { fileName: 'a.txt', fileSize: 3, contentType: 'text/plain', knowledgeBaseId: id } })).body.data;
      expect((await fetch(small.url, { method: 'PUT', body: 'four' })).status).toBe(400);
      const other = await createOrgKey(suite.store, `kb-up-${dialect}`, `org-kb-up-${dialect}`);
      expect((await server.request('POST', `${A}/knowledgebase/compelete-file-upload`, { key: other, body: { key } })).status).toBe(400);
      expect((await server.request('POST', `${A}/knowledgebase/get-presigned-url`, { key: other, body: { fileName: 'a.pdf', contentType: 'application/pdf', knowledgeBaseId: id } })).status).toBe(403);
      const zip = await server.request('POST', `${A}/knowledgebase/get-presigned-url`, { body: { fileName: 'a.zip', contentType: 'application/zip', knowledgeBaseId: id } });
      expect(zip.status).toBe(400);
    });

    it('indexes web pages fetched through the egress guard, lists sitemaps, and reports each page\'s status', async () => {
      const server = suite.server;
      const id = await kb(server, 'Website');
      const pdf = makePdf([['Price list.', 'A filling costs 120 euros.']]);
      const site = http.createServer((req, res) => {
        const base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
        if (req.url === '/' || req.url === '/about.html') {
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          res.end(`<!doctype html><html><head><title>About &amp; contact</title><script>var secret = "javascriptonly";</script><style>p{color:red}</style></head>
            <body><nav><a href="/">Home</a> navigationonly</nav><h1>About us</h1><p>Our clinic was founded in 1987 by Dr&nbsp;Ada Lovelace.</p>
            <p>Call us on the <b>hotline</b> any weekday.</p><!-- commentonly --></body></html>`);
        } else if (req.url?.startsWith('/prices.pdf')) {
          res.writeHead(200, { 'content-type': 'application/pdf' });
          res.end(pdf);
        } else if (req.url === '/sitemap.xml') {
          res.writeHead(200, { 'content-type': 'application/xml' });
          res.end(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${base}/about.html</loc></url><url><loc>${base}/prices.pdf?a=1&amp;b=2</loc></url></urlset>`);
        } else {
          res.writeHead(404);
          res.end('nope');
        }
      });
      await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
      const base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
      try {
        const map = await server.request('POST', `${A}/knowledgebase/get-sitemap-urls`, { body: { siteUrl: `${base}/`, knowledgeBaseId: id } });
        expect(map.status, map.text).toBe(200);
        expect(map.body.data).toEqual({ urls: [`${base}/about.html`, `${base}/prices.pdf?a=1&b=2`], extractedAt: expect.any(String) });
        const notMap = await server.request('POST', `${A}/knowledgebase/get-sitemap-urls`, { body: { site_url: `${base}/missing` } });
        expect(notMap.status).toBe(422);

        const urls = [...map.body.data.urls, `${base}/missing`, 'http://169.254.169.254/latest/meta-data/'];
        const started = await server.request('POST', `${A}/knowledgebase/${id}/scrape-urls`, { body: { urls } });
        expect(started.status, started.text).toBe(200);
        expect(started.body.data.urls.map((u: any) => [u.url, u.status])).toEqual(urls.map((u) => [u, 'pending']));
        let listed: any[] = [];
        for (let i = 0; i < 100; i++) {
          listed = (await server.request('GET', `${A}/knowledgebase/${id}/scraped-urls`)).body.data;
          if (listed.every((u) => u.status === 'completed' || u.status === 'failed')) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        const byUrl = Object.fromEntries(listed.map((u) => [u.url, u]));
        expect(byUrl[`${base}/about.html`]).toMatchObject({ status: 'completed', title: 'About & contact', error: null });
        expect(byUrl[`${base}/prices.pdf?a=1&b=2`]).toMatchObject({ status: 'completed' });
        expect(byUrl[`${base}/missing`]).toMatchObject({ status: 'failed', error: `Could not fetch ${base}/missing: the page answered HTTP 404` });
        expect(byUrl['http://169.254.169.254/latest/meta-data/'].status).toBe('failed');
        expect(byUrl['http://169.254.169.254/latest/meta-data/'].error).toMatch(/egress policy/);
        const items = (await server.request('GET', `${A}/knowledgebase/${id}/items`)).body.data as any[];
        const about = items.find((i) => i._id === byUrl[`${base}/about.html`]._id);
        expect(about.itemType).toBe('url');
        expect(about.content).toBe('About us\n\nOur clinic was founded in 1987 by Dr Ada Lovelace.\n\nCall us on the hotline any weekday.');
        for (const hidden of ['javascriptonly', 'navigationonly', 'commentonly']) {
          expect((await server.request('GET', `${A}/knowledgebase/${id}/search?query=${hidden}`)).body.data).toEqual([]);
        }
        expect((await server.request('GET', `${A}/knowledgebase/${id}/search?query=founded`)).body.data[0].itemId).toBe(about._id);
        expect((await server.request('GET', `${A}/knowledgebase/${id}/search?query=filling`)).body.data[0].itemId).toBe(byUrl[`${base}/prices.pdf?a=1&b=2`]._id);
        const removed = await server.request('DELETE', `${A}/knowledgebase/${id}/scraped-urls/${about._id}`);
        expect(removed.body).toEqual({ status: true });
        expect((await server.request('GET', `${A}/knowledgebase/${id}/search?query=founded`)).body.data).toEqual([]);
        expect((await server.request('GET', `${A}/knowledgebase/${id}/scraped-urls`)).body.data).toHaveLength(3);
        const bad = await server.request('POST', `${A}/knowledgebase/${id}/scrape-urls`, { body: { urls: ['ftp://example.com/x'] } });
        expect(bad.status).toBe(400);
        expect(bad.body.errors).toEqual(['urls[0]: must be an http or https URL']);
      } finally {
        site.close();
      }
    });

    it("refuses to delete a knowledge base an agent uses; agents may name only their organization's", async () => {
      const server = suite.server;
      const id = await kb(server, 'Attached');
      const agent = await server.request('POST', `${A}/agent`, { body: { name: 'KB agent', workflowType: 'single_prompt', prompt: 'Hi.', globalKnowledgeBaseId: id } });
      expect(agent.status, agent.text).toBe(201);
      const refused = await server.request('DELETE', `${A}/knowledgebase/${id}`);
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({ status: false, errors: ['This knowledge base is connected to an agent. Please detach it from the agent before deleting.'] });
      const unknown = await server.request('POST', `${A}/agent`, { body: { name: 'KB agent', workflowType: 'single_prompt', prompt: 'Hi.', globalKnowledgeBaseId: '0123456789abcdef01234567' } });
      expect(unknown.status).toBe(400);
      expect(unknown.body.errors).toContain('globalKnowledgeBaseId: no knowledge base 0123456789abcdef01234567 in your organization');
    });

    it("answers another organization's knowledge base with the project's 403 and unknown ids 404", async () => {
      const server = suite.server;
      const id = await kb(server, 'Mine');
      await textItem(server, id, DOCS.hours);
      const other = await createOrgKey(suite.store, `kb-other-${dialect}`, `org-kb-other-${dialect}`);
      expect((await server.request('GET', `${A}/knowledgebase`, { key: other })).body.data).toEqual([]);
      for (const [method, path, body] of [
        ['GET', `/knowledgebase/${id}`],
        ['POST', `/knowledgebase/${id}`, { name: 'Theirs' }],
        ['DELETE', `/knowledgebase/${id}`],
        ['GET', `/knowledgebase/${id}/items`],
        ['POST', `/knowledgebase/${id}/items/text`, { content: 'Injected.' }],
        ['GET', `/knowledgebase/${id}/search?query=open`],
      ] as [string, string, unknown?][]) {
        const res = await server.request(method, `${A}${path}`, { key: other, body });
        expect(res.status, `${method} ${path}: ${res.text}`).toBe(403);
        expect(res.body.status).toBe(false);
      }
      expect((await server.request('GET', `${A}/knowledgebase/0123456789abcdef01234567`, { key: other })).status).toBe(404);
      // Their agent cannot name it either.
      const agent = await server.request('POST', `${A}/agent`, { key: other, body: { name: 'Theirs', workflowType: 'single_prompt', prompt: 'Hi.', globalKnowledgeBaseId: id } });
      expect(agent.status).toBe(400);
      expect((await server.request('GET', `${A}/knowledgebase/${id}/items`)).body.data).toHaveLength(1);
    });
  });
}

for (const dialect of testDialects()) {
  describe(`knowledge-base pages a killed server left unread (${dialect})`, () => {
    it('are failed by the next server once still for 15 minutes; a page still fresh is left alone', async () => {
      const store = freshStore(dialect);
      // A site that takes the requests and never answers: the first page stays `processing`, the second `pending`.
      const held: http.ServerResponse[] = [];
      const site = http.createServer((_req, res) => void held.push(res));
      await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
      const base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
      let first: TestServer | undefined;
      let second: TestServer | undefined;
      try {
        first = await startServer({ store });
        const id = await kb(first, 'Site');
        const urls = [`${base}/slow.html`, `${base}/next.html`];
        expect((await first.request('POST', `${A}/knowledgebase/${id}/scrape-urls`, { body: { urls } })).status).toBe(200);
        // In the order of `urls` (the list sorts by creation time, then id: two items made in the same millisecond
        // come in either order).
        const status = async (s: TestServer) => {
          const listed = (await s.request('GET', `${A}/knowledgebase/${id}/scraped-urls`, { key: first!.key })).body.data as any[];
          return urls.map((url) => listed.filter((u) => u.url === url).map((u) => [u.url, u.status, u.error])[0]);
        };
        for (let i = 0; i < 50 && held.length === 0; i++) await sleep(100);
        expect(await status(first)).toEqual([[urls[0], 'processing', null], [urls[1], 'pending', null]]);
        first.proc.kill('SIGKILL');
        await first.waitExit();
        // Time passes for the page being read (its row last touched 20 minutes ago); the waiting one was touched now.
        await storeSql(store, 'UPDATE kb_items SET updated_at = $1 WHERE file_name = $2', [new Date(Date.now() - 20 * 60_000).toISOString(), urls[0]]);
        second = await startServer({ store, env: { PARLEY_BOOTSTRAP_KEY: first.key } });
        let now: unknown[] = [];
        for (let i = 0; i < 50; i++) {
          now = await status(second);
          if ((now[0] as unknown[])[1] !== 'processing') break;
          await sleep(100);
        }
        expect(now).toEqual([[urls[0], 'failed', 'The server reading this item stopped before it finished; add it again'], [urls[1], 'pending', null]]);
        await second.waitForLog(/"swept":1,.*"msg":"failed knowledge-base items a stopped server left unread"/);
      } finally {
        for (const res of held) res.destroy();
        await new Promise<void>((r) => site.close(() => r()));
        await second?.stop();
        if (first && first.proc.exitCode === null) await first.stop();
        await store.cleanup();
      }
    });
  });
}
