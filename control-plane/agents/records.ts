// Blocks storage and the mapping of stored rows to the wire's Revision and Branch records.
import type { Selectable } from 'kysely';
import type { Db, Tx } from '../store/db.js';
import type { BranchesTable, RevisionsTable } from '../store/schema.js';
import { nowIso } from '../store/ids.js';
import { SECTIONS, blockId, canonicalJson, joinSections, splitConfig, type AgentConfig, type BlockRefs, type Section, type SectionContents } from './config.js';

export type RevisionRow = Selectable<RevisionsTable>;
export type BranchRow = Selectable<BranchesTable>;
type Q = Db | Tx;

export const parseJson = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

/** Stores each section as a content-addressed block (insert-or-ignore) and returns the references. */
export async function storeBlocks(q: Q, agentId: string, config: AgentConfig): Promise<BlockRefs> {
  const contents = splitConfig(config);
  const refs = {} as BlockRefs;
  const rows = SECTIONS.map((section) => {
    const id = blockId(agentId, section, contents[section]);
    refs[section] = id;
    return { id, agent_id: agentId, section, content: canonicalJson(contents[section]), scan_status: null, created_at: nowIso() };
  });
  await q.insertInto('blocks').values(rows).onConflict((oc) => oc.column('id').doNothing()).execute();
  return refs;
}

/** Inserts a branch: the default Main (no source) or a fork at its source's head revision. */
export async function insertBranch(
  q: Q,
  b: { id: string; agentId: string; name: string; actor: string; source?: { branchId: string; revisionId: string; revisionNumber: number } },
): Promise<void> {
  const now = nowIso();
  await q
    .insertInto('branches')
    .values({
      id: b.id,
      agent_id: b.agentId,
      name: b.name,
      is_default: b.source ? 0 : 1,
      source_branch_id: b.source?.branchId ?? null,
      source_revision_id: b.source?.revisionId ?? null,
      head_revision_id: b.source?.revisionId ?? null,
      open_draft_id: null,
      status: 'active',
      // A fork continues its source's numbering, so revision numbers rise from the head it starts at.
      revision_counter: b.source?.revisionNumber ?? 0,
      draft_counter: 0,
      lock_token: null,
      lock_expires_at: null,
      created_by: b.actor,
      updated_by: b.actor,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

export async function loadSections(q: Q, refs: BlockRefs): Promise<SectionContents> {
  const ids = [...new Set(Object.values(refs))];
  const rows = ids.length ? await q.selectFrom('blocks').select(['id', 'content']).where('id', 'in', ids).execute() : [];
  const byId = new Map(rows.map((r) => [r.id, JSON.parse(r.content) as Record<string, unknown>]));
  const out = {} as SectionContents;
  for (const section of SECTIONS) out[section] = byId.get(refs[section]) ?? {};
  return out;
}

export async function loadConfig(q: Q, refs: BlockRefs): Promise<AgentConfig> {
  return joinSections(await loadSections(q, refs));
}

/** Section block ids that have not yet passed the security scan. */
export async function unscannedSections(q: Q, refs: BlockRefs): Promise<Section[]> {
  const ids = [...new Set(Object.values(refs))];
  const passed = new Set(
    (await q.selectFrom('blocks').select('id').where('id', 'in', ids).where('scan_status', '=', 'passed').execute()).map((r) => r.id),
  );
  return SECTIONS.filter((s) => !passed.has(refs[s]));
}

export async function markBlocksPassed(q: Q, refs: BlockRefs): Promise<void> {
  await q.updateTable('blocks').set({ scan_status: 'passed' }).where('id', 'in', [...new Set(Object.values(refs))]).execute();
}

export interface SecurityCheck {
  status: 'pending' | 'passed' | 'failed' | 'cancelled';
  reason: string | null;
  triggeredAt: string | null;
  completedAt: string | null;
  /** Finding rules the publisher confirmed as intended when retrying the scan. */
  acknowledgedRules?: string[];
}

export interface PendingPublish {
  state: 'active' | 'cancelled';
  startedBy: string;
  startedAt: string;
}

/** What the prompt score depends on (prompt texts and tools): a draft whose key differs from its score's is stale. */
export const promptScoreKey = (refs: BlockRefs): string => `${refs.workflow_prompt}:${refs.workflow_tools}`;

/** Wire Revision record. `liveHeadId` is the head of the agent's live branch (for isActive). */
export function revisionDto(row: RevisionRow, opts: { liveHeadId?: string | null } = {}): Record<string, unknown> {
  const promptScore = parseJson<Record<string, unknown>>(row.prompt_score);
  const blocks = JSON.parse(row.blocks) as BlockRefs;
  const stale = row.status === 'draft' && promptScore !== null && promptScoreKey(blocks) !== row.prompt_score_hash;
  return {
    _id: row.id,
    agent: row.agent_id,
    status: row.status,
    branch: row.branch_id,
    revisionNumber: row.revision_number,
    versionNumber: row.version_number,
    label: row.label,
    description: row.description,
    isPinned: Boolean(row.is_pinned),
    publishedBy: row.published_by,
    publishedAt: row.published_at,
    publishedByName: row.published_by,
    restoredFromLabel: row.restored_from_label,
    restoredFromRevisionId: row.restored_from_revision_id,
    draftId: row.draft_id,
    draftName: row.draft_name,
    // A revision that entered the history (scanning) is no longer an editable draft; its edit number is kept for a cancel.
    draftRevision: row.listed_at === null ? row.draft_revision : null,
    sourceVersionId: row.source_version_id,
    sourceDraftId: row.source_draft_id,
    blocks,
    workflowType: row.workflow_type,
    parentVersion: row.parent_version,
    isActive: opts.liveHeadId != null && opts.liveHeadId === row.id,
    activatedBy: row.activated_by,
    activatedAt: row.activated_at,
    securityCheck: parseJson<SecurityCheck>(row.security_check),
    pendingPublish: parseJson<PendingPublish>(row.pending_publish),
    promptScore,
    promptScoreStale: stale,
    createdBy: row.created_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function branchDto(row: BranchRow): Record<string, unknown> {
  return {
    _id: row.id,
    agent: row.agent_id,
    name: row.name,
    isDefault: Boolean(row.is_default),
    sourceBranchId: row.source_branch_id,
    sourceRevisionId: row.source_revision_id,
    headRevisionId: row.head_revision_id,
    openDraftId: row.open_draft_id,
    status: row.status,
    draftRevision: row.draft_counter,
    createdBy: row.created_by,
    updatedBy: row.updated_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
