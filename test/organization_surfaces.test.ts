// `GET /user`, `GET /organization` and `GET /disposition-metric-templates` (issue 35 item 6) against the real server:
// the caller's key as the user, its organization (the id `duplicate_agent` takes as targetOrganizationId) with its keys
// as members, and templates that post-call analytics compute here without a language model.
import { describe, expect, it } from 'vitest';
import { createOrgKey, testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, createAgent } from './support/agents.js';
import { deterministicAnalytics } from '../calls/analytics.js';

describe.each(testDialects())('organization surfaces on %s', (dialect) => {
  const suite = serverForSuite(dialect, { PARLEY_WARM_MODELS: 'false' });

  it('GET /user answers the calling key as the user, with its organization id', async () => {
    const res = await suite.server.request('GET', `${A}/user`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe(true);
    const user = res.body.data;
    expect(user).toMatchObject({ firstName: 'bootstrap', lastName: '', userEmail: null, authProvider: 'api_key', isEmailVerified: false, keyName: 'bootstrap' });
    expect(user._id).toMatch(/\S/);
    expect(user.organizationId).toMatch(/\S/);
    expect((await suite.server.request('GET', `${A}/user`, { key: 'sk_nope' })).status).toBe(401);
  });

  it("GET /organization answers the caller's organization, whose id duplicate_agent takes; another organization's key sees its own", async () => {
    const user = (await suite.server.request('GET', `${A}/user`)).body.data;
    const res = await suite.server.request('GET', `${A}/organization`);
    expect(res.status, res.text).toBe(200);
    const org = res.body.data;
    expect(Object.keys(org).sort()).toEqual(['_id', 'createdAt', 'members', 'name', 'subscription']);
    expect(org._id).toBe(user.organizationId);
    expect(org.subscription).toEqual({ planId: 'self-hosted' });
    expect(org.members).toContainEqual(expect.objectContaining({ _id: user._id, name: 'bootstrap', type: 'api_key', isCaller: true }));

    // The organization id is what duplicate takes as targetOrganizationId.
    const agent = await createAgent(suite.server, { name: 'Source' });
    const dup = await suite.server.request('POST', `${A}/agent/${agent}/duplicate`, { body: { targetOrganizationId: org._id } });
    expect(dup.status, dup.text).toBeLessThan(300);

    const otherKey = await createOrgKey(suite.store, 'elsewhere', 'other-org');
    const other = (await suite.server.request('GET', `${A}/organization`, { key: otherKey })).body.data;
    expect(other._id).not.toBe(org._id);
    expect(other.name).toBe('other-org');
    expect(other.members.map((m: any) => m.name)).toEqual(['elsewhere']);
    expect((await suite.server.request('GET', `${A}/user`, { key: otherKey })).body.data.organizationId).toBe(other._id);
    const refused = await suite.server.request('POST', `${A}/agent/${agent}/duplicate`, { body: { targetOrganizationId: other._id } });
    expect(refused.status).toBe(403);
  });

  it('GET /disposition-metric-templates lists templates every one of which our analytics compute from a transcript', async () => {
    const res = await suite.server.request('GET', `${A}/disposition-metric-templates`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.success).toBe(true);
    const templates = res.body.data as any[];
    expect(templates.length).toBeGreaterThanOrEqual(5);
    expect(templates.find((t) => t.identifier === 'call_resolved')).toMatchObject({ dispositionMetricType: 'BOOLEAN' });
    for (const t of templates) {
      expect(t.identifier).toMatch(/^[a-z0-9_]+$/);
      expect(typeof t.dispositionMetricPrompt).toBe('string');
      expect(['STRING', 'BOOLEAN', 'INTEGER', 'ENUM', 'DATETIME']).toContain(t.dispositionMetricType);
    }

    // Copied into an agent as they are, the configuration is accepted...
    const agent = await createAgent(suite.server, { name: 'Metrics', postCallAnalyticsConfig: { dispositionMetrics: templates } });
    const stored = (await suite.server.request('GET', `${A}/agent/${agent}`)).body.data;
    expect(stored.postCallAnalyticsConfig.dispositionMetrics.map((m: any) => m.identifier)).toEqual(templates.map((t) => t.identifier));

    // ...and every metric gets a value from a call's transcript without a language model.
    const transcript = [
      { role: 'agent' as const, content: 'Hello, how can I help?' },
      { role: 'user' as const, content: "I'd like 3 seats. That helps, I'm interested. Please call me back tomorrow morning at jo@example.com, and don't call after that." },
      { role: 'agent' as const, content: 'Booked. See you then.' },
      { role: 'user' as const, content: 'That works for me.' },
    ];
    const analytics = deterministicAnalytics({ dispositionMetrics: stored.postCallAnalyticsConfig.dispositionMetrics }, transcript, 'client_requested');
    const values = Object.fromEntries(analytics.dispositionMetrics.map((m) => [m.identifier, m.value]));
    expect(values).toEqual({
      call_resolved: true,
      callback_requested: true,
      do_not_call_requested: true,
      appointment_booked: true,
      interested: true,
      callback_time: 'tomorrow morning',
      email_address: 'jo@example.com',
      quantity_requested: 3,
    });
    const silent = deterministicAnalytics({ dispositionMetrics: templates }, [{ role: 'user', content: 'Hello.' }], 'client_requested');
    expect(silent.dispositionMetrics.filter((m) => m.dispositionMetricType === 'BOOLEAN').every((m) => m.value === false)).toBe(true);
  });
});
