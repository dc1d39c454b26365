// Which configuration a call runs: the live config, a branch's open draft, or a committed revision (freeze-proof reads).
import type { Db } from '../store/db.js';
import { ApiError, badRequest, conflict, notFound } from '../errors.js';
import type { AgentConfig, BlockRefs } from '../agents/config.js';
import { liveRefs, loadAgent, type Actor, type AgentRow } from '../agents/agents.js';
import { loadBranch } from '../agents/branches.js';
import { loadConfig, type RevisionRow } from '../agents/records.js';
import type { ConfigSource } from './calls.js';
import type { CallTokenClaims } from './call-tokens.js';

export type CallTarget =
  | { kind: 'live' }
  /** The branch's open draft; with `draftId`, only while that very draft is still the open one. */
  | { kind: 'draft'; branchId: string; draftId?: string }
  /** A committed revision; with `branchId`, it must belong to that branch (its own commit or the revision it forked at). */
  | { kind: 'revision'; revisionId: string; branchId?: string }
  /** Legacy v1: an open draft by its id. */
  | { kind: 'v1draft'; draftId: string };

export interface ResolvedCallConfig {
  agent: AgentRow;
  /** The flat configuration (as `loadConfig` joins it from the blocks). */
  config: AgentConfig;
  /** The draft's or revision's workflow type (a draft may change it), else the agent's. */
  workflowType: string;
  configSource: ConfigSource;
  branchId: string | null;
  /** The revisions row whose blocks were used (a draft's id for a draft); the live head, or null before the first commit. */
  revisionId: string | null;
}

/** Resolves what a call runs. Uses `loadAgent`, not the write path: test calls pass during a configuration freeze. */
export async function resolveCallConfig(db: Db, actor: Actor, agentId: string, target: CallTarget): Promise<ResolvedCallConfig> {
  const agent = await loadAgent(db, actor, agentId);
  if (agent.archived) throw badRequest('Agent is archived');
  const done = async (refs: BlockRefs, configSource: ConfigSource, branchId: string | null, row: RevisionRow | null, revisionId = row?.id ?? null) => ({
    agent,
    config: await loadConfig(db, refs),
    workflowType: row?.workflow_type ?? agent.workflow_type,
    configSource,
    branchId,
    revisionId,
  });

  switch (target.kind) {
    case 'live': {
      const live = await liveRefs(db, agent);
      const row = live.revisionId ? await revisionRow(db, live.revisionId) : null;
      return done(live.refs, 'live', agent.live_branch_id, row ?? null, live.revisionId);
    }
    case 'draft': {
      const branch = await loadBranch(db, agent, target.branchId);
      if (!branch.open_draft_id || (target.draftId !== undefined && target.draftId !== branch.open_draft_id)) throw notFound('No open draft on this branch');
      const draft = await revisionRow(db, branch.open_draft_id);
      if (!draft) throw notFound('No open draft on this branch');
      return done(JSON.parse(draft.blocks) as BlockRefs, 'draft', branch.id, draft);
    }
    case 'revision': {
      const row = await revisionRow(db, target.revisionId);
      if (!row || row.agent_id !== agent.id) throw notFound('Revision not found');
      if (row.status === 'draft' && row.listed_at !== null) {
        throw conflict('source_scanning', 'This revision is still waiting for its security scan to pass; test it once it commits');
      }
      if (row.status !== 'published') throw notFound('Revision not found');
      if (target.branchId !== undefined) {
        const branch = await loadBranch(db, agent, target.branchId);
        if (row.branch_id !== branch.id && row.id !== branch.source_revision_id) throw badRequest('revisionId: does not belong to this branch');
      }
      return done(JSON.parse(row.blocks) as BlockRefs, 'revision', target.branchId ?? row.branch_id, row);
    }
    case 'v1draft': {
      const row = await revisionRow(db, target.draftId);
      if (!row || row.agent_id !== agent.id || row.status !== 'draft' || row.listed_at !== null) throw notFound('Draft not found');
      return done(JSON.parse(row.blocks) as BlockRefs, 'draft', row.branch_id, row);
    }
    default:
      throw new ApiError(500, 'Unknown call target');
  }
}

/**
 * The target of a call queued pinned to revisions row `revisionId` (an outbound call's `versionId`, a telephony test
 * call's draft or revision): a draft row runs while it is still open, a committed one as a revision.
 */
export async function pinnedTarget(db: Db, revisionId: string | null): Promise<CallTarget> {
  if (!revisionId) return { kind: 'live' };
  const row = await revisionRow(db, revisionId);
  return row?.status === 'draft' ? { kind: 'v1draft', draftId: revisionId } : { kind: 'revision', revisionId };
}

/** The target a redeemed `wct_` token pins (for the agent WebSocket). */
export function callTargetOfClaims(claims: Pick<CallTokenClaims, 'configSource' | 'branchId' | 'revisionId'>): CallTarget {
  if (claims.configSource === 'draft' && claims.revisionId) {
    return claims.branchId ? { kind: 'draft', branchId: claims.branchId, draftId: claims.revisionId } : { kind: 'v1draft', draftId: claims.revisionId };
  }
  if (claims.configSource === 'revision' && claims.revisionId) {
    return claims.branchId ? { kind: 'revision', revisionId: claims.revisionId, branchId: claims.branchId } : { kind: 'revision', revisionId: claims.revisionId };
  }
  return { kind: 'live' };
}

async function revisionRow(db: Db, id: string): Promise<RevisionRow | undefined> {
  return db.selectFrom('revisions').selectAll().where('id', '=', id).executeTakeFirst();
}
