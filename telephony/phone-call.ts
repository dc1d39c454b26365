// One answered phone call: the SIP dialog, the RTP session and the agent session wired together. Caller audio
// (8 kHz frames) goes to the engine as it arrives, the agent's audio (8 kHz) to RTP, keypresses to the agent; a BYE
// from either side, the agent ending the call or the trunk's maximum duration ends all three. A transfer bridged to a
// second call outlives the agent session: the line (its lease, RTP leg) stays up until the bridge ends, and the call's
// recording goes on through the transfer (hold sound, handoffs, both sides of the bridge) until it ends.
import type { Logger } from 'pino';
import type { RunningCall } from '../calls/runtime.js';
import type { SessionEvent, TransferOutcome, TransferRequest } from '../engine/agent/session.js';
import { decodeLinear16, floatToInt16 } from '../engine/audio/pcm.js';
import { KeypadCollector } from '../engine/agent/keypad.js';
import type { Dialog } from './sip/dialog.js';
import type { MediaLeg } from './media/leg.js';
import { parseSdp } from './media/sdp-parse.js';
import { holdAddress } from './media/media-address.js';
import type { Lease } from '../calls/session-limits.js';
import type { CallDirection, TelephonyMetrics } from './metrics.js';
import { TRANSFER_REFUSED, type Bridge, type CallTransfers } from './transfer.js';
import type { AnswerDecision, AnswerDetector } from '../engine/agent/answer-detect.js';

/** Who the call belongs to and its own line, for transfers. */
export interface TransferLine {
  orgId: string;
  agentId: string;
  direction: 'inbound' | 'outbound';
  /** An outbound call's fromNumber (used when the agent has no transfer source). */
  ownNumber: string | null;
}

export class PhoneCall {
  private call: RunningCall | null = null;
  private readonly keypad: KeypadCollector;
  private maxDuration: NodeJS.Timeout | null = null;
  private closed = false;
  /** Resolves once the call is over and its record written. */
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private readonly closedP: Promise<void>;
  private resolveClosed!: () => void;
  private transfers: { service: CallTransfers; line: TransferLine; keep?: (dialog: Dialog) => void } | null = null;
  /** The caller joined to a transfer target: the line is held until it ends. */
  private bridge: Bridge | null = null;
  /** Voicemail detection listens instead of the agent (detectAnswer). */
  private listener: ((frame: Int16Array) => void) | null = null;
  /** The call's recording while a transfer runs (the session takes no caller audio meanwhile). */
  private recording: ReturnType<RunningCall['extendRecording']> = null;

  constructor(
    readonly dialog: Dialog,
    private readonly rtp: MediaLeg,
    private readonly lease: Lease,
    private readonly logger: Logger,
    maxDurationSecs: number,
    private readonly metrics?: { sink: TelephonyMetrics; direction: CallDirection },
  ) {
    this.done = new Promise((r) => (this.resolveDone = r));
    this.closedP = new Promise((r) => (this.resolveClosed = r));
    this.keypad = new KeypadCollector((keys) => this.call?.session.pressKeys(keys));
    rtp.onAudio = (frame) => {
      this.recording?.caller(frame);
      if (this.listener) this.listener(frame);
      else this.call?.session.pushAudio(new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength));
    };
    rtp.onDtmf = (digit) => this.keypad.press(digit);
    rtp.onMediaTimeout = () => {
      this.logger.info({ callId: this.call?.callId ?? null, sipCallId: dialog.callId }, 'phone call media timeout: no RTP from the caller');
      this.end('media_timeout');
    };
    // A re-INVITE (or UPDATE) that holds the call stops the media timeout while the caller sends nothing.
    dialog.on('modify', () => {
      rtp.peerSending = peerSends(dialog.remoteSdp);
    });
    rtp.onError = (err) => {
      this.logger.warn({ err: err.message, callId: this.call?.callId ?? null, sipCallId: dialog.callId }, 'phone call media error');
      // The leg itself is gone (its worker died): the caller hears nothing any more, so the call ends.
      if (rtp.isClosed && !this.closed) this.end('media_error');
    };
    dialog.on('destroy', (info) => {
      if (info.by === 'remote') this.end('caller_hangup');
      else this.close();
    });
    // Hung up already while the media leg was starting: the session ends as soon as it is attached.
    if (dialog.destroyed) this.close();
    if (!this.closed) {
      this.maxDuration = setTimeout(() => this.end('max_duration'), maxDurationSecs * 1000);
      this.maxDuration.unref();
    }
  }

  /**
   * Voicemail detection: the callee's audio goes to `detector` (not to an agent: none is attached yet) until who answered
   * is known, and for a machine until its greeting ended (its beep, or silence after it) or `maxMs` passed. Resolves
   * with the verdict (and whether a machine's greeting ended); null when the callee hung up before a verdict.
   */
  async detectAnswer(detector: AnswerDetector, maxMs: number): Promise<{ decision: AnswerDecision; greetingEnded: boolean } | null> {
    let decision: AnswerDecision | null = null;
    const outcome = await new Promise<{ decision: AnswerDecision; greetingEnded: boolean } | null>((resolve) => {
      const cap = setTimeout(() => resolve(decision && { decision, greetingEnded: false }), maxMs);
      const done = (value: { decision: AnswerDecision; greetingEnded: boolean } | null) => {
        clearTimeout(cap);
        resolve(value);
      };
      detector.onDecision = (d) => {
        decision = d;
        if (d.verdict === 'human' || d.verdict === 'silence') done({ decision: d, greetingEnded: false });
      };
      detector.onGreetingEnd = () => {
        if (decision) done({ decision, greetingEnded: true });
      };
      void this.closedP.then(() => done(decision && { decision, greetingEnded: false }));
      // Frames are pushed in order: each waits for the one before it (the detector's recognitions are asynchronous).
      let chain = Promise.resolve();
      this.listener = (frame) => {
        const samples = decodeLinear16(new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength));
        chain = chain.then(() => detector.push(samples)).catch((err: unknown) => {
          this.logger.warn({ err: err instanceof Error ? err.message : String(err), sipCallId: this.dialog.callId }, 'voicemail detection failed; the agent speaks');
          done(null);
        });
      };
    });
    this.listener = null;
    detector.stop();
    return outcome;
  }

  /** The agent session runs: events from here on go to the caller. */
  attach(call: RunningCall): void {
    this.call = call;
    if (this.closed) call.session.end('caller_hangup');
    void Promise.all([call.finished, this.closedP]).then(() => this.resolveDone());
  }

  /**
   * Lets the agent transfer this call (without it, transfers are refused). `keep` notes a bridge's second call with
   * this call's live row, so that a server stopping mid-bridge leaves both lines to be hung up.
   */
  allowTransfers(service: CallTransfers, line: TransferLine, keep?: (dialog: Dialog) => void): void {
    this.transfers = { service, line, keep };
  }

  /** The agent asks for a transfer (its words before it have played): REFER, or a bridge this call then holds. */
  async transfer(req: TransferRequest): Promise<TransferOutcome> {
    const session = this.call?.session;
    if (!this.transfers || !session || this.closed) return { ok: false, say: TRANSFER_REFUSED };
    const recording = this.call!.extendRecording(8000);
    this.recording = recording;
    const result = await this.transfers.service.transfer(
      {
        ...this.transfers.line,
        dialog: this.dialog,
        leg: this.rtp,
        synthesize: (text, rate) => session.synthesize(text, rate),
        handoff: (option) => session.handoffText(option),
        recording: recording ?? undefined,
        keep: this.transfers.keep,
      },
      req,
    );
    this.recording = null;
    if (!result.ok || !result.bridge) {
      // Refused (the conversation goes on, recorded as before), or handed over by REFER.
      await recording?.end();
      return result.ok ? { ok: true } : result;
    }
    const bridge = result.bridge;
    this.bridge = bridge;
    this.keypad.close();
    if (this.closed) void bridge.stop('caller_hangup');
    void bridge.done.then(() => recording?.end()).then(() => this.close());
    return { ok: true };
  }

  /** What the session emits, for the caller's side of the line. */
  onEvent(e: SessionEvent): void {
    switch (e.type) {
      case 'audio': {
        const pcm = new Int16Array(e.samples.length);
        for (let i = 0; i < pcm.length; i++) pcm[i] = floatToInt16(e.samples[i] as number);
        this.rtp.send(pcm);
        break;
      }
      case 'agent_start_talking':
        this.rtp.speaking = true;
        break;
      case 'agent_stop_talking':
        this.rtp.speaking = false;
        break;
      case 'agent_audio_paused':
        this.rtp.hold(true);
        break;
      case 'agent_audio_resumed':
        this.rtp.hold(false);
        break;
      case 'interruption':
        this.rtp.speaking = false;
        this.rtp.clear();
        this.rtp.hold(false);
        break;
      case 'ended':
        // A bridged transfer holds the line on; otherwise the agent (or a timeout) ended the call: hang up once the
        // audio already sent has played.
        if (!this.bridge) void this.hangUp();
        break;
      default:
        break;
    }
  }

  /** Resolves once the line is closed (its lease given back), before the call's record is finished. */
  get lineClosed(): Promise<void> {
    return this.closedP;
  }

  /** The call record's id, once the agent session is attached. */
  get callId(): string | null {
    return this.call?.callId ?? null;
  }

  /** Ends the agent session with a reason (the session's `ended` then hangs up the line). */
  end(reason: string): void {
    if (this.bridge) void this.bridge.stop(reason);
    else if (this.call) this.call.session.end(reason);
    else this.close();
  }

  private async hangUp(): Promise<void> {
    // Audio already sent plays out before our BYE; once the caller has hung up there is nobody left to hear it.
    const tail = this.dialog.destroyed ? 0 : Math.min(this.rtp.queuedMs(), 3000);
    if (tail > 0) await new Promise((r) => setTimeout(r, tail + 40));
    if (!this.dialog.destroyed) await this.dialog.destroy({ reason: 'agent_ended' }).catch(() => undefined);
    this.close();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.maxDuration) clearTimeout(this.maxDuration);
    this.keypad.close();
    const metrics = this.metrics;
    void this.rtp.finish().then((stats) => metrics?.sink.ended(metrics.direction, stats));
    this.lease.release();
    this.resolveClosed();
    if (!this.call) this.resolveDone();
  }
}

/**
 * Whether an SDP's audio stream says the call is not on hold (sendrecv), so its sender's RTP is expected. A holder
 * offers `sendonly` (RFC 3264 §8.4), or the older hold address c=0.0.0.0 (RFC 2543), and many phones then send nothing
 * at all, so either pauses the media timeout; an unreadable SDP counts as not on hold.
 */
function peerSends(sdp: string): boolean {
  const parsed = parseSdp(sdp);
  if ('status' in parsed) return true;
  const audio = parsed.media.find((m) => m.media === 'audio' && m.port !== 0);
  return audio ? audio.direction === 'sendrecv' && !(audio.address && holdAddress(audio.address)) : false;
}
