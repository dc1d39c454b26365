// Per-agent webhook subscriptions (wire §5.2): list, replace all of an agent's subscriptions, remove them all.
import type { Db } from '../store/db.js';
import { isObjectId, newId, nowIso } from '../store/ids.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import { loadAgent, type Actor } from '../agents/agents.js';
import { EVENT_TYPES, isEventType, loadWebhook } from './webhooks.js';

async function agentOf(db: Db, actor: Actor, agentId: string): Promise<void> {
  try {
    await loadAgent(db, actor, agentId);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) throw notFound('Agent not found');
    throw err;
  }
}

export async function listAgentSubscriptions(db: Db, actor: Actor, agentId: string): Promise<Record<string, unknown>[]> {
  await agentOf(db, actor, agentId);
  const rows = await db.selectFrom('webhook_subscriptions').selectAll().where('agent_id', '=', agentId).orderBy('created_at').orderBy('id').execute();
  return rows.map((r) => ({ _id: r.id, webhookId: r.webhook_id, agentId: r.agent_id, eventType: r.event_type, createdAt: r.created_at, updatedAt: r.updated_at }));
}

/** `{webhookId, eventTypes}`: the agent's subscriptions become exactly these (any on other webhooks are removed). */
export async function replaceAgentSubscriptions(db: Db, actor: Actor, agentId: string, body: unknown): Promise<string> {
  await agentOf(db, actor, agentId);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  const { webhookId, eventTypes, ...rest } = body as Record<string, unknown>;
  const errors = Object.keys(rest).map((k) => `${k}: unknown field (expected webhookId, eventTypes)`);
  if (typeof webhookId !== 'string' || !isObjectId(webhookId)) errors.push('webhookId: required, a 24-hex webhook id');
  if (!Array.isArray(eventTypes) || eventTypes.length === 0) errors.push(`eventTypes: required, a non-empty array of ${EVENT_TYPES.join(', ')}`);
  else eventTypes.forEach((t: unknown, i) => isEventType(t) || errors.push(`eventTypes[${i}]: must be one of ${EVENT_TYPES.join(', ')}`));
  if (errors.length) throw badRequest(errors);
  const webhook = await loadWebhook(db, actor, webhookId as string);
  const now = nowIso();
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('webhook_subscriptions').where('agent_id', '=', agentId).execute();
    for (const eventType of new Set(eventTypes as string[])) {
      await tx.insertInto('webhook_subscriptions').values({ id: newId(), webhook_id: webhook.id, agent_id: agentId, event_type: eventType, created_at: now, updated_at: now }).execute();
    }
  });
  return 'Webhook subscriptions updated';
}

export async function removeAgentSubscriptions(db: Db, actor: Actor, agentId: string): Promise<string> {
  await agentOf(db, actor, agentId);
  await db.deleteFrom('webhook_subscriptions').where('agent_id', '=', agentId).execute();
  return 'Webhook subscriptions removed';
}
