// Knowledge-base search benchmark (`npx tsx bench/kb-search.ts`): on each store, ingests generated documents into one
// knowledge base until it holds BENCH_CHUNKS chunks (through the same functions the routes use: chunking, the
// batched insert, the FTS5 triggers or the generated tsvector), then times BENCH_QUERIES searches (questions made of
// a few words of a random chunk and some stop words) through searchChunks(). Issue 35 goals at 10,000 chunks: search
// p95 at most 10 ms on SQLite, 20 ms on PostgreSQL; ingest reported as pages (3,000 characters) and chunks a second.
//
// Env: BENCH_CHUNKS (default 10000), BENCH_QUERIES (default 500), BENCH_STORES (default sqlite,postgres),
// BENCH_PG_URL (default PARLEY_TEST_PG_URL or postgres://postgres@127.0.0.1:5432/test; a private schema is made and
// dropped). Writes bench/results/kb-search.json.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { sql } from 'kysely';
import { faker } from '@faker-js/faker';
import { openStore, type Store } from '../control-plane/store/db.js';
import { nowIso } from '../control-plane/store/ids.js';
import { createKnowledgeBase, finishItem, startItem } from '../control-plane/knowledge/knowledge-bases.js';
import { searchChunks } from '../control-plane/knowledge/search.js';
import { printTable, quantile, resultPath } from './lib/report.js';

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 10_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 500);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
const PG_URL = process.env.BENCH_PG_URL ?? process.env.PARLEY_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const PAGE_CHARS = 3000;
const STOP = ['what', 'is', 'the', 'how', 'do', 'i', 'can', 'you', 'about', 'my'];

faker.seed(35);
/**
 * Words with English-like frequencies: faker's ~3,400 words plus made-up ones (two of its words run together) for a
 * vocabulary of VOCAB, drawn by Zipf's law (rank r with weight 1/r), as words are in real text. faker's words alone,
 * drawn uniformly, put every word in about one chunk in thirty: no text is like that, and every query matched a third
 * of the knowledge base.
 */
const VOCAB = 40_000;
const base = [...new Set(Array.from({ length: 60_000 }, () => faker.word.sample().toLowerCase()).filter((w) => /^[a-z]+$/.test(w)))];
/** The most frequent words of English are function words (searches drop them), as in real text. */
const FUNCTION_WORDS = 'the of and to a in is it you that he was for on are with as i his they be at one have this from or had by not but what some we can out other were all there when up use your how said an each she which do their if will way about many then them would like so these her see him has more could go come did no most my over than who may down been now find any new after also made only our'.split(' ');
const vocab = [...FUNCTION_WORDS, ...faker.helpers.shuffle([...base, ...Array.from({ length: VOCAB - base.length }, () => `${faker.helpers.arrayElement(base)}${faker.helpers.arrayElement(base)}`)])];
const cumulative: number[] = [];
vocab.reduce((sum, _, r) => (cumulative.push(sum + 1 / (r + 1)), sum + 1 / (r + 1)), 0);
function zipfWord(): string {
  const x = faker.number.float({ min: 0, max: cumulative.at(-1)! });
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return vocab[lo]!;
}
/** A document of `paragraphs` paragraphs of 3-6 sentences of 8-18 words. */
function documentText(paragraphs: number): string {
  const para = () =>
    Array.from({ length: faker.number.int({ min: 3, max: 6 }) }, () => {
      const s = Array.from({ length: faker.number.int({ min: 8, max: 18 }) }, zipfWord).join(' ');
      return `${s[0]!.toUpperCase()}${s.slice(1)}.`;
    }).join(' ');
  return Array.from({ length: paragraphs }, para).join('\n\n');
}
/** Distinct documents (about 25 chunks each): enough that the knowledge base repeats none of them. */
const DOCS = Array.from({ length: Math.ceil(CHUNKS / 25) + 10 }, () => documentText(faker.number.int({ min: 20, max: 40 })));

interface Result {
  store: string;
  chunks: number;
  items: number;
  ingestSeconds: number;
  pagesPerSecond: number;
  chunksPerSecond: number;
  searchP50Ms: number;
  searchP95Ms: number;
  searchP99Ms: number;
  meanHits: number;
  goalP95Ms: number;
}

async function open(kind: string): Promise<{ store: Store; cleanup: () => Promise<void> }> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(path.join(tmpdir(), 'kb-bench-'));
    const store = await openStore({ dataDir: dir });
    return { store, cleanup: async () => { await store.close(); rmSync(dir, { recursive: true, force: true }); } };
  }
  const schema = `kb_bench_${randomBytes(4).toString('hex')}`;
  const store = await openStore({ dataDir: '', databaseUrl: PG_URL, pgSchema: schema });
  return {
    store,
    cleanup: async () => {
      await store.close();
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      if (process.env.BENCH_KEEP_SCHEMA) console.log(`kept schema ${schema}`);
      else await c.query(`DROP SCHEMA ${schema} CASCADE`);
      await c.end();
    },
  };
}

async function bench(kind: string): Promise<Result> {
  const { store, cleanup } = await open(kind);
  try {
    const db = store.db;
    const orgId = 'bench-org';
    await db.insertInto('organizations').values({ id: orgId, name: 'bench', created_at: nowIso() } as never).execute();
    const actor = { orgId, name: 'bench' };
    const kbId = await createKnowledgeBase(db, actor, { name: 'Bench' });
    let chunks = 0;
    let chars = 0;
    let items = 0;
    const started = performance.now();
    while (chunks < CHUNKS) {
      const text = DOCS[items % DOCS.length]!;
      const item = await startItem(db, orgId, kbId, { itemType: 'text', title: `Doc ${items}`, contentType: 'text/plain' });
      const done = await finishItem(db, item, text);
      chunks += done.chunk_count;
      chars += text.length;
      items++;
    }
    const ingestSeconds = (performance.now() - started) / 1000;
    // What autovacuum does after a bulk load: the planner's statistics (else it filters the knowledge base's every row).
    if (kind === 'postgres') await sql`ANALYZE kb_chunks`.execute(db);
    // Questions: 2-4 consecutive words of an ingested document and two stop words, shuffled.
    const words = DOCS.slice(0, items).join(' ').toLowerCase().match(/[a-z]{4,}/g)!;
    const queries = Array.from({ length: QUERIES }, () => {
      const at = faker.number.int({ min: 0, max: words.length - 5 });
      const picked = words.slice(at, at + faker.number.int({ min: 2, max: 4 }));
      return faker.helpers.shuffle([...picked, faker.helpers.arrayElement(STOP), faker.helpers.arrayElement(STOP)]).join(' ');
    });
    for (const q of queries.slice(0, 20)) await searchChunks(db, [kbId], q); // warm
    const times: number[] = [];
    let hits = 0;
    for (const q of queries) {
      const t = performance.now();
      const found = await searchChunks(db, [kbId], q, 5);
      times.push(performance.now() - t);
      hits += found.length;
    }
    const r2 = (x: number) => Math.round(x * 100) / 100;
    return {
      store: kind,
      chunks,
      items,
      ingestSeconds: r2(ingestSeconds),
      pagesPerSecond: r2(chars / PAGE_CHARS / ingestSeconds),
      chunksPerSecond: Math.round(chunks / ingestSeconds),
      searchP50Ms: r2(quantile(times, 0.5)),
      searchP95Ms: r2(quantile(times, 0.95)),
      searchP99Ms: r2(quantile(times, 0.99)),
      meanHits: r2(hits / queries.length),
      goalP95Ms: kind === 'sqlite' ? 10 : 20,
    };
  } finally {
    await cleanup();
  }
}

const results: Result[] = [];
for (const kind of STORES) results.push(await bench(kind));
printTable(
  `Knowledge-base search at ${CHUNKS} chunks, ${QUERIES} queries (top 5)`,
  ['store', 'chunks', 'items', 'ingest s', 'pages/s', 'chunks/s', 'p50 ms', 'p95 ms', 'p99 ms', 'goal p95', 'hits'],
  results.map((r) => [r.store, String(r.chunks), String(r.items), String(r.ingestSeconds), String(r.pagesPerSecond), String(r.chunksPerSecond), String(r.searchP50Ms), String(r.searchP95Ms), String(r.searchP99Ms), `<= ${r.goalP95Ms}`, String(r.meanHits)]),
  1,
);
writeFileSync(resultPath('kb-search'), `${JSON.stringify({ chunks: CHUNKS, queries: QUERIES, results }, null, 2)}\n`);
