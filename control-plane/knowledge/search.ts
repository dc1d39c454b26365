// Ranked full-text search over knowledge-base chunks, one function for both stores: SQLite FTS5 ranked by bm25()
// (Porter stemming), PostgreSQL an english tsvector ranked by ts_rank_cd (Snowball stemming). A query is reduced to
// its words (stop words dropped) joined by OR, so a question in plain language ("what are your opening hours?")
// finds the passages that share the most, and the rarest, of its words.
import { sql } from 'kysely';
import type { Db, Tx } from '../store/db.js';
import { isPostgres, kbDb } from './migration.js';

export interface ChunkHit {
  chunkId: number;
  itemId: string;
  knowledgeBaseId: string;
  seq: number;
  content: string;
  /** Higher is better (bm25 negated on SQLite, ts_rank_cd on PostgreSQL): comparable within one store only. */
  score: number;
}

/** Most words of a query used (a long question keeps its first distinct words). */
const MAX_TERMS = 24;
export const DEFAULT_RESULTS = 5;
const MAX_RESULTS = 50;

/** English stop words (PostgreSQL's english configuration drops these itself; FTS5 does not). */
const STOP = new Set(
  ('a about above after again against all am an and any are as at be because been before being below between both but by can could did do does doing down during each few for from further had has have having he her here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other our ours ourselves out over own same she should so some such than that the their theirs them themselves then there these they this those through to too under until up very was we were what when where which while who whom why will with would you your yours yourself yourselves tell know please').split(' '),
);

/** The words of a query worth searching for: lower-case letters and digits, stop words out, each once. */
export function queryTerms(query: string): string[] {
  const words = query.toLowerCase().normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? [];
  const out: string[] = [];
  for (const w of words) {
    if (STOP.has(w) || out.includes(w)) continue;
    out.push(w);
    if (out.length >= MAX_TERMS) break;
  }
  return out;
}

/** The best chunks of these knowledge bases for the query, best first (none when the query has no searchable word). */
export async function searchChunks(db: Db | Tx, knowledgeBaseIds: string[], query: string, limit = DEFAULT_RESULTS): Promise<ChunkHit[]> {
  const terms = queryTerms(query);
  if (!terms.length || !knowledgeBaseIds.length) return [];
  const k = Math.max(1, Math.min(MAX_RESULTS, Math.floor(limit)));
  const ids = sql.join(knowledgeBaseIds.map((id) => sql`${id}`));
  if (isPostgres(db)) {
    // Terms are letters and digits only: safe inside to_tsquery's syntax; each is stemmed by the english configuration.
    const tsquery = terms.join(' | ');
    const rows = await sql<{ n: string | number; item_id: string; kb_id: string; seq: number; content: string; score: number }>`
      SELECT c.n, c.item_id, c.kb_id, c.seq, c.content, ts_rank_cd(c.tsv, q, 1) AS score
      FROM kb_chunks c, to_tsquery('english', ${tsquery}) q
      WHERE c.tsv @@ q AND c.kb_id IN (${ids})
      ORDER BY score DESC, c.n ASC
      LIMIT ${k}`.execute(kbDb(db));
    return rows.rows.map((r) => ({ chunkId: Number(r.n), itemId: r.item_id, knowledgeBaseId: r.kb_id, seq: r.seq, content: r.content, score: Number(r.score) }));
  }
  const match = terms.map((t) => `"${t}"`).join(' OR ');
  const rows = await sql<{ n: number; item_id: string; kb_id: string; seq: number; content: string; score: number }>`
    SELECT c.n, c.item_id, c.kb_id, c.seq, c.content, -bm25(kb_chunks_fts) AS score
    FROM kb_chunks_fts JOIN kb_chunks c ON c.n = kb_chunks_fts.rowid
    WHERE kb_chunks_fts MATCH ${match} AND c.kb_id IN (${ids})
    ORDER BY score DESC, c.n ASC
    LIMIT ${k}`.execute(kbDb(db));
  return rows.rows.map((r) => ({ chunkId: r.n, itemId: r.item_id, knowledgeBaseId: r.kb_id, seq: r.seq, content: r.content, score: r.score }));
}
