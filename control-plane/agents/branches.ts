// Branches of an agent: create from a source branch, list, read, rename, archive, make live (exactly one live).
import { isUniqueViolation, type Db, type Tx } from '../store/db.js';
import { newId, nowIso } from '../store/ids.js';
import { z } from 'zod';
import { badRequest, conflict, forbidden, notFound } from '../errors.js';
import { bodyObject, parseBody, says } from '../validation.js';
import { loadAgent, loadAgentForWrite, type Actor, type AgentRow } from './agents.js';
import { branchDto, insertBranch, parseJson, revisionDto, type BranchRow, type SecurityCheck } from './records.js';

export async function loadBranch(q: Db | Tx, agent: AgentRow, branchId: string): Promise<BranchRow> {
  const row = await q.selectFrom('branches').selectAll().where('id', '=', branchId).executeTakeFirst();
  if (!row || row.agent_id !== agent.id) throw notFound('Branch not found');
  return row;
}

export function assertWritable(branch: BranchRow): void {
  if (branch.status === 'archived') throw forbidden('Branch is archived; archived branches are read-only');
}

/** A revision of the branch that entered history but has not committed (its scan is pending or failed). */
export async function scanningRevision(q: Db | Tx, branchId: string): Promise<{ id: string; check: SecurityCheck | null } | null> {
  const row = await q
    .selectFrom('revisions')
    .select(['id', 'security_check'])
    .where('branch_id', '=', branchId)
    .where('status', '=', 'draft')
    .where('listed_at', 'is not', null)
    .executeTakeFirst();
  return row ? { id: row.id, check: parseJson<SecurityCheck>(row.security_check) } : null;
}

/** `PATCH .../branches/{branchId}`: the new name (trimmed). */
export const renameBranchBody = bodyObject({ name: z.string(says('required, 1-100 characters')).trim().min(1).max(100) });

/** `POST .../branches`: a name and the branch whose head revision the new branch starts from. */
export const createBranchBody = renameBranchBody.extend({
  sourceBranchId: z.string(says('required, a 24-hex branch id')).regex(/^[a-f\d]{24}$/),
});

/** A concurrent create or rename that took the name first shows up as a unique violation: answer it as the 409 it is. */
function nameTaken(name: string) {
  return (err: unknown): never => {
    if (isUniqueViolation(err)) throw conflict('branch_name_exists', `A branch named "${name}" already exists on this agent`);
    throw err;
  };
}

async function assertNameFree(q: Db | Tx, agentId: string, name: string, exceptId?: string): Promise<void> {
  const rows = await q.selectFrom('branches').select(['id', 'name']).where('agent_id', '=', agentId).execute();
  if (rows.some((r) => r.id !== exceptId && r.name.toLowerCase() === name.toLowerCase())) {
    throw conflict('branch_name_exists', `A branch named "${name}" already exists on this agent`);
  }
}

export async function branchSummary(q: Db | Tx, agent: AgentRow, branch: BranchRow): Promise<Record<string, unknown>> {
  const count = await q
    .selectFrom('revisions')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('branch_id', '=', branch.id)
    .where('listed_at', 'is not', null)
    .where('status', '!=', 'archived')
    .executeTakeFirstOrThrow();
  const head = branch.head_revision_id
    ? await q.selectFrom('revisions').selectAll().where('id', '=', branch.head_revision_id).executeTakeFirst()
    : undefined;
  const liveHead = await liveHeadId(q, agent);
  return {
    branch: branchDto(branch),
    isLive: agent.live_branch_id === branch.id,
    hasOpenDraft: branch.open_draft_id !== null,
    revisionsCount: Number(count.n),
    headRevisionNumber: head?.revision_number ?? null,
    headRevision: head ? revisionDto(head, { liveHeadId: liveHead }) : null,
  };
}

export async function liveHeadId(q: Db | Tx, agent: AgentRow): Promise<string | null> {
  const live = await q.selectFrom('branches').select('head_revision_id').where('id', '=', agent.live_branch_id).executeTakeFirst();
  return live?.head_revision_id ?? null;
}

export async function createBranch(db: Db, actor: Actor, agentId: string, body: unknown): Promise<Record<string, unknown>> {
  const agent = await loadAgentForWrite(db, actor, agentId);
  const { name, sourceBranchId } = parseBody(createBranchBody, body);
  const id = newId();
  await db.transaction().execute(async (tx) => {
    const source = await loadBranch(tx, agent, sourceBranchId);
    await assertNameFree(tx, agentId, name);
    if (!source.head_revision_id) throw conflict('source_has_no_commit', 'The source branch has no committed revision to branch from');
    if (await scanningRevision(tx, source.id)) throw conflict('source_scanning', 'The source branch has a revision whose security scan has not passed yet');
    const head = await tx.selectFrom('revisions').select('revision_number').where('id', '=', source.head_revision_id).executeTakeFirstOrThrow();
    await insertBranch(tx, {
      id,
      agentId,
      name,
      actor: actor.name,
      source: { branchId: source.id, revisionId: source.head_revision_id, revisionNumber: Number(head.revision_number ?? 0) },
    });
  }).catch(nameTaken(name));
  return branchDto(await loadBranch(db, agent, id));
}

export async function listBranches(db: Db, actor: Actor, agentId: string): Promise<Record<string, unknown>[]> {
  const agent = await loadAgent(db, actor, agentId);
  const rows = await db.selectFrom('branches').selectAll().where('agent_id', '=', agentId).where('status', '=', 'active').orderBy('created_at').orderBy('id').execute();
  const out = [];
  for (const row of rows) out.push(await branchSummary(db, agent, row));
  return out;
}

export async function getBranch(db: Db, actor: Actor, agentId: string, branchId: string): Promise<Record<string, unknown>> {
  const agent = await loadAgent(db, actor, agentId);
  return branchSummary(db, agent, await loadBranch(db, agent, branchId));
}

export async function renameBranch(db: Db, actor: Actor, agentId: string, branchId: string, body: unknown): Promise<Record<string, unknown>> {
  const agent = await loadAgentForWrite(db, actor, agentId);
  const { name } = parseBody(renameBranchBody, body);
  await db.transaction().execute(async (tx) => {
    const branch = await loadBranch(tx, agent, branchId);
    if (branch.is_default) throw forbidden('The default branch cannot be renamed');
    assertWritable(branch);
    await assertNameFree(tx, agentId, name, branchId);
    await tx.updateTable('branches').set({ name, updated_by: actor.name, updated_at: nowIso() }).where('id', '=', branchId).execute();
  }).catch(nameTaken(name));
  return branchDto(await loadBranch(db, agent, branchId));
}

export async function archiveBranch(db: Db, actor: Actor, agentId: string, branchId: string): Promise<void> {
  const agent = await loadAgentForWrite(db, actor, agentId);
  await db.transaction().execute(async (tx) => {
    // Lock the agent row first, as make-live does, so archiving and making live cannot interleave.
    await tx.updateTable('agents').set({ updated_at: nowIso() }).where('id', '=', agentId).execute();
    const branch = await loadBranch(tx, agent, branchId);
    if (branch.is_default) throw forbidden('The default branch cannot be archived');
    const current = await tx.selectFrom('agents').select('live_branch_id').where('id', '=', agentId).executeTakeFirstOrThrow();
    if (current.live_branch_id === branchId) throw forbidden('The live branch cannot be archived; make another branch live first');
    await tx.updateTable('branches').set({ status: 'archived', updated_by: actor.name, updated_at: nowIso() }).where('id', '=', branchId).execute();
  });
}

export async function makeLive(db: Db, actor: Actor, agentId: string, branchId: string): Promise<Record<string, unknown>> {
  await loadAgentForWrite(db, actor, agentId);
  await db.transaction().execute(async (tx) => {
    // Lock the agent row first so concurrent make-live calls serialize (PostgreSQL); SQLite serializes anyway.
    await tx.updateTable('agents').set({ updated_at: nowIso() }).where('id', '=', agentId).execute();
    const agent = await tx.selectFrom('agents').selectAll().where('id', '=', agentId).executeTakeFirstOrThrow();
    const branch = await loadBranch(tx, agent, branchId);
    assertWritable(branch);
    if (!branch.head_revision_id) throw conflict('no_committed_revision', 'The branch has no committed revision to serve');
    if (await scanningRevision(tx, branchId)) throw forbidden('The branch has a revision whose security scan has not passed; it cannot be made live until it commits');
    const head = await tx.selectFrom('revisions').select(['status', 'security_check']).where('id', '=', branch.head_revision_id).executeTakeFirstOrThrow();
    if (head.status !== 'published' || parseJson<SecurityCheck>(head.security_check)?.status !== 'passed') {
      throw forbidden('The branch head has not passed the security scan');
    }
    const now = nowIso();
    await tx.updateTable('agents').set({ live_branch_id: branchId, versioned: 1, updated_at: now }).where('id', '=', agentId).execute();
    await tx.updateTable('revisions').set({ activated_by: actor.name, activated_at: now }).where('id', '=', branch.head_revision_id).execute();
  });
  const agent = await loadAgent(db, actor, agentId);
  return branchSummary(db, agent, await loadBranch(db, agent, branchId));
}

