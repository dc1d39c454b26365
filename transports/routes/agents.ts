// Agent routes under {atoms}/agent: CRUD, templates, duplicate, widget settings, archive and configuration freeze.
import type { HttpServer } from '../http/server.js';
import { docs, ok } from '../http/types.js';
import { createAgentBody, updateAgentBody, widgetConfigSchema } from './doc-schemas.js';
import {
  clearFreeze,
  createAgent,
  freezeBody,
  deleteAgent,
  getWidgetConfig,
  listAgents,
  patchWidgetConfig,
  readAgent,
  setArchived,
  setFreeze,
  updateAgent,
} from '../../control-plane/agents/agents.js';
import { duplicateAgent, duplicateBody } from '../../control-plane/agents/duplicate.js';
import { createFromTemplate, fromTemplateBody, listTemplates } from '../../control-plane/agents/templates.js';
import { badRequest } from '../../control-plane/errors.js';
import { actorOf, type RouteContext } from './context.js';

export function agentRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const p = `${prefix}/agent`;
  const d = docs('Agents');
  server.route('POST', p, async (req) => ok(await createAgent(ctx.db, actorOf(req), req.json()), 201), { ...auth, doc: d('Create an agent', { body: { schema: createAgentBody }, response: { status: 201, description: 'The new agent id as `data`.' } }) });
  server.route('POST', `${p}/from-template`, async (req) => ok(await createFromTemplate(ctx.db, actorOf(req), req.json()), 201), { ...auth, doc: d('Create an agent from a template', { body: { schema: fromTemplateBody }, response: { status: 201, description: 'The new agent id as `data`.' } }) });
  // Registered before `/:id` (uWS also prefers the static segment), so `template` is never read as an agent id.
  server.route('GET', `${p}/template`, async (req) => ok(listTemplates(req.query)), { ...auth, doc: d('List agent templates', { query: [{ name: 'region', description: 'Only templates for this region.' }] }) });
  server.route('GET', p, async (req) => ok(await listAgents(ctx.db, actorOf(req), req.query)), { ...auth, doc: d('List agents', { query: [{ name: 'page', schema: { type: 'integer', minimum: 1 } }, { name: 'offset', description: 'Page size (1-100).', schema: { type: 'integer', minimum: 1, maximum: 100 } }, { name: 'search' }, { name: 'archived', schema: { type: 'boolean' } }, { name: 'type', description: 'Workflow type.' }, { name: 'sortField' }, { name: 'sortOrder', schema: { type: 'string', enum: ['asc', 'desc'] } }] }) });
  server.route('GET', `${p}/:id`, async (req) => ok(await readAgent(ctx.db, actorOf(req), req.params.id as string, req.query)), { ...auth, doc: d('Read an agent', { query: [{ name: 'draftId', description: 'Read this (v1) draft instead of the live configuration.' }, { name: 'versionId', description: 'Read this (v1) version.' }] }) });
  server.route('PATCH', `${p}/:id`, async (req) => {
    const { deprecation } = await updateAgent(ctx.db, actorOf(req), req.params.id as string, req.json());
    return ok(req.params.id, 200, deprecation ? { Deprecation: 'true' } : undefined);
  }, { ...auth, doc: d('Update an agent', { body: { schema: updateAgentBody }, response: { description: 'The agent id as `data` (`Deprecation: true` when a deprecated field was used).' } }) });
  server.route('DELETE', `${p}/:id`, async (req) => {
    await deleteAgent(ctx.db, actorOf(req), req.params.id as string);
    return ok({ deleted: true });
  }, { ...auth, doc: d('Delete an agent') });
  server.route('DELETE', `${p}/:id/archive`, async (req) => {
    const on = req.query.get('on') ?? req.query.get('true') ?? 'true';
    if (on !== 'true' && on !== 'false') throw badRequest('on: must be true or false');
    return ok({ message: await setArchived(ctx.db, actorOf(req), req.params.id as string, on === 'true') });
  }, { ...auth, doc: d('Archive or unarchive an agent', { query: [{ name: 'on', description: 'true archives, false unarchives (default true).', schema: { type: 'boolean' } }] }) });
  server.route('POST', `${p}/:id/duplicate`, async (req) =>
    ok(await duplicateAgent(ctx.db, actorOf(req), req.params.id as string, req.json()), 201), { ...auth, doc: d('Duplicate an agent', { body: { schema: duplicateBody, required: false }, response: { status: 201 } }) });
  server.route('GET', `${p}/:id/widget-config`, async (req) => ok(await getWidgetConfig(ctx.db, actorOf(req), req.params.id as string)), { ...auth, doc: d("Read the agent's web widget settings") });
  server.route('PATCH', `${p}/:id/widget-config`, async (req) => ok(await patchWidgetConfig(ctx.db, actorOf(req), req.params.id as string, req.json())), { ...auth, doc: d("Change the agent's web widget settings (`null` resets a key)", { body: { schema: widgetConfigSchema } }) });
  server.route('POST', `${p}/:id/config-freeze`, async (req) => ok(await setFreeze(ctx.db, actorOf(req), req.params.id as string, req.json())), { ...auth, doc: d('Freeze configuration changes (423 while active)', { body: { schema: freezeBody, required: false } }) });
  server.route('DELETE', `${p}/:id/config-freeze`, async (req) => {
    await clearFreeze(ctx.db, actorOf(req), req.params.id as string);
    return ok({ active: false });
  }, { ...auth, doc: d('Lift the configuration freeze') });
}
