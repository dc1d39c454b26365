// Knowledge-base search in a call (issue 35 item 1): an agent's `knowledge_base_search` tools (each with its
// `knowledgeBaseId`) and its `globalKnowledgeBaseId` (offered to the model as `search_knowledge_base`) run here: the
// model's query -> the best chunks of the organization's knowledge bases -> the tool result. Each search, with what it
// found, is kept for the call record (`metrics.knowledgeBaseSearches`).
import type { Db } from '../control-plane/store/db.js';
import { existingKnowledgeBases } from '../control-plane/knowledge/knowledge-bases.js';
import { searchChunks } from '../control-plane/knowledge/search.js';
import type { FunctionTool, ToolCall } from '../engine/agent/types.js';

/** The function offered for the agent's `globalKnowledgeBaseId` (unless one of its tools has the name). */
export const GLOBAL_KB_FUNCTION = 'search_knowledge_base';
/** Chunks a search returns to the model. */
const RESULTS = 4;
/** Longest query searched (characters). */
const MAX_QUERY = 500;

export interface KnowledgeSearchRecord {
  tool: string;
  knowledgeBaseIds: string[];
  query: string;
  results: { knowledgeBaseId: string; itemId: string; chunkId: number; score: number; content: string }[];
  error?: string;
  at: string;
}

export interface KnowledgeToolsOptions {
  db: Db;
  orgId: string;
  /** The agent's wire tools (`knowledge_base_search` ones are taken). */
  agentTools: Record<string, unknown>[];
  globalKnowledgeBaseId?: unknown;
  /** Each search as the call record keeps it. */
  onSearch(record: KnowledgeSearchRecord): void;
}

export class KnowledgeTools {
  /** Function name -> the knowledge bases it searches. */
  private readonly byName = new Map<string, string[]>();
  private readonly offered: FunctionTool[] = [];

  constructor(private readonly opts: KnowledgeToolsOptions) {
    for (const t of opts.agentTools) {
      if (t.type !== 'knowledge_base_search' || t.enabled === false || typeof t.name !== 'string' || !t.name) continue;
      if (typeof t.knowledgeBaseId === 'string' && t.knowledgeBaseId) this.byName.set(t.name, [t.knowledgeBaseId]);
    }
    const global = opts.globalKnowledgeBaseId;
    if (typeof global === 'string' && global && !this.byName.has(GLOBAL_KB_FUNCTION)) {
      this.byName.set(GLOBAL_KB_FUNCTION, [global]);
      this.offered.push({
        name: GLOBAL_KB_FUNCTION,
        description: "Searches the agent's knowledge base. Use it to answer questions about facts you were not told: pass the question's key words as the query.",
        parameters: { type: 'object', properties: { query: { type: 'string', description: 'What to look up in the knowledge base' } }, required: ['query'] },
      });
    }
  }

  /** Functions to offer the model beside the agent's own tools (the global knowledge base's). */
  functions(): FunctionTool[] {
    return this.offered;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** Runs a search; null when none of its knowledge bases is the organization's (the session speaks a fallback). */
  async run(call: ToolCall): Promise<string | null> {
    const wanted = this.byName.get(call.name);
    if (!wanted) return null;
    let query = '';
    try {
      const args = call.arguments ? (JSON.parse(call.arguments) as unknown) : {};
      if (args && typeof args === 'object' && typeof (args as { query?: unknown }).query === 'string') query = (args as { query: string }).query.slice(0, MAX_QUERY);
    } catch {
      return JSON.stringify({ error: 'the arguments were not valid JSON' });
    }
    const at = new Date().toISOString();
    if (!query.trim()) return JSON.stringify({ error: 'query is required: the words to look up' });
    const ids = [...(await existingKnowledgeBases(this.opts.db, this.opts.orgId, wanted))];
    if (!ids.length) {
      this.opts.onSearch({ tool: call.name, knowledgeBaseIds: wanted, query, results: [], error: 'knowledge base not found', at });
      return null;
    }
    const hits = await searchChunks(this.opts.db, ids, query, RESULTS);
    const results = hits.map((h) => ({ knowledgeBaseId: h.knowledgeBaseId, itemId: h.itemId, chunkId: h.chunkId, score: Math.round(h.score * 1e4) / 1e4, content: h.content }));
    this.opts.onSearch({ tool: call.name, knowledgeBaseIds: ids, query, results, at });
    if (!results.length) return JSON.stringify({ results: [], note: 'Nothing in the knowledge base matches; say you do not know rather than guess.' });
    return JSON.stringify({ results: results.map((r) => ({ content: r.content })) });
  }
}
