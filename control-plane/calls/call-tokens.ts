// Single-use `wct_` tokens for the agent WebSocket: minted by register-call and test calls, stored only as SHA-256 hashes.
import { createHash, randomUUID } from 'node:crypto';
import type { Db } from '../store/db.js';
import { nowIso } from '../store/ids.js';
import type { CallMode, ConfigSource } from './calls.js';
import type { CallVariables } from './variables.js';

export const CALL_TOKEN_TTL_S = 30;
export const CALL_TOKEN_SAMPLE_RATE = 24000;
/** Used or expired rows are kept this long (for support questions), then deleted on a later mint. */
const RETAIN_MS = 60 * 60 * 1000;

export interface CallTokenInput {
  orgId: string;
  agentId: string;
  mode: CallMode;
  variables: CallVariables;
  configSource: ConfigSource;
  /** The branch a draft or revision came from; null for the live config. */
  branchId: string | null;
  /** The revisions row to run (a draft's id for a draft); null for the live config (resolved at connect time). */
  revisionId: string | null;
  /** The call id the session's record takes (announced by a test call); absent: a new one at connect time. */
  callId?: string | null;
}

export interface CallTokenClaims extends CallTokenInput {
  sampleRate: number;
  expiresAt: string;
  createdAt: string;
}

export interface MintedCallToken {
  token: string;
  expiresIn: number;
  sampleRate: number;
}

export const hashCallToken = (token: string): string => createHash('sha256').update(token).digest('hex');
export const isCallTokenShaped = (value: string): boolean => /^wct_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(value);

export async function mintCallToken(db: Db, input: CallTokenInput): Promise<MintedCallToken> {
  const token = `wct_${randomUUID()}`;
  const now = Date.now();
  await db
    .insertInto('call_tokens')
    .values({
      token_hash: hashCallToken(token),
      org_id: input.orgId,
      agent_id: input.agentId,
      mode: input.mode,
      variables: JSON.stringify(input.variables),
      config_source: input.configSource,
      branch_id: input.branchId,
      revision_id: input.revisionId,
      call_id: input.callId ?? null,
      sample_rate: CALL_TOKEN_SAMPLE_RATE,
      expires_at: new Date(now + CALL_TOKEN_TTL_S * 1000).toISOString(),
      used_at: null,
      created_at: new Date(now).toISOString(),
    })
    .execute();
  await pruneCallTokens(db, now);
  return { token, expiresIn: CALL_TOKEN_TTL_S, sampleRate: CALL_TOKEN_SAMPLE_RATE };
}

/**
 * Redeems a token: one conditional UPDATE marks it used only while unused and unexpired, so of any number of
 * concurrent attempts exactly one sees an affected row. Null when unknown, expired or already used.
 */
export async function consumeCallToken(db: Db, token: string): Promise<CallTokenClaims | null> {
  if (!isCallTokenShaped(token)) return null;
  const hash = hashCallToken(token);
  const now = nowIso();
  const result = await db
    .updateTable('call_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', hash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return null;
  const row = await db.selectFrom('call_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  if (!row) return null;
  return {
    orgId: row.org_id,
    agentId: row.agent_id,
    mode: row.mode as CallMode,
    variables: JSON.parse(row.variables) as CallVariables,
    configSource: row.config_source as ConfigSource,
    branchId: row.branch_id,
    revisionId: row.revision_id,
    callId: row.call_id,
    sampleRate: Number(row.sample_rate),
    expiresAt: row.expires_at,
    createdAt: row.created_at,
  };
}

/** Makes a redeemed token usable again (its session was refused before it began); it still expires as minted. */
export async function restoreCallToken(db: Db, token: string): Promise<void> {
  await db.updateTable('call_tokens').set({ used_at: null }).where('token_hash', '=', hashCallToken(token)).execute();
}

/** Deletes tokens used or expired more than an hour ago. */
async function pruneCallTokens(db: Db, now: number): Promise<void> {
  const cutoff = new Date(now - RETAIN_MS).toISOString();
  await db
    .deleteFrom('call_tokens')
    .where((eb) => eb.or([eb('expires_at', '<', cutoff), eb('used_at', '<', cutoff)]))
    .execute();
}
