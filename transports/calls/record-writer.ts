// Writes a running call's record: new transcript entries (only those: the session's transcript is append-only),
// other fields merged, one write in flight at a time. Changes that arrive while a write runs are coalesced into the
// next one, so a chatty session costs the store a bounded number of small writes, not a rewrite per turn.
import type { Logger } from 'pino';
import type { Db } from '../../control-plane/store/db.js';
import { updateCall, type CallPatch, type TranscriptEntry } from '../../control-plane/calls/calls.js';
import { saveTurns, type TurnWrite } from '../../control-plane/calls/turns.js';

export class CallRecordWriter {
  private patch: CallPatch = {};
  /** Transcript entries the store has (the first `saved` of the session's). */
  private saved = 0;
  private running: Promise<void> | null = null;
  private scheduled = false;

  constructor(
    private readonly db: Db,
    private readonly callId: string,
    /** The session's transcript: entries are appended, never changed (read when a write goes out). */
    private readonly entries: readonly TranscriptEntry[],
    private readonly logger: Logger,
  ) {}

  /** The transcript grew (the session emits before it appends: the entries are read when the write goes out). */
  transcriptChanged(): void {
    this.schedule();
  }

  /** Merges fields of the call record (later values win). */
  update(patch: CallPatch): void {
    Object.assign(this.patch, patch);
    this.schedule();
  }

  /** Resolves once everything noted so far is written. */
  async flushed(): Promise<void> {
    while (this.running || this.scheduled) await (this.running ?? new Promise((r) => setImmediate(r)));
  }

  private schedule(): void {
    if (this.scheduled || this.running) return;
    this.scheduled = true;
    // Changes made in the same turn of the event loop go out together.
    setImmediate(() => {
      this.scheduled = false;
      this.running = this.write().finally(() => {
        this.running = null;
        if (this.saved < this.entries.length || Object.keys(this.patch).length) this.schedule();
      });
    });
  }

  private async write(): Promise<void> {
    const turns: TurnWrite[] = this.entries.slice(this.saved).map((entry, i) => ({ seq: this.saved + i, entry }));
    this.saved = this.entries.length;
    const patch = this.patch;
    this.patch = {};
    try {
      await this.db.transaction().execute(async (tx) => {
        await saveTurns(tx, this.callId, turns);
        if (Object.keys(patch).length) await updateCall(tx, this.callId, patch);
      });
    } catch (err) {
      this.logger.warn({ err: err instanceof Error ? err.message : String(err), callId: this.callId }, 'could not update the call record');
    }
  }
}
