// Do-not-call list routes (`GET /dnc` as the hosted reference has it; add, read and remove as we designed them): the
// organization's numbers it must not call, for every call or one agent's. Logic in control-plane/telephony/dnc.ts.
import type { HttpServer } from '../http/server.js';
import { docs, ok } from '../http/types.js';
import { addDncEntries, deleteDnc, deleteDncByNumber, dncAddBody, endListedRecord, getDnc, listDnc, MAX_DNC_BATCH } from '../../control-plane/telephony/dnc.js';
import type { CallRuntime } from '../../calls/runtime.js';
import { actorOf, type RouteContext } from './context.js';

export interface DncRouteDeps {
  /** Records the calls a listing took out of the outbound queue (their webhooks as for any canceled queued call); set once the runtime exists. */
  runtime: CallRuntime | null;
}

const AGENT_QUERY = { name: 'agentId', description: '24-character hex agent id: only the entries for this agent (400 malformed, 404 not an agent of your organization).', schema: { type: 'string', pattern: '^[0-9a-fA-F]{24}$' } };

export function dncRoutes(server: HttpServer, prefix: string, ctx: RouteContext, deps: DncRouteDeps): void {
  const auth = { auth: 'key' as const };
  const d = docs('Do-not-call list');
  const p = `${prefix}/dnc`;

  server.route('GET', p, async (req) => ok(await listDnc(ctx.db, actorOf(req), req.query)), {
    ...auth,
    doc: d('List do-not-call entries (paged, searched by number, sorted)', {
      query: [
        AGENT_QUERY,
        { name: 'search', description: 'Digits looked for anywhere in the numbers (other characters are ignored).' },
        { name: 'sortField', schema: { type: 'string', enum: ['createdAt', 'phoneNumber'], default: 'createdAt' } },
        { name: 'sortOrder', schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' } },
        { name: 'page', description: 'From 1.', schema: { type: 'string', pattern: '^[0-9]+$', default: '1' } },
        { name: 'offset', description: 'Page size; clamped to 1-500.', schema: { type: 'string', pattern: '^[0-9]+$', default: '20' } },
      ],
      response: { description: '`{entries: [{_id, phoneNumber, agentId, reason, source, createdBy, createdAt}], pagination: {page, offset, total, totalPages, hasMore}}`.' },
    }),
  });

  server.route('POST', p, async (req) => {
    const actor = actorOf(req);
    const added = await addDncEntries(ctx.db, actor, req.json());
    // Calls of these numbers still waiting in the outbound queue left it: recorded as cancelled, reason dnc.
    for (const row of added.closed) {
      const call = { orgId: row.org_id, agentId: row.agent_id, type: 'telephony_outbound' as const, fromNumber: row.from_number, toNumber: row.to_number, callId: row.call_id };
      try {
        if (deps.runtime) await deps.runtime.recordUnanswered(call, { status: 'cancelled', reason: 'dnc' });
        else await endListedRecord(ctx.db, row.call_id);
      } catch (err) {
        ctx.logger.warn({ callId: row.call_id, err: err instanceof Error ? err.message : String(err) }, 'could not record a queued call taken back for the do-not-call list');
      }
    }
    const { entries, existing } = added;
    return ok({ entries, added: added.added, existing, cancelledCallIds: added.closed.map((r) => r.call_id) }, added.added > 0 ? 201 : 200);
  }, {
    ...auth,
    doc: d('Add numbers to the do-not-call list', {
      description: `\`{phoneNumber}\` or a batch \`{phoneNumbers}\` (up to ${MAX_DNC_BATCH}), for the whole organization or one \`agentId\`; numbers are normalized to E.164. A number already listed in that scope is not listed twice. Calls of these numbers still waiting in the outbound queue are cancelled (reason \`dnc\`).`,
      body: { schema: dncAddBody },
      response: { status: 201, description: '`{entries, added, existing, cancelledCallIds}` (200 when every number was already listed).' },
    }),
  });

  server.route('GET', `${p}/:id`, async (req) => ok(await getDnc(ctx.db, actorOf(req), req.params.id as string)), { ...auth, doc: d('Read a do-not-call entry') });

  server.route('DELETE', `${p}/:id`, async (req) => ok(await deleteDnc(ctx.db, actorOf(req), req.params.id as string)), {
    ...auth,
    doc: d('Remove a do-not-call entry', { response: { description: '`{deleted: 1, entries: [the entry removed]}`.' } }),
  });

  server.route('DELETE', p, async (req) => ok(await deleteDncByNumber(ctx.db, actorOf(req), req.query)), {
    ...auth,
    doc: d("Remove a number's do-not-call entry in one scope", {
      query: [{ name: 'phoneNumber', required: true, description: 'The number (normalized as when added).' }, { ...AGENT_QUERY, description: "That agent's entry; omitted: the organization-wide one." }],
      response: { description: '`{deleted: 1, entries: [the entry removed]}`; 404 when the number is not listed in that scope.' },
    }),
  });
}
