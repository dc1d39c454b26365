// Agents: create (with its Main branch, live), read with resolved config, list, update, widget settings, archive, delete, config freeze.
import type { Db, Tx } from '../store/db.js';
import type { AgentsTable } from '../store/schema.js';
import type { Selectable } from 'kysely';
import { newId, nowIso } from '../store/ids.js';
import { z } from 'zod';
import { ApiError, badRequest, forbidden, locked, notFound } from '../errors.js';
import { bodyObject, checkBody, parseBody, says } from '../validation.js';
import { WORKFLOW_TYPES } from './config-schema.js';
import { applyConfigPatch, defaultConfig, pickConfig, type AgentConfig, type BlockRefs } from './config.js';
import { referenceErrors } from './references.js';
import { insertBranch, loadConfig, parseJson, storeBlocks } from './records.js';
import { withTimezoneView } from './timezone.js';
import { mergeWidgetConfig, storedWidgetConfig, widgetConfigView, type WidgetConfig } from './widget-config.js';
import { intParam } from '../query.js';
import { agentPhoneNumbers } from '../telephony/sources.js';
import { readProductIds, replaceNumberAnswers } from '../telephony/product-ids.js';
import { telephonyWindow } from '../telephony/window.js';

export type AgentRow = Selectable<AgentsTable>;

export interface Actor {
  orgId: string;
  /** Display name of who acts (the API key's name). */
  name: string;
}

const META_FIELDS = ['avatarUrl', 'allowInboundCall', 'visibleToEveryone'] as const;

export async function loadAgent(q: Db | Tx, actor: Actor, agentId: string): Promise<AgentRow> {
  const row = await q.selectFrom('agents').selectAll().where('id', '=', agentId).executeTakeFirst();
  if (!row) throw notFound('No agent found');
  if (row.org_id !== actor.orgId) throw forbidden('This API key has no access to this agent');
  return row;
}

/** Loads an agent for a write: refuses with 423 while a configuration freeze is active. */
export async function loadAgentForWrite(q: Db | Tx, actor: Actor, agentId: string): Promise<AgentRow> {
  const row = await loadAgent(q, actor, agentId);
  const freeze = parseJson<{ reason: string | null }>(row.freeze);
  if (freeze) {
    throw locked(`Configuration freeze is active on this agent${freeze.reason ? ` (${freeze.reason})` : ''}; writes are blocked until it is cleared`);
  }
  return row;
}

/** The agent's own fields (configuration fields and widget settings are checked by their own schemas, after these). */
const metaShape = {
  name: z.string(says('must be a non-empty string of at most 200 characters')).regex(/\S/).max(200),
  description: z.string(says('must be a string of at most 2000 characters')).max(2000).nullable().optional(),
  avatarUrl: z.string(says('must be a string')).nullable().optional(),
  allowInboundCall: z.boolean(says('must be a boolean')).optional().describe('Removed after the telephony migration window (use answers).'),
  visibleToEveryone: z.boolean(says('must be a boolean')).optional(),
  workflowType: z.enum(WORKFLOW_TYPES, says(`must be one of ${WORKFLOW_TYPES.join(', ')}`)),
};

/** `POST /agent`: the agent's fields; `name` required, `workflowType` default `single_prompt`. */
export const createAgentMeta = bodyObject({
  ...metaShape,
  name: z.string(says('must be a non-empty string of at most 200 characters', 'required')).regex(/\S/).max(200),
  workflowType: metaShape.workflowType.nullish(),
});

/**
 * `PATCH /agent/{id}`: the agent's fields. `workflowType` only while unversioned, and the deprecated
 * `telephonyProductId` and `allowInboundCall` only in the telephony migration window (checked in code).
 */
export const updateAgentMeta = bodyObject({
  ...metaShape,
  name: metaShape.name.optional(),
  workflowType: metaShape.workflowType.optional(),
  telephonyProductId: z.unknown().describe('Deprecated: numbers answered by this agent (replace semantics).'),
});

export async function createAgent(db: Db, actor: Actor, body: unknown): Promise<string> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  // `telephonyProductId` is silently ignored on create (spec); after the telephony window so is `allowInboundCall`.
  const { telephonyProductId: _ignored, ...input } = body as Record<string, unknown>;
  if (!(await telephonyWindow(db)).open) delete input.allowInboundCall;
  const errors: string[] = checkBody(createAgentMeta, input).errors;
  const workflowType = input.workflowType ?? 'single_prompt';
  const picked = pickConfig(input);
  const { merged, errors: configErrors } = applyConfigPatch(defaultConfig(), picked);
  errors.push(...configErrors);
  if (!configErrors.length) errors.push(...(await referenceErrors(db, actor.orgId, picked)));
  const widget = input.widgetConfig === undefined ? null : mergeWidgetConfig({}, input.widgetConfig);
  errors.push(...(widget?.errors ?? []));
  if (errors.length) throw badRequest(errors);
  const meta: Record<string, unknown> = { avatarUrl: input.avatarUrl ?? null, allowInboundCall: input.allowInboundCall ?? true, visibleToEveryone: input.visibleToEveryone ?? false };
  if (widget) meta.widgetConfig = widget.merged;
  return insertAgent(db, actor, {
    name: (input.name as string).trim(),
    description: (input.description as string | undefined) ?? null,
    workflowType: workflowType as string,
    meta,
    config: merged,
  });
}

export interface NewAgent {
  name: string;
  description: string | null;
  workflowType: string;
  meta: Record<string, unknown>;
  /** The full configuration, already validated: it becomes the agent's base (unversioned) configuration. */
  config: AgentConfig;
}

/** Inserts an agent, its configuration blocks and its Main branch (live, no revision yet: calls run the base config). */
export async function insertAgent(db: Db, actor: Actor, agent: NewAgent): Promise<string> {
  const agentId = newId();
  const branchId = newId();
  const now = nowIso();
  await db.transaction().execute(async (tx) => {
    await tx
      .insertInto('agents')
      .values({
        id: agentId,
        org_id: actor.orgId,
        name: agent.name,
        description: agent.description,
        workflow_type: agent.workflowType,
        base_blocks: '{}',
        meta: JSON.stringify(agent.meta),
        default_branch_id: branchId,
        live_branch_id: branchId,
        versioned: 0,
        freeze: null,
        archived: 0,
        archived_at: null,
        created_by: actor.name,
        created_at: now,
        updated_at: now,
      })
      .execute();
    const refs = await storeBlocks(tx, agentId, agent.config);
    await tx.updateTable('agents').set({ base_blocks: JSON.stringify(refs) }).where('id', '=', agentId).execute();
    await insertBranch(tx, { id: branchId, agentId, name: 'Main', actor: actor.name });
  });
  return agentId;
}

/** Block references of what production serves: the live branch head, or the unversioned base config. */
export async function liveRefs(q: Db | Tx, agent: AgentRow): Promise<{ refs: BlockRefs; revisionId: string | null }> {
  const live = await q.selectFrom('branches').select('head_revision_id').where('id', '=', agent.live_branch_id).executeTakeFirst();
  if (live?.head_revision_id) {
    const rev = await q.selectFrom('revisions').select('blocks').where('id', '=', live.head_revision_id).executeTakeFirstOrThrow();
    return { refs: JSON.parse(rev.blocks) as BlockRefs, revisionId: live.head_revision_id };
  }
  return { refs: JSON.parse(agent.base_blocks) as BlockRefs, revisionId: null };
}

export function agentSummary(agent: AgentRow, config: AgentConfig): Record<string, unknown> {
  const meta = JSON.parse(agent.meta) as Record<string, unknown>;
  const freeze = parseJson<Record<string, unknown>>(agent.freeze);
  return {
    _id: agent.id,
    name: agent.name,
    description: agent.description,
    organization: agent.org_id,
    workflowType: agent.workflow_type,
    createdBy: agent.created_by,
    createdAt: agent.created_at,
    updatedAt: agent.updated_at,
    archived: Boolean(agent.archived),
    archivedAt: agent.archived_at,
    totalCalls: 0,
    liveBranchId: agent.live_branch_id,
    configFreeze: freeze,
    ...meta,
    ...withTimezoneView(config),
    widgetConfig: widgetConfigView(storedWidgetConfig(meta)),
  };
}

/**
 * `GET /agent/{id}`: metadata, the served configuration, `_resolvedConfig` and `phoneNumber`.
 * `?draftId=` or `?versionId=` resolves that draft or revision instead, and says so in `_configSource`.
 */
export async function readAgent(db: Db, actor: Actor, agentId: string, query?: URLSearchParams): Promise<Record<string, unknown>> {
  // Existing clients expect this route's unknown id as a 400 "No agent found" (wire doc), unlike the others' 404.
  const agent = await loadAgent(db, actor, agentId).catch((err: unknown) => {
    throw err instanceof ApiError && err.status === 404 ? badRequest('No agent found') : err;
  });
  const live = await liveRefs(db, agent);
  const draftId = query?.get('draftId');
  const versionId = query?.get('versionId');
  if (draftId && versionId) throw badRequest('Give draftId or versionId, not both');
  let refs = live.refs;
  let source: 'draft' | 'version' | null = null;
  if (draftId || versionId) {
    const row = await db.selectFrom('revisions').select(['blocks', 'status', 'listed_at', 'agent_id']).where('id', '=', (draftId ?? versionId) as string).executeTakeFirst();
    const isOpenDraft = row?.status === 'draft' && row.listed_at === null;
    if (!row || row.agent_id !== agent.id || (draftId ? !isOpenDraft : isOpenDraft)) throw notFound(draftId ? 'Draft not found' : 'Version not found');
    refs = JSON.parse(row.blocks) as BlockRefs;
    source = draftId ? 'draft' : 'version';
  }
  const config = await loadConfig(db, refs);
  return {
    ...(await withoutRemovedFields(db, agentSummary(agent, config))),
    activeVersionId: live.revisionId,
    versionId: live.revisionId,
    phoneNumber: await agentPhoneNumbers(db, agent.id),
    _resolvedConfig: resolvedConfig(config),
    ...(source ? { _configSource: source } : {}),
  };
}

/** After the telephony migration window, agent reads no longer carry the deprecated `allowInboundCall`. */
async function withoutRemovedFields(db: Db, summary: Record<string, unknown>): Promise<Record<string, unknown>> {
  if ((await telephonyWindow(db)).open) return summary;
  const { allowInboundCall: _removed, ...rest } = summary;
  return rest;
}

/** The wire's flat `_resolvedConfig` (the fields the runtime reads). */
export function resolvedConfig(config: AgentConfig): Record<string, unknown> {
  const language = (config.language ?? {}) as Record<string, unknown>;
  return {
    ...withTimezoneView(config),
    modelName: config.slmModel ?? null,
    defaultLanguage: language.default ?? null,
    supportedLanguages: language.supported ?? [],
    languageSwitching: language.switching ?? null,
    workflowGraph: config.workflowGraph ?? null,
  };
}

const SORT_FIELDS = { createdAt: 'created_at', updatedAt: 'updated_at', name: 'name', workflowType: 'workflow_type', totalCalls: 'created_at' } as const;

export async function listAgents(db: Db, actor: Actor, query: URLSearchParams): Promise<{ agents: Record<string, unknown>[]; total: number }> {
  const page = intParam(query, 'page', 1, 1, 1_000_000);
  const size = intParam(query, 'offset', 10, 1, 100);
  const sortField = query.get('sortField') ?? 'createdAt';
  const column = Object.hasOwn(SORT_FIELDS, sortField) ? SORT_FIELDS[sortField as keyof typeof SORT_FIELDS] : undefined;
  if (!column) throw badRequest(`sortField: must be one of ${Object.keys(SORT_FIELDS).join(', ')}`);
  const sortOrder = query.get('sortOrder') ?? 'desc';
  if (sortOrder !== 'asc' && sortOrder !== 'desc') throw badRequest('sortOrder: must be asc or desc');
  const type = query.get('type');
  if (type !== null && !WORKFLOW_TYPES.includes(type as never)) throw badRequest(`type: must be one of ${WORKFLOW_TYPES.join(', ')}`);
  const archived = query.get('archived') === 'true' ? 1 : 0;
  const search = query.get('search');

  let base = db.selectFrom('agents').where('org_id', '=', actor.orgId).where('archived', '=', archived);
  if (type) base = base.where('workflow_type', '=', type);
  // Case-insensitive on both stores (LIKE is case-sensitive on PostgreSQL, not on SQLite).
  if (search) base = base.where((eb) => eb(eb.fn('lower', ['name']), 'like', `%${search.replace(/[%_\\]/g, '').toLowerCase()}%`));
  const total = Number((await base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const rows = await base.selectAll().orderBy(column, sortOrder).orderBy('id', sortOrder).limit(size).offset((page - 1) * size).execute();
  const agents = [];
  for (const row of rows) agents.push(await withoutRemovedFields(db, agentSummary(row, await loadConfig(db, (await liveRefs(db, row)).refs))));
  return { agents, total };
}

/**
 * `PATCH /agent/{id}`. During the telephony window the deprecated `telephonyProductId` (the agent's number answer
 * sources, replace semantics) and `allowInboundCall` apply, and `deprecation` tells the route to say so; after it
 * both are refused (400) as removed.
 */
export async function updateAgent(db: Db, actor: Actor, agentId: string, body: unknown): Promise<{ deprecation: boolean }> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  const input = body as Record<string, unknown>;
  const agent = await loadAgentForWrite(db, actor, agentId);
  const configPatch = pickConfig(input);
  if (Object.keys(configPatch).length && agent.versioned) {
    throw badRequest('Agent has versioning enabled. Config changes must be made through drafts.');
  }
  const errors: string[] = checkBody(updateAgentMeta, input).errors;
  const telephonyOpen = (await telephonyWindow(db)).open;
  let productIds: string[] | undefined;
  for (const field of ['telephonyProductId', 'allowInboundCall'] as const) {
    if (input[field] !== undefined && !telephonyOpen) {
      errors.push(`${field}: removed after the telephony migration window; use POST /agent/{agentId}/answers and DELETE /agent/{agentId}/answers/{sourceId}`);
    }
  }
  if (telephonyOpen && input.telephonyProductId !== undefined) productIds = await readProductIds(db, actor.orgId, input.telephonyProductId, errors);
  const current = await loadConfig(db, JSON.parse(agent.base_blocks) as BlockRefs);
  const { merged, errors: configErrors } = applyConfigPatch(current, configPatch);
  errors.push(...configErrors);
  if (!configErrors.length) errors.push(...(await referenceErrors(db, actor.orgId, Object.fromEntries(Object.keys(configPatch).map((k) => [k, merged[k]])))));
  if (input.workflowType !== undefined && agent.versioned) {
    const i = errors.findIndex((e) => e.startsWith('workflowType: '));
    errors.splice(i < 0 ? errors.length : i, i < 0 ? 0 : 1, 'workflowType: change it through a draft once the agent is versioned');
  }
  const meta = JSON.parse(agent.meta) as Record<string, unknown>;
  if (input.widgetConfig !== undefined) {
    const widget = mergeWidgetConfig(storedWidgetConfig(meta), input.widgetConfig);
    errors.push(...widget.errors);
    meta.widgetConfig = widget.merged;
  }
  if (errors.length) throw badRequest(errors);
  for (const f of META_FIELDS) if (input[f] !== undefined) meta[f] = input[f];
  await db.transaction().execute(async (tx) => {
    const refs = Object.keys(configPatch).length ? JSON.stringify(await storeBlocks(tx, agentId, merged)) : agent.base_blocks;
    await tx
      .updateTable('agents')
      .set({
        name: typeof input.name === 'string' ? input.name.trim() : agent.name,
        description: input.description !== undefined ? (input.description as string | null) : agent.description,
        workflow_type: (input.workflowType as string | undefined) ?? agent.workflow_type,
        meta: JSON.stringify(meta),
        base_blocks: refs,
        updated_at: nowIso(),
      })
      .where('id', '=', agentId)
      .execute();
    if (productIds) await replaceNumberAnswers(tx, actor.orgId, agentId, productIds);
  });
  return { deprecation: telephonyOpen && (input.telephonyProductId !== undefined || input.allowInboundCall !== undefined) };
}

export async function getWidgetConfig(db: Db, actor: Actor, agentId: string): Promise<WidgetConfig> {
  const agent = await loadAgent(db, actor, agentId);
  return widgetConfigView(storedWidgetConfig(JSON.parse(agent.meta) as Record<string, unknown>));
}

/**
 * `PATCH /agent/{id}/widget-config` with `{widgetConfig: {...}}`: metadata, so allowed on a versioned agent;
 * refused (423) during a configuration freeze like every other write to the agent. Answers the widget as it now reads.
 */
export async function patchWidgetConfig(db: Db, actor: Actor, agentId: string, body: unknown): Promise<WidgetConfig> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  const patch = (body as Record<string, unknown>).widgetConfig;
  if (patch === undefined) throw badRequest('widgetConfig: required, an object of widget settings');
  const agent = await loadAgentForWrite(db, actor, agentId);
  const meta = JSON.parse(agent.meta) as Record<string, unknown>;
  const { merged, errors } = mergeWidgetConfig(storedWidgetConfig(meta), patch);
  if (errors.length) throw badRequest(errors);
  await db.updateTable('agents').set({ meta: JSON.stringify({ ...meta, widgetConfig: merged }), updated_at: nowIso() }).where('id', '=', agentId).execute();
  return widgetConfigView(merged);
}

export async function deleteAgent(db: Db, actor: Actor, agentId: string): Promise<void> {
  await loadAgentForWrite(db, actor, agentId);
  await db.transaction().execute(async (tx) => {
    const drafts = tx.selectFrom('revisions').select('id').where('agent_id', '=', agentId);
    await tx.deleteFrom('draft_edits').where('draft_id', 'in', drafts).execute();
    await tx.deleteFrom('revisions').where('agent_id', '=', agentId).execute();
    await tx.deleteFrom('branches').where('agent_id', '=', agentId).execute();
    await tx.deleteFrom('blocks').where('agent_id', '=', agentId).execute();
    await tx.deleteFrom('agents').where('id', '=', agentId).execute();
  });
}

export async function setArchived(db: Db, actor: Actor, agentId: string, on: boolean): Promise<string> {
  const agent = await loadAgentForWrite(db, actor, agentId);
  if (Boolean(agent.archived) === on) throw new ApiError(409, on ? 'Agent is already archived' : 'Agent is not archived', { errorType: 'already_in_state' });
  await db.updateTable('agents').set({ archived: on ? 1 : 0, archived_at: on ? nowIso() : null, updated_at: nowIso() }).where('id', '=', agentId).execute();
  return on ? 'Agent archived' : 'Agent unarchived';
}

/** `POST /agent/{id}/config-freeze`: an optional reason (a body that is not an object is read as none). */
export const freezeBody = bodyObject({ reason: z.string(says('must be a string of at most 500 characters')).max(500).nullish() });

export async function setFreeze(db: Db, actor: Actor, agentId: string, body: unknown): Promise<Record<string, unknown>> {
  await loadAgent(db, actor, agentId);
  const { reason } = typeof body === 'object' && body !== null && !Array.isArray(body) ? parseBody(freezeBody, body) : { reason: null };
  const freeze = { active: true, reason: reason ?? null, setBy: actor.name, setAt: nowIso() };
  await db.updateTable('agents').set({ freeze: JSON.stringify(freeze) }).where('id', '=', agentId).execute();
  return freeze;
}

export async function clearFreeze(db: Db, actor: Actor, agentId: string): Promise<void> {
  await loadAgent(db, actor, agentId);
  await db.updateTable('agents').set({ freeze: null }).where('id', '=', agentId).execute();
}

