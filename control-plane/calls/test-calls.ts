// Test calls: resolve a branch's draft or revision (or a v1 draft/version) and mint a wct_ token pinned to exactly that config.
import type { Db } from '../store/db.js';
import { ApiError, badRequest, conflict } from '../errors.js';
import { callerIdsOf, findDialingNumber } from '../telephony/dialing.js';
import { agentAnswers } from '../telephony/sources.js';
import { E164 } from '../telephony/validation.js';
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
  /** `telephony`: an outbound phone call to `toPhone` (see placeTelephonyTestCall); else a wct_ token. */
  mode: CallMode | 'telephony';
  variables: CallVariables;
  toPhone?: string;
  fromNumber?: string;
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

/** `mode`: webcall (default), chat, or telephony (an outbound call to `toPhone`). */
const modeField = z.enum(['webcall', 'chat', 'telephony'], says('must be webcall, chat or telephony')).optional().describe('Default webcall; telephony places an outbound call to `toPhone`.');
const toPhoneField = z.string(says('must be an E.164 phone number such as +15550100')).regex(E164, 'must be an E.164 phone number such as +15550100').optional().describe('Required with mode telephony: the number the agent calls.');
const fromNumberField = z
  .string(says('must be an E.164 phone number such as +15550100'))
  .regex(E164, 'must be an E.164 phone number such as +15550100')
  .optional()
  .describe("Mode telephony: the number to call from (default: the agent's first caller ID, else a number that answers to it).");

/**
 * `POST .../branches/{branchId}/test-call` (the wire's `TestCallV2Request`; unknown fields are ignored). Checked in
 * code after it: `target`, `revisionId` and `includeDraft` agree; the variables' keys and values (parseCallVariables).
 */
export const testCallBody = bodyObject({
  includeDraft: z.boolean(says('must be a boolean')).optional().describe('true: run the open draft.'),
  target: z.enum(['draft', 'revision'], says('must be draft or revision')).optional(),
  revisionId: z.string(says('must be a 24-hex revision id')).regex(/^[a-f\d]{24}$/).optional(),
  mode: modeField,
  toPhone: toPhoneField,
  fromNumber: fromNumberField,
  variables: callVariablesField,
});

/** `POST` of a v1 draft's or version's test call (deprecated); unknown fields are ignored. */
export const v1TestCallBody = bodyObject({
  mode: modeField,
  toPhone: toPhoneField,
  fromNumber: fromNumberField,
  variables: callVariablesField,
});

/** `toPhone` and `fromNumber` belong to telephony test calls only; telephony needs `toPhone`. */
function checkPhoneFields(input: Record<string, unknown>, errors: string[]): void {
  const telephony = input.mode === 'telephony';
  if (telephony && input.toPhone === undefined) errors.push('toPhone: required with mode telephony (the E.164 number the agent calls)');
  if (!telephony && input.toPhone !== undefined && input.toPhone !== null) errors.push('toPhone: only with mode telephony');
  if (!telephony && input.fromNumber !== undefined) errors.push('fromNumber: only with mode telephony');
}

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
  checkPhoneFields(input, errors);
  const mode = (input.mode ?? 'webcall') as TestCallRequest['mode'];
  const vars = parseCallVariables(input.variables);
  for (const e of vars.errors) if (!errors.includes(e)) errors.push(e);
  if (errors.length) throw badRequest(errors);
  const chosen = includeDraft === true ? 'draft' : (target as 'draft' | 'revision' | undefined) ?? (revisionId !== undefined ? 'revision' : undefined);
  return {
    ...(chosen !== undefined ? { target: chosen } : {}),
    ...(revisionId !== undefined ? { revisionId: revisionId as string } : {}),
    mode,
    variables: vars.variables,
    ...(typeof input.toPhone === 'string' ? { toPhone: input.toPhone } : {}),
    ...(typeof input.fromNumber === 'string' ? { fromNumber: input.fromNumber } : {}),
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

/** `POST /agent/{id}/branches/{branchId}/test-call`: resolve, then mint (or, mode telephony, place the call). */
export async function mintTestCall(db: Db, actor: Actor, agentId: string, branchId: string, req: TestCallRequest, host: string, telephony: QueueTestCall | null): Promise<TestCallGrant | TelephonyTestCall> {
  const resolved = await resolveTestCall(db, actor, agentId, branchId, req);
  if (req.mode === 'telephony') {
    if (!telephony) throw new ApiError(503, 'Telephony is off on this server (PARLEY_SIP_PORT=off): it places no calls');
    return placeTelephonyTestCall(db, actor, resolved, { toPhone: req.toPhone as string, fromNumber: req.fromNumber, variables: req.variables }, telephony);
  }
  return grantTestCall(db, actor, resolved, req.mode, req.variables, host);
}

/** Legacy v1 `POST /agent/{id}/drafts/{draftId}/test-call` and `/versions/{versionId}/test-call` (a versionId is a revisionId). */
export async function mintV1TestCall(
  db: Db,
  actor: Actor,
  agentId: string,
  of: { draftId: string } | { versionId: string },
  body: unknown,
  host: string,
  telephony: QueueTestCall | null,
): Promise<TestCallGrant | TelephonyTestCall> {
  const { errors } = checkBody(v1TestCallBody, body);
  if (errors[0] === NOT_AN_OBJECT) throw badRequest(errors);
  const input = body as Record<string, unknown>;
  checkPhoneFields(input, errors);
  const mode = (input.mode ?? 'webcall') as TestCallRequest['mode'];
  const vars = parseCallVariables(input.variables);
  for (const e of vars.errors) if (!errors.includes(e)) errors.push(e);
  if (errors.length) throw badRequest(errors);
  const target: CallTarget = 'draftId' in of ? { kind: 'v1draft', draftId: of.draftId } : { kind: 'revision', revisionId: of.versionId };
  const resolved: ResolvedTestCall = { ...(await resolveCallConfig(db, actor, agentId, target)), target: 'draftId' in of ? 'draft' : 'revision' };
  if (mode === 'telephony') {
    if (!telephony) throw new ApiError(503, 'Telephony is off on this server (PARLEY_SIP_PORT=off): it places no calls');
    return placeTelephonyTestCall(db, actor, resolved, { toPhone: input.toPhone as string, fromNumber: input.fromNumber as string | undefined, variables: vars.variables }, telephony);
  }
  return grantTestCall(db, actor, resolved, mode, vars.variables, host);
}

/** Queues an outbound call (the outbound route's checks, pace and queue) pinned to a resolved configuration. */
export type QueueTestCall = (actor: Actor, body: Record<string, unknown>, pinned: { revisionId: string | null }) => Promise<{ conversationId: string }>;

export interface TelephonyTestCall {
  conversationId: string;
  callId: string;
  mode: 'telephony';
  toPhone: string;
  fromNumber: string;
  target: ResolvedTestCall['target'];
  revisionId: string | null;
  draftId: string | null;
  branchId: string | null;
}

/**
 * A telephony test call: an outbound call from the agent's number (`fromNumber`, else its first caller ID, else a
 * number that answers to it and that the organization dials from) to `toPhone`, running exactly the resolved draft or
 * revision. It goes through the outbound queue like any call (pace, do-not-call list, record `isTest`).
 */
export async function placeTelephonyTestCall(
  db: Db,
  actor: Actor,
  resolved: ResolvedTestCall,
  req: { toPhone: string; fromNumber?: string; variables: CallVariables },
  queue: QueueTestCall,
): Promise<TelephonyTestCall> {
  const agentId = resolved.agent.id;
  let fromNumber = req.fromNumber;
  if (fromNumber === undefined) {
    const candidates = [...(await callerIdsOf(db, agentId)).map((c) => c.phoneNumber), ...(await agentAnswers(db, agentId)).flatMap((a) => a.phoneNumbers)];
    for (const n of candidates) {
      if (await findDialingNumber(db, actor.orgId, n)) {
        fromNumber = n;
        break;
      }
    }
    if (fromNumber === undefined) throw badRequest("fromNumber: required: the agent has no number to call from (add a caller ID with POST /agent/{id}/caller-ids, or send fromNumber)");
  }
  const pinned = resolved.configSource === 'live' ? null : resolved.revisionId;
  const queued = await queue(actor, { agentId, phoneNumber: req.toPhone, fromNumber, variables: req.variables }, { revisionId: pinned });
  return {
    conversationId: queued.conversationId,
    callId: queued.conversationId,
    mode: 'telephony',
    toPhone: req.toPhone,
    fromNumber,
    target: resolved.target,
    revisionId: resolved.revisionId,
    draftId: resolved.configSource === 'draft' ? resolved.revisionId : null,
    branchId: resolved.branchId,
  };
}
