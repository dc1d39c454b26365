// What an agent's configuration refers to must be its organization's: library tools (`toolRefs`), vault secrets by name
// (`model.apiKeySecret`, `preCallAPI.auth`), knowledge bases (`globalKnowledgeBaseId`, a `knowledge_base_search` tool's
// `knowledgeBaseId`). Checked when the configuration
// is written; a reference that is missing or another organization's is a 400 naming the field, the same either way.
import type { Db, Tx } from '../store/db.js';
import { agentDictErrors } from '../pronunciation/dicts.js';
import { existingKnowledgeBases } from '../knowledge/knowledge-bases.js';

const obj = (v: unknown): Record<string, unknown> | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null);

/** Secret names a tool-style `auth` block uses (bearer token, api_key value, basic username and password). */
function authSecrets(auth: unknown): [string, string][] {
  const a = obj(auth);
  if (!a) return [];
  const fields = a.type === 'bearer' ? ['token'] : a.type === 'api_key' ? ['value'] : a.type === 'basic' ? ['username', 'password'] : [];
  return fields.filter((f) => typeof a[f] === 'string').map((f) => [f, a[f] as string]);
}

/** Errors for the references of the configuration fields being written (`patch`, merged values of the touched fields). */
export async function referenceErrors(q: Db | Tx, orgId: string, fields: Record<string, unknown>): Promise<string[]> {
  const errors: string[] = [];
  if (Array.isArray(fields.toolRefs) && fields.toolRefs.length) {
    const refs = fields.toolRefs.filter((r): r is string => typeof r === 'string');
    const found = new Set((await q.selectFrom('tools').select('tool_id').where('org_id', '=', orgId).where('tool_id', 'in', refs).execute()).map((r) => r.tool_id));
    refs.forEach((ref, i) => {
      if (!found.has(ref)) errors.push(`toolRefs[${i}]: no tool ${ref} in your organization's library`);
    });
  }
  const secrets: [string, string][] = [];
  const model = obj(fields.model);
  if (model && typeof model.apiKeySecret === 'string') secrets.push(['model.apiKeySecret', model.apiKeySecret]);
  const preCall = obj(fields.preCallAPI);
  if (preCall) for (const [f, name] of authSecrets(preCall.auth)) secrets.push([`preCallAPI.auth.${f}`, name]);
  if (secrets.length) {
    const names = [...new Set(secrets.map(([, n]) => n))];
    const found = new Set((await q.selectFrom('secrets').select('name').where('org_id', '=', orgId).where('name', 'in', names).execute()).map((r) => r.name));
    for (const [field, name] of secrets) if (!found.has(name)) errors.push(`${field}: no secret named ${name} in your organization's vault (POST /secret first)`);
  }
  // Knowledge bases: the agent's global one, and each knowledge_base_search tool's.
  const kbs: [string, string][] = [];
  if (typeof fields.globalKnowledgeBaseId === 'string' && fields.globalKnowledgeBaseId !== '') kbs.push(['globalKnowledgeBaseId', fields.globalKnowledgeBaseId]);
  if (Array.isArray(fields.tools)) {
    fields.tools.forEach((t, i) => {
      const tool = obj(t);
      if (tool?.type === 'knowledge_base_search' && typeof tool.knowledgeBaseId === 'string' && tool.knowledgeBaseId !== '') kbs.push([`tools.${i}.knowledgeBaseId`, tool.knowledgeBaseId]);
    });
  }
  if (kbs.length) {
    const found = await existingKnowledgeBases(q, orgId, [...new Set(kbs.map(([, id]) => id))]);
    for (const [field, id] of kbs) if (!found.has(id)) errors.push(`${field}: no knowledge base ${id} in your organization`);
  }
  if (fields.pronunciationDicts !== undefined) errors.push(...(await agentDictErrors(q, orgId, fields.pronunciationDicts)));
  return errors;
}
