// Recordings in the store (PARLEY_RECORDING_STORE=database): written by the server that held the call, served by any
// server sharing the store; the files store's recordings stay readable after switching; bad settings refuse to start.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readWav } from '../engine/audio/wav.js';
import { DatabaseObjectStore } from '../control-plane/recordings/database-store.js';
import { loadSettings } from '../server/settings.js';
import { endedCall, AgentCaller, connectUrl } from './support/agent-client.js';
import { ROOT, freshStore, startServer, storeSql, testDialects, withStore, type TestServer } from './support/server.js';

const A = '/atoms/v1';
const RATE = 16000;
const GRAPH = {
  nodes: [{ id: 'bye', type: 'end_call', text: 'This call is recorded by one server and played back by another. Goodbye!' }],
  edges: [],
};

/** A web call on `server` that the agent ends after one sentence (the caller's mic streams silence meanwhile). */
async function agentEndedCall(server: TestServer): Promise<{ callId: string; call: any }> {
  const created = await server.request('POST', `${A}/agent`, { body: { name: 'recorded', workflowType: 'workflow_graph', workflowGraph: GRAPH } });
  expect(created.status, created.text).toBe(201);
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: created.body.data as string, sample_rate: String(RATE) }), RATE);
  await c.opened;
  const session = await c.waitFor((f) => f.type === 'session.created');
  c.startMic();
  await c.agentTurn(0);
  await c.closed;
  const callId = session.call_id as string;
  return { callId, call: await endedCall(server, callId) };
}

/** As agentEndedCall, and the call has both recordings. */
async function recordedCall(server: TestServer): Promise<{ callId: string; call: any }> {
  const { callId, call } = await agentEndedCall(server);
  expect(call.recordingUrl).toMatch(new RegExp(`^parley-recording://[^/]+/${callId}/mono\\.wav$`));
  expect(call.recordingDualUrl).toMatch(new RegExp(`^parley-recording://[^/]+/${callId}/dual\\.wav$`));
  return { callId, call };
}

/** The object key a recording identifier names. */
const keyOf = (identifier: string): string => identifier.replace(/^parley-recording:\/\//, '');

/** The signed URL `server` hands out for a channel (asked with `key`), and the bytes behind it. */
async function download(server: TestServer, callId: string, channel: 'mono' | 'dual', key = server.key): Promise<{ url: string; bytes: Buffer }> {
  const res = await server.request('GET', `${A}/recordings/${callId}?channel=${channel}`, { key });
  expect(res.status, res.text).toBe(200);
  const url = res.body.data.url as string;
  expect(url.startsWith(server.base)).toBe(true);
  const file = await fetch(url);
  expect(file.status).toBe(200);
  expect(file.headers.get('content-type')).toBe('audio/wav');
  return { url, bytes: Buffer.from(await file.arrayBuffer()) };
}

/** A 16 kHz WAV as long as the call (the caller's silence runs from the start to the end), with the agent in it. */
function expectCallWav(bytes: Buffer, channels: number, durationS: number): void {
  expect(bytes.subarray(0, 4).toString('latin1')).toBe('RIFF');
  expect(bytes.readUInt16LE(22)).toBe(channels);
  const wav = readWav(bytes);
  expect(wav.sampleRate).toBe(RATE);
  const seconds = wav.samples.length / RATE;
  expect(seconds).toBeGreaterThan(durationS - 1.5);
  expect(seconds).toBeLessThan(durationS + 1.5);
  const peak = wav.samples.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  expect(peak).toBeGreaterThan(0.05);
}

const objectRows = (store: ReturnType<typeof freshStore>, callId: string) =>
  storeSql(store, `SELECT key, size FROM recording_objects WHERE key LIKE $1 ORDER BY key`, [`%/${callId}/%`]);

describe.runIf(testDialects().includes('postgres'))('recordings with two servers on one store', () => {
  it('a call recorded on server A is served by server B: same bytes, through B\'s URL and through A\'s', async () => {
    const store = freshStore('postgres');
    const dirB = mkdtempSync(path.join(tmpdir(), 'parley-test-b-'));
    const env = { PARLEY_RECORDING_STORE: 'database' };
    const a = await startServer({ store, env });
    // B knows A's bootstrap key only (b.key is not in the store): requests to B carry a.key.
    const b = await startServer({ store, env: { ...env, PARLEY_DATA_DIR: dirB, PARLEY_BOOTSTRAP_KEY: a.key } });
    try {
      const { callId, call } = await recordedCall(a);
      expect(call.duration).toBeGreaterThan(2);
      const sizes: Record<string, number> = {};
      for (const channel of ['mono', 'dual'] as const) {
        const fromA = await download(a, callId, channel);
        sizes[channel] = fromA.bytes.length;
        const fromB = await download(b, callId, channel, a.key);
        expect(fromB.bytes.equals(fromA.bytes)).toBe(true);
        expectCallWav(fromB.bytes, channel === 'mono' ? 1 : 2, call.duration);
        // A's signed URL works on B (the signing key is in the store), and a tampered one does not.
        const crossed = new URL(fromA.url);
        crossed.port = String(b.port);
        const viaB = await fetch(crossed);
        expect(viaB.status).toBe(200);
        expect(Buffer.from(await viaB.arrayBuffer()).equals(fromA.bytes)).toBe(true);
        crossed.searchParams.set('signature', crossed.searchParams.get('signature')!.replace(/^./, (ch) => (ch === 'a' ? 'b' : 'a')));
        expect((await fetch(crossed)).status).toBe(403);
      }
      // The wire's download-url route on B too.
      const dl = await b.request('GET', `${A}/conversation/${callId}/recording/download-url`, { key: a.key });
      expect(dl.status, dl.text).toBe(200);
      const wire = await fetch(dl.body.data.presignedUrl);
      expect(wire.status).toBe(200);
      expect(Buffer.from(await wire.arrayBuffer()).equals((await download(a, callId, 'mono')).bytes)).toBe(true);
      // Kept in the store, not in A's data dir.
      const rows = await objectRows(store, callId);
      expect(rows.map((r) => [r.key, Number(r.size)])).toEqual([
        [keyOf(call.recordingDualUrl), sizes.dual],
        [keyOf(call.recordingUrl), sizes.mono],
      ]);
      expect(existsSync(path.join(store.dataDir, 'recordings'))).toBe(false);
      expect(existsSync(path.join(dirB, 'recordings'))).toBe(false);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await store.cleanup();
      rmSync(dirB, { recursive: true, force: true });
    }
  }, 120_000);

  it('a server on PostgreSQL and Redis without PARLEY_RECORDING_STORE warns that recordings stay in its data dir', async () => {
    const store = freshStore('postgres');
    const server = await startServer({ store, env: { PARLEY_REDIS_URL: 'redis://127.0.0.1:6379' } });
    try {
      await server.waitForLog(/PARLEY_RECORDING_STORE=database/);
    } finally {
      await server.stop();
      await store.cleanup();
    }
  }, 60_000);
});

describe.each(testDialects())('the database recording store on %s', (dialect) => {
  it('serves recordings from the store on one server, and still serves those it wrote as files before the switch', async () => {
    const store = freshStore(dialect);
    let server = await startServer({ store });
    try {
      // Before: the files store (the default).
      const before = await recordedCall(server);
      const beforeKey = keyOf(before.call.recordingUrl);
      const file = readFileSync(path.join(store.dataDir, 'recordings', beforeKey));
      expect((await download(server, before.callId, 'mono')).bytes.equals(file)).toBe(true);
      await server.stop();

      server = await startServer({ store, env: { PARLEY_RECORDING_STORE: 'Database' } });
      // The earlier recording, from the files it was written to.
      expect((await download(server, before.callId, 'mono')).bytes.equals(file)).toBe(true);
      // A new one goes to the store, whole.
      const after = await recordedCall(server);
      const afterKey = keyOf(after.call.recordingUrl);
      expect(existsSync(path.join(store.dataDir, 'recordings', afterKey))).toBe(false);
      const mono = await download(server, after.callId, 'mono');
      expectCallWav(mono.bytes, 1, after.call.duration);
      const [row] = await storeSql(store, 'SELECT bytes, size FROM recording_objects WHERE key = $1', [afterKey]);
      expect(Number(row?.size)).toBe(mono.bytes.length);
      expect(Buffer.from(row?.bytes as Buffer).equals(mono.bytes)).toBe(true);
      expectCallWav((await download(server, after.callId, 'dual')).bytes, 2, after.call.duration);
      expect((await objectRows(store, before.callId)).length).toBe(0);
    } finally {
      await server.stop();
      await store.cleanup();
    }
  }, 120_000);

  it('stores and reads objects larger than one read slice whole, and a second put replaces the first', async () => {
    const store = freshStore(dialect);
    try {
      await withStore(store, async (db) => {
        const objects = new DatabaseObjectStore(db, randomBytes(32));
        const key = 'org_1/CALL-1795451257102-731734/dual.wav';
        const first = randomBytes(20 * 1024 * 1024 + 7);
        await objects.put(key, first);
        expect((await objects.get(key))?.equals(first)).toBe(true);
        const second = randomBytes(9 * 1024 * 1024);
        await objects.put(key, second);
        expect((await objects.get(key))?.equals(second)).toBe(true);
        const small = randomBytes(1000);
        await objects.put('org_1/CALL-1795451257102-731734/mono.wav', small);
        expect((await objects.get('org_1/CALL-1795451257102-731734/mono.wav'))?.equals(small)).toBe(true);
        expect(await objects.get('org_1/CALL-1795451257102-000000/mono.wav')).toBeNull();
        await expect(objects.put('org_1/../../etc/passwd', small)).rejects.toThrow('bad object key');
        await expect(objects.get('org_1/CALL-1/other.bin')).rejects.toThrow('bad object key');
        // Signed with the secret it was given: another store's secret does not verify.
        const { expires, signature } = objects.sign(key, 2_000_000_000);
        expect(objects.verify(key, expires, signature, 1_000)).toBe(true);
        expect(new DatabaseObjectStore(db, randomBytes(32)).verify(key, expires, signature, 1_000)).toBe(false);
      });
    } finally {
      await store.cleanup();
    }
  }, 60_000);

  it('reads a file written before the switch when the store has no row for it', async () => {
    const store = freshStore(dialect);
    try {
      const root = path.join(store.dataDir, 'recordings');
      const key = 'org_1/CALL-1795451257102-abcdef/mono.wav';
      mkdirSync(path.join(root, 'org_1/CALL-1795451257102-abcdef'), { recursive: true });
      writeFileSync(path.join(root, key), Buffer.from('earlier'));
      await withStore(store, async (db) => {
        expect((await new DatabaseObjectStore(db, randomBytes(32), root).get(key))?.toString()).toBe('earlier');
        expect(await new DatabaseObjectStore(db, randomBytes(32)).get(key)).toBeNull();
      });
    } finally {
      await store.cleanup();
    }
  });
});

describe('PARLEY_RECORDING_STORE', () => {
  it('is files or database (any case); unset leaves the default; anything else is refused', () => {
    expect(loadSettings({}).recordingStore).toBeUndefined();
    expect(loadSettings({ PARLEY_RECORDING_STORE: 'database' }).recordingStore).toBe('database');
    expect(loadSettings({ PARLEY_RECORDING_STORE: ' FILES ' }).recordingStore).toBe('files');
    expect(() => loadSettings({ PARLEY_RECORDING_STORE: 's3' })).toThrow('PARLEY_RECORDING_STORE must be files or database');
    expect(() => loadSettings({ PARLEY_RECORDING_STORE: 'db' })).toThrow('PARLEY_RECORDING_STORE must be files or database');
  });

  it('a server with a bad value refuses to start and says why', async () => {
    const store = freshStore('sqlite');
    try {
      const env = { ...process.env, HOST: '127.0.0.1', PORT: '0', PARLEY_SIP_PORT: '0', PARLEY_WARM_MODELS: 'false', ...store.env, PARLEY_RECORDING_STORE: 'bucket' };
      const proc = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
      proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      // 'close' comes after the output is read to its end ('exit' may come before).
      const [code] = (await once(proc, 'close')) as [number | null];
      clearTimeout(timer);
      expect(code, out).toBe(1);
      expect(out).toContain('PARLEY_RECORDING_STORE must be files or database');
      expect(out).not.toContain('"listening"');
    } finally {
      await store.cleanup();
    }
  }, 60_000);
});

describe('a recording that cannot be saved', () => {
  it('leaves the call without a recording; its record and events are still finished', async () => {
    const store = freshStore('sqlite');
    // `<data dir>/recordings` is a file: the files store cannot make the call's directory under it.
    writeFileSync(path.join(store.dataDir, 'recordings'), 'not a directory');
    const server = await startServer({ store });
    try {
      const { call } = await agentEndedCall(server);
      expect(call.status).toBe('completed');
      expect(call.recordingUrl ?? null).toBeNull();
      expect(call.transcript.length).toBeGreaterThan(0);
      await server.waitForLog(/could not save the recording/);
    } finally {
      await server.stop();
      await store.cleanup();
    }
  }, 60_000);
});
