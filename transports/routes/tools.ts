// Tool library routes: POST/GET /tool, GET/PATCH/DELETE /tool/{toolId} (API keys only).
import type { HttpServer } from '../http/server.js';
import { docs, ok } from '../http/types.js';
import { createToolBody } from './doc-schemas.js';
import { createTool, deleteTool, listTools, readTool, updateTool, updateToolBody } from '../../control-plane/tools/tools.js';
import { actorOf, type RouteContext } from './context.js';

export function toolRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const p = `${prefix}/tool`;
  const d = docs('Tools');
  server.route('POST', p, async (req) => ok(await createTool(ctx.db, actorOf(req), req.json()), 201), { ...auth, doc: d('Create a library tool', { body: { schema: createToolBody }, response: { status: 201 } }) });
  server.route('GET', p, async (req) => ok(await listTools(ctx.db, actorOf(req), req.query)), { ...auth, doc: d('List library tools', { query: [{ name: 'type', schema: { type: 'string', enum: ['api_call', 'client_tool'] } }] }) });
  server.route('GET', `${p}/:toolId`, async (req) => ok(await readTool(ctx.db, actorOf(req), req.params.toolId as string)), { ...auth, doc: d('Read a library tool (auth secrets by name only)') });
  server.route('PATCH', `${p}/:toolId`, async (req) => ok(await updateTool(ctx.db, actorOf(req), req.params.toolId as string, req.json())), { ...auth, doc: d('Change a library tool', { body: { schema: updateToolBody } }) });
  server.route('DELETE', `${p}/:toolId`, async (req) => {
    await deleteTool(ctx.db, actorOf(req), req.params.toolId as string);
    return ok({ deleted: true });
  }, { ...auth, doc: d('Delete a library tool (409 while an agent references it)') });
}
