// Webhook routes: CRUD (wire §5.1), enable/disable and the delivery log (ours), per-agent subscriptions (wire §5.2).
import type { HttpServer } from '../http/server.js';
import { ok } from '../http/types.js';
import { createWebhook, deleteWebhook, getWebhook, listWebhooks, setWebhookStatus, updateWebhook, type WebhookDeps } from '../../control-plane/webhooks/webhooks.js';
import { listAgentSubscriptions, removeAgentSubscriptions, replaceAgentSubscriptions } from '../../control-plane/webhooks/subscriptions.js';
import { listDeliveries } from '../../control-plane/webhooks/outbox.js';
import { actorOf, type RouteContext } from './context.js';

export function webhookRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const deps: WebhookDeps = { db: ctx.db, secrets: ctx.webhookSecrets, allowPrivateEgress: ctx.settings.allowPrivateEgress };
  const w = `${prefix}/webhook`;
  const id = (params: Record<string, string>) => params.id as string;

  server.route('POST', w, async (req) => ok(await createWebhook(deps, actorOf(req), req.json()), 201), auth);
  server.route('GET', w, async (req) => {
    const one = req.query.get('webhookId');
    return ok(one === null ? await listWebhooks(deps, actorOf(req)) : await getWebhook(deps, actorOf(req), one));
  }, auth);
  server.route('PATCH', `${w}/:id`, async (req) => ok(await updateWebhook(deps, actorOf(req), id(req.params), req.json())), auth);
  server.route('DELETE', `${w}/:id`, async (req) => ok(await deleteWebhook(deps, actorOf(req), id(req.params))), auth);
  server.route('POST', `${w}/:id/enable`, async (req) => ok(await setWebhookStatus(deps, actorOf(req), id(req.params), 'enabled')), auth);
  server.route('POST', `${w}/:id/disable`, async (req) => ok(await setWebhookStatus(deps, actorOf(req), id(req.params), 'disabled')), auth);
  server.route('GET', `${w}/:id/deliveries`, async (req) => ok(await listDeliveries(ctx.db, actorOf(req), id(req.params), req.query)), auth);

  const s = `${prefix}/agent/:agentId/webhook-subscriptions`;
  const agent = (params: Record<string, string>) => params.agentId as string;
  server.route('GET', s, async (req) => ok(await listAgentSubscriptions(ctx.db, actorOf(req), agent(req.params))), auth);
  server.route('POST', s, async (req) => ok(await replaceAgentSubscriptions(ctx.db, actorOf(req), agent(req.params), req.json()), 201), auth);
  server.route('DELETE', s, async (req) => ok(await removeAgentSubscriptions(ctx.db, actorOf(req), agent(req.params))), auth);
}
