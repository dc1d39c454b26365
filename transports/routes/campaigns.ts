// Campaign routes (wire §5, agent-platform §7): create, list, read (events, metrics), delete, start (also resumes), pause.
import type { HttpServer } from '../http/server.js';
import { ok } from '../http/types.js';
import { createCampaign, deleteCampaign, getCampaign, listCampaigns, pauseCampaign, startCampaign } from '../../control-plane/campaigns/campaigns.js';
import { DEPRECATION } from '../../control-plane/telephony/window.js';
import { actorOf, type RouteContext } from './context.js';

export interface CampaignRouteDeps {
  /** Wakes this server's campaign runner. */
  wake(): void;
}

export function campaignRoutes(server: HttpServer, prefix: string, ctx: RouteContext, deps: CampaignRouteDeps): void {
  const auth = { auth: 'key' as const };
  const c = `${prefix}/campaign`;
  const campaignDeps = { db: ctx.db, carrier: ctx.settings.carrier, wake: () => deps.wake() };

  server.route('POST', c, async (req) => {
    const created = await createCampaign(campaignDeps, actorOf(req), req.json());
    return ok(created.doc, 201, created.deprecated ? DEPRECATION : undefined);
  }, auth);
  server.route('GET', c, async (req) => ok(await listCampaigns(ctx.db, actorOf(req), req.query)), auth);
  server.route('GET', `${c}/:id`, async (req) => ok(await getCampaign(ctx.db, actorOf(req), req.params.id as string)), auth);
  server.route('DELETE', `${c}/:id`, async (req) => {
    await deleteCampaign(ctx.db, actorOf(req), req.params.id as string);
    return { status: 200, body: { status: true } };
  }, auth);
  server.route('POST', `${c}/:id/start`, async (req) => ok(await startCampaign(campaignDeps, actorOf(req), req.params.id as string), 202), auth);
  server.route('POST', `${c}/:id/pause`, async (req) => {
    await pauseCampaign(ctx.db, actorOf(req), req.params.id as string);
    return { status: 200, body: { status: true } };
  }, auth);
}
