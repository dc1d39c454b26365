// Writes a running call's record: new transcript entries (only those: the session's transcript is append-only),
// other fields merged, one write in flight at a time. Changes that arrive while a write runs are coalesced into the
// next one, so a chatty session costs the store a bounded number of small writes, not a rewrite per turn.
import type { Logger } from 'pino';
import type { Db } from '../control-plane/store/db.js';
import { updateCall, type CallPatch, type TranscriptEntry } from '../control-plane/calls/calls.js';
import { saveTurns, type TurnWrite } from '../control-plane/calls/turns.js';

/** How long a refused write waits before its changes are tried again. */
const RETRY_MS = 1000;

export class CallRecordWriter {
  private patch: CallPatch = {};
  /** Transcript entries the store has (the first `saved` of the session's). */
  private saved = 0;
  private running: Promise<void> | null = null;
  private scheduled = false;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly callId: string,
    /** The session's transcript: entries are appended (and rewritten only by redaction; see entryChanged). */
    private readonly entries: readonly TranscriptEntry[],
    private readonly logger: Logger,
  ) {}

  /** The transcript grew (the session emits before it appends: the entries are read when the write goes out). */
  transcriptChanged(): void {
    if (!this.closed) this.schedule();
  }

  /** Entry `index`, already written, was changed (a redaction revised it): it and those after it are written again. */
  entryChanged(index: number): void {
    this.saved = Math.min(this.saved, index);
    if (!this.closed) this.schedule();
  }

  /** Merges fields of the call record (later values win). */
  update(patch: CallPatch): void {
    if (this.closed) return;
    Object.assign(this.patch, patch);
    this.schedule();
  }

  /**
   * The call ended: later changes are ignored (the final record is written whole, after this), and what is pending
   * gets one more attempt now instead of waiting for a retry.
   */
  close(): void {
    this.closed = true;
    if (this.retry) {
      clearTimeout(this.retry);
      this.retry = null;
      this.schedule();
    }
  }

  /** Resolves once everything noted so far is written (or, after close, has had its last attempt). */
  async flushed(): Promise<void> {
    while (this.running || this.scheduled || this.retry) await (this.running ?? new Promise((r) => setTimeout(r, this.retry ? 50 : 0)));
  }

  private schedule(): void {
    if (this.scheduled || this.running || this.retry) return;
    this.scheduled = true;
    // Changes made in the same turn of the event loop go out together.
    setImmediate(() => {
      this.scheduled = false;
      this.running = this.write().then((ok) => {
        this.running = null;
        const pending = this.saved < this.entries.length || Object.keys(this.patch).length > 0;
        if (!pending) return;
        if (ok) this.schedule();
        else if (!this.closed) {
          // The store refused: keep the changes and try again shortly (the running call must not lose turns).
          this.retry = setTimeout(() => {
            this.retry = null;
            this.schedule();
          }, RETRY_MS);
          this.retry.unref();
        }
      });
    });
  }

  /** One transaction: the new transcript entries and the merged fields. On failure they stay pending; false. */
  private async write(): Promise<boolean> {
    const from = this.saved;
    const turns: TurnWrite[] = this.entries.slice(from).map((entry, i) => ({ seq: from + i, entry }));
    this.saved = this.entries.length;
    const patch = this.patch;
    this.patch = {};
    try {
      await this.db.transaction().execute(async (tx) => {
        await saveTurns(tx, this.callId, turns);
        if (Object.keys(patch).length) await updateCall(tx, this.callId, patch);
      });
      return true;
    } catch (err) {
      this.logger.warn({ err: err instanceof Error ? err.message : String(err), callId: this.callId }, 'could not update the call record; retrying');
      this.saved = Math.min(from, this.saved);
      this.patch = { ...patch, ...this.patch };
      return false;
    }
  }
}
