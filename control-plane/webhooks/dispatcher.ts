// Sends queued webhook deliveries: one attempt each, signed, under the egress policy; a call's events in order.
//
// Claiming: a PENDING row becomes SENDING through a conditional UPDATE (status = 'PENDING'), so two dispatchers
// sharing a store never send the same row. Ordering: a row is eligible only when no earlier row (by seq) of the
// same webhook and call is still PENDING or SENDING; different calls (and webhooks) go out in parallel up to
// `concurrency`. Outcome: 2xx within the timeout is DELIVERED; anything else (non-2xx, timeout, DNS, TLS,
// connection failure, egress refusal) is FAILED with the code, latency and error recorded. There is no retry.
//
// Restarts: PENDING rows simply go out. A row left SENDING by a process that died cannot be known to have reached
// the receiver or not; it is marked FAILED ("interrupted by restart") and never attempted again (at most once,
// like every other delivery). Since several servers may share one store, a SENDING row is declared interrupted
// only once its attempt is older than 2 x timeout + 1 s, which no live attempt can reach (each is aborted at the
// timeout); a single restarted server therefore records it within that time of the crash.
import { createHmac } from 'node:crypto';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Selectable } from 'kysely';
import type { Db } from '../store/db.js';
import type { WebhookOutboxTable } from '../store/schema.js';
import { nowIso } from '../store/ids.js';
import { EgressError, safeFetch } from '../../engine/net/egress.js';
import type { SecretBox } from '../secrets/secret-box.js';

type OutboxRow = Selectable<WebhookOutboxTable>;

export interface DispatcherOptions {
  secrets: SecretBox;
  /** Egress policy for endpoints (PARLEY_ALLOW_PRIVATE_EGRESS). */
  allowPrivate: boolean;
  logger: Logger;
  /** Per-attempt limit, connection to response headers (default 30 000 ms, the spec's delivery timeout). */
  timeoutMs?: number;
  /** Deliveries in flight at once (default 8). */
  concurrency?: number;
  /** How often the outbox is read without a notify() (default 1000 ms). */
  pollMs?: number;
}

/** Spans of deliveries (the API's no-op unless server/tracing.ts loaded the SDK); calls/tracing.ts names the ids alike. */
const tracer = trace.getTracer('parley');

const MAX_ANSWER_BYTES = 64 * 1024;
const MAX_ERROR_CHARS = 500;
const SHUTDOWN = 'interrupted by shutdown';
export const INTERRUPTED = 'interrupted by restart';

export class WebhookDispatcher {
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  private readonly pollMs: number;
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly controllers = new Set<AbortController>();
  private timer: NodeJS.Timeout | null = null;
  private pumping: Promise<void> | null = null;
  private again = false;
  private stopped = true;

  constructor(
    private readonly db: Db,
    private readonly opts: DispatcherOptions,
  ) {
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.concurrency = Math.max(1, opts.concurrency ?? 8);
    this.pollMs = opts.pollMs ?? 1000;
  }

  /** Starts sending: recovers interrupted rows, sends what is pending, then polls. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.timer = setInterval(() => this.tick(), this.pollMs);
    this.timer.unref();
    this.tick();
  }

  /** Wake-up after an enqueue committed (otherwise the next poll finds the rows). */
  notify(): void {
    if (!this.stopped) void this.pump();
  }

  /** Stops taking rows; lets attempts in flight finish (up to 5 s or the timeout), aborts the rest and records them. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pumping;
    if (this.inFlight.size === 0) return;
    let graceTimer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (graceTimer = setTimeout(resolve, Math.min(this.timeoutMs, 5000))));
    await Promise.race([Promise.allSettled([...this.inFlight.values()]), grace]);
    clearTimeout(graceTimer);
    for (const c of this.controllers) c.abort(new Error(SHUTDOWN));
    await Promise.allSettled([...this.inFlight.values()]);
  }

  private tick(): void {
    void this.sweep()
      .catch((err: unknown) => this.opts.logger.warn({ err: message(err) }, 'webhook dispatcher could not recover interrupted deliveries'))
      .then(() => this.pump());
  }

  /** Rows left SENDING by a dead process: FAILED, never attempted again. */
  private async sweep(): Promise<void> {
    const cutoff = new Date(Date.now() - (2 * this.timeoutMs + 1000)).toISOString();
    let update = this.db
      .updateTable('webhook_outbox')
      .set({ status: 'FAILED', error: INTERRUPTED })
      .where('status', '=', 'SENDING')
      .where('sent_at', '<', cutoff);
    if (this.inFlight.size) update = update.where('id', 'not in', [...this.inFlight.keys()]);
    const result = await update.executeTakeFirst();
    const n = Number(result.numUpdatedRows);
    if (n) this.opts.logger.warn({ deliveries: n }, 'webhook deliveries interrupted by a restart marked FAILED');
  }

  private pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return this.pumping;
    }
    this.pumping = (async () => {
      try {
        do {
          this.again = false;
          await this.fill();
        } while (this.again && !this.stopped);
      } catch (err) {
        this.opts.logger.warn({ err: message(err) }, 'webhook dispatcher could not read the outbox');
      } finally {
        this.pumping = null;
      }
    })();
    return this.pumping;
  }

  /** Claims eligible rows up to the free capacity and starts their attempts. */
  private async fill(): Promise<void> {
    const free = this.concurrency - this.inFlight.size;
    if (free <= 0 || this.stopped) return;
    const candidates = await this.db
      .selectFrom('webhook_outbox as o')
      .selectAll('o')
      .where('o.status', '=', 'PENDING')
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('webhook_outbox as p')
              .select('p.id')
              .whereRef('p.webhook_id', '=', 'o.webhook_id')
              .whereRef('p.call_id', '=', 'o.call_id')
              .whereRef('p.seq', '<', 'o.seq')
              .where('p.status', 'in', ['PENDING', 'SENDING']),
          ),
        ),
      )
      .orderBy('o.seq')
      .limit(free)
      .execute();
    for (const row of candidates) {
      if (this.stopped) return;
      const claimed = await this.db
        .updateTable('webhook_outbox')
        .set({ status: 'SENDING', sent_at: nowIso() })
        .where('id', '=', row.id)
        .where('status', '=', 'PENDING')
        .executeTakeFirst();
      if (Number(claimed.numUpdatedRows) !== 1) continue;
      const attempt = this.deliver(row)
        .catch((err: unknown) => this.opts.logger.error({ err: message(err), delivery: row.id }, 'webhook delivery could not be recorded'))
        .finally(() => {
          this.inFlight.delete(row.id);
          if (!this.stopped) void this.pump();
        });
      this.inFlight.set(row.id, attempt);
    }
    if (candidates.length === free) this.again = true;
  }

  /** One attempt; records DELIVERED or FAILED. */
  private async deliver(row: OutboxRow): Promise<void> {
    const controller = new AbortController();
    this.controllers.add(controller);
    const timer = setTimeout(() => controller.abort(Object.assign(new Error('timed out'), { name: 'TimeoutError' })), this.timeoutMs);
    const started = performance.now();
    // Its event, receiver host and outcome: never the URL's path or query, the headers, the body or the secret.
    const span = tracer.startSpan('parley.webhook', {
      kind: SpanKind.CLIENT,
      attributes: {
        'parley.call_id': row.call_id,
        'parley.org_id': row.org_id,
        'parley.agent_id': row.agent_id,
        'parley.webhook.id': row.webhook_id,
        'parley.webhook.delivery_id': row.id,
        'parley.webhook.event': row.event_type,
        // Each delivery is attempted once (no retry).
        'parley.webhook.attempt': 1,
        ...receiver(row.url),
      },
    });
    let code: number | null = null;
    let error: string | null = null;
    let latency: number | null = null;
    try {
      const webhook = await this.db.selectFrom('webhooks').select(['secret']).where('id', '=', row.webhook_id).executeTakeFirst();
      if (!webhook) throw new Error('webhook was deleted before delivery');
      const bytes = Buffer.from(row.body, 'utf8');
      const signature = createHmac('sha256', this.opts.secrets.open(row.webhook_id, webhook.secret)).update(bytes).digest('hex');
      const headers: Record<string, string> = {
        'User-Agent': 'Parley-Webhooks/1.0',
        ...(JSON.parse(row.headers) as Record<string, string>),
        'Content-Type': 'application/json',
        'X-Signature': signature,
      };
      const res = await abortable(safeFetch(row.url, { method: 'POST', headers, body: bytes, signal: controller.signal }, { allowPrivate: this.opts.allowPrivate, maxRedirects: 0 }), controller.signal);
      latency = Math.round(performance.now() - started);
      code = res.status;
      await discard(res);
      if (code < 200 || code > 299) error = `HTTP ${code}`;
    } catch (err) {
      latency ??= Math.round(performance.now() - started);
      error = this.describe(err, controller.signal);
    } finally {
      clearTimeout(timer);
      this.controllers.delete(controller);
    }
    const status = error === null ? 'DELIVERED' : 'FAILED';
    if (code !== null) span.setAttribute('http.response.status_code', code);
    span.setAttribute('parley.webhook.outcome', status);
    if (error !== null) {
      // A class of failure, not the error's text (which may name the receiver's address).
      span.setAttribute('error.type', code !== null ? String(code) : error === SHUTDOWN ? 'shutdown' : error.startsWith('timeout') ? 'timeout' : 'request_failed');
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
    await this.db
      .updateTable('webhook_outbox')
      .set({ status, response_code: code, latency_ms: latency, error: error?.slice(0, MAX_ERROR_CHARS) ?? null })
      .where('id', '=', row.id)
      .where('status', '=', 'SENDING')
      .execute();
    // No URL, headers or body in the log: they may carry credentials.
    this.opts.logger.info({ delivery: row.id, webhook: row.webhook_id, event: row.event_type, status, code, latencyMs: latency, ...(error ? { error } : {}) }, 'webhook delivery');
  }

  private describe(err: unknown, signal: AbortSignal): string {
    if (signal.aborted) {
      const reason: unknown = signal.reason;
      if (reason instanceof Error && reason.message === SHUTDOWN) return SHUTDOWN;
      return `timeout: no answer within ${this.timeoutMs} ms`;
    }
    if (err instanceof EgressError) return err.message;
    const code = (err as { code?: unknown } | null)?.code;
    const text = message(err);
    if (code === 'ECONNREFUSED') return `connection refused (ECONNREFUSED): ${text}`;
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NODATA') return `DNS lookup failed (${String(code)}): ${text}`;
    if (code === 'ECONNRESET' || code === 'EPIPE') return `connection reset (${String(code)}): ${text}`;
    if (typeof code === 'string' && (/^ERR_TLS|^ERR_SSL|CERT|^DEPTH_ZERO|^UNABLE_TO/.test(code) || /SSL|TLS/i.test(text))) return `TLS error (${code}): ${text}`;
    return typeof code === 'string' ? `${text} (${code})` : text;
  }
}

/** Rejects when the signal fires even if the wrapped work would not notice it (for example a slow DNS lookup). */
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** Reads and drops the receiver's answer (bounded); its failure does not change the outcome, the status was the answer. */
async function discard(res: Response): Promise<void> {
  if (!res.body) return;
  const reader = res.body.getReader();
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      total += value.byteLength;
      if (total > MAX_ANSWER_BYTES) {
        await reader.cancel();
        return;
      }
    }
  } catch {
    /* answer cut off: the status code already decided */
  }
}

/** The receiver's host and port, for a delivery's span. */
function receiver(url: string): Record<string, string | number> {
  try {
    const u = new URL(url);
    return { 'server.address': u.hostname, 'server.port': Number(u.port) || (u.protocol === 'https:' ? 443 : 80) };
  } catch {
    return {};
  }
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));
