// Campaigns (wire §5 and agent-platform §7): an agent calls the members of an audience from rotating numbers, with
// retries on busy, no-answer and failed outcomes. Created as a draft (or scheduled), started (also resumed) and paused
// here; the calls themselves are queued by the campaign runner (runner.ts) into the outbound queue, which paces and
// places them. Everything lives in the store, so a campaign goes on after a restart and on any server sharing it.
import { sql, type Selectable } from 'kysely';
import type { Db, Tx } from '../store/db.js';
import type { CampaignRecipientsTable, CampaignsTable } from '../store/schema.js';
import { isObjectId, newId, nowIso } from '../store/ids.js';
import { ApiError, badRequest, conflict, notFound, ownRow } from '../errors.js';
import { loadAgent, type Actor } from '../agents/agents.js';
import { intParam } from '../query.js';
import { loadAudience, type AudienceUsers } from './audiences.js';
import { nextTurn } from './audience-removal.js';
import { callerIdsOf, findDialingNumber, type DialingNumber } from '../telephony/dialing.js';
import { dialRoute, productNumber } from '../telephony/outbound.js';
import { isE164 } from '../telephony/validation.js';
import { NOT_AN_OBJECT, checkBody, collapseField, says, strictBody } from '../validation.js';
import { z } from 'zod';
import { telephonyWindow } from '../telephony/window.js';
import type { CarrierSettings } from '../telephony/carrier.js';

export type CampaignRow = Selectable<CampaignsTable>;
export type RecipientRow = Selectable<CampaignRecipientsTable>;

export const CAMPAIGN_STATUSES = ['draft', 'scheduled', 'processing', 'running', 'paused', 'completed', 'failed'] as const;
/** Statuses in which a campaign places calls (or is about to). */
export const ACTIVE_STATUSES = ['processing', 'running'];
/** Most numbers a campaign rotates over. */
const MAX_FROM_NUMBERS = 50;
/** Rows per INSERT of recipients (under both dialects' bound-parameter limits). */
const BATCH = 400;

/** Outbound states a campaign's call can be taken back from (not yet sent). */
const WITHDRAWABLE = ['queued', 'claimed'];

const campaignNotFound = () => notFound('Campaign not found');

/**
 * Status of a campaign whose recipients are still being copied from its audience (POST /campaign): invisible to every
 * read and to the runner until the copy is whole; one a stopped server left is swept (sweepUnfinishedCampaigns).
 */
export const PREPARING = 'preparing';
/** A campaign still preparing this long after its last slice was written belonged to a server that stopped. */
const UNFINISHED_AFTER_MS = 15 * 60_000;

/** A campaign of the actor's organization: 404 for unknown and malformed ids, 403 for another organization's. */
export async function loadCampaign(q: Db | Tx, orgId: string, campaignId: string): Promise<CampaignRow> {
  if (!isObjectId(campaignId)) throw campaignNotFound();
  const row = await q.selectFrom('campaigns').selectAll().where('id', '=', campaignId).where('status', '!=', PREPARING).executeTakeFirst();
  return ownRow(row, orgId, campaignNotFound, 'campaign');
}

/** Removes the campaigns a stopped server left half-copied (never visible); how many. */
export async function sweepUnfinishedCampaigns(db: Db, now = Date.now()): Promise<number> {
  const stale = await db.selectFrom('campaigns').select('id').where('status', '=', PREPARING).where('updated_at', '<', new Date(now - UNFINISHED_AFTER_MS).toISOString()).execute();
  for (const { id } of stale) await discardUnfinished(db, id);
  return stale.length;
}

/** Deletes a preparing campaign's recipients a slice at a time (in turns with other long writes), then the campaign. */
async function discardUnfinished(db: Db, id: string): Promise<void> {
  for (;;) {
    const ids = (await db.selectFrom('campaign_recipients').select('id').where('campaign_id', '=', id).limit(BATCH).execute()).map((r) => r.id);
    if (!ids.length) break;
    await db.deleteFrom('campaign_recipients').where('id', 'in', ids).execute();
    await nextTurn();
  }
  await db.deleteFrom('campaign_events').where('campaign_id', '=', id).execute();
  await db.deleteFrom('campaigns').where('id', '=', id).where('status', '=', PREPARING).execute();
}

/** Adds an event to a campaign's history. */
export async function addCampaignEvent(q: Db | Tx, campaignId: string, triggerSource: 'user' | 'scheduler' | 'system', action: string, detail: string | null = null): Promise<string> {
  const id = newId();
  await q.insertInto('campaign_events').values({ id, campaign_id: campaignId, trigger_source: triggerSource, event_action: action, detail, created_at: nowIso() }).execute();
  return id;
}

/** Moves a campaign between statuses only if it is still in one of `from`; true when it moved. */
export async function moveCampaign(q: Db | Tx, campaignId: string, from: readonly string[], to: string, extra: Partial<CampaignRow> = {}): Promise<boolean> {
  const res = await q
    .updateTable('campaigns')
    .set({ ...extra, status: to, updated_at: nowIso() })
    .where('id', '=', campaignId)
    .where('status', 'in', [...from])
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

interface Counts {
  total: number;
  called: number;
  connected: number;
  retries: number;
  canceled: number;
  /** Recipients skipped because their number is on the do-not-call list (outcome `dnc`). */
  dnc: number;
  /** Recipients whose last call reached a voicemail, answering machine or IVR (outcome `voicemail`; retried as unanswered). */
  voicemail: number;
}

async function countsOf(q: Db | Tx, campaignIds: string[]): Promise<Map<string, Counts>> {
  if (!campaignIds.length) return new Map();
  // Connected: an attempt answered: the recipient's `connected` (set with its outcome by the runner's next pass), or
  // its last call in progress or completed (answered, its outcome not yet written), so the count does not wait for
  // answered calls to end and be swept.
  const rows = await q
    .selectFrom('campaign_recipients as r')
    .leftJoin('calls as c', 'c.call_id', 'r.last_call_id')
    .select([
      'r.campaign_id',
      (eb) => eb.fn.countAll().as('total'),
      sql<number>`sum(case when r.attempts > 0 then 1 else 0 end)`.as('called'),
      // A machine (voicemail detection's verdict) is not a reached recipient.
      sql<number>`sum(case when r.connected = 1 or (c.status in ('in_progress', 'completed') and (c.answered_by is null or c.answered_by in ('human', 'silence'))) then 1 else 0 end)`.as('connected'),
      sql<number>`sum(case when r.attempts > 1 then r.attempts - 1 else 0 end)`.as('retries'),
      sql<number>`sum(case when r.outcome = 'canceled' then 1 else 0 end)`.as('canceled'),
      sql<number>`sum(case when r.outcome = 'dnc' then 1 else 0 end)`.as('dnc'),
      sql<number>`sum(case when r.outcome = 'voicemail' then 1 else 0 end)`.as('voicemail'),
    ])
    .where('r.campaign_id', 'in', campaignIds)
    .groupBy('r.campaign_id')
    .execute();
  return new Map(
    rows.map((r) => [r.campaign_id, { total: Number(r.total), called: Number(r.called ?? 0), connected: Number(r.connected ?? 0), retries: Number(r.retries ?? 0), canceled: Number(r.canceled ?? 0), dnc: Number(r.dnc ?? 0), voicemail: Number(r.voicemail ?? 0) }]),
  );
}

const NO_COUNTS: Counts = { total: 0, called: 0, connected: 0, retries: 0, canceled: 0, dnc: 0, voicemail: 0 };

/** The raw campaign document (as create answers it: `agentId`, `audienceId` as plain ids). */
function campaignDoc(row: CampaignRow, counts: Counts): Record<string, unknown> {
  return {
    _id: row.id,
    name: row.name,
    description: row.description,
    organization: row.org_id,
    agentId: row.agent_id,
    audienceId: row.audience_id,
    fromNumbers: JSON.parse(row.from_numbers) as string[],
    createdBy: row.created_by,
    participantsCount: counts.total,
    status: row.status,
    maxRetries: row.max_retries,
    retryDelay: row.retry_delay_min,
    retryAttempts: counts.retries,
    scheduledAt: row.scheduled_at,
    pausedAt: row.paused_at,
    cancelledCallsCount: counts.canceled,
    dncSkippedCount: counts.dnc,
    voicemailCount: counts.voicemail,
    error: row.error,
    failedAt: row.failed_at,
    completedAt: row.completed_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The document as reads show it: `agent{_id,name,workflowType}` and `audience{_id,name}` instead of plain ids. */
async function campaignView(q: Db | Tx, rows: CampaignRow[]): Promise<Record<string, unknown>[]> {
  const counts = await countsOf(q, rows.map((r) => r.id));
  const agentIds = [...new Set(rows.map((r) => r.agent_id))];
  const audienceIds = [...new Set(rows.map((r) => r.audience_id))];
  const agents = agentIds.length ? await q.selectFrom('agents').select(['id', 'name', 'workflow_type']).where('id', 'in', agentIds).execute() : [];
  const audiences = audienceIds.length ? await q.selectFrom('audiences').select(['id', 'name']).where('id', 'in', audienceIds).execute() : [];
  const agentOf = new Map(agents.map((a) => [a.id, { _id: a.id, name: a.name, workflowType: a.workflow_type }]));
  const audienceOf = new Map(audiences.map((a) => [a.id, { _id: a.id, name: a.name }]));
  return rows.map((r) => {
    const { agentId, audienceId, ...doc } = campaignDoc(r, counts.get(r.id) ?? NO_COUNTS);
    return { ...doc, agent: agentOf.get(agentId as string) ?? { _id: agentId, name: null, workflowType: null }, audience: audienceOf.get(audienceId as string) ?? { _id: audienceId, name: null } };
  });
}

export interface CampaignDeps {
  db: Db;
  carrier: CarrierSettings;
  /** Wakes this server's campaign runner (a campaign was started). */
  wake(): void;
}

/** `POST /campaign`: checks the body, freezes the numbers and the recipients, stores a draft (or scheduled) campaign. */
const FROM_NUMBERS = `1-${MAX_FROM_NUMBERS} E.164 numbers your organization dials from`;
const PRODUCT_IDS = `1-${MAX_FROM_NUMBERS} product ids`;
const campaignShape = {
  name: z.string(says('required, 1-200 characters')).regex(/\S/).max(200),
  description: z.string(says('at most 2000 characters')).max(2000).nullish(),
  agentId: z.string(says('required, the agent that holds the calls')).min(1),
  audienceId: z.string(says('required, the audience to call')).min(1),
  fromNumbers: z
    .array(z.unknown(), says(FROM_NUMBERS))
    .min(1)
    .max(MAX_FROM_NUMBERS)
    .superRefine((list, ctx) => {
      const bad = list.filter((n) => !isE164(n));
      if (bad.length) ctx.addIssue({ code: 'custom', message: `not E.164 numbers: ${bad.map((b) => JSON.stringify(b)).join(', ')}` });
      if (new Set(list).size !== list.length) ctx.addIssue({ code: 'custom', message: 'each number once' });
    })
    .optional()
    .describe(`${FROM_NUMBERS}, each once (default: the agent's caller IDs).`),
  scheduledAt: z
    .string(says('an ISO 8601 date-time'))
    .refine((t) => Number.isFinite(Date.parse(t)), 'an ISO 8601 date-time')
    .nullish(),
  maxRetries: z.number(says('an integer from 0 to 10 (default 3)')).int().min(0).max(10).nullish(),
  retryDelay: z.number(says('minutes between attempts, an integer from 1 to 1440 (default 15)')).int().min(1).max(1440).nullish(),
};
/** `POST /campaign` after the telephony migration window: unknown fields refused. */
const campaignBodyAfterWindow = strictBody(campaignShape);
/** `POST /campaign` (during the telephony migration window also the deprecated `phoneNumberIds`, not with `fromNumbers`): unknown fields refused. */
export const campaignBody = strictBody({
  ...campaignShape,
  phoneNumberIds: z.array(z.string().min(1)).min(1).max(MAX_FROM_NUMBERS).optional().describe('Deprecated; only during the telephony migration window.'),
});

export async function createCampaign(deps: CampaignDeps, actor: Actor, body: unknown): Promise<{ doc: Record<string, unknown>; deprecated: boolean }> {
  const { db } = deps;
  const window = await telephonyWindow(db);
  const checked = checkBody(window.open ? campaignBody : campaignBodyAfterWindow, body);
  // The deprecated list has always had one message for any fault (after the window it is an unknown field).
  const errors = window.open ? collapseField(checked.errors, 'phoneNumberIds', PRODUCT_IDS) : checked.errors;
  if (errors.length === 1 && errors[0] === NOT_AN_OBJECT) throw badRequest(errors);
  const input = body as Record<string, unknown>;
  if (input.fromNumbers !== undefined && input.phoneNumberIds !== undefined) errors.push('phoneNumberIds: give fromNumbers (or the deprecated phoneNumberIds), not both');
  if (errors.length) throw badRequest(errors);
  const maxRetries = input.maxRetries ?? 3;
  const retryDelay = input.retryDelay ?? 15;
  const scheduledAt = typeof input.scheduledAt === 'string' ? new Date(Date.parse(input.scheduledAt)).toISOString() : null;

  // References in the body: 400 naming the field, whether missing or another organization's.
  const agent = await loadAgent(db, actor, input.agentId as string).catch((err: unknown) => {
    throw err instanceof ApiError && (err.status === 403 || err.status === 404) ? badRequest(`agentId: ${input.agentId as string} is not an agent of your organization`) : err;
  });
  if (agent.archived) throw badRequest('agentId: the agent is archived');
  const audience = await loadAudience(db, actor.orgId, input.audienceId as string).catch(() => {
    throw badRequest(`audienceId: ${input.audienceId as string} is not an audience of your organization`);
  });

  // The numbers it calls from, resolved now and frozen: later changes to numbers or the bridge do not move them.
  let deprecated = false;
  /** Each number once, as found among the organization's dialing numbers (looked up once, routed below). */
  const dialing: DialingNumber[] = [];
  const add = async (phone: string): Promise<boolean> => {
    if (dialing.some((d) => d.phoneNumber === phone)) return true;
    const found = await findDialingNumber(db, actor.orgId, phone);
    if (found) dialing.push(found);
    return found !== null;
  };
  if (Array.isArray(input.fromNumbers)) {
    const unknown: string[] = [];
    for (const n of input.fromNumbers as string[]) if (!(await add(n))) unknown.push(n);
    if (unknown.length) throw badRequest(`fromNumbers: ${unknown.join(', ')} ${unknown.length === 1 ? 'is not a number' : 'are not numbers'} your organization dials from (a platform number it holds, or an outbound trunk's number; matched exactly)`);
  } else if (Array.isArray(input.phoneNumberIds)) {
    deprecated = true;
    for (const id of input.phoneNumberIds as string[]) {
      const phone = await productNumber(db, actor.orgId, id);
      if (phone) await add(phone);
    }
    if (!dialing.length) throw badRequest('phoneNumberIds: none of these ids is a number your organization dials from');
  } else {
    if (!window.open) throw badRequest('fromNumbers: required, the E.164 numbers your organization dials from');
    deprecated = true;
    for (const c of await callerIdsOf(db, agent.id)) await add(c.phoneNumber);
    if (!dialing.length) throw badRequest('fromNumbers: required (the agent has no default caller IDs to dial from)');
  }
  for (const d of dialing) await dialRoute(db, deps.carrier, d, 'fromNumbers');
  const numbers = dialing.map((d) => d.phoneNumber);

  const first = await db.selectFrom('audience_members').select('id').where('audience_id', '=', audience.id).limit(1).executeTakeFirst();
  if (!first) throw badRequest(`audienceId: audience ${audience.id} has no members to call`);

  const id = newId();
  const now = nowIso();
  const status = scheduledAt !== null && Date.parse(scheduledAt) > Date.now() ? 'scheduled' : 'draft';
  // The campaign exists at once but stays invisible (PREPARING) while its recipients are copied from the audience a
  // slice at a time, each in its own statement and turn of the event loop: 100,000 members in one transaction held the
  // loop (and every other request on the store) about 2.7 s. Then one short transaction makes it visible.
  await db
      .insertInto('campaigns')
      .values({
        id,
        org_id: actor.orgId,
        name: (input.name as string).trim(),
        description: (input.description as string | null | undefined) ?? null,
        agent_id: agent.id,
        audience_id: audience.id,
        from_numbers: JSON.stringify(numbers),
        scheduled_at: scheduledAt,
        max_retries: maxRetries as number,
        retry_delay_min: retryDelay as number,
        status: PREPARING,
        error: null,
        created_by: actor.name,
        paused_at: null,
        failed_at: null,
        completed_at: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
  try {
    // Recipients in audience order; the numbers rotate across them, and each keeps its number for every retry.
    let after: { position: number; id: string } | null = null;
    for (let i = 0; ; ) {
      let page = db.selectFrom('audience_members').select(['id', 'position', 'phone_number', 'variables']).where('audience_id', '=', audience.id);
      if (after) {
        const { position, id: lastId } = after;
        // A row-value comparison: both stores walk their (audience_id, position) index from here.
        page = page.where(sql<boolean>`(position, id) > (${position}, ${lastId})`);
      }
      const members = await page.orderBy('position').orderBy('id').limit(BATCH).execute();
      if (!members.length) break;
      await db
        .insertInto('campaign_recipients')
        .values(
          members.map((m, j) => ({
            id: newId(),
            campaign_id: id,
            position: i + j,
            member_id: m.id,
            phone_number: m.phone_number,
            from_number: numbers[(i + j) % numbers.length]!,
            variables: m.variables,
            state: 'pending',
            attempts: 0,
            next_at: null,
            last_call_id: null,
            outcome: null,
            updated_at: now,
          })),
        )
        .execute();
      i += members.length;
      const last = members[members.length - 1]!;
      after = { position: last.position, id: last.id };
      await nextTurn();
    }
    await db.transaction().execute(async (tx) => {
      if (!(await moveCampaign(tx, id, [PREPARING], status))) throw new Error(`campaign ${id} was removed while its recipients were copied`);
      await addCampaignEvent(tx, id, 'user', status === 'scheduled' ? 'scheduled' : 'created');
    });
  } catch (err) {
    await discardUnfinished(db, id).catch(() => undefined);
    throw err;
  }
  if (status === 'scheduled') deps.wake();
  const row = await loadCampaign(db, actor.orgId, id);
  return { doc: campaignDoc(row, (await countsOf(db, [id])).get(id) ?? NO_COUNTS), deprecated };
}

/** `GET /campaign/{id}`: the campaign, its events (oldest first) and metrics. */
export async function getCampaign(db: Db, actor: Actor, campaignId: string): Promise<Record<string, unknown>> {
  const row = await loadCampaign(db, actor.orgId, campaignId);
  const [campaign] = await campaignView(db, [row]);
  const events = await db.selectFrom('campaign_events').selectAll().where('campaign_id', '=', row.id).orderBy('created_at').orderBy('id').execute();
  const counts = (await countsOf(db, [row.id])).get(row.id) ?? NO_COUNTS;
  return {
    campaign,
    events: events.map((e) => ({ _id: e.id, triggerSource: e.trigger_source, eventAction: e.event_action, ...(e.detail ? { detail: e.detail } : {}), createdAt: e.created_at, updatedAt: e.created_at })),
    metrics: { total_participants: counts.total, contacts_called: counts.called, contacts_connected: counts.connected, contacts_skipped_dnc: counts.dnc, contacts_voicemail: counts.voicemail },
  };
}

/** `GET /campaign`: the organization's campaigns, filtered by status and name, sorted and paged. */
export async function listCampaigns(db: Db, actor: Actor, query: URLSearchParams): Promise<Record<string, unknown>> {
  const page = intParam(query, 'page', 1, 1, 1_000_000);
  const offset = intParam(query, 'offset', 5, 1, 100);
  const status = query.get('status');
  if (status !== null && !(CAMPAIGN_STATUSES as readonly string[]).includes(status)) throw badRequest(`status: one of ${CAMPAIGN_STATUSES.join(', ')}`);
  const sortField = query.get('sortField') ?? 'createdAt';
  if (sortField !== 'createdAt' && sortField !== 'updatedAt') throw badRequest('sortField: createdAt or updatedAt');
  const sortOrder = query.get('sortOrder') ?? 'desc';
  if (sortOrder !== 'asc' && sortOrder !== 'desc') throw badRequest('sortOrder: asc or desc');
  const search = (query.get('search') ?? '').trim();
  if (search.length > 200) throw badRequest('search: at most 200 characters');

  let base = db.selectFrom('campaigns').where('org_id', '=', actor.orgId).where('status', '!=', PREPARING);
  const all = Number((await base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  if (status !== null) base = base.where('status', '=', status);
  if (search) base = base.where(sql<boolean>`lower(name) like ${`%${search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`} escape '\\'`);
  const total = Number((await base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const column = sortField === 'createdAt' ? 'created_at' : 'updated_at';
  const rows = await base.selectAll().orderBy(column, sortOrder).orderBy('id', sortOrder).limit(offset).offset((page - 1) * offset).execute();
  return {
    campaigns: await campaignView(db, rows),
    pagination: { total, page, offset, hasMore: page * offset < total, totalPages: Math.ceil(total / offset) },
    totalCampaignCount: all,
  };
}

/** `POST /campaign/{id}/start`: a draft, scheduled, paused or failed campaign is handed to the runner (202). */
export async function startCampaign(deps: CampaignDeps, actor: Actor, campaignId: string): Promise<{ message: string; taskId: string; campaignId: string }> {
  const { db } = deps;
  const row = await loadCampaign(db, actor.orgId, campaignId);
  if (row.status === 'completed') throw badRequest('This campaign has completed: every recipient was called');
  if (ACTIVE_STATUSES.includes(row.status)) {
    const [last] = await db.selectFrom('campaign_events').select('id').where('campaign_id', '=', row.id).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1).execute();
    return { message: 'Campaign is already running', taskId: last?.id ?? row.id, campaignId: row.id };
  }
  const resuming = row.status === 'paused';
  let taskId = '';
  const moved = await db.transaction().execute(async (tx) => {
    if (!(await moveCampaign(tx, row.id, ['draft', 'scheduled', 'paused', 'failed'], 'processing', { paused_at: null, error: null, failed_at: null }))) return false;
    taskId = await addCampaignEvent(tx, row.id, 'user', resuming ? 'resumed' : 'started');
    return true;
  });
  if (!moved) return startCampaign(deps, actor, campaignId); // it moved meanwhile: answer for where it is now
  deps.wake();
  return { message: resuming ? 'Campaign resume queued' : 'Campaign start queued', taskId, campaignId: row.id };
}

/**
 * `POST /campaign/{id}/pause`: no new calls are placed; its calls still waiting in the outbound queue are taken back
 * (their recipients will be called when it resumes). Calls already ringing or up go on.
 */
export async function pauseCampaign(db: Db, actor: Actor, campaignId: string): Promise<void> {
  const row = await loadCampaign(db, actor.orgId, campaignId);
  if (row.status === 'paused') return;
  const moved = await db.transaction().execute(async (tx) => {
    if (!(await moveCampaign(tx, row.id, ['scheduled', 'processing', 'running'], 'paused', { paused_at: nowIso() }))) return false;
    await addCampaignEvent(tx, row.id, 'user', 'paused');
    return true;
  });
  if (!moved) throw badRequest(`This campaign is ${row.status}: only a scheduled or running campaign can be paused`);
  await withdrawQueued(db, row.id);
}

/**
 * Takes a campaign's calls that are still only queued (or claimed, not yet slotted) out of the outbound queue: each
 * call's record goes (it never started: no event was sent for it) and its recipient is back where it was before that
 * attempt.
 */
export async function withdrawQueued(db: Db, campaignId: string): Promise<number> {
  // Claimed ones too: a dialer claims the next call while the one before waits for its slot; it was not sent yet (a
  // slotted one may be at any moment, so it goes on).
  const rows = await db.selectFrom('outbound_calls').select(['call_id', 'retry_of']).where('campaign_id', '=', campaignId).where('state', 'in', WITHDRAWABLE).execute();
  let withdrawn = 0;
  for (const r of rows) {
    await db.transaction().execute(async (tx) => {
      const res = await tx.deleteFrom('outbound_calls').where('call_id', '=', r.call_id).where('state', 'in', WITHDRAWABLE).executeTakeFirst();
      if (Number(res.numDeletedRows) !== 1) return; // a dialer slotted it meanwhile: it goes on
      await tx.deleteFrom('calls').where('call_id', '=', r.call_id).where('status', '=', 'in_queue').execute();
      await tx
        .updateTable('campaign_recipients')
        .set({
          state: sql<string>`case when attempts > 1 then 'waiting' else 'pending' end`,
          attempts: sql<number>`attempts - 1`,
          last_call_id: r.retry_of,
          next_at: nowIso(),
          updated_at: nowIso(),
        })
        .where('campaign_id', '=', campaignId)
        .where('last_call_id', '=', r.call_id)
        .where('state', '=', 'calling')
        .execute();
      withdrawn++;
    });
  }
  return withdrawn;
}

/** `DELETE /campaign/{id}`: a campaign that is not placing calls; its call records stay. */
export async function deleteCampaign(db: Db, actor: Actor, campaignId: string): Promise<void> {
  const row = await loadCampaign(db, actor.orgId, campaignId);
  const running = () => conflict('campaign_running', `Campaign ${row.id} is placing calls; pause it before deleting it`);
  if (ACTIVE_STATUSES.includes(row.status)) throw running();
  await withdrawQueued(db, row.id);
  await db.transaction().execute(async (tx) => {
    const res = await tx.deleteFrom('campaigns').where('id', '=', row.id).where('status', 'not in', ACTIVE_STATUSES).executeTakeFirst();
    if (Number(res.numDeletedRows) !== 1) throw running(); // started meanwhile
    await tx.deleteFrom('campaign_recipients').where('campaign_id', '=', row.id).execute();
    await tx.deleteFrom('campaign_events').where('campaign_id', '=', row.id).execute();
  });
}

/** Campaigns that still need an audience (any not completed or failed): an audience delete is a 409 while they do. */
export const campaignsUsingAudience: AudienceUsers = async (q, audience) => {
  const rows = await q.selectFrom('campaigns').select(['id', 'name', 'status']).where('audience_id', '=', audience.id).where('status', 'not in', ['completed', 'failed']).orderBy('created_at').execute();
  return rows.map((r) => `campaign ${r.id} ("${r.name}", ${r.status}) calls it`);
};
