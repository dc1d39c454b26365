// Test calls: resolve a branch's draft or revision (or a v1 draft/version) and mint a wct_ token pinned to exactly that config.
import type { Db } from '../store/db.js';
import { badRequest, conflict } from '../errors.js';
import { loadAgent, type Actor } from '../agents/agents.js';
import { loadBranch } from '../agents/branches.js';
import { resolveCallConfig, type CallTarget, type ResolvedCallConfig } from './call-config.js';
import { mintCallToken } from './call-tokens.js';
import { newCallId, type CallMode } from './calls.js';
import { callVariablesField, parseCallVariables, type CallVariables } from './variables.js';
import { NOT_AN_OBJECT, bodyObject, checkBody, says } from '../validation.js';
import { z } from 'zod';

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
  /** The call id the session's record will have (`CALL-...`); the wire wants it under both names. */
  conversationId: string;
  callId: string;
  /** The `wct_` token (also as `access_token`, as register-call names it). */
  token: string;
  /** A web call has no media room here: the call id names the session. */
  roomName: string;
  /** The agent WebSocket URL to connect to with `?token=`. */
  host: string;
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

/** `mode`: webcall (default) or chat; telephony test calls are refused by name. */
const modeField = z
  .enum(['webcall', 'chat'], { errorMap: (_issue, ctx) => ({ message: ctx.data === 'telephony' ? 'telephony test calls are not available yet; use webcall or chat' : 'must be chat or webcall' }) })
  .optional()
  .describe('Default webcall.');

/**
 * `POST .../branches/{branchId}/test-call` (the wire's `TestCallV2Request`; unknown fields are ignored). Checked in
 * code after it: `target`, `revisionId` and `includeDraft` agree; the variables' keys and values (parseCallVariables).
 */
export const testCallBody = bodyObject({
  includeDraft: z.boolean(says('must be a boolean')).optional().describe('true: run the open draft.'),
  target: z.enum(['draft', 'revision'], says('must be draft or revision')).optional(),
  revisionId: z.string(says('must be a 24-hex revision id')).regex(/^[a-f\d]{24}$/).optional(),
  mode: modeField,
  variables: callVariablesField,
});

/** `POST` of a v1 draft's or version's test call (deprecated); unknown fields are ignored. */
export const v1TestCallBody = bodyObject({
  mode: modeField,
  toPhone: z.string(says('must be a string')).optional(),
  variables: callVariablesField,
});

/**
 * Validates a v2 test-call body (the wire's `TestCallV2Request`; unknown fields are ignored, so later fields such as
 * `messages` pass through). `includeDraft: true` (or our `target: "draft"`) runs the open draft; `revisionId` a
 * revision; neither: the branch head. `mode` defaults to `webcall`, as on the wire.
 */
export function parseTestCallBody(body: unknown): TestCallRequest {
  const { errors } = checkBody(testCallBody, body);
  if (errors[0] === NOT_AN_OBJECT) throw badRequest(errors);
  const input = body as Record<string, unknown>;
  const { target, revisionId, includeDraft } = input;
  if (target === 'revision' && revisionId === undefined) errors.push('revisionId: required with target revision');
  if (target === 'draft' && revisionId !== undefined) errors.push('revisionId: only with target revision');
  if (includeDraft === true && (revisionId !== undefined || target === 'revision')) errors.push('includeDraft: true excludes revisionId (a draft or a revision, not both)');
  if (includeDraft === false && target === 'draft') errors.push('includeDraft: false contradicts target draft');
  const mode = (input.mode ?? 'webcall') as CallMode;
  const vars = parseCallVariables(input.variables);
  for (const e of vars.errors) if (!errors.includes(e)) errors.push(e);
  if (errors.length) throw badRequest(errors);
  const chosen = includeDraft === true ? 'draft' : (target as 'draft' | 'revision' | undefined) ?? (revisionId !== undefined ? 'revision' : undefined);
  return {
    ...(chosen !== undefined ? { target: chosen } : {}),
    ...(revisionId !== undefined ? { revisionId: revisionId as string } : {}),
    mode,
    variables: vars.variables,
  };
}

/**
 * What a test call on a branch runs: the chosen draft or revision, else the branch head revision (even while a
 * draft is open), else the unversioned live configuration of a live branch with no commit yet.
 */
export async function resolveTestCall(db: Db, actor: Actor, agentId: string, branchId: string, req: Pick<TestCallRequest, 'target' | 'revisionId'>): Promise<ResolvedTestCall> {
  const agent = await loadAgent(db, actor, agentId);
  const branch = await loadBranch(db, agent, branchId);
  let target: CallTarget;
  if (req.target === 'revision') target = { kind: 'revision', revisionId: req.revisionId as string, branchId };
  else if (req.target === 'draft') target = { kind: 'draft', branchId };
  else if (branch.head_revision_id) target = { kind: 'revision', revisionId: branch.head_revision_id, branchId };
  else if (agent.live_branch_id === branch.id) target = { kind: 'live' };
  else throw conflict('no_committed_revision', 'The branch has no committed revision to test (send includeDraft: true to test its open draft)');
  const resolved = await resolveCallConfig(db, actor, agentId, target);
  return { ...resolved, target: target.kind === 'draft' ? 'draft' : target.kind === 'revision' ? 'revision' : 'live' };
}

/**
 * Mints the wct_ token of a resolved test call: its claims pin the draft or revision the session must run, and the
 * call id its record will take. `host` is the agent WebSocket URL (the transport knows it).
 */
export async function grantTestCall(db: Db, actor: Actor, resolved: ResolvedTestCall, mode: CallMode, variables: CallVariables, host: string): Promise<TestCallGrant> {
  const callId = newCallId();
  const minted = await mintCallToken(db, {
    callId,
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
    conversationId: callId,
    callId,
    token: minted.token,
    roomName: callId,
    host,
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
export async function mintTestCall(db: Db, actor: Actor, agentId: string, branchId: string, req: TestCallRequest, host: string): Promise<TestCallGrant> {
  return grantTestCall(db, actor, await resolveTestCall(db, actor, agentId, branchId, req), req.mode, req.variables, host);
}

/** Legacy v1 `POST /agent/{id}/drafts/{draftId}/test-call` and `/versions/{versionId}/test-call` (a versionId is a revisionId). */
export async function mintV1TestCall(
  db: Db,
  actor: Actor,
  agentId: string,
  of: { draftId: string } | { versionId: string },
  body: unknown,
  host: string,
): Promise<TestCallGrant> {
  const { errors } = checkBody(v1TestCallBody, body);
  if (errors[0] === NOT_AN_OBJECT) throw badRequest(errors);
  const input = body as Record<string, unknown>;
  const mode = (input.mode ?? 'webcall') as CallMode;
  const vars = parseCallVariables(input.variables);
  for (const e of vars.errors) if (!errors.includes(e)) errors.push(e);
  if (errors.length) throw badRequest(errors);
  const target: CallTarget = 'draftId' in of ? { kind: 'v1draft', draftId: of.draftId } : { kind: 'revision', revisionId: of.versionId };
  const resolved = await resolveCallConfig(db, actor, agentId, target);
  return grantTestCall(db, actor, { ...resolved, target: 'draftId' in of ? 'draft' : 'revision' }, mode, vars.variables, host);
}
