// Giving a claimed outbound call back to the queue (a dialer that stops, or loses its pace, before the call's INVITE):
// it keeps its place, unless a cancel was asked for while it was slotted (a lane marks its next call slotted while the
// call before it waits): that call is never queued again, so no later server dials it. On each store.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { requeueOutbound } from '../control-plane/telephony/outbound.js';
import { freshStore, startServer, storeSql, testDialects, withStore } from './support/server.js';

describe.each(testDialects())('requeueOutbound on %s', (dialect) => {
  it('queues a claimed or slotted call again, but not one canceled while slotted, nor one another server holds', async () => {
    const store = freshStore(dialect);
    try {
      const server = await startServer({ store, env: { PARLEY_SIP_PORT: 'off' } });
      await server.stop(); // migrated, with an organization
      const [org] = await storeSql(store, 'SELECT id FROM organizations LIMIT 1');
      const now = new Date().toISOString();
      const row = async (state: string, claimedBy: string, cancelRequested: number) => {
        const id = randomUUID();
        await storeSql(
          store,
          `INSERT INTO outbound_calls (call_id, org_id, agent_id, to_number, from_number, trunk_id, pace_key, revision_id, variables, is_test, state, queue_order, claimed_by, claimed_at, cancel_requested, retry_of, created_at, updated_at)
           VALUES ($1, $2, 'agent', '+15550100', '+15550199', NULL, 'udp:127.0.0.1:5060', NULL, '{}', 0, $3, $4, $5, $6, $7, NULL, $8, $9)`,
          [id, org!.id, state, now + id, claimedBy, now, cancelRequested, now, now],
        );
        return id;
      };
      const claimed = await row('claimed', 'me', 0);
      const slotted = await row('slotted', 'me', 0);
      const canceled = await row('slotted', 'me', 1);
      const theirs = await row('slotted', 'other', 0);
      const results = await withStore(store, async (db) => ({
        claimed: await requeueOutbound(db, claimed, 'me'),
        slotted: await requeueOutbound(db, slotted, 'me'),
        canceled: await requeueOutbound(db, canceled, 'me'),
        theirs: await requeueOutbound(db, theirs, 'me'),
      }));
      expect(results).toEqual({ claimed: true, slotted: true, canceled: false, theirs: false });
      const states = Object.fromEntries(
        (await storeSql(store, 'SELECT call_id, state FROM outbound_calls')).map((r) => [r.call_id as string, r.state as string]),
      );
      expect([states[claimed], states[slotted], states[canceled], states[theirs]]).toEqual(['queued', 'queued', 'slotted', 'slotted']);
    } finally {
      await store.cleanup();
    }
  });
});
