// Outbound call routes (wire §4): place a call (queued, paced, dialed), cancel queued or ringing calls, a call's retries.
import type { Actor } from '../../control-plane/agents/agents.js';
import type { HttpServer } from '../http/server.js';
import { docs, ok } from '../http/types.js';
import { z } from 'zod';
import { ApiError, badRequest } from '../../control-plane/errors.js';
import { FINAL_CALL_STATUSES, loadCall, readCall } from '../../control-plane/calls/calls.js';
import { bodyObject, checkBody, says } from '../../control-plane/validation.js';
import { outboundCallBody, queueOutboundCall, retriesOf } from '../../control-plane/telephony/outbound.js';
import type { QueueTestCall } from '../../control-plane/calls/test-calls.js';
import { actorOf, type RouteContext } from './context.js';

const DEPRECATION = { Deprecation: 'true' };
/** Most call ids one bulk cancel takes. */
const MAX_BULK_CANCEL = 100;


/** `POST /conversation/cancel`, our bulk form. */
const cancelBody = z.object({ callIds: z.array(z.string().min(1)).min(1).max(MAX_BULK_CANCEL).describe('Repeated ids are canceled once.') }).passthrough();
/** `POST /conversation/cancel`, the hosted SDK's form: one call, and why (logged). */
const cancelOneBody = bodyObject({
  callId: z.string(says('must be a call id string', 'required')).min(1, 'must not be empty').max(64, 'at most 64 characters').describe('The `callId` of a queued, ringing or answered outbound call.'),
  reason: z.string(says('must be a string')).max(500, 'at most 500 characters').optional().describe('Free text, logged with the cancel.'),
});
const cancelEitherBody = z.union([cancelOneBody, cancelBody]);


/** What these routes ask of the dialer (telephony/outbound/dialer.ts OutboundDialer; the server wires it). */
export interface Dialing {
  wake(paceKey?: string): void;
  cancel(actor: Actor, callId: string): Promise<{ callId: string; canceled: boolean; reason?: string }>;
  cancelCall(actor: Actor, callId: string, reason?: string): Promise<{ callId: string; status: 'cancelled'; previousStatus: string }>;
}
export interface OutboundRouteDeps {
  /** The dialer, once the SIP leg runs; null when it is off (PARLEY_SIP_PORT=off). */
  dialer: Dialing | null;
  /** Calls that may wait per carrier address (PARLEY_OUTBOUND_QUEUE). */
  maxQueuedPerAddress: number;
}

/** How a telephony test call is queued: the outbound route's own checks, queue and pace, pinned to its configuration. */
export function testCallQueue(ctx: RouteContext, deps: OutboundRouteDeps): QueueTestCall {
  return async (actor, body, pinned) => {
    const d = deps.dialer;
    if (!d) throw new ApiError(503, 'Telephony is off on this server (PARLEY_SIP_PORT=off): it places no calls');
    const queued = await queueOutboundCall(
      { db: ctx.db, carrier: ctx.settings.carrier, maxQueuedPerAddress: deps.maxQueuedPerAddress, wake: (key) => d.wake(key) },
      actor,
      body,
      { isTest: true, pinnedRevisionId: pinned.revisionId, phoneField: 'toPhone' },
    );
    return { conversationId: queued.conversationId };
  };
}

export function outboundRoutes(server: HttpServer, prefix: string, ctx: RouteContext, deps: OutboundRouteDeps): void {
  const auth = { auth: 'key' as const };
  const c = `${prefix}/conversation`;
  const d = docs('Outbound calls');
  const dialer = (): Dialing => {
    if (!deps.dialer) throw new ApiError(503, 'Telephony is off on this server (PARLEY_SIP_PORT=off): it places no calls');
    return deps.dialer;
  };

  server.route('POST', `${c}/outbound`, async (req) => {
    const d = dialer();
    const queued = await queueOutboundCall(
      { db: ctx.db, carrier: ctx.settings.carrier, maxQueuedPerAddress: deps.maxQueuedPerAddress, wake: (key) => d.wake(key) },
      actorOf(req),
      req.json(),
      { isTest: (req.headers['x-test-call'] ?? '').toLowerCase() === 'true' },
    );
    return ok({ conversationId: queued.conversationId }, 200, queued.deprecated ? DEPRECATION : undefined);
  }, { ...auth, doc: d('Place an outbound call (queued, paced per carrier address, dialed)', { body: { schema: outboundCallBody }, response: { description: '`{conversationId}`.' } }) });

  server.route('POST', `${c}/cancel`, async (req) => {
    const raw = req.json();
    // The hosted SDK's form: `{callId, reason?}` -> `{callId, status: "cancelled", previousStatus}`; 404 unknown, 400 over.
    if (raw !== null && typeof raw === 'object' && !Array.isArray(raw) && !('callIds' in raw)) {
      const { errors } = checkBody(cancelOneBody, raw);
      if (errors.length) throw badRequest(errors);
      const { callId, reason } = raw as { callId: string; reason?: string };
      return ok(await dialer().cancelCall(actorOf(req), callId, reason));
    }
    const body = cancelBody.safeParse(raw);
    // One message for any fault, as this route has always answered.
    if (!body.success) throw badRequest(`callIds: required, 1-${MAX_BULK_CANCEL} call ids`);
    const ids = body.data.callIds;
    const d = dialer();
    const actor = actorOf(req);
    const results = [];
    for (const id of new Set(ids)) {
      try {
        results.push(await d.cancel(actor, id));
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        results.push({ callId: id, canceled: false, reason: err.status === 404 ? 'not found' : err.message });
      }
    }
    return ok({ results });
  }, { ...auth, doc: d('Cancel an outbound call: `{callId, reason?}` (queued, ringing or answered; answered calls are ended) or our bulk `{callIds}` (queued or ringing)', { body: { schema: cancelEitherBody } }) });

  server.route('POST', `${c}/:id/cancel`, async (req) => {
    const id = req.params.id as string;
    const actor = actorOf(req);
    // As the wire says: this form cancels only calls still in the queue (the body form also rings off and ends).
    const call = await loadCall(ctx.db, actor, id);
    const d = dialer();
    if (call.status !== 'in_queue') {
      throw badRequest(FINAL_CALL_STATUSES.has(call.status) ? `Conversation with ID ${id} is already ${call.status} and cannot be cancelled` : `Conversation with ID ${id} is not in queue and cannot be cancelled`);
    }
    const result = await d.cancel(actor, id);
    if (!result.canceled) throw badRequest(`Conversation with ID ${id} is not in queue and cannot be cancelled (${result.reason})`);
    return ok({ ...result, status: 'cancelled' });
  }, { ...auth, doc: d('Cancel a call still in the queue (path-param form)') });

  server.route('GET', `${c}/:id/retries`, async (req) => {
    const actor = actorOf(req);
    const ids = await retriesOf(ctx.db, actor, req.params.id as string);
    return ok({ retries: await Promise.all(ids.map((id) => readCall(ctx.db, actor, id))) });
  }, { ...auth, doc: d("A call's retries") });
}
