// Organization tool library: create, list, read, update (JSON merge patch), delete (refused while referenced), resolution at call start.
import { randomInt } from 'node:crypto';
import type { Selectable } from 'kysely';
import { isUniqueViolation, type Db } from '../store/db.js';
import type { ToolsTable } from '../store/schema.js';
import { newId, nowIso } from '../store/ids.js';
import { z } from 'zod';
import { ApiError, badRequest, conflict, forbidden, notFound } from '../errors.js';
import { bodyObject, parseBody, says } from '../validation.js';
import type { Actor } from '../agents/agents.js';
import { isPlainObject } from '../agents/config.js';
import { TOOL_TYPES, parseDefinition, type ToolDefinition } from './definition.js';
import { agentsReferencingTool } from './references.js';

export { stripAuth } from './definition.js';
export type ToolRow = Selectable<ToolsTable>;

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
export const TOOL_ID = /^tool_[a-z0-9]{24}$/;

export function newToolId(): string {
  let id = 'tool_';
  for (let i = 0; i < 24; i++) id += ALPHABET[randomInt(ALPHABET.length)];
  return id;
}

export function toolDto(row: ToolRow): Record<string, unknown> {
  return {
    _id: row.id,
    toolId: row.tool_id,
    organizationId: row.org_id,
    type: row.type,
    definition: JSON.parse(row.definition) as ToolDefinition,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const nameTaken = (name: string) => conflict('tool_name_exists', `definition.name: a tool named "${name}" already exists in this organization`);

function definitionOf(body: unknown): unknown {
  if (!isPlainObject(body)) throw badRequest('Request body must be a JSON object');
  if (body.definition === undefined) throw badRequest('definition: required');
  return body.definition;
}

function validated(input: unknown): ToolDefinition {
  const { definition, errors } = parseDefinition(input);
  if (!definition) throw badRequest(errors);
  return definition;
}

export async function createTool(db: Db, actor: Actor, body: unknown): Promise<Record<string, unknown>> {
  const definition = validated(definitionOf(body));
  const taken = await db.selectFrom('tools').select('id').where('org_id', '=', actor.orgId).where('name', '=', definition.name).executeTakeFirst();
  if (taken) throw nameTaken(definition.name);
  const now = nowIso();
  const row: ToolRow = { id: newId(), tool_id: newToolId(), org_id: actor.orgId, name: definition.name, type: definition.type, definition: JSON.stringify(definition), created_at: now, updated_at: now };
  try {
    await db.insertInto('tools').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(definition.name);
    throw err;
  }
  return toolDto(row);
}

export async function listTools(db: Db, actor: Actor, query: URLSearchParams): Promise<{ tools: Record<string, unknown>[] }> {
  const type = query.get('type');
  if (type !== null && !TOOL_TYPES.includes(type as never)) throw badRequest(`type: must be one of ${TOOL_TYPES.join(', ')}`);
  let q = db.selectFrom('tools').selectAll().where('org_id', '=', actor.orgId);
  if (type) q = q.where('type', '=', type);
  const rows = await q.orderBy('created_at').orderBy('id').execute();
  return { tools: rows.map(toolDto) };
}

async function loadTool(db: Db, actor: Actor, toolId: string): Promise<ToolRow> {
  const row = TOOL_ID.test(toolId) ? await db.selectFrom('tools').selectAll().where('tool_id', '=', toolId).executeTakeFirst() : undefined;
  if (!row) throw notFound('Tool not found');
  if (row.org_id !== actor.orgId) throw forbidden('This API key has no access to this tool');
  return row;
}

export async function readTool(db: Db, actor: Actor, toolId: string): Promise<Record<string, unknown>> {
  return toolDto(await loadTool(db, actor, toolId));
}

/** RFC 7396 JSON merge patch: objects merge recursively, `null` removes a field, arrays and scalars replace. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * `PATCH /tool/{toolId}` with `{definition}`: a JSON merge patch onto the stored definition, then validated whole
 * (defaults refilled). A patch that changes `type` replaces the definition instead (the two types share few fields).
 */
/** `PATCH /tool/{toolId}`: a merge patch of the definition (a changed `type` replaces it); the result must pass the create schema. */
export const updateToolBody = bodyObject({
  definition: z.record(z.unknown(), says('must be an object', 'required')).describe('Fields to change; the merged definition must pass the create schema.'),
});

export async function updateTool(db: Db, actor: Actor, toolId: string, body: unknown): Promise<Record<string, unknown>> {
  const { definition: patch } = parseBody(updateToolBody, body);
  const row = await loadTool(db, actor, toolId);
  const current = JSON.parse(row.definition) as Record<string, unknown>;
  const changesType = patch.type !== undefined && patch.type !== current.type;
  const definition = validated(changesType ? patch : mergePatch(current, patch));
  if (definition.name !== row.name) {
    const taken = await db.selectFrom('tools').select('id').where('org_id', '=', actor.orgId).where('name', '=', definition.name).executeTakeFirst();
    if (taken) throw nameTaken(definition.name);
  }
  const updated: ToolRow = { ...row, name: definition.name, type: definition.type, definition: JSON.stringify(definition), updated_at: nowIso() };
  try {
    await db.updateTable('tools').set({ name: updated.name, type: updated.type, definition: updated.definition, updated_at: updated.updated_at }).where('id', '=', row.id).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(definition.name);
    throw err;
  }
  return toolDto(updated);
}

/** Refused (409 `tool_in_use`) while a non-archived agent's runnable configuration references the tool. */
export async function deleteTool(db: Db, actor: Actor, toolId: string): Promise<void> {
  const row = await loadTool(db, actor, toolId);
  const agents = await agentsReferencingTool(db, actor.orgId, row.tool_id);
  if (agents.length) {
    const list = agents.map((a) => `${a.name} (${a._id})`).join(', ');
    throw new ApiError(409, `Tool "${row.name}" is referenced in toolRefs by agent(s): ${list}; remove it from their configuration first`, {
      errorType: 'tool_in_use',
      data: { agents },
    });
  }
  await db.deleteFrom('tools').where('id', '=', row.id).execute();
}

/**
 * The current definitions of the referenced, enabled tools of the organization, in `toolRefs` order (duplicates once).
 * Read from the store at every call start (no cache), so an edit reaches every referencing agent at once.
 * Unknown or foreign ids are skipped. Definitions keep `auth` (secret names): pass it to the executor and give the
 * runtime, logs and records `stripAuth(definition)`.
 */
export async function resolveAgentTools(db: Db, orgId: string, toolRefs: string[]): Promise<ToolDefinition[]> {
  const ids = [...new Set(toolRefs.filter((id) => TOOL_ID.test(id)))];
  if (!ids.length) return [];
  const rows = await db.selectFrom('tools').select(['tool_id', 'definition']).where('org_id', '=', orgId).where('tool_id', 'in', ids).execute();
  const byId = new Map(rows.map((r) => [r.tool_id, JSON.parse(r.definition) as ToolDefinition]));
  return ids.map((id) => byId.get(id)).filter((d): d is ToolDefinition => d !== undefined && d.enabled);
}
