// Organization secrets vault routes: create, rotate, list names, delete. No route ever returns a value.
import type { HttpServer } from '../http/server.js';
import { docs, ok, type HttpRequest } from '../http/types.js';
import { badRequest } from '../../control-plane/errors.js';
import { createSecretBody, rotateSecretBody } from '../../control-plane/secrets/vault.js';
import { actorOf, type RouteContext } from './context.js';

const body = (req: HttpRequest): Record<string, unknown> => {
  const parsed = req.json();
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badRequest('Request body must be a JSON object');
  return parsed as Record<string, unknown>;
};

export function secretRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const p = `${prefix}/secret`;
  const d = docs('Secrets');
  server.route('POST', p, async (req) => {
    const b = body(req);
    return ok(await ctx.vault.create(actorOf(req).orgId, b.name, b.value), 201);
  }, { ...auth, doc: d('Create a secret (the value is never returned)', { body: { schema: createSecretBody }, response: { status: 201 } }) });
  server.route('PUT', `${p}/:name`, async (req) => ok(await ctx.vault.put(actorOf(req).orgId, req.params.name, body(req).value)), { ...auth, doc: d("Rotate a secret's value", { body: { schema: rotateSecretBody } }) });
  server.route('GET', p, async (req) => ok({ secrets: await ctx.vault.list(actorOf(req).orgId) }), { ...auth, doc: d('List secret names') });
  server.route('DELETE', `${p}/:name`, async (req) => {
    await ctx.vault.delete(actorOf(req).orgId, req.params.name);
    return ok({ deleted: true });
  }, { ...auth, doc: d('Delete a secret') });
}
