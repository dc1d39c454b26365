// Webhook routes: CRUD (wire §5.1), enable/disable and the delivery log (ours), per-agent subscriptions (wire §5.2).
import type { HttpServer } from '../http/server.js';
import { docs, ok } from '../http/types.js';
import { createWebhook, createWebhookBody, deleteWebhook, getWebhook, listWebhooks, setWebhookStatus, updateWebhook, updateWebhookBody, type WebhookDeps } from '../../control-plane/webhooks/webhooks.js';
import { listAgentSubscriptions, removeAgentSubscriptions, replaceAgentSubscriptions, subscriptionsBody } from '../../control-plane/webhooks/subscriptions.js';
import { listDeliveries } from '../../control-plane/webhooks/outbox.js';
import { actorOf, type RouteContext } from './context.js';

export function webhookRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const deps: WebhookDeps = { db: ctx.db, secrets: ctx.secretBox, allowPrivateEgress: ctx.settings.allowPrivateEgress };
  const w = `${prefix}/webhook`;
  const d = docs('Webhooks');
  const id = (params: Record<string, string>) => params.id as string;

  server.route('POST', w, async (req) => ok(await createWebhook(deps, actorOf(req), req.json()), 201), { ...auth, doc: d('Create a webhook (its signing secret is shown once)', { body: { schema: createWebhookBody }, response: { status: 201 } }) });
  server.route('GET', w, async (req) => {
    const one = req.query.get('webhookId');
    return ok(one === null ? await listWebhooks(deps, actorOf(req)) : await getWebhook(deps, actorOf(req), one));
  }, { ...auth, doc: d('List webhooks, or read one', { query: [{ name: 'webhookId', description: 'Read this webhook only.' }] }) });
  server.route('PATCH', `${w}/:id`, async (req) => ok(await updateWebhook(deps, actorOf(req), id(req.params), req.json())), { ...auth, doc: d('Change a webhook', { body: { schema: updateWebhookBody } }) });
  server.route('DELETE', `${w}/:id`, async (req) => ok(await deleteWebhook(deps, actorOf(req), id(req.params))), { ...auth, doc: d('Delete a webhook') });
  server.route('POST', `${w}/:id/enable`, async (req) => ok(await setWebhookStatus(deps, actorOf(req), id(req.params), 'enabled')), { ...auth, doc: d('Enable a webhook') });
  server.route('POST', `${w}/:id/disable`, async (req) => ok(await setWebhookStatus(deps, actorOf(req), id(req.params), 'disabled')), { ...auth, doc: d('Disable a webhook') });
  server.route('GET', `${w}/:id/deliveries`, async (req) => ok(await listDeliveries(ctx.db, actorOf(req), id(req.params), req.query)), { ...auth, doc: d("A webhook's delivery log", { query: [{ name: 'status' }, { name: 'callId' }, { name: 'limit', schema: { type: 'integer' } }] }) });

  const s = `${prefix}/agent/:agentId/webhook-subscriptions`;
  const agent = (params: Record<string, string>) => params.agentId as string;
  server.route('GET', s, async (req) => ok(await listAgentSubscriptions(ctx.db, actorOf(req), agent(req.params))), { ...auth, doc: d("An agent's webhook subscriptions") });
  server.route('POST', s, async (req) => ok(await replaceAgentSubscriptions(ctx.db, actorOf(req), agent(req.params), req.json()), 201), { ...auth, doc: d("Replace an agent's webhook subscriptions", { body: { schema: subscriptionsBody }, response: { status: 201 } }) });
  server.route('DELETE', s, async (req) => ok(await removeAgentSubscriptions(ctx.db, actorOf(req), agent(req.params))), { ...auth, doc: d("Remove an agent's webhook subscriptions") });
}
