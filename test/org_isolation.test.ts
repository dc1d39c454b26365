// What is not yours stays out of reach (issue 34): another organization's resource answers the spec's general 403 the
// same way for every kind (agents, web and chat calls, tools, trunks, webhooks, audiences, campaigns, do-not-call
// entries), unknown ids 404; and what an agent's configuration or a campaign refers to must be the caller's
// organization's (400 naming the field, the same whether missing or foreign).
import { describe, expect, it } from 'vitest';
import { createOrgKey, type TestServer } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { AgentCaller, connectUrl, endedCall } from './support/agent-client.js';

const A = '/atoms/v1';

async function created(server: TestServer, path: string, body: unknown, key?: string): Promise<any> {
  const res = await server.request('POST', `${A}${path}`, { body, key });
  expect(res.status, `${path}: ${res.text}`).toBeLessThan(300);
  return res.body.data;
}

/** A call of `mode` on `agentId`, ended; its call id. */
async function callOf(server: TestServer, agentId: string, mode: 'chat' | 'webcall'): Promise<string> {
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, ...(mode === 'chat' ? { mode } : { sample_rate: '16000' }) }), 16000);
  await c.opened;
  const session = await c.waitFor((f) => f.type === 'session.created');
  c.send({ type: 'session.close' });
  await c.closed;
  await endedCall(server, session.call_id as string);
  return session.call_id as string;
}

describe('organization isolation', () => {
  const suite = serverForSuite('sqlite');

  it("another organization's resources of every kind answer 403 alike; unknown ids 404", async () => {
    const server = suite.server;
    const other = await createOrgKey(suite.store, 'isolation-other', 'org-isolation-other');
    const agentId = await created(server, '/agent', { name: 'Mine', workflowType: 'workflow_graph', workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Hi.' }], edges: [] } });
    const tool = await created(server, '/tool', { definition: { type: 'client_tool', name: 'mine', description: 'Mine', timeoutMs: 1000 } });
    const trunk = await created(server, '/sip-trunk/outbound', { name: 'Mine', address: 'isolation.example.com', numbers: ['+15550770001'] });
    const webhook = await created(server, '/webhook', { endpoint: 'https://isolation.example.com/hook' });
    const entry = await created(server, '/dnc', { phoneNumber: '+15550770099' });
    const form = new FormData();
    form.append('name', 'Mine');
    form.append('phoneNumberColumnName', 'phone');
    form.append('file', new Blob(['phone\n+15550770002\n'], { type: 'text/csv' }), 'a.csv');
    const uploaded = await fetch(`${server.base}${A}/audience`, { method: 'POST', headers: { authorization: `Bearer ${server.key}` }, body: form });
    expect(uploaded.status).toBe(201);
    const audienceId = ((await uploaded.json()) as { data: { _id: string } }).data._id;
    const campaign = await created(server, '/campaign', { name: 'Mine', agentId, audienceId, fromNumbers: ['+15550770001'] });
    const webCall = await callOf(server, agentId, 'webcall');
    const chatCall = await callOf(server, agentId, 'chat');
    const webhookId = (webhook._id ?? webhook) as string;
    const routes: [string, string][] = [
      ['GET', `/agent/${agentId}`],
      ['GET', `/conversation/${webCall}`],
      ['GET', `/conversation/${chatCall}`],
      ['GET', `/recordings/${webCall}?channel=mono`],
      ['GET', `/recordings/${chatCall}?channel=mono`],
      ['GET', `/conversation/${webCall}/recording/download-url`],
      ['GET', `/conversation/${chatCall}/recording/download-url`],
      ['POST', `/conversation/${chatCall}/cancel`],
      ['GET', `/tool/${tool.toolId ?? tool._id}`],
      ['GET', `/sip-trunk/${trunk._id}`],
      ['GET', `/webhook?webhookId=${webhookId}`],
      ['GET', `/audience/${audienceId}`],
      ['GET', `/campaign/${campaign._id}`],
      ['GET', `/dnc/${entry.entries?.[0]?._id ?? entry._id}`],
    ];
    for (const [method, path] of routes) {
      const res = await server.request(method, `${A}${path}`, { key: other });
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(403);
      expect(res.body.status).toBe(false);
      expect(res.body.errors[0], path).toMatch(/^This API key has no access to this /);
    }
    for (const path of ['/conversation/CALL-1700000000000-abcdef', '/sip-trunk/ffffffffffffffffffffffff', '/audience/ffffffffffffffffffffffff', '/campaign/ffffffffffffffffffffffff', '/dnc/ffffffffffffffffffffffff']) {
      expect((await server.request('GET', `${A}${path}`, { key: other })).status, path).toBe(404);
    }
  }, 60_000);

  it("an agent's configuration and a campaign refer only to the caller's organization: 400 naming the field", async () => {
    const server = suite.server;
    const other = await createOrgKey(suite.store, 'isolation-refs', 'org-isolation-refs');
    const theirs = await created(server, '/tool', { definition: { type: 'client_tool', name: 'theirs', description: 'Theirs', timeoutMs: 1000 } }, other);
    await created(server, '/secret', { name: 'their-key', value: 'not-yours-123' }, other);
    const agent = (body: Record<string, unknown>) => server.request('POST', `${A}/agent`, { body: { name: 'Refs', workflowType: 'single_prompt', prompt: 'Hi.', ...body } });
    const foreignTool = await agent({ toolRefs: [theirs.toolId] });
    expect(foreignTool.status, foreignTool.text).toBe(400);
    expect(foreignTool.body.errors).toContain(`toolRefs[0]: no tool ${theirs.toolId} in your organization's library`);
    const foreignSecret = await agent({ model: { provider: 'openai_compatible', baseUrl: 'https://llm.example.com/v1', model: 'm', apiKeySecret: 'their-key' } });
    expect(foreignSecret.status).toBe(400);
    expect(foreignSecret.body.errors).toContain("model.apiKeySecret: no secret named their-key in your organization's vault (POST /secret first)");
    const kb = await agent({ globalKnowledgeBaseId: 'kb_123' });
    expect(kb.status).toBe(400);
    expect(kb.body.errors[0]).toMatch(/^globalKnowledgeBaseId: no knowledge base kb_123/);
    // The same through a draft.
    const mine = await created(server, '/agent', { name: 'Drafted', workflowType: 'single_prompt', prompt: 'Hi.' });
    const branches = await server.request('GET', `${A}/agent/${mine}/branches`);
    const main = branches.body.data.branches.find((b: any) => b.branch.isDefault).branch._id;
    const draft = await server.request('PUT', `${A}/agent/${mine}/branches/${main}/draft`, { body: { toolRefs: [theirs.toolId] } });
    expect(draft.status, draft.text).toBe(400);
    expect(draft.body.errors).toContain(`toolRefs[0]: no tool ${theirs.toolId} in your organization's library`);
    // A campaign on another organization's agent.
    const theirAgent = await created(server, '/agent', { name: 'Theirs', workflowType: 'workflow_graph', workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Hi.' }], edges: [] } }, other);
    const campaign = await server.request('POST', `${A}/campaign`, { body: { name: 'x', agentId: theirAgent, audienceId: 'ffffffffffffffffffffffff', fromNumbers: ['+15550770001'] } });
    expect(campaign.status, campaign.text).toBe(400);
    expect(campaign.text).toMatch(new RegExp(`agentId: ${theirAgent} is not an agent of your organization`));
    // An outbound call on another organization's agent: that agent's 403, as on every agent route.
    const outbound = await server.request('POST', `${A}/conversation/outbound`, { body: { agentId: theirAgent, phoneNumber: '+15550770003', fromNumber: '+15550770001' } });
    expect(outbound.status, outbound.text).toBe(403);
    expect(outbound.body.errors).toEqual(['This API key has no access to this agent']);
    // Answering another organization's inbound trunk: 404 like an unknown source (the wire's "404 unknown source").
    const theirTrunk = await created(server, '/sip-trunk/inbound', { name: 'Theirs', numbers: ['+15550770004'] }, other);
    const answers = await server.request('POST', `${A}/agent/${mine}/answers`, { body: { sourceKind: 'sipTrunk', sourceId: theirTrunk._id } });
    const unknown = await server.request('POST', `${A}/agent/${mine}/answers`, { body: { sourceKind: 'sipTrunk', sourceId: 'ffffffffffffffffffffffff' } });
    expect([answers.status, answers.body]).toEqual([unknown.status, unknown.body]);
    expect(answers.status).toBe(404);
  }, 60_000);
});
