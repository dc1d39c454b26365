// /openapi.json and /reference against the real server: the document passes a maintained OpenAPI 3.1 validator, it
// names exactly the routes the server registers (the table the same registration code builds, run in-process here),
// every documented operation reaches its route over HTTP (not the unmatched-route fallback), and the reference page
// loads from local assets only and renders the operations in Chromium (offline: the browser resolves no other host).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ZodType } from 'zod';
import { CHROMIUM, launchBrowser, screenshotDeviation } from './support/browser.js';
import { testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { agentWithMain, commit } from './support/agents.js';
import { startApp, type RunningApp } from '../server/app.js';
import { loadSettings } from '../server/settings.js';
import { buildOpenApi } from '../transports/http/openapi.js';
import type { RouteRecord } from '../transports/http/types.js';

type Doc = { paths: Record<string, Record<string, { 'x-websocket'?: boolean; security?: unknown[]; responses: Record<string, unknown> }>> };
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** `METHOD /path/{param}` of each route in a table (documented or not). */
const tableKeys = (routes: readonly RouteRecord[]) => routes.map((r) => `${r.method} ${r.pattern.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);

/** `METHOD /path/{param}` of each operation in a document. */
function documentKeys(doc: Doc): string[] {
  return Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).filter((m) => METHODS.includes(m)).map((m) => `${m.toUpperCase()} ${p}`));
}

/** What the document lacks and what it names that the server does not serve. */
function coverage(routes: readonly RouteRecord[], doc: Doc): { missing: string[]; extra: string[] } {
  const served = new Set(tableKeys(routes));
  const documented = new Set(documentKeys(doc));
  return { missing: [...served].filter((k) => !documented.has(k)), extra: [...documented].filter((k) => !served.has(k)) };
}

/** Requests answered by the unmatched-route fallback so far (its metrics label). */
async function unmatchedCount(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('parley_http_requests_total{') && l.includes('route="unmatched"'))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** A WebSocket upgrade without credentials: the HTTP status it is refused with (101 if accepted). */
function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, {
      headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': randomBytes(16).toString('base64') },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 101);
    });
    req.on('error', reject);
  });
}

/** The route table of the real registration code (server/app.ts), run in this process on a throwaway store. */
describe('route table', () => {
  let app: RunningApp;
  let dataDir: string;
  let doc: Doc;
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'parley-openapi-'));
    const settings = loadSettings({ ...process.env, PARLEY_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', PARLEY_SIP_PORT: 'off', PARLEY_WARM_MODELS: 'false', DATABASE_URL: '' });
    app = await startApp(settings, pino({ level: 'silent' }));
    doc = (await (await fetch(`http://127.0.0.1:${app.port}/openapi.json`)).json()) as Doc;
  }, 60_000);
  afterAll(async () => {
    await app?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('every route the server registers has a doc, and the document names exactly those routes', () => {
    expect(app.routes.length).toBeGreaterThan(100);
    expect(app.routes.filter((r) => !r.doc).map((r) => `${r.method} ${r.pattern}`)).toEqual([]);
    expect(coverage(app.routes, doc)).toEqual({ missing: [], extra: [] });
  });

  it('every JSON request body is documented by the zod schema that validates it (no hand-written JSON Schema)', () => {
    const jsonBodies = app.routes.filter((r) => r.doc?.body && (r.doc.body.contentType ?? 'application/json') === 'application/json');
    expect(jsonBodies.length).toBeGreaterThan(40);
    const handWritten = jsonBodies.filter((r) => !(r.doc?.body?.schema instanceof ZodType)).map((r) => `${r.method} ${r.pattern}`);
    expect(handWritten).toEqual([]);
  });

  it('the coverage check names a route whose doc is removed, and a documented route the server lacks', () => {
    const routes = app.routes.map((r) => ({ ...r }));
    const victim = routes.find((r) => r.pattern.endsWith('/agent/:id/duplicate')) as RouteRecord;
    delete victim.doc;
    const prefixes = { version: '0', atomsPrefix: '/atoms/v1', wavesPrefix: '/waves/v1' };
    const withoutDoc = buildOpenApi(routes, prefixes) as Doc;
    expect(coverage(app.routes, withoutDoc)).toEqual({ missing: ['POST /atoms/v1/agent/{id}/duplicate'], extra: [] });
    expect(coverage(routes.filter((r) => r !== victim), doc)).toEqual({ missing: [], extra: ['POST /atoms/v1/agent/{id}/duplicate'] });
  });
});

describe.each(testDialects())('OpenAPI document and reference (%s)', (dialect) => {
  const suite = serverForSuite(dialect);
  let doc: Doc;
  beforeAll(async () => {
    const res = await fetch(`${suite.server.base}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    doc = (await res.json()) as Doc;
  });

  it('passes the OpenAPI 3.1 schema validator', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('describes security, error envelopes, zod-validated bodies and WebSocket routes', () => {
    const agent = doc.paths['/atoms/v1/agent']?.post as any;
    expect(agent.security).toEqual([{ apiKey: [] }, { session: [] }]);
    // The client errors it answers, each listed: credentials (401, 429) and its body (400, 413).
    expect(Object.keys(agent.responses)).toEqual(['201', '400', '401', '413', '429', '4XX', '5XX']);
    expect(agent.responses['400']).toEqual({ $ref: '#/components/responses/PlatformError' });
    // The configuration fields come from the zod schemas that validate them (config-schema.ts).
    const body = agent.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['name']);
    expect(body.properties.endpointingConfig.properties.minDelayMs).toMatchObject({ type: 'integer', minimum: 0, maximum: 5000 });
    expect(body.properties.widgetConfig.properties.position.enum).toContain('bottom-right');
    const tool = (doc.paths['/atoms/v1/tool']?.post as any).requestBody.content['application/json'].schema;
    expect(tool.properties.definition.anyOf).toHaveLength(2);
    const tts = doc.paths['/waves/v1/tts']?.post as any;
    expect(tts.security).toEqual([{ apiKey: [] }, { accessToken: [] }]);
    expect(tts.responses['400']).toEqual({ $ref: '#/components/responses/TtsError' });
    const live = doc.paths['/waves/v1/stt/live']?.get as any;
    expect(live['x-websocket']).toBe(true);
    expect(live.responses['101']).toBeDefined();
    expect(live.security).toContainEqual({ apiKeyQuery: [] });
  });

  it('shows the enums, bounds and required fields of converted bodies, and the server enforces exactly those', async () => {
    const body = (path: string, method = 'post') => (doc.paths[path]?.[method] as any).requestBody.content['application/json'].schema;
    /** A nullable field's schema without its `null` branch. */
    const notNull = (schema: any) => (schema.anyOf ? schema.anyOf.find((s: any) => s.type !== 'null') : schema);
    const agent = body('/atoms/v1/agent');
    expect(agent.properties.name).toMatchObject({ type: 'string', maxLength: 200 });
    const draft = body('/atoms/v1/agent/{id}/branches/{branchId}/draft', 'put');
    expect(draft.properties.expectedRevision).toMatchObject({ type: 'integer', minimum: 0 });
    expect(draft.properties.workflowType.enum).toEqual(['single_prompt', 'workflow_graph']);
    const branch = body('/atoms/v1/agent/{id}/branches');
    expect(branch.required).toEqual(['name', 'sourceBranchId']);
    expect(branch.properties.name).toMatchObject({ minLength: 1, maxLength: 100 });
    expect(body('/atoms/v1/agent/{id}/branches/{branchId}/revisions/{revisionId}/scan').properties.acknowledge.items.enum).toContain('prompt_injection');
    const webhook = body('/atoms/v1/webhook');
    expect(webhook.required).toEqual(['endpoint']);
    expect(webhook.additionalProperties).toBe(false);
    expect(webhook.properties.events).toMatchObject({ type: 'array', maxItems: 300 });
    expect(webhook.properties.events.items.properties.eventType.enum).toEqual(['pre-conversation', 'post-conversation', 'analytics-completed']);
    expect(body('/atoms/v1/secret')).toMatchObject({ required: ['name', 'value'], properties: { name: { pattern: '^[A-Za-z0-9_.-]{1,100}$' } } });
    const trunk = body('/atoms/v1/sip-trunk/outbound');
    expect(trunk.required).toEqual(expect.arrayContaining(['name', 'address']));
    expect(trunk.properties.cpsLimit).toMatchObject({ type: 'integer', minimum: 1, maximum: 50 });
    expect(trunk.properties.transport.enum).toEqual(['udp', 'tcp', 'tls']);
    expect(trunk.properties.ringingTimeoutSecs).toBeUndefined();
    expect(body('/atoms/v1/sip-trunk/inbound').properties.ringingTimeoutSecs).toMatchObject({ minimum: 1, maximum: 120 });
    expect(body('/atoms/v1/conversation/outbound')).toMatchObject({ required: ['agentId', 'phoneNumber'], properties: { phoneNumber: { pattern: expect.any(String) } } });
    const maxRetries = notNull(body('/atoms/v1/campaign').properties.maxRetries);
    expect(maxRetries).toMatchObject({ type: 'integer', minimum: 0, maximum: 10 });
    expect(body('/atoms/v1/agent/{agentId}/answers').properties.sourceKind.enum).toEqual(['phoneNumber', 'sipTrunk']);
    expect(body('/waves/v1/auth/token').properties.ttl_seconds).toMatchObject({ type: 'integer', default: expect.any(Number) });
    const tts = body('/waves/v1/tts');
    expect(tts.required).toEqual(['text', 'voice_id']);
    expect(notNull(tts.properties.sample_rate).enum).toEqual([8000, 16000, 22050, 24000, 44100, 48000]);
    expect(notNull(tts.properties.speed)).toMatchObject({ minimum: 0.5, maximum: 2 });

    // The documented bound is the enforced one: at it the request passes, one past it the field is named.
    const { server } = suite;
    const maxName = agent.properties.name.maxLength as number;
    expect((await server.request('POST', '/atoms/v1/agent', { body: { name: 'n'.repeat(maxName) } })).status).toBe(201);
    const long = await server.request('POST', '/atoms/v1/agent', { body: { name: 'n'.repeat(maxName + 1) } });
    expect(long.status).toBe(400);
    expect(long.body.errors).toEqual(['name: must be a non-empty string of at most 200 characters']);
    const retries = await server.request('POST', '/atoms/v1/campaign', { body: { name: 'c', agentId: 'a', audienceId: 'b', maxRetries: maxRetries.maximum + 1 } });
    expect(retries.status).toBe(400);
    expect(retries.body.errors).toEqual(['maxRetries: an integer from 0 to 10 (default 3)']);
    const event = await server.request('POST', '/atoms/v1/webhook', { body: { endpoint: 'https://hooks.example.com/x', events: [{ agentId: '0123456789abcdef01234567', eventType: 'call-started' }] } });
    expect(event.body.errors).toEqual(['events[0].eventType: must be one of pre-conversation, post-conversation, analytics-completed']);
    const secret = await server.request('POST', '/atoms/v1/secret', { body: { name: 'no spaces allowed', value: 'v', extra: 1 } });
    expect(secret.status).toBe(400);
    expect(secret.body.errors).toEqual(['name: required, 1-100 characters of letters, digits, _ . or -']);
  });

  it('every documented operation reaches its route without credentials, never the unmatched-route fallback', async () => {
    const base = suite.server.base;
    const probed: string[] = [];
    for (const [template, item] of Object.entries(doc.paths)) {
      const url = base + template.replace(/\{[^}]+\}/g, 'p1');
      for (const [method, op] of Object.entries(item)) {
        if (!METHODS.includes(method)) continue;
        const before = await unmatchedCount(base);
        const status = op['x-websocket'] ? await upgradeStatus(url) : (await fetch(url, { method: method.toUpperCase() })).status;
        const key = `${method.toUpperCase()} ${template}`;
        expect(await unmatchedCount(base), `${key} (answered ${status}) fell through to the unmatched-route fallback`).toBe(before);
        // Operations that need a credential refuse without one (agent connect checks its token itself), with a status
        // the document lists for them.
        if ((op.security ?? []).length > 0) expect([401, 403], key).toContain(status);
        if (!op['x-websocket']) expect(Object.keys(op.responses), `${key} answered ${status} without credentials`).toContain(String(status));
        probed.push(key);
      }
    }
    expect(probed.length).toBeGreaterThan(100);
    // The check itself can fail: an unknown path does fall through.
    const before = await unmatchedCount(base);
    await fetch(`${base}/atoms/v1/no-such-route`);
    expect(await unmatchedCount(base)).toBe(before + 1);
  }, 120_000);

  it('with a key, every documented operation answers a status its document lists (an unknown id, an empty JSON body)', async () => {
    const { server } = suite;
    const undocumented: string[] = [];
    let probed = 0;
    for (const [template, item] of Object.entries(doc.paths)) {
      const path = template.replace(/\{[^}]+\}/g, '0123456789abcdef01234567');
      for (const [method, op] of Object.entries(item)) {
        if (!METHODS.includes(method) || op['x-websocket']) continue;
        const verb = method.toUpperCase();
        const res = await fetch(server.base + path, {
          method: verb,
          headers: { authorization: `Bearer ${server.key}`, ...(['POST', 'PUT', 'PATCH'].includes(verb) ? { 'content-type': 'application/json' } : {}) },
          ...(['POST', 'PUT', 'PATCH'].includes(verb) ? { body: '{}' } : {}),
        });
        await res.arrayBuffer();
        probed++;
        if (!Object.hasOwn(op.responses, String(res.status))) undocumented.push(`${verb} ${template}: answered ${res.status}, documents ${Object.keys(op.responses).join(', ')}`);
      }
    }
    expect(probed).toBeGreaterThan(100);
    expect(undocumented).toEqual([]);
  }, 120_000);

  it('publish and restore answer the success statuses the document lists (200 committed, 202 scanning), not 201', async () => {
    const documented = (path: string) => Object.keys((doc.paths[path]?.post as any).responses).filter((s) => /^2\d\d$/.test(s));
    const publishPath = '/atoms/v1/agent/{id}/branches/{branchId}/draft/publish';
    const restorePath = '/atoms/v1/agent/{id}/branches/{branchId}/revisions/{revisionId}/restore';
    expect(documented(publishPath)).toEqual(['200', '202']);
    expect(documented(restorePath)).toEqual(['200', '202']);
    const { agent, main } = await agentWithMain(suite.server);
    const revision = await commit(suite.server, agent, main, { prompt: 'Answer briefly.' }, 'one');
    await commit(suite.server, agent, main, { prompt: 'Answer very briefly.' }, 'two');
    const restored = await suite.server.request('POST', `/atoms/v1/agent/${agent}/branches/${main}/revisions/${revision._id}/restore`);
    expect(documented(restorePath), restored.text).toContain(String(restored.status));
    // commit() asserted publish's 200 (committed), which the document lists.
  });

  it('serves the reference page with local assets only, each loading', async () => {
    const res = await fetch(`${suite.server.base}/reference`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    const html = await res.text();
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(refs.length).toBeGreaterThanOrEqual(3);
    for (const ref of refs) {
      expect(ref, 'no CDN: every asset from this server').toMatch(/^\/reference\//);
      const asset = await fetch(suite.server.base + ref, { headers: { 'accept-encoding': 'gzip' } });
      expect(asset.status, ref).toBe(200);
      expect((await asset.arrayBuffer()).byteLength, ref).toBeGreaterThan(0);
    }
    const init = await (await fetch(`${suite.server.base}/reference/init.js`)).text();
    expect(init).toContain("url: '/openapi.json'");
    const bundle = await fetch(`${suite.server.base}/reference/swagger-ui-bundle.js`);
    expect(await bundle.text()).toContain('SwaggerUIBundle');
    expect((await fetch(`${suite.server.base}/reference/not-an-asset.js`)).status).toBe(404);
  });
});

describe.skipIf(!existsSync(CHROMIUM))('API reference in Chromium', () => {
  const suite = serverForSuite(testDialects()[0] ?? 'sqlite');

  it('renders every tag of the document with no console errors (CSP and offline assets hold)', async () => {
    const b = await launchBrowser();
    try {
      const failed: string[] = [];
      b.page.on('requestfailed', (r) => failed.push(r.url()));
      await b.page.goto(`${suite.server.base}/reference`);
      const doc = (await (await fetch(`${suite.server.base}/openapi.json`)).json()) as { tags: { name: string }[] };
      await b.page.locator('.opblock-tag').first().waitFor({ timeout: 30_000 });
      expect(await screenshotDeviation(b.page)).toBeGreaterThan(1);
      // Swagger UI renders only the sections near the viewport: scroll through the page, collecting the tags seen.
      const seen = new Set<string>();
      for (let i = 0; i < 200 && seen.size < doc.tags.length; i++) {
        for (const t of await b.page.locator('.opblock-tag').allTextContents()) seen.add(t.trim());
        await b.page.mouse.wheel(0, 600);
        await b.page.waitForTimeout(50);
      }
      for (const tag of doc.tags) expect([...seen].some((t) => t.startsWith(tag.name)), `${tag.name} in ${JSON.stringify([...seen])}`).toBe(true);
      expect(failed).toEqual([]);
      expect(b.errors).toEqual([]);
    } finally {
      await b.close();
    }
  }, 90_000);
});
