// Inbound calls: an INVITE is routed to the agent that answers the called number (or trunk), checked against the
// trunk's rules (addresses, caller numbers, digest with its guessing limits, the kill switch, capacity), answered with
// SDP, and run through the same call runtime as web calls with an RTP session as its audio.
import type { Logger } from 'pino';
import type { Db } from '../control-plane/store/db.js';
import { resolveInbound, trunkPassword, addressAllowed, type InboundTrunk } from '../control-plane/telephony/routing.js';
import type { SecretBox } from '../control-plane/secrets/secret-box.js';
import { resolveCallConfig } from '../control-plane/calls/call-config.js';
import type { CallRuntime } from '../calls/runtime.js';
import type { SessionLimits } from '../calls/session-limits.js';
import type { CarrierSettings } from '../control-plane/telephony/carrier.js';
import { ApiError } from '../control-plane/errors.js';
import { challenge, verify } from './sip/digest.js';
import type { SipRequest, SipResponse } from './sip/message.js';
import type { SipStack } from './sip/stack.js';
import { checkSdp, negotiate } from './media/sdp.js';
import type { MediaLeg, MediaLegs } from './media/leg.js';
import type { PhoneCall } from './phone-call.js';
import { startPhoneCall } from './start-phone-call.js';
import type { TelephonyMetrics } from './metrics.js';
import type { CallTransfers } from './transfer.js';
import { LocalDigestGuard, type DigestAttempt, type DigestGuard, type GuardScope } from './digest-guard.js';
import type { LiveCalls } from '../calls/live-calls.js';

export interface InboundDeps {
  db: Db;
  runtime: CallRuntime;
  limits: SessionLimits;
  /** Opens sealed trunk passwords. */
  secrets: SecretBox;
  carrier: CarrierSettings;
  logger: Logger;
  /** Where calls' RTP legs run (the media worker thread, or the main thread). */
  media: MediaLegs;
  /** A call whose caller sends no RTP this long (while not on hold) is hung up; 0 never. */
  mediaTimeoutSecs?: number;
  /** The digest realm we challenge with. */
  realm?: string;
  metrics?: TelephonyMetrics;
  /** Carries out the agents' transfers; without it a transfer ends the call as transfer_unavailable. */
  transfers?: CallTransfers;
  /** Counts wrong digest answers and refuses guessers while they cool off (default: counted in this process). */
  digestGuard?: DigestGuard;
  /** Answered calls are noted here with their dialog, so that another server hangs them up if this one dies. */
  live?: LiveCalls;
}

/** Platform-number calls (no trunk): the carrier's defaults. */
const PLATFORM_DEFAULTS = { mediaEncryption: 'allow' as const, noiseSuppression: false, ringingTimeoutSecs: 30, maxCallDurationSecs: 3600 };
/** How long a refused caller should wait (503). */
const RETRY_AFTER_S = 5;
/** The guard's trunk name for the platform carrier's credentials (trunk ids are hex: no clash). */
const PLATFORM_CARRIER = 'platform-carrier';

/** The called number of a Request-URI user part: `+` and digits (a digits-only user part gets its `+`); null otherwise. */
export function calledNumber(user: string | undefined): string | null {
  const u = (user ?? '').replace(/[-.() ]/g, '');
  if (/^\+[1-9]\d{6,14}$/.test(u)) return u;
  if (/^[1-9]\d{6,14}$/.test(u)) return `+${u}`;
  return null;
}

export class InboundCalls {
  private readonly calls = new Set<PhoneCall>();
  private readonly realm: string;
  private readonly guard: DigestGuard;

  constructor(
    private readonly stack: SipStack,
    private readonly deps: InboundDeps,
  ) {
    this.realm = deps.realm ?? 'parley';
    this.guard = deps.digestGuard ?? new LocalDigestGuard();
    stack.use('INVITE', (req, res) => {
      this.invite(req, res).catch((err: unknown) => {
        deps.logger.error({ err: err instanceof Error ? err.message : String(err), callId: req.headers.callId }, 'inbound call failed');
        if (!res.finalSent) res.send(500);
      });
    });
  }

  /** Calls up now. */
  get active(): number {
    return this.calls.size;
  }

  /** Ends every call (server shutdown): the agents stop, BYE goes out; resolves when their records are written. */
  async endAll(reason: string): Promise<void> {
    const calls = [...this.calls];
    for (const c of calls) c.end(reason);
    await Promise.all(calls.map((c) => c.done));
  }

  private async invite(req: SipRequest, res: SipResponse): Promise<void> {
    const receivedAt = performance.now();
    const { db, logger } = this.deps;
    const called = calledNumber(req.ruri.user);
    const caller = calledNumber(req.headers.from.user) ?? req.headers.from.user ?? '';
    const source = req.source.address;
    const presentedUser = /username="([^"]*)"/i.exec(req.get('authorization') ?? '')?.[1];
    const route = await resolveInbound(db, { calledNumber: called ?? '', sourceAddress: source, authUsername: presentedUser });
    if (route.kind === 'none') {
      if (route.tryCredentials) challenge(res, this.realm);
      else res.send(404, 'Not Found');
      return;
    }
    const trunk = route.trunk;
    // The trunk's checks (a platform number: the carrier's).
    const allowed = trunk ? trunk.allowedAddresses : this.deps.carrier.allowedAddresses;
    if (allowed.length && !addressAllowed(allowed, source)) {
      res.send(403, 'Forbidden');
      return;
    }
    if (trunk?.allowedNumbers.length && !trunk.allowedNumbers.includes(caller)) {
      res.send(403, 'Forbidden');
      return;
    }
    const credentials = await this.credentials(trunk);
    if (credentials) {
      // The answer is checked here; the guard then decides, in one step, whether a cooling-off refuses it (403 without
      // a challenge, whatever was presented: the right password too) and counts a wrong one.
      const attempt: DigestAttempt = { trunk: trunk?.id ?? PLATFORM_CARRIER, source };
      const verdict = verify(req, { username: credentials.username, password: credentials.password, realm: this.realm });
      if (verdict === 'missing') {
        const cooling = await this.guarded('check', () => this.guard.refusal(attempt), null);
        if (cooling) this.refuse(res, cooling.scope);
        else challenge(res, this.realm);
        return;
      }
      if (verdict === 'wrong') {
        const failure = await this.guarded('count', () => this.guard.failed(attempt), { refused: null, lockouts: [] });
        if (failure.refused) {
          this.refuse(res, failure.refused.scope);
          return;
        }
        res.send(403, 'Forbidden');
        this.deps.metrics?.digestFailed(failure.lockouts);
        for (const l of failure.lockouts) {
          // Who and for how long; never what was presented (the username, the digest answer).
          logger.warn(
            { trunk: attempt.trunk, source, scope: l.scope, coolingSecs: l.coolingMs / 1000, repeat: l.repeat },
            l.scope === 'source' ? 'sip digest: too many wrong answers from one address; refusing it on this trunk' : 'sip digest: too many wrong answers on this trunk; refusing addresses without a recent success',
          );
        }
        return;
      }
      const cooling = await this.guarded('reset', () => this.guard.succeeded(attempt), null);
      if (cooling) {
        this.refuse(res, cooling.scope);
        return;
      }
    }
    if (!route.allowInboundCall) {
      res.send(603, 'Decline');
      return;
    }
    if (!route.agentId) {
      res.send(404, 'Not Found');
      return;
    }
    const policy = trunk ?? PLATFORM_DEFAULTS;
    // An offer we cannot answer is refused before it takes a place or an RTP port (the real answer, with the bound
    // port, is made below; the offer decides the outcome, the port does not).
    const checked = negotiate(req.body, { encryption: policy.mediaEncryption, localAddress: this.stack.publicAddress, localPort: 9 });
    if (!checked.ok) {
      res.send(checked.status, checked.status === 488 ? 'Not Acceptable Here' : 'Bad Request', { headers: { Warning: `399 parley "${checked.reason.replace(/"/g, "'")}"` } });
      return;
    }
    let lease;
    try {
      lease = this.deps.limits.acquire('speech', `org:${route.orgId}`, { orgId: route.orgId, agentId: route.agentId, channel: 'inbound' });
    } catch (err) {
      res.send(503, 'Service Unavailable', { headers: { 'Retry-After': String(err instanceof ApiError ? RETRY_AFTER_S : RETRY_AFTER_S) } });
      return;
    }
    let rtp: MediaLeg | null = null;
    let phone = null as PhoneCall | null; // set by startPhoneCall once the line is answered
    let callId: string | null = null;
    let started = false;
    try {
      rtp = await this.deps.media.bind(this.stack.host === '0.0.0.0' ? '0.0.0.0' : this.stack.host);
      const answer = negotiate(req.body, { encryption: policy.mediaEncryption, localAddress: this.stack.publicAddress, localPort: rtp.localPort });
      if (!answer.ok) throw new Error(`the offer answered before binding was refused after: ${answer.reason}`);
      res.send(180, 'Ringing');
      const ringingUntil = performance.now() + policy.ringingTimeoutSecs * 1000;
      // The agent must be ready within the trunk's ringing timeout; a CANCEL ends the wait (and frees the place) at once.
      const canceled = new Promise<null>((r) => (req.canceled ? r(null) : req.once('cancel', () => r(null))));
      const resolved = await withTimeout(
        Promise.race([resolveCallConfig(db, { orgId: route.orgId, name: 'telephony' }, route.agentId, { kind: 'live' }), canceled]),
        policy.ringingTimeoutSecs * 1000,
      );
      // The agent's pre-call API while the caller hears ringing, so the answer is not followed by silence while it
      // runs. Past the ringing timeout the call is answered anyway and the agent waits for the rest (its own timeout).
      const newId = this.deps.runtime.newCallId();
      const preCall = resolved && !req.canceled ? this.deps.runtime.preCall({ resolved, type: 'telephony_inbound', callId: newId, variables: {}, fromNumber: caller, toNumber: called ?? undefined }) : null;
      if (preCall) await withTimeout(Promise.race([preCall, canceled]), Math.max(0, ringingUntil - performance.now()));
      // Calls that end before the answer are recorded too (status cancelled or no_answer, with their events); one whose
      // record was opened for the answer (below) ends that record and gives its live row back.
      const unanswered = (status: 'cancelled' | 'no_answer', reason: string) =>
        void this.deps.runtime
          .recordUnanswered({ orgId: route.orgId, agentId: route.agentId as string, type: 'telephony_inbound', fromNumber: caller, toNumber: called ?? undefined, ...(callId ? { callId } : {}) }, { status, reason })
          .catch((err: unknown) => logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not record an unanswered call'))
          .then(() => (callId ? this.deps.live?.release(callId) : undefined));
      if (req.canceled) {
        unanswered('cancelled', 'canceled');
        throw new Refused();
      }
      if (!resolved) {
        res.send(480, 'Temporarily Unavailable');
        unanswered('no_answer', 'ringing_timeout');
        throw new Refused();
      }
      // The record and the live row exist before the answer: a server that dies from here on leaves a record that
      // whoever is alive ends (failed, server_stopped), not a call nobody knows of.
      await this.deps.runtime.openInbound({ resolved, callId: newId, fromNumber: caller, toNumber: called ?? undefined });
      callId = newId;
      // The 200 goes out inside createUAS; the dialog comes with the ACK.
      // Re-INVITEs and UPDATEs in the call are held to the offer's media-address rules (hold passes).
      const accepting = this.stack.createUAS(req, res, { localSdp: answer.answerSdp, headers: trunk?.headers, checkSdp });
      const answeredAt = performance.now();
      const dialog = await accepting.catch((err: unknown) => {
        // Canceled (or hung up) between the ringing and the ACK.
        if (req.canceled) {
          unanswered('cancelled', 'canceled');
          throw new Refused();
        }
        throw err;
      });
      const call = await startPhoneCall(
        { ...this.deps, logger },
        {
          direction: 'inbound',
          callId,
          orgId: route.orgId,
          agentId: route.agentId,
          ownNumber: null,
          dialog,
          rtp,
          media: answer,
          noiseSuppression: policy.noiseSuppression,
          lease,
          maxCallDurationSecs: policy.maxCallDurationSecs,
          setupSecs: (answeredAt - receivedAt) / 1000,
          calls: this.calls,
        },
        {
          onAnswered: (answered) => {
            phone = answered;
            rtp = null;
          },
          agent: async () => ({ resolved, ...(preCall ? { preCall } : {}), type: 'telephony_inbound', isTest: false, variables: {}, fromNumber: caller, toNumber: called ?? undefined, queued: true }),
        },
      );
      started = true;
      logger.info({ callId: call.callId, sipCallId: dialog.callId, to: called, trunk: trunk?.id ?? null }, 'inbound call answered');
    } catch (err) {
      void rtp?.finish();
      lease.release();
      if (err instanceof Refused) return;
      // Answered, but the agent could not start: hang up, and the record opened for the answer says so.
      if (phone) {
        if (!phone.dialog.destroyed) await phone.dialog.destroy({ reason: 'error' }).catch(() => undefined);
        phone.end('error');
      }
      if (callId && !started) {
        await this.deps.runtime
          .recordUnanswered({ orgId: route.orgId, agentId: route.agentId as string, type: 'telephony_inbound', fromNumber: caller, toNumber: called ?? undefined, callId }, { status: 'failed', reason: 'agent_unavailable' })
          .catch((e: unknown) => logger.warn({ err: e instanceof Error ? e.message : String(e), callId }, 'could not record a call whose agent did not start'));
        if (!phone) await this.deps.live?.release(callId);
      }
      throw err;
    }
  }

  /** 403 without a challenge: the source (or the trunk) cools off after too many wrong answers. */
  private refuse(res: SipResponse, scope: GuardScope): void {
    this.deps.metrics?.digestRefused(scope);
    res.send(403, 'Forbidden');
  }

  /**
   * The guard's answer, or `fallback` when it fails (Redis unreachable): the call goes on without the limits rather
   * than every authenticated call failing with the guard.
   */
  private async guarded<T>(what: string, run: () => Promise<T>, fallback: T): Promise<T> {
    try {
      return await run();
    } catch (err) {
      this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err), what }, 'sip digest guard unavailable; going on without its limits');
      return fallback;
    }
  }

  /** The digest credentials a call must present: its trunk's, or the platform carrier's. */
  private async credentials(trunk: InboundTrunk | null): Promise<{ username: string; password: string } | null> {
    if (trunk) {
      if (!trunk.authUsername) return null;
      const password = await trunkPassword(this.deps.db, this.deps.secrets, trunk.id);
      return password ? { username: trunk.authUsername, password } : null;
    }
    const { username, password } = this.deps.carrier;
    return username && password ? { username, password } : null;
  }
}

/** A refusal already answered on the SIP transaction. */
class Refused extends Error {}

/** The promise's value, or null when it takes longer than `ms`. */
async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
