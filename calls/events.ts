// A call's webhook events: pre-conversation with the call's creation, post-conversation with its final record, then
// analytics-completed; each queued in the same transaction as the call change it reports (the outbox), so a crash
// loses none, and delivered in that order by the webhook dispatcher.
import type { Db, Tx } from '../control-plane/store/db.js';
import { updateCall, updateOpenCall, type CallPatch, type CallStatus, type CallType, type TranscriptEntry } from '../control-plane/calls/calls.js';
import { clearTurns } from '../control-plane/calls/turns.js';
import { recordingIdentifier } from '../control-plane/recordings/object-store.js';
import { enqueueEvent } from '../control-plane/webhooks/outbox.js';
import type { Vars } from '../engine/agent/types.js';
import type { CallAnalytics } from './analytics.js';

/** The spec's terminal `callStatus` of a call record's status. */
const CALL_STATUS: Partial<Record<CallStatus, string>> = { completed: 'completed', failed: 'failed', no_answer: 'no-answer', cancelled: 'canceled' };

export interface CallInfo {
  orgId: string;
  agentId: string;
  callId: string;
  /** `webcall`, `telephonyInbound`, `telephonyOutbound`. */
  conversationType: string;
  fromNumber: string | null;
  toNumber: string | null;
  callType: CallType;
}

export interface CallEnd {
  startedAt: Date;
  /** False for a call that was never answered: post-conversation's `answerTime` is null. */
  answered?: boolean;
  endedAt: Date;
  transcript: TranscriptEntry[];
  variables: Vars;
  /** Computes the post-call analytics (the language model's or the deterministic extractors'). */
  analyze(): Promise<CallAnalytics>;
}

export class CallEvents {
  constructor(
    private readonly db: Db,
    private readonly notify: () => void,
    private readonly info: CallInfo,
  ) {}

  private base(eventType: string): Record<string, unknown> {
    const { agentId, conversationType, callId } = this.info;
    return { agentId, eventType, conversationType, callId };
  }

  /** Queues the event for its webhooks; resolves to how many deliveries it queued (0: no webhook wants it). */
  private async queue(tx: Tx, eventType: 'pre-conversation' | 'post-conversation' | 'analytics-completed', metadata: Record<string, unknown>): Promise<number> {
    return enqueueEvent(tx, { orgId: this.info.orgId, agentId: this.info.agentId, callId: this.info.callId, eventType, metadata });
  }

  /** Wakes the dispatcher after a commit that queued deliveries (none queued: nothing to read, no store query). */
  private notifyIf(queued: number): void {
    if (queued > 0) this.notify();
  }

  /** Creates the call record (by `create`) and queues pre-conversation, in one transaction. */
  async begin(create: (tx: Tx) => Promise<unknown>): Promise<void> {
    const queued = await this.db.transaction().execute(async (tx) => {
      await create(tx);
      return this.queue(tx, 'pre-conversation', { ...this.base('pre-conversation'), toPhone: this.info.toNumber ?? '', fromPhone: this.info.fromNumber ?? '' });
    });
    this.notifyIf(queued);
  }

  /**
   * Writes the final record with post-conversation, then computes analytics and queues analytics-completed. With
   * `ifOpen`, only a record that is not final yet (a call ended for a stopped server, which may have finished it
   * itself): false, and nothing queued, when it was.
   */
  async end(patch: CallPatch, end: CallEnd, opts: { ifOpen?: boolean } = {}): Promise<boolean> {
    const callData = {
      fromNumber: this.info.fromNumber ?? '',
      toNumber: this.info.toNumber ?? '',
      callDuration: Math.round((end.endedAt.getTime() - end.startedAt.getTime()) / 10) / 100,
      // A busy callee is a failed call whose reason is `busy` in the record, and its own status here.
      callStatus: patch.status === 'failed' && patch.endReason === 'busy' ? 'busy' : (CALL_STATUS[patch.status ?? 'completed'] ?? 'completed'),
      callDirection: this.info.callType,
      answerTime: end.answered === false ? null : end.startedAt.toISOString(),
      endTime: end.endedAt.toISOString(),
      // Voicemail detection's verdict, when it ran (human, voicemail, ivr, silence).
      ...(patch.answeredBy ? { answeredBy: patch.answeredBy } : {}),
    };
    const transcript = end.transcript.map((t) => ({ role: t.role, content: t.content, timestamp: t.timestamp }));
    const ended = await this.db.transaction().execute(async (tx) => {
      if (opts.ifOpen) {
        if (!(await updateOpenCall(tx, this.info.callId, patch))) return null;
      } else await updateCall(tx, this.info.callId, patch);
      // The record now holds the whole transcript: the per-turn rows of the running call go.
      if (patch.transcript) await clearTurns(tx, this.info.callId);
      return this.queue(tx, 'post-conversation', {
        ...this.base('post-conversation'),
        recordingUrl: patch.recordingMono ? recordingIdentifier(patch.recordingMono) : null,
        callData,
        transcript,
        variables: end.variables,
      });
    });
    if (ended === null) return false;
    this.notifyIf(ended);

    const analytics = await end.analyze();
    const analyzed = await this.db.transaction().execute(async (tx) => {
      await updateCall(tx, this.info.callId, { metrics: { ...(patch.metrics ?? { turns: [] }), analytics } });
      return this.queue(tx, 'analytics-completed', {
        ...this.base('analytics-completed'),
        callData,
        analytics: { summary: analytics.summary, dispositionMetrics: analytics.dispositionMetrics, successMetrics: analytics.successMetrics },
      });
    });
    this.notifyIf(analyzed);
    return true;
  }
}
