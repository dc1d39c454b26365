// Call actions (hosted reference, "Call Actions"): per agent, an integration step at a point of a call's life:
// `trigger` (an outside record starts an outbound call; needs `config.phoneNumberFieldName`) or `post-call` (after a
// call ends, e.g. update a CRM record), on a `provider`'s `object` (`create` or `update`), with `conditions` and a
// `body` template. Create, list (one agent's, paged, by category or provider), read, update (only the fields sent),
// delete. The store keeps them; no provider integration runs them here (docs/api.md says so).
import { z } from 'zod';
import type { Db } from '../store/db.js';
import { badRequest, notFound, ownRow } from '../errors.js';
import { isObjectId, newId, nowIso } from '../store/ids.js';
import { loadAgent, type Actor } from '../agents/agents.js';
import { bodyObject, parseBody, says } from '../validation.js';
import { orgDb, type CallActionsTable } from './migration.js';

export const CALL_ACTION_CATEGORIES = ['trigger', 'post-call'] as const;
export const CALL_ACTION_TYPES = ['create', 'update'] as const;
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 100;
/** Largest stored `config` (JSON characters). */
const MAX_CONFIG_CHARS = 64 * 1024;

const text = (max: number) => z.string(says(`must be a string of 1-${max} characters`)).trim().min(1, `must be a string of 1-${max} characters`).max(max, `must be a string of 1-${max} characters`);

const configSchema = z
  .object(
    {
      phoneNumberFieldName: text(200).optional().describe('Provider field holding the phone number (required for `trigger` actions).'),
      conditions: z
        .array(
          z.object({ field: text(200), operator: text(50), value: z.union([z.string(), z.number(), z.boolean(), z.null()], says('must be a string, number, boolean or null')).optional() }, says('must be an object {field, operator, value}')).passthrough(),
          says('must be an array of {field, operator, value}'),
        )
        .max(50, 'must have at most 50 conditions')
        .optional(),
      body: z.string(says('must be a string')).max(MAX_CONFIG_CHARS, `must be at most ${MAX_CONFIG_CHARS} characters`).optional().describe('Request body template or payload for the provider action.'),
    },
    says('must be an object'),
  )
  .passthrough();

const fields = {
  category: z.enum(CALL_ACTION_CATEGORIES, says(`must be one of ${CALL_ACTION_CATEGORIES.join(', ')}`)).describe('When the action fires.'),
  provider: text(100).describe('Integration provider (e.g. `hubspot`, `salesforce`).'),
  action_type: z.enum(CALL_ACTION_TYPES, says(`must be one of ${CALL_ACTION_TYPES.join(', ')}`)).nullish().describe('The operation on the provider object.'),
  object: text(100).nullish().describe('Provider object type (e.g. `contact`, `deal`).'),
  config: configSchema,
};

/** `POST /call-actions`. */
export const createCallActionBody = bodyObject({
  agentId: z.string(says('must be a 24-character hex agent id')).regex(/^[0-9a-f]{24}$/, 'must be a 24-character hex agent id').describe('The agent this action belongs to.'),
  ...fields,
});

/** `PUT /call-actions/{id}`: every field optional; only those sent change. */
export const updateCallActionBody = bodyObject({
  category: fields.category.optional(),
  provider: fields.provider.optional(),
  action_type: fields.action_type,
  object: fields.object,
  config: configSchema.optional(),
});

function dto(row: CallActionsTable): Record<string, unknown> {
  return {
    _id: row.id,
    organization: row.org_id,
    agentId: row.agent_id,
    category: row.category,
    provider: row.provider,
    action_type: row.action_type,
    object: row.object,
    config: JSON.parse(row.config) as Record<string, unknown>,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function checkedConfig(category: string, config: Record<string, unknown>): string {
  if (category === 'trigger' && !config.phoneNumberFieldName) throw badRequest('config.phoneNumberFieldName: is required for trigger actions');
  const json = JSON.stringify(config);
  if (json.length > MAX_CONFIG_CHARS) throw badRequest(`config: must be at most ${MAX_CONFIG_CHARS} characters of JSON`);
  return json;
}

async function loadAction(db: Db, actor: Actor, id: string): Promise<CallActionsTable> {
  const missing = () => notFound('Call action not found');
  if (!isObjectId(id)) throw missing();
  const row = await orgDb(db).selectFrom('call_actions').selectAll().where('id', '=', id).executeTakeFirst();
  return ownRow(row, actor.orgId, missing, 'call action');
}

export async function createCallAction(db: Db, actor: Actor, body: unknown): Promise<Record<string, unknown>> {
  const input = parseBody(createCallActionBody, body);
  await loadAgent(db, actor, input.agentId);
  const config = checkedConfig(input.category, input.config);
  const now = nowIso();
  const row: CallActionsTable = {
    id: newId(),
    org_id: actor.orgId,
    agent_id: input.agentId,
    category: input.category,
    provider: input.provider,
    action_type: input.action_type ?? null,
    object: input.object ?? null,
    config,
    created_at: now,
    updated_at: now,
  };
  await orgDb(db).insertInto('call_actions').values(row).execute();
  return dto(row);
}

export async function listCallActions(db: Db, actor: Actor, query: URLSearchParams): Promise<Record<string, unknown>> {
  const agentId = query.get('agentId');
  if (!agentId) throw badRequest('agentId: is required (the agent whose call actions to list)');
  if (!isObjectId(agentId)) throw badRequest('agentId: must be a 24-character hex agent id');
  const int = (name: string, fallback: number, max: number): number => {
    const raw = query.get(name);
    if (raw === null) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) throw badRequest(`${name}: must be a whole number from 1 to ${max}`);
    return Number(raw);
  };
  const page = int('page', 1, 1_000_000);
  const limit = int('limit', DEFAULT_LIMIT, MAX_LIMIT);
  const category = query.get('category');
  if (category !== null && !(CALL_ACTION_CATEGORIES as readonly string[]).includes(category)) throw badRequest(`category: must be one of ${CALL_ACTION_CATEGORIES.join(', ')}`);
  const provider = query.get('provider');
  await loadAgent(db, actor, agentId);
  let base = orgDb(db).selectFrom('call_actions').where('org_id', '=', actor.orgId).where('agent_id', '=', agentId);
  if (category) base = base.where('category', '=', category);
  if (provider) base = base.where('provider', '=', provider);
  const total = Number((await base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const rows = await base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset((page - 1) * limit).execute();
  return { callActions: rows.map(dto), totalCount: total, page, limit };
}

export async function getCallAction(db: Db, actor: Actor, id: string): Promise<Record<string, unknown>> {
  return dto(await loadAction(db, actor, id));
}

export async function updateCallAction(db: Db, actor: Actor, id: string, body: unknown): Promise<Record<string, unknown>> {
  const input = parseBody(updateCallActionBody, body);
  const row = await loadAction(db, actor, id);
  const category = input.category ?? row.category;
  const config = input.config !== undefined ? input.config : (JSON.parse(row.config) as Record<string, unknown>);
  const next: CallActionsTable = {
    ...row,
    category,
    provider: input.provider ?? row.provider,
    action_type: input.action_type !== undefined ? input.action_type : row.action_type,
    object: input.object !== undefined ? input.object : row.object,
    config: checkedConfig(category, config),
    updated_at: nowIso(),
  };
  await orgDb(db)
    .updateTable('call_actions')
    .set({ category: next.category, provider: next.provider, action_type: next.action_type, object: next.object, config: next.config, updated_at: next.updated_at })
    .where('id', '=', row.id)
    .execute();
  return dto(next);
}

export async function deleteCallAction(db: Db, actor: Actor, id: string): Promise<Record<string, unknown>> {
  const row = await loadAction(db, actor, id);
  await orgDb(db).deleteFrom('call_actions').where('id', '=', row.id).execute();
  return { message: 'Call action deleted successfully' };
}
