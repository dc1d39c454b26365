// Analytics views of single calls: the paged call log of a period (`call-counts-log`) and one call's transcript and
// event stream (`conversation-details`), rebuilt from its record (no separate event store exists here).
import type { Db } from '../store/db.js';
import type { Actor } from '../agents/agents.js';
import { parseJson } from '../agents/records.js';
import { callDuration, loadCall, type CallMetrics, type CallRow, type TranscriptEntry } from '../calls/calls.js';
import { loadTurns } from '../calls/turns.js';
import type { Filters, Period } from './params.js';
import { callsOf, num } from './query.js';
import type { Run } from './sqlite-readers.js';

/** A record's outcome, as the aggregates count it (query.ts OUTCOME_SQL). */
export function outcomeOf(row: Pick<CallRow, 'status' | 'answered_by' | 'end_reason'>): string {
  const machine = ['voicemail', 'ivr'].includes(row.answered_by ?? '') || ['voicemail', 'ivr'].includes(row.end_reason ?? '');
  switch (row.status) {
    case 'completed':
      return machine ? 'voicemail' : 'answered';
    case 'no_answer':
      return 'noAnswer';
    case 'failed':
      return 'failed';
    case 'cancelled':
      return 'cancelled';
    default:
      return 'inProgress';
  }
}

const durationMs = (row: CallRow): number | null => {
  const s = callDuration(row);
  return s === null ? null : Math.round(s * 1000);
};

/** `call-counts-log`: the period's calls, newest first, a page at a time. */
export async function callCountsLog(db: Db, run: Run, orgId: string, filters: Filters, period: Period, page: number, limit: number) {
  const q = callsOf(db, orgId, filters, period);
  const totalCalls = num((await run(q.select((eb) => eb.fn.countAll().as('n'))))[0]?.n);
  const rows = await run(
    q
      .select(['id', 'call_id', 'agent_id', 'status', 'type', 'mode', 'is_test', 'from_number', 'to_number', 'duration_s', 'started_at', 'ended_at', 'end_reason', 'answered_by', 'created_at'])
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .offset((page - 1) * limit),
  );
  const agentIds = [...new Set(rows.map((r) => r.agent_id))];
  const callIds = rows.filter((r) => r.type === 'telephony_outbound').map((r) => r.call_id);
  const [agents, outbound] = await Promise.all([
    agentIds.length ? db.selectFrom('agents').select(['id', 'name']).where('id', 'in', agentIds).execute() : [],
    callIds.length ? db.selectFrom('outbound_calls').select(['call_id', 'campaign_id']).where('call_id', 'in', callIds).execute() : [],
  ]);
  const names = new Map(agents.map((a) => [a.id, a.name] as const));
  const campaigns = new Map(outbound.map((o) => [o.call_id, o.campaign_id] as const));
  const calls = rows.map((r) => ({
    _id: r.id,
    callId: r.call_id,
    agentId: r.agent_id,
    agentName: names.get(r.agent_id) ?? null,
    campaignId: campaigns.get(r.call_id) ?? null,
    callType: r.type,
    mode: r.mode,
    status: r.status,
    outcome: outcomeOf(r),
    fromNumber: r.from_number,
    toNumber: r.to_number,
    durationMs: durationMs(r as CallRow),
    disconnectionReason: r.end_reason,
    answeredBy: r.answered_by,
    isTest: Boolean(r.is_test),
    startedAt: r.started_at,
    endedAt: r.ended_at,
    createdAt: r.created_at,
  }));
  return { calls, totalCalls, totalPages: Math.ceil(totalCalls / limit), currentPage: page, limit };
}

type Event = { type: string; timestamp: string | null; [field: string]: unknown };

/**
 * `conversation-details/{callId}`: the transcript (a running call's from its turn rows) and the call's events in time
 * order: `call_started`, each `user_message` / `agent_message`, each turn's `turn_metrics` (latencies as the runtime
 * measured them), `knowledge_base_search`, and `call_ended` with the status and reason.
 */
export async function conversationDetails(db: Db, actor: Actor, callId: string) {
  const row = await loadCall(db, actor, callId);
  const agent = await db.selectFrom('agents').select(['name', 'workflow_type']).where('id', '=', row.agent_id).executeTakeFirst();
  const transcript = row.ended_at === null ? await loadTurns(db, row.call_id) : (parseJson<TranscriptEntry[]>(row.transcript) ?? []);
  const metrics = parseJson<CallMetrics>(row.metrics);
  const events: Event[] = [{ type: 'call_started', timestamp: row.started_at, callType: row.type, mode: row.mode }];
  for (const t of transcript) {
    events.push({ type: t.role === 'user' ? 'user_message' : 'agent_message', timestamp: t.timestamp, content: t.content, ...(t.interrupted ? { interrupted: true } : {}) });
  }
  for (const [i, m] of (Array.isArray(metrics?.turns) ? metrics.turns : []).entries()) {
    const at = typeof m.botStart === 'string' ? m.botStart : typeof m.userEnd === 'string' ? m.userEnd : null;
    events.push({ type: 'turn_metrics', timestamp: at, turn: typeof m.turn === 'number' ? m.turn : i + 1, metrics: m });
  }
  for (const s of Array.isArray(metrics?.knowledgeBaseSearches) ? (metrics.knowledgeBaseSearches as Record<string, unknown>[]) : []) {
    events.push({ type: 'knowledge_base_search', timestamp: typeof s.at === 'string' ? s.at : null, ...s });
  }
  if (row.ended_at) events.push({ type: 'call_ended', timestamp: row.ended_at, status: row.status, reason: row.end_reason, ...(row.answered_by ? { answeredBy: row.answered_by } : {}) });
  // Stable time order; an event without a time stays after the one before it.
  const keyed = events.map((e, i) => ({ e, i, t: e.timestamp ? Date.parse(e.timestamp) : NaN }));
  let last = -Infinity;
  for (const k of keyed) last = k.t = Number.isFinite(k.t) ? k.t : last;
  keyed.sort((a, b) => a.t - b.t || a.i - b.i);
  return {
    orgId: row.org_id,
    callId: row.call_id,
    agentId: row.agent_id,
    agentName: agent?.name ?? null,
    workflowType: agent?.workflow_type ?? null,
    status: row.status,
    outcome: outcomeOf(row),
    callType: row.type,
    transcript: transcript.map((t) => ({ role: t.role, content: t.content, timestamp: t.timestamp, ...(t.interrupted ? { interrupted: true } : {}) })),
    events: keyed.map((k) => k.e),
    fromNumber: row.from_number,
    toNumber: row.to_number,
    callDurationMs: durationMs(row),
    startedAt: row.started_at,
    endedAt: row.ended_at,
  };
}
