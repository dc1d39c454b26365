// The console's tools, secrets, webhooks and telephony pages and the agent editor's further settings, in Debian's
// Chromium against the real server (one browser, one server, pages in sequence): a secret is shown by name and its
// value is nowhere in the page; a tool is created from checked JSON; a webhook created on the page receives a real
// call's events at a real receiver and shows them in its delivery log; an inbound trunk (its password never shown
// back) and an answer; language and turn-taking saved to a draft; "play sample" plays synthesis fetched with a `wat_`
// token minted from the session (the access-token route refuses a missing CSRF token); phone-sized layouts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { AgentCaller } from './support/agent-client.js';
import { CHROMIUM, launchBrowser, screenshotDeviation, type TestBrowser } from './support/browser.js';
import { testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import { PICO_INSTALLED } from './support/pico.js';

const A = '/atoms/v1';
/** Chromium's own log lines about HTTP answers the pages expect (the refusals this file provokes): not our script's errors. */
const ownErrors = (errors: string[]) => errors.filter((e) => !/Failed to load resource: the server responded with a status of (400|401|403|404|409|429)/.test(e));
const graph = (text: string) => ({ nodes: [{ id: 'a', type: 'say', text }], edges: [] });

describe.skipIf(!existsSync(CHROMIUM))('console pages in Chromium', () => {
  // A small mint limit, to see the console's tokens counted against the key's limit at /waves/v1/auth/token.
  const suite = serverForSuite(testDialects()[0] ?? 'sqlite', { PARLEY_TOKEN_MINTS_PER_MINUTE: '10' });
  const rx = new WebhookReceiver();
  let b: TestBrowser;
  const serverErrors: string[] = [];
  let desk = '';
  let toolId = '';
  const api = (method: string, path: string, body?: unknown) => suite.server.request(method, `${A}${path}`, body === undefined ? {} : { body });
  const expectRendered = async () => expect(await screenshotDeviation(b.page)).toBeGreaterThan(1);
  const visit = async (hash: string, heading: string) => {
    await b.page.goto(`${suite.server.base}/${hash}`);
    await b.page.getByRole('heading', { name: heading, exact: true }).waitFor();
  };

  beforeAll(async () => {
    await rx.start();
    b = await launchBrowser();
    b.context.on('response', (r) => {
      if (r.status() >= 500) serverErrors.push(`${r.status()} ${r.url()}`);
    });
    // Confirmation dialogs (deletes) are accepted.
    b.page.on('dialog', (d) => void d.accept());
    const { page } = b;
    await page.goto(suite.server.base + '/');
    await page.getByLabel('API key').fill(suite.server.key);
    await page.getByLabel('API key').press('Enter');
    await page.getByRole('heading', { name: 'Agents' }).waitFor();
    const created = await api('POST', '/agent', { name: 'Front desk', workflowType: 'workflow_graph', workflowGraph: graph('Hello from the front desk.') });
    expect(created.status, created.text).toBe(201);
    desk = created.body.data as string;
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await rx.close();
  });

  it('keeps secrets by name only: the value is never shown, in the page or its HTML', async () => {
    const { page } = b;
    await visit('#/tools', 'Tools and secrets');
    await page.getByRole('link', { name: 'Tools', exact: true }).waitFor();
    const value = `sv_${randomBytes(12).toString('hex')}`;
    await page.getByLabel('Name', { exact: true }).fill('ORDERS_API_TOKEN');
    const field = page.getByLabel('Value', { exact: true });
    expect(await field.getAttribute('type')).toBe('password');
    await field.fill(value);
    await page.getByRole('button', { name: 'Add secret' }).click();
    await page.locator('table.secrets code', { hasText: 'ORDERS_API_TOKEN' }).waitFor();
    expect((await api('GET', '/secret')).body.data.secrets.map((s: { name: string }) => s.name)).toEqual(['ORDERS_API_TOKEN']);
    // Replacing the value: the new one is not shown either.
    const second = `sv_${randomBytes(12).toString('hex')}`;
    await page.getByRole('button', { name: 'Replace value' }).click();
    await page.getByLabel('Value', { exact: true }).fill(second);
    await page.locator('form[aria-label="Replace secret ORDERS_API_TOKEN"] button[type=submit]').click();
    await page.locator('form[aria-label="New secret"]').waitFor();
    const html = await page.content();
    const inputs = await page.evaluate(() => [...document.querySelectorAll('input, textarea')].map((e) => (e as HTMLInputElement).value).join('\n'));
    for (const v of [value, second]) {
      expect(html).not.toContain(v);
      expect(inputs).not.toContain(v);
      expect(suite.server.logs.join('\n')).not.toContain(v);
    }
    await expectRendered();
  }, 60_000);

  it('creates a tool from JSON, checked before it is sent', async () => {
    const { page } = b;
    await page.getByRole('button', { name: 'New tool' }).click();
    const definition = page.getByLabel('Definition (JSON)');
    // The api_call template is there to start from; broken JSON is refused in the page, and nothing is sent.
    expect(JSON.parse(await definition.inputValue())).toMatchObject({ type: 'api_call' });
    await definition.fill('{"type": "api_call", "name": ');
    await page.getByRole('button', { name: 'Create tool' }).click();
    expect(await page.getByRole('alert').textContent()).toMatch(/Definition: not valid JSON/);
    await definition.fill(JSON.stringify({ type: 'client_tool', name: 'has spaces', description: '' }));
    await page.getByRole('button', { name: 'Create tool' }).click();
    expect(await page.getByRole('alert').textContent()).toMatch(/name: required, 1-64 characters without spaces; description: required/);
    expect((await api('GET', '/tool')).body.data.tools).toEqual([]);
    // The server's own checks are shown in its words.
    await definition.fill(JSON.stringify({ type: 'client_tool', name: 'show_calendar', description: 'Show the free times.', timeoutMs: 5 }));
    await page.getByRole('button', { name: 'Create tool' }).click();
    await page.getByRole('alert').filter({ hasText: 'definition.timeoutMs' }).waitFor();
    await definition.fill(JSON.stringify({ type: 'api_call', name: 'lookup_order', description: 'Look up an order.', url: 'https://api.example.com/orders/{{order_id}}', method: 'GET', auth: { type: 'bearer', token: 'ORDERS_API_TOKEN' } }));
    await page.getByRole('button', { name: 'Create tool' }).click();
    await page.locator('table.tools td', { hasText: 'lookup_order' }).waitFor();
    const tools = (await api('GET', '/tool')).body.data.tools;
    expect(tools).toHaveLength(1);
    expect(tools[0].definition).toMatchObject({ name: 'lookup_order', method: 'GET', auth: { type: 'bearer', token: 'ORDERS_API_TOKEN' } });
    toolId = tools[0].toolId;
    // Editing sends a merge patch: a removed field is removed.
    await page.getByRole('button', { name: 'Edit' }).click();
    const edited = JSON.parse(await definition.inputValue());
    delete edited.auth;
    edited.description = 'Look up an order by number.';
    await definition.fill(JSON.stringify(edited));
    await page.getByRole('button', { name: 'Save tool' }).click();
    await page.locator('table.tools td', { hasText: 'Look up an order by number.' }).waitFor();
    const after = (await api('GET', `/tool/${toolId}`)).body.data.definition;
    expect(after.description).toBe('Look up an order by number.');
    expect(after.auth).toBeUndefined();
    await expectRendered();
  }, 60_000);

  it('sets language, turn-taking and tools on a draft, and plays a voice sample with a session access token', async () => {
    const { page } = b;
    await visit(`#/agents/${desk}`, 'Front desk');
    await page.getByLabel('Default language').selectOption('es');
    await page.getByRole('group', { name: 'Supported languages' }).getByLabel('English').check();
    await page.getByLabel('Wait for the caller to speak first').check();
    await page.getByLabel('End of turn, shortest wait (ms)').fill('300');
    await page.getByLabel('End of turn, longest wait (ms)').fill('2000');
    await page.getByLabel('Speech end after (s)').fill('0.6');
    await page.getByLabel('Interruption back-off (s)').fill('1.5');
    await page.getByLabel('Library tool').selectOption(toolId);
    await page.getByRole('button', { name: 'Attach' }).click();
    await page.getByRole('list', { name: 'Attached tools' }).getByText('lookup_order').waitFor();
    // A wrong range is refused in the page before anything is sent.
    await page.getByLabel('Speech confidence (0-1)').fill('3');
    await page.getByRole('button', { name: 'Save draft' }).click();
    expect(await page.getByRole('alert').textContent()).toContain('Speech confidence: must be a number from 0 to 1');
    await page.getByLabel('Speech confidence (0-1)').fill('0.6');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByText('1 edit(s) in this draft').waitFor();

    const branches = (await api('GET', `/agent/${desk}/branches`)).body.data.branches;
    const main = branches[0].branch._id as string;
    const draftId = (await api('GET', `/agent/${desk}/branches/${main}/draft`)).body.data.latest._id as string;
    const draft = (await api('GET', `/agent/${desk}?draftId=${draftId}`)).body.data;
    expect(draft.language).toMatchObject({ default: 'es' });
    expect([...draft.language.supported].sort()).toEqual(['en', 'es']);
    expect(draft.waitForUserToSpeakFirst).toBe(true);
    expect(draft.interruptionBackoffTimer).toBe(1.5);
    expect(draft.endpointingConfig).toEqual({ minDelayMs: 300, maxDelayMs: 2000 });
    expect(draft.voiceDetectionConfig).toMatchObject({ confidence: 0.6, releaseTimeInSecs: 0.6 });
    expect(draft.toolRefs).toEqual([toolId]);
    // Reloaded, the page shows what was saved.
    await page.reload();
    await page.getByRole('heading', { name: 'Front desk' }).waitFor();
    expect(await page.getByLabel('Default language').inputValue()).toBe('es');
    expect(await page.getByLabel('End of turn, longest wait (ms)').inputValue()).toBe('2000');

    // Play sample: a token from the session, then synthesis on the inference API with it (never the cookie).
    const seen: { url: string; status: number; auth?: string }[] = [];
    const onResponse = async (r: import('playwright-core').Response) => {
      if (!/\/auth\/session\/access-token|\/waves\/v1\//.test(r.url())) return;
      const entry: (typeof seen)[number] = { url: new URL(r.url()).pathname, status: r.status() };
      seen.push(entry);
      entry.auth = (await r.request().allHeaders()).authorization;
    };
    page.on('response', onResponse);
    await page.locator('input[name=voiceId]').fill('kal16');
    await page.getByRole('button', { name: 'Play sample' }).click();
    const sample = page.getByRole('status', { name: 'Voice sample' });
    // Played, or an error note beside the button (which fails here with its text).
    const refused = page.locator('.sample [role=alert]');
    await sample.filter({ hasText: /^Sample played/ }).or(refused).waitFor({ timeout: 45_000 });
    expect(await refused.count(), (await refused.allTextContents()).join('; ')).toBe(0);
    // The voice a call of this agent would speak with: kal16 speaks English, so a Spanish agent's calls (and its
    // sample) use the Spanish voice where Pico is installed; without it no voice speaks Spanish, and the note says
    // that its voice calls are refused.
    const note = (await sample.textContent()) ?? '';
    const [, seconds, voice] = /^Sample played \(([\d.]+) s, voice (\S+)/.exec(note) ?? [];
    expect(Number(seconds), note).toBeGreaterThan(1);
    if (PICO_INSTALLED) expect(note).toMatch(/voice pico-es-ES \(“kal16” does not speak “es”\)\)$/);
    else expect([voice, note]).toEqual(['kal16', expect.stringContaining('voice calls of this agent are refused here: no voice here speaks')]);
    page.off('response', onResponse);
    expect(seen.map((s) => [s.url, s.status])).toEqual([
      [`${A}/auth/session/access-token`, 201],
      ['/waves/v1/voice/get-all-models', 200],
      ['/waves/v1/tts', 200],
    ]);
    expect(seen[1]?.auth).toMatch(/^Bearer wat_/);
    expect(seen[2]?.auth).toBe(seen[1]?.auth);
    await expectRendered();

    // The route itself: CSRF token required, cookie only.
    const tries = await page.evaluate(async (a) => {
      const csrf = ((await (await fetch(`${a}/auth/session`)).json()) as { data: { csrfToken: string } }).data.csrfToken;
      const post = async (headers: Record<string, string>) => {
        const r = await fetch(`${a}/auth/session/access-token`, { method: 'POST', headers });
        return { status: r.status, body: await r.json(), cache: r.headers.get('cache-control') };
      };
      return { none: await post({}), wrong: await post({ 'X-CSRF-Token': 'x'.repeat(43) }), good: await post({ 'X-CSRF-Token': csrf }) };
    }, A);
    expect(tries.none).toMatchObject({ status: 403, body: { status: false, errors: ['CSRF token missing or invalid'] } });
    expect(tries.wrong.status).toBe(403);
    expect(tries.good.status).toBe(201);
    expect(tries.good.cache).toBe('no-store');
    expect(tries.good.body).toEqual({ access_token: expect.stringMatching(/^wat_/), token_type: 'Bearer', expires_in: 60, expires_at: expect.any(String) });
    const ttl = Date.parse(tries.good.body.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(61_000);
    // The token works on the inference API, and only there.
    const voices = await fetch(`${suite.server.base}/waves/v1/voice/get-all-models`, { headers: { authorization: `Bearer ${tries.good.body.access_token}` } });
    expect(voices.status).toBe(200);
    expect(suite.server.logs.join('\n')).not.toContain(tries.good.body.access_token.slice(4));
    expect((await suite.server.request('GET', `${A}/agent`, { key: tries.good.body.access_token })).status).toBe(403);
    // Without a session: 401; with an API key instead of the cookie: 403 (API clients mint at /waves/v1/auth/token).
    expect((await suite.server.request('POST', `${A}/auth/session/access-token`, { key: null })).status).toBe(401);
    const withKey = await suite.server.request('POST', `${A}/auth/session/access-token`);
    expect(withKey.status).toBe(403);
    expect(withKey.body.errors[0]).toMatch(/session cookie only/);
    // One mint limit per key: the two session tokens of this minute left fewer than 10 to the key, and once the key
    // has used them up, the session gets 429 too.
    let minted = 0;
    for (; minted < 20; minted++) {
      const r = await suite.server.request('POST', '/waves/v1/auth/token', { body: {} });
      if (r.status === 429) break;
      expect(r.status, r.text).toBe(201);
    }
    expect(minted).toBeLessThanOrEqual(8);
    const limited = await page.evaluate(async (a) => {
      const csrf = ((await (await fetch(`${a}/auth/session`)).json()) as { data: { csrfToken: string } }).data.csrfToken;
      const r = await fetch(`${a}/auth/session/access-token`, { method: 'POST', headers: { 'X-CSRF-Token': csrf } });
      return { status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json() };
    }, A);
    expect(limited).toMatchObject({ status: 429, body: { status: false, errors: [expect.stringMatching(/Too many access tokens/)] } });
    expect(Number(limited.retryAfter)).toBeGreaterThan(0);
  }, 90_000);

  it('creates a webhook with events on the page and shows a real call\'s deliveries in its log', async () => {
    const { page } = b;
    const hooked = (await api('POST', '/agent', { name: 'Hooked line', workflowType: 'workflow_graph', workflowGraph: graph('Hello from the hooked line.') })).body.data as string;
    await visit('#/webhooks', 'Webhooks');
    await page.getByRole('button', { name: 'New webhook' }).click();
    const form = page.getByRole('form', { name: 'New webhook' });
    await form.getByLabel('Endpoint').fill(rx.url);
    await form.getByLabel('Description').fill('Receiver of the test');
    await form.getByLabel('Headers (JSON, optional)').fill('{"X-Tenant": 7}');
    await form.getByLabel('Agent', { exact: true }).selectOption({ label: 'Hooked line' });
    await form.getByRole('button', { name: 'Add agent' }).click();
    await form.getByRole('group', { name: 'Events of Hooked line' }).getByLabel('analytics-completed').uncheck();
    await form.getByRole('button', { name: 'Create webhook' }).click();
    expect(await form.getByRole('alert').textContent()).toContain('Headers: must be an object of header names to string values');
    await form.getByLabel('Headers (JSON, optional)').fill('{"X-Tenant": "acme"}');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    const card = page.getByRole('article', { name: `Webhook ${rx.url}` });
    await card.waitFor();
    expect(await card.textContent()).toMatch(/Hooked line: (pre-conversation, post-conversation|post-conversation, pre-conversation)/);
    const hooks = (await api('GET', '/webhook')).body.data;
    expect(hooks).toHaveLength(1);
    expect(hooks[0]).toMatchObject({ url: rx.url, description: 'Receiver of the test', headers: { 'X-Tenant': 'acme' } });
    expect(hooks[0].subscriptions.map((s: { eventType: string }) => s.eventType).sort()).toEqual(['post-conversation', 'pre-conversation']);
    // The signing secret only on request.
    expect(await card.textContent()).not.toContain('whsec_');
    await card.getByRole('button', { name: 'Show signing secret' }).click();
    expect(await card.textContent()).toContain(hooks[0].decryptedSecretKey);

    // A real call of the subscribed agent (a chat test call over the agent WebSocket).
    const main = (await api('GET', `/agent/${hooked}/branches`)).body.data.branches[0].branch._id as string;
    const tc = await api('POST', `/agent/${hooked}/branches/${main}/test-call`, { mode: 'chat' });
    expect(tc.status, tc.text).toBe(200);
    const caller = new AgentCaller(`${tc.body.data.host}?token=${encodeURIComponent(tc.body.data.token)}`, 24000);
    await caller.opened;
    const callId = (await caller.waitFor((f) => f.type === 'session.created')).call_id as string;
    caller.send({ type: 'session.close' });
    await caller.closed;
    expect((await rx.waitFor(callId, 'pre-conversation')).metadata.callId).toBe(callId);
    await rx.waitFor(callId, 'post-conversation');
    expect(rx.got[0]?.headers['x-tenant']).toBe('acme');
    // Once both are recorded as delivered, the log shows them.
    for (let i = 0; ; i++) {
      const ds = (await api('GET', `/webhook/${hooks[0]._id}/deliveries`)).body.data.deliveries as { status: string }[];
      if (ds.length === 2 && ds.every((d) => d.status === 'DELIVERED')) break;
      if (i > 100) throw new Error(`deliveries not settled: ${JSON.stringify(ds)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await card.getByRole('button', { name: 'Deliveries' }).click();
    const log = card.getByRole('table', { name: 'Deliveries' });
    await log.waitFor();
    const rows = log.locator('tbody tr');
    expect(await rows.count()).toBe(2);
    for (const event of ['pre-conversation', 'post-conversation']) {
      const row = rows.filter({ hasText: event });
      expect(await row.textContent()).toContain('delivered');
      expect(await row.locator('td').nth(2).textContent()).toBe('200');
      expect(await row.getByRole('link').textContent()).toBe(callId);
    }
    await card.getByLabel('Delivery status').selectOption('FAILED');
    await card.getByText('No deliveries failed.').waitFor();

    // Edit: description; disable.
    await card.getByRole('button', { name: 'Edit' }).click();
    await card.getByRole('form', { name: 'Edit webhook' }).getByLabel('Description').fill('Edited on the page');
    await card.getByRole('button', { name: 'Save webhook' }).click();
    await card.getByText('Edited on the page').waitFor();
    await card.getByRole('button', { name: 'Disable' }).click();
    await card.getByRole('button', { name: 'Enable' }).waitFor();
    expect((await api('GET', `/webhook?webhookId=${hooks[0]._id}`)).body.data).toMatchObject({ description: 'Edited on the page', status: 'disabled' });
    await expectRendered();
    // Deleting is refused while an agent is subscribed (the API's 400, shown on the card); unsubscribed, it goes.
    await card.getByRole('button', { name: 'Delete' }).click();
    await card.getByRole('alert').filter({ hasText: 'assigned to agents' }).waitFor();
    await card.getByRole('button', { name: 'Subscriptions' }).click();
    await card.getByRole('group', { name: 'Events of Hooked line' }).getByRole('button', { name: 'Remove' }).click();
    await card.getByRole('button', { name: 'Save subscriptions' }).click();
    await card.getByText('No agent subscribed.').waitFor();
    await card.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No webhooks yet.').waitFor();
    expect((await api('GET', '/webhook')).body.data).toEqual([]);
  }, 90_000);

  it('creates an inbound trunk (its password never shown back) and makes an agent answer it', async () => {
    const { page } = b;
    await visit('#/telephony', 'Telephony');
    await page.getByRole('button', { name: 'New inbound trunk' }).click();
    const form = page.getByRole('form', { name: 'New inbound trunk' });
    const password = `pw-${randomBytes(10).toString('hex')}`;
    await form.getByLabel('Name', { exact: true }).fill('Front desk line');
    await form.getByLabel('Numbers callers dial').fill('+15550123, +15550124');
    await form.getByLabel('Allowed addresses (IPs or CIDRs; empty: any)').fill('203.0.113.0/24');
    await form.getByLabel('Digest username').fill('desk');
    await form.getByLabel('Digest password').fill(password);
    await form.getByRole('button', { name: 'Create trunk' }).click();
    const row = page.locator('table.trunks tr', { hasText: 'Front desk line' });
    await row.waitFor();
    expect(await row.textContent()).toContain('desk · password set');
    const trunks = (await api('GET', '/sip-trunk')).body.data.trunks;
    expect(trunks).toHaveLength(1);
    expect(trunks[0]).toMatchObject({ direction: 'inbound', numbers: ['+15550123', '+15550124'], allowedAddresses: ['203.0.113.0/24'], authUsername: 'desk', hasAuthPassword: true });
    const trunkId = trunks[0]._id as string;

    // The agent answers the trunk.
    await page.getByLabel('Answering agent').selectOption({ label: 'Front desk' });
    await page.getByLabel('Number or trunk').selectOption({ label: 'trunk Front desk line (+15550123, +15550124)' });
    await page.getByRole('button', { name: 'Answer', exact: true }).click();
    const answer = page.locator('table.answers tr', { hasText: 'trunk Front desk line' });
    await answer.waitFor();
    expect(await answer.textContent()).toContain('Front desk');
    expect((await api('GET', `/agent/${desk}/answers`)).body.data.answers).toEqual([{ agentId: desk, sourceKind: 'sipTrunk', sourceId: trunkId, phoneNumbers: ['+15550123', '+15550124'] }]);

    // Edit: the password field is empty (the page never has it) and left empty, the password stays.
    await row.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit trunk Front desk line' });
    expect(await edit.getByLabel('Digest password').inputValue()).toBe('');
    await edit.getByLabel('Name', { exact: true }).fill('Front desk main line');
    await edit.getByRole('button', { name: 'Save trunk' }).click();
    await page.locator('table.trunks tr', { hasText: 'Front desk main line' }).waitFor();
    expect((await api('GET', `/sip-trunk/${trunkId}`)).body.data).toMatchObject({ name: 'Front desk main line', hasAuthPassword: true, numbers: ['+15550123', '+15550124'] });
    // Deleting a trunk an agent answers: the API's 409 on the page.
    await page.locator('table.trunks tr', { hasText: 'Front desk main line' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('alert').filter({ hasText: 'in use' }).waitFor();
    expect(await page.content()).not.toContain(password);
    expect(suite.server.logs.join('\n')).not.toContain(password);
    await expectRendered();
  }, 60_000);

  it('names the agents that use a tool when its delete is refused', async () => {
    const { page } = b;
    await visit('#/tools', 'Tools and secrets');
    await page.locator('table.tools tr', { hasText: 'lookup_order' }).getByRole('button', { name: 'Delete' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'referenced in toolRefs' });
    await alert.waitFor();
    expect(await alert.getByRole('link', { name: 'Front desk' }).getAttribute('href')).toBe(`#/agents/${desk}`);
    expect((await api('GET', '/tool')).body.data.tools).toHaveLength(1);
    expect(ownErrors(b.errors)).toEqual([]);
    expect(serverErrors).toEqual([]);
  }, 30_000);

  it('lays every new page out on a phone-sized screen', async () => {
    const phone = await b.browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    try {
      const page = await phone.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      await page.goto(suite.server.base + '/');
      await page.getByLabel('API key').fill(suite.server.key);
      await page.getByLabel('API key').press('Enter');
      await page.getByRole('heading', { name: 'Agents' }).waitFor();
      for (const [hash, heading, ready] of [
        ['#/tools', 'Tools and secrets', 'table.secrets'],
        ['#/webhooks', 'Webhooks', 'text=No webhooks yet.'],
        ['#/telephony', 'Telephony', 'table.answers'],
        [`#/agents/${desk}`, 'Front desk', 'fieldset.settings'],
      ] as const) {
        await page.getByRole('navigation').waitFor();
        await page.goto(`${suite.server.base}/${hash}`);
        await page.getByRole('heading', { name: heading, exact: true }).waitFor();
        await page.locator(ready).first().waitFor();
        expect(await page.evaluate(() => document.documentElement.scrollWidth), hash).toBeLessThanOrEqual(390);
        expect(await screenshotDeviation(page), hash).toBeGreaterThan(1);
      }
      expect(ownErrors(errors)).toEqual([]);
    } finally {
      await phone.close();
    }
  }, 60_000);
});
