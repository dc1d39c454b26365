// Calls outlive the process that runs them only in the store: every call that is up has a row there (web and chat
// calls from their record's creation, phone calls from the answer, with their SIP dialog), renewed by its server
// every third of the lease. When a server dies (kill -9, a crash, its machine gone) its rows go stale, and whoever is
// alive (the same server restarted, or any other on the store) ends each call once: the carrier gets a BYE from the
// dialog kept in the row, the record is made final (`failed`, `server_stopped`) with its post-conversation and
// analytics-completed events, and campaigns then settle the recipient as for any failed call.
import type { Logger } from 'pino';
import type { Db } from '../control-plane/store/db.js';
import { abandonedLiveCalls, claimLiveCall, holdLiveCall, releaseLiveCall, renewLiveCalls, type LiveCallRow } from '../control-plane/calls/live-calls.js';

/**
 * A phone call's SIP dialog as telephony snapshots it (telephony/sip/dialog.ts `Dialog.snapshot()`): the call layer keeps
 * it as JSON in the call's row and hands it back, unread, to the hangUp handler the server wires to telephony.
 */
export type KeptDialog = object;

export interface LiveCallsDeps {
  db: Db;
  /** This server's name on the rows it holds. */
  owner: string;
  /** A row not renewed this long belongs to a server that stopped (PARLEY_OUTBOUND_LEASE_SECS). */
  leaseMs: number;
  logger: Logger;
}

export interface AbandonedCallHandlers {
  /** Makes an abandoned call's record final, last known up at `lastSeen`; false when it was final already. */
  closeRecord(callId: string, lastSeen: Date): Promise<boolean>;
  /** Sends the BYE of an abandoned phone call. Absent (no SIP leg here): phone calls are left to a server that has one. */
  hangUp?(dialog: KeptDialog): Promise<void>;
}

/** Abandoned rows looked at per pass (the rest at the next). */
const BATCH = 50;
/** Longest a pass waits for the answer to one BYE (a peer that never answers: the BYE's transaction goes on alone). */
const BYE_WAIT_MS = 2000;
/** Rows renewed per statement. */
const RENEW_CHUNK = 500;

export class LiveCalls {
  /** The calls this server holds (and renews). */
  private readonly held = new Set<string>();
  /** The SIP dialogs of the phone calls held: the call's own, then any it added (a bridged transfer's second call). */
  private readonly dialogs = new Map<string, { orgId: string; kept: KeptDialog[] }>();
  private timer: NodeJS.Timeout | null = null;
  private handlers: AbandonedCallHandlers | null = null;
  private pass: Promise<void> = Promise.resolve();
  private passing = false;

  constructor(private readonly deps: LiveCallsDeps) {}

  /**
   * Notes that this server holds the call (a phone call with its dialog, for the BYE). A store that cannot take it
   * leaves the call running, logged: it would not be ended for us if we died.
   */
  async hold(callId: string, orgId: string, sipDialog: KeptDialog | null = null): Promise<void> {
    this.held.add(callId);
    if (sipDialog) this.dialogs.set(callId, { orgId, kept: [sipDialog] });
    await holdLiveCall(this.deps.db, { callId, orgId, owner: this.deps.owner, sipDialog }).catch((err: unknown) =>
      this.deps.logger.warn({ callId, err: err instanceof Error ? err.message : String(err) }, 'could not note a live call in the store'),
    );
  }

  /**
   * Adds a dialog to a held phone call's row (a bridged transfer's second call): if this server dies, that line gets
   * its BYE too. The row then keeps a list of dialogs.
   */
  async keepAlso(callId: string, sipDialog: KeptDialog): Promise<void> {
    const entry = this.dialogs.get(callId);
    if (!entry || !this.held.has(callId)) return;
    entry.kept.push(sipDialog);
    await holdLiveCall(this.deps.db, { callId, orgId: entry.orgId, owner: this.deps.owner, sipDialog: entry.kept }).catch((err: unknown) =>
      this.deps.logger.warn({ callId, err: err instanceof Error ? err.message : String(err) }, 'could not note a second line of a live call in the store'),
    );
  }

  /** The call is over (record final, line closed). */
  async release(callId: string): Promise<void> {
    this.dialogs.delete(callId);
    if (!this.held.delete(callId)) return;
    await releaseLiveCall(this.deps.db, callId, this.deps.owner).catch((err: unknown) =>
      this.deps.logger.warn({ callId, err: err instanceof Error ? err.message : String(err) }, 'could not remove a live call from the store'),
    );
  }

  /** Renews this server's rows and ends the calls of stopped servers, now and every third of the lease. */
  start(handlers: AbandonedCallHandlers): void {
    this.handlers = handlers;
    this.timer = setInterval(() => this.tick(), Math.max(200, Math.floor(this.deps.leaseMs / 3)));
    this.timer.unref();
    this.tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pass;
  }

  private tick(): void {
    if (this.passing || !this.handlers) return;
    this.passing = true;
    this.pass = this.runPass(this.handlers)
      .catch((err: unknown) => this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'live calls: pass failed'))
      .finally(() => (this.passing = false));
  }

  private async runPass(handlers: AbandonedCallHandlers): Promise<void> {
    const { db, owner, leaseMs } = this.deps;
    const held = [...this.held];
    for (let i = 0; i < held.length; i += RENEW_CHUNK) await renewLiveCalls(db, owner, held.slice(i, i + RENEW_CHUNK));
    for (const row of await abandonedLiveCalls(db, leaseMs, BATCH)) {
      if (this.held.has(row.call_id)) continue; // ours (renewed late: this loop was held up)
      if (row.sip_dialog && !handlers.hangUp) continue;
      if (!(await claimLiveCall(db, row, owner))) continue;
      await this.endAbandoned(row, handlers);
    }
  }

  /** One abandoned call: BYE (a phone call), then the final record and its events, then its row. */
  private async endAbandoned(row: LiveCallRow, handlers: AbandonedCallHandlers): Promise<void> {
    const { logger } = this.deps;
    const callId = row.call_id;
    if (row.sip_dialog && handlers.hangUp) {
      // One dialog, or a list (the call's own and a bridged transfer's second call): each gets its BYE.
      const kept = JSON.parse(row.sip_dialog) as KeptDialog | KeptDialog[];
      const hangUp = handlers.hangUp;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all((Array.isArray(kept) ? kept : [kept]).map((dialog) =>
          hangUp(dialog).catch((err: unknown) => logger.warn({ callId, err: err instanceof Error ? err.message : String(err) }, 'live calls: BYE of an abandoned call failed')),
        )),
        new Promise((r) => (timer = setTimeout(r, BYE_WAIT_MS))),
      ]);
      clearTimeout(timer);
    }
    const closed = await handlers.closeRecord(callId, new Date(row.renewed_at));
    await releaseLiveCall(this.deps.db, callId, this.deps.owner);
    logger.warn({ callId, heldBy: row.owner, lastSeen: row.renewed_at, bye: Boolean(row.sip_dialog), recordClosed: closed }, 'ended a call its server stopped holding');
  }
}
