// Per-agent webhook subscriptions (wire §5.2): list, replace all of an agent's subscriptions, remove them all.
import type { Db } from '../store/db.js';
import { newId, nowIso } from '../store/ids.js';
import { z } from 'zod';
import { ApiError, notFound } from '../errors.js';
import { parseBody, says, strictBody } from '../validation.js';
import { loadAgent, type Actor } from '../agents/agents.js';
import { EVENT_TYPES, loadWebhook } from './webhooks.js';

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

/** `POST /agent/{agentId}/webhook-subscriptions`: unknown fields are refused. */
export const subscriptionsBody = strictBody({
  webhookId: z.string(says('required, a 24-hex webhook id')).regex(/^[a-f\d]{24}$/),
  eventTypes: z.array(z.enum(EVENT_TYPES, says(`must be one of ${EVENT_TYPES.join(', ')}`)), says(`required, a non-empty array of ${EVENT_TYPES.join(', ')}`)).min(1),
});

/** `{webhookId, eventTypes}`: the agent's subscriptions become exactly these (any on other webhooks are removed). */
export async function replaceAgentSubscriptions(db: Db, actor: Actor, agentId: string, body: unknown): Promise<string> {
  await agentOf(db, actor, agentId);
  const { webhookId, eventTypes } = parseBody(subscriptionsBody, body);
  const webhook = await loadWebhook(db, actor, webhookId);
  const now = nowIso();
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('webhook_subscriptions').where('agent_id', '=', agentId).execute();
    for (const eventType of new Set(eventTypes)) {
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
