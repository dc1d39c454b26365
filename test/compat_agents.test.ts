// Hosted-platform compatibility of agent routes: timezone as {label, offset}, templates, duplicate, widget-config,
// DraftDetail.editHistory items and the v1 draft diff's default base.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrgKey, testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, commit, createAgent, mainBranchId, putDraft } from './support/agents.js';
import { AgentCaller, connectUrl } from './support/agent-client.js';
import { OpenAiMock, type MockRequest } from './support/openai-mock.js';

const HOUR = 3_600_000;
/** The n-th Sunday (1-based) of a month, at `hourUtc` UTC. */
const nthSunday = (year: number, month: number, n: number, hourUtc: number): number => {
  const first = new Date(Date.UTC(year, month, 1)).getUTCDay();
  return Date.UTC(year, month, 1 + ((7 - first) % 7) + (n - 1) * 7) + hourUtc * HOUR;
};
const lastSunday = (year: number, month: number, hourUtc: number): number => {
  const last = new Date(Date.UTC(year, month + 1, 0));
  return Date.UTC(year, month, last.getUTCDate() - last.getUTCDay()) + hourUtc * HOUR;
};
/** US Eastern by the statutory rule: EDT (-240) from the 2nd Sunday of March 07:00 UTC to the 1st Sunday of November 06:00 UTC. */
const newYorkOffset = (at = new Date()): number => {
  const y = at.getUTCFullYear();
  return at.getTime() >= nthSunday(y, 2, 2, 7) && at.getTime() < nthSunday(y, 10, 1, 6) ? -240 : -300;
};
/** Central Europe by the EU rule: CEST (120) from the last Sunday of March to the last Sunday of October, 01:00 UTC. */
const berlinOffset = (at = new Date()): number => {
  const y = at.getUTCFullYear();
  return at.getTime() >= lastSunday(y, 2, 1) && at.getTime() < lastSunday(y, 9, 1) ? 120 : 60;
};

const WIDGET_DEFAULTS = {
  position: 'bottom-right',
  size: 'medium',
  mode: 'voice',
  theme: 'light',
  primaryColor: '#2563EB',
  backgroundColor: '#FFFFFF',
  textColor: '#111827',
  title: 'Talk to us',
  startButtonText: 'Start a call',
  endButtonText: 'End call',
  chatPlaceholder: 'Type a message…',
  consentRequired: false,
  consentTitle: 'Before we start',
  consentText: 'This conversation is with an AI agent and may be recorded and transcribed.',
  consentAcceptText: 'I agree',
  consentDeclineText: 'No thanks',
  allowlist: [],
};

const TEMPLATE_KEYS = ['_id', 'id', 'name', 'description', 'avatarUrl', 'referenceUrl', 'industry', 'useCase', 'callType', 'workflowType', 'region', 'trending', 'defaultLanguage', 'singlePromptConfig'];

describe.each(testDialects())('hosted-platform agent compatibility on %s', (dialect) => {
  const mock = new OpenAiMock({ respond: () => ({ text: 'We are open until six today.' }) });
  const env: Record<string, string> = {};
  beforeAll(async () => {
    env.PARLEY_LLM_BASE_URL = await mock.start();
    env.PARLEY_LLM_MODEL = 'mock-model';
  });
  afterAll(() => mock.close());
  const suite = serverForSuite(dialect, env);
  const get = async (path: string) => {
    const res = await suite.server.request('GET', `${A}${path}`);
    expect(res.status, res.text).toBe(200);
    return res.body.data;
  };

  it('reads timezone as {label, offset} with the offset at the time of the read (DST included)', async () => {
    const ny = await createAgent(suite.server, { name: 'Tz NY', timezone: 'America/New_York' });
    const agent = await get(`/agent/${ny}`);
    const expected = { label: 'America/New_York', offset: newYorkOffset() };
    expect(agent.timezone).toEqual(expected);
    expect([-300, -240]).toContain(agent.timezone.offset);
    expect(agent._resolvedConfig.timezone).toEqual(expected);
    const listed = (await get('/agent?search=Tz%20NY')).agents;
    expect(listed.map((a: any) => a.timezone)).toEqual([expected]);

    // No timezone given: UTC.
    const plain = await createAgent(suite.server, { name: 'Tz none' });
    expect((await get(`/agent/${plain}`)).timezone).toEqual({ label: 'UTC', offset: 0 });

    // The object form: its label counts, the offset sent is ignored; the hosted DTO default label is understood.
    const kolkata = await createAgent(suite.server, { name: 'Tz IN', timezone: { label: 'Asia/Kolkata', offset: 0 } });
    expect((await get(`/agent/${kolkata}`)).timezone).toEqual({ label: 'Asia/Kolkata', offset: 330 });
    const dtoDefault = await createAgent(suite.server, { name: 'Tz DTO', timezone: { label: '(GMT+0:00) UTC', offset: 0 } });
    expect((await get(`/agent/${dtoDefault}`)).timezone).toEqual({ label: 'UTC', offset: 0 });
    // A name ICU knows as an alias, written in lower case: stored as a real IANA name, never as typed.
    const lower = await createAgent(suite.server, { name: 'Tz lower', timezone: 'asia/kolkata' });
    expect((await get(`/agent/${lower}`)).timezone).toEqual({ label: 'Asia/Calcutta', offset: 330 });

    // PATCH with the object, letter case fixed.
    const patched = await suite.server.request('PATCH', `${A}/agent/${plain}`, { body: { timezone: { label: 'europe/berlin', offset: 1 } } });
    expect(patched.body).toEqual({ status: true, data: plain });
    expect((await get(`/agent/${plain}`)).timezone).toEqual({ label: 'Europe/Berlin', offset: berlinOffset() });
  });

  it('stores the IANA name from draft writes and shows it as {label, offset} on drafts and revisions', async () => {
    const agent = await createAgent(suite.server, { name: 'Tz drafts' });
    const main = await mainBranchId(suite.server, agent);
    const r1 = await commit(suite.server, agent, main, { prompt: 'One.' });
    const draft = await putDraft(suite.server, agent, main, { timezone: { label: 'Asia/Tokyo', offset: 0 } });
    expect(draft.status, draft.text).toBe(200);
    expect((await get(`/agent/${agent}?draftId=${draft.body.data._id}`)).timezone).toEqual({ label: 'Asia/Tokyo', offset: 540 });
    // One stored form: the diff of the stored blocks shows the plain IANA name.
    const diff = await get(`/agent/${agent}/diff?a=${r1._id}&b=${main}:draft`);
    expect(diff.diffs).toEqual([{ section: 'call_handling', changes: [{ path: 'timezone', oldValue: 'UTC', newValue: 'Asia/Tokyo' }] }]);
    const published = await suite.server.request('POST', `${A}/agent/${agent}/branches/${main}/draft/publish`);
    expect(published.status, published.text).toBe(200);
    const rev = await get(`/agent/${agent}/branches/${main}/revisions/${published.body.data.revision._id}`);
    expect(rev.resolvedConfig.timezone).toEqual({ label: 'Asia/Tokyo', offset: 540 });
    expect((await get(`/agent/${agent}`)).timezone).toEqual({ label: 'Asia/Tokyo', offset: 540 });
  });

  it('refuses a zone that is not IANA with a 400 naming timezone, on every write', async () => {
    const agent = await createAgent(suite.server, { name: 'Tz bad' });
    const main = await mainBranchId(suite.server, agent);
    // `IST` and `BST` are ICU abbreviations (Asia/Kolkata, Asia/Dhaka), not IANA names.
    const cases = [['Mars/Olympus', 'timezone'], [{ label: 'IST', offset: 330 }, 'timezone.label'], ['BST', 'timezone'], [42, 'timezone'], ['+05:30', 'timezone'], [{ offset: 60 }, 'timezone']] as const;
    for (const [tz, field] of cases) {
      const writes = [
        await suite.server.request('POST', `${A}/agent`, { body: { name: 'x', timezone: tz } }),
        await suite.server.request('PATCH', `${A}/agent/${agent}`, { body: { timezone: tz } }),
        await putDraft(suite.server, agent, main, { timezone: tz }),
      ];
      for (const res of writes) {
        expect(res.status, JSON.stringify(tz)).toBe(400);
        expect(res.body.status).toBe(false);
        expect(res.body.errors).toHaveLength(1);
        expect(res.body.errors[0]).toMatch(new RegExp(`^${field.replace('.', '\\.')}: must be an IANA time zone`));
      }
    }
    expect((await get(`/agent/${agent}`)).timezone).toEqual({ label: 'UTC', offset: 0 });
  });

  it('lists templates with the wire fields, filtered by region', async () => {
    const all = await suite.server.request('GET', `${A}/agent/template`);
    expect(all.status, all.text).toBe(200);
    expect(all.body.status).toBe(true);
    const templates = all.body.data as any[];
    for (const t of templates) expect(Object.keys(t).sort()).toEqual([...TEMPLATE_KEYS].sort());
    const demo = templates.find((t) => t.id === 'parley-demo');
    expect(demo).toMatchObject({ _id: 'parley-demo', workflowType: 'workflow_graph', callType: 'inbound', region: 'us', defaultLanguage: 'en', singlePromptConfig: null });
    const desk = templates.find((t) => t.id === 'front-desk-receptionist');
    expect(desk).toMatchObject({ _id: 'front-desk-receptionist', workflowType: 'single_prompt', region: 'global', defaultLanguage: 'en', trending: false, avatarUrl: null, referenceUrl: null });
    expect(desk.singlePromptConfig.prompt).toContain('front desk receptionist of {{business_name}}');
    expect(desk.singlePromptConfig.tools).toEqual([{ type: 'end_call', name: 'end_call', description: expect.any(String) }]);
    for (const t of templates) for (const k of ['name', 'description', 'industry', 'useCase']) expect(typeof t[k]).toBe('string');

    expect((await get('/agent/template?region=in')).map((t: any) => t.id)).toEqual(['front-desk-receptionist']);
    expect((await get('/agent/template?region=US')).map((t: any) => t.id).sort()).toEqual(['front-desk-receptionist', 'parley-demo']);
    const bad = await suite.server.request('GET', `${A}/agent/template?region=%3Cx%3E`);
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0]).toMatch(/^region:/);
  });

  it('creates agents from templates with agentName/agentDescription or name; unknown ids are 400', async () => {
    const created = await suite.server.request('POST', `${A}/agent/from-template`, {
      body: { templateId: 'front-desk-receptionist', agentName: 'Lobby', agentDescription: 'Answers the lobby line' },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({ status: true, data: expect.stringMatching(/^[a-f0-9]{24}$/) });
    const agent = await get(`/agent/${created.body.data}`);
    const desk = (await get('/agent/template')).find((t: any) => t.id === 'front-desk-receptionist');
    expect(agent).toMatchObject({ name: 'Lobby', description: 'Answers the lobby line', workflowType: 'single_prompt', activeVersionId: null });
    expect(agent._resolvedConfig).toMatchObject({ prompt: desk.singlePromptConfig.prompt, tools: desk.singlePromptConfig.tools, defaultLanguage: 'en' });
    expect(agent.firstMessage).toBe('Hello, thank you for calling {{business_name}}. How can I help you today?');

    const named = await suite.server.request('POST', `${A}/agent/from-template`, { body: { templateId: 'parley-demo', name: 'Dentist demo' } });
    expect(named.status, named.text).toBe(201);
    expect(await get(`/agent/${named.body.data}`)).toMatchObject({ name: 'Dentist demo', workflowType: 'workflow_graph' });
    const plain = await suite.server.request('POST', `${A}/agent/from-template`, { body: { templateId: 'parley-demo' } });
    expect((await get(`/agent/${plain.body.data}`)).name).toBe('Parley demo: dental clinic receptionist');

    const unknown = await suite.server.request('POST', `${A}/agent/from-template`, { body: { templateId: 'nope' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ status: false, errors: ['templateId: must be one of parley-demo, front-desk-receptionist'] });
    const badName = await suite.server.request('POST', `${A}/agent/from-template`, { body: { templateId: 'parley-demo', agentName: 5 } });
    expect(badName.status).toBe(400);
    expect(badName.body.errors).toEqual(['agentName: must be a non-empty string']);
  });

  it('duplicates an agent into its own organization with the live configuration; another organization is 403', async () => {
    const source = await createAgent(suite.server, { name: 'Original', description: 'Source agent', prompt: 'Base prompt.', allowInboundCall: false, widgetConfig: { theme: 'dark' } });
    const main = await mainBranchId(suite.server, source);
    await commit(suite.server, source, main, { prompt: 'Published prompt.', timezone: 'America/New_York', workflowType: 'single_prompt' });
    await putDraft(suite.server, source, main, { prompt: 'Unpublished edit.' });
    const original = await get(`/agent/${source}`);

    const dup = await suite.server.request('POST', `${A}/agent/${source}/duplicate`, { body: {} });
    expect(dup.status, dup.text).toBe(201);
    expect(dup.body).toEqual({ status: true, data: expect.stringMatching(/^[a-f0-9]{24}$/) });
    expect(dup.body.data).not.toBe(source);
    const copy = await get(`/agent/${dup.body.data}`);
    expect(copy).toMatchObject({ name: 'Original (copy)', description: 'Source agent', allowInboundCall: false, workflowType: 'single_prompt', activeVersionId: null, archived: false });
    expect(copy.widgetConfig).toEqual({ ...WIDGET_DEFAULTS, theme: 'dark' });
    expect(copy._resolvedConfig).toEqual(original._resolvedConfig);
    expect(copy._resolvedConfig.prompt).toBe('Published prompt.');
    const branches = (await get(`/agent/${dup.body.data}/branches`)).branches;
    expect(branches).toHaveLength(1);
    expect(branches[0]).toMatchObject({ isLive: true, hasOpenDraft: false, revisionsCount: 0, branch: { name: 'Main', isDefault: true } });

    // Body without the field, or naming the caller's own organization: allowed.
    const noBody = await suite.server.request('POST', `${A}/agent/${source}/duplicate`);
    expect(noBody.status, noBody.text).toBe(201);
    const own = await suite.server.request('POST', `${A}/agent/${source}/duplicate`, { body: { targetOrganizationId: original.organization } });
    expect(own.status, own.text).toBe(201);

    const other = await suite.server.request('POST', `${A}/agent/${source}/duplicate`, { body: { targetOrganizationId: 'another-org' } });
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({ status: false, errors: [expect.stringMatching(/^targetOrganizationId:/)] });
    const badType = await suite.server.request('POST', `${A}/agent/${source}/duplicate`, { body: { targetOrganizationId: 7 } });
    expect(badType.status).toBe(400);
    expect(badType.body.errors).toEqual(['targetOrganizationId: must be an organization id']);
    expect((await suite.server.request('POST', `${A}/agent/0123456789abcdef01234567/duplicate`, { body: {} })).status).toBe(404);
    const foreignKey = await createOrgKey(suite.store, 'dup-other', 'dup-other-org');
    expect((await suite.server.request('POST', `${A}/agent/${source}/duplicate`, { body: {}, key: foreignKey })).status).toBe(403);
  });

  it('template-made agents and their copies answer a call at once', async () => {
    const created = await suite.server.request('POST', `${A}/agent/from-template`, { body: { templateId: 'front-desk-receptionist' } });
    expect(created.status, created.text).toBe(201);
    const copied = await suite.server.request('POST', `${A}/agent/${created.body.data}/duplicate`, { body: {} });
    expect(copied.status, copied.text).toBe(201);
    const systems: string[] = [];
    for (const agentId of [created.body.data as string, copied.body.data as string]) {
      const c = new AgentCaller(connectUrl(suite.server, { token: suite.server.key, agent_id: agentId, mode: 'chat' }), 24000);
      await c.opened;
      await c.waitFor((f) => f.type === 'session.created');
      expect((await c.agentTurn(0)).text).toBe('Hello, thank you for calling Northside Family Practice. How can I help you today?');
      const mark = c.frames.length;
      const before = mock.requests.length;
      c.send({ type: 'input_text.send', text: 'When do you close today?' });
      expect((await c.agentTurn(mark)).text).toBe('We are open until six today.');
      // The turn's model request (post-call analytics of the previous call may also reach the model).
      const turn = mock.requests.slice(before).find((r: MockRequest) => (r.body.messages as { content: string }[]).at(-1)?.content === 'When do you close today?');
      const messages = turn?.body.messages as { role: string; content: string }[];
      expect(messages[0]?.role).toBe('system');
      expect(messages[0]?.content).toContain('You are the front desk receptionist of Northside Family Practice');
      systems.push(messages[0]?.content as string);
      c.close();
      await c.closed;
    }
    expect(systems[1]).toBe(systems[0]);
  }, 60_000);

  it('reads and patches the widget config: defaults, merge, reset, validation; metadata, not versioned; frozen by a freeze', async () => {
    const agent = await createAgent(suite.server, { name: 'Widget' });
    const url = `${A}/agent/${agent}/widget-config`;
    expect(await get(`/agent/${agent}/widget-config`)).toEqual(WIDGET_DEFAULTS);

    // A versioned agent (a commit on its live branch) still takes widget changes, without a draft or a revision.
    const main = await mainBranchId(suite.server, agent);
    await commit(suite.server, agent, main, { prompt: 'Versioned.' });
    const patch = { position: 'bottom-left', primaryColor: '#FF0000', allowlist: ['https://example.com', '*.example.org'], consentRequired: true };
    const res = await suite.server.request('PATCH', url, { body: { widgetConfig: patch } });
    expect(res.status, res.text).toBe(200);
    const expected = { ...WIDGET_DEFAULTS, ...patch };
    expect(res.body).toEqual({ status: true, data: expected });
    expect(await get(`/agent/${agent}/widget-config`)).toEqual(expected);
    expect((await get(`/agent/${agent}`)).widgetConfig).toEqual(expected);
    expect((await suite.server.request('GET', `${A}/agent/${agent}/branches/${main}/draft`)).status).toBe(404);
    expect((await get(`/agent/${agent}/branches/${main}/revisions`)).total).toBe(1);

    // Merge: later patches keep earlier keys; null resets a key to its default.
    const merged = await suite.server.request('PATCH', url, { body: { widgetConfig: { theme: 'dark', position: null } } });
    expect(merged.body.data).toEqual({ ...expected, theme: 'dark', position: 'bottom-right' });
    // PATCH /agent takes widgetConfig as metadata too, on a versioned agent.
    const viaAgent = await suite.server.request('PATCH', `${A}/agent/${agent}`, { body: { widgetConfig: { size: 'large' } } });
    expect(viaAgent.status, viaAgent.text).toBe(200);
    expect((await get(`/agent/${agent}/widget-config`)).size).toBe('large');

    const bad = await suite.server.request('PATCH', url, { body: { widgetConfig: { position: 'middle', primaryColor: 'red', allowlist: 'example.com', consentRequired: 'yes' } } });
    expect(bad.status).toBe(400);
    const errors = (bad.body.errors as string[]).map((e) => e.split(':')[0]).sort();
    expect(errors).toEqual(['widgetConfig.allowlist', 'widgetConfig.consentRequired', 'widgetConfig.position', 'widgetConfig.primaryColor']);
    const badSite = await suite.server.request('PATCH', url, { body: { widgetConfig: { allowlist: ['ok.example.com', 'not a host'] } } });
    expect(badSite.body.errors).toEqual([expect.stringMatching(/^widgetConfig\.allowlist\.1: /)]);
    for (const body of [{}, { widgetConfig: [1] }, { widgetConfig: 'dark' }]) {
      const r = await suite.server.request('PATCH', url, { body });
      expect(r.status).toBe(400);
      expect(r.body.errors[0]).toMatch(/^widgetConfig: /);
    }
    expect((await suite.server.request('GET', `${A}/agent/0123456789abcdef01234567/widget-config`)).status).toBe(404);

    await suite.server.request('POST', `${A}/agent/${agent}/config-freeze`, { body: { reason: 'launch' } });
    const frozen = await suite.server.request('PATCH', url, { body: { widgetConfig: { theme: 'light' } } });
    expect(frozen.status).toBe(423);
    expect(frozen.body).toMatchObject({ status: false, error_type: 'config_freeze_active' });
    expect((await get(`/agent/${agent}/widget-config`)).theme).toBe('dark');
  });

  it("gives editHistory items as the SDK's {revision: integer, changedSections, editorName, editorId, timestamp}", async () => {
    const agent = await createAgent(suite.server, { name: 'History' });
    const main = await mainBranchId(suite.server, agent);
    const first = (await putDraft(suite.server, agent, main, { prompt: 'First.' })).body.data;
    const second = (await putDraft(suite.server, agent, main, { prompt: 'Second.', allowInterruptions: false, workflowType: 'workflow_graph' })).body.data;
    const detail = await get(`/agent/${agent}/branches/${main}/draft`);
    expect(Object.keys(detail).sort()).toEqual(['editCount', 'editHistory', 'latest']);
    expect(detail.editCount).toBe(2);
    expect(detail.latest).toEqual(second);
    const [e2, e1] = detail.editHistory;
    for (const e of detail.editHistory) {
      expect(Object.keys(e).sort()).toEqual(['changedSections', 'editorId', 'editorName', 'revision', 'timestamp']);
      expect(Number.isInteger(e.revision)).toBe(true);
      expect(e.editorName).toBe('bootstrap');
      expect(e.editorId).toBeNull();
      expect(Number.isNaN(Date.parse(e.timestamp))).toBe(false);
    }
    expect([e2.revision, e1.revision]).toEqual([2, 1]);
    expect([...e2.changedSections].sort()).toEqual(['call_handling', 'workflow_prompt']);
    expect(e1.changedSections).toEqual(['workflow_prompt']);
    expect(Date.parse(e2.timestamp)).toBeGreaterThanOrEqual(Date.parse(e1.timestamp));

    // The v1 by-id read carries the same shape; ?limit caps the history.
    const v1 = await suite.server.request('GET', `${A}/agent/${agent}/drafts/${first._id}?limit=1`);
    expect(v1.status, v1.text).toBe(200);
    expect(v1.body.data.editCount).toBe(2);
    expect(v1.body.data.editHistory).toEqual([e2]);
    expect((await suite.server.request('GET', `${A}/agent/${agent}/drafts/${first._id}?limit=0`)).status).toBe(400);
  });

  it('v1 draft diff without compareTo compares the draft with the revision it started from', async () => {
    const agent = await createAgent(suite.server, { name: 'Diff' });
    const main = await mainBranchId(suite.server, agent);
    const base = `${A}/agent/${agent}`;

    // Before any commit, the draft starts from the agent's base configuration.
    const early = (await putDraft(suite.server, agent, main, { prompt: 'Zero.' })).body.data;
    const firstDiff = await suite.server.request('GET', `${base}/drafts/${early._id}/diff`);
    expect(firstDiff.status, firstDiff.text).toBe(200);
    expect(firstDiff.body.data).toEqual({ hasChanges: true, sections: { workflow_prompt: { before: { prompt: '', firstMessage: '' }, after: { prompt: 'Zero.', firstMessage: '' } } } });
    await suite.server.request('DELETE', `${base}/branches/${main}/draft`);

    const r1 = await commit(suite.server, agent, main, { prompt: 'One.' });
    await commit(suite.server, agent, main, { prompt: 'Two.' });
    const draft = (await putDraft(suite.server, agent, main, { prompt: 'Three.' })).body.data;
    const diff = await suite.server.request('GET', `${base}/drafts/${draft._id}/diff`);
    expect(diff.status, diff.text).toBe(200);
    expect(diff.headers.get('deprecation')).toBe('true');
    expect(diff.body.data).toEqual({ hasChanges: true, sections: { workflow_prompt: { before: { prompt: 'Two.', firstMessage: '' }, after: { prompt: 'Three.', firstMessage: '' } } } });
    const vsR1 = await suite.server.request('GET', `${base}/drafts/${draft._id}/diff?compareTo=${r1._id}`);
    expect(vsR1.body.data.sections.workflow_prompt.before.prompt).toBe('One.');

    // A draft edited back to its base has no changes; a revision id is not a draft.
    await putDraft(suite.server, agent, main, { prompt: 'Two.' });
    expect((await suite.server.request('GET', `${base}/drafts/${draft._id}/diff`)).body.data).toEqual({ hasChanges: false, sections: {} });
    expect((await suite.server.request('GET', `${base}/drafts/${r1._id}/diff`)).status).toBe(404);
  });
});
