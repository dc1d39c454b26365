// Outbound calls (wire §4): `POST /conversation/outbound` checked and queued (the call's record exists at once, status
// `in_queue`), the queue the dialer takes calls from (FIFO per carrier address, claimed atomically with a lease, so
// a call is dialed once even with several servers on one store), and the reads around it.
//
// A row's states: queued -> claimed (a dialer took it and prepares it) -> slotted (it will be sent at its pace slot:
// from here on it may have been dialed) -> dialing (INVITE sent) -> done. A lapsed claim sends a claimed call back to
// the queue and closes a slotted or dialing one as failed: never dialed twice.
import { sql, type Selectable } from 'kysely';
import type { Db, Tx } from '../store/db.js';
import type { OutboundCallsTable } from '../store/schema.js';
import { nowIso } from '../store/ids.js';
import { ApiError, badRequest } from '../errors.js';
import { loadAgent, type Actor } from '../agents/agents.js';
import { createCall, loadCall, newCallId } from '../calls/calls.js';
import { resolveCallConfig } from '../calls/call-config.js';
import { callVariablesField, parseCallVariables } from '../calls/variables.js';
import type { CarrierSettings } from './carrier.js';
import { callerIdsOf, findDialingNumber, type DialingNumber } from './dialing.js';
import { E164, carrierAddressKey, parseCarrierAddress } from './validation.js';
import { NOT_AN_OBJECT, checkBody, says, strictBody } from '../validation.js';
import { z } from 'zod';
import { telephonyWindow } from './window.js';
import { listedSql, refuseListed } from './dnc.js';

export type OutboundRow = Selectable<OutboundCallsTable>;

export interface OutboundQueueDeps {
  db: Db;
  carrier: CarrierSettings;
  /** Calls that may wait per carrier address; beyond it 429 with Retry-After. */
  maxQueuedPerAddress: number;
  /** Wakes this process's dialer after a call was queued on carrier key `paceKey`. */
  wake(paceKey: string): void;
}

export interface QueuedOutbound {
  conversationId: string;
  /** A deprecated input was used (`fromProductId`, or the caller-ids bridge's default for an omitted fromNumber). */
  deprecated: boolean;
}

/** Where a call from `number` goes out: the outbound trunk the number belongs to, or the platform carrier. */
export interface DialRoute {
  trunkId: string | null;
  /** The carrier address it is paced on (`transport:host:port`). */
  paceKey: string;
  /** Calls per second allowed on that address: the lowest cpsLimit among what dials through it. */
  cps: number;
}

/** The route of a dialing number, or a reason it cannot be dialed (as a 400 message naming `field`). */
export async function dialRoute(q: Db | Tx, carrier: CarrierSettings, number: DialingNumber, field: string): Promise<DialRoute> {
  const platformKey = carrier.address ? carrierAddressKey(parseCarrierAddress(carrier.address)!, carrier.transport) : null;
  if (number.trunkId) {
    const trunk = await q.selectFrom('sip_trunks').select(['id', 'address_key', 'cps_limit']).where('id', '=', number.trunkId).executeTakeFirstOrThrow();
    const key = trunk.address_key as string;
    const cps = Math.min(trunk.cps_limit ?? 1, key === platformKey ? carrier.cps : Infinity);
    return { trunkId: trunk.id, paceKey: key, cps };
  }
  if (!platformKey) throw badRequest(`${field}: ${number.phoneNumber} is a platform number, and this server has no platform carrier to dial through (PARLEY_CARRIER_ADDRESS)`);
  const shared = await q.selectFrom('sip_trunks').select('cps_limit').where('address_key', '=', platformKey).executeTakeFirst();
  return { trunkId: null, paceKey: platformKey, cps: Math.min(carrier.cps, shared?.cps_limit ?? Infinity) };
}

/** A sortable queue position: epoch ms and a per-process counter (FIFO within a process, by time across processes). */
let queueCounter = 0;
const queueOrder = () => `${Date.now().toString().padStart(15, '0')}-${(queueCounter++ % 1e9).toString().padStart(9, '0')}`;

const outboundShape = {
  agentId: z.string(says('required, the id of the agent that holds the call')).min(1),
  phoneNumber: z.string(says('required, the E.164 number to call (+ and 7-15 digits)')).regex(E164),
  fromNumber: z.string(says('must be an E.164 number your organization dials from')).regex(E164).optional().describe("Default: the agent's caller ID."),
  variables: callVariablesField,
  versionId: z.string(says('must be a revision id of the agent')).min(1).optional(),
};
/** `POST /conversation/outbound` after the telephony migration window: unknown fields refused. */
const outboundBodyAfterWindow = strictBody(outboundShape);
/**
 * `POST /conversation/outbound` (during the telephony migration window also the deprecated `fromProductId`, not
 * with `fromNumber`): unknown fields refused.
 */
export const outboundCallBody = strictBody({ ...outboundShape, fromProductId: z.string(says('must be a product id')).min(1).optional().describe('Deprecated; only during the telephony migration window.') });

/** `POST /conversation/outbound`: checks the request and queues the call; answers its conversation id at once. */
export async function queueOutboundCall(
  deps: OutboundQueueDeps,
  actor: Actor,
  body: unknown,
  opts: {
    isTest: boolean;
    pinnedRevisionId?: string | null;
    /** The request's name for the number called, in errors (default `phoneNumber`; a telephony test call's `toPhone`). */
    phoneField?: string;
  },
): Promise<QueuedOutbound> {
  const { db } = deps;
  const window = await telephonyWindow(db);
  const checked = checkBody(window.open ? outboundCallBody : outboundBodyAfterWindow, body);
  const errors = checked.errors;
  const input = (checked.data ?? body) as Record<string, unknown>;
  if (errors.length === 1 && errors[0] === NOT_AN_OBJECT) throw badRequest(errors);
  if (input.fromNumber !== undefined && input.fromProductId !== undefined) errors.push('fromProductId: give fromNumber (or the deprecated fromProductId), not both');
  const vars = parseCallVariables(input.variables);
  for (const e of vars.errors) if (!errors.includes(e)) errors.push(e);
  if (errors.length) throw badRequest(errors);

  const agentId = input.agentId as string;
  const agent = await loadAgent(db, actor, agentId);
  if (agent.archived) throw badRequest('agentId: the agent is archived');
  if (input.versionId !== undefined) await resolveCallConfig(db, actor, agentId, { kind: 'revision', revisionId: input.versionId as string });
  // A number on the organization's do-not-call list (or the agent's) is not called.
  await refuseListed(db, actor.orgId, agentId, input.phoneNumber as string, opts.phoneField ?? 'phoneNumber');

  let deprecated = false;
  let number: DialingNumber | null;
  let field = 'fromNumber';
  if (typeof input.fromNumber === 'string') {
    number = await findDialingNumber(db, actor.orgId, input.fromNumber);
    if (!number) throw badRequest(`fromNumber: ${input.fromNumber} is not a number your organization dials from (a platform number it holds, or an outbound trunk's number; matched exactly)`);
  } else if (typeof input.fromProductId === 'string') {
    deprecated = true;
    field = 'fromProductId';
    const phone = await productNumber(db, actor.orgId, input.fromProductId);
    number = phone ? await findDialingNumber(db, actor.orgId, phone) : null;
    if (!number) throw badRequest(`fromProductId: ${input.fromProductId} is not a number your organization dials from`);
  } else {
    if (!window.open) throw badRequest('fromNumber: required, the E.164 number your organization dials from');
    deprecated = true;
    const [first] = await callerIdsOf(db, agentId);
    number = first ? await findDialingNumber(db, actor.orgId, first.phoneNumber) : null;
    if (!number) throw badRequest('fromNumber: required (the agent has no default caller ID to dial from)');
  }
  const route = await dialRoute(db, deps.carrier, number, field);

  const queued = await waitingOn(db, route.paceKey);
  if (queued >= deps.maxQueuedPerAddress) {
    const retryAfter = Math.max(1, Math.ceil(queued / route.cps));
    throw new ApiError(429, `Too many calls waiting for this carrier (${queued}, at ${route.cps} calls per second); retry later`, {
      errorType: 'outbound_queue_full',
      headers: { 'Retry-After': String(retryAfter) },
    });
  }

  const callId = newCallId();
  await db.transaction().execute((tx) =>
    insertQueuedCall(tx, {
      callId,
      orgId: actor.orgId,
      agentId,
      to: input.phoneNumber as string,
      from: number!.phoneNumber,
      route,
      // A test call pins the draft or revision it resolved (a draft's id too: the dialer runs it while it is open).
      revisionId: opts.pinnedRevisionId !== undefined ? opts.pinnedRevisionId : ((input.versionId as string | undefined) ?? null),
      variables: vars.variables,
      isTest: opts.isTest,
    }),
  );
  deps.wake(route.paceKey);
  return { conversationId: callId, deprecated };
}

export interface NewQueuedCall {
  callId: string;
  orgId: string;
  agentId: string;
  to: string;
  from: string;
  route: DialRoute;
  revisionId: string | null;
  variables: Record<string, string | number | boolean>;
  isTest: boolean;
  /** The campaign placing it, and the call it retries. */
  campaignId?: string;
  retryOf?: string | null;
}

/** A call's record (`in_queue`) and its place at the end of its carrier address's queue, in the caller's transaction. */
export async function insertQueuedCall(tx: Tx, c: NewQueuedCall): Promise<void> {
  const now = nowIso();
  await createCall(tx, {
    orgId: c.orgId,
    agentId: c.agentId,
    configSource: c.revisionId !== null ? 'revision' : 'live',
    revisionId: c.revisionId,
    type: 'telephony_outbound',
    mode: 'webcall',
    isTest: c.isTest,
    variables: c.variables,
    voiceConfig: {},
    fromNumber: c.from,
    toNumber: c.to,
    callId: c.callId,
    status: 'in_queue',
  });
  await tx
    .insertInto('outbound_calls')
    .values({
      call_id: c.callId,
      org_id: c.orgId,
      agent_id: c.agentId,
      to_number: c.to,
      from_number: c.from,
      trunk_id: c.route.trunkId,
      pace_key: c.route.paceKey,
      revision_id: c.revisionId,
      variables: JSON.stringify(c.variables),
      is_test: c.isTest ? 1 : 0,
      state: 'queued',
      queue_order: queueOrder(),
      claimed_by: null,
      claimed_at: null,
      cancel_requested: 0,
      retry_of: c.retryOf ?? null,
      campaign_id: c.campaignId ?? null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

/** Calls waiting to be dialed on a carrier address (the queue bound counts these). */
export async function waitingOn(q: Db | Tx, paceKey: string): Promise<number> {
  const waiting = await q
    .selectFrom('outbound_calls')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('pace_key', '=', paceKey)
    .where('state', 'in', ['queued', 'claimed', 'slotted'])
    .executeTakeFirst();
  return Number(waiting?.n ?? 0);
}

/** The phone number of a product id the organization owns: a platform number it holds, or one of its trunks' numbers. */
export async function productNumber(db: Db, orgId: string, productId: string): Promise<string | null> {
  const platform = await db.selectFrom('platform_numbers').select('phone_number').where('id', '=', productId).where('org_id', '=', orgId).executeTakeFirst();
  if (platform) return platform.phone_number;
  const trunk = await db.selectFrom('sip_trunk_numbers').select('phone_number').where('id', '=', productId).where('org_id', '=', orgId).executeTakeFirst();
  return trunk?.phone_number ?? null;
}

/** Carrier addresses with calls waiting. */
export async function queuedPaceKeys(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('outbound_calls').select('pace_key').distinct().where('state', '=', 'queued').execute();
  return rows.map((r) => r.pace_key);
}

/**
 * Claims the oldest waiting call of a carrier address for dialer `owner`: queued -> claimed in one guarded update, so
 * two dialers never get the same call. `skipOrgs`: organizations whose calls cannot start now (at their session cap),
 * so they do not hold up the others' calls behind them, or `agent:<id>` for one agent's calls. Null when none is waiting.
 */
export async function claimNext(db: Db, paceKey: string, owner: string, skipOrgs: readonly string[] = []): Promise<(OutboundRow & { dncListed?: true }) | null> {
  for (let tries = 0; tries < 5; ) {
    let q = db
      .selectFrom('outbound_calls')
      .selectAll()
      // Whether its number was put on the do-not-call list since it was queued (same query: no extra round trip).
      .select(listedSql(sql.ref('outbound_calls.org_id'), sql.ref('outbound_calls.agent_id'), sql.ref('outbound_calls.to_number')).as('dnc_listed'))
      .where('state', '=', 'queued')
      .where('pace_key', '=', paceKey);
    // `agent:<id>` entries set aside one agent's calls (its organization has reservations others may still use).
    const orgs = skipOrgs.filter((s) => !s.startsWith('agent:'));
    const agents = skipOrgs.filter((s) => s.startsWith('agent:')).map((s) => s.slice('agent:'.length));
    if (orgs.length) q = q.where('org_id', 'not in', orgs);
    if (agents.length) q = q.where('agent_id', 'not in', agents);
    const found = await q.orderBy('queue_order').limit(1).executeTakeFirst();
    if (!found) return null;
    const { dnc_listed: listed, ...next } = found;
    const now = nowIso();
    const res = await db
      .updateTable('outbound_calls')
      .set({ state: 'claimed', claimed_by: owner, claimed_at: now, updated_at: now })
      .where('call_id', '=', next.call_id)
      .where('state', '=', 'queued')
      .executeTakeFirst();
    // Listed since it was queued: claimed all the same, so that its dialer records it (cancelled, reason dnc) with
    // its events; it is never dialed.
    if (Number(res.numUpdatedRows) === 1) return { ...next, state: 'claimed', claimed_by: owner, claimed_at: now, ...(Number(listed) ? { dncListed: true as const } : {}) };
    tries++;
  }
  return null;
}

/** Moves a call from one state to another only if it is still in `from` (and, when given, still held by `owner`). */
export async function moveOutbound(db: Db | Tx, callId: string, from: string[], to: string, owner?: string): Promise<boolean> {
  let q = db.updateTable('outbound_calls').set({ state: to, updated_at: nowIso() }).where('call_id', '=', callId).where('state', 'in', from);
  if (owner !== undefined) q = q.where('claimed_by', '=', owner);
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * A call `owner` claimed and never sent goes back to its place in the queue, unless its cancel was asked for meanwhile
 * (cancel_requested, set while it was slotted): false then, or when it is no longer `owner`'s to give back.
 */
export async function requeueOutbound(db: Db, callId: string, owner: string): Promise<boolean> {
  const res = await db
    .updateTable('outbound_calls')
    .set({ state: 'queued', updated_at: nowIso() })
    .where('call_id', '=', callId)
    .where('state', 'in', ['claimed', 'slotted'])
    .where('claimed_by', '=', owner)
    .where('cancel_requested', '=', 0)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** States of a call that may have been dialed: closed, never retried, when their server stops. */
const MAY_HAVE_RUNG = ['slotted', 'dialing'];

/** Renews the lease on the calls `owner` is working on (`callIds`: only those; a row it dropped lapses). */
export async function renewLeases(db: Db, owner: string, callIds: string[]): Promise<void> {
  if (!callIds.length) return;
  await db
    .updateTable('outbound_calls')
    .set({ claimed_at: nowIso() })
    .where('claimed_by', '=', owner)
    .where('call_id', 'in', callIds)
    .where('state', 'in', ['claimed', ...MAY_HAVE_RUNG])
    .execute();
}

/**
 * Calls whose lease ran out (their server stopped): a claimed one goes back to the queue (it was never dialed), a
 * slotted or dialing one is returned to be closed as failed (it may have rung: never dialed again).
 */
export async function reclaimExpired(db: Db, leaseMs: number): Promise<OutboundRow[]> {
  const before = new Date(Date.now() - leaseMs).toISOString();
  await db.updateTable('outbound_calls').set({ state: 'queued', claimed_by: null, claimed_at: null, updated_at: nowIso() }).where('state', '=', 'claimed').where('claimed_at', '<', before).execute();
  return db.selectFrom('outbound_calls').selectAll().where('state', 'in', MAY_HAVE_RUNG).where('claimed_at', '<', before).execute();
}

/** Outbound rows of calls a cancel was asked for while they were slotted or dialing, held by `owner`. */
export async function cancelRequested(db: Db, owner: string): Promise<string[]> {
  const rows = await db.selectFrom('outbound_calls').select('call_id').where('claimed_by', '=', owner).where('state', 'in', MAY_HAVE_RUNG).where('cancel_requested', '=', 1).execute();
  return rows.map((r) => r.call_id);
}

/** Of the answered calls `callIds`, those whose cancel was asked for (by any server): their holder ends them. */
export async function cancelRequestedOf(db: Db, callIds: string[]): Promise<string[]> {
  const rows = await db.selectFrom('outbound_calls').select('call_id').where('call_id', 'in', callIds).where('state', '=', 'done').where('cancel_requested', '=', 1).execute();
  return rows.map((r) => r.call_id);
}

export type CancelOutcome = { callId: string; canceled: true; row: OutboundRow; wasQueued: boolean } | { callId: string; canceled: false; reason: string };

/**
 * Cancels an outbound call of the actor's organization: a queued (or claimed) one leaves the queue now, a ringing one
 * is marked for its dialer to CANCEL. Answered or ended calls cannot be canceled.
 */
export async function cancelOutbound(db: Db, actor: Actor, callId: string): Promise<CancelOutcome> {
  const call = await loadCall(db, actor, callId);
  const row = await db.selectFrom('outbound_calls').selectAll().where('call_id', '=', call.call_id).executeTakeFirst();
  if (!row) return { callId, canceled: false, reason: 'not an outbound call' };
  // The dialer moves the call on meanwhile (claimed -> slotted, or slotted back to queued): try both ways, twice.
  for (let tries = 0; tries < 2; tries++) {
    if (await moveOutbound(db, callId, ['queued', 'claimed'], 'done')) return { callId, canceled: true, row, wasQueued: true };
    const res = await db.updateTable('outbound_calls').set({ cancel_requested: 1, updated_at: nowIso() }).where('call_id', '=', callId).where('state', 'in', MAY_HAVE_RUNG).executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) return { callId, canceled: true, row, wasQueued: false };
  }
  const now = await loadCall(db, actor, callId);
  return { callId, canceled: false, reason: now.status === 'in_progress' ? 'already answered (end it instead)' : `already ${now.status}` };
}

/** `GET /conversation/{callId}/retries`: the calls placed as retries of this one, oldest first. */
export async function retriesOf(db: Db, actor: Actor, callId: string): Promise<string[]> {
  await loadCall(db, actor, callId);
  const rows = await db.selectFrom('outbound_calls').select(['call_id', 'created_at']).where('retry_of', '=', callId).orderBy('created_at').execute();
  return rows.map((r) => r.call_id);
}
