// The HTTP server itself: native uWS, health, metrics, error envelopes (400/404/413/500), auth, rate limit, aborts, graceful SIGTERM.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import { createRequire } from 'node:module';
import { freshStore, sleep, startServer, type StoreEnv, type TestServer } from './support/server.js';

const require = createRequire(import.meta.url);

function rawSocket(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

describe('HTTP server', () => {
  let store: StoreEnv;
  let server: TestServer;

  beforeAll(async () => {
    store = freshStore('sqlite');
    server = await startServer({ store, env: { PARLEY_MAX_BODY_BYTES: '4096', PARLEY_RATE_LIMIT_PER_MINUTE: '100000' } });
  });
  afterAll(async () => {
    await server.stop();
    await store.cleanup();
  });

  it('runs on the native uWebSockets.js binary, not the JS fallback', () => {
    const uws = require('uWebSockets.js') as { getParts?: unknown; App: unknown };
    expect(typeof uws.getParts).toBe('function');
    expect(typeof uws.App).toBe('function');
  });

  it('serves /health without a key', async () => {
    const res = await server.request('GET', '/health', { key: null });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', store: 'sqlite' });
  });

  it('counts requests by route pattern and status in /metrics, with process metrics', async () => {
    await server.request('GET', '/atoms/v1/agent');
    await server.request('GET', '/atoms/v1/agent/000000000000000000000000/branches');
    const res = await server.request('GET', '/metrics', { key: null });
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/parley_http_requests_total\{method="GET",route="\/atoms\/v1\/agent",status="200"\} \d+/);
    expect(res.text).toMatch(/parley_http_requests_total\{method="GET",route="\/atoms\/v1\/agent\/:id\/branches",status="404"\} \d+/);
    expect(res.text).toMatch(/parley_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/atoms\/v1\/agent"/);
    expect(res.text).toContain('process_cpu_user_seconds_total');
    expect(res.text).not.toContain('000000000000000000000000');
  });

  it('answers unknown routes with a 404 envelope', async () => {
    const res = await server.request('GET', '/atoms/v1/nope/nothing');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ status: false, errors: ['Resource not found'] });
  });

  it('answers a malformed percent-encoding in the path with a 400 envelope', async () => {
    const res = await server.request('GET', '/atoms/v1/agent/%E0%A4%A');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: false, errors: ['Malformed percent-encoding in the request path'] });
    expect((await server.request('GET', '/health', { key: null })).status).toBe(200);
  });

  it('answers malformed JSON with a 400 envelope', async () => {
    const res = await server.request('POST', '/atoms/v1/agent', { raw: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: false, errors: ['Malformed JSON in request body'] });
  });

  it('answers 400, not a crash, for inherited property names and over-deep JSON', async () => {
    for (const raw of ['{"name":"x","constructor":1}', '{"name":"x","toString":"y","__proto__":{"valueOf":1}}']) {
      const res = await server.request('POST', '/atoms/v1/agent', { raw, headers: { 'content-type': 'application/json' } });
      expect(res.status, res.text).toBe(201);
    }
    expect((await server.request('GET', '/atoms/v1/agent?sortField=constructor')).status).toBe(400);
    const deep = `{"name":"x","widgetConfig":${'['.repeat(40)}1${']'.repeat(40)}}`;
    const res = await server.request('POST', '/atoms/v1/agent', { raw: deep, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: false, errors: ['JSON nested deeper than 32 levels'] });
  });

  it('refuses an oversize body with 413, declared or streamed', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(5000) });
    const declared = await server.request('POST', '/atoms/v1/agent', { raw: big, headers: { 'content-type': 'application/json' } });
    expect(declared.status).toBe(413);
    expect(declared.body.status).toBe(false);
    expect(declared.body.errors[0]).toMatch(/exceeds 4096 bytes/);

    // Chunked body without Content-Length: the limit is enforced while reading.
    const chunks = new ReadableStream({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('x'.repeat(1000)));
        c.close();
      },
    });
    const streamed = await fetch(`${server.base}/atoms/v1/agent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.key}` },
      body: chunks,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
  });

  it('refuses missing and invalid keys with 401 in the envelope', async () => {
    const missing = await server.request('GET', '/atoms/v1/agent', { key: null });
    expect(missing.status).toBe(401);
    expect(missing.body.status).toBe(false);
    expect(missing.body.errors[0]).toMatch(/Unauthorized/);
    const invalid = await server.request('GET', '/atoms/v1/agent', { key: 'sk_not_a_real_key_000000000' });
    expect(invalid.status).toBe(401);
    const malformed = await server.request('GET', '/atoms/v1/agent', { headers: { authorization: 'Basic abc' }, key: null });
    expect(malformed.status).toBe(401);
  });

  it('survives a client that aborts mid-body, and never logs the API key', async () => {
    const sock = await rawSocket(server.port);
    sock.write(`POST /atoms/v1/agent HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"name":`);
    await sleep(100);
    sock.destroy();
    await sleep(100);
    const res = await server.request('GET', '/health', { key: null });
    expect(res.status).toBe(200);
    expect(server.exitCode).toBeNull();
    expect(server.logs.join('\n')).not.toContain(server.key);
    // Counted as a client abort and no longer in flight.
    const metrics = await server.request('GET', '/metrics', { key: null });
    expect(metrics.text).toMatch(/parley_http_requests_total\{method="POST",route="\/atoms\/v1\/agent",status="499"\} 1/);
  });
});

describe('a failing handler', () => {
  it('answers 500 in the envelope without details, logs the cause, and keeps serving', async () => {
    const store = freshStore('sqlite');
    const server = await startServer({ store });
    // Pull the agents table from under the running server, as a broken or tampered database would.
    const db = new Database(path.join(store.dataDir, 'parley.sqlite'));
    try {
      db.exec('ALTER TABLE agents RENAME TO agents_moved');
      const res = await server.request('GET', '/atoms/v1/agent');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ status: false, errors: ['Internal server error'] });
      expect(res.text).not.toMatch(/agents|sqlite|at .*\.ts/i);
      expect(await server.waitForLog(/"msg":"handler failed"/)).toMatch(/agents/);
      db.exec('ALTER TABLE agents_moved RENAME TO agents');
      expect((await server.request('GET', '/atoms/v1/agent')).status).toBe(200);
    } finally {
      db.close();
      await server.stop();
      await store.cleanup();
    }
  });
});

describe('rate limit per key', () => {
  it('answers 429 with RateLimit headers once the window is used up', async () => {
    const store = freshStore('sqlite');
    const server = await startServer({ store, env: { PARLEY_RATE_LIMIT_PER_MINUTE: '5' } });
    try {
      const statuses: number[] = [];
      let last: Awaited<ReturnType<TestServer['request']>> | null = null;
      for (let i = 0; i < 7; i++) {
        last = await server.request('GET', '/atoms/v1/agent');
        statuses.push(last.status);
        if (i === 0) {
          expect(last.headers.get('ratelimit-limit')).toBe('5');
          expect(last.headers.get('ratelimit-remaining')).toBe('4');
        }
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
      expect(last?.headers.get('ratelimit-remaining')).toBe('0');
      expect(Number(last?.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
      expect(Number(last?.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(last?.body).toMatchObject({ status: false, errors: ['Rate limit exceeded'] });
    } finally {
      await server.stop();
      await store.cleanup();
    }
  });
});

describe('SIGTERM', () => {
  it('stops accepting, finishes the in-flight request, closes the store and exits 0', async () => {
    const store = freshStore('sqlite');
    const server = await startServer({ store });
    const body = JSON.stringify({ name: 'in flight' });
    const sock = await rawSocket(server.port);
    let response = '';
    sock.on('data', (c) => (response += c.toString()));
    sock.write(`POST /atoms/v1/agent HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
    await sleep(150);
    server.proc.kill('SIGTERM');
    await sleep(300);
    // New connections are refused while the old one is still being served.
    await expect(fetch(`${server.base}/health`)).rejects.toThrow();
    expect(server.exitCode).toBeNull();
    sock.write(body.slice(5));
    const code = await server.waitExit();
    expect(code).toBe(0);
    expect(response).toMatch(/^HTTP\/1\.1 201/);
    expect(response).toMatch(/"status":true,"data":"[a-f0-9]{24}"/);
    expect(server.logs.join('\n')).toContain('"msg":"stopped"');
    await store.cleanup();
  });
});
