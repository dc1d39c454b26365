// Webhook endpoints of an organization: create (with optional subscriptions), read with the signing secret, update,
// enable/disable, delete (refused while agents are subscribed).
import { headerMapSchema, validateHeaderMap } from '../headers.js';
import type { Selectable } from 'kysely';
import { isUniqueViolation, type Db, type Tx } from '../store/db.js';
import type { WebhooksTable } from '../store/schema.js';
import { isObjectId, newId, nowIso } from '../store/ids.js';
import { z } from 'zod';
import { badRequest, notFound, ownRow } from '../errors.js';
import { checkField, says } from '../validation.js';
import type { Actor } from '../agents/agents.js';
import { EgressError, checkEgressStatic } from '../../engine/net/egress.js';
import { SecretBox } from '../secrets/secret-box.js';

export const EVENT_TYPES = ['pre-conversation', 'post-conversation', 'analytics-completed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const isEventType = (value: unknown): value is EventType => EVENT_TYPES.includes(value as EventType);

export type WebhookRow = Selectable<WebhooksTable>;

export interface WebhookDeps {
  db: Db;
  secrets: SecretBox;
  /** The server's egress policy, applied to endpoints when they are set (literal addresses and known names). */
  allowPrivateEgress: boolean;
}

const MAX_URL = 2048;
const MAX_DESCRIPTION = 1000;
const MAX_HEADERS = 10;
const MAX_HEADER_VALUE = 1024;
const MAX_EVENTS = 300;
/** RFC 7230 `token`. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const RESERVED_HEADERS = new Set(['x-signature', 'host', 'content-length', 'content-type', 'connection', 'transfer-encoding']);
const CREATE_FIELDS = new Set(['endpoint', 'description', 'events', 'headers']);
const PATCH_FIELDS = ['endpoint', 'description', 'headers'] as const;

export const webhookNotFound = () => notFound('Webhook not found');

function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  return body as Record<string, unknown>;
}

const EVENT_TYPES_TEXT = EVENT_TYPES.join(', ');

/** Webhook fields. Checked in code after these: the endpoint's URL form, scheme, credentials and egress policy; that event agents exist. */
const webhookShape = {
  endpoint: z.string(says('required, an http(s) URL')).regex(/\S/).max(MAX_URL, `at most ${MAX_URL} characters`).describe('An http(s) URL (the egress policy applies).'),
  description: z.string(says(`must be a string of at most ${MAX_DESCRIPTION} characters`)).max(MAX_DESCRIPTION).nullish(),
  headers: headerMapSchema({
    token: TOKEN,
    reserved: RESERVED_HEADERS,
    maxHeaders: MAX_HEADERS,
    maxValue: MAX_HEADER_VALUE,
    notObject: 'must be an object of header names to string values',
    badName: 'not a valid header name (RFC 7230 token characters only)',
    reservedName: `reserved, set by the platform (${[...RESERVED_HEADERS].join(', ')})`,
  }).optional(),
  events: z
    .array(
      z.object(
        {
          agentId: z.string(says('required, a 24-hex agent id')).regex(/^[a-f\d]{24}$/),
          eventType: z.enum(EVENT_TYPES, says(`must be one of ${EVENT_TYPES_TEXT}`)),
        },
        says('must be an object {agentId, eventType}'),
      ),
      says('must be an array of {agentId, eventType}'),
    )
    .max(MAX_EVENTS, `at most ${MAX_EVENTS} items`)
    .optional(),
};

/** `POST /webhook`: unknown fields are refused. */
export const createWebhookBody = z.object(webhookShape).strict();

/** `PATCH /webhook/{id}`: endpoint, description, headers (at least one; anything else refused, naming where it is changed). */
export const updateWebhookBody = z.object({ endpoint: webhookShape.endpoint.optional(), description: webhookShape.description, headers: webhookShape.headers }).strict();

/** Normalised endpoint URL (its type and length already checked), or an error naming the field. */
function endpointUrl(value: string, allowPrivate: boolean, errors: string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    errors.push('endpoint: not a valid URL');
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    errors.push('endpoint: must be an http or https URL');
    return undefined;
  }
  if (url.username || url.password) {
    errors.push('endpoint: must not embed credentials (send them as a custom header instead)');
    return undefined;
  }
  try {
    checkEgressStatic(url, { allowPrivate });
  } catch (err) {
    if (!(err instanceof EgressError)) throw err;
    errors.push(`endpoint: ${err.message}`);
    return undefined;
  }
  return url.href;
}

function validateEndpoint(value: unknown, allowPrivate: boolean, errors: string[]): string | undefined {
  const checked = checkField(webhookShape, 'endpoint', value, errors);
  return checked.ok ? endpointUrl(checked.data as string, allowPrivate, errors) : undefined;
}

/** Custom delivery headers: ≤10, RFC 7230 token names (case-insensitively unique), values ≤1024 without CR/LF/NUL. */
export function validateHeaders(value: unknown, errors: string[]): Record<string, string> | undefined {
  return validateHeaderMap(value, errors, webhookShape.headers.unwrap());
}

const duplicateEndpoint = () => badRequest('endpoint: a webhook with this URL already exists in your organization');

async function endpointTaken(q: Db | Tx, orgId: string, url: string, exceptId?: string): Promise<boolean> {
  let query = q.selectFrom('webhooks').select('id').where('org_id', '=', orgId).where('url', '=', url);
  if (exceptId) query = query.where('id', '!=', exceptId);
  return (await query.executeTakeFirst()) !== undefined;
}

/** Loads a webhook of the actor's organization: 404 for unknown and malformed ids, 403 for another organization's. */
export async function loadWebhook(q: Db | Tx, actor: Actor, webhookId: string): Promise<WebhookRow> {
  if (!isObjectId(webhookId)) throw webhookNotFound();
  return ownRow(await q.selectFrom('webhooks').selectAll().where('id', '=', webhookId).executeTakeFirst(), actor.orgId, webhookNotFound, 'webhook');
}

export async function createWebhook(deps: WebhookDeps, actor: Actor, body: unknown): Promise<string> {
  const input = objectBody(body);
  const errors: string[] = [];
  for (const key of Object.keys(input)) if (!CREATE_FIELDS.has(key)) errors.push(`${key}: unknown field (expected endpoint, description, events, headers)`);
  const url = validateEndpoint(input.endpoint, deps.allowPrivateEgress, errors);
  const description = checkField(webhookShape, 'description', input.description, errors).data ?? '';
  const headers = input.headers === undefined ? {} : validateHeaders(input.headers, errors);
  const events = checkField(webhookShape, 'events', input.events, errors).data ?? [];
  if (errors.length) throw badRequest(errors);

  const agentIds = [...new Set(events.map((e) => e.agentId))];
  if (agentIds.length) {
    const found = new Set((await deps.db.selectFrom('agents').select('id').where('id', 'in', agentIds).where('org_id', '=', actor.orgId).execute()).map((a) => a.id));
    const missing = events.map((e, i) => (found.has(e.agentId) ? null : `events[${i}].agentId: no agent with this id in your organization`)).filter((m): m is string => m !== null);
    if (missing.length) throw badRequest(missing);
  }
  if (await endpointTaken(deps.db, actor.orgId, url as string)) throw duplicateEndpoint();

  const id = newId();
  const now = nowIso();
  try {
    await deps.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('webhooks')
        .values({
          id,
          org_id: actor.orgId,
          url: url as string,
          description: description as string,
          headers: JSON.stringify(headers),
          secret: deps.secrets.seal(id, SecretBox.generate()),
          status: 'enabled',
          created_by: actor.name,
          created_at: now,
          updated_at: now,
        })
        .execute();
      const unique = new Map(events.map((e) => [`${e.agentId}.${e.eventType}`, e]));
      for (const e of unique.values()) {
        await tx.insertInto('webhook_subscriptions').values({ id: newId(), webhook_id: id, agent_id: e.agentId, event_type: e.eventType, created_at: now, updated_at: now }).execute();
      }
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicateEndpoint();
    throw err;
  }
  return id;
}

type AgentBrief = { _id: string; name: string; description: string | null } | null;

async function subscriptionsOf(db: Db, webhookIds: string[]): Promise<Map<string, Record<string, unknown>[]>> {
  const out = new Map<string, Record<string, unknown>[]>();
  if (!webhookIds.length) return out;
  const rows = await db
    .selectFrom('webhook_subscriptions as s')
    .leftJoin('agents as a', 'a.id', 's.agent_id')
    .select(['s.id', 's.webhook_id', 's.agent_id', 's.event_type', 's.created_at', 's.updated_at', 'a.name as agent_name', 'a.description as agent_description'])
    .where('s.webhook_id', 'in', webhookIds)
    .orderBy('s.created_at')
    .orderBy('s.id')
    .execute();
  for (const r of rows) {
    const agent: AgentBrief = r.agent_name === null ? null : { _id: r.agent_id, name: r.agent_name, description: r.agent_description };
    const list = out.get(r.webhook_id) ?? [];
    list.push({ _id: r.id, webhookId: r.webhook_id, agentId: agent, eventType: r.event_type, createdAt: r.created_at, updatedAt: r.updated_at });
    out.set(r.webhook_id, list);
  }
  return out;
}

function webhookDto(deps: WebhookDeps, row: WebhookRow, subscriptions: Record<string, unknown>[]): Record<string, unknown> {
  return {
    _id: row.id,
    url: row.url,
    description: row.description,
    status: row.status,
    organizationId: row.org_id,
    createdBy: row.created_by,
    headers: JSON.parse(row.headers) as Record<string, string>,
    subscriptions,
    decryptedSecretKey: deps.secrets.open(row.id, row.secret),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function getWebhook(deps: WebhookDeps, actor: Actor, webhookId: string): Promise<Record<string, unknown>> {
  const row = await loadWebhook(deps.db, actor, webhookId);
  const subs = await subscriptionsOf(deps.db, [row.id]);
  return webhookDto(deps, row, subs.get(row.id) ?? []);
}

/** Every webhook of the organization, newest first. */
export async function listWebhooks(deps: WebhookDeps, actor: Actor): Promise<Record<string, unknown>[]> {
  const rows = await deps.db.selectFrom('webhooks').selectAll().where('org_id', '=', actor.orgId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  const subs = await subscriptionsOf(deps.db, rows.map((r) => r.id));
  return rows.map((r) => webhookDto(deps, r, subs.get(r.id) ?? []));
}

/** PATCH: only `endpoint`, `description` and `headers` (non-empty object replaces, `{}` clears, omitted keeps). */
export async function updateWebhook(deps: WebhookDeps, actor: Actor, webhookId: string, body: unknown): Promise<string> {
  const input = objectBody(body);
  const row = await loadWebhook(deps.db, actor, webhookId);
  const errors: string[] = [];
  for (const key of Object.keys(input)) {
    if ((PATCH_FIELDS as readonly string[]).includes(key)) continue;
    if (key === 'events' || key === 'subscriptions') errors.push(`${key}: subscriptions cannot be changed here; use POST /agent/{agentId}/webhook-subscriptions`);
    else if (key === 'status') errors.push('status: cannot be changed here; use POST /webhook/{id}/enable or /webhook/{id}/disable');
    else errors.push(`${key}: cannot be updated (only endpoint, description, headers)`);
  }
  if (!PATCH_FIELDS.some((f) => input[f] !== undefined)) errors.push('Request body must contain at least one of endpoint, description, headers');
  const url = input.endpoint === undefined ? row.url : validateEndpoint(input.endpoint, deps.allowPrivateEgress, errors);
  const description = input.description === undefined ? row.description : checkField(webhookShape, 'description', input.description, errors).data ?? '';
  const headers = input.headers === undefined ? undefined : validateHeaders(input.headers, errors);
  if (errors.length) throw badRequest(errors);
  if (url !== row.url && (await endpointTaken(deps.db, actor.orgId, url as string, row.id))) throw duplicateEndpoint();
  try {
    await deps.db
      .updateTable('webhooks')
      .set({ url: url as string, description: description as string, headers: headers === undefined ? row.headers : JSON.stringify(headers), updated_at: nowIso() })
      .where('id', '=', row.id)
      .execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicateEndpoint();
    throw err;
  }
  return row.id;
}

export async function setWebhookStatus(deps: WebhookDeps, actor: Actor, webhookId: string, status: 'enabled' | 'disabled'): Promise<{ _id: string; status: string }> {
  const row = await loadWebhook(deps.db, actor, webhookId);
  if (row.status !== status) await deps.db.updateTable('webhooks').set({ status, updated_at: nowIso() }).where('id', '=', row.id).execute();
  return { _id: row.id, status };
}

export const ASSIGNED_MESSAGE = 'Webhook cannot be deleted while it is assigned to agents. Remove the assignments first.';

/** Deletes a webhook and its delivery log; refused (400) while any agent is subscribed to it. */
export async function deleteWebhook(deps: WebhookDeps, actor: Actor, webhookId: string): Promise<string> {
  const row = await loadWebhook(deps.db, actor, webhookId);
  try {
    await deps.db.transaction().execute(async (tx) => {
      const assigned = await tx.selectFrom('webhook_subscriptions').select('id').where('webhook_id', '=', row.id).executeTakeFirst();
      if (assigned) throw badRequest(ASSIGNED_MESSAGE);
      await tx.deleteFrom('webhook_outbox').where('webhook_id', '=', row.id).execute();
      await tx.deleteFrom('webhooks').where('id', '=', row.id).execute();
    });
  } catch (err) {
    // A subscription added concurrently: the foreign key refuses the delete.
    const code = (err as { code?: unknown } | null)?.code;
    if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503') throw badRequest(ASSIGNED_MESSAGE);
    throw err;
  }
  return 'Webhook deleted successfully';
}
