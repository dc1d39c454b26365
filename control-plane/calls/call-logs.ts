// GET /agent/{id}/call-logs: one agent's calls, newest first, in the short shape its clients parse (`success`, ms durations).
import type { Db } from '../store/db.js';
import { loadAgent, type Actor } from '../agents/agents.js';
import { intParam } from '../query.js';
import { callDuration } from './calls.js';

export interface AgentCallLogs {
  callLogs: { callId: string; callStatus: string; callType: string; fromNumber: string | null; toNumber: string | null; createdAt: string; callDuration: number }[];
  totalCount: number;
  page: number;
  offset: number;
}

/** `page` (from 1) and `offset` (the page size, 10 by default as on the agent list); 404/403 for an unknown or foreign agent. */
export async function agentCallLogs(db: Db, actor: Actor, agentId: string, query: URLSearchParams): Promise<AgentCallLogs> {
  const page = intParam(query, 'page', 1, 1, 1_000_000);
  const offset = intParam(query, 'offset', 10, 1, 100);
  await loadAgent(db, actor, agentId);
  const base = db.selectFrom('calls').where('org_id', '=', actor.orgId).where('agent_id', '=', agentId);
  const totalCount = Number((await base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const rows = await base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(offset).offset((page - 1) * offset).execute();
  return {
    callLogs: rows.map((row) => ({
      callId: row.call_id,
      callStatus: row.status,
      callType: row.type,
      fromNumber: row.from_number,
      toNumber: row.to_number,
      createdAt: row.created_at,
      // Milliseconds; 0 while the call is still running.
      callDuration: Math.round((callDuration(row) ?? 0) * 1000),
    })),
    totalCount,
    page,
    offset,
  };
}
