// Outbound call routes (wire §4): place a call (queued, paced, dialed), cancel queued or ringing calls, a call's retries.
import type { HttpServer } from '../http/server.js';
import { docs, ok } from '../http/types.js';
import { z } from 'zod';
import { ApiError, badRequest } from '../../control-plane/errors.js';
import { readCall } from '../../control-plane/calls/calls.js';
import { outboundCallBody, queueOutboundCall, retriesOf } from '../../control-plane/telephony/outbound.js';
import type { OutboundDialer } from '../../telephony/outbound/dialer.js';
import { actorOf, type RouteContext } from './context.js';

const DEPRECATION = { Deprecation: 'true' };
/** Most call ids one bulk cancel takes. */
const MAX_BULK_CANCEL = 100;

/** `POST /conversation/cancel`. */
const cancelBody = z.object({ callIds: z.array(z.string().min(1)).min(1).max(MAX_BULK_CANCEL).describe('Repeated ids are canceled once.') }).passthrough();

export interface OutboundRouteDeps {
  /** The dialer, once the SIP leg runs; null when it is off (PARLEY_SIP_PORT=off). */
  dialer: OutboundDialer | null;
  /** Calls that may wait per carrier address (PARLEY_OUTBOUND_QUEUE). */
  maxQueuedPerAddress: number;
}

export function outboundRoutes(server: HttpServer, prefix: string, ctx: RouteContext, deps: OutboundRouteDeps): void {
  const auth = { auth: 'key' as const };
  const c = `${prefix}/conversation`;
  const d = docs('Outbound calls');
  const dialer = (): OutboundDialer => {
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
    const body = cancelBody.safeParse(req.json());
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
  }, { ...auth, doc: d('Cancel queued or ringing calls', { body: { schema: cancelBody } }) });

  server.route('POST', `${c}/:id/cancel`, async (req) => {
    const result = await dialer().cancel(actorOf(req), req.params.id as string);
    if (!result.canceled) throw badRequest(`This call cannot be canceled: ${result.reason}`);
    return ok(result);
  }, { ...auth, doc: d('Cancel a queued or ringing call') });

  server.route('GET', `${c}/:id/retries`, async (req) => {
    const actor = actorOf(req);
    const ids = await retriesOf(ctx.db, actor, req.params.id as string);
    return ok({ retries: await Promise.all(ids.map((id) => readCall(ctx.db, actor, id))) });
  }, { ...auth, doc: d("A call's retries") });
}
