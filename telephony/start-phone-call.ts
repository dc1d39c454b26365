// From an answered dialog to an agent on the line, the same for inbound and outbound calls: the call's live row (with
// its dialog, for crash recovery), the RTP leg started, the PhoneCall, its transfers, then the agent session.
import type { Logger } from 'pino';
import type { CallRuntime, RunningCall, StartCall } from '../calls/runtime.js';
import type { LiveCalls } from '../calls/live-calls.js';
import type { Lease } from '../calls/session-limits.js';
import type { Dialog } from './sip/dialog.js';
import type { MediaLeg } from './media/leg.js';
import type { RtpStartParams } from './media/session.js';
import type { TelephonyMetrics } from './metrics.js';
import type { CallTransfers } from './transfer.js';
import { PhoneCall, type TransferLine } from './phone-call.js';

/**
 * How far ahead of real time the agent's audio goes to the media leg. The leg's send clock runs on the media worker
 * thread and keeps sending while the main thread is busy; this much queued there rides out a main-thread stall of
 * that length without a gap the caller hears. Barge-in drops whatever is queued at once, so it costs no latency.
 */
export const PHONE_OUTPUT_LEAD_MS = 200;

export interface PhoneLineDeps {
  runtime: CallRuntime;
  logger: Logger;
  live?: LiveCalls;
  transfers?: CallTransfers;
  metrics?: TelephonyMetrics;
  /** A caller sending no RTP this long is hung up (PARLEY_RTP_TIMEOUT_SECS; 0 or absent: never). */
  mediaTimeoutSecs?: number;
}

/** An answered call: its dialog, its RTP leg with the media agreed, and whose it is. */
export interface AnsweredLine extends TransferLine {
  callId: string;
  dialog: Dialog;
  rtp: MediaLeg;
  /** The media both sides agreed on (our answer to the offer, or the callee's answer to ours). */
  media: Omit<RtpStartParams, 'noiseSuppression' | 'mediaTimeoutMs'>;
  /** The trunk's RNNoise on the caller's audio (then the agent's denoisingConfig does not run it again). */
  noiseSuppression: boolean;
  lease: Lease;
  maxCallDurationSecs: number;
  /** From the INVITE to the answer, for `parley_sip_call_setup_seconds`. */
  setupSecs: number;
  /** The server's running phone calls: the call is in it until it is over. */
  calls: Set<PhoneCall>;
}

/** What differs between an inbound and an outbound call's agent session. */
export type AgentStart = Omit<StartCall, 'mode' | 'inputRate' | 'outputRate' | 'outputLeadMs' | 'callId' | 'transfer' | 'inputDenoised' | 'lineHeld'>;

/**
 * Puts the agent on an answered line. `onAnswered` gets the PhoneCall as soon as it exists (the leg is then its: the
 * caller's error path ends the PhoneCall instead of finishing the leg); `agent` then says how to start the session
 * (an outbound call listens for a machine first). Resolves with the running call.
 */
export async function startPhoneCall(
  deps: PhoneLineDeps,
  line: AnsweredLine,
  hooks: { onAnswered(phone: PhoneCall): void; agent(phone: PhoneCall): Promise<AgentStart> },
): Promise<RunningCall> {
  const { callId, dialog, rtp } = line;
  // From the answer on, the call is noted with its dialog: if this server dies, another hangs it up.
  await deps.live?.hold(callId, line.orgId, dialog.snapshot());
  await rtp.start({ ...line.media, noiseSuppression: line.noiseSuppression, mediaTimeoutMs: (deps.mediaTimeoutSecs ?? 0) * 1000 });
  deps.metrics?.answered(line.direction, line.setupSecs);
  const phone = new PhoneCall(dialog, rtp, line.lease, deps.logger, line.maxCallDurationSecs, deps.metrics && { sink: deps.metrics, direction: line.direction });
  hooks.onAnswered(phone);
  line.calls.add(phone);
  void phone.done.then(() => {
    line.calls.delete(phone);
    return deps.live?.release(callId);
  });
  const transfers = deps.transfers;
  if (transfers) {
    const own = { orgId: line.orgId, agentId: line.agentId, direction: line.direction, ownNumber: line.ownNumber };
    phone.allowTransfers(transfers, own, (second) => void deps.live?.keepAlso(callId, second.snapshot()));
  }
  const start = await hooks.agent(phone);
  const call = await deps.runtime.start(
    {
      ...start,
      mode: 'webcall',
      inputRate: 8000,
      outputRate: 8000,
      outputLeadMs: PHONE_OUTPUT_LEAD_MS,
      callId,
      transfer: transfers ? (req) => phone.transfer(req) : undefined,
      inputDenoised: line.noiseSuppression,
      lineHeld: Boolean(deps.live),
    },
    (e) => phone.onEvent(e),
  );
  phone.attach(call);
  return call;
}
