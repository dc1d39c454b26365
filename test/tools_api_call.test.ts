// api_call executor against a real local HTTP server standing for the customer's API: auth, templating, extraction, failures, no secret leaks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { executeApiCall, type ApiCallOptions, type ApiCallResult } from '../engine/agent/tools/api-call.js';
import type { ApiCallToolDefinition } from '../engine/agent/tools/types.js';

interface Received {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const SECRETS: Record<string, string> = {
  bearer_token: 'tok-7f3a9c1e-bearer-SECRET',
  partner_key: 'key/with+odd=chars&SECRET',
  basic_user: 'svc-user-SECRET-41',
  basic_pass: 'p@ss:w0rd "SECRET"',
};
const secret = async (name: string) => SECRETS[name];

describe('api_call executor', () => {
  const received: Received[] = [];
  const results: ApiCallResult[] = [];
  let server: http.Server;
  let base = '';
  let otherOrigin = '';

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://x');
        const entry: Received = { method: req.method ?? '', path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        received.push(entry);
        const json = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (url.pathname === '/hang') return; // never answers
        if (url.pathname === '/missing') return json(404, { error: 'no such order' });
        if (url.pathname === '/to-other') {
          res.writeHead(302, { location: `${otherOrigin}/echo` });
          return res.end();
        }
        if (url.pathname.startsWith('/orders/')) {
          return json(200, { order: { id: url.pathname.slice(8), status: 'shipped', items: [{ sku: 'A-1' }, { sku: 'B-2' }], eta: null }, total: 42, paid: true });
        }
        // Echo everything back, credentials included (a careless API): the executor must scrub them.
        return json(200, entry);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
    otherOrigin = `http://localhost:${port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const tool = (over: Partial<ApiCallToolDefinition>): ApiCallToolDefinition => ({
    type: 'api_call',
    name: 'lookup',
    description: 'Looks things up',
    enabled: true,
    url: `${base}/echo`,
    method: 'GET',
    timeout: 5000,
    responseVariables: [],
    ...over,
  });
  const run = async (def: ApiCallToolDefinition, args: Record<string, unknown> = {}, vars: Record<string, string | number | boolean> = {}, opts: Partial<ApiCallOptions> = {}) => {
    const before = received.length;
    const result = await executeApiCall(def, args, vars, { secret, ...opts });
    results.push(result);
    return { result, requests: received.slice(before) };
  };

  it('bearer: Authorization: Bearer <secret>; the echoed token is scrubbed from the result', async () => {
    const { result, requests } = await run(tool({ auth: { type: 'bearer', token: 'bearer_token' } }));
    expect(requests).toHaveLength(1);
    expect(requests[0]!.headers.authorization).toBe(`Bearer ${SECRETS.bearer_token}`);
    expect(result.ok).toBe(true);
    expect(result.status).toBe(200);
    expect((result.body as Received).headers.authorization).toBe('Bearer [redacted]');
    expect(result.text).toContain('[redacted]');
  });

  it('api_key in a header and in the query; the auth block may also come through opts (the stripped definition)', async () => {
    const header = await run(tool({ auth: { type: 'api_key', name: 'X-Partner-Key', location: 'header', value: 'partner_key' } }));
    expect(header.requests[0]!.headers['x-partner-key']).toBe(SECRETS.partner_key);
    expect(header.requests[0]!.query).toEqual({});

    const query = await run(tool({ url: `${base}/echo?fixed=1` }), {}, {}, { auth: { type: 'api_key', name: 'api_key', location: 'query', value: 'partner_key' } });
    expect(query.requests[0]!.query).toEqual({ fixed: '1', api_key: SECRETS.partner_key });
    expect(query.requests[0]!.headers.authorization).toBeUndefined();
    expect(query.result.ok).toBe(true);
    expect((query.result.body as Received).query.api_key).toBe('[redacted]');
  });

  it('basic: Authorization: Basic base64(<username secret>:<password secret>)', async () => {
    const { requests, result } = await run(tool({ auth: { type: 'basic', username: 'basic_user', password: 'basic_pass' } }));
    const header = requests[0]!.headers.authorization as string;
    expect(header).toMatch(/^Basic [A-Za-z0-9+/=]+$/);
    expect(Buffer.from(header.slice(6), 'base64').toString('utf8')).toBe(`${SECRETS.basic_user}:${SECRETS.basic_pass}`);
    expect(result.ok).toBe(true);
  });

  it('templates the URL, query parameters, headers and JSON body; arguments win over variables; JSON-safe escaping', async () => {
    const note = 'He said "ship it" \\ now\nline two';
    const def = tool({
      url: `${base}/echo/{{order_id}}/x?src=agent`,
      method: 'POST',
      queryParams: [
        { key: 'customer', value: '{{customer_name}}' },
        { key: 'tag', value: 'a&b={{ tag }}' },
      ],
      headers: { 'X-Call-Id': '{{call_id}}' },
      headersArray: [{ key: 'X-Lang', value: 'lang-{{default_language}}' }],
      requestBody: '{"note": "{{note}}", "qty": {{qty}}, "vip": {{vip}}, "who": {{customer_name}}, "nothing": {{absent}}, "text": "id={{order_id}}"}',
    });
    const { result, requests } = await run(def, { order_id: 'A 17/2', note, qty: 3, vip: true, tag: 'x y' }, { order_id: 'from-vars', customer_name: 'Rahul Sharma', call_id: 'CALL-1', default_language: 'en' });
    expect(result.ok, result.text).toBe(true);
    const r = requests[0]!;
    expect(r.method).toBe('POST');
    expect(r.path).toBe('/echo/A%2017%2F2/x');
    expect(r.query).toEqual({ src: 'agent', customer: 'Rahul Sharma', tag: 'a&b=x y' });
    expect(r.headers['x-call-id']).toBe('CALL-1');
    expect(r.headers['x-lang']).toBe('lang-en');
    expect(r.headers['content-type']).toBe('application/json');
    expect(JSON.parse(r.body)).toEqual({ note, qty: 3, vip: true, who: 'Rahul Sharma', nothing: null, text: 'id=A 17/2' });
  });

  it('a method with a body and no requestBody sends the arguments as JSON; GET sends none', async () => {
    const post = await run(tool({ method: 'PUT' }), { city: 'Pune', count: 2 });
    expect(post.requests[0]!.method).toBe('PUT');
    expect(JSON.parse(post.requests[0]!.body)).toEqual({ city: 'Pune', count: 2 });
    const get = await run(tool({}), { city: 'Pune' });
    expect(get.requests[0]!.body).toBe('');
  });

  it('extracts responseVariables with JSONPath (first match; objects as JSON; no match or null leaves them unset)', async () => {
    const { result } = await run(
      tool({
        url: `${base}/orders/{{id}}`,
        responseVariables: [
          { variableName: 'order_status', jsonPath: '$.order.status' },
          { variableName: 'second_sku', jsonPath: '$.order.items[1].sku' },
          { variableName: 'any_sku', jsonPath: '$..sku' },
          { variableName: 'items', jsonPath: '$.order.items' },
          { variableName: 'total', jsonPath: '$.total' },
          { variableName: 'paid', jsonPath: '$.paid' },
          { variableName: 'shipped_sku', jsonPath: "$.order.items[?(@.sku === 'B-2')].sku" },
          { variableName: 'eta', jsonPath: '$.order.eta' },
          { variableName: 'nope', jsonPath: '$.order.nothing' },
        ],
      }),
      { id: 'ORD-9' },
    );
    expect(result.ok).toBe(true);
    expect(result.variables).toEqual({
      order_status: 'shipped',
      second_sku: 'B-2',
      any_sku: 'A-1',
      items: JSON.stringify([{ sku: 'A-1' }, { sku: 'B-2' }]),
      total: 42,
      paid: true,
      shipped_sku: 'B-2',
    });
    expect(JSON.parse(result.text)).toMatchObject({ order: { id: 'ORD-9' } });
  });

  it('times out: a server that never answers gives an error result after about the tool timeout', async () => {
    const { result, requests } = await run(tool({ url: `${base}/hang`, timeout: 1000, auth: { type: 'bearer', token: 'bearer_token' } }));
    expect(requests).toHaveLength(1);
    expect(result.ok).toBe(false);
    expect(result.error).toBe('timed out after 1000 ms');
    expect(result.text).toContain('timed out');
    expect(result.latencyMs).toBeGreaterThanOrEqual(950);
    expect(result.latencyMs).toBeLessThan(2500);
  });

  it('non-2xx: ok false with the status and the body for the model; no variables', async () => {
    const { result } = await run(tool({ url: `${base}/missing`, responseVariables: [{ variableName: 'err', jsonPath: '$.error' }] }));
    expect(result).toMatchObject({ ok: false, status: 404, body: { error: 'no such order' }, variables: {} });
    expect(result.error).toContain('404');
    expect(result.text).toContain('no such order');
  });

  it('a missing secret is an error naming the secret, and no request is sent', async () => {
    const { result, requests } = await run(tool({ auth: { type: 'basic', username: 'basic_user', password: 'no_such_secret' } }));
    expect(requests).toHaveLength(0);
    expect(result.ok).toBe(false);
    expect(result.error).toContain('"no_such_secret"');
    expect(result.text).toContain('no_such_secret');
    expect(result.status).toBeUndefined();
  });

  it('a missing required argument is reported to the model without a request', async () => {
    const def = tool({ llmParameters: [{ name: 'city', description: 'City', type: 'text', required: true }] });
    const { result, requests } = await run(def, {});
    expect(requests).toHaveLength(0);
    expect(result.error).toContain('city');
  });

  it('egress: the target and each redirect are checked; credentials never follow a redirect to another origin', async () => {
    const checked: string[] = [];
    const checkUrl = async (url: URL) => {
      checked.push(url.href);
    };
    const { result, requests } = await run(tool({ url: `${base}/to-other`, auth: { type: 'bearer', token: 'bearer_token' } }), {}, {}, { checkUrl });
    expect(result.ok).toBe(true);
    expect(checked).toEqual([`${base}/to-other`, `${otherOrigin}/echo`]);
    expect(requests.map((r) => r.headers.host)).toEqual([base.slice(7), otherOrigin.slice(7)]);
    expect(requests[0]!.headers.authorization).toBe(`Bearer ${SECRETS.bearer_token}`);
    expect(requests[1]!.headers.authorization).toBeUndefined();

    const refuse = async (url: URL) => {
      if (url.hostname === 'localhost') throw new Error('private address');
    };
    const refused = await run(tool({ url: `${base}/to-other` }), {}, {}, { checkUrl: refuse });
    expect(refused.requests).toHaveLength(1);
    expect(refused.result).toMatchObject({ ok: false, status: 302 });
    expect(refused.result.error).toContain('egress policy');

    const blocked = await run(tool({}), {}, {}, { checkUrl: async () => Promise.reject(new Error('blocked')) });
    expect(blocked.requests).toHaveLength(0);
    expect(blocked.result.ok).toBe(false);
  });

  it('no secret value appears in anything the executor returned', () => {
    expect(results.length).toBeGreaterThanOrEqual(12);
    const all = JSON.stringify(results);
    for (const value of Object.values(SECRETS)) {
      expect(all).not.toContain(value);
      expect(all).not.toContain(JSON.stringify(value).slice(1, -1));
      expect(all).not.toContain(encodeURIComponent(value));
    }
    expect(all).not.toContain(Buffer.from(`${SECRETS.basic_user}:${SECRETS.basic_pass}`).toString('base64'));
  });
});
