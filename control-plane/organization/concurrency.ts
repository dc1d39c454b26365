// Agents' concurrency reservations (`PUT /concurrency/reservations`, `GET /concurrency` in the hosted reference): per
// agent, the speech places reserved for it on each channel. The store keeps them; the session caps enforce them
// (calls/session-limits.ts). A reservation is refused (400, naming why) where it cannot be honoured here: `chat`
// places (chat sessions have their own cap, apart from the speech pool the others share), an organization's total
// above its limit, or every organization's total above the server's cap (then a reserved place could be taken).
import { z } from 'zod';
import type { Db, Tx } from '../store/db.js';
import { badRequest } from '../errors.js';
import { isObjectId, nowIso } from '../store/ids.js';
import type { Actor } from '../agents/agents.js';
import { bodyObject, parseBody, says } from '../validation.js';
import { orgDb } from './migration.js';

export const RESERVATION_CHANNELS = ['webcall', 'outbound', 'inbound', 'chat'] as const;
export type Reservation = Record<(typeof RESERVATION_CHANNELS)[number], number>;

/** Most agents one request may change. */
export const MAX_RESERVATION_ITEMS = 500;

const places = z.number(says('must be a whole number of places, 0 or more')).int('must be a whole number of places, 0 or more').min(0, 'must be a whole number of places, 0 or more');

/** `PUT /concurrency/reservations`: `{reservations: [{agentId, webcall, outbound, inbound, chat}]}` (the SDK sends all four). */
export const reservationsBody = bodyObject({
  reservations: z
    .array(
      z.object(
        {
          agentId: z.string(says('must be a 24-character hex agent id')).regex(/^[0-9a-fA-F]{24}$/, 'must be a 24-character hex agent id').describe('Agent id (24-character hex).'),
          webcall: places.describe('Reserved web-call places.'),
          outbound: places.describe('Reserved outbound-call places.'),
          inbound: places.describe('Reserved inbound-call places.'),
          chat: places.describe('Reserved chat places: 0 only (chat sessions have their own cap here).'),
        },
        says('must be an object {agentId, webcall, outbound, inbound, chat}'),
      ),
      says('must be an array of {agentId, webcall, outbound, inbound, chat}'),
    )
    .min(1, 'must list at least one agent')
    .max(MAX_RESERVATION_ITEMS, `must list at most ${MAX_RESERVATION_ITEMS} agents`)
    .describe('Replaces each listed agent\'s reservations; agents not listed keep theirs.'),
});

/** The limits a change is checked against (the session caps' speech limits). */
export interface ReservationLimits {
  /** An organization's concurrent speech sessions (PARLEY_MAX_SPEECH_SESSIONS_PER_KEY). */
  orgLimit: number;
  /** The server's (PARLEY_MAX_SPEECH_SESSIONS). */
  serverLimit: number;
}

export const speechPlaces = (r: Reservation): number => r.webcall + r.outbound + r.inbound;

/** Every organization's reservations, organization -> agent -> places. */
export async function allReservations(db: Db | Tx): Promise<Map<string, Map<string, Reservation>>> {
  const rows = await orgDb(db).selectFrom('concurrency_reservations').selectAll().execute();
  const out = new Map<string, Map<string, Reservation>>();
  for (const r of rows) {
    let agents = out.get(r.org_id);
    if (!agents) out.set(r.org_id, (agents = new Map()));
    agents.set(r.agent_id, { webcall: Number(r.webcall), outbound: Number(r.outbound), inbound: Number(r.inbound), chat: Number(r.chat) });
  }
  return out;
}

/** One organization's reservations with each agent's name and avatar, by agent name. */
export async function orgReservations(db: Db, orgId: string): Promise<{ agentId: string; agentName: string; avatarUrl: string | null; reservation: Reservation }[]> {
  const rows = await orgDb(db).selectFrom('concurrency_reservations').selectAll().where('org_id', '=', orgId).execute();
  const agents = rows.length ? await db.selectFrom('agents').select(['id', 'name', 'meta']).where('id', 'in', rows.map((r) => r.agent_id)).execute() : [];
  const byId = new Map(agents.map((a) => [a.id, a]));
  return rows
    .filter((r) => byId.has(r.agent_id))
    .map((r) => {
      const agent = byId.get(r.agent_id) as { name: string; meta: string };
      let avatarUrl: string | null = null;
      try {
        const meta = JSON.parse(agent.meta) as { avatarUrl?: unknown };
        avatarUrl = typeof meta.avatarUrl === 'string' ? meta.avatarUrl : null;
      } catch {
        // unreadable metadata: no avatar
      }
      return { agentId: r.agent_id, agentName: agent.name, avatarUrl, reservation: { webcall: Number(r.webcall), outbound: Number(r.outbound), inbound: Number(r.inbound), chat: Number(r.chat) } };
    })
    .sort((a, b) => a.agentName.localeCompare(b.agentName) || a.agentId.localeCompare(b.agentId));
}

/**
 * Replaces the listed agents' reservations (all zero: removed) after checking every agent is the caller's and the
 * totals fit; answers how many agents were updated and the organization's reservations after the change.
 */
export async function updateReservations(db: Db, actor: Actor, body: unknown, limits: ReservationLimits): Promise<{ updated: number; reservations: Map<string, Reservation> }> {
  const { reservations } = parseBody(reservationsBody, body);
  const errors: string[] = [];
  const wanted = new Map<string, Reservation>();
  reservations.forEach((r, i) => {
    const agentId = r.agentId.toLowerCase();
    if (wanted.has(agentId)) errors.push(`reservations[${i}].agentId: agent ${agentId} is listed twice`);
    if (r.chat > 0) errors.push(`reservations[${i}].chat: chat places cannot be reserved here: chat sessions have their own cap (PARLEY_MAX_CHAT_SESSIONS), apart from the speech sessions the other channels share`);
    wanted.set(agentId, { webcall: r.webcall, outbound: r.outbound, inbound: r.inbound, chat: r.chat });
  });
  if (errors.length) throw badRequest(errors);
  const ids = [...wanted.keys()].filter(isObjectId);
  return db.transaction().execute(async (tx) => {
    const found = new Set((await tx.selectFrom('agents').select('id').where('id', 'in', ids).where('org_id', '=', actor.orgId).execute()).map((a) => a.id));
    const unknown = reservations.map((r, i) => [r.agentId.toLowerCase(), i] as const).filter(([id]) => !found.has(id));
    if (unknown.length) throw badRequest(unknown.map(([id, i]) => `reservations[${i}].agentId: no agent ${id} in your organization`));
    const all = await allReservations(tx);
    const mine = new Map(all.get(actor.orgId) ?? []);
    for (const [id, r] of wanted) mine.set(id, r);
    const orgTotal = [...mine.values()].reduce((n, r) => n + speechPlaces(r), 0);
    if (orgTotal > limits.orgLimit) {
      throw badRequest(`reservations: ${orgTotal} places would be reserved, above the organization's limit of ${limits.orgLimit} concurrent speech sessions (PARLEY_MAX_SPEECH_SESSIONS_PER_KEY)`);
    }
    let elsewhere = 0;
    for (const [org, agents] of all) if (org !== actor.orgId) for (const r of agents.values()) elsewhere += speechPlaces(r);
    if (orgTotal + elsewhere > limits.serverLimit) {
      throw badRequest(`reservations: ${orgTotal} places here and ${elsewhere} reserved by other organizations would be above the server's cap of ${limits.serverLimit} concurrent speech sessions (PARLEY_MAX_SPEECH_SESSIONS), so a reserved place could not be guaranteed`);
    }
    const now = nowIso();
    for (const [agentId, r] of wanted) {
      await orgDb(tx).deleteFrom('concurrency_reservations').where('agent_id', '=', agentId).execute();
      if (speechPlaces(r) + r.chat > 0) {
        await orgDb(tx).insertInto('concurrency_reservations').values({ agent_id: agentId, org_id: actor.orgId, ...r, updated_at: now }).execute();
      }
    }
    for (const [id, r] of [...mine]) if (speechPlaces(r) === 0) mine.delete(id);
    return { updated: wanted.size, reservations: mine };
  });
}
