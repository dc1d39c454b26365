// Webhook outbox: call events become PENDING delivery rows inside the caller's transaction; the delivery log reads them.
import type { Db, Tx } from '../store/db.js';
import { newId, nowIso } from '../store/ids.js';
import { badRequest } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { isEventType, loadWebhook, type EventType } from './webhooks.js';

export { WebhookDispatcher, type DispatcherOptions } from './dispatcher.js';

export type DeliveryStatus = 'PENDING' | 'SENDING' | 'DELIVERED' | 'FAILED';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['PENDING', 'SENDING', 'DELIVERED', 'FAILED'];

export interface CallEvent {
  orgId: string;
  agentId: string;
  callId: string;
  eventType: EventType;
  /** The event payload, complete (agentId, eventType, conversationType, callId and the event's own fields). */
  metadata: Record<string, unknown>;
}

/**
 * Queues one delivery for every ENABLED webhook of the organization that this agent subscribed to this event
 * type; returns how many. Runs on `q`, so inside the caller's transaction the call's change and its deliveries
 * commit (or roll back) together. The envelope `{url, description, event, metadata, id}` is serialised here once;
 * those bytes are what is sent and signed. Call the dispatcher's notify() after the transaction commits.
 */
export async function enqueueEvent(q: Db | Tx, event: CallEvent): Promise<number> {
  if (!isEventType(event.eventType)) throw new Error(`unknown webhook event type: ${String(event.eventType)}`);
  const targets = await q
    .selectFrom('webhook_subscriptions as s')
    .innerJoin('webhooks as w', 'w.id', 's.webhook_id')
    .select(['w.id', 'w.url', 'w.description', 'w.headers'])
    .where('s.agent_id', '=', event.agentId)
    .where('s.event_type', '=', event.eventType)
    .where('w.org_id', '=', event.orgId)
    .where('w.status', '=', 'enabled')
    .orderBy('w.id')
    .execute();
  const now = nowIso();
  for (const webhook of targets) {
    const id = newId();
    const body = JSON.stringify({ url: webhook.url, description: webhook.description, event: `${event.agentId}.${event.eventType}`, metadata: event.metadata, id });
    await q
      .insertInto('webhook_outbox')
      .values({
        id,
        org_id: event.orgId,
        webhook_id: webhook.id,
        agent_id: event.agentId,
        call_id: event.callId,
        event_type: event.eventType,
        url: webhook.url,
        headers: webhook.headers,
        body,
        status: 'PENDING',
        response_code: null,
        latency_ms: null,
        error: null,
        created_at: now,
        sent_at: null,
      })
      .execute();
  }
  return targets.length;
}

/** `GET /webhook/{id}/deliveries`: newest first; `?callId=`, `?status=`, `?limit=` (1-500, default 50). */
export async function listDeliveries(db: Db, actor: Actor, webhookId: string, query: URLSearchParams): Promise<{ deliveries: Record<string, unknown>[] }> {
  const webhook = await loadWebhook(db, actor, webhookId);
  const errors: string[] = [];
  const rawStatus = query.get('status');
  const status = rawStatus === null ? null : rawStatus.toUpperCase();
  if (status !== null && !DELIVERY_STATUSES.includes(status as DeliveryStatus)) errors.push(`status: must be one of ${DELIVERY_STATUSES.join(', ')}`);
  const rawLimit = query.get('limit');
  const limit = rawLimit === null ? 50 : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500 || rawLimit?.trim() === '') errors.push('limit: must be an integer from 1 to 500');
  const callId = query.get('callId');
  if (callId !== null && (callId === '' || callId.length > 100)) errors.push('callId: must be a call id');
  if (errors.length) throw badRequest(errors);

  let rows = db
    .selectFrom('webhook_outbox')
    .select(['id', 'agent_id', 'event_type', 'call_id', 'status', 'response_code', 'latency_ms', 'error', 'created_at', 'sent_at'])
    .where('webhook_id', '=', webhook.id);
  if (callId !== null) rows = rows.where('call_id', '=', callId);
  if (status !== null) rows = rows.where('status', '=', status);
  const found = await rows.orderBy('seq', 'desc').limit(limit).execute();
  return {
    deliveries: found.map((r) => ({
      id: r.id,
      event: `${r.agent_id}.${r.event_type}`,
      callId: r.call_id,
      status: r.status,
      responseCode: r.response_code,
      latencyMs: r.latency_ms,
      error: r.error,
      createdAt: r.created_at,
      sentAt: r.sent_at,
    })),
  };
}
