// Versioning v2 routes: branches, the open draft, publish, revisions, restore, scan retry and diff.
import type { HttpServer } from '../http/server.js';
import { ok } from '../http/types.js';
import { archiveBranch, createBranch, getBranch, listBranches, makeLive, renameBranch } from '../../control-plane/agents/branches.js';
import { discardDraft, getDraft, putDraft } from '../../control-plane/agents/drafts.js';
import { diffRefs, getRevision, listRevisions, revisionHistory } from '../../control-plane/agents/revisions.js';
import type { PublishResult } from '../../control-plane/agents/publish.js';
import { actorOf, type RouteContext } from './context.js';

export function versioningRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const a = `${prefix}/agent/:id`;
  const b = `${a}/branches/:branchId`;
  const published = (r: PublishResult) => ok(r.data, r.status);

  server.route('POST', `${a}/branches`, async (req) => ok(await createBranch(ctx.db, actorOf(req), req.params.id as string, req.json()), 201), auth);
  server.route('GET', `${a}/branches`, async (req) => ok({ branches: await listBranches(ctx.db, actorOf(req), req.params.id as string) }), auth);
  server.route('GET', b, async (req) => ok(await getBranch(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string)), auth);
  server.route('PATCH', b, async (req) => ok(await renameBranch(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, req.json())), auth);
  server.route('POST', `${b}/archive`, async (req) => {
    await archiveBranch(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string);
    return ok({ archived: true });
  }, auth);
  server.route('POST', `${b}/live`, async (req) => ok(await makeLive(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string)), auth);

  server.route('PUT', `${b}/draft`, async (req) => ok(await putDraft(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, req.json())), auth);
  server.route('GET', `${b}/draft`, async (req) => ok(await getDraft(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string)), auth);
  server.route('DELETE', `${b}/draft`, async (req) => {
    await discardDraft(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string);
    return ok({ discarded: true });
  }, auth);
  server.route('POST', `${b}/draft/publish`, async (req) =>
    published(await ctx.publish.publish(actorOf(req), req.params.id as string, req.params.branchId as string, req.body.length ? req.json() : undefined)), auth);
  server.route('POST', `${b}/draft/publish/cancel`, async (req) => {
    await ctx.publish.cancel(actorOf(req), req.params.id as string, req.params.branchId as string);
    return ok({ cancelled: true });
  }, auth);

  server.route('GET', `${b}/revisions`, async (req) => ok(await listRevisions(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, req.query)), auth);
  server.route('GET', `${b}/revisions/:revisionId`, async (req) =>
    ok(await getRevision(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, req.params.revisionId as string)), auth);
  server.route('GET', `${b}/revisions/:revisionId/history`, async (req) =>
    ok(await revisionHistory(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, req.params.revisionId as string)), auth);
  server.route('POST', `${b}/revisions/:revisionId/restore`, async (req) =>
    published(await ctx.publish.restore(actorOf(req), req.params.id as string, req.params.branchId as string, req.params.revisionId as string, req.body.length ? req.json() : undefined)), auth);
  server.route('POST', `${b}/revisions/:revisionId/scan`, async (req) =>
    published(await ctx.publish.retryScan(actorOf(req), req.params.id as string, req.params.branchId as string, req.params.revisionId as string, req.body.length ? req.json() : undefined)), auth);

  server.route('GET', `${a}/diff`, async (req) => ok(await diffRefs(ctx.db, actorOf(req), req.params.id as string, req.query.get('a'), req.query.get('b'))), auth);
}
