// Campaign routes (wire §5, agent-platform §7): create, list, read (events, metrics), delete, start (also resumes), pause.
import type { HttpServer } from '../http/server.js';
import { docs, ok } from '../http/types.js';
import { campaignBody, createCampaign, deleteCampaign, getCampaign, listCampaigns, pauseCampaign, startCampaign } from '../../control-plane/campaigns/campaigns.js';
import { DEPRECATION } from '../../control-plane/telephony/window.js';
import { actorOf, type RouteContext } from './context.js';

export interface CampaignRouteDeps {
  /** Wakes this server's campaign runner. */
  wake(): void;
}

export function campaignRoutes(server: HttpServer, prefix: string, ctx: RouteContext, deps: CampaignRouteDeps): void {
  const auth = { auth: 'key' as const };
  const d = docs('Campaigns');
  const c = `${prefix}/campaign`;
  const campaignDeps = { db: ctx.db, carrier: ctx.settings.carrier, wake: () => deps.wake() };

  server.route('POST', c, async (req) => {
    const created = await createCampaign(campaignDeps, actorOf(req), req.json());
    return ok(created.doc, 201, created.deprecated ? DEPRECATION : undefined);
  }, { ...auth, doc: d('Create a campaign', { body: { schema: campaignBody }, response: { status: 201 } }) });
  server.route('GET', c, async (req) => ok(await listCampaigns(ctx.db, actorOf(req), req.query)), { ...auth, doc: d('List campaigns', { query: [{ name: 'status' }, { name: 'search' }, { name: 'sortField' }, { name: 'sortOrder', schema: { type: 'string', enum: ['asc', 'desc'] } }] }) });
  server.route('GET', `${c}/:id`, async (req) => ok(await getCampaign(ctx.db, actorOf(req), req.params.id as string)), { ...auth, doc: d('Read a campaign (events, metrics)') });
  server.route('DELETE', `${c}/:id`, async (req) => {
    await deleteCampaign(ctx.db, actorOf(req), req.params.id as string);
    return { status: 200, body: { status: true } };
  }, { ...auth, doc: d('Delete a campaign', { response: { description: '`{status: true}`.', schema: { type: 'object', properties: { status: { const: true } } } } }) });
  server.route('POST', `${c}/:id/start`, async (req) => ok(await startCampaign(campaignDeps, actorOf(req), req.params.id as string), 202), { ...auth, doc: d('Start or resume a campaign', { response: { status: 202 } }) });
  server.route('POST', `${c}/:id/pause`, async (req) => {
    await pauseCampaign(ctx.db, actorOf(req), req.params.id as string);
    return { status: 200, body: { status: true } };
  }, { ...auth, doc: d('Pause a campaign', { response: { description: '`{status: true}`.', schema: { type: 'object', properties: { status: { const: true } } } } }) });
}
