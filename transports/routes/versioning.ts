// Versioning v2 routes: branches, the open draft, publish, revisions, restore, scan retry and diff.
import type { HttpServer } from '../http/server.js';
import { docs, ok } from '../http/types.js';
import { draftBody } from './doc-schemas.js';
import { archiveBranch, createBranch, createBranchBody, getBranch, listBranches, makeLive, renameBranch, renameBranchBody } from '../../control-plane/agents/branches.js';
import { discardDraft, getDraft, putDraft } from '../../control-plane/agents/drafts.js';
import { diffRefs, getRevision, listRevisions, revisionHistory } from '../../control-plane/agents/revisions.js';
import { publishBody, retryScanBody, type PublishResult } from '../../control-plane/agents/publish.js';
import { actorOf, type RouteContext } from './context.js';

export function versioningRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const a = `${prefix}/agent/:id`;
  const b = `${a}/branches/:branchId`;
  const d = docs('Versioning');
  const published = (r: PublishResult) => ok(r.data, r.status);

  server.route('POST', `${a}/branches`, async (req) => ok(await createBranch(ctx.db, actorOf(req), req.params.id as string, req.json()), 201), { ...auth, doc: d('Create a branch', { body: { schema: createBranchBody }, response: { status: 201 } }) });
  server.route('GET', `${a}/branches`, async (req) => ok({ branches: await listBranches(ctx.db, actorOf(req), req.params.id as string) }), { ...auth, doc: d("List the agent's branches") });
  server.route('GET', b, async (req) => ok(await getBranch(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string)), { ...auth, doc: d('Read a branch') });
  server.route('PATCH', b, async (req) => ok(await renameBranch(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, req.json())), { ...auth, doc: d('Rename a branch', { body: { schema: renameBranchBody } }) });
  server.route('POST', `${b}/archive`, async (req) => {
    await archiveBranch(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string);
    return ok({ archived: true });
  }, { ...auth, doc: d('Archive a branch') });
  server.route('POST', `${b}/live`, async (req) => ok(await makeLive(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string)), { ...auth, doc: d('Make the branch live (calls run its head revision)') });

  server.route('PUT', `${b}/draft`, async (req) => ok(await putDraft(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, req.json())), { ...auth, doc: d("Edit the branch's draft (merge of configuration fields)", { body: { schema: draftBody }, description: 'A stale `expectedRevision` is a 409 `draft_conflict`; a frozen agent answers 423.' }) });
  server.route('GET', `${b}/draft`, async (req) => ok(await getDraft(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string)), { ...auth, doc: d("Read the branch's draft with its edit history") });
  server.route('DELETE', `${b}/draft`, async (req) => {
    await discardDraft(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string);
    return ok({ discarded: true });
  }, { ...auth, doc: d('Discard the draft') });
  server.route('POST', `${b}/draft/publish`, async (req) =>
    published(await ctx.publish.publish(actorOf(req), req.params.id as string, req.params.branchId as string, req.body.length ? req.json() : undefined)), { ...auth, doc: d('Publish the draft as a revision', { body: { schema: publishBody, required: false }, response: { status: 200, also: [202], description: '200 with the revision (state committed), or 202 with only the state (scanning) while the security scan runs (poll the revision). Either may carry `warnings`: what the revision will not do on this server (for example an `slmModel` that no configured language model answers: its calls would end `llm_not_configured`).' } }) });
  server.route('POST', `${b}/draft/publish/cancel`, async (req) => {
    await ctx.publish.cancel(actorOf(req), req.params.id as string, req.params.branchId as string);
    return ok({ cancelled: true });
  }, { ...auth, doc: d('Cancel a publish waiting for its scan') });

  server.route('GET', `${b}/revisions`, async (req) => ok(await listRevisions(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, req.query)), { ...auth, doc: d("List the branch's revisions", { query: [{ name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 100 } }, { name: 'skip', schema: { type: 'integer', minimum: 0 } }] }) });
  server.route('GET', `${b}/revisions/:revisionId`, async (req) =>
    ok(await getRevision(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, req.params.revisionId as string)), { ...auth, doc: d('Read a revision') });
  server.route('GET', `${b}/revisions/:revisionId/history`, async (req) =>
    ok(await revisionHistory(ctx.db, actorOf(req), req.params.id as string, req.params.branchId as string, req.params.revisionId as string)), { ...auth, doc: d('The draft edits that made a revision') });
  server.route('POST', `${b}/revisions/:revisionId/restore`, async (req) =>
    published(await ctx.publish.restore(actorOf(req), req.params.id as string, req.params.branchId as string, req.params.revisionId as string, req.body.length ? req.json() : undefined)), { ...auth, doc: d('Restore a revision (publishes it again as the head)', { body: { schema: publishBody, required: false }, response: { status: 200, also: [202], description: '200 with the revision (state committed), or 202 with only the state (scanning) while the security scan runs; `warnings` as on publish.' } }) });
  server.route('POST', `${b}/revisions/:revisionId/scan`, async (req) =>
    published(await ctx.publish.retryScan(actorOf(req), req.params.id as string, req.params.branchId as string, req.params.revisionId as string, req.body.length ? req.json() : undefined)), { ...auth, doc: d("Retry a revision's failed security scan", { body: { schema: retryScanBody, required: false }, response: { status: 202 } }) });

  server.route('GET', `${a}/diff`, async (req) => ok(await diffRefs(ctx.db, actorOf(req), req.params.id as string, req.query.get('a'), req.query.get('b'))), { ...auth, doc: d('Diff two revisions, drafts or branches', { query: [{ name: 'a', required: true, description: 'A revision, draft or branch reference.' }, { name: 'b', required: true }] }) });
}
