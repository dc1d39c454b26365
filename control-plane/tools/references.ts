// Which agents reference a library tool in `toolRefs` through configuration that can still run.
import type { Db, Tx } from '../store/db.js';
import type { BlockRefs } from '../agents/config.js';

export interface AgentRef {
  _id: string;
  name: string;
}

/**
 * Non-archived agents of the organization whose runnable configuration lists `toolId` in `toolRefs`.
 * Runnable means: the unversioned base config while the live branch has no commit (what production serves then),
 * the head revision, the open draft and a revision still scanning of every active branch. Older committed revisions
 * are history and do not hold a tool; restoring one that names a deleted tool runs without it (resolution skips it).
 */
export async function agentsReferencingTool(q: Db | Tx, orgId: string, toolId: string): Promise<AgentRef[]> {
  // Blocks are content-addressed per agent section; a LIKE on the canonical JSON narrows, parsing confirms.
  const rows = await q
    .selectFrom('blocks')
    .innerJoin('agents', 'agents.id', 'blocks.agent_id')
    .select(['blocks.id as blockId', 'blocks.agent_id as agentId', 'blocks.content as content'])
    .where('agents.org_id', '=', orgId)
    .where('agents.archived', '=', 0)
    .where('blocks.section', '=', 'workflow_tools')
    .where('blocks.content', 'like', `%"${toolId}"%`)
    .execute();
  const referencing = new Set(rows.filter((r) => refsOf(r.content).includes(toolId)).map((r) => r.blockId));
  if (!referencing.size) return [];
  const agentIds = [...new Set(rows.filter((r) => referencing.has(r.blockId)).map((r) => r.agentId))];

  const agents = await q.selectFrom('agents').select(['id', 'name', 'base_blocks', 'live_branch_id']).where('id', 'in', agentIds).execute();
  const branches = await q.selectFrom('branches').select(['id', 'agent_id', 'head_revision_id', 'open_draft_id']).where('agent_id', 'in', agentIds).where('status', '=', 'active').execute();
  const revisionIds = branches.flatMap((b) => [b.head_revision_id, b.open_draft_id]).filter((id): id is string => id !== null);
  const activeBranchIds = branches.map((b) => b.id);
  const revisions = activeBranchIds.length
    ? await q
        .selectFrom('revisions')
        .select(['agent_id', 'blocks'])
        .where('agent_id', 'in', agentIds)
        .where((eb) =>
          eb.or([
            ...(revisionIds.length ? [eb('id', 'in', revisionIds)] : []),
            eb.and([eb('status', '=', 'draft'), eb('listed_at', 'is not', null), eb('branch_id', 'in', activeBranchIds)]),
          ]),
        )
        .execute()
    : [];

  const using = new Set<string>();
  for (const r of revisions) if (referencing.has((JSON.parse(r.blocks) as BlockRefs).workflow_tools)) using.add(r.agent_id);
  const liveHasHead = new Set(branches.filter((b) => b.head_revision_id !== null).map((b) => b.id));
  for (const a of agents) {
    if (!liveHasHead.has(a.live_branch_id) && referencing.has((JSON.parse(a.base_blocks) as BlockRefs).workflow_tools)) using.add(a.id);
  }
  return agents.filter((a) => using.has(a.id)).map((a) => ({ _id: a.id, name: a.name })).sort((x, y) => x._id.localeCompare(y._id));
}

function refsOf(content: string): unknown[] {
  const parsed = JSON.parse(content) as { toolRefs?: unknown };
  return Array.isArray(parsed.toolRefs) ? parsed.toolRefs : [];
}
