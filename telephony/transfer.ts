// Transfers of phone calls (the `transfer_call` tool, the workflow transfer node). Which line a transfer dials from
// (the agent's transfer source; an outbound call without one uses its own line; an inbound call without one refuses),
// then the second call to the target from that line, bridged to the caller, with the caller on hold meanwhile
// (`onHoldMusic`). With `transferOnlyIfHuman` (the default) the target must be a person: its greeting is judged by
// voice activity (human-detect.ts) and a machine, or no verdict within `detectionTimeout`, is hung up and told to the
// caller. Warm: the agent's private handoff to the target alone and its public one to both before the bridge. Cold
// with `transferOnlyIfHuman` false: REFER in the caller's dialog (Refer-To the number at that line's carrier), our BYE
// once the NOTIFY says the target answered (or after a few seconds of no word); a REFER refused (or failing) falls back
// to the bridged second call. A bridge forwards 20 ms frames of 8 kHz audio (and keypresses) both ways until one side
// hangs up, then hangs up the other.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Db } from '../control-plane/store/db.js';
import { findDialingNumber, transferSourceOf } from '../control-plane/telephony/dialing.js';
import { dialRoute, type DialRoute } from '../control-plane/telephony/outbound.js';
import type { SecretBox } from '../control-plane/secrets/secret-box.js';
import type { TransferRequest } from '../engine/agent/session.js';
import type { HandoffOption } from '../engine/agent/types.js';
import { floatToInt16 } from '../engine/audio/pcm.js';
import type { CarrierSettings } from '../control-plane/telephony/carrier.js';
import { HoldPlayer } from './hold-sound.js';
import { detectHuman } from './human-detect.js';
import type { MediaLeg, MediaLegs } from './media/leg.js';
import { acceptAnswer, buildOffer, checkSdp } from './media/sdp.js';
import type { Pacer } from './outbound/pacer.js';
import { carrierLine, outcomeOf, type CarrierLine } from './outbound/dialer.js';
import type { Dialog } from './sip/dialog.js';
import { SipError, type SipRequest, type SipResponse } from './sip/message.js';
import type { SipStack } from './sip/stack.js';

export interface TransferDeps {
  db: Db;
  carrier: CarrierSettings;
  /** Opens sealed trunk passwords. */
  secrets: SecretBox;
  media: MediaLegs;
  /** The outbound pace per carrier address: a transfer's second call keeps it like any outbound call. */
  pacer: Pacer;
  logger: Logger;
  /** After a REFER's 202, how long to wait for the NOTIFY saying the target answered before hanging up anyway (5 s). */
  referWaitMs?: number;
  /** How long a transfer's second call rings before it counts as not answered (30 s). */
  ringSecs?: number;
}

/** The call being transferred, as the transfer sees it. */
export interface TransferableCall {
  dialog: Dialog;
  leg: MediaLeg;
  orgId: string;
  agentId: string;
  direction: 'inbound' | 'outbound';
  /** The number the call is on from our side: an outbound call's fromNumber (its own line). */
  ownNumber: string | null;
  /** The agent's voice saying `text` at `rate` Hz (the warm handoff). */
  synthesize(text: string, rate: number): Promise<Float32Array>;
  /** A handoff's words: as written, or written by the agent's language model (`type: prompt`). */
  handoff(option: HandoffOption | undefined): Promise<string>;
  /** The call's recording, while the transfer runs: what the caller says and hears (8 kHz). */
  recording?: Tap;
  /** Notes the second call's dialog with the call's live row (a server that stops mid-bridge: both get a BYE). */
  keep?(dialog: Dialog): void;
}

/** Where a transfer's audio is recorded: the caller's side and what the caller hears. */
export interface Tap {
  caller(pcm: Int16Array): void;
  heard(pcm: Int16Array): void;
}

/** A transfer done: nothing more to hold (REFER), or a bridge the phone call keeps until it ends. */
export type TransferResult = { ok: true; bridge?: Bridge } | { ok: false; say: string };

/** What the agent says when a transfer cannot happen. */
export const TRANSFER_REFUSED = "I'm sorry, I can't transfer this call. I'm still here to help.";
export const TRANSFER_UNANSWERED = "I'm sorry, nobody answered at that number. I'm still here to help.";
export const TRANSFER_BUSY = "I'm sorry, that line is busy. I'm still here to help.";
export const TRANSFER_FAILED = "I'm sorry, I couldn't transfer your call. I'm still here to help.";
export const TRANSFER_NOT_HUMAN = "I'm sorry, the transfer did not go through: I couldn't reach a person at that number. I'm still here to help.";

const DEFAULT_REFER_WAIT_MS = 5000;
const DEFAULT_RING_SECS = 30;
const DEFAULT_DETECTION_SECS = 30;
const RATE = 8000;

/** The line a transfer dials from: its number, pace and the carrier line to the target. */
interface SourceLine {
  number: string;
  route: DialRoute;
  line: CarrierLine;
}

export class CallTransfers {
  constructor(
    private readonly stack: SipStack,
    private readonly deps: TransferDeps,
  ) {}

  /** Transfers `call` as the agent asked; never throws (a failure is a refusal the agent speaks). */
  async transfer(call: TransferableCall, req: TransferRequest): Promise<TransferResult> {
    const log = this.deps.logger.child({ sipCallId: call.dialog.callId, to: req.number, kind: req.option.type });
    try {
      const source = await this.sourceLine(call, req.number);
      if (!source) {
        log.info('transfer refused: no transfer source for an inbound call (or the source is no longer a dialing number)');
        return { ok: false, say: TRANSFER_REFUSED };
      }
      // A REFER hands the caller to whoever answers: only when a person is not required.
      const referable = req.option.type === 'cold_transfer' && req.option.transferOnlyIfHuman === false;
      if (!referable) return await this.bridged(call, req, source, log);
      if (await this.refer(call, source, req.number, log)) {
        if (!call.dialog.destroyed) await call.dialog.destroy({ reason: 'transferred' }).catch(() => undefined);
        log.info('transferred by REFER');
        return { ok: true };
      }
      return await this.bridged(call, req, source, log);
    } catch (err) {
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'transfer failed');
      return { ok: false, say: TRANSFER_FAILED };
    }
  }

  /**
   * The transfer source of the agent; without one, an outbound call's own line. An inbound call without one has none
   * (the spec). The rule is the same inside and after the deprecation window: the window only changes who gets a
   * backfilled transfer source, not what an absent one means.
   */
  private async sourceLine(call: TransferableCall, target: string): Promise<SourceLine | null> {
    const { db, carrier } = this.deps;
    const number = (await transferSourceOf(db, call.agentId)) ?? (call.direction === 'outbound' ? call.ownNumber : null);
    if (!number) return null;
    const dialing = await findDialingNumber(db, call.orgId, number);
    if (!dialing) return null;
    const route = await dialRoute(db, carrier, dialing, 'transferSource');
    const line = await carrierLine(this.deps, route.trunkId, target);
    return { number, route, line };
  }

  /**
   * REFER in the caller's dialog. True when the caller's side took it (2xx) and did not report the target refusing
   * (a final NOTIFY sipfrag of 300 or more); false when it was refused, failed, or the caller hung up meanwhile.
   */
  private async refer(call: TransferableCall, source: SourceLine, number: string, log: Logger): Promise<boolean> {
    const { dialog } = call;
    let settle!: (status: number) => void;
    const outcome = new Promise<number>((r) => (settle = r));
    const onRequest = (req: SipRequest, res: SipResponse) => {
      if (req.method !== 'NOTIFY') {
        res.send(405);
        return;
      }
      res.send(200);
      const status = sipfragStatus(req.body);
      if (status !== null && status >= 200) settle(status);
    };
    dialog.on('request', onRequest);
    try {
      const rs = await dialog.request('REFER', {
        headers: { 'Refer-To': `<${source.line.uri}>`, 'Referred-By': `<sip:${source.number}@${this.stack.publicAddress}>` },
      });
      if (rs.status < 200 || rs.status >= 300) {
        log.info({ status: rs.status }, 'REFER refused; bridging a second call instead');
        return false;
      }
      const ended = new Promise<number>((r) => dialog.once('destroy', () => r(0)));
      const final = await Promise.race([outcome, ended, sleep(this.deps.referWaitMs ?? DEFAULT_REFER_WAIT_MS).then(() => null)]);
      if (final === 0) return false;
      if (final !== null && final >= 300) {
        log.info({ status: final }, 'REFER accepted but the target refused; bridging a second call instead');
        return false;
      }
      return true;
    } catch (err) {
      log.info({ err: err instanceof Error ? err.message : String(err) }, 'REFER failed; bridging a second call instead');
      return false;
    } finally {
      dialog.off('request', onRequest);
    }
  }

  /**
   * A second call to the target, bridged to the caller: the caller on hold meanwhile, the target checked for a person
   * when asked, and the warm handoffs said first.
   */
  private async bridged(call: TransferableCall, req: TransferRequest, source: SourceLine, log: Logger): Promise<TransferResult> {
    if (call.dialog.destroyed) return { ok: false, say: TRANSFER_FAILED };
    const { option } = req;
    const hold = new HoldPlayer(call.leg, option.onHoldMusic ?? 'ringtone', call.recording && ((pcm) => call.recording!.heard(pcm)));
    let target: Leg | null = null;
    const giveUp = async (say: string): Promise<TransferResult> => {
      if (target && !target.dialog.destroyed) await target.dialog.destroy({ reason: call.dialog.destroyed ? 'caller_gone' : 'not_transferred' }).catch(() => undefined);
      if (target) void target.leg.finish();
      return { ok: false, say };
    };
    try {
      const dialed = await this.dial(call, source, log);
      if ('status' in dialed) return { ok: false, say: dialed.status === 'busy' ? TRANSFER_BUSY : dialed.status === 'unanswered' ? TRANSFER_UNANSWERED : TRANSFER_FAILED };
      target = dialed;
      call.keep?.(target.dialog);
      if (call.dialog.destroyed) return await giveUp(TRANSFER_FAILED);
      if (option.transferOnlyIfHuman !== false) {
        // Either side hanging up ends the wait for a verdict.
        const gone = new AbortController();
        const onGone = () => gone.abort();
        const sides = [call.dialog, target.dialog];
        for (const d of sides) d.once('destroy', onGone);
        const timeoutMs = (option.detectionTimeout ?? DEFAULT_DETECTION_SECS) * 1000;
        const { verdict, greetingMs } = await detectHuman(target.leg, { timeoutMs, signal: gone.signal }).finally(() => sides.forEach((d) => d.off('destroy', onGone)));
        log.info({ verdict, greetingMs }, 'transfer target answered');
        if (call.dialog.destroyed || target.dialog.destroyed) return await giveUp(TRANSFER_FAILED);
        if (verdict !== 'human') return await giveUp(TRANSFER_NOT_HUMAN);
      }
      const warm = option.type === 'warm_transfer';
      // The public handoff is written while the private one is said.
      const announce = warm ? call.handoff(option.publicHandoffOption) : Promise.resolve('');
      announce.catch(() => undefined);
      const handoff = warm ? await call.handoff(option.privateHandoffOption) : '';
      if (handoff) await this.speak(call, [target], handoff);
      const publicText = await announce;
      // The caller is joined now (to the public handoff, or the target): the hold sound stops.
      hold.stop();
      if (publicText && !target.dialog.destroyed) await this.speak(call, [target, { dialog: call.dialog, leg: call.leg }], publicText);
      if (call.dialog.destroyed || target.dialog.destroyed) return await giveUp(TRANSFER_UNANSWERED);
      log.info('transfer bridged to a second call');
      return { ok: true, bridge: new Bridge({ dialog: call.dialog, leg: call.leg }, target, this.deps.logger, call.recording) };
    } catch (err) {
      // The handoff could not be said (synthesis failed): the target is not left on the line.
      await giveUp(TRANSFER_FAILED);
      throw err;
    } finally {
      hold.stop();
    }
  }

  /**
   * A warm handoff in the agent's voice: the private one to the target alone, the public one to both sides. Resolves
   * once it has played (or a side left).
   */
  private async speak(call: TransferableCall, to: Leg[], text: string): Promise<void> {
    const audio = await call.synthesize(text, RATE);
    const pcm = new Int16Array(audio.length);
    for (let i = 0; i < pcm.length; i++) pcm[i] = floatToInt16(audio[i] as number);
    for (const t of to) {
      t.leg.speaking = true;
      t.leg.send(pcm);
      if (t.leg === call.leg) call.recording?.heard(pcm);
    }
    const until = Date.now() + (pcm.length / RATE) * 1000 + 2000;
    const gone = () => call.dialog.destroyed || to.some((t) => t.dialog.destroyed);
    while (to.some((t) => t.leg.queuedMs() > 0) && Date.now() < until && !gone()) await sleep(40);
    for (const t of to) t.leg.speaking = false;
  }

  /** Places the second call at the source line's pace; why not, when it is not answered (or the caller hangs up first). */
  private async dial(call: TransferableCall, source: SourceLine, log: Logger): Promise<Leg | { status: 'busy' | 'unanswered' | 'failed' }> {
    const { media, pacer } = this.deps;
    const abort = new AbortController();
    const callerGone = () => abort.abort();
    call.dialog.once('destroy', callerGone);
    const leg = await media.bind(this.stack.host === '0.0.0.0' ? '0.0.0.0' : this.stack.host);
    let ringTimedOut = false;
    const ring = setTimeout(() => {
      ringTimedOut = true;
      abort.abort();
    }, (this.deps.ringSecs ?? DEFAULT_RING_SECS) * 1000);
    try {
      const { line } = source;
      const offer = buildOffer({ encryption: line.encryption, localAddress: this.stack.publicAddress, localPort: leg.localPort });
      for (let wait = await pacer.take(source.route.paceKey, source.route.cps); wait > 0; wait = await pacer.take(source.route.paceKey, source.route.cps)) {
        if (abort.signal.aborted) throw new Error('aborted before the INVITE');
        await sleep(wait);
      }
      const dialing = this.stack.createUAC(line.uri, {
        localSdp: offer.sdp,
        from: source.number,
        target: line.target,
        auth: line.auth,
        signal: abort.signal,
        headers: line.trunk ? (JSON.parse(line.trunk.headers) as Record<string, string>) : undefined,
        onSent: () => void pacer.sent(source.route.paceKey, source.route.cps).catch(() => undefined), // the next slot from now
        checkSdp, // the target's re-INVITEs and UPDATEs: the same media-address rules as its answer
      });
      const dialog = await dialing;
      const accepted = acceptAnswer(dialog.remoteSdp, offer);
      if (!accepted.ok) {
        await dialog.destroy({ reason: 'bad_answer_sdp' }).catch(() => undefined);
        throw new Error(`the target's answer SDP was refused: ${accepted.reason}`);
      }
      await leg.start({ ...accepted, noiseSuppression: false, mediaTimeoutMs: 0 });
      return { dialog, leg };
    } catch (err) {
      log.info({ err: err instanceof Error ? err.message : String(err) }, 'transfer target not reached');
      void leg.finish();
      if (call.dialog.destroyed || !(err instanceof SipError) || !err.response?.source) return { status: ringTimedOut ? 'unanswered' : 'failed' };
      const outcome = outcomeOf(err.status, { ringTimedOut });
      return { status: outcome.reason === 'busy' ? 'busy' : outcome.status === 'no_answer' ? 'unanswered' : 'failed' };
    } finally {
      clearTimeout(ring);
      call.dialog.off('destroy', callerGone);
    }
  }
}

/** One side of a bridge: its dialog and RTP leg. */
export interface Leg {
  dialog: Dialog;
  leg: MediaLeg;
}

/**
 * Two calls' audio joined: each side's frames (and keypresses) go to the other. Either side hanging up (or stop())
 * hangs up the other; `done` resolves then, with the target's leg closed (the caller's belongs to its phone call).
 */
export class Bridge {
  readonly done: Promise<string>;
  private resolve!: (reason: string) => void;
  private stopped = false;

  constructor(
    private readonly caller: Leg,
    private readonly target: Leg,
    private readonly logger: Logger,
    /** The caller's call recording: both sides go on being recorded until the bridge ends. */
    recording?: Tap,
  ) {
    this.done = new Promise((r) => (this.resolve = r));
    join(caller.leg, target.leg, recording && ((pcm) => recording.caller(pcm)));
    join(target.leg, caller.leg, recording && ((pcm) => recording.heard(pcm)));
    caller.dialog.on('destroy', (info) => void this.stop(info.by === 'remote' ? 'caller_hangup' : info.reason));
    target.dialog.on('destroy', (info) => void this.stop(info.by === 'remote' ? 'target_hangup' : info.reason));
    target.leg.onError = (err) => {
      if (target.leg.isClosed) void this.stop('media_error');
      else logger.warn({ err: err.message }, 'transfer target media error');
    };
    if (caller.dialog.destroyed) void this.stop('caller_hangup');
    else if (target.dialog.destroyed) void this.stop('target_hangup');
  }

  /** Ends the bridge: BYE to whichever side is still up; resolves with why it ended. */
  async stop(reason: string): Promise<string> {
    if (this.stopped) return this.done;
    this.stopped = true;
    this.caller.leg.onAudio = null;
    this.target.leg.onAudio = null;
    this.caller.leg.onDtmf = null;
    this.target.leg.onDtmf = null;
    const hangUp = (d: Dialog) => (d.destroyed ? undefined : d.destroy({ reason }).catch(() => undefined));
    await Promise.all([hangUp(this.caller.dialog), hangUp(this.target.dialog)]);
    await this.target.leg.finish().catch(() => undefined);
    this.logger.info({ sipCallId: this.caller.dialog.callId, reason }, 'transfer bridge ended');
    this.resolve(reason);
    return reason;
  }
}

/** `from`'s audio and keypresses go out on `to` (and the audio to `record`). */
function join(from: MediaLeg, to: MediaLeg, record?: (pcm: Int16Array) => void): void {
  to.clear();
  from.onAudio = (frame) => {
    const pcm = frame.slice();
    to.send(pcm);
    record?.(pcm);
  };
  from.onDtmf = (digit) => {
    try {
      to.sendDtmf(digit);
    } catch {
      // the other side did not negotiate telephone-event: the key is not passed on
    }
  };
}

/** The status of a message/sipfrag body (`SIP/2.0 200 OK`), or null. */
export function sipfragStatus(body: string): number | null {
  const m = /^\s*SIP\/2\.0\s+(\d{3})\b/.exec(body ?? '');
  return m ? Number(m[1]) : null;
}
