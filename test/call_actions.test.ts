// Call actions (issue 35 item 6, hosted reference "Call Actions") against the real server: create (trigger actions
// need config.phoneNumberFieldName), list one agent's (paged, by category and provider), read, update only the
// fields sent, delete; 400s naming the field, 404 for unknown ids, 403 for another organization's.
import { describe, expect, it } from 'vitest';
import { createOrgKey, testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, createAgent } from './support/agents.js';

const KEYS = ['_id', 'action_type', 'agentId', 'category', 'config', 'createdAt', 'object', 'organization', 'provider', 'updatedAt'];

describe.each(testDialects())('call actions on %s', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_WARM_MODELS: 'false' });
  const req = (method: string, path: string, body?: unknown, key?: string | null) => suite.server.request(method, `${A}${path}`, { body, key });

  it('creates, lists, reads, updates and deletes', async () => {
    const agent = await createAgent(suite.server, { name: 'CRM' });
    const org = (await req('GET', '/organization')).body.data._id;
    const trigger = { agentId: agent, category: 'trigger', provider: 'hubspot', action_type: 'create', object: 'contact', config: { phoneNumberFieldName: 'phone', conditions: [{ field: 'stage', operator: 'eq', value: 'lead' }], body: '{"a":1}' } };
    const created = await req('POST', '/call-actions', trigger);
    expect(created.status, created.text).toBe(201);
    expect(created.body.success).toBe(true);
    const action = created.body.data;
    expect(Object.keys(action).sort()).toEqual(KEYS);
    expect(action).toMatchObject({ organization: org, agentId: agent, category: 'trigger', provider: 'hubspot', action_type: 'create', object: 'contact', config: trigger.config });
    expect(action._id).toMatch(/^[0-9a-f]{24}$/);

    const post = await req('POST', '/call-actions', { agentId: agent, category: 'post-call', provider: 'salesforce', config: { body: 'note {{summary}}' } });
    expect(post.status, post.text).toBe(201);
    expect(post.body.data).toMatchObject({ action_type: null, object: null, config: { body: 'note {{summary}}' } });

    const listed = await req('GET', `/call-actions?agentId=${agent}`);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body).toEqual({ success: true, data: { callActions: [post.body.data, action], totalCount: 2, page: 1, limit: 10 } });
    expect((await req('GET', `/call-actions?agentId=${agent}&category=trigger`)).body.data.callActions.map((a: any) => a._id)).toEqual([action._id]);
    expect((await req('GET', `/call-actions?agentId=${agent}&provider=salesforce`)).body.data.callActions.map((a: any) => a._id)).toEqual([post.body.data._id]);
    const page2 = (await req('GET', `/call-actions?agentId=${agent}&limit=1&page=2`)).body.data;
    expect(page2).toMatchObject({ totalCount: 2, page: 2, limit: 1 });
    expect(page2.callActions.map((a: any) => a._id)).toEqual([action._id]);

    expect((await req('GET', `/call-actions/${action._id}`)).body).toEqual({ success: true, data: action });

    // Only the fields sent change; a trigger keeps needing its phone field.
    const updated = await req('PUT', `/call-actions/${action._id}`, { provider: 'pipedrive', object: 'deal' });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.data).toMatchObject({ provider: 'pipedrive', object: 'deal', action_type: 'create', category: 'trigger', config: trigger.config, createdAt: action.createdAt });
    expect((await req('GET', `/call-actions/${action._id}`)).body.data.provider).toBe('pipedrive');
    const noPhone = await req('PUT', `/call-actions/${action._id}`, { config: { body: 'x' } });
    expect(noPhone.status).toBe(400);
    expect(noPhone.body.errors.join(' ')).toMatch(/config\.phoneNumberFieldName: is required for trigger actions/);
    const toPost = await req('PUT', `/call-actions/${action._id}`, { category: 'post-call', config: { body: 'x' } });
    expect(toPost.status, toPost.text).toBe(200);
    expect(toPost.body.data).toMatchObject({ category: 'post-call', config: { body: 'x' } });

    const deleted = await req('DELETE', `/call-actions/${action._id}`);
    expect(deleted.body).toEqual({ success: true, data: { message: 'Call action deleted successfully' } });
    expect((await req('GET', `/call-actions/${action._id}`)).status).toBe(404);
    expect((await req('DELETE', `/call-actions/${action._id}`)).status).toBe(404);
    expect((await req('GET', `/call-actions?agentId=${agent}`)).body.data.totalCount).toBe(1);

    // Deleting the agent deletes its actions.
    expect((await req('DELETE', `/agent/${agent}`)).status).toBeLessThan(300);
    expect((await req('GET', `/call-actions/${post.body.data._id}`)).status).toBe(404);
  });

  it('refuses bad bodies and queries (400 naming the field), unknown ids (404) and other organizations (403)', async () => {
    const agent = await createAgent(suite.server, { name: 'Mine' });
    const otherKey = await createOrgKey(suite.store, 'other', 'other-org');
    const foreign = await createAgent(suite.server, { name: 'Theirs' }, otherKey);
    const cases: [unknown, RegExp][] = [
      [{}, /agentId/],
      [{ agentId: agent, category: 'sometimes', provider: 'x', config: {} }, /category: must be one of trigger, post-call/],
      [{ agentId: agent, category: 'trigger', provider: 'x', config: {} }, /config\.phoneNumberFieldName: is required for trigger actions/],
      [{ agentId: agent, category: 'post-call', provider: '', config: {} }, /provider: must be a string of 1-100 characters/],
      [{ agentId: agent, category: 'post-call', provider: 'x', action_type: 'merge', config: {} }, /action_type: must be one of create, update/],
      [{ agentId: agent, category: 'post-call', provider: 'x', config: { conditions: [{ field: 'a' }] } }, /config\.conditions\.0\.operator|operator/],
      [{ agentId: agent, category: 'post-call', provider: 'x' }, /config/],
    ];
    for (const [body, message] of cases) {
      const res = await req('POST', '/call-actions', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.errors.join(' ')).toMatch(message);
    }
    expect((await req('POST', '/call-actions', { agentId: 'f'.repeat(24), category: 'post-call', provider: 'x', config: {} })).status).toBe(404);
    expect((await req('POST', '/call-actions', { agentId: foreign, category: 'post-call', provider: 'x', config: {} })).status).toBe(403);
    expect((await req('GET', '/call-actions')).body.errors.join(' ')).toMatch(/agentId: is required/);
    expect((await req('GET', `/call-actions?agentId=${agent}&limit=0`)).status).toBe(400);
    expect((await req('GET', `/call-actions?agentId=${agent}&category=never`)).status).toBe(400);
    expect((await req('GET', `/call-actions?agentId=${foreign}`)).status).toBe(403);

    const theirs = (await req('POST', '/call-actions', { agentId: foreign, category: 'post-call', provider: 'x', config: {} }, otherKey)).body.data;
    expect((await req('GET', `/call-actions/${theirs._id}`)).status).toBe(403);
    expect((await req('PUT', `/call-actions/${theirs._id}`, { provider: 'y' })).status).toBe(403);
    expect((await req('DELETE', `/call-actions/${theirs._id}`)).status).toBe(403);
    expect((await req('GET', `/call-actions/${theirs._id}`, undefined, otherKey)).body.data.provider).toBe('x');
    expect((await req('GET', '/call-actions/nope')).status).toBe(404);
    expect((await req('GET', '/call-actions/x', undefined, null)).status).toBe(401);
  });
});
