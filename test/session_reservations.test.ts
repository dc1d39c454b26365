// The session caps with agents' concurrency reservations (calls/session-limits.ts): a reserved place is the agent's
// own (never refused by its key's, its organization's or the server's cap), every other call shares the unreserved
// pools (the organization's limit minus its reservations; the server's cap minus every organization's), and without
// reservations the caps behave as before.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../control-plane/errors.js';
import { SessionLimits, type AgentCall, type ChannelCounts } from '../calls/session-limits.js';

const places = (p: Partial<ChannelCounts>): ChannelCounts => ({ webcall: 0, inbound: 0, outbound: 0, chat: 0, ...p });
const call = (orgId: string, agentId: string, channel: AgentCall['channel'] = 'webcall'): AgentCall => ({ orgId, agentId, channel });
const refusal = (fn: () => unknown): number => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err.status;
    throw err;
  }
  return 0;
};

describe('session caps with reservations', () => {
  it('without reservations: the organization limit covers its agent calls of every channel and owner', () => {
    const limits = new SessionLimits({ speech: { server: 10, perOwner: 3 }, chat: { server: 10, perOwner: 3 } });
    limits.acquire('speech', 'key:k1', call('o1', 'a1'));
    limits.acquire('speech', 'org:o1', call('o1', 'a2', 'inbound'));
    const third = limits.acquire('speech', 'key:k2', call('o1', 'a1'));
    expect(refusal(() => limits.acquire('speech', 'org:o1', call('o1', 'a3', 'outbound')))).toBe(429);
    third.release();
    third.release(); // twice: no effect
    limits.acquire('speech', 'org:o1', call('o1', 'a3', 'outbound'));
    expect(refusal(() => limits.acquire('speech', 'key:k3', call('o1', 'a1')))).toBe(429);
    // Another organization is not affected; sessions without an agent count against their key and the server only.
    limits.acquire('speech', 'org:o2', call('o2', 'b1', 'inbound'));
    limits.acquire('speech', 'key:k1');
    expect(limits.orgConcurrency('o1')).toMatchObject({ orgLimit: 3, activeTotal: 3, serverActive: 5 });
    expect(limits.orgConcurrency('o1').active.get('a1')).toEqual(places({ webcall: 1 }));
  });

  it('a reserved place is always free for its agent and channel; the others share what is left', () => {
    const limits = new SessionLimits({ speech: { server: 6, perOwner: 4 }, chat: { server: 10, perOwner: 3 } });
    limits.setReservations('o1', new Map([['a1', places({ inbound: 2 })]]));
    // The pool of o1 is 4 - 2 = 2: two calls of another agent fill it.
    limits.acquire('speech', 'org:o1', call('o1', 'a2', 'inbound'));
    limits.acquire('speech', 'key:k1', call('o1', 'a2'));
    expect(refusal(() => limits.acquire('speech', 'org:o1', call('o1', 'a2', 'inbound')))).toBe(429);
    // a1 on webcall has no reservation: the pool is full for it too.
    expect(refusal(() => limits.acquire('speech', 'key:k1', call('o1', 'a1', 'webcall')))).toBe(429);
    // a1 inbound: its two reserved places.
    const r1 = limits.acquire('speech', 'org:o1', call('o1', 'a1', 'inbound'));
    limits.acquire('speech', 'org:o1', call('o1', 'a1', 'inbound'));
    expect(refusal(() => limits.acquire('speech', 'org:o1', call('o1', 'a1', 'inbound')))).toBe(429);
    r1.release();
    limits.acquire('speech', 'org:o1', call('o1', 'a1', 'inbound'));
    expect(limits.orgConcurrency('o1')).toMatchObject({ activeTotal: 4 });
  });

  it("other organizations and agentless sessions cannot take a reserved place: the server's pool excludes every reservation", () => {
    const limits = new SessionLimits({ speech: { server: 4, perOwner: 4 }, chat: { server: 10, perOwner: 3 } });
    limits.setReservations('o1', new Map([['a1', places({ outbound: 2 })]]));
    // The server's pool is 4 - 2 = 2.
    limits.acquire('speech', 'org:o2', call('o2', 'b1', 'inbound'));
    limits.acquire('speech', 'key:other');
    expect(refusal(() => limits.acquire('speech', 'org:o2', call('o2', 'b1', 'inbound')))).toBe(503);
    expect(refusal(() => limits.acquire('speech', 'key:other'))).toBe(503);
    // o1's reserved places are still there, past the server's pool.
    limits.acquire('speech', 'org:o1', call('o1', 'a1', 'outbound'));
    limits.acquire('speech', 'org:o1', call('o1', 'a1', 'outbound'));
    expect(limits.open('speech')).toBe(4);
  });

  it('a reserved place is not refused by its key cap; reservations removed restore the plain caps', () => {
    const limits = new SessionLimits({ speech: { server: 10, perOwner: 2 }, chat: { server: 10, perOwner: 3 } });
    limits.setReservations('o1', new Map([['a1', places({ webcall: 1 })]]));
    limits.acquire('speech', 'key:k1', call('o1', 'a2'));
    // The pool (2 - 1 = 1) is full; a1's reserved web-call place is free, on the same key.
    expect(refusal(() => limits.acquire('speech', 'key:k1', call('o1', 'a2')))).toBe(429);
    limits.acquire('speech', 'key:k1', call('o1', 'a1'));
    limits.replaceReservations(new Map());
    expect(limits.orgConcurrency('o1').reserved.size).toBe(0);
    expect(refusal(() => limits.acquire('speech', 'key:k2', call('o1', 'a1')))).toBe(429);
  });

  it('chat sessions keep their own cap and are reported per agent', () => {
    const limits = new SessionLimits({ speech: { server: 10, perOwner: 1 }, chat: { server: 10, perOwner: 2 } });
    limits.acquire('speech', 'key:k1', call('o1', 'a1'));
    limits.acquire('chat', 'key:k1', call('o1', 'a1', 'chat'));
    limits.acquire('chat', 'key:k1', call('o1', 'a1', 'chat'));
    expect(refusal(() => limits.acquire('chat', 'key:k1', call('o1', 'a1', 'chat')))).toBe(429);
    expect(limits.orgConcurrency('o1').active.get('a1')).toEqual(places({ webcall: 1, chat: 2 }));
    expect(limits.orgConcurrency('o1').activeTotal).toBe(1);
  });
});
