// Caps on concurrent realtime sessions, server-wide and per owner (an API key; an organization for sessions opened
// with its wct_ token), per class: `speech` sessions run the speech models (agent voice calls, live recognition, live
// synthesis, speech-to-speech), `chat` sessions only text. A session past a cap is refused before the upgrade:
// 503 when the server is full, 429 when the owner is; both with Retry-After.
//
// Agent calls (web, inbound, outbound) also count against their organization, whose limit is the per-owner speech
// cap, and may use places its agents reserved (`PUT /concurrency/reservations`, the hosted reference's semantics): an
// agent's reserved places per channel are its own (a call there is never refused by its key's, its organization's
// or the server's cap), and every other call shares what is left, the organization's unreserved pool (its limit minus
// its reservations) and the server's (its cap minus every organization's reservations). Reservations never exceed
// those limits (control-plane/organization/concurrency.ts refuses them), so a reserved place is always free.
import { ApiError } from '../control-plane/errors.js';
import type { AuthContext } from '../control-plane/auth/keys.js';

export type SessionClass = 'speech' | 'chat';

export interface SessionCaps {
  server: number;
  perOwner: number;
}

/** The channels of the hosted reference's reservations; `chat` sessions are a class of their own here. */
export type CallChannel = 'webcall' | 'inbound' | 'outbound' | 'chat';
export const SPEECH_CHANNELS = ['webcall', 'inbound', 'outbound'] as const;

/** What an agent call is, for its organization's limit and its agent's reservations. */
export interface AgentCall {
  orgId: string;
  agentId: string;
  channel: CallChannel;
}

export type ChannelCounts = Record<CallChannel, number>;
const zero = (): ChannelCounts => ({ webcall: 0, inbound: 0, outbound: 0, chat: 0 });

/** An organization's speech places now: its limit, reservations and use (for `GET /concurrency`). */
export interface OrgConcurrency {
  orgLimit: number;
  serverLimit: number;
  reserved: Map<string, ChannelCounts>;
  active: Map<string, ChannelCounts>;
  activeTotal: number;
  serverActive: number;
}

export interface Lease {
  /** Gives the place back; later calls do nothing. */
  release(): void;
}

/** How long a refused client should wait before trying again (sessions last minutes; places free up within seconds). */
const RETRY_AFTER_S = 5;

export class SessionLimits {
  private readonly total = new Map<SessionClass, number>();
  private readonly byOwner = new Map<string, number>();

  constructor(private readonly caps: Record<SessionClass, SessionCaps>) {}

  /** Speech reservations: organization -> agent -> places per channel (only speech channels are ever non-zero). */
  private readonly reservations = new Map<string, Map<string, ChannelCounts>>();
  /** Agent calls up: organization -> agent -> channel -> count (speech and chat). */
  private readonly calls = new Map<string, Map<string, ChannelCounts>>();

  /** Takes a place for one session, or throws the refusal (503 server full, 429 owner or organization at its cap). */
  acquire(cls: SessionClass, owner: string, call?: AgentCall): Lease {
    const caps = this.caps[cls];
    const ownerKey = `${cls}:${owner}`;
    const total = this.total.get(cls) ?? 0;
    const mine = this.byOwner.get(ownerKey) ?? 0;
    const headers = { 'Retry-After': String(RETRY_AFTER_S) };
    const speechCall = cls === 'speech' && call && call.channel !== 'chat' ? call : undefined;
    const reservedFree = speechCall ? this.inUse(speechCall) < this.reservedFor(speechCall) : false;
    if (reservedFree && total >= caps.server) {
      // Only right after reservations grew while the server was full: the hard cap still holds.
      throw new ApiError(503, `The server is at its limit of ${caps.server} concurrent ${cls} sessions; retry with backoff`, { headers });
    }
    if (!reservedFree) {
      // Outside reservations: the server's and the organization's unreserved pools, then the owner's cap.
      const serverPool = cls === 'speech' ? caps.server - this.reservedTotal() : caps.server;
      const serverUsed = cls === 'speech' ? total - this.reservedHeld() : total;
      if (serverUsed >= serverPool) {
        throw new ApiError(503, `The server is at its limit of ${caps.server} concurrent ${cls} sessions${serverPool < caps.server ? ` (${caps.server - serverPool} reserved for agents)` : ''}; retry with backoff`, { headers });
      }
      if (speechCall) {
        const reservedHere = this.reservedTotal(speechCall.orgId);
        const orgPool = caps.perOwner - reservedHere;
        if (this.poolUsed(speechCall.orgId) >= orgPool) {
          const message = reservedHere
            ? `This organization's unreserved pool (${Math.max(0, orgPool)} of its ${caps.perOwner} concurrent speech sessions; ${reservedHere} are reserved for agents) is in use and this agent has no free reserved ${speechCall.channel} place; close one or retry later`
            : `This organization already has ${caps.perOwner} concurrent speech sessions, its limit; close one or retry later`;
          throw new ApiError(429, message, { headers });
        }
      }
      // An organization's own calls are bounded by the organization check above; a key's by its cap.
      if (!(speechCall && owner.startsWith('org:')) && mine >= caps.perOwner) {
        const who = owner.startsWith('org:') ? 'This organization' : 'This key';
        throw new ApiError(429, `${who} already has ${caps.perOwner} concurrent ${cls} sessions, its limit; close one or retry later`, { headers });
      }
    }
    this.total.set(cls, total + 1);
    this.byOwner.set(ownerKey, mine + 1);
    if (call) this.count(call, 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.total.set(cls, (this.total.get(cls) ?? 1) - 1);
        const left = (this.byOwner.get(ownerKey) ?? 1) - 1;
        if (left > 0) this.byOwner.set(ownerKey, left);
        else this.byOwner.delete(ownerKey);
        if (call) this.count(call, -1);
      },
    };
  }

  /** Replaces an organization's reservations (agent -> places per channel); the store keeps them. */
  setReservations(orgId: string, byAgent: Map<string, ChannelCounts>): void {
    const kept = new Map<string, ChannelCounts>();
    for (const [agent, counts] of byAgent) if (SPEECH_CHANNELS.some((c) => counts[c] > 0)) kept.set(agent, { ...counts, chat: 0 });
    if (kept.size) this.reservations.set(orgId, kept);
    else this.reservations.delete(orgId);
  }

  /** Replaces every organization's reservations (as the store holds them). */
  replaceReservations(all: Map<string, Map<string, ChannelCounts>>): void {
    for (const org of [...this.reservations.keys()]) if (!all.has(org)) this.reservations.delete(org);
    for (const [org, agents] of all) this.setReservations(org, agents);
  }

  /** Whether an organization's agents reserved places (then one agent refused does not mean all are). */
  hasReservations(orgId: string): boolean {
    return this.reservations.has(orgId);
  }

  /** An organization's speech limit, reservations and use now. */
  orgConcurrency(orgId: string): OrgConcurrency {
    const active = new Map<string, ChannelCounts>();
    let activeTotal = 0;
    for (const [agent, counts] of this.calls.get(orgId) ?? []) {
      active.set(agent, { ...counts });
      activeTotal += SPEECH_CHANNELS.reduce((n, c) => n + counts[c], 0);
    }
    const reserved = new Map([...(this.reservations.get(orgId) ?? [])].map(([a, c]) => [a, { ...c }] as const));
    return { orgLimit: this.caps.speech.perOwner, serverLimit: this.caps.speech.server, reserved, active, activeTotal, serverActive: this.open('speech') };
  }

  private count(call: AgentCall, delta: number): void {
    let agents = this.calls.get(call.orgId);
    if (!agents) this.calls.set(call.orgId, (agents = new Map()));
    const counts = agents.get(call.agentId) ?? zero();
    counts[call.channel] += delta;
    if (Object.values(counts).some((n) => n > 0)) agents.set(call.agentId, counts);
    else agents.delete(call.agentId);
    if (!agents.size) this.calls.delete(call.orgId);
  }

  private inUse(call: AgentCall): number {
    return this.calls.get(call.orgId)?.get(call.agentId)?.[call.channel] ?? 0;
  }

  private reservedFor(call: AgentCall): number {
    return this.reservations.get(call.orgId)?.get(call.agentId)?.[call.channel] ?? 0;
  }

  /** Reserved speech places, of one organization or of all. */
  private reservedTotal(orgId?: string): number {
    let n = 0;
    for (const [org, agents] of this.reservations) {
      if (orgId !== undefined && org !== orgId) continue;
      for (const counts of agents.values()) for (const c of SPEECH_CHANNELS) n += counts[c];
    }
    return n;
  }

  /** Speech calls up in reserved places (an agent's calls on a channel up to its reservation there), all organizations. */
  private reservedHeld(): number {
    let n = 0;
    for (const [org, agents] of this.reservations) {
      for (const [agent, counts] of agents) for (const c of SPEECH_CHANNELS) n += Math.min(counts[c], this.calls.get(org)?.get(agent)?.[c] ?? 0);
    }
    return n;
  }

  /** An organization's speech calls outside its reservations. */
  private poolUsed(orgId: string): number {
    let n = 0;
    const reserved = this.reservations.get(orgId);
    for (const [agent, counts] of this.calls.get(orgId) ?? []) {
      for (const c of SPEECH_CHANNELS) n += Math.max(0, counts[c] - (reserved?.get(agent)?.[c] ?? 0));
    }
    return n;
  }

  /** Open sessions of a class (for metrics and tests). */
  open(cls: SessionClass): number {
    return this.total.get(cls) ?? 0;
  }
}

/** The owner a session counts against: its API key (an access token counts as the key that minted it). */
export function ownerOf(auth: AuthContext | undefined): string {
  if (!auth) throw new Error('session limits need an authenticated route');
  return `key:${auth.keyId}`;
}
