// Conversation routes: register-call (wct_ session tokens), call records and lists, an agent's call logs, branch test calls.
import type { HttpServer } from '../http/server.js';
import { ok } from '../http/types.js';
import { registerCall } from '../../control-plane/calls/register-call.js';
import { readCall } from '../../control-plane/calls/calls.js';
import { listCallLogs, searchCallLogs } from '../../control-plane/calls/call-list.js';
import { agentCallLogs } from '../../control-plane/calls/call-logs.js';
import { mintTestCall, parseTestCallBody } from '../../control-plane/calls/test-calls.js';
import { actorOf, type RouteContext } from './context.js';
import { agentSocketUrl } from './agent-socket-url.js';

export function conversationRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const c = `${prefix}/conversation`;
  server.route('POST', `${c}/register-call`, async (req) => ok(await registerCall(ctx.db, actorOf(req), req.json()), 201), auth);
  server.route('GET', c, async (req) => ok(await listCallLogs(ctx.db, actorOf(req), req.query)), auth);
  server.route('POST', `${c}/search`, async (req) => ok(await searchCallLogs(ctx.db, actorOf(req), req.json())), auth);
  server.route('GET', `${c}/:id`, async (req) => ok(await readCall(ctx.db, actorOf(req), req.params.id as string)), auth);

  // Its clients read `success`, not `status` (errors keep the usual envelope). uWS matches by segment: `GET /agent/:id`
  // has one segment fewer, so it never takes this path.
  server.route('GET', `${prefix}/agent/:id/call-logs`, async (req) => ({
    status: 200,
    body: { success: true, data: await agentCallLogs(ctx.db, actorOf(req), req.params.id as string, req.query) },
  }), auth);

  // Seam: an in-process chat run (body `messages`) would branch here, after parsing, using resolveTestCall.
  server.route('POST', `${prefix}/agent/:id/branches/:branchId/test-call`, async (req) => {
    const request = parseTestCallBody(req.json());
    return ok(await mintTestCall(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, request, agentSocketUrl(req, prefix)));
  }, auth);
}
