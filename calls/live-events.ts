// Live call events (issue 35 item 5, `GET /events?callId=`): what a running call does, as the hosted platform's
// server-sent events (`{event_type, event_id, timestamp, call_id, event_time, ...}`), to subscribers on this server
// and, through a LiveBus (calls/live-bus.ts: PostgreSQL LISTEN/NOTIFY or Redis pub/sub), on other servers.
//
// The call never waits for a subscriber: publishing appends to each subscriber's queue and returns. A subscriber whose
// queue reaches SUBSCRIBER_BUFFER events (it reads slower than the call talks) is closed: its queue is dropped and it
// gets `sse_close` with `metadata.reason: "subscriber_too_slow"` (it may subscribe again while the call runs). Events
// go to another server only while a subscriber there watches the call (a `watch` message every WATCH_EVERY_MS; the
// server running the call acknowledges it, and a subscription starts once it has, so no event in between is lost).
import { randomBytes, randomUUID } from 'node:crypto';
import type { SessionEvent } from '../engine/agent/session-types.js';
import type { ToolCall, Vars } from '../engine/agent/types.js';

export type LiveEvent = { event_type: string; event_id: string; timestamp: string; call_id: string; event_time: string } & Record<string, unknown>;

/** Events a subscriber may have queued before it is closed as too slow. */
export const SUBSCRIBER_BUFFER = 512;
/** How often a server with subscribers of a call tells the other servers so, and how long that holds. */
export const WATCH_EVERY_MS = 5000;
const WATCH_TTL_MS = 3 * WATCH_EVERY_MS;

/** A message between servers. */
export type BusMessage =
  | { origin: string; kind: 'watch'; callId: string }
  /** The server running a watched call heard the watch: its events go out from now on. */
  | { origin: string; kind: 'ack'; callId: string }
  | { origin: string; kind: 'events'; callId: string; events: LiveEvent[] };

/** How long a subscription waits for the server running its call to acknowledge the watch (a queued call: none). */
const ACK_WAIT_MS = 1000;

/** How live events cross servers. `send` never waits (a bus drops what it cannot send in time). */
export interface LiveBus {
  readonly name: string;
  start(deliver: (msg: BusMessage) => void): Promise<void>;
  send(msg: BusMessage): Promise<void>;
  close(): Promise<void>;
}

/** One subscriber's queue. */
export class LiveSubscription {
  private queue: LiveEvent[] = [];
  private wake: (() => void) | null = null;
  private ending = false;
  private readonly stalledWaiters: (() => void)[] = [];
  /** Set once the subscription was closed for being too slow. */
  stalled = false;

  constructor(
    readonly callId: string,
    private readonly limit: number,
    private readonly onClose: (s: LiveSubscription) => void,
  ) {}

  get closed(): boolean {
    return this.ending;
  }

  push(event: LiveEvent): void {
    if (this.ending) return;
    if (this.queue.length >= this.limit) {
      this.stalled = true;
      this.queue = [];
      this.close(closeEvent(this.callId, 'subscriber_too_slow'));
      this.stalledWaiters.splice(0).forEach((w) => w());
      return;
    }
    this.queue.push(event);
    this.wakeUp();
  }

  /** Ends the subscription after what is queued (and `last`, if given). */
  close(last?: LiveEvent): void {
    if (this.ending) return;
    if (last) this.queue.push(last);
    this.ending = true;
    this.onClose(this);
    this.wakeUp();
  }

  /** The next event; null once closed and drained. */
  async next(): Promise<LiveEvent | null> {
    for (;;) {
      const e = this.queue.shift();
      if (e) return e;
      if (this.ending) return null;
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  /** Resolves if the subscription is closed for being too slow (a write blocked on it can be abandoned). */
  whenStalled(): Promise<void> {
    return this.stalled ? Promise.resolve() : new Promise((r) => this.stalledWaiters.push(r));
  }

  private wakeUp(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}

export function liveEvent(callId: string, type: string, fields: Record<string, unknown> = {}): LiveEvent {
  const now = new Date().toISOString();
  return { event_type: type, event_id: randomUUID(), timestamp: now, call_id: callId, event_time: now, ...fields };
}

/** The last event of a stream (`metadata.reason`: call_ended, subscriber_too_slow, server_shutdown). */
export function closeEvent(callId: string, reason: string): LiveEvent {
  return liveEvent(callId, 'sse_close', { metadata: { reason } });
}

export class LiveEvents {
  private readonly subs = new Map<string, Set<LiveSubscription>>();
  /** Calls this server runs that another server watches: until when. */
  private readonly watched = new Map<string, number>();
  private readonly watchTimers = new Map<string, NodeJS.Timeout>();
  private readonly origin = randomBytes(6).toString('hex');
  /** Calls running on this server (a CallFeed is open for them). */
  private readonly local = new Set<string>();
  private readonly ackWaiters = new Map<string, (() => void)[]>();
  private stopped = false;

  constructor(
    private readonly bus: LiveBus | null = null,
    private readonly opts: { bufferLimit?: number; onBusError?: (err: unknown) => void } = {},
  ) {}

  /** 'in-process', or the bus that carries events between servers. */
  get transport(): string {
    return this.bus?.name ?? 'in-process';
  }

  async start(): Promise<void> {
    await this.bus?.start((msg) => this.received(msg));
  }

  /** Whether anyone wants a call's events now: a subscriber on this server, or another server watching it. */
  wants(callId: string): boolean {
    return this.subs.has(callId) || this.watched.has(callId);
  }

  /** Publishes one event of a call: to this server's subscribers, and to the others' when they watch it. */
  publish(event: LiveEvent): void {
    this.deliver(event);
    const until = this.watched.get(event.call_id);
    if (this.bus && until !== undefined) {
      if (until < Date.now()) this.watched.delete(event.call_id);
      else this.busSend({ origin: this.origin, kind: 'events', callId: event.call_id, events: [event] });
    }
    if (event.event_type === 'sse_close') this.watched.delete(event.call_id);
  }

  /** A new subscriber of a call (its events from now on). Resolves once other servers were told to send them. */
  async subscribe(callId: string): Promise<LiveSubscription> {
    const sub = new LiveSubscription(callId, this.opts.bufferLimit ?? SUBSCRIBER_BUFFER, (s) => this.removed(s));
    if (this.stopped) {
      sub.close(closeEvent(callId, 'server_shutdown'));
      return sub;
    }
    let set = this.subs.get(callId);
    if (!set) {
      set = new Set();
      this.subs.set(callId, set);
      if (this.bus && !this.local.has(callId)) {
        const watch = () => this.busSend({ origin: this.origin, kind: 'watch', callId });
        this.watchTimers.set(callId, setInterval(watch, WATCH_EVERY_MS).unref());
        set.add(sub);
        let timer: NodeJS.Timeout | undefined;
        const acked = new Promise<void>((resolve) => {
          const list = this.ackWaiters.get(callId) ?? [];
          list.push(resolve);
          this.ackWaiters.set(callId, list);
          timer = setTimeout(resolve, ACK_WAIT_MS);
        });
        await this.bus.send({ origin: this.origin, kind: 'watch', callId }).catch((err: unknown) => this.opts.onBusError?.(err));
        await acked;
        clearTimeout(timer);
        this.ackWaiters.delete(callId);
        return sub;
      }
    }
    set.add(sub);
    return sub;
  }

  /** Ends every subscription (the server stops): each gets `sse_close` with reason `server_shutdown`. */
  async close(): Promise<void> {
    this.stopped = true;
    for (const set of [...this.subs.values()]) for (const sub of [...set]) sub.close(closeEvent(sub.callId, 'server_shutdown'));
    await this.bus?.close();
  }

  /** A call runs here from now on (its events are published here), until detach(). */
  attach(callId: string): void {
    this.local.add(callId);
  }

  detach(callId: string): void {
    this.local.delete(callId);
    this.watched.delete(callId);
  }

  private deliver(event: LiveEvent): void {
    const set = this.subs.get(event.call_id);
    if (!set) return;
    for (const sub of [...set]) {
      if (event.event_type === 'sse_close') sub.close(event);
      else sub.push(event);
    }
  }

  private received(msg: BusMessage): void {
    if (msg.origin === this.origin) return;
    if (msg.kind === 'watch') {
      // Only the server running the call keeps the watch (a call that starts later is caught by the next watch).
      if (!this.local.has(msg.callId)) return;
      this.watched.set(msg.callId, Date.now() + WATCH_TTL_MS);
      this.busSend({ origin: this.origin, kind: 'ack', callId: msg.callId });
    } else if (msg.kind === 'ack') this.ackWaiters.get(msg.callId)?.splice(0).forEach((w) => w());
    else for (const e of msg.events) this.deliver(e);
  }

  private removed(sub: LiveSubscription): void {
    const set = this.subs.get(sub.callId);
    if (!set) return;
    set.delete(sub);
    if (set.size) return;
    this.subs.delete(sub.callId);
    clearInterval(this.watchTimers.get(sub.callId));
    this.watchTimers.delete(sub.callId);
  }

  private busSend(msg: BusMessage): void {
    this.bus?.send(msg).catch((err: unknown) => this.opts.onBusError?.(err));
  }
}

/**
 * One call's events as the reference names them, from its session's events. Besides the reference's types it sends
 * `agent_interim_transcription` (the agent's words so far, `tts_text`), `user_turn_start`/`user_turn_end` and
 * `agent_turn_start`/`agent_turn_end` (`turn_id`, `status`); tool calls as `tool_call_start`/`tool_call_end`/`tool_call_error`.
 */
export class CallFeed {
  private turnIndex = 0;
  private ended = false;

  constructor(
    private readonly hub: LiveEvents,
    readonly callId: string,
  ) {
    hub.attach(callId);
  }

  /** One event, built only when someone listens (transcript and reply deltas come many times a turn). */
  private send(type: string, fields: Record<string, unknown> = {}): void {
    if (this.ended || !this.hub.wants(this.callId)) return;
    this.hub.publish(liveEvent(this.callId, type, fields));
  }

  /** The call began talking. */
  started(status: string): void {
    this.send('call_start', { status });
  }

  variables(extracted: Vars, variables: Vars): void {
    this.send('variable_extraction', { extracted_variables: extracted, variables });
  }

  /** The call is over: `call_end` with its status, then the stream closes. */
  end(status: string, reason: string): void {
    this.send('call_end', { status, metadata: { endReason: reason } });
    if (this.hub.wants(this.callId)) this.hub.publish(closeEvent(this.callId, 'call_ended'));
    this.ended = true;
    this.hub.detach(this.callId);
  }

  /** Runs a tool call between `tool_call_start` and `tool_call_end` (`success`, `latency_ms`) or `tool_call_error`. */
  async tool<T>(call: ToolCall, run: () => Promise<T>): Promise<T> {
    const ids = { tool_call_id: call.id, function_name: call.name };
    this.send('tool_call_start', ids);
    const started = performance.now();
    try {
      const out = await run();
      this.send('tool_call_end', { ...ids, success: out !== null, latency_ms: Math.round(performance.now() - started) });
      return out;
    } catch (err) {
      this.send('tool_call_error', { ...ids, error: { message: err instanceof Error ? err.message : String(err) }, latency_ms: Math.round(performance.now() - started) });
      throw err;
    }
  }

  session(event: SessionEvent): void {
    switch (event.type) {
      case 'user_speech_started':
        this.send('user_turn_start', { turn_index: this.turnIndex + 1 });
        break;
      case 'user_speech_stopped':
        this.send('user_turn_end', { turn_index: this.turnIndex + 1 });
        break;
      case 'user_transcript_delta':
        this.send('user_interim_transcription', { interim_transcription_text: event.text, turn_index: this.turnIndex + 1 });
        break;
      case 'user_transcript':
        this.send('user_transcription', { user_transcription_text: event.text, turn_index: ++this.turnIndex });
        break;
      case 'agent_turn_started':
        this.send('agent_turn_start', { turn_id: String(event.turnId), metadata: { kind: event.kind } });
        break;
      case 'agent_turn_ended':
        this.send('agent_turn_end', { turn_id: String(event.turnId), status: event.status, interrupted: event.status === 'interrupted' });
        break;
      case 'agent_transcript_delta':
        this.send('agent_interim_transcription', { tts_text: event.text });
        break;
      case 'agent_transcript':
        this.send('tts_completed', { tts_text: event.text, interrupted: event.interrupted });
        break;
      case 'turn_metrics': {
        const m = event.metrics;
        this.send('turn_latency', {
          turn_index: m.turn,
          turn_latency: m.e2eMs,
          smart_turn_ms: m.eouDelayMs,
          stt_api_ms: m.recognitionMs,
          llm_api_ms: m.brainFirstTokenMs,
          tts_api_ms: m.ttsFirstByteMs,
          total_turn_ms: m.e2eMs,
        });
        break;
      }
      case 'error':
        this.send('agent_error', { error: { code: event.code, message: event.message } });
        break;
      default:
        break;
    }
  }
}
