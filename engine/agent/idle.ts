// The call's timers: after the agent's turn, user silence for the idle timeout gets a reprompt, up to maxRetries, then
// a goodbye that ends the call (`idle_timeout`); the session's own time limit (sessionTimeoutSeconds) ends it whatever
// is going on (`session_timeout`).
import type { Clock, ClockTimer } from '../ports.js';
import type { AgentSpec } from './types.js';

/** The idle timeout of a conversation, seconds (0: none): chat, telephony or web call. */
export function idleSeconds(spec: AgentSpec, mode: 'webcall' | 'chat', conversationType: string): number {
  const idle = spec.idle;
  if (mode === 'chat') return idle.chatSeconds;
  return conversationType.startsWith('telephony') ? idle.telephonySeconds : idle.webcallSeconds;
}

export interface IdleOptions {
  clock: Clock;
  idleSeconds: number;
  maxRetries: number;
  sessionSeconds: number;
  /** Nobody is speaking or about to: the silence is the caller's. */
  waiting(): boolean;
  /** Says a reprompt; `last`: the goodbye after the last one. */
  reprompt(last: boolean): void;
  timedOut(): void;
}

export class CallTimers {
  private idle: ClockTimer | null = null;
  private session: ClockTimer | null = null;
  private retries = 0;
  private closed = false;

  constructor(private readonly o: IdleOptions) {}

  /** The call begins: its time limit runs from now. */
  start(): void {
    if (this.o.sessionSeconds > 0) this.session = this.o.clock.setTimeout(() => this.o.timedOut(), this.o.sessionSeconds * 1000);
  }

  /** The caller's silence starts to count. */
  arm(): void {
    this.clearIdle();
    if (this.closed || !(this.o.idleSeconds > 0)) return;
    this.idle = this.o.clock.setTimeout(() => this.onIdle(), this.o.idleSeconds * 1000);
  }

  clearIdle(): void {
    if (this.idle) this.o.clock.clearTimeout(this.idle);
    this.idle = null;
  }

  /** The caller took a turn: reprompts count from zero again. */
  heard(): void {
    this.retries = 0;
    this.clearIdle();
  }

  close(): void {
    this.closed = true;
    this.clearIdle();
    if (this.session) this.o.clock.clearTimeout(this.session);
  }

  private onIdle(): void {
    this.idle = null;
    if (!this.o.waiting()) return;
    const last = this.retries >= this.o.maxRetries;
    if (!last) this.retries++;
    this.o.reprompt(last);
  }
}
