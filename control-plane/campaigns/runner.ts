// The campaign runner: every server runs one, over the shared store. Each pass it starts scheduled campaigns that are
// due, settles the calls that ended (a retry after `retryDelay` for busy, no-answer and failed outcomes, up to
// `maxRetries`), queues the next recipients into the outbound queue (a few at a time per campaign, so a pause takes
// effect at once) and completes campaigns with nobody left to call.
//
// Every step is a guarded update in the store (a recipient moves pending/waiting -> calling in the same transaction
// that queues its call), so two servers, or a server restarted mid-campaign, never queue one attempt twice; the
// outbound queue then dials each queued call once.
import type { Logger } from 'pino';
import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { nowIso } from '../store/ids.js';
import { newCallId } from '../calls/calls.js';
import { parseCallVariables } from '../calls/variables.js';
import { dialRoute, insertQueuedCall, waitingOn } from '../telephony/outbound.js';
import { findDialingNumber } from '../telephony/dialing.js';
import { DNC_REASON, listedSql, numbersText } from '../telephony/dnc.js';
import type { CarrierSettings } from '../telephony/carrier.js';
import { addCampaignEvent, moveCampaign, withdrawQueued, type CampaignRow, type RecipientRow } from './campaigns.js';

export interface CampaignRunnerDeps {
  db: Db;
  carrier: CarrierSettings;
  logger: Logger;
  /** Wakes the outbound dialer after calls were queued. */
  wakeDialer(): void;
  /** Calls that may wait per carrier address (PARLEY_OUTBOUND_QUEUE): a campaign does not queue past it. */
  maxQueuedPerAddress: number;
  /** How long one minute of `retryDelay` lasts (60 000; tests shorten it: PARLEY_CAMPAIGN_MINUTE_MS). */
  minuteMs?: number;
  /** How often the store is looked at (1 s). */
  pollMs?: number;
  /** Calls of one campaign in the outbound queue or up at once (10). */
  window?: number;
  /** The outbound claim lease (PARLEY_OUTBOUND_LEASE_SECS): a call closed this long ago x2 whose outcome was never written lost it. */
  leaseMs?: number;
}

/** Final call statuses, and what each means for the recipient. */
const FINAL = ['completed', 'failed', 'no_answer', 'cancelled'];
/** A call whose record stays in progress this long after it started is taken for lost (its server died mid-call). */
const LOST_CALL_MS = 3 * 3600 * 1000;

type Outcome = 'completed' | 'busy' | 'no_answer' | 'failed' | 'canceled' | 'dnc' | 'voicemail';

export function outcomeOfCall(status: string, endReason: string | null): Outcome {
  // Taken out of the queue because its number was put on the do-not-call list: never dialed, never retried.
  if (status === 'cancelled' && endReason === DNC_REASON) return 'dnc';
  // Answered by a voicemail, an answering machine or an IVR (voicemail detection): not reached, retried as unanswered.
  if (status === 'completed' && (endReason === 'voicemail' || endReason === 'ivr')) return 'voicemail';
  if (status === 'completed') return 'completed';
  if (status === 'no_answer') return 'no_answer';
  if (status === 'cancelled') return 'canceled';
  return endReason === 'busy' ? 'busy' : 'failed';
}

export class CampaignRunner {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private stopped = false;
  private pass: Promise<void> = Promise.resolve();
  private readonly minuteMs: number;
  private readonly window: number;
  private readonly leaseMs: number;

  constructor(private readonly deps: CampaignRunnerDeps) {
    this.minuteMs = deps.minuteMs ?? 60_000;
    this.window = deps.window ?? 10;
    this.leaseMs = deps.leaseMs ?? 30_000;
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), this.deps.pollMs ?? 1000);
    this.timer.unref();
    this.wake();
  }

  /** Looks at the store now (a campaign was started or scheduled here). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.pass = this.runPass()
      .catch((err: unknown) => this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'campaign runner pass failed'))
      .finally(() => {
        this.running = false;
        if (this.again && !this.stopped) {
          this.again = false;
          this.wake();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.pass;
  }

  private async runPass(): Promise<void> {
    const { db } = this.deps;
    const now = nowIso();
    // Scheduled campaigns that are due start (once, whichever server gets there first).
    const due = await db.selectFrom('campaigns').select('id').where('status', '=', 'scheduled').where('scheduled_at', '<=', now).execute();
    for (const c of due) {
      await db.transaction().execute(async (tx) => {
        if (await moveCampaign(tx, c.id, ['scheduled'], 'processing')) await addCampaignEvent(tx, c.id, 'scheduler', 'started');
      });
    }
    // A campaign paused (or deleted) while a pass was queueing its calls: those calls leave the queue too.
    const strays = await db
      .selectFrom('outbound_calls')
      .select('campaign_id')
      .distinct()
      .where('state', 'in', ['queued', 'claimed'])
      .where('campaign_id', 'is not', null)
      .where((eb) => eb.not(eb.exists(eb.selectFrom('campaigns').select('id').whereRef('campaigns.id', '=', 'outbound_calls.campaign_id').where('campaigns.status', 'in', ['processing', 'running']))))
      .execute();
    for (const s of strays) await withdrawQueued(db, s.campaign_id!);

    const active = await db.selectFrom('campaigns').selectAll().where('status', 'in', ['processing', 'running']).orderBy('created_at').execute();
    let queued = 0;
    for (const c of active) {
      if (this.stopped) return;
      if (c.status === 'processing' && !(await moveCampaign(db, c.id, ['processing'], 'running'))) continue;
      try {
        queued += await this.step(c);
      } catch (err) {
        this.deps.logger.warn({ campaignId: c.id, err: err instanceof Error ? err.message : String(err) }, 'campaign step failed');
      }
    }
    if (queued) this.deps.wakeDialer();
  }

  /** One campaign: settle ended calls, queue the next recipients, complete it when nobody is left. Returns calls queued. */
  private async step(c: CampaignRow): Promise<number> {
    const { db } = this.deps;
    await this.settle(c);
    const agent = await db.selectFrom('agents').select(['id', 'archived']).where('id', '=', c.agent_id).executeTakeFirst();
    if (!agent || agent.archived) {
      await this.fail(c, agent ? 'The agent is archived' : 'The agent was deleted');
      return 0;
    }
    await this.skipListed(c);
    const calling = Number((await db.selectFrom('campaign_recipients').select((eb) => eb.fn.countAll().as('n')).where('campaign_id', '=', c.id).where('state', '=', 'calling').executeTakeFirstOrThrow()).n);
    let room = this.window - calling;
    let queued = 0;
    if (room > 0) {
      const now = nowIso();
      const next = await db
        .selectFrom('campaign_recipients')
        .selectAll()
        .where('campaign_id', '=', c.id)
        .where((eb) => eb.or([eb('state', '=', 'pending'), eb.and([eb('state', '=', 'waiting'), eb('next_at', '<=', now)])]))
        .orderBy('position')
        .limit(room)
        .execute();
      for (const r of next) {
        if (room <= 0) break;
        const placed = await this.queue(c, r);
        if (placed === 'failed') return queued;
        if (placed === 'full') break;
        if (placed === 'queued') {
          queued++;
          room--;
        }
      }
    }
    const left = await db.selectFrom('campaign_recipients').select('id').where('campaign_id', '=', c.id).where('state', '!=', 'done').limit(1).executeTakeFirst();
    if (!left) {
      await db.transaction().execute(async (tx) => {
        if (await moveCampaign(tx, c.id, ['running'], 'completed', { completed_at: nowIso() })) await addCampaignEvent(tx, c.id, 'system', 'completed');
      });
    }
    return queued;
  }

  /** Recipients whose call ended: done, or waiting for a retry. */
  private async settle(c: CampaignRow): Promise<void> {
    const { db } = this.deps;
    const rows = await db
      .selectFrom('campaign_recipients as r')
      .leftJoin('calls', 'calls.call_id', 'r.last_call_id')
      .leftJoin('outbound_calls as o', 'o.call_id', 'r.last_call_id')
      .select(['r.id', 'r.attempts', 'r.last_call_id', 'calls.status', 'calls.end_reason', 'calls.started_at', 'o.state as dial_state', 'o.updated_at as dial_updated_at'])
      .where('r.campaign_id', '=', c.id)
      .where('r.state', '=', 'calling')
      .execute();
    const lostBefore = new Date(Date.now() - LOST_CALL_MS).toISOString();
    const unrecordedBefore = new Date(Date.now() - 2 * this.leaseMs).toISOString();
    for (const r of rows) {
      let outcome: Outcome;
      if (r.status && FINAL.includes(r.status)) outcome = outcomeOfCall(r.status, r.end_reason);
      else if (r.status === 'in_progress' && r.started_at && r.started_at < lostBefore) outcome = 'failed';
      else if (r.dial_state === 'done' && (r.status === 'in_queue' || r.status === 'processing') && r.dial_updated_at && r.dial_updated_at < unrecordedBefore) {
        // Its dialer closed the call and died before writing the outcome: the record says failed (server_stopped).
        await db
          .updateTable('calls')
          .set({ status: 'failed', end_reason: 'server_stopped', ended_at: nowIso(), duration_s: 0, updated_at: nowIso() })
          .where('call_id', '=', r.last_call_id!)
          .where('status', 'in', ['in_queue', 'processing'])
          .execute();
        outcome = 'failed';
      } else continue;
      const retry = outcome !== 'completed' && outcome !== 'canceled' && outcome !== 'dnc' && r.attempts <= c.max_retries;
      const settled = await db
        .updateTable('campaign_recipients')
        .set({
          state: retry ? 'waiting' : 'done',
          outcome,
          next_at: retry ? new Date(Date.now() + c.retry_delay_min * this.minuteMs).toISOString() : null,
          connected: outcome === 'completed' ? 1 : sql<number>`connected`,
          updated_at: nowIso(),
        })
        .where('id', '=', r.id)
        .where('state', '=', 'calling')
        .where('last_call_id', '=', r.last_call_id)
        .returning('phone_number')
        .execute();
      if (outcome === 'dnc' && settled.length) {
        await addCampaignEvent(db, c.id, 'system', 'dnc_skipped', `Skipped ${settled[0]!.phone_number}: put on the do-not-call list while its call waited in the queue (call ${r.last_call_id}, cancelled, reason dnc)`);
      }
    }
  }

  /**
   * Recipients waiting for a call (first or retry) whose number is on the do-not-call list (the organization's, or the
   * campaign agent's) are done, outcome `dnc`, without a call; one `dnc_skipped` event names them.
   */
  private async skipListed(c: CampaignRow): Promise<void> {
    const skipped = await this.deps.db
      .updateTable('campaign_recipients')
      .set({ state: 'done', outcome: 'dnc', next_at: null, updated_at: nowIso() })
      .where('campaign_id', '=', c.id)
      .where('state', 'in', ['pending', 'waiting'])
      .where(listedSql(sql.val(c.org_id), sql.val(c.agent_id), sql.ref('campaign_recipients.phone_number')))
      .returning(['phone_number', 'position'])
      .execute();
    if (!skipped.length) return;
    const numbers = skipped.sort((a, b) => a.position - b.position).map((r) => r.phone_number);
    const detail = `Skipped ${numbers.length} recipient${numbers.length === 1 ? '' : 's'} on the do-not-call list: ${numbersText(numbers)}`;
    await addCampaignEvent(this.deps.db, c.id, 'system', 'dnc_skipped', detail);
    this.deps.logger.info({ campaignId: c.id, skipped: numbers.length }, 'campaign recipients on the do-not-call list skipped');
  }

  /**
   * Queues one recipient's next attempt from the number it was given: the recipient moves to `calling` in the same
   * transaction that queues the call, guarded on where it was, so the attempt is queued once whoever runs this.
   */
  private async queue(c: CampaignRow, r: RecipientRow): Promise<'queued' | 'taken' | 'full' | 'failed'> {
    const { db } = this.deps;
    const number = await findDialingNumber(db, c.org_id, r.from_number);
    if (!number) {
      await this.fail(c, `${r.from_number} is no longer a number your organization dials from`);
      return 'failed';
    }
    let route;
    try {
      route = await dialRoute(db, this.deps.carrier, number, 'fromNumbers');
    } catch (err) {
      await this.fail(c, err instanceof Error ? err.message : String(err));
      return 'failed';
    }
    if ((await waitingOn(db, route.paceKey)) >= this.deps.maxQueuedPerAddress) return 'full';
    const callId = newCallId();
    const variables = parseCallVariables(JSON.parse(r.variables)).variables;
    return db.transaction().execute(async (tx) => {
      const moved = await tx
        .updateTable('campaign_recipients')
        .set({ state: 'calling', attempts: r.attempts + 1, last_call_id: callId, next_at: null, updated_at: nowIso() })
        .where('id', '=', r.id)
        .where('state', '=', r.state)
        .where('attempts', '=', r.attempts)
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) !== 1) return 'taken' as const;
      await insertQueuedCall(tx, {
        callId,
        orgId: c.org_id,
        agentId: c.agent_id,
        to: r.phone_number,
        from: r.from_number,
        route,
        revisionId: null,
        variables,
        isTest: false,
        campaignId: c.id,
        retryOf: r.attempts > 0 ? r.last_call_id : null,
      });
      return 'queued' as const;
    });
  }

  private async fail(c: CampaignRow, error: string): Promise<void> {
    const { db } = this.deps;
    const failed = await db.transaction().execute(async (tx) => {
      if (!(await moveCampaign(tx, c.id, ['processing', 'running'], 'failed', { error, failed_at: nowIso() }))) return false;
      await addCampaignEvent(tx, c.id, 'system', 'failed', error);
      return true;
    });
    if (failed) {
      this.deps.logger.warn({ campaignId: c.id, error }, 'campaign failed');
      await withdrawQueued(db, c.id);
    }
  }
}
