// Conversation routes: register-call (wct_ session tokens), call records and lists, an agent's call logs, branch test calls.
import type { HttpServer } from '../http/server.js';
import { docs, ok } from '../http/types.js';
import { registerCall, registerCallBody } from '../../control-plane/calls/register-call.js';
import { readCall } from '../../control-plane/calls/calls.js';
import { listCallLogs, searchCallLogs, searchCallsBody } from '../../control-plane/calls/call-list.js';
import { agentCallLogs } from '../../control-plane/calls/call-logs.js';
import { mintTestCall, parseTestCallBody, testCallBody, type QueueTestCall } from '../../control-plane/calls/test-calls.js';
import { actorOf, type RouteContext } from './context.js';
import { agentSocketUrl } from './agent-socket-url.js';

export function conversationRoutes(server: HttpServer, prefix: string, ctx: RouteContext, telephony: QueueTestCall | null = null): void {
  const auth = { auth: 'key' as const };
  const c = `${prefix}/conversation`;
  const d = docs('Calls');
  server.route('POST', `${c}/register-call`, async (req) => ok(await registerCall(ctx.db, actorOf(req), req.json()), 201), { ...auth, doc: d('Register a call: a single-use wct_ token for the agent WebSocket', { body: { schema: registerCallBody }, response: { status: 201 } }) });
  server.route('GET', c, async (req) => ok(await listCallLogs(ctx.db, actorOf(req), req.query)), { ...auth, doc: d("List the organization's calls", { query: [{ name: 'page', schema: { type: 'integer', minimum: 1 } }, { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 100 } }, { name: 'agentId', description: 'Comma-separated agent ids.' }, { name: 'search' }, { name: 'dateFrom', schema: { type: 'string', format: 'date-time' } }, { name: 'dateTo', schema: { type: 'string', format: 'date-time' } }, { name: 'sortBy' }, { name: 'sortOrder', schema: { type: 'string', enum: ['asc', 'desc'] } }, { name: 'answeredBy', description: "Voicemail detection's verdict, comma-separated: human, voicemail, ivr, silence." }] }) });
  server.route('POST', `${c}/search`, async (req) => ok(await searchCallLogs(ctx.db, actorOf(req), req.json())), { ...auth, doc: d('Search calls by id', { body: { schema: searchCallsBody } }) });
  server.route('GET', `${c}/:id`, async (req) => ok(await readCall(ctx.db, actorOf(req), req.params.id as string)), { ...auth, doc: d('Read a call: transcript, variables, analytics, events') });

  // Its clients read `success`, not `status` (errors keep the usual envelope). uWS matches by segment: `GET /agent/:id`
  // has one segment fewer, so it never takes this path.
  server.route('GET', `${prefix}/agent/:id/call-logs`, async (req) => ({
    status: 200,
    body: { success: true, data: await agentCallLogs(ctx.db, actorOf(req), req.params.id as string, req.query) },
  }), { ...auth, doc: d("An agent's call logs", { query: [{ name: 'page', schema: { type: 'integer', minimum: 1 } }, { name: 'offset', description: 'Page size (1-100).', schema: { type: 'integer', minimum: 1, maximum: 100 } }], response: { description: '`{success: true, data}`.', schema: { type: 'object', properties: { success: { const: true }, data: { type: 'object' } } } } }) });

  // Seam: an in-process chat run (body `messages`) would branch here, after parsing, using resolveTestCall.
  server.route('POST', `${prefix}/agent/:id/branches/:branchId/test-call`, async (req) => {
    const request = parseTestCallBody(req.json());
    return ok(await mintTestCall(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, request, agentSocketUrl(req, prefix), telephony));
  }, { ...auth, doc: d("Test call on a branch's draft or a revision: a wct_ token (webcall, chat) or an outbound phone call (telephony, `toPhone`)", { body: { schema: testCallBody, required: false } }) });
}
