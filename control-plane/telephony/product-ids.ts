// Deprecated `telephonyProductId` on agent update: the agent's number answer sources become exactly these product ids.
import type { Db, Tx } from '../store/db.js';
import { ApiError } from '../errors.js';
import { insertAnswer, resolveSource } from './sources.js';

/** Validates the field against the organization's numbers; pushes an error per bad or foreign id; returns the ids. */
export async function readProductIds(q: Db | Tx, orgId: string, value: unknown, errors: string[]): Promise<string[]> {
  if (value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
    errors.push('telephonyProductId: must be an array of product ids');
    return [];
  }
  const ids = [...new Set(value as string[])];
  for (const [i, id] of (value as string[]).entries()) {
    try {
      await resolveSource(q, orgId, 'phoneNumber', id);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      errors.push(`telephonyProductId[${i}]: ${id} is not a number your organization holds`);
    }
  }
  return ids;
}

/** Replace semantics inside `tx`: number sources not listed stop; listed ones are attached (409 if another agent answers one). Trunk sources stay. */
export async function replaceNumberAnswers(tx: Tx, orgId: string, agentId: string, ids: string[]): Promise<void> {
  let stale = tx.deleteFrom('answer_sources').where('agent_id', '=', agentId).where('source_kind', '=', 'phoneNumber');
  if (ids.length) stale = stale.where('source_id', 'not in', ids);
  await stale.execute();
  for (const id of ids) await insertAnswer(tx, orgId, agentId, 'phoneNumber', id);
}
