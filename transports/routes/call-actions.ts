// Call actions (hosted reference, "Call Actions"): create, list (one agent's), read, update, delete. Logic in
// control-plane/organization/call-actions.ts. These answer `{success: true, data}` as the reference shows (errors keep
// the usual envelope).
import type { HttpServer } from '../http/server.js';
import { docs, type HttpResponse } from '../http/types.js';
import { actorOf, type RouteContext } from './context.js';
import {
  CALL_ACTION_CATEGORIES,
  createCallAction,
  createCallActionBody,
  deleteCallAction,
  getCallAction,
  listCallActions,
  updateCallAction,
  updateCallActionBody,
} from '../../control-plane/organization/call-actions.js';

const success = (data: unknown, status = 200): HttpResponse => ({ status, body: { success: true, data } });
const SUCCESS_DOC = { type: 'object', properties: { success: { const: true }, data: {} } } as const;
const ACTION = '`{_id, organization, agentId, category, provider, action_type, object, config: {phoneNumberFieldName, conditions: [{field, operator, value}], body}, createdAt, updatedAt}`';

export function callActionRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const d = docs('Call actions');
  const p = `${prefix}/call-actions`;
  const stored = 'Stored per agent; no provider integration (CRM) runs them on this server.';

  server.route('POST', p, async (req) => success(await createCallAction(ctx.db, actorOf(req), req.json()), 201), {
    ...auth,
    doc: d('Create a call action', {
      description: `\`trigger\` actions need \`config.phoneNumberFieldName\`. ${stored}`,
      body: { schema: createCallActionBody },
      response: { status: 201, description: `\`{success: true, data: ${ACTION}}\`.`, schema: SUCCESS_DOC },
      errors: [403],
    }),
  });

  server.route('GET', p, async (req) => success(await listCallActions(ctx.db, actorOf(req), req.query)), {
    ...auth,
    doc: d("List an agent's call actions", {
      query: [
        { name: 'agentId', required: true, description: 'The agent (24-character hex; 404 unknown, 403 another organization\'s).' },
        { name: 'page', schema: { type: 'integer', minimum: 1, default: 1 } },
        { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 100, default: 10 } },
        { name: 'category', schema: { type: 'string', enum: [...CALL_ACTION_CATEGORIES] } },
        { name: 'provider', description: 'Only this provider.' },
      ],
      response: { description: '`{success: true, data: {callActions, totalCount, page, limit}}`, newest first.', schema: SUCCESS_DOC },
      errors: [403, 404],
    }),
  });

  server.route('GET', `${p}/:id`, async (req) => success(await getCallAction(ctx.db, actorOf(req), req.params.id as string)), {
    ...auth,
    doc: d('Read a call action', { response: { description: `\`{success: true, data: ${ACTION}}\`.`, schema: SUCCESS_DOC }, errors: [403] }),
  });

  server.route('PUT', `${p}/:id`, async (req) => success(await updateCallAction(ctx.db, actorOf(req), req.params.id as string, req.json())), {
    ...auth,
    doc: d('Update a call action (only the fields sent)', { body: { schema: updateCallActionBody }, response: { description: `\`{success: true, data: ${ACTION}}\`.`, schema: SUCCESS_DOC }, errors: [403] }),
  });

  server.route('DELETE', `${p}/:id`, async (req) => success(await deleteCallAction(ctx.db, actorOf(req), req.params.id as string)), {
    ...auth,
    doc: d('Delete a call action', { response: { description: '`{success: true, data: {message: "Call action deleted successfully"}}`.', schema: SUCCESS_DOC }, errors: [403] }),
  });
}
