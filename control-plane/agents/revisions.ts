// Revision reads: list (newest first), get with resolved config, history trail, diff of two refs, legacy v1 by-id reads.
import type { Db } from '../store/db.js';
import { badRequest, notFound } from '../errors.js';
import { SECTIONS, diffConfigs, splitConfig, type BlockRefs } from './config.js';
import { loadAgent, resolvedConfig, type Actor, type AgentRow } from './agents.js';
import { liveHeadId, loadBranch } from './branches.js';
import { draftDetail } from './drafts.js';
import { loadConfig, revisionDto, type BranchRow, type RevisionRow } from './records.js';
import { intParam } from '../query.js';

export async function listRevisions(db: Db, actor: Actor, agentId: string, branchId: string, query: URLSearchParams): Promise<Record<string, unknown>> {
  const limit = intParam(query, 'limit', 20, 1, 100);
  const skip = intParam(query, 'skip', 0, 0, 1_000_000);
  const agent = await loadAgent(db, actor, agentId);
  await loadBranch(db, agent, branchId);
  const base = db.selectFrom('revisions').where('branch_id', '=', branchId).where('listed_at', 'is not', null).where('status', '!=', 'archived');
  const total = Number((await base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const rows = await base.selectAll().orderBy('listed_at', 'desc').orderBy('id', 'desc').limit(limit).offset(skip).execute();
  const live = await liveHeadId(db, agent);
  return { revisions: rows.map((r) => revisionDto(r, { liveHeadId: live })), total };
}

/** A branch's revisions: its own commits, and the revision it was forked at (its head until its first commit). */
function assertOnBranch(row: RevisionRow, branch: BranchRow): void {
  if (row.branch_id !== branch.id && row.id !== branch.source_revision_id) throw badRequest('Revision does not belong to this branch');
}

async function loadRevision(db: Db, agent: AgentRow, revisionId: string): Promise<RevisionRow> {
  const row = await db.selectFrom('revisions').selectAll().where('id', '=', revisionId).executeTakeFirst();
  if (!row || row.agent_id !== agent.id) throw notFound('Revision not found');
  return row;
}

export async function getRevision(db: Db, actor: Actor, agentId: string, branchId: string, revisionId: string): Promise<Record<string, unknown>> {
  const agent = await loadAgent(db, actor, agentId);
  const branch = await loadBranch(db, agent, branchId);
  const row = await loadRevision(db, agent, revisionId);
  assertOnBranch(row, branch);
  return {
    revision: revisionDto(row, { liveHeadId: await liveHeadId(db, agent) }),
    resolvedConfig: resolvedConfig(await loadConfig(db, JSON.parse(row.blocks) as BlockRefs)),
  };
}

/** The chain of committed revisions on the branch up to this one, each with the sections it changed. */
export async function revisionHistory(db: Db, actor: Actor, agentId: string, branchId: string, revisionId: string): Promise<Record<string, unknown>> {
  const agent = await loadAgent(db, actor, agentId);
  const branch = await loadBranch(db, agent, branchId);
  const row = await loadRevision(db, agent, revisionId);
  assertOnBranch(row, branch);
  const live = await liveHeadId(db, agent);
  const chain: RevisionRow[] = [];
  const seen = new Set<string>();
  let cursor: RevisionRow | undefined = row;
  while (cursor && !seen.has(cursor.id) && chain.length < 1000) {
    seen.add(cursor.id);
    chain.push(cursor);
    cursor = cursor.parent_version ? await db.selectFrom('revisions').selectAll().where('id', '=', cursor.parent_version).executeTakeFirst() : undefined;
  }
  const trail = chain.map((rev, i) => {
    const prev = chain[i + 1];
    const refs = JSON.parse(rev.blocks) as BlockRefs;
    const prevRefs = prev ? (JSON.parse(prev.blocks) as BlockRefs) : null;
    return {
      revision: revisionDto(rev, { liveHeadId: live }),
      changedSections: prevRefs ? SECTIONS.filter((s) => refs[s] !== prevRefs[s]) : [...SECTIONS],
    };
  });
  return { revision: revisionDto(row, { liveHeadId: live }), publishedBy: row.published_by, trail };
}

/** Resolves a diff ref: a revision id of the agent, or `<branchId>:draft`. */
async function resolveRef(db: Db, agent: AgentRow, ref: string): Promise<BlockRefs> {
  if (ref.length < 1 || ref.length > 64) throw badRequest('Diff refs must be 1-64 characters');
  const draftRef = /^([a-f\d]{24}):draft$/.exec(ref);
  if (draftRef) {
    const branch = await loadBranch(db, agent, draftRef[1] as string);
    if (!branch.open_draft_id) throw notFound(`Branch ${branch.id} has no open draft`);
    const draft = await db.selectFrom('revisions').select('blocks').where('id', '=', branch.open_draft_id).executeTakeFirstOrThrow();
    return JSON.parse(draft.blocks) as BlockRefs;
  }
  return JSON.parse((await loadRevision(db, agent, ref)).blocks) as BlockRefs;
}

export async function diffRefs(db: Db, actor: Actor, agentId: string, a: string | null, b: string | null): Promise<ReturnType<typeof diffConfigs>> {
  if (!a || !b) throw badRequest('Query parameters a and b are required (a revision id or <branchId>:draft)');
  const agent = await loadAgent(db, actor, agentId);
  return diffConfigs(await loadConfig(db, await resolveRef(db, agent, a)), await loadConfig(db, await resolveRef(db, agent, b)));
}

// ---- Legacy v1 by-id reads (a v1 versionId equals its revisionId) ----

export async function v1GetVersion(db: Db, actor: Actor, agentId: string, versionId: string): Promise<Record<string, unknown>> {
  const agent = await loadAgent(db, actor, agentId);
  const row = await loadRevision(db, agent, versionId);
  if (row.status === 'draft' && row.listed_at === null) throw notFound('Version not found');
  return {
    version: revisionDto(row, { liveHeadId: await liveHeadId(db, agent) }),
    resolvedConfig: resolvedConfig(await loadConfig(db, JSON.parse(row.blocks) as BlockRefs)),
  };
}

/** v1 `GET /drafts/{draftId}`; `?limit=1..100` caps the edit history (all edits without it). */
export async function v1GetDraft(db: Db, actor: Actor, agentId: string, draftId: string, query?: URLSearchParams): Promise<Record<string, unknown>> {
  const limit = query?.has('limit') ? intParam(query, 'limit', 100, 1, 100) : undefined;
  const agent = await loadAgent(db, actor, agentId);
  return draftDetail(db, agent, await loadOpenDraft(db, agent, draftId), limit);
}

async function loadOpenDraft(db: Db, agent: AgentRow, draftId: string): Promise<RevisionRow> {
  const row = await loadRevision(db, agent, draftId);
  if (row.status !== 'draft' || row.listed_at !== null) throw notFound('Draft not found');
  return row;
}

/** v1 `AgentVersionDiff`-style result: per changed section, its content before and after. */
export async function v1Diff(db: Db, actor: Actor, agentId: string, a: string | null, b: string | null): Promise<Record<string, unknown>> {
  if (!a || !b) throw badRequest('Both versions to compare are required');
  const agent = await loadAgent(db, actor, agentId);
  const refsA = JSON.parse((await loadRevision(db, agent, a)).blocks) as BlockRefs;
  return sectionDiff(db, refsA, JSON.parse((await loadRevision(db, agent, b)).blocks) as BlockRefs);
}

/**
 * v1 `GET /drafts/{draftId}/diff`: the draft against `compareTo`, or without it against the revision the draft
 * started from (its parent), or, for a draft begun before the first commit, the agent's base configuration.
 */
export async function v1DraftDiff(db: Db, actor: Actor, agentId: string, draftId: string, compareTo: string | null): Promise<Record<string, unknown>> {
  const agent = await loadAgent(db, actor, agentId);
  const draft = await loadOpenDraft(db, agent, draftId);
  const base = compareTo ?? draft.parent_version;
  const refsA = base ? (JSON.parse((await loadRevision(db, agent, base)).blocks) as BlockRefs) : (JSON.parse(agent.base_blocks) as BlockRefs);
  return sectionDiff(db, refsA, JSON.parse(draft.blocks) as BlockRefs);
}

async function sectionDiff(db: Db, refsA: BlockRefs, refsB: BlockRefs): Promise<Record<string, unknown>> {
  const configA = await loadConfig(db, refsA);
  const configB = await loadConfig(db, refsB);
  const before = splitConfig(configA);
  const after = splitConfig(configB);
  const { diffs } = diffConfigs(configA, configB);
  const sections = Object.fromEntries(diffs.map((d) => [d.section, { before: before[d.section], after: after[d.section] }]));
  return { hasChanges: diffs.length > 0, sections };
}
