// Call records: create and update (the runtime), read one (GET /conversation/{id}) in the wire's shape; lists are in call-list.ts.
import { randomBytes } from 'node:crypto';
import type { Selectable, Updateable } from 'kysely';
import type { Db, Tx } from '../store/db.js';
import type { CallsTable } from '../store/schema.js';
import { newId, nowIso } from '../store/ids.js';
import { forbidden, notFound } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { parseJson } from '../agents/records.js';
import { recordingIdentifier } from '../recordings/object-store.js';
import { loadTurns } from './turns.js';

export type CallRow = Selectable<CallsTable>;
export const CALL_STATUSES = ['pending', 'in_progress', 'in_queue', 'processing', 'active', 'completed', 'failed', 'no_answer', 'cancelled'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];
/** Statuses a call ends in: nothing (a cancel, a retry) changes it after. */
export const FINAL_CALL_STATUSES: ReadonlySet<string> = new Set<CallStatus>(['completed', 'failed', 'no_answer', 'cancelled']);
export const CALL_TYPES = ['webcall', 'telephony_inbound', 'telephony_outbound'] as const;
export type CallType = (typeof CALL_TYPES)[number];
export type CallMode = 'webcall' | 'chat';
export type ConfigSource = 'live' | 'draft' | 'revision';

export interface TranscriptEntry {
  role: 'user' | 'agent';
  content: string;
  /** ISO time. */
  timestamp: string;
  interrupted?: boolean;
}

/**
 * One turn's latency record as the runtime stores it (the engine's TurnMetrics; other fields pass through).
 * `e2eMs` (end of user speech to first agent audio) feeds `turnLatencyMetrics`; `userEnd` / `botStart` (ISO times, or
 * ms from the start of the call) its transitions.
 */
export interface TurnMetric {
  turn?: number;
  e2eMs?: number | null;
  userEnd?: string | number | null;
  botStart?: string | number | null;
}

export interface CallMetrics {
  turns: TurnMetric[];
  processedAt?: string;
  [field: string]: unknown;
}

export interface NewCall {
  orgId: string;
  agentId: string;
  branchId?: string | null;
  revisionId?: string | null;
  configSource: ConfigSource;
  type: CallType;
  mode: CallMode;
  isTest: boolean;
  variables: Record<string, unknown>;
  voiceConfig: Record<string, unknown>;
  slmModel?: string | null;
  fromNumber?: string | null;
  toNumber?: string | null;
  /** A call id announced before the call started (from newCallId()); a new one otherwise. */
  callId?: string;
  /** The record's first status (`in_progress`; an outbound call waiting for its dialer is `in_queue`). */
  status?: CallStatus;
}

export interface CallPatch {
  status?: CallStatus;
  transcript?: TranscriptEntry[];
  variables?: Record<string, unknown>;
  metrics?: CallMetrics | null;
  endReason?: string | null;
  /** Voicemail detection's verdict (human, voicemail, ivr, silence). */
  answeredBy?: string | null;
  endedAt?: string | null;
  durationS?: number | null;
  recordingMono?: string | null;
  recordingDual?: string | null;
}

/** `CALL-<13-digit epoch ms>-<6 lowercase hex>`. */
export const newCallId = (): string => `CALL-${Date.now()}-${randomBytes(3).toString('hex')}`;
export const isCallId = (value: string): boolean => /^CALL-\d{13}-[0-9a-f]{6}$/.test(value);

export async function createCall(db: Db | Tx, input: NewCall): Promise<{ id: string; callId: string }> {
  if (input.callId !== undefined && !isCallId(input.callId)) throw new Error(`not a call id: ${input.callId}`);
  const id = newId();
  const callId = input.callId ?? newCallId();
  const now = nowIso();
  await db
    .insertInto('calls')
    .values({
      id,
      call_id: callId,
      org_id: input.orgId,
      agent_id: input.agentId,
      branch_id: input.branchId ?? null,
      revision_id: input.revisionId ?? null,
      config_source: input.configSource,
      type: input.type,
      mode: input.mode,
      is_test: input.isTest ? 1 : 0,
      status: input.status ?? 'in_progress',
      from_number: input.fromNumber ?? null,
      to_number: input.toNumber ?? null,
      started_at: now,
      ended_at: null,
      duration_s: null,
      end_reason: null,
      answered_by: null,
      transcript: '[]',
      variables: JSON.stringify(input.variables),
      metrics: null,
      voice_config: JSON.stringify(input.voiceConfig),
      slm_model: input.slmModel ?? null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return { id, callId };
}

/**
 * An outbound call's queued record becomes the running call: the fields createCall sets, status `in_progress`, started
 * now. False when the record is gone or no longer waiting (canceled meanwhile).
 */
export async function activateQueuedCall(db: Db | Tx, input: NewCall & { callId: string }): Promise<boolean> {
  const now = nowIso();
  const result = await db
    .updateTable('calls')
    .set({
      branch_id: input.branchId ?? null,
      revision_id: input.revisionId ?? null,
      config_source: input.configSource,
      status: 'in_progress',
      started_at: now,
      variables: JSON.stringify(input.variables),
      voice_config: JSON.stringify(input.voiceConfig),
      slm_model: input.slmModel ?? null,
      updated_at: now,
    })
    .where('call_id', '=', input.callId)
    .where('status', 'in', ['in_queue', 'processing'])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Applies the given fields (others unchanged); false when no call has this call id. */
export async function updateCall(db: Db | Tx, callId: string, patch: CallPatch): Promise<boolean> {
  const result = await db.updateTable('calls').set(callSet(patch)).where('call_id', '=', callId).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** As updateCall, only while the record is not final: false when it is (another server finished it first) or absent. */
export async function updateOpenCall(db: Db | Tx, callId: string, patch: CallPatch): Promise<boolean> {
  const result = await db
    .updateTable('calls')
    .set(callSet(patch))
    .where('call_id', '=', callId)
    .where('status', 'not in', [...FINAL_CALL_STATUSES])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

function callSet(patch: CallPatch): Updateable<CallsTable> {
  const set: Updateable<CallsTable> = { updated_at: nowIso() };
  if (patch.status !== undefined) set.status = patch.status;
  if (patch.transcript !== undefined) set.transcript = JSON.stringify(patch.transcript);
  if (patch.variables !== undefined) set.variables = JSON.stringify(patch.variables);
  if (patch.metrics !== undefined) set.metrics = patch.metrics === null ? null : JSON.stringify(patch.metrics);
  if (patch.endReason !== undefined) set.end_reason = patch.endReason;
  if (patch.answeredBy !== undefined) set.answered_by = patch.answeredBy;
  if (patch.endedAt !== undefined) set.ended_at = patch.endedAt;
  if (patch.durationS !== undefined) set.duration_s = patch.durationS;
  if (patch.recordingMono !== undefined) set.recording_mono = patch.recordingMono;
  if (patch.recordingDual !== undefined) set.recording_dual = patch.recordingDual;
  return set;
}

export async function loadCall(db: Db, actor: Actor, callId: string): Promise<CallRow> {
  const row = await db.selectFrom('calls').selectAll().where('call_id', '=', callId).executeTakeFirst();
  if (!row) throw notFound('Conversation not found');
  if (row.org_id !== actor.orgId) throw forbidden('This API key has no access to this conversation');
  return row;
}

type AgentBrief = { _id: string; name: string; workflowType: string } | null;

export async function readCall(db: Db, actor: Actor, callId: string): Promise<Record<string, unknown>> {
  const row = await loadCall(db, actor, callId);
  const agents = await agentBriefs(db, [row.agent_id]);
  // A running call's transcript is in its turn rows; an ended call's record holds it whole.
  const transcript = row.ended_at === null ? await loadTurns(db, row.call_id) : (parseJson<TranscriptEntry[]>(row.transcript) ?? []);
  // A campaign's retry of this call (the next attempt at the same recipient), once placed.
  const retry = await db.selectFrom('outbound_calls').select('call_id').where('retry_of', '=', row.call_id).executeTakeFirst();
  return callDto(row, agents.get(row.agent_id) ?? null, transcript, retry?.call_id ?? null);
}

async function agentBriefs(db: Db, ids: string[]): Promise<Map<string, AgentBrief>> {
  const unique = [...new Set(ids)];
  if (!unique.length) return new Map();
  const rows = await db.selectFrom('agents').select(['id', 'name', 'workflow_type']).where('id', 'in', unique).execute();
  return new Map(rows.map((a) => [a.id, { _id: a.id, name: a.name, workflowType: a.workflow_type }]));
}

/** The call's duration in seconds: as recorded, else from its end time; null while it runs. */
export const callDuration = (row: CallRow): number | null =>
  row.duration_s ?? (row.ended_at ? (Date.parse(row.ended_at) - Date.parse(row.started_at)) / 1000 : null);

/** The post-call analytics the runtime stored in the call's metrics, if any. */
export const postCallAnalytics = (metrics: CallMetrics | null): Record<string, unknown> | null =>
  metrics && typeof metrics.analytics === 'object' && metrics.analytics ? (metrics.analytics as Record<string, unknown>) : null;

function callDto(row: CallRow, agent: AgentBrief, entries: TranscriptEntry[], retryCallId: string | null): Record<string, unknown> {
  const metrics = parseJson<CallMetrics>(row.metrics);
  const transcript = entries.map((t) => ({ role: t.role, content: t.content, timestamp: t.timestamp, ...(t.interrupted ? { interrupted: true } : {}) }));
  const duration = callDuration(row);
  return {
    _id: row.id,
    callId: row.call_id,
    agent,
    status: row.status,
    duration,
    recordingUrl: row.recording_mono ? recordingIdentifier(row.recording_mono) : null,
    recordingDualUrl: row.recording_dual ? recordingIdentifier(row.recording_dual) : null,
    from: row.from_number,
    to: row.to_number,
    type: row.type,
    transcript,
    variables: parseJson<Record<string, unknown>>(row.variables) ?? {},
    events: [],
    callCost: 0,
    callFailureReason: row.status === 'failed' ? row.end_reason : null,
    retryCallId,
    postCallAnalytics: postCallAnalytics(metrics),
    // The agent's pre-call API, when it has one: `{ok, status, latencyMs, error, variables}` (the names it set).
    preCallApi: (metrics?.preCallApi as Record<string, unknown> | undefined) ?? null,
    // Knowledge-base searches the call made (calls/knowledge-tool.ts): tool, knowledge bases, query, the chunks found.
    ...(Array.isArray(metrics?.knowledgeBaseSearches) ? { knowledgeBaseSearches: metrics.knowledgeBaseSearches } : {}),
    turnLatencyMetrics: turnLatencyMetrics(metrics, row.updated_at, row.started_at),
    turnMetrics: Array.isArray(metrics?.turns) ? metrics.turns : null,
    voiceConfigUsed: parseJson<Record<string, unknown>>(row.voice_config),
    slmModelUsed: row.slm_model,
    mode: row.mode,
    isTest: Boolean(row.is_test),
    configSource: row.config_source,
    branchId: row.branch_id,
    revisionId: row.revision_id,
    endReason: row.end_reason,
    // Voicemail detection (outbound calls of agents with voiceMailDetectionConfig.enabled): its verdict and why.
    answeredBy: row.answered_by ?? null,
    answerDetection: (metrics?.answerDetection as Record<string, unknown> | undefined) ?? null,
    startedAt: row.started_at,
    endedAt: row.ended_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A transition time as ms from the start of the call (`startedAt`, ISO); a number is taken as that offset already. */
function msFromStart(at: string | number | null | undefined, startedAt: string): number | null {
  if (typeof at === 'number') return Number.isFinite(at) ? Math.round(at) : null;
  if (typeof at !== 'string') return null;
  const ms = Date.parse(at) - Date.parse(startedAt);
  return Number.isFinite(ms) ? ms : null;
}

/**
 * The wire's `turnLatencyMetrics` (ms) from the turns that have an end-to-end latency; null when there are none.
 * Transitions' `user_end` / `bot_start` are ms from `startedAt` (the call's start).
 */
export function turnLatencyMetrics(metrics: CallMetrics | null, fallbackProcessedAt: string, startedAt: string): Record<string, unknown> | null {
  if (!metrics || !Array.isArray(metrics.turns)) return null;
  const timed = metrics.turns
    .map((t, i) => ({ t, turn: typeof t.turn === 'number' ? t.turn : i + 1 }))
    .filter(({ t }) => typeof t.e2eMs === 'number' && Number.isFinite(t.e2eMs));
  if (!timed.length) return null;
  const latencies = timed.map(({ t }) => t.e2eMs as number);
  const sorted = [...latencies].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return {
    turns: timed.length,
    avgLatency: latencies.reduce((a, b) => a + b, 0) / latencies.length,
    medianLatency: median,
    minLatency: sorted[0],
    maxLatency: sorted[sorted.length - 1],
    latencies,
    transitions: timed.map(({ t, turn }) => ({ turn, user_end: msFromStart(t.userEnd, startedAt), bot_start: msFromStart(t.botStart, startedAt), latency: t.e2eMs })),
    processedAt: metrics.processedAt ?? fallbackProcessedAt,
  };
}
