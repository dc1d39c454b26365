// Tool library routes: POST/GET /tool, GET/PATCH/DELETE /tool/{toolId} (API keys only).
import type { HttpServer } from '../http/server.js';
import { ok } from '../http/types.js';
import { createTool, deleteTool, listTools, readTool, updateTool } from '../../control-plane/tools/tools.js';
import { actorOf, type RouteContext } from './context.js';

export function toolRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const p = `${prefix}/tool`;
  server.route('POST', p, async (req) => ok(await createTool(ctx.db, actorOf(req), req.json()), 201), auth);
  server.route('GET', p, async (req) => ok(await listTools(ctx.db, actorOf(req), req.query)), auth);
  server.route('GET', `${p}/:toolId`, async (req) => ok(await readTool(ctx.db, actorOf(req), req.params.toolId as string)), auth);
  server.route('PATCH', `${p}/:toolId`, async (req) => ok(await updateTool(ctx.db, actorOf(req), req.params.toolId as string, req.json())), auth);
  server.route('DELETE', `${p}/:toolId`, async (req) => {
    await deleteTool(ctx.db, actorOf(req), req.params.toolId as string);
    return ok({ deleted: true });
  }, auth);
}
