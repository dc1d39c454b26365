// Agent routes under {atoms}/agent: CRUD, templates, duplicate, widget settings, archive and configuration freeze.
import type { HttpServer } from '../http/server.js';
import { ok } from '../http/types.js';
import {
  clearFreeze,
  createAgent,
  deleteAgent,
  getWidgetConfig,
  listAgents,
  patchWidgetConfig,
  readAgent,
  setArchived,
  setFreeze,
  updateAgent,
} from '../../control-plane/agents/agents.js';
import { duplicateAgent } from '../../control-plane/agents/duplicate.js';
import { createFromTemplate, listTemplates } from '../../control-plane/agents/templates.js';
import { badRequest } from '../../control-plane/errors.js';
import { actorOf, type RouteContext } from './context.js';

export function agentRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const p = `${prefix}/agent`;
  server.route('POST', p, async (req) => ok(await createAgent(ctx.db, actorOf(req), req.json()), 201), auth);
  server.route('POST', `${p}/from-template`, async (req) => ok(await createFromTemplate(ctx.db, actorOf(req), req.json()), 201), auth);
  // Registered before `/:id` (uWS also prefers the static segment), so `template` is never read as an agent id.
  server.route('GET', `${p}/template`, async (req) => ok(listTemplates(req.query)), auth);
  server.route('GET', p, async (req) => ok(await listAgents(ctx.db, actorOf(req), req.query)), auth);
  server.route('GET', `${p}/:id`, async (req) => ok(await readAgent(ctx.db, actorOf(req), req.params.id as string, req.query)), auth);
  server.route('PATCH', `${p}/:id`, async (req) => {
    const { deprecation } = await updateAgent(ctx.db, actorOf(req), req.params.id as string, req.json());
    return ok(req.params.id, 200, deprecation ? { Deprecation: 'true' } : undefined);
  }, auth);
  server.route('DELETE', `${p}/:id`, async (req) => {
    await deleteAgent(ctx.db, actorOf(req), req.params.id as string);
    return ok({ deleted: true });
  }, auth);
  server.route('DELETE', `${p}/:id/archive`, async (req) => {
    const on = req.query.get('on') ?? req.query.get('true') ?? 'true';
    if (on !== 'true' && on !== 'false') throw badRequest('on: must be true or false');
    return ok({ message: await setArchived(ctx.db, actorOf(req), req.params.id as string, on === 'true') });
  }, auth);
  server.route('POST', `${p}/:id/duplicate`, async (req) =>
    ok(await duplicateAgent(ctx.db, actorOf(req), req.params.id as string, req.json()), 201), auth);
  server.route('GET', `${p}/:id/widget-config`, async (req) => ok(await getWidgetConfig(ctx.db, actorOf(req), req.params.id as string)), auth);
  server.route('PATCH', `${p}/:id/widget-config`, async (req) => ok(await patchWidgetConfig(ctx.db, actorOf(req), req.params.id as string, req.json())), auth);
  server.route('POST', `${p}/:id/config-freeze`, async (req) => ok(await setFreeze(ctx.db, actorOf(req), req.params.id as string, req.json())), auth);
  server.route('DELETE', `${p}/:id/config-freeze`, async (req) => {
    await clearFreeze(ctx.db, actorOf(req), req.params.id as string);
    return ok({ active: false });
  }, auth);
}
