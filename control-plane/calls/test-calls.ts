// Test calls: resolve a branch's draft or revision (or a v1 draft/version) and mint a wct_ token pinned to exactly that config.
import type { Db } from '../store/db.js';
import { badRequest, conflict } from '../errors.js';
import { loadAgent, type Actor } from '../agents/agents.js';
import { loadBranch } from '../agents/branches.js';
import { resolveCallConfig, type CallTarget, type ResolvedCallConfig } from './call-config.js';
import { mintCallToken } from './call-tokens.js';
import type { CallMode } from './calls.js';
import { parseCallVariables, type CallVariables } from './variables.js';

export interface TestCallRequest {
  target?: 'draft' | 'revision';
  revisionId?: string;
  mode: CallMode;
  variables: CallVariables;
}

export interface ResolvedTestCall extends ResolvedCallConfig {
  /** `live` only for a branch with neither an open draft nor a commit (the unversioned agent's Main branch). */
  target: 'draft' | 'revision' | 'live';
}

export interface TestCallGrant {
  access_token: string;
  expires_in: number;
  sample_rate: number;
  mode: CallMode;
  target: ResolvedTestCall['target'];
  /** The revisions row the session runs (the draft's id for a draft). */
  revisionId: string | null;
  draftId: string | null;
  branchId: string | null;
}

const asObject = (body: unknown): Record<string, unknown> => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  return body as Record<string, unknown>;
};

function parseMode(raw: unknown, dflt: CallMode, errors: string[]): CallMode {
  if (raw === undefined) return dflt;
  if (raw === 'chat' || raw === 'webcall') return raw;
  errors.push(raw === 'telephony' ? 'mode: telephony test calls are not available yet; use webcall or chat' : 'mode: must be chat or webcall');
  return dflt;
}

/** Validates a v2 test-call body (unknown fields are ignored, so later fields such as `messages` pass through). */
export function parseTestCallBody(body: unknown): TestCallRequest {
  const input = asObject(body);
  const errors: string[] = [];
  const { target, revisionId } = input;
  if (target !== undefined && target !== 'draft' && target !== 'revision') errors.push('target: must be draft or revision');
  if (revisionId !== undefined && (typeof revisionId !== 'string' || !/^[a-f\d]{24}$/.test(revisionId))) errors.push('revisionId: must be a 24-hex revision id');
  if (target === 'revision' && revisionId === undefined) errors.push('revisionId: required with target revision');
  if (target === 'draft' && revisionId !== undefined) errors.push('revisionId: only with target revision');
  const mode = parseMode(input.mode, 'chat', errors);
  const vars = parseCallVariables(input.variables);
  errors.push(...vars.errors);
  if (errors.length) throw badRequest(errors);
  return {
    ...(target !== undefined ? { target: target as 'draft' | 'revision' } : revisionId !== undefined ? { target: 'revision' as const } : {}),
    ...(revisionId !== undefined ? { revisionId: revisionId as string } : {}),
    mode,
    variables: vars.variables,
  };
}

/** What a test call on a branch runs: the chosen target, else the open draft, else the branch head revision. */
export async function resolveTestCall(db: Db, actor: Actor, agentId: string, branchId: string, req: Pick<TestCallRequest, 'target' | 'revisionId'>): Promise<ResolvedTestCall> {
  const agent = await loadAgent(db, actor, agentId);
  const branch = await loadBranch(db, agent, branchId);
  let target: CallTarget;
  if (req.target === 'revision') target = { kind: 'revision', revisionId: req.revisionId as string, branchId };
  else if (req.target === 'draft' || branch.open_draft_id) target = { kind: 'draft', branchId };
  else if (branch.head_revision_id) target = { kind: 'revision', revisionId: branch.head_revision_id, branchId };
  else if (agent.live_branch_id === branch.id) target = { kind: 'live' };
  else throw conflict('no_committed_revision', 'The branch has neither an open draft nor a committed revision to test');
  const resolved = await resolveCallConfig(db, actor, agentId, target);
  return { ...resolved, target: target.kind === 'draft' ? 'draft' : target.kind === 'revision' ? 'revision' : 'live' };
}

/** Mints the wct_ token of a resolved test call: its claims pin the draft or revision the session must run. */
export async function grantTestCall(db: Db, actor: Actor, resolved: ResolvedTestCall, mode: CallMode, variables: CallVariables): Promise<TestCallGrant> {
  const minted = await mintCallToken(db, {
    orgId: actor.orgId,
    agentId: resolved.agent.id,
    mode,
    variables,
    configSource: resolved.configSource,
    // The live config is resolved when the session connects; a draft or revision is pinned by id.
    branchId: resolved.configSource === 'live' ? null : resolved.branchId,
    revisionId: resolved.configSource === 'live' ? null : resolved.revisionId,
  });
  return {
    access_token: minted.token,
    expires_in: minted.expiresIn,
    sample_rate: minted.sampleRate,
    mode,
    target: resolved.target,
    revisionId: resolved.revisionId,
    draftId: resolved.configSource === 'draft' ? resolved.revisionId : null,
    branchId: resolved.branchId,
  };
}

/** `POST /agent/{id}/branches/{branchId}/test-call`: resolve, then mint. */
export async function mintTestCall(db: Db, actor: Actor, agentId: string, branchId: string, req: TestCallRequest): Promise<TestCallGrant> {
  return grantTestCall(db, actor, await resolveTestCall(db, actor, agentId, branchId, req), req.mode, req.variables);
}

/** Legacy v1 `POST /agent/{id}/drafts/{draftId}/test-call` and `/versions/{versionId}/test-call` (a versionId is a revisionId). */
export async function mintV1TestCall(
  db: Db,
  actor: Actor,
  agentId: string,
  of: { draftId: string } | { versionId: string },
  body: unknown,
): Promise<TestCallGrant & { token: string }> {
  const input = asObject(body);
  const errors: string[] = [];
  const mode = parseMode(input.mode, 'webcall', errors);
  if (input.toPhone !== undefined && typeof input.toPhone !== 'string') errors.push('toPhone: must be a string');
  const vars = parseCallVariables(input.variables);
  errors.push(...vars.errors);
  if (errors.length) throw badRequest(errors);
  const target: CallTarget = 'draftId' in of ? { kind: 'v1draft', draftId: of.draftId } : { kind: 'revision', revisionId: of.versionId };
  const resolved = await resolveCallConfig(db, actor, agentId, target);
  const grant = await grantTestCall(db, actor, { ...resolved, target: 'draftId' in of ? 'draft' : 'revision' }, mode, vars.variables);
  return { ...grant, token: grant.access_token };
}
