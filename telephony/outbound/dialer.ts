// The outbound dialer: takes queued calls first in, first out per carrier address, waits for that address's pace
// (cpsLimit, in this process or across every server sharing Redis), places the INVITE through the call's outbound
// trunk (or the platform carrier) with digest on 401/407, lets it ring up to the trunk's ringing timeout, and runs the
// agent on the answered call through the same runtime and PhoneCall as an inbound call. Unanswered outcomes are
// recorded with the wire's statuses (busy, no-answer, failed, canceled).
//
// Claims are leases in the store (renewed every poll): a server that stops leaves its claimed calls to go back to the
// queue, and closes nothing twice: a call it may have sent an INVITE for is recorded failed, never dialed again.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Db } from '../../control-plane/store/db.js';
import type { Actor } from '../../control-plane/agents/agents.js';
import { FINAL_CALL_STATUSES, loadCall, updateCall } from '../../control-plane/calls/calls.js';
import { badRequest } from '../../control-plane/errors.js';
import { pinnedTarget, resolveCallConfig, type ResolvedCallConfig } from '../../control-plane/calls/call-config.js';
import type { PreCallResult } from '../../calls/pre-call.js';
import { voicemailDetection } from '../../calls/agent-spec.js';
import {
  cancelOutbound, cancelRequested, cancelRequestedOf, claimNext, dialRoute, moveOutbound, queuedPaceKeys, reclaimExpired, renewLeases, requeueOutbound,
  type DialRoute, type OutboundRow,
} from '../../control-plane/telephony/outbound.js';
import { parseCarrierAddress } from '../../control-plane/telephony/validation.js';
import { trunkPassword } from '../../control-plane/telephony/trunk-secrets.js';
import type { SecretBox } from '../../control-plane/secrets/secret-box.js';
import type { CarrierSettings } from '../../control-plane/telephony/carrier.js';
import type { CallRuntime } from '../../calls/runtime.js';
import type { Lease, SessionLimits } from '../../calls/session-limits.js';
import type { MediaLeg, MediaLegs } from '../media/leg.js';
import { acceptAnswer, buildOffer, checkSdp, type BuiltOffer, type MediaEncryption } from '../media/sdp.js';
import type { TelephonyMetrics } from '../metrics.js';
import type { PhoneCall } from '../phone-call.js';
import { startPhoneCall } from '../start-phone-call.js';
import { SipError } from '../sip/message.js';
import type { SipStack, SipTarget } from '../sip/stack.js';
import type { Dialog } from '../sip/dialog.js';
import type { DigestClientCredentials } from '../sip/digest.js';
import type { Selectable } from 'kysely';
import type { SipTrunksTable } from '../../control-plane/store/schema.js';
import { aheadMs, intervalMs, staleMs, until, type Pacer, type Slot } from './pacer.js';
import type { CallTransfers } from '../transfer.js';
import type { LiveCalls } from '../../calls/live-calls.js';
import { CallTrace, type DialSpan } from '../../calls/tracing.js';

/** A moment of the event loop held free for a send (the server wires transports/http/loop-reservations.ts here). */
export interface LoopReservation {
  release: () => void;
  move: (at: number) => void;
}
export interface LoopReservations {
  reserve(at: number): LoopReservation;
}

export interface DialerDeps {
  db: Db;
  runtime: CallRuntime;
  limits: SessionLimits;
  media: MediaLegs;
  pacer: Pacer;
  /** Opens sealed trunk passwords. */
  secrets: SecretBox;
  carrier: CarrierSettings;
  logger: Logger;
  metrics?: TelephonyMetrics;
  /** This server's name on the calls it claims. */
  owner: string;
  /** A call whose callee sends no RTP this long (while not on hold) is hung up; 0 never. */
  mediaTimeoutSecs?: number;
  /** How long a call rings before we CANCEL it (a no-answer; 60 s). */
  ringSecs?: number;
  /** How often the queue is looked at (other servers queue calls too) and leases renewed (500 ms). */
  pollMs?: number;
  /** A claim not renewed this long belongs to a server that stopped (30 s). */
  leaseMs?: number;
  /** Carries out the agents' transfers; without it a transfer ends the call as transfer_unavailable. */
  transfers?: CallTransfers;
  /** Each INVITE's slot is reserved here, so that the HTTP server starts no request right before it. */
  reservations?: LoopReservations;
  /** Answered calls are noted here with their dialog, so that another server hangs them up if this one dies. */
  live?: LiveCalls;
}

/**
 * Calls claimed and prepared ahead of the one waiting for its slot. Preparing takes store round trips and an RTP port;
 * while the same server takes a burst of POSTs one preparation took 30-60 ms (bench:outbound, two servers), longer than
 * the slot at cps 50, so with one call ahead slots went by with none ready.
 */
const LANE_AHEAD = 3;
/**
 * At intervals up to this, a lane's next call is marked as being dialed ('slotted') as soon as the call before it is,
 * about two intervals before its INVITE; at longer intervals, once the call before it has its slot. The store write
 * took 10-30 ms while two servers took a burst of POSTs (bench:outbound, PostgreSQL), longer than the 20.4 ms slot at
 * cps 50: written after the previous INVITE, it made slots late. The cost: a server killed in that window closes
 * the call as failed (server_stopped) instead of queueing it again; it is never dialed twice.
 */
const SLOTTING_EARLY_MS = 100;
/** Ringing timeout when the trunk sets none. */
const DEFAULT_RING_SECS = 60;
const DEFAULT_MAX_CALL_SECS = 3600;

/** Longest a voicemail detection listens (a machine's greeting that never ends: the message is left then). */
const MAX_DETECTION_MS = 30_000;


type Unanswered = { status: 'cancelled' | 'no_answer' | 'failed'; reason: string };

/** The wire's outcome of a final SIP answer other than 2xx (wire §4). */
export function outcomeOf(status: number, o: { ringTimedOut: boolean }): Unanswered {
  if (status === 487) return o.ringTimedOut ? { status: 'no_answer', reason: 'ringing_timeout' } : { status: 'cancelled', reason: 'canceled' };
  if (status === 486 || status === 600 || status === 603) return { status: 'failed', reason: 'busy' };
  if (status === 408 || status === 480) return { status: 'no_answer', reason: 'no_answer' };
  return { status: 'failed', reason: `sip_${status}` };
}

export class OutboundDialer {
  private readonly lanes = new Map<string, Promise<void>>();
  /**
   * Per lane, the event loop reserved at its next slot from its last send on (deps.reservations). The requests held
   * back by a send resume together right after it; were the next slot reserved only when the lane came to it, they
   * would all run first (16 POSTs, about 30 ms on SQLite) and make it late.
   */
  private readonly laneSlots = new Map<string, LoopReservation>();
  /** Keys whose lane was woken while it ran: it claims once more before it stops. */
  private readonly lookAgain = new Set<string>();
  private readonly ringing = new Map<string, Ringing>();
  private readonly calls = new Set<PhoneCall>();
  /** Calls this server has claimed and not yet closed or handed to a PhoneCall: the leases it renews. */
  private readonly held = new Set<string>();
  private readonly placing = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private sweeping = false;
  private sweepAgain = false;
  private stopped = false;
  private readonly pollMs: number;
  private readonly leaseMs: number;

  constructor(
    private readonly stack: SipStack,
    private readonly deps: DialerDeps,
  ) {
    this.pollMs = deps.pollMs ?? 500;
    this.leaseMs = deps.leaseMs ?? 30_000;
  }

  /** Starts serving the queue (calls left by a stopped server included). */
  start(): void {
    this.timer = setInterval(() => void this.sweep(), this.pollMs);
    this.timer.unref();
    void this.sweep();
  }

  /**
   * A call was queued here (on carrier key `paceKey`, when known): serve it now rather than at the next poll. When that
   * key's lane runs, the lane claims the call itself: no sweep (its four store queries per POST were most of the store
   * work while a burst of POSTs was answered, and the lanes' claims waited behind them); the lane is only told to look
   * again before it stops.
   */
  wake(paceKey?: string): void {
    if (paceKey !== undefined && this.lanes.has(paceKey)) {
      this.lookAgain.add(paceKey);
      return;
    }
    void this.sweep();
  }

  /** `POST /conversation/{callId}/cancel`: a queued call leaves the queue, a ringing one is canceled (CANCEL). */
  async cancel(actor: Actor, callId: string): Promise<{ callId: string; canceled: boolean; reason?: string }> {
    const outcome = await cancelOutbound(this.deps.db, actor, callId);
    if (!outcome.canceled) return outcome;
    if (outcome.wasQueued) {
      this.held.delete(callId);
      await this.record(outcome.row, { status: 'cancelled', reason: 'canceled' });
    }
    else {
      const ringing = this.ringing.get(callId);
      if (ringing) {
        ringing.canceled = true;
        ringing.abort.abort();
      }
    }
    return { callId, canceled: true };
  }

  /**
   * `POST /conversation/cancel` with `{callId, reason}` (the hosted SDK's form): a queued or ringing call is canceled as
   * above; an answered outbound call is ended (`canceled`), here or by the server that holds it (its next sweep).
   * 404 for an unknown call (403 for another organization's), 400 for one already over or not an outbound call.
   */
  async cancelCall(actor: Actor, callId: string, reason?: string): Promise<{ callId: string; status: 'cancelled'; previousStatus: string }> {
    const { db, logger } = this.deps;
    // 404 unknown; another organization's call: the spec's general 403, as for every resource.
    const before = await loadCall(db, actor, callId);
    const previousStatus = before.status;
    if (FINAL_CALL_STATUSES.has(previousStatus)) throw badRequest(`Conversation with ID ${callId} is already ${previousStatus} and cannot be cancelled`);
    const row = await db.selectFrom('outbound_calls').select(['state']).where('call_id', '=', callId).executeTakeFirst();
    if (!row) throw badRequest(`Conversation with ID ${callId} is not an outbound call and cannot be cancelled (a web call ends when its client closes it)`);
    logger.info({ callId, reason: reason ?? null }, 'outbound call cancel requested');
    if (row.state !== 'done') {
      const outcome = await this.cancel(actor, callId);
      if (outcome.canceled) return { callId, status: 'cancelled', previousStatus };
    }
    // Answered (or answered meanwhile): end it where it runs.
    const now = await loadCall(db, actor, callId);
    if (FINAL_CALL_STATUSES.has(now.status)) throw badRequest(`Conversation with ID ${callId} is already ${now.status} and cannot be cancelled`);
    // Answered and being attached ('processing') or up: the flag ends it as soon as its holder sees it attached.
    await db.updateTable('outbound_calls').set({ cancel_requested: 1, updated_at: new Date().toISOString() }).where('call_id', '=', callId).execute();
    this.endLocal(callId);
    return { callId, status: 'cancelled', previousStatus };
  }

  /** Ends an answered call this server holds (a cancel by its id); false when it is not here. */
  private endLocal(callId: string): boolean {
    for (const c of this.calls) {
      if (c.callId === callId) {
        c.end('canceled');
        return true;
      }
    }
    return false;
  }

  /** Stops dialing and ends the calls up with `reason`. Queued calls stay queued (for the next start). */
  async stop(reason: string): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const r of this.ringing.values()) r.abort.abort();
    // Lanes return (a slotted call not yet sent goes back to the queue); calls being placed settle; then every call
    // that is up (answered before or during this) ends.
    await Promise.all([...this.lanes.values(), ...this.placing]);
    const calls = [...this.calls];
    for (const c of calls) c.end(reason);
    await Promise.all(calls.map((c) => c.done));
  }

  private async sweep(): Promise<void> {
    if (this.stopped) return;
    if (this.sweeping) {
      this.sweepAgain = true; // a call queued during this sweep is served by the next one, not at the next poll
      return;
    }
    this.sweeping = true;
    const { db, owner } = this.deps;
    try {
      await renewLeases(db, owner, [...this.held]);
      for (const row of await reclaimExpired(db, this.leaseMs)) await this.closeStale(row);
      for (const id of await cancelRequested(db, owner)) {
        const ringing = this.ringing.get(id);
        if (ringing && !ringing.canceled) {
          ringing.canceled = true;
          ringing.abort.abort();
        }
      }
      // Answered calls held here whose cancel was asked of another server.
      const up = [...this.calls].map((c) => c.callId).filter((id): id is string => id !== null);
      if (up.length) for (const id of await cancelRequestedOf(db, up)) this.endLocal(id);
      for (const key of await queuedPaceKeys(db)) {
        if (!this.lanes.has(key)) {
          const lane = this.lane(key)
            .catch((err: unknown) => this.deps.logger.error({ err: err instanceof Error ? err.message : String(err), key }, 'outbound dialer lane failed'))
            .finally(() => {
              this.lanes.delete(key);
              // Woken after its last look: a sweep starts it again.
              if (this.lookAgain.delete(key)) void this.sweep();
            });
          this.lanes.set(key, lane);
        }
      }
    } catch (err) {
      this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'outbound dialer: queue sweep failed');
    } finally {
      this.sweeping = false;
      if (this.sweepAgain) {
        this.sweepAgain = false;
        void this.sweep();
      }
    }
  }

  /**
   * Serves one carrier address: claims the oldest queued call, prepares it (trunk, RTP port, offer), takes the address's
   * next pace slot and sends the INVITE at it; then the next, until none is waiting. Up to LANE_AHEAD calls after the
   * current one are claimed (in queue order) and prepared while it waits for its slot, so preparing (the store, an RTP
   * port) does not make a slot late. The slot is taken once the call is ready, so a slow preparation never sends a call
   * late against a slot the other calls are paced from; the INVITE goes out no sooner than one interval after this
   * lane's previous one.
   */
  private async lane(key: string): Promise<void> {
    let lastSentAt = -Infinity;
    /** Organizations at their session cap, until when (performance.now()): their calls wait without holding up others'. */
    const capped = new Map<string, number>();
    /** Calls being claimed and prepared, oldest first; each claims after the one before it has (first in, first out). */
    const ahead: Promise<Ready | null>[] = [];
    let lastClaim: Promise<void> = Promise.resolve();
    const topUp = () => {
      while (!this.stopped && ahead.length < LANE_AHEAD) {
        const next = this.ready(key, capped, lastClaim);
        lastClaim = next.claimed;
        ahead.push(next.ready);
      }
    };
    try {
      this.lookAgain.delete(key);
      topUp();
      for (;;) {
        while (ahead.length) {
          const call = await (ahead.shift() as Promise<Ready | null>);
          // None was waiting at that claim: the ones after it may still have found calls queued since.
          if (!call) continue;
          topUp();
          // The next call is marked as being dialed while this one waits for its slot (see SLOTTING_EARLY_MS).
          const next = ahead[0];
          const sentAt = await this.sendAtSlot(key, call, lastSentAt, () => void next?.then((n) => n && !this.stopped && this.slotting(n)));
          if (sentAt !== null) lastSentAt = sentAt;
        }
        // A call queued after the last claim, while this lane ran (wake): claim again rather than leave it to the poll.
        if (this.stopped || !this.lookAgain.delete(key)) break;
        topUp();
      }
    } finally {
      this.laneSlots.get(key)?.release();
      this.laneSlots.delete(key);
      // Stopped with calls ready: they were never sent, so they keep their place in the queue.
      for (const next of ahead.splice(0)) {
        const left = await next.catch(() => null);
        if (left) {
          if (left.slotting) {
            this.ringing.delete(left.row.call_id);
            await left.slotting.moved.catch(() => undefined);
          }
          void left.prepared.rtp.finish();
          left.lease.release();
          await this.requeue(left.row);
        }
      }
    }
  }

  /**
   * A claimed call goes back to its place in the queue (never sent); one whose cancel was asked for while it was
   * slotted (a lane's next call is slotted while the one before it waits) is recorded canceled instead.
   */
  private async requeue(row: OutboundRow): Promise<void> {
    const queued = await requeueOutbound(this.deps.db, row.call_id, this.deps.owner).catch(() => true);
    if (queued) this.held.delete(row.call_id);
    else await this.finish(row, ['claimed', 'slotted'], { status: 'cancelled', reason: 'canceled' });
  }

  /**
   * Claims the next call of `key` that can start (its organization under its session cap), once `after` has (so calls
   * are claimed in queue order), and prepares it; a call that cannot be prepared is recorded failed and the next one is
   * tried. `ready` resolves null when none is waiting; `claimed` once the first claim is answered.
   */
  private ready(key: string, capped: Map<string, number>, after: Promise<void>): { claimed: Promise<void>; ready: Promise<Ready | null> } {
    let claimed!: () => void;
    const claimedP = new Promise<void>((r) => (claimed = r));
    const ready = after.then(() => this.claimAndPrepare(key, capped, claimed)).finally(() => claimed());
    return { claimed: claimedP, ready };
  }

  private async claimAndPrepare(key: string, capped: Map<string, number>, claimed: () => void): Promise<Ready | null> {
    const { db, owner, limits } = this.deps;
    while (!this.stopped) {
      const now = performance.now();
      for (const [org, until] of capped) if (until <= now) capped.delete(org);
      const row = await claimNext(db, key, owner, [...capped.keys()]).catch(() => null);
      claimed();
      if (!row) return null;
      if (row.dncListed) {
        // Put on the do-not-call list since it was queued: never dialed, recorded with its events.
        await this.finish(row, ['claimed'], { status: 'cancelled', reason: 'dnc' });
        continue;
      }
      this.held.add(row.call_id);
      let lease: Lease;
      try {
        lease = limits.acquire('speech', `org:${row.org_id}`, { orgId: row.org_id, agentId: row.agent_id, channel: 'outbound' });
      } catch {
        // The server or the organization is at its call limit: the call keeps its place, and the calls of other
        // organizations behind it go first until the next poll.
        await this.requeue(row);
        // With reservations another agent of the organization may still have a free place: set aside this agent only.
        capped.set(limits.hasReservations(row.org_id) ? `agent:${row.agent_id}` : row.org_id, performance.now() + this.pollMs);
        continue;
      }
      let rtp: MediaLeg | null = null;
      try {
        const route = await dialRoute(db, this.deps.carrier, { phoneNumber: row.from_number, trunkId: row.trunk_id, platformNumberId: null }, 'fromNumber').catch(() => {
          throw new DialFailure('no_route');
        });
        const prepared = await this.prepare(row, route, (leg) => (rtp = leg));
        return { row, route, prepared, lease };
      } catch (err) {
        void (rtp as MediaLeg | null)?.finish();
        lease.release();
        const reason = err instanceof DialFailure ? err.message : 'error';
        if (!(err instanceof DialFailure)) this.deps.logger.error({ callId: row.call_id, err: err instanceof Error ? err.message : String(err) }, 'outbound call could not be placed');
        await this.finish(row, ['claimed'], { status: 'failed', reason });
      }
    }
    return null;
  }

  /**
   * Marks a prepared call as being dialed ('slotted'), once, before its slot, so that nothing is left to write between
   * the slot and the INVITE (a cancel meanwhile flags it and aborts its Ringing; a crash meanwhile closes it as
   * server_stopped, never dialed twice).
   */
  private slotting(call: Ready): NonNullable<Ready['slotting']> {
    if (!call.slotting) {
      const ring: Ringing = { abort: new AbortController(), canceled: false };
      this.ringing.set(call.row.call_id, ring);
      const moved = moveOutbound(this.deps.db, call.row.call_id, ['claimed'], 'slotted', this.deps.owner);
      moved.catch(() => undefined); // awaited by the call's send (or the lane's stop)
      call.slotting = { ring, moved };
    }
    return call.slotting;
  }

  /**
   * Waits for a prepared call's pace slot and sends its INVITE; resolves to when it was sent (null: not sent).
   * `slotNext` marks the lane's next call as being dialed: called once this call is (at intervals up to
   * SLOTTING_EARLY_MS), else once its slot is taken.
   */
  private async sendAtSlot(key: string, call: Ready, lastSentAt: number, slotNext: () => void): Promise<number | null> {
    const { db, owner } = this.deps;
    const { row, route, prepared, lease } = call;
    const { ring, moved } = this.slotting(call);
    // This lane's reservation of the event loop at its next slot (made at the previous send, so that the requests held
    // back by that one, resuming together, do not run into this slot: see laneSlots).
    let reservation = this.laneSlots.get(key);
    this.laneSlots.delete(key);
    try {
      if (!(await moved)) {
        this.ringing.delete(row.call_id);
        void prepared.rtp.finish(); // canceled since it was claimed (the cancel recorded it)
        lease.release();
        this.held.delete(row.call_id);
        return null;
      }
      const early = intervalMs(route.cps) <= SLOTTING_EARLY_MS;
      if (early) slotNext();
      // The slot is taken when it is due (taken ahead across servers: see Pacer.takeAhead), right before the INVITE,
      // so a stall of this process before the take cannot send it late against a slot the other servers count from.
      // This lane sends no sooner than an interval after its previous INVITE.
      const earliest = lastSentAt + intervalMs(route.cps);
      const at = Math.max(performance.now(), earliest);
      if (reservation) reservation.move(at);
      else reservation = this.deps.reservations?.reserve(at);
      await until(earliest - (this.deps.pacer.takeNow ? 0 : aheadMs(route.cps)));
      try {
        while (!ring.canceled && !this.stopped) {
          // In this process the take is synchronous (the INVITE leaves in the same run); across servers (Redis) the
          // slot is taken ahead of its time, so that the answer's way back does not make the INVITE late.
          const now = performance.now();
          const local = this.deps.pacer.takeNow?.(key, route.cps);
          const slot: Slot = local === undefined ? await this.deps.pacer.takeAhead(key, route.cps) : local > 0 ? { wait: local } : { at: now };
          if ('wait' in slot) {
            reservation?.move(performance.now() + slot.wait);
            await until(performance.now() + slot.wait);
            continue;
          }
          if (!early) slotNext();
          const sendAt = Math.max(slot.at, earliest);
          if (sendAt > performance.now()) {
            reservation?.move(sendAt);
            await until(sendAt);
          }
          // This process stalled past its slot: sent now, the INVITE could land just before the next slot, which
          // another server may already hold. That slot goes unused; the call takes the next one.
          const late = performance.now() - slot.at;
          if (late <= staleMs(route.cps)) break;
          this.deps.logger.debug({ key, lateMs: late }, 'outbound pace slot passed while this server stalled; taking the next');
        }
      } catch (err) {
        // The pace cannot be kept (Redis is down): the call waits in the queue rather than fail undialed.
        this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'outbound pace unavailable; calls wait');
        this.ringing.delete(row.call_id);
        void prepared.rtp.finish();
        lease.release();
        await this.requeue(row);
        await sleep(this.pollMs);
        return null;
      }
      if (this.stopped || ring.canceled) {
        this.ringing.delete(row.call_id);
        void prepared.rtp.finish();
        lease.release();
        if (this.stopped) await this.requeue(row); // never sent: it keeps its place for the next start
        else await this.finish(row, ['slotted'], { status: 'cancelled', reason: 'canceled' });
        return null;
      }
      const sentAt = performance.now();
      // The next slot counts from when the INVITE has left (its send completed), not from here: on a machine short of
      // CPU it left up to 23 ms after this point, and the next slot came that much early.
      const onSent = () => void this.deps.pacer.sent(key, route.cps).catch(() => undefined);
      const placing = this.place(row, prepared, lease, ring, onSent).finally(() => this.placing.delete(placing));
      // The INVITE was handed to the transport in place()'s first, synchronous run: the loop is free again, until the
      // lane's next slot (released by the lane if it has no next call).
      const next = this.deps.reservations?.reserve(sentAt + intervalMs(route.cps));
      if (next) this.laneSlots.set(key, next);
      reservation?.release();
      this.placing.add(placing);
      void moveOutbound(db, row.call_id, ['slotted'], 'dialing', owner).catch(() => undefined);
      return sentAt;
    } catch (err) {
      this.ringing.delete(row.call_id);
      void prepared.rtp.finish();
      lease.release();
      this.deps.logger.error({ callId: row.call_id, err: err instanceof Error ? err.message : String(err) }, 'outbound call could not be placed');
      await this.finish(row, ['claimed', 'slotted'], { status: 'failed', reason: 'error' });
      return null;
    } finally {
      reservation?.release();
    }
  }

  /** Everything a call needs before its INVITE: where it goes, with what credentials, its RTP port and SDP offer. */
  private async prepare(row: OutboundRow, route: DialRoute, onLeg: (leg: MediaLeg) => void): Promise<Prepared> {
    const line = await carrierLine(this.deps, row.trunk_id, row.to_number);
    const rtp = await this.deps.media.bind(this.stack.host === '0.0.0.0' ? '0.0.0.0' : this.stack.host);
    onLeg(rtp);
    const offer = buildOffer({ encryption: line.encryption, localAddress: this.stack.publicAddress, localPort: rtp.localPort });
    return { route, trunk: line.trunk, uri: line.uri, target: line.target, auth: line.auth, rtp, offer };
  }

  /** Sends the INVITE, rings, and on the answer runs the agent on the call; an unanswered outcome is recorded. */
  private async place(row: OutboundRow, p: Prepared, lease: Lease, ring: Ringing, onSent: () => void): Promise<void> {
    const { db, logger } = this.deps;
    const callId = row.call_id;
    let rtp: MediaLeg | null = p.rtp;
    let dialog: Dialog | null = null;
    let phone = null as PhoneCall | null; // set by startPhoneCall once the line is answered
    let ringTimedOut = false;
    // The call's span from its INVITE (the runtime ends it once the agent is on), and the dial's.
    let trace: CallTrace | null = null;
    let dial: DialSpan | null = null;
    const ringTimer = setTimeout(() => {
      ringTimedOut = true;
      ring.abort.abort();
    }, (this.deps.ringSecs ?? DEFAULT_RING_SECS) * 1000);
    try {
      const sentAt = performance.now();
      const dialing = this.stack.createUAC(p.uri, {
        localSdp: p.offer.sdp,
        from: row.from_number,
        target: p.target,
        auth: p.auth,
        signal: ring.abort.signal,
        headers: p.trunk ? (JSON.parse(p.trunk.headers) as Record<string, string>) : undefined,
        onSent,
        checkSdp, // the callee's re-INVITEs and UPDATEs: the same media-address rules as its answer
      });
      dialing.catch(() => undefined); // settled below; not an unhandled rejection while the status is written
      // Made after the INVITE has gone (nothing added before it), timed from when it went.
      const dialedAt = Date.now() - (performance.now() - sentAt);
      trace = CallTrace.start({ callId, orgId: row.org_id, agentId: row.agent_id, mode: 'webcall', type: 'telephony_outbound', isTest: Boolean(row.is_test) }, dialedAt);
      dial = trace.dial(row.trunk_id, dialedAt);
      // The agent's configuration and its pre-call API while the phone rings: once the callee answers, the agent does
      // not make them wait for the lookup (at most its timeout when it is slower than the ringing).
      const early = this.beforeAnswer(row);
      await updateCall(db, callId, { status: 'processing' });
      dialog = await dialing;
      dial.end({ status: 'answered', reason: 'answered' }, 200);
      clearTimeout(ringTimer);
      this.ringing.delete(callId);
      // Answered: the call is no longer the queue's (nor cancelable). If another server closed it meanwhile (our lease
      // lapsed), its record is final: hang up without writing anything.
      if (!(await moveOutbound(db, callId, ['slotted', 'dialing'], 'done'))) {
        this.held.delete(callId);
        await dialog.destroy({ reason: 'closed_elsewhere' }).catch(() => undefined);
        void p.rtp.finish();
        lease.release();
        logger.warn({ callId }, 'outbound call answered after its record was closed elsewhere; hung up');
        trace.end({ status: 'failed', reason: 'closed_elsewhere' });
        return;
      }
      this.held.delete(callId);
      const accepted = acceptAnswer(dialog.remoteSdp, p.offer);
      if (!accepted.ok) {
        // Refused (a media address we never send to, more than SDP_LIMITS, no codec or key we offered): BYE below.
        logger.warn({ callId, status: accepted.status, reason: accepted.reason }, 'outbound call: the answer SDP was refused');
        throw new DialFailure('bad_answer_sdp');
      }
      await startPhoneCall(
        { ...this.deps, logger },
        {
          direction: 'outbound',
          callId,
          orgId: row.org_id,
          agentId: row.agent_id,
          ownNumber: row.from_number,
          dialog,
          rtp: p.rtp,
          media: accepted,
          noiseSuppression: Boolean(p.trunk?.noise_suppression),
          lease,
          maxCallDurationSecs: p.trunk?.max_call_duration_secs ?? DEFAULT_MAX_CALL_SECS,
          setupSecs: (performance.now() - sentAt) / 1000,
          calls: this.calls,
        },
        {
          onAnswered: (answered) => {
            phone = answered;
            rtp = null;
            // Its end frees a place under the organization's (and the server's) call cap: calls held back by the cap
            // are claimed now, not at the next poll (a lane that found its organization capped stopped; the poll is 500 ms).
            void answered.lineClosed.then(() => {
              if (!this.stopped) this.wake();
            });
          },
          agent: async (answered) => {
            const { resolved, preCall } = await early;
            // Voicemail detection: who answered decides whether the agent talks, or leaves its message on a machine.
            const vmd = voicemailDetection(resolved.config);
            const heard = vmd ? await answered.detectAnswer(await this.deps.runtime.answerDetector(), MAX_DETECTION_MS) : null;
            const machine = heard !== null && (heard.decision.verdict === 'voicemail' || heard.decision.verdict === 'ivr');
            if (heard) logger.info({ callId, verdict: heard.decision.verdict, atMs: Math.round(heard.decision.atMs), reason: heard.decision.reason, greetingEnded: heard.greetingEnded }, 'outbound call answered');
            return {
              ...(heard ? { answer: heard.decision } : {}),
              ...(machine ? { leaveMessage: vmd!.endText } : {}),
              resolved,
              preCall,
              trace: trace ?? undefined,
              type: 'telephony_outbound',
              isTest: Boolean(row.is_test),
              variables: JSON.parse(row.variables) as Record<string, string | number | boolean>,
              fromNumber: row.from_number,
              toNumber: row.to_number,
              queued: true,
            };
          },
        },
      );
      logger.info({ callId, sipCallId: dialog.callId, to: row.to_number, from: row.from_number, trunk: row.trunk_id }, 'outbound call answered');
    } catch (err) {
      clearTimeout(ringTimer);
      this.ringing.delete(callId);
      ring.abort.abort(); // an INVITE still out (a store error above) is CANCELed, not left to be answered into nothing
      void rtp?.finish();
      const message = err instanceof Error ? err.message : String(err);
      if (dialog) {
        // Answered, but the call could not go on (its SDP, its media, the agent): hang up, and the record says why.
        if (!dialog.destroyed) await dialog.destroy({ reason: 'error' }).catch(() => undefined);
        if (phone) phone.end('error');
        else lease.release();
        logger.error({ callId, err: message }, 'outbound call answered, but it could not go on');
        const outcome = { status: 'failed' as const, reason: err instanceof DialFailure ? err.message : 'agent_unavailable' };
        trace?.end(outcome);
        await this.record(row, outcome);
        // A PhoneCall gives its row back once done; a call refused before one existed gives it back here.
        if (!phone) await this.deps.live?.release(callId);
        return;
      }
      lease.release();
      if (!(err instanceof SipError) && !(err instanceof DialFailure)) logger.error({ callId, err: message }, 'outbound call failed');
      const outcome = this.unansweredOutcome(err, ring, ringTimedOut);
      // The final response's status when one came from the far end (not one our own stack made up).
      dial?.end(outcome, err instanceof SipError && err.response?.source ? err.status : null);
      trace?.end(outcome);
      await this.finish(row, ['slotted', 'dialing'], outcome);
    }
  }

  /**
   * The call's configuration (its pinned revision) and its pre-call API started with the call's variables; settled
   * by the answer (an error resolving the configuration surfaces there). Never an unhandled rejection.
   */
  private beforeAnswer(row: OutboundRow): Promise<{ resolved: ResolvedCallConfig; preCall: Promise<PreCallResult | null> }> {
    const { db } = this.deps;
    const early = (async () => {
      const resolved = await resolveCallConfig(db, { orgId: row.org_id, name: 'telephony' }, row.agent_id, await pinnedTarget(db, row.revision_id));
      const variables = JSON.parse(row.variables) as Record<string, string | number | boolean>;
      const preCall = this.deps.runtime.preCall({ resolved, type: 'telephony_outbound', callId: row.call_id, variables, fromNumber: row.from_number, toNumber: row.to_number });
      return { resolved, preCall };
    })();
    early.catch(() => undefined);
    return early;
  }

  /** The outcome of an INVITE that ended without an answer. */
  private unansweredOutcome(err: unknown, ring: Ringing, ringTimedOut: boolean): Unanswered {
    if (err instanceof DialFailure) return { status: 'failed', reason: err.message };
    if (!(err instanceof SipError)) return { status: 'failed', reason: 'error' };
    if (err.status === 487) {
      if (ring.canceled || ringTimedOut) return outcomeOf(487, { ringTimedOut });
      return { status: 'failed', reason: this.stopped ? 'server_shutdown' : 'sip_487' }; // not our CANCEL
    }
    // Made up by our own stack (no response came from anywhere): the carrier never answered, or could not be reached.
    if (!err.response?.source) return { status: 'failed', reason: err.status === 408 ? 'no_response' : 'unreachable' };
    return outcomeOf(err.status, { ringTimedOut });
  }

  /** A call a stopped server had claimed for dialing: it may have rung, so it is closed as failed, not dialed again. */
  private async closeStale(row: OutboundRow): Promise<void> {
    await this.finish(row, ['slotted', 'dialing'], { status: 'failed', reason: 'server_stopped' }, false);
  }

  /**
   * Closes a call's row (only from the states given, so each call gets one outcome, whichever server writes first)
   * and records its outcome.
   */
  private async finish(row: OutboundRow, from: string[], outcome: Unanswered, mine = true): Promise<void> {
    try {
      const moved = await moveOutbound(this.deps.db, row.call_id, from, 'done', mine ? this.deps.owner : undefined);
      if (mine) this.held.delete(row.call_id);
      if (moved) await this.record(row, outcome);
    } catch (err) {
      this.deps.logger.warn({ callId: row.call_id, err: err instanceof Error ? err.message : String(err) }, 'could not close an outbound call');
    }
  }

  /** The call record and events of a call that was not answered (or could not go on once answered). */
  private async record(row: OutboundRow, outcome: Unanswered): Promise<void> {
    try {
      await this.deps.runtime.recordUnanswered(
        {
          orgId: row.org_id,
          agentId: row.agent_id,
          type: 'telephony_outbound',
          fromNumber: row.from_number,
          toNumber: row.to_number,
          callId: row.call_id,
          variables: JSON.parse(row.variables) as Record<string, string | number | boolean>,
          revisionId: row.revision_id,
        },
        outcome,
      );
    } catch (err) {
      this.deps.logger.warn({ callId: row.call_id, err: err instanceof Error ? err.message : String(err) }, 'could not record an unanswered outbound call');
    }
  }
}

/** A call being dialed (from its slot until the answer): aborting it CANCELs the INVITE. */
interface Ringing {
  abort: AbortController;
  /** Canceled by request (not by the ringing timeout). */
  canceled: boolean;
}

/** A call that could not be placed, with the `callFailureReason` it gets. */
export class DialFailure extends Error {}

/** Where a call to a number goes out: its outbound trunk's (or the platform carrier's) address, credentials, media rule. */
export interface CarrierLine {
  trunk: Selectable<SipTrunksTable> | null;
  /** The Request-URI: the number at the carrier's address. */
  uri: string;
  target: SipTarget;
  auth?: DigestClientCredentials;
  encryption: MediaEncryption;
}

/** The line to `toNumber` through outbound trunk `trunkId` (null: the platform carrier); DialFailure when there is none. */
export async function carrierLine(
  deps: { db: Db; secrets: SecretBox; carrier: CarrierSettings },
  trunkId: string | null,
  toNumber: string,
): Promise<CarrierLine> {
  const { db, carrier } = deps;
  const trunk = trunkId ? await db.selectFrom('sip_trunks').selectAll().where('id', '=', trunkId).executeTakeFirst() : null;
  if (trunkId && !trunk) throw new DialFailure('trunk_deleted');
  const parsed = parseCarrierAddress(trunk ? trunk.address : carrier.address);
  if (!parsed) throw new DialFailure('no_route');
  const transport = (trunk ? trunk.transport : carrier.transport) ?? 'udp';
  if (transport === 'tls') throw new DialFailure('tls_unsupported');
  const target = { address: parsed.host, port: parsed.port ?? 5060, transport: transport as 'udp' | 'tcp' };
  const host = parsed.host.includes(':') ? `[${parsed.host}]` : parsed.host;
  const uri = `sip:${toNumber}@${host}:${target.port}${transport === 'tcp' ? ';transport=tcp' : ''}`;
  const username = trunk ? trunk.auth_username : carrier.username;
  const password = trunk ? (trunk.auth_username ? await trunkPassword(db, deps.secrets, trunk.id) : null) : (carrier.password ?? null);
  const encryption = (trunk?.media_encryption as MediaEncryption | undefined) ?? 'allow';
  return { trunk: trunk ?? null, uri, target, auth: username && password ? { username, password } : undefined, encryption };
}

/** A claimed call, prepared, with its organization's session lease: ready for its pace slot. */
interface Ready {
  row: OutboundRow;
  route: DialRoute;
  prepared: Prepared;
  lease: Lease;
  /** Once started (OutboundDialer.slotting): its move to 'slotted' and its Ringing. */
  slotting?: { moved: Promise<boolean>; ring: Ringing };
}

/** What a claimed call needs to be sent at its pace slot. */
interface Prepared {
  route: DialRoute;
  trunk: Selectable<SipTrunksTable> | null;
  uri: string;
  target: SipTarget;
  auth?: DigestClientCredentials;
  rtp: MediaLeg;
  offer: BuiltOffer;
}
