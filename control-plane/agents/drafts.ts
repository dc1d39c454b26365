// A branch's open draft: upsert with optimistic concurrency (`expectedRevision`), read with edit history, discard.
import type { Db, Tx } from '../store/db.js';
import { newId, nowIso } from '../store/ids.js';
import { z } from 'zod';
import { ApiError, badRequest, conflict, notFound } from '../errors.js';
import { bodyObject, parseBody, says } from '../validation.js';
import { WORKFLOW_TYPES } from './config-schema.js';
import { referenceErrors } from './references.js';
import { applyConfigPatch, pickConfig, sectionOf, getPath, leafWrites, pathsOverlap, sameValue, type BlockRefs, type Section } from './config.js';
import { loadAgent, loadAgentForWrite, type Actor, type AgentRow } from './agents.js';
import { assertWritable, liveHeadId, loadBranch } from './branches.js';
import { loadConfig, parseJson, revisionDto, storeBlocks, type BranchRow, type PendingPublish, type RevisionRow } from './records.js';

/** Where a new draft starts: the newest content of the branch (a scanning revision, else the head, else the agent's base). */
export async function branchTipRefs(q: Db | Tx, agent: AgentRow, branch: BranchRow): Promise<{ refs: BlockRefs; parent: RevisionRow | null }> {
  const scanning = await q
    .selectFrom('revisions')
    .selectAll()
    .where('branch_id', '=', branch.id)
    .where('status', '=', 'draft')
    .where('listed_at', 'is not', null)
    .executeTakeFirst();
  const parent =
    scanning ?? (branch.head_revision_id ? await q.selectFrom('revisions').selectAll().where('id', '=', branch.head_revision_id).executeTakeFirst() : undefined);
  if (parent) return { refs: JSON.parse(parent.blocks) as BlockRefs, parent };
  return { refs: JSON.parse(agent.base_blocks) as BlockRefs, parent: null };
}

/**
 * `PUT .../draft`: the draft's own fields; the configuration fields beside them are checked by their CONFIG_FIELDS
 * schemas when merged into the draft (at least one of those or `workflowType` is required).
 */
export const draftFields = bodyObject({
  expectedRevision: z.number(says('must be an integer >= 0')).int().min(0).optional().describe('Refuse (409) if the draft moved past this edit.'),
  workflowType: z.enum(WORKFLOW_TYPES, says(`must be one of ${WORKFLOW_TYPES.join(', ')}`)).optional(),
});

export async function putDraft(db: Db, actor: Actor, agentId: string, branchId: string, body: unknown): Promise<Record<string, unknown>> {
  const { expectedRevision: expected, workflowType } = parseBody(draftFields, body);
  const patch = pickConfig(body as Record<string, unknown>);
  if (Object.keys(patch).length === 0 && workflowType === undefined) throw badRequest('No recognized config fields in request body');
  const agent = await loadAgentForWrite(db, actor, agentId);

  const draftId = await db.transaction().execute(async (tx) => {
    // Taking the next edit number first locks the branch row, so concurrent edits of one branch serialize.
    const bumped = await tx
      .updateTable('branches')
      .set((eb) => ({ draft_counter: eb('draft_counter', '+', 1), updated_by: actor.name, updated_at: nowIso() }))
      .where('id', '=', branchId)
      .where('agent_id', '=', agentId)
      .returning('draft_counter')
      .executeTakeFirst();
    if (!bumped) throw notFound('Branch not found');
    const branch = await loadBranch(tx, agent, branchId);
    assertWritable(branch);
    const next = Number(bumped.draft_counter);
    const latest = next - 1;
    const draft = branch.open_draft_id ? await tx.selectFrom('revisions').selectAll().where('id', '=', branch.open_draft_id).executeTakeFirstOrThrow() : null;
    if (draft) assertNotArmed(draft);
    const base = draft ? Number(draft.draft_base_revision) : latest;

    const tip = draft ? { refs: JSON.parse(draft.blocks) as BlockRefs, parent: null } : await branchTipRefs(tx, agent, branch);
    const current = await loadConfig(tx, tip.refs);
    if (expected !== undefined) {
      if (expected < base || expected > latest) {
        throw new ApiError(409, 'base_revision_unavailable', {
          errorType: 'base_revision_unavailable',
          data: { expectedRevision: expected, latestRevision: latest },
        });
      }
      if (draft && expected < latest) await assertNoConflict(tx, draft.id, expected, latest, patch, current);
    }

    const { merged, errors } = applyConfigPatch(current, patch);
    if (!errors.length) errors.push(...(await referenceErrors(tx, agent.org_id, Object.fromEntries(Object.keys(patch).map((k) => [k, merged[k]])))));
    if (errors.length) throw badRequest(errors);
    const refs = await storeBlocks(tx, agentId, merged);
    const writes = leafWrites(patch);
    const changedSections = [...new Set(Object.keys(patch).map((f) => sectionOf(f) as Section))];
    const now = nowIso();
    const nextWorkflowType = (workflowType as string | undefined) ?? draft?.workflow_type ?? tip.parent?.workflow_type ?? agent.workflow_type;
    let id: string;
    if (draft) {
      id = draft.id;
      await tx
        .updateTable('revisions')
        .set({ blocks: JSON.stringify(refs), draft_revision: next, workflow_type: nextWorkflowType, updated_at: now })
        .where('id', '=', id)
        .execute();
    } else {
      id = newId();
      const parent = tip.parent;
      await tx
        .insertInto('revisions')
        .values({
          id,
          agent_id: agentId,
          branch_id: branchId,
          status: 'draft',
          revision_number: null,
          version_number: null,
          label: null,
          description: null,
          is_pinned: 0,
          published_by: null,
          published_at: null,
          restored_from_label: null,
          restored_from_revision_id: null,
          draft_id: id,
          draft_name: `${branch.name} draft`,
          draft_revision: next,
          draft_base_revision: latest,
          source_version_id: parent?.id ?? null,
          source_draft_id: null,
          blocks: JSON.stringify(refs),
          workflow_type: nextWorkflowType,
          parent_version: parent?.id ?? null,
          activated_by: null,
          activated_at: null,
          security_check: null,
          pending_publish: null,
          prompt_score: parent?.prompt_score ?? null,
          prompt_score_hash: parent?.prompt_score_hash ?? null,
          listed_at: null,
          created_by: actor.name,
          created_at: now,
          updated_at: now,
        })
        .execute();
      await tx.updateTable('branches').set({ open_draft_id: id }).where('id', '=', branchId).execute();
    }
    await tx
      .insertInto('draft_edits')
      .values({
        id: newId(),
        draft_id: id,
        draft_revision: next,
        changes: JSON.stringify(writes),
        changed_sections: JSON.stringify(changedSections),
        editor: actor.name,
        created_at: now,
        blocks: JSON.stringify(refs),
        workflow_type: nextWorkflowType,
      })
      .execute();
    return id;
  });
  const row = await db.selectFrom('revisions').selectAll().where('id', '=', draftId).executeTakeFirstOrThrow();
  return revisionDto(row, { liveHeadId: await liveHeadId(db, agent) });
}

/** 409 DraftConflictError when edits after `expected` changed a field this write also changes, to another value. */
async function assertNoConflict(tx: Tx, draftId: string, expected: number, latest: number, patch: Record<string, unknown>, current: Record<string, unknown>): Promise<void> {
  const edits = await tx.selectFrom('draft_edits').select('changes').where('draft_id', '=', draftId).where('draft_revision', '>', expected).execute();
  const changedSince = edits.flatMap((e) => (JSON.parse(e.changes) as { path: string }[]).map((c) => c.path));
  const diffs = leafWrites(patch)
    .filter((w) => changedSince.some((p) => pathsOverlap(p, w.path)))
    .map((w) => ({ path: w.path, yourValue: w.value, latestValue: getPath(current, w.path) ?? null }))
    .filter((d) => !sameValue(d.yourValue, d.latestValue));
  if (diffs.length) {
    throw new ApiError(409, diffs.map((d) => d.path), {
      errorType: 'DraftConflictError',
      data: { conflict: { expectedRevision: expected, latestRevision: latest, diffs } },
    });
  }
}


/** The content of a draft being published is what gets scanned: it cannot change until the publish commits or is cancelled. */
function assertNotArmed(draft: RevisionRow): void {
  if (parseJson<PendingPublish>(draft.pending_publish)?.state === 'active') {
    throw conflict('publish_in_progress', 'This draft is being published; edit it once the publish commits or is cancelled');
  }
}

export async function openDraft(q: Db | Tx, branch: BranchRow): Promise<RevisionRow> {
  if (!branch.open_draft_id) throw notFound('This branch has no open draft');
  return q.selectFrom('revisions').selectAll().where('id', '=', branch.open_draft_id).executeTakeFirstOrThrow();
}

/**
 * The wire's DraftDetail: the draft, its edit count, and its edits newest first (at most `limit`), each as the SDK's
 * DraftEditHistoryEntry `{revision, changedSections, editorName, editorId, timestamp}`: `revision` is the draft
 * revision number that edit made (an integer), `editorId` null (edits are made by API keys, named by `editorName`).
 */
export async function draftDetail(q: Db | Tx, agent: AgentRow, draft: RevisionRow, limit?: number): Promise<Record<string, unknown>> {
  const edits = q.selectFrom('draft_edits').where('draft_id', '=', draft.id);
  const count = Number((await edits.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  let page = edits.select(['draft_revision', 'changed_sections', 'editor', 'created_at']).orderBy('draft_revision', 'desc');
  if (limit !== undefined) page = page.limit(limit);
  const liveHead = await liveHeadId(q, agent);
  return {
    latest: revisionDto(draft, { liveHeadId: liveHead }),
    editCount: count,
    editHistory: (await page.execute()).map((e) => ({
      revision: Number(e.draft_revision),
      changedSections: JSON.parse(e.changed_sections) as string[],
      editorName: e.editor,
      editorId: null,
      timestamp: e.created_at,
    })),
  };
}

export async function getDraft(db: Db, actor: Actor, agentId: string, branchId: string): Promise<Record<string, unknown>> {
  const agent = await loadAgent(db, actor, agentId);
  const branch = await loadBranch(db, agent, branchId);
  return draftDetail(db, agent, await openDraft(db, branch));
}

export async function discardDraft(db: Db, actor: Actor, agentId: string, branchId: string): Promise<void> {
  const agent = await loadAgentForWrite(db, actor, agentId);
  await db.transaction().execute(async (tx) => {
    const branch = await loadBranch(tx, agent, branchId);
    assertWritable(branch);
    const draft = await openDraft(tx, branch);
    assertNotArmed(draft);
    await tx.updateTable('branches').set({ open_draft_id: null, updated_by: actor.name, updated_at: nowIso() }).where('id', '=', branchId).execute();
    await tx.deleteFrom('draft_edits').where('draft_id', '=', draft.id).execute();
    await tx.deleteFrom('revisions').where('id', '=', draft.id).execute();
  });
}
