// Agent routes: CRUD, archive and configuration freeze under {atoms}/agent.
import type { HttpServer } from '../http/server.js';
import { ok } from '../http/types.js';
import { clearFreeze, createAgent, deleteAgent, listAgents, readAgent, setArchived, setFreeze, updateAgent } from '../../control-plane/agents/agents.js';
import { badRequest } from '../../control-plane/errors.js';
import { DEMO_AGENT_TEMPLATE_ID, demoAgentConfig } from '../../engine/agent/demo-agent.js';
import { actorOf, type RouteContext } from './context.js';

/** Agent templates `POST /agent/from-template` creates from: the built-in demo that runs with no external service. */
const TEMPLATES: Record<string, () => Record<string, unknown>> = { [DEMO_AGENT_TEMPLATE_ID]: demoAgentConfig };

export function agentRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const p = `${prefix}/agent`;
  server.route('POST', p, async (req) => ok(await createAgent(ctx.db, actorOf(req), req.json()), 201), auth);
  server.route('POST', `${p}/from-template`, async (req) => {
    const body = req.json() as Record<string, unknown>;
    const id = typeof body?.templateId === 'string' ? body.templateId : undefined;
    const template = id && Object.hasOwn(TEMPLATES, id) ? TEMPLATES[id] : undefined;
    if (!template) throw badRequest(`templateId: must be one of ${Object.keys(TEMPLATES).join(', ')}`);
    const config = template();
    if (typeof body.name === 'string' && body.name.trim()) config.name = body.name;
    return ok(await createAgent(ctx.db, actorOf(req), config), 201);
  }, auth);
  server.route('GET', p, async (req) => ok(await listAgents(ctx.db, actorOf(req), req.query)), auth);
  server.route('GET', `${p}/:id`, async (req) => ok(await readAgent(ctx.db, actorOf(req), req.params.id as string, req.query)), auth);
  server.route('PATCH', `${p}/:id`, async (req) => {
    await updateAgent(ctx.db, actorOf(req), req.params.id as string, req.json());
    return ok(req.params.id);
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
  server.route('POST', `${p}/:id/config-freeze`, async (req) => ok(await setFreeze(ctx.db, actorOf(req), req.params.id as string, req.json())), auth);
  server.route('DELETE', `${p}/:id/config-freeze`, async (req) => {
    await clearFreeze(ctx.db, actorOf(req), req.params.id as string);
    return ok({ active: false });
  }, auth);
}
