// Tool library: validation naming each field, defaults, ids, per-org names, access, merge updates, delete guarded by toolRefs, resolution.
import { describe, expect, it } from 'vitest';
import { createOrgKey, testDialects, type StoreEnv, withStore } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, commit, createAgent, mainBranchId, putDraft } from './support/agents.js';
import { resolveAgentTools, stripAuth } from '../control-plane/tools/tools.js';

const TOOL_ID = /^tool_[a-z0-9]{24}$/;
let seq = 0;
const uniq = (prefix: string) => `${prefix}_${++seq}_${Date.now().toString(36)}`;

const apiCall = (over: Record<string, unknown> = {}) => ({
  type: 'api_call',
  name: uniq('get_order'),
  description: 'Looks up an order by its id',
  url: 'https://api.example.com/orders/{{order_id}}',
  method: 'GET',
  ...over,
});

describe.each(testDialects())('tool library on %s', (dialect) => {
  const suite = serverForSuite(dialect);
  const req = (method: string, p: string, opts: Parameters<typeof suite.server.request>[2] = {}) => suite.server.request(method, `${A}${p}`, opts);
  const create = async (definition: Record<string, unknown>, key?: string) => {
    const res = await req('POST', '/tool', { body: { definition }, key });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { _id: string; toolId: string; organizationId: string; type: string; definition: Record<string, any>; createdAt: string; updatedAt: string };
  };
  const errorsOf = async (body: unknown, method = 'POST', path = '/tool') => {
    const res = await req(method, path, { body });
    expect(res.status, res.text).toBe(400);
    expect(res.body.status).toBe(false);
    return res.body.errors as string[];
  };

  it('creates an api_call tool: 201 with the record, a tool_ id and every default filled; reads it back', async () => {
    const definition = apiCall({ llmParameters: [{ name: 'order_id', description: 'The order id', type: 'text' }], auth: { type: 'bearer', token: 'orders_token' } });
    const tool = await create(definition);
    expect(tool).toEqual({
      _id: expect.stringMatching(/^[0-9a-f]{24}$/),
      toolId: expect.stringMatching(TOOL_ID),
      organizationId: expect.any(String),
      type: 'api_call',
      definition: { ...definition, enabled: true, timeout: 5000, responseVariables: [], llmParameters: [{ name: 'order_id', description: 'The order id', type: 'text', required: false }] },
      createdAt: expect.any(String),
      updatedAt: tool.createdAt,
    });
    const read = await req('GET', `/tool/${tool.toolId}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ status: true, data: tool });
  });

  it('creates a client_tool with its defaults (timeoutMs 1000, expectsResponse true, fillerPhrases [])', async () => {
    const tool = await create({ type: 'client_tool', name: uniq('open_cart'), description: 'Opens the cart in the app' });
    expect(tool.type).toBe('client_tool');
    expect(tool.definition).toMatchObject({ enabled: true, timeoutMs: 1000, expectsResponse: true, fillerPhrases: [] });
    const explicit = await create({ type: 'client_tool', name: uniq('pay'), description: 'Pays', timeoutMs: 120000, expectsResponse: false, fillerPhrases: ['One moment'], enabled: false });
    expect(explicit.definition).toMatchObject({ timeoutMs: 120000, expectsResponse: false, fillerPhrases: ['One moment'], enabled: false });
  });

  it('refuses bad bodies and definitions with a 400 naming each bad field', async () => {
    expect(await errorsOf({})).toEqual(['definition: required']);
    expect((await errorsOf([1]))[0]).toMatch(/JSON object/);
    expect((await errorsOf({ definition: 'x' }))[0]).toMatch(/^definition:/);
    const missing = await errorsOf({ definition: {} });
    for (const f of ['type', 'name', 'description']) expect(missing.some((e) => e.startsWith(`definition.${f}:`)), f).toBe(true);

    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'webhook' }, 'definition.type'],
      [{ name: 'get order' }, 'definition.name'],
      [{ name: '' }, 'definition.name'],
      [{ description: '' }, 'definition.description'],
      [{ enabled: 'yes' }, 'definition.enabled'],
      [{ url: undefined }, 'definition.url'],
      [{ url: 'ftp://files.example.com/x' }, 'definition.url'],
      [{ url: 'not a url' }, 'definition.url'],
      [{ method: undefined }, 'definition.method'],
      [{ method: 'FETCH' }, 'definition.method'],
      [{ timeout: 999 }, 'definition.timeout'],
      [{ timeout: 30001 }, 'definition.timeout'],
      [{ timeout: 1500.5 }, 'definition.timeout'],
      [{ headers: { 'X-Id': 7 } }, 'definition.headers.X-Id'],
      [{ headers: { 'Bad Header': 'v' } }, 'definition.headers.Bad Header'],
      [{ headersArray: [{ key: 'X-A' }] }, 'definition.headersArray.0.value'],
      [{ queryParams: [{ key: 'q', value: 3 }] }, 'definition.queryParams.0.value'],
      [{ queryParams: 'q=1' }, 'definition.queryParams'],
      [{ method: 'POST', requestBody: '{"a": ' }, 'definition.requestBody'],
      [{ method: 'POST', requestBody: { a: 1 } }, 'definition.requestBody'],
      [{ method: 'GET', requestBody: '{}' }, 'definition.requestBody'],
      [{ llmParameters: [{ name: 'size', description: 'Size', type: 'enum' }] }, 'definition.llmParameters.0.values'],
      [{ llmParameters: [{ name: 'when', description: 'Date', type: 'date' }] }, 'definition.llmParameters.0.type'],
      [{ llmParameters: [{ name: 'x', type: 'text' }] }, 'definition.llmParameters.0.description'],
      [{ llmParameters: [{ name: 'x', description: 'X', type: 'text', required: 'no' }] }, 'definition.llmParameters.0.required'],
      [{ llmParameters: [{ name: 'x', description: 'X', type: 'text' }, { name: 'x', description: 'Y', type: 'number' }] }, 'definition.llmParameters.1.name'],
      [{ responseVariables: [{ variableName: 'status' }] }, 'definition.responseVariables.0.jsonPath'],
      [{ responseVariables: [{ variableName: 'bad name', jsonPath: '$.a' }] }, 'definition.responseVariables.0.variableName'],
      [{ auth: { type: 'oauth' } }, 'definition.auth.type'],
      [{ auth: { type: 'bearer' } }, 'definition.auth.token'],
      [{ auth: { type: 'bearer', token: 'Bearer sk live value' } }, 'definition.auth.token'],
      [{ auth: { type: 'api_key', name: 'X-Key', location: 'body', value: 'k' } }, 'definition.auth.location'],
      [{ auth: { type: 'api_key', location: 'header', value: 'k' } }, 'definition.auth.name'],
      [{ auth: { type: 'basic', username: 'u' } }, 'definition.auth.password'],
      [{ auth: { type: 'bearer', token: 't', value: 'inline' } }, 'definition.auth.value'],
      [{ timeoutMs: 2000 }, 'definition.timeoutMs'],
      [{ fillerPhrases: ['hold on'] }, 'definition.fillerPhrases'],
      [{ colour: 'blue' }, 'definition.colour'],
    ];
    for (const [over, field] of cases) {
      const errors = await errorsOf({ definition: apiCall(over) });
      expect(errors.some((e) => e.startsWith(`${field}:`)), `${JSON.stringify(over)} -> ${errors.join(' | ')}`).toBe(true);
    }

    const client = (over: Record<string, unknown>) => ({ type: 'client_tool', name: uniq('c'), description: 'd', ...over });
    const clientCases: [Record<string, unknown>, string][] = [
      [{ timeoutMs: 50 }, 'definition.timeoutMs'],
      [{ timeoutMs: 120001 }, 'definition.timeoutMs'],
      [{ timeoutMs: 'soon' }, 'definition.timeoutMs'],
      [{ expectsResponse: 'yes' }, 'definition.expectsResponse'],
      [{ fillerPhrases: [1] }, 'definition.fillerPhrases.0'],
      [{ fillerPhrases: 'hold on' }, 'definition.fillerPhrases'],
      [{ url: 'https://x.example' }, 'definition.url'],
      [{ auth: { type: 'none' } }, 'definition.auth'],
    ];
    for (const [over, field] of clientCases) {
      const errors = await errorsOf({ definition: client(over) });
      expect(errors.some((e) => e.startsWith(`${field}:`)), `${JSON.stringify(over)} -> ${errors.join(' | ')}`).toBe(true);
    }

    // Every bad field of one request is named in one envelope; a field of the other type says so.
    const many = await errorsOf({ definition: apiCall({ name: 'has space', method: 'FETCH', timeout: 1, expectsResponse: true }) });
    for (const f of ['name', 'method', 'timeout', 'expectsResponse']) expect(many.some((e) => e.startsWith(`definition.${f}:`)), f).toBe(true);
    expect(many.find((e) => e.startsWith('definition.expectsResponse:'))).toMatch(/client_tool/);
    expect((await req('GET', '/tool')).body.data.tools.some((t: any) => t.definition.name === 'has space')).toBe(false);
  });

  it('templated URL and request bodies are accepted; placeholders may stand inside strings or as whole values', async () => {
    const tool = await create(apiCall({ url: 'https://{{region}}.example.com/v1/{{path}}', method: 'POST', requestBody: '{"id": "{{order_id}}", "qty": {{qty}}}', headersArray: [{ key: 'X-Call', value: '{{call_id}}' }], queryParams: [{ key: 'c', value: '{{customer}}' }] }));
    expect(tool.definition.requestBody).toBe('{"id": "{{order_id}}", "qty": {{qty}}}');
  });

  it('names are unique per organization (409 tool_name_exists); the same name in another org is allowed', async () => {
    const name = uniq('check_stock');
    await create(apiCall({ name }));
    const dup = await req('POST', '/tool', { body: { definition: { type: 'client_tool', name, description: 'Other' } } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ status: false, error_type: 'tool_name_exists', errors: [expect.stringContaining('definition.name')] });
    const otherKey = await createOrgKey(suite.store, 'other', uniq('org'));
    const other = await create(apiCall({ name }), otherKey);
    expect(other.definition.name).toBe(name);
  });

  it('lists the organization\'s tools, optionally by type; 401 without a key, 403 for another org, 404 for unknown ids', async () => {
    const otherKey = await createOrgKey(suite.store, 'other', uniq('org'));
    const mine = await create(apiCall());
    const client = await create({ type: 'client_tool', name: uniq('c'), description: 'd' });
    const theirs = await create(apiCall(), otherKey);

    const all = await req('GET', '/tool');
    expect(all.status).toBe(200);
    const ids = (all.body.data.tools as { toolId: string }[]).map((t) => t.toolId);
    expect(ids).toEqual(expect.arrayContaining([mine.toolId, client.toolId]));
    expect(ids).not.toContain(theirs.toolId);
    const clients = await req('GET', '/tool?type=client_tool');
    expect((clients.body.data.tools as { type: string }[]).every((t) => t.type === 'client_tool')).toBe(true);
    expect((clients.body.data.tools as { toolId: string }[]).map((t) => t.toolId)).toContain(client.toolId);
    const badType = await req('GET', '/tool?type=webhook');
    expect(badType.status).toBe(400);
    expect(badType.body.errors[0]).toMatch(/^type:/);

    expect((await req('GET', '/tool', { key: null })).status).toBe(401);
    for (const [method, body] of [['GET', undefined], ['PATCH', { definition: { description: 'x' } }], ['DELETE', undefined]] as const) {
      const foreign = await req(method, `/tool/${theirs.toolId}`, { body });
      expect(foreign.status, method).toBe(403);
      expect(foreign.body.status).toBe(false);
      expect((await req(method, '/tool/tool_000000000000000000000000', { body })).status, method).toBe(404);
      expect((await req(method, '/tool/not-a-tool', { body })).status, method).toBe(404);
    }
    expect((await req('GET', `/tool/${theirs.toolId}`, { key: otherKey })).body.data.definition.description).toBe('Looks up an order by its id');
  });

  it('PATCH merges into the stored definition, re-validates it whole, keeps names unique, and may change the type', async () => {
    const tool = await create(apiCall({ timeout: 8000, auth: { type: 'bearer', token: 'orders_token' }, headers: { 'X-A': '1' } }));
    const patched = await req('PATCH', `/tool/${tool.toolId}`, { body: { definition: { description: 'Finds an order', headers: { 'X-B': '2' }, auth: null } } });
    expect(patched.status, patched.text).toBe(200);
    const d = patched.body.data.definition;
    expect(d).toMatchObject({ description: 'Finds an order', timeout: 8000, url: tool.definition.url, headers: { 'X-A': '1', 'X-B': '2' } });
    expect(d.auth).toBeUndefined();
    expect(patched.body.data.updatedAt >= tool.updatedAt).toBe(true);
    expect((await req('GET', `/tool/${tool.toolId}`)).body.data.definition).toEqual(d);

    const bad = await errorsOf({ definition: { timeout: 50, method: 'FETCH' } }, 'PATCH', `/tool/${tool.toolId}`);
    expect(bad.some((e) => e.startsWith('definition.timeout:'))).toBe(true);
    expect(bad.some((e) => e.startsWith('definition.method:'))).toBe(true);
    const removeRequired = await errorsOf({ definition: { url: null } }, 'PATCH', `/tool/${tool.toolId}`);
    expect(removeRequired).toEqual(['definition.url: required']);
    expect(await errorsOf({}, 'PATCH', `/tool/${tool.toolId}`)).toEqual(['definition: required']);
    expect((await req('GET', `/tool/${tool.toolId}`)).body.data.definition).toEqual(d);

    const other = await create(apiCall());
    const clash = await req('PATCH', `/tool/${tool.toolId}`, { body: { definition: { name: other.definition.name } } });
    expect(clash.status).toBe(409);
    expect(clash.body.error_type).toBe('tool_name_exists');

    const retyped = await req('PATCH', `/tool/${tool.toolId}`, { body: { definition: { type: 'client_tool', name: tool.definition.name, description: 'Now in the app' } } });
    expect(retyped.status, retyped.text).toBe(200);
    expect(retyped.body.data).toMatchObject({ type: 'client_tool', toolId: tool.toolId, definition: { type: 'client_tool', timeoutMs: 1000, expectsResponse: true, fillerPhrases: [] } });
    expect(retyped.body.data.definition.url).toBeUndefined();
  });

  it('resolveAgentTools returns the current enabled definitions in toolRefs order, right after a PATCH; stripAuth drops auth', async () => {
    const a = await create(apiCall({ auth: { type: 'api_key', name: 'X-Key', location: 'header', value: 'orders_key' } }));
    const b = await create({ type: 'client_tool', name: uniq('c'), description: 'd' });
    const off = await create(apiCall({ enabled: false }));
    const otherKey = await createOrgKey(suite.store, 'other', uniq('org'));
    const foreign = await create(apiCall(), otherKey);
    const refs = [b.toolId, a.toolId, off.toolId, foreign.toolId, 'tool_zzzzzzzzzzzzzzzzzzzzzzzz', a.toolId];

    const before = await withStore(suite.store, (db) => resolveAgentTools(db, a.organizationId, refs));
    expect(before.map((t) => t.name)).toEqual([b.definition.name, a.definition.name]);
    expect(before[1]).toEqual(a.definition);

    const patch = await req('PATCH', `/tool/${a.toolId}`, { body: { definition: { description: 'Edited description', timeout: 12000 } } });
    expect(patch.status).toBe(200);
    const after = await withStore(suite.store, (db) => resolveAgentTools(db, a.organizationId, refs));
    expect(after[1]).toMatchObject({ description: 'Edited description', timeout: 12000, auth: { type: 'api_key', value: 'orders_key' } });
    const stripped = stripAuth(after[1]!);
    expect('auth' in stripped).toBe(false);
    expect(stripped).toMatchObject({ name: a.definition.name, description: 'Edited description' });

    await req('PATCH', `/tool/${off.toolId}`, { body: { definition: { enabled: true } } });
    expect((await withStore(suite.store, (db) => resolveAgentTools(db, a.organizationId, refs))).map((t) => t.name)).toEqual([b.definition.name, a.definition.name, off.definition.name]);
  });

  it('delete is refused (409 tool_in_use, naming the agent) while an unversioned agent references it; allowed once removed', async () => {
    const tool = await create(apiCall());
    const agentName = uniq('Order desk');
    const agent = await createAgent(suite.server, { name: agentName, toolRefs: [tool.toolId] });
    const refused = await req('DELETE', `/tool/${tool.toolId}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ status: false, error_type: 'tool_in_use', data: { agents: [{ _id: agent, name: agentName }] } });
    expect(refused.body.errors[0]).toContain(agent);
    expect(refused.body.errors[0]).toContain(agentName);
    expect((await req('GET', `/tool/${tool.toolId}`)).status).toBe(200);

    const edit = await req('PATCH', `/agent/${agent}`, { body: { toolRefs: [] } });
    expect(edit.status, edit.text).toBe(200);
    const deleted = await req('DELETE', `/tool/${tool.toolId}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect((await req('GET', `/tool/${tool.toolId}`)).status).toBe(404);
  });

  it('delete checks committed heads and open drafts of versioned agents; archived agents do not hold a tool', async () => {
    const committed = await create(apiCall());
    const drafted = await create(apiCall());
    const agent = await createAgent(suite.server, { name: uniq('Versioned') });
    const main = await mainBranchId(suite.server, agent);
    await commit(suite.server, agent, main, { toolRefs: [committed.toolId] });
    expect((await req('DELETE', `/tool/${committed.toolId}`)).body.error_type).toBe('tool_in_use');

    const draft = await putDraft(suite.server, agent, main, { toolRefs: [committed.toolId, drafted.toolId] });
    expect(draft.status, draft.text).toBe(200);
    const inDraft = await req('DELETE', `/tool/${drafted.toolId}`);
    expect(inDraft.status).toBe(409);
    expect(inDraft.body.data.agents).toEqual([{ _id: agent, name: expect.any(String) }]);

    await commit(suite.server, agent, main, { toolRefs: [] });
    // The old revision that referenced them is history: both may go now.
    expect((await req('DELETE', `/tool/${committed.toolId}`)).status).toBe(200);
    expect((await req('DELETE', `/tool/${drafted.toolId}`)).status).toBe(200);

    const kept = await create(apiCall());
    const archived = await createAgent(suite.server, { name: uniq('Old'), toolRefs: [kept.toolId] });
    expect((await req('DELETE', `/tool/${kept.toolId}`)).status).toBe(409);
    expect((await req('DELETE', `/agent/${archived}/archive`)).status).toBe(200);
    expect((await req('DELETE', `/tool/${kept.toolId}`)).status).toBe(200);
  });
});
