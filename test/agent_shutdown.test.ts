// SIGTERM with agent sessions open: each gets session.closed (server_shutdown), its call record is finished, exit 0.
import { expect, it } from 'vitest';
import { freshStore, startServer, storeSql } from './support/server.js';
import { AgentCaller, connectUrl } from './support/agent-client.js';

it('ends open agent sessions on SIGTERM, writes their call records, and exits 0', async () => {
  const store = freshStore('sqlite');
  const server = await startServer({ store });
  try {
    const created = await server.request('POST', '/atoms/v1/agent', {
      body: { name: 'shutdown', workflowType: 'workflow_graph', workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Hello.' }], edges: [] } },
    });
    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: created.body.data, mode: 'chat' }), 24000);
    await c.opened;
    const session = await c.waitFor((f) => f.type === 'session.created');
    await c.agentTurn(0);
    const code = await server.stop();
    await c.closed;
    expect(code).toBe(0);
    expect(c.of('session.closed').at(-1)?.reason).toBe('server_shutdown');
    const [row] = await storeSql(store, 'SELECT status, end_reason FROM calls WHERE call_id = ?', [session.call_id]);
    expect(row).toEqual({ status: 'completed', end_reason: 'server_shutdown' });
  } finally {
    await server.stop();
    await store.cleanup();
  }
}, 60_000);
