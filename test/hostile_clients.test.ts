// No client can hurt the others: unknown routes, unauthenticated and oversize uploads refused before their bodies
// are read, a chat session flood, idle live-recognition sockets, and the concurrent-session caps.
import { describe, expect, it, onTestFinished } from 'vitest';
import http from 'node:http';
import WebSocket from 'ws';
import { createOrgKey, sleep, storeSql, testDialects, type TestServer } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { rawRequest, rssMiB } from './support/raw-http.js';
import { chatFlood } from './support/chat-flood.js';
import { AgentCaller, connectUrl, endedCall } from './support/agent-client.js';

const demoAgent = async (server: TestServer): Promise<string> => {
  const res = await server.request('POST', '/atoms/v1/agent/from-template', { body: { templateId: 'parley-demo', name: 'Front desk' } });
  expect(res.status).toBeLessThan(300);
  return res.body.data as string;
};

describe('unknown routes and bodies refused before they are read', () => {
  const suite = serverForSuite('sqlite');

  it('an unknown route answers 404 in the envelope whatever its method or body', async () => {
    for (const path of ['/nope', '/atoms/v1/nope', '/atoms/v1/agent/x/y/z/w', '/waves/v1/nope/deeper']) {
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
        const bare = await suite.server.request(method, path);
        expect([path, method, bare.status, bare.body]).toEqual([path, method, 404, { status: false, errors: ['Resource not found'] }]);
        if (method === 'GET') continue;
        const withBody = await suite.server.request(method, path, { body: { some: 'thing', more: 'x'.repeat(5000) } });
        expect([path, method, withBody.status, withBody.body]).toEqual([path, method, 404, { status: false, errors: ['Resource not found'] }]);
      }
    }
    // A large body on an unknown route: the answer comes before the body is sent, and the connection stays usable.
    const big = await rawRequest(suite.server.port, 'POST', '/atoms/v1/nope', { 'content-type': 'application/json' }, 50 * 1024 * 1024, false);
    expect(big.status).toBe(404);
    expect(JSON.parse(big.body)).toEqual({ status: false, errors: ['Resource not found'] });
  });

  it('a request without a key is refused with 401 before any of its body is sent', async () => {
    const answer = await rawRequest(suite.server.port, 'POST', '/waves/v1/stt/', { 'content-type': 'audio/wav' }, 60 * 1024 * 1024, false);
    expect(answer.status).toBe(401);
    const platform = await rawRequest(suite.server.port, 'POST', '/atoms/v1/agent', { 'content-type': 'application/json' }, 500_000, false);
    expect(platform.status).toBe(401);
    expect(JSON.parse(platform.body).status).toBe(false);
  });

  it('refused requests with bodies leave their keep-alive connection usable for the next request', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const send = (method: string, path: string, body?: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; socket: unknown }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: suite.server.port, method, path, agent, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: req.socket }));
        });
        req.on('error', reject);
        req.end(body);
      });
    const answers = [
      await send('POST', '/atoms/v1/agent', '{"name":"no key"}'),
      await send('POST', '/waves/v1/tts', '{"text":"no key"}'),
      await send('POST', '/atoms/v1/nope', '{"a":1}'),
      await send('POST', '/atoms/v1/agent', 'x'.repeat(2 * 1024 * 1024), { authorization: `Bearer ${suite.server.key}` }),
      await send('GET', '/health'),
    ];
    expect(answers.map((a) => a.status)).toEqual([401, 401, 404, 413, 200]);
    // One connection served them all.
    expect(new Set(answers.map((a) => a.socket)).size).toBe(1);
    agent.destroy();
  });

  it("a keyed request declaring more than the route's limit gets 413 before any of its body is sent", async () => {
    const answer = await rawRequest(suite.server.port, 'POST', '/atoms/v1/agent', { authorization: `Bearer ${suite.server.key}`, 'content-type': 'application/json' }, 5 * 1024 * 1024, false);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toEqual({ status: false, errors: ['Request body exceeds 1048576 bytes'] });
    // Within the limit the same route reads the body as usual.
    const ok = await suite.server.request('POST', '/atoms/v1/agent', { body: { name: 'After the refusals' } });
    expect(ok.status).toBe(201);
  });

  it('20 concurrent 60 MB uploads without a key add almost no memory and each gets 401', async () => {
    const pid = suite.server.proc.pid as number;
    const before = await rssMiB(pid);
    let peak = before;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await rssMiB(pid));
        await sleep(20);
      }
    })();
    const answers = await Promise.all(Array.from({ length: 20 }, () => rawRequest(suite.server.port, 'POST', '/waves/v1/stt/', { 'content-type': 'audio/wav' }, 60 * 1024 * 1024)));
    sampling = false;
    await sampler;
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(401));
    // Before this change the server buffered every body: 1.2 GB. Now nothing of them is kept.
    expect(peak - before).toBeLessThan(100);
  });
});

describe.each(testDialects())('a chat flood on %s', (dialect) => {
  const suite = serverForSuite(dialect);

  it('2,000 messages back to back: the flooder is rate limited then closed; /health and another session stay fast', async () => {
    const agentId = await demoAgent(suite.server);
    const result = await chatFlood(suite.server, agentId, 2000, 60_000);
    // Stated bounds for everyone else during the flood (before: /health stalled 12 s, the other session 11 s).
    expect(Math.max(...result.health)).toBeLessThan(500);
    expect(result.bystander.length).toBeGreaterThan(0);
    expect(Math.max(...result.bystander)).toBeLessThan(1000);
    // The flooder: the burst it is allowed is answered, the excess refused with error events, then closed.
    expect(result.flooder.errors.rate_limited).toBeGreaterThan(10);
    expect([result.flooder.closeCode, result.flooder.closeReason]).toEqual([1008, 'rate_limited']);
    const call = await endedCall(suite.server, result.flooder.callId);
    expect(call.endReason).toBe('rate_limited');
    const userTurns = (call.transcript as { role: string }[]).filter((t) => t.role === 'user').length;
    expect(userTurns).toBeGreaterThanOrEqual(10);
    expect(userTurns).toBeLessThan(20);
  });

  it("a running call's transcript is readable turn by turn, and the ended record holds it whole", async () => {
    const agentId = await demoAgent(suite.server);
    const caller = new AgentCaller(connectUrl(suite.server, { api_key: suite.server.key, agent_id: agentId, mode: 'chat' }), 24000);
    await caller.opened;
    await caller.agentTurn(0);
    const callId = String(caller.frames.find((f) => f.type === 'session.created')?.call_id);
    for (const text of ['Hello there', 'I would like an appointment']) {
      const after = caller.frames.length;
      caller.send({ type: 'input_text.send', text });
      await caller.agentTurn(after);
    }
    await sleep(200);
    const running = await suite.server.request('GET', `/atoms/v1/conversation/${callId}`);
    expect(running.body.data.status).toBe('in_progress');
    const live = running.body.data.transcript as { role: string; content: string }[];
    expect(live.map((t) => t.role)).toEqual(['agent', 'user', 'agent', 'user', 'agent']);
    expect(live[1]?.content).toBe('Hello there');
    // Stored a row per entry while the call runs; the record's own transcript is written once, at the end.
    const rows = await storeSql(suite.store, 'SELECT seq, role, content FROM call_turns WHERE call_id = $1 ORDER BY seq', [callId]);
    expect(rows.map((r) => [Number(r.seq), r.role, r.content])).toEqual(live.map((t, i) => [i, t.role, t.content]));
    const [record] = await storeSql(suite.store, 'SELECT transcript FROM calls WHERE call_id = $1', [callId]);
    expect(record?.transcript).toBe('[]');
    caller.send({ type: 'session.close' });
    await caller.closed;
    const ended = await endedCall(suite.server, callId);
    expect(ended.transcript).toEqual(live);
    expect(await storeSql(suite.store, 'SELECT seq FROM call_turns WHERE call_id = $1', [callId])).toEqual([]);
  });

  it('audio is metered by its duration: small frames at real time pass, a minute of audio at once is refused', async () => {
    const agentId = await demoAgent(suite.server);
    const caller = new AgentCaller(connectUrl(suite.server, { api_key: suite.server.key, agent_id: agentId, mode: 'webcall', sample_rate: '48000' }), 48000);
    await caller.opened;
    await caller.waitFor((f) => f.type === 'session.created');
    // 128-sample frames (375 messages a second) at real-time pace for 1.5 s: none refused.
    const frame = Buffer.alloc(256).toString('base64');
    const started = performance.now();
    for (let i = 0; i < 560; i++) {
      caller.send({ type: 'input_audio_buffer.append', audio: frame });
      if (i % 38 === 37) await sleep(Math.max(0, started + ((i + 1) * 1000) / 375 - performance.now()));
    }
    await sleep(200);
    expect(caller.of('error', (f) => f.code === 'rate_limited')).toEqual([]);
    // 30 one-second chunks back to back: the 20 s burst (less what was just sent) passes, the rest is refused.
    const second = Buffer.alloc(96_000).toString('base64');
    for (let i = 0; i < 30; i++) caller.send({ type: 'input_audio_buffer.append', audio: second });
    await caller.waitFor((f) => f.type === 'error' && f.code === 'rate_limited');
    await sleep(200);
    const refused = caller.of('error', (f) => f.code === 'rate_limited').length;
    // About 11.5 of the 30 are over the burst; the bucket also refills (2 s of audio a second) while a loaded machine
    // takes its time over the 30 MB, so a few more may pass. Without metering none would be refused.
    expect(refused).toBeGreaterThanOrEqual(6);
    expect(refused).toBeLessThanOrEqual(12);
    expect(caller.closeCode).toBeNull();
    caller.ws.close();
    await caller.closed;
  });

  it('messages sent before the session is ready are kept and answered, or refused with an error, never dropped', async () => {
    const agentId = await demoAgent(suite.server);
    const caller = new AgentCaller(connectUrl(suite.server, { api_key: suite.server.key, agent_id: agentId, mode: 'chat' }), 24000);
    await caller.opened;
    // Sent the moment the socket opens, while the session may still be starting (held, or refused past 64).
    caller.send({ type: 'input_text.send', text: 'Hello early' });
    for (let i = 0; i < 100; i++) caller.send({ type: 'no.such.event', n: i });
    await caller.waitFor((f) => f.type === 'transcript' && f.role === 'user' && f.text === 'Hello early');
    await caller.agentTurn(caller.frames.findIndex((f) => f.type === 'transcript' && f.role === 'user'));
    // Every one of the 100 gets its answer: an invalid_event error once handled, or session_not_ready if refused early.
    await caller.waitFor(() => caller.of('error').length >= 100);
    await sleep(200);
    const errors = caller.of('error');
    expect(errors.length).toBe(100);
    expect(errors.every((f) => f.code === 'invalid_event' || f.code === 'session_not_ready')).toBe(true);
    caller.ws.close();
    await caller.closed;
  });
});

describe.each(testDialects())('live sockets on %s: idle timeout and concurrent-session caps', (dialect) => {
  const env = {
    PARLEY_STT_IDLE_SECONDS: '2',
    PARLEY_MAX_SPEECH_SESSIONS: '3',
    PARLEY_MAX_SPEECH_SESSIONS_PER_KEY: '2',
    PARLEY_MAX_CHAT_SESSIONS: '3',
    PARLEY_MAX_CHAT_SESSIONS_PER_KEY: '2',
  };
  const suite = serverForSuite(dialect, env);

  const sttUrl = (key: string) => `ws://127.0.0.1:${suite.server.port}/waves/v1/stt/live?sample_rate=16000&encoding=linear16&api_key=${key}`;
  type Opened = { ws: WebSocket; closed: Promise<{ code: number; reason: string }>; messages: any[] };
  const open = (url: string): Promise<Opened | { status: number; retryAfter: string | undefined; body: any }> =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const messages: any[] = [];
      ws.on('message', (d) => messages.push(JSON.parse(d.toString())));
      const closed = new Promise<{ code: number; reason: string }>((r) => ws.once('close', (code, reason) => r({ code, reason: reason.toString() })));
      ws.once('open', () => resolve({ ws, closed, messages }));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined, body: JSON.parse(body) }));
      });
      ws.once('error', (err) => (err.message.startsWith('Unexpected server response') ? undefined : reject(err)));
    });
  const isOpen = (o: Awaited<ReturnType<typeof open>>): o is Opened => 'ws' in o;

  // Timed against a 2 s idle timeout on a shared machine: one retry. Three loaded CI runs here lost one of this test's
  // sockets in the first seconds of a fresh server (once seen closed abnormally, 1006); no run alone reproduced it.
  it('a live recognition socket with no audio and no messages is closed after the idle timeout; one with audio stays', { retry: 1 }, async () => {
    const started = Date.now();
    const silent = await open(sttUrl(suite.server.key));
    const talking = await open(sttUrl(suite.server.key));
    if (!isOpen(silent) || !isOpen(talking)) throw new Error('not opened');
    const feeding = setInterval(() => talking.ws.send(Buffer.alloc(640)), 100);
    onTestFinished(() => {
      clearInterval(feeding);
      for (const o of [silent, talking]) o.ws.close();
    });
    const closed = await silent.closed;
    expect(closed, JSON.stringify(silent.messages)).toEqual({ code: 1000, reason: 'idle_timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
    expect(silent.messages.at(-1)).toMatchObject({ type: 'error', status: 'error' });
    await sleep(1500);
    let talkingClosed = 'still open';
    void talking.closed.then((c) => (talkingClosed = `closed ${c.code} ${c.reason}; messages ${JSON.stringify(talking.messages)}`));
    await sleep(0);
    expect(talking.ws.readyState, talkingClosed).toBe(WebSocket.OPEN);
    clearInterval(feeding);
    talking.ws.close();
    await talking.closed;
  });

  it('speech sessions past the per-key cap get 429, past the server cap 503, both with Retry-After; closing frees a place', async () => {
    const other = await createOrgKey(suite.store, 'other-tenant', 'other-org');
    // The idle timeout here is 2 s: the sessions that hold the places send audio, so that a slow machine does not let
    // one of them time out (and free its place) while the test is still filling the server.
    const held: Opened[] = [];
    const feeding = setInterval(() => held.forEach((o) => o.ws.readyState === WebSocket.OPEN && o.ws.send(Buffer.alloc(640))), 100);
    onTestFinished(() => clearInterval(feeding));
    const hold = <T extends Awaited<ReturnType<typeof open>>>(o: T): T => (isOpen(o) && held.push(o), o);
    const a1 = hold(await open(sttUrl(suite.server.key)));
    const a2 = hold(await open(sttUrl(suite.server.key)));
    expect(isOpen(a1) && isOpen(a2)).toBe(true);
    const a3 = await open(sttUrl(suite.server.key));
    expect(isOpen(a3)).toBe(false);
    if (isOpen(a3)) return;
    expect([a3.status, a3.retryAfter]).toEqual([429, '5']);
    expect(a3.body.error).toMatch(/2 concurrent speech sessions/);
    const b1 = hold(await open(sttUrl(other)));
    expect(isOpen(b1)).toBe(true);
    const b2 = await open(sttUrl(other));
    if (isOpen(b2)) throw new Error('past the server cap');
    expect([b2.status, b2.retryAfter]).toEqual([503, '5']);
    // A text-only session is another class: still allowed.
    const agentId = await demoAgent(suite.server);
    const chat = new AgentCaller(connectUrl(suite.server, { api_key: suite.server.key, agent_id: agentId, mode: 'chat' }), 24000);
    await chat.opened;
    // A voice agent session counts as speech: refused while the server is full.
    const voice = new AgentCaller(connectUrl(suite.server, { api_key: suite.server.key, agent_id: agentId, mode: 'webcall' }), 24000);
    await expect(voice.opened).rejects.toThrow('HTTP 503');
    clearInterval(feeding);
    for (const o of [a1, a2, b1]) if (isOpen(o)) o.ws.close();
    await Promise.all([a1, a2, b1].map((o) => (isOpen(o) ? o.closed : null)));
    await sleep(100);
    const again = await open(sttUrl(suite.server.key));
    expect(isOpen(again)).toBe(true);
    if (isOpen(again)) {
      again.ws.close();
      await again.closed;
    }
    chat.ws.close();
    await chat.closed;
  });

  // In one fresh-clone run of three (PostgreSQL, full suite) the third session was admitted; a diagnostic run later
  // saw it refused. So the two sessions holding the places must have started (their greeting said: the call record and
  // the brain are up) and still be open when the third comes, and the failure says what each had received.
  it('a wct_ token refused a place stays usable once a place is free', async () => {
    const agentId = await demoAgent(suite.server);
    const mint = async () => (await suite.server.request('POST', '/atoms/v1/conversation/register-call', { body: { agent_id: agentId, mode: 'chat' } })).body.data.access_token as string;
    const url = (token: string) => `ws://127.0.0.1:${suite.server.port}/atoms/v1/agent/connect?token=${token}`;
    const first = new AgentCaller(url(await mint()), 24000);
    const second = new AgentCaller(url(await mint()), 24000);
    await Promise.all([first.opened, second.opened]);
    const state = () => JSON.stringify([first, second].map((c) => ({ open: c.ws.readyState === WebSocket.OPEN, close: [c.closeCode, c.closeReason], frames: c.frames.map((f) => (f.type === 'error' ? `error ${f.code}: ${f.message}` : f.type)) })));
    await Promise.all([first, second].map((c) => c.waitFor((f) => (f.type === 'transcript' && f.role === 'assistant') || f.type === 'error' || f.type === 'session.closed', 30_000)));
    expect([first, second].every((c) => c.ws.readyState === WebSocket.OPEN && !c.frames.some((f) => f.type === 'error')), state()).toBe(true);
    const token = await mint();
    const refused = new AgentCaller(url(token), 24000);
    const outcome = await refused.opened.then(() => 'admitted', (err: unknown) => String(err));
    if (outcome === 'admitted') refused.ws.close();
    expect(outcome, `the third session, while the first two were ${state()}`).toBe('Error: HTTP 429');
    first.ws.close();
    await first.closed;
    await sleep(100);
    const retried = new AgentCaller(url(token), 24000);
    await retried.opened;
    await retried.agentTurn(0);
    for (const c of [second, retried]) c.ws.close();
    await Promise.all([second.closed, retried.closed]);
  });
});
