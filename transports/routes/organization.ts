// The organization surfaces of the hosted reference: `GET /user`, `GET /organization`, `GET /concurrency`,
// `PUT /concurrency/reservations` and `GET /disposition-metric-templates`. Logic in control-plane/organization/;
// the reservations are enforced by the session caps (calls/session-limits.ts), which this file keeps in step with
// the store (at start, after each change, and every RELOAD_MS for changes made through another server).
import type { HttpServer } from '../http/server.js';
import { docs, ok, type HttpRequest, type HttpResponse } from '../http/types.js';
import { actorOf, type RouteContext } from './context.js';
import { organizationDetails, userDetails } from '../../control-plane/organization/details.js';
import { DISPOSITION_METRIC_TEMPLATES } from '../../control-plane/organization/metric-templates.js';
import { allReservations, orgReservations, RESERVATION_CHANNELS, reservationsBody, speechPlaces, updateReservations, type Reservation } from '../../control-plane/organization/concurrency.js';
import type { ChannelCounts, SessionLimits } from '../../calls/session-limits.js';

/** How often a server re-reads every organization's reservations (a change made through another server). */
const RELOAD_MS = 10_000;

/** `{success: true, data}`: the envelope the reference shows for these routes (errors keep the usual one). */
const success = (data: unknown): HttpResponse => ({ status: 200, body: { success: true, data } });
const SUCCESS_DOC = { type: 'object', properties: { success: { const: true }, data: {} } } as const;

function callerOf(req: HttpRequest) {
  if (!req.auth) throw new Error('route requires authentication');
  return { orgId: req.auth.orgId, keyId: req.auth.keyId, keyName: req.auth.keyName, via: req.auth.via };
}

async function reload(ctx: RouteContext, limits: SessionLimits): Promise<void> {
  const all = await allReservations(ctx.db);
  limits.replaceReservations(all);
}

export async function organizationRoutes(server: HttpServer, prefix: string, ctx: RouteContext, limits: SessionLimits): Promise<void> {
  const auth = { auth: 'key' as const };
  const d = docs('Organization');

  await reload(ctx, limits);
  const timer = setInterval(() => void reload(ctx, limits).catch(() => undefined), RELOAD_MS);
  timer.unref();

  server.route('GET', `${prefix}/user`, async (req) => ok(await userDetails(ctx.db, callerOf(req))), {
    ...auth,
    doc: d('The caller (its API key: there are no user accounts here)', {
      response: { description: '`{_id (key id), firstName (key name), lastName: "", userEmail: null, authProvider (api_key | access_token | console_session), isEmailVerified: false, organizationId, keyName, createdAt}`.' },
    }),
  });

  server.route('GET', `${prefix}/organization`, async (req) => ok(await organizationDetails(ctx.db, callerOf(req))), {
    ...auth,
    doc: d("The caller's organization", {
      description: '`_id` is what `POST /agent/{id}/duplicate` takes as `targetOrganizationId`.',
      response: { description: '`{_id, name, members: [{_id, name, type: "api_key", isCaller, createdAt, lastUsedAt}], subscription: {planId: "self-hosted"}, createdAt}`.' },
    }),
  });

  server.route('GET', `${prefix}/disposition-metric-templates`, async () => success(DISPOSITION_METRIC_TEMPLATES), {
    ...auth,
    doc: d('Disposition metric templates for postCallAnalyticsConfig', {
      description: 'Each `{identifier, dispositionMetricPrompt, dispositionMetricType, extractor}`: the `extractor` is how post-call analytics compute it without a language model.',
      response: { description: '`{success: true, data: [template]}`.', schema: SUCCESS_DOC },
    }),
  });

  server.route('GET', `${prefix}/concurrency`, async (req) => {
    const actor = actorOf(req);
    await reload(ctx, limits);
    const now = limits.orgConcurrency(actor.orgId);
    const rows = await orgReservations(ctx.db, actor.orgId);
    const reserved = new Map(rows.map((r) => [r.agentId, r] as const));
    const activeOnly = [...now.active.keys()].filter((id) => !reserved.has(id));
    const names = activeOnly.length ? await ctx.db.selectFrom('agents').select(['id', 'name']).where('id', 'in', activeOnly).execute() : [];
    const none: Reservation = { webcall: 0, outbound: 0, inbound: 0, chat: 0 };
    const activeOf = (id: string): ChannelCounts => now.active.get(id) ?? { webcall: 0, inbound: 0, outbound: 0, chat: 0 };
    const agents = [
      ...rows.map((r) => ({ agentId: r.agentId, agentName: r.agentName, avatarUrl: r.avatarUrl, ...r.reservation, active: pick(activeOf(r.agentId)) })),
      ...names.map((a) => ({ agentId: a.id, agentName: a.name, avatarUrl: null, ...none, active: pick(activeOf(a.id)) })),
    ];
    const totalReserved = rows.reduce((n, r) => n + speechPlaces(r.reservation) + r.reservation.chat, 0);
    return success({
      orgLimit: now.orgLimit,
      totalReserved,
      unreservedPool: Math.max(0, now.orgLimit - totalReserved),
      agents,
      active: now.activeTotal,
      serverLimit: now.serverLimit,
    });
  }, {
    ...auth,
    doc: d("The organization's concurrent speech-session limit, its agents' reservations and what is in use", {
      description:
        '`orgLimit` is the per-organization speech cap (PARLEY_MAX_SPEECH_SESSIONS_PER_KEY) on this server; `agents[]` lists each agent with a reservation or a call up: ' +
        '`{agentId, agentName, avatarUrl, webcall, outbound, inbound, chat}` (reserved places) and `active` (calls up per channel). `active` is the organization\'s speech calls up, ' +
        '`serverLimit` the server\'s cap (other organizations\' use is not shown).',
      response: { description: '`{success: true, data: {orgLimit, totalReserved, unreservedPool, agents, active, serverLimit}}`.', schema: SUCCESS_DOC },
    }),
  });

  server.route('PUT', `${prefix}/concurrency/reservations`, async (req) => {
    const actor = actorOf(req);
    const now = limits.orgConcurrency(actor.orgId);
    const result = await updateReservations(ctx.db, actor, req.json(), { orgLimit: now.orgLimit, serverLimit: now.serverLimit });
    limits.setReservations(actor.orgId, result.reservations);
    return success({ updated: result.updated });
  }, {
    ...auth,
    doc: d("Replace agents' concurrency reservations", {
      description:
        'Each listed agent\'s reserved places per channel are replaced (all zero removes them). A reserved place is the agent\'s own: a call there is never refused by a cap; ' +
        'every other call shares the unreserved pool. Refused (400, naming why): `chat` places (chat sessions have their own cap here), an organization total above `orgLimit`, ' +
        'or reservations of every organization above the server\'s cap. Every key of the organization may change them (keys have no roles here).',
      body: { schema: reservationsBody },
      response: { description: '`{success: true, data: {updated}}`.', schema: SUCCESS_DOC },
    }),
  });
}

const pick = (c: ChannelCounts): Record<(typeof RESERVATION_CHANNELS)[number], number> => ({ webcall: c.webcall, outbound: c.outbound, inbound: c.inbound, chat: c.chat });
