// Legacy v1 drafts/versions: writes and list reads answer 409 versioning_v2_migration_required; by-id reads keep working.
import type { HttpServer } from '../http/server.js';
import { docs, ok, type HttpRequest } from '../http/types.js';
import { loadAgent } from '../../control-plane/agents/agents.js';
import { v1Diff, v1DraftDiff, v1GetDraft, v1GetVersion } from '../../control-plane/agents/revisions.js';
import { mintV1TestCall, v1TestCallBody, type QueueTestCall } from '../../control-plane/calls/test-calls.js';
import { ApiError } from '../../control-plane/errors.js';
import { actorOf, type RouteContext } from './context.js';
import { agentSocketUrl } from './agent-socket-url.js';

const RETIRED: [string, string][] = [
  ['POST', '/drafts'],
  ['GET', '/drafts'],
  ['PATCH', '/drafts/:draftId'],
  ['DELETE', '/drafts/:draftId'],
  ['POST', '/drafts/:draftId/publish'],
  ['PATCH', '/drafts/:draftId/config'],
  ['GET', '/versions'],
  ['PATCH', '/versions/:versionId'],
  ['PATCH', '/versions/:versionId/activate'],
];

export function legacyV1Routes(server: HttpServer, prefix: string, ctx: RouteContext, telephony: QueueTestCall | null = null): void {
  const auth = { auth: 'key' as const };
  const a = `${prefix}/agent/:id`;
  const d = docs('Versioning (v1, deprecated)');
  const headers = (): Record<string, string> => {
    const h: Record<string, string> = { Deprecation: 'true' };
    if (ctx.settings.v1SunsetDate) h.Sunset = ctx.settings.v1SunsetDate.toUTCString();
    return h;
  };
  for (const [method, path] of RETIRED) {
    server.route(method, `${a}${path}`, async (req: HttpRequest) => {
      await loadAgent(ctx.db, actorOf(req), req.params.id as string);
      throw new ApiError(409, 'Agent versioning moved to branches and revisions (v2); use the /branches routes instead', {
        errorType: 'versioning_v2_migration_required',
        headers: headers(),
      });
    }, { ...auth, doc: d(`Retired v1 route (${method} ${path}): 409 versioning_v2_migration_required`, { deprecated: true }) });
  }
  const id = (req: HttpRequest) => req.params.id as string;
  server.route('GET', `${a}/versions/diff`, async (req) => ok(await v1Diff(ctx.db, actorOf(req), id(req), req.query.get('versionA'), req.query.get('versionB')), 200, headers()), { ...auth, doc: d('Diff two v1 versions', { deprecated: true, query: [{ name: 'versionA', required: true }, { name: 'versionB', required: true }] }) });
  server.route('GET', `${a}/versions/:versionId`, async (req) => ok(await v1GetVersion(ctx.db, actorOf(req), id(req), req.params.versionId as string), 200, headers()), { ...auth, doc: d('Read a v1 version (a revision)', { deprecated: true }) });
  server.route('GET', `${a}/drafts/:draftId`, async (req) => ok(await v1GetDraft(ctx.db, actorOf(req), id(req), req.params.draftId as string, req.query), 200, headers()), { ...auth, doc: d('Read a v1 draft', { deprecated: true, query: [{ name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 100 } }] }) });
  server.route('GET', `${a}/drafts/:draftId/diff`, async (req) =>
    ok(await v1DraftDiff(ctx.db, actorOf(req), id(req), req.params.draftId as string, req.query.get('compareTo')), 200, headers()), { ...auth, doc: d('Diff a v1 draft', { deprecated: true, query: [{ name: 'compareTo' }] }) });
  // Test calls keep working during coexistence: a wct_ token pinned to that draft or version (= revision).
  server.route('POST', `${a}/drafts/:draftId/test-call`, async (req) =>
    ok(await mintV1TestCall(ctx.db, actorOf(req), id(req), { draftId: req.params.draftId as string }, req.json(), agentSocketUrl(req, prefix), telephony), 201, headers()), { ...auth, doc: d('Test call on a v1 draft (a wct_ token)', { deprecated: true, body: { schema: v1TestCallBody, required: false }, response: { status: 201 } }) });
  server.route('POST', `${a}/versions/:versionId/test-call`, async (req) =>
    ok(await mintV1TestCall(ctx.db, actorOf(req), id(req), { versionId: req.params.versionId as string }, req.json(), agentSocketUrl(req, prefix), telephony), 201, headers()), { ...auth, doc: d('Test call on a v1 version (a wct_ token)', { deprecated: true, body: { schema: v1TestCallBody, required: false }, response: { status: 201 } }) });
}
