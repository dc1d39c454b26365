// Egress policy: which addresses outbound requests may reach (every range, mapped IPv6, resolved names, redirects),
// and POST /stt/ refusing metadata and (when private egress is off) loopback URLs with a clear 400.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EgressError, checkEgress, classifyAddress, safeFetch, type Resolver } from '../engine/net/egress.js';
import { serverForSuite } from './support/suite.js';

const W = '/waves/v1';
const check = (url: string, allowPrivate: boolean, resolve?: Resolver) => checkEgress(new URL(url), { allowPrivate, resolve });

async function refusal(promise: Promise<unknown>): Promise<EgressError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, 'expected an EgressError').toBeInstanceOf(EgressError);
  return err as EgressError;
}

describe('egress policy: address classes', () => {
  it('classifies every range, IPv4-mapped and other IPv4-carrying IPv6 forms included', () => {
    const table: Record<string, string> = {
      '8.8.8.8': 'public',
      '93.184.216.34': 'public',
      '169.254.169.254': 'metadata',
      '100.100.100.200': 'metadata',
      '168.63.129.16': 'metadata',
      '169.254.0.1': 'link-local',
      '169.254.255.255': 'link-local',
      '169.255.0.1': 'public',
      '10.0.0.1': 'private',
      '10.255.255.255': 'private',
      '11.0.0.1': 'public',
      '172.16.0.1': 'private',
      '172.31.255.255': 'private',
      '172.15.255.255': 'public',
      '172.32.0.1': 'public',
      '192.168.0.1': 'private',
      '192.169.0.1': 'public',
      '100.64.0.1': 'private',
      '100.127.255.255': 'private',
      '100.128.0.1': 'public',
      '198.18.0.1': 'private',
      '127.0.0.1': 'loopback',
      '127.255.255.254': 'loopback',
      '0.0.0.0': 'unspecified',
      '0.1.2.3': 'unspecified',
      '224.0.0.1': 'non-unicast',
      '255.255.255.255': 'non-unicast',
      '::': 'unspecified',
      '::1': 'loopback',
      'fe80::1': 'link-local',
      'febf::1': 'link-local',
      'fe80::1%eth0': 'link-local',
      'fd00:ec2::254': 'metadata',
      'fc00::1': 'private',
      'fd12:3456:789a::1': 'private',
      'fec0::1': 'private',
      'ff02::1': 'non-unicast',
      '2606:4700:4700::1111': 'public',
      '::ffff:127.0.0.1': 'loopback',
      '::ffff:7f00:1': 'loopback',
      '::ffff:10.1.2.3': 'private',
      '::ffff:169.254.169.254': 'metadata',
      '::ffff:a9fe:a9fe': 'metadata',
      '::ffff:8.8.8.8': 'public',
      '::127.0.0.1': 'loopback',
      '64:ff9b::a9fe:a9fe': 'metadata',
      '64:ff9b::c0a8:101': 'private',
      '2002:7f00:1::': 'loopback',
      '2002:0808:0808::': 'public',
    };
    for (const [address, kind] of Object.entries(table)) expect(classifyAddress(address), address).toBe(kind);
    expect(classifyAddress('example.com')).toBeNull();
    expect(classifyAddress('1.2.3')).toBeNull();
  });
});

describe('egress policy: checkEgress', () => {
  it('refuses schemes other than http and https', async () => {
    for (const url of ['ftp://example.com/a.wav', 'file:///etc/passwd', 'gopher://example.com/', 'data:text/plain,hi', 'ws://example.com/']) {
      const err = await refusal(check(url, true));
      expect(err.reason).toBe('scheme');
      expect(err.message).toMatch(/only http and https/);
    }
  });

  it('refuses link-local and cloud metadata addresses and names even when private egress is allowed', async () => {
    const always = [
      'http://169.254.169.254/latest/meta-data/',
      'http://169.254.10.20/',
      'http://[fd00:ec2::254]/',
      'http://[fe80::1]/',
      'http://[::ffff:169.254.169.254]/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://100.100.100.200/',
      'http://168.63.129.16/',
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://METADATA.google.internal./',
      'http://224.0.0.1/',
    ];
    for (const url of always) {
      const err = await refusal(check(url, true));
      expect(['metadata', 'link-local', 'non-unicast'], url).toContain(err.reason);
      expect(err.message, url).toMatch(/never allowed/);
    }
    // Also when a name resolves there.
    const err = await refusal(check('http://imds.example.test/', true, async () => [{ address: '169.254.169.254', family: 4 }]));
    expect(err.message).toMatch(/imds\.example\.test resolves to 169\.254\.169\.254, which is a cloud metadata address/);
  });

  it('refuses private, loopback, CGNAT and unspecified addresses unless private egress is allowed', async () => {
    const privateUrls = [
      'http://10.0.0.1/',
      'http://172.16.5.4/',
      'http://172.31.255.255/',
      'http://192.168.1.10:8080/',
      'http://100.64.0.1/',
      'http://127.0.0.1:9/',
      'http://127.42.0.1/',
      'http://2130706433/', // 127.0.0.1 written as one number
      'http://0x7f.1/', // and in hex
      'http://0.0.0.0/',
      'http://[::]/',
      'http://[::1]/',
      'http://[fc00::1]/',
      'http://[fd12:3456::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:10.0.0.1]/',
      'http://[64:ff9b::7f00:1]/',
      'http://localhost:8080/',
      'http://api.localhost/',
    ];
    for (const url of privateUrls) {
      const err = await refusal(check(url, false));
      expect(['private', 'loopback', 'unspecified'], url).toContain(err.reason);
      expect(err.message, url).toMatch(/does not allow requests to private networks/);
      // (*.localhost need not resolve on every system: the allowed case answers loopback for names.)
      await expect(check(url, true, async () => [{ address: '127.0.0.1', family: 4 }]), url).resolves.toBeUndefined();
    }
    for (const url of ['http://8.8.8.8/', 'https://[2606:4700:4700::1111]/', 'http://172.32.0.1/', 'http://100.128.0.1/']) {
      await expect(check(url, false), url).resolves.toBeUndefined();
    }
  });

  it('resolves names and checks every address: one loopback answer among public ones is refused', async () => {
    const resolver: Resolver = async (host) => {
      expect(host).toBe('api.example.test');
      return [
        { address: '93.184.216.34', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ];
    };
    const err = await refusal(check('https://api.example.test/hook', false, resolver));
    expect(err.reason).toBe('loopback');
    expect(err.message).toBe('refused by the egress policy: api.example.test resolves to 127.0.0.1, which is a loopback address; this server does not allow requests to private networks');
    const mapped = await refusal(check('https://v6.example.test/', false, async () => [{ address: '::ffff:192.168.0.7', family: 6 }]));
    expect(mapped.reason).toBe('private');
    await expect(check('https://api.example.test/hook', true, resolver)).resolves.toBeUndefined();
    await expect(check('https://public.example.test/', false, async () => [{ address: '93.184.216.34', family: 4 }])).resolves.toBeUndefined();
  });

  it('uses the system resolver by default; a name that does not resolve is a lookup error, not a refusal', async () => {
    await expect(check('http://localhost/', true)).resolves.toBeUndefined();
    const err = await check('http://no-such-host.invalid/', false).then(
      () => null,
      (e: unknown) => e as NodeJS.ErrnoException,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(EgressError);
    expect(String(err?.code)).toMatch(/ENOTFOUND|EAI_AGAIN|EAI_NODATA/);
  });
});

describe('egress policy: safeFetch', () => {
  let receiver: http.Server;
  let port = 0;
  const hits: string[] = [];
  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      const url = req.url ?? '/';
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (url === '/ok') res.writeHead(200, { 'content-type': 'text/plain' }).end(`ok ${req.method} ${body}`);
        else if (url === '/to-ok') res.writeHead(302, { location: '/ok' }).end();
        else if (url === '/see-other') res.writeHead(303, { location: '/ok' }).end();
        else if (url === '/to-metadata') res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
        else if (url === '/to-file') res.writeHead(301, { location: 'file:///etc/passwd' }).end();
        else if (url.startsWith('/loop/')) res.writeHead(302, { location: `/loop/${Number(url.slice(6)) + 1}` }).end();
        else res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => receiver.close(() => r())));
  const base = () => `http://127.0.0.1:${port}`;

  it('fetches when allowed and follows redirects, checking each hop again', async () => {
    const res = await safeFetch(`${base()}/to-ok`, {}, { allowPrivate: true });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok GET ');
    // 303 turns a POST into a GET without its body, as fetch does.
    const seeOther = await safeFetch(`${base()}/see-other`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } }, { allowPrivate: true });
    expect(await seeOther.text()).toBe('ok GET ');
    const posted = await safeFetch(`${base()}/ok`, { method: 'POST', body: 'payload' }, { allowPrivate: true });
    expect(await posted.text()).toBe('ok POST payload');

    const meta = await refusal(safeFetch(`${base()}/to-metadata`, {}, { allowPrivate: true }));
    expect(meta.reason).toBe('metadata');
    const file = await refusal(safeFetch(`${base()}/to-file`, {}, { allowPrivate: true }));
    expect(file.reason).toBe('scheme');
    await expect(safeFetch(`${base()}/loop/0`, {}, { allowPrivate: true })).rejects.toThrow(/too many redirects \(more than 3\)/);
    expect(hits.filter((h) => h.startsWith('GET /loop/'))).toEqual(['GET /loop/0', 'GET /loop/1', 'GET /loop/2', 'GET /loop/3']);
    // maxRedirects 0 hands back the redirect itself.
    const manual = await safeFetch(`${base()}/to-metadata`, {}, { allowPrivate: true, maxRedirects: 0 });
    expect(manual.status).toBe(302);
    await manual.body?.cancel();
  });

  it('checks the address it connects to: a name that rebinds to loopback after the check is still refused', async () => {
    const before = hits.length;
    await refusal(safeFetch(`${base()}/ok`, {}, { allowPrivate: false }));
    await refusal(safeFetch(`http://user:pw@example.com/`, {}, { allowPrivate: true }));

    let lookups = 0;
    const rebinding: Resolver = async () => (lookups++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    const url = `http://rebind.example.test:${port}/ok`;
    await expect(check(url, false, rebinding)).resolves.toBeUndefined();
    const err = await refusal(safeFetch(url, {}, { allowPrivate: false, resolve: rebinding }));
    expect(err.message).toMatch(/rebind\.example\.test resolves to 127\.0\.0\.1, which is a loopback address/);
    expect(lookups).toBe(2);
    expect(hits.length).toBe(before);

    // With private egress allowed, the resolved (checked) address is the one connected to.
    const allowed = await safeFetch(url, {}, { allowPrivate: true, resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    expect(await allowed.text()).toBe('ok GET ');
  });

  it('passes network failures through and honours the abort signal', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await expect(safeFetch(`http://127.0.0.1:${closedPort}/`, {}, { allowPrivate: true })).rejects.toMatchObject({ code: 'ECONNREFUSED' });

    const hang = http.createServer(() => {});
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
    const started = Date.now();
    await expect(safeFetch(`http://127.0.0.1:${(hang.address() as AddressInfo).port}/`, { signal: AbortSignal.timeout(200) }, { allowPrivate: true })).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(Date.now() - started).toBeLessThan(2000);
    hang.closeAllConnections();
    await new Promise<void>((r) => hang.close(() => r()));
  });
});

describe('POST /stt/ under the egress policy (private egress allowed, the test default)', () => {
  const suite = serverForSuite('sqlite');
  let receiver: http.Server;
  let port = 0;
  let hits = 0;
  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      hits++;
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/iam/' }).end();
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => receiver.close(() => r())));

  it('refuses a url at the metadata address, directly or through a redirect, and a metadata webhook_url', async () => {
    const direct = await suite.server.request('POST', `${W}/stt/?model=pulse&language=en`, { body: { url: 'http://169.254.169.254/latest/meta-data/' } });
    expect(direct.status).toBe(400);
    expect(direct.body).toEqual({ error: 'url: refused by the egress policy: 169.254.169.254 is a cloud metadata address (never allowed)' });

    const named = await suite.server.request('POST', `${W}/stt/?model=pulse&language=en`, { body: { url: 'http://metadata.google.internal/computeMetadata/v1/' } });
    expect(named.status).toBe(400);
    expect(named.body.error).toMatch(/^url: refused by the egress policy: metadata\.google\.internal is a cloud metadata address/);

    const redirected = await suite.server.request('POST', `${W}/stt/?model=pulse&language=en`, { body: { url: `http://127.0.0.1:${port}/audio.wav` } });
    expect(redirected.status).toBe(400);
    expect(redirected.body.error).toMatch(/^url: refused by the egress policy: 169\.254\.169\.254 is a cloud metadata address/);
    expect(hits).toBe(1);

    const hook = await suite.server.request('POST', `${W}/stt/?model=pulse&language=en&webhook_url=${encodeURIComponent('http://[fd00:ec2::254]/hook')}`, {
      raw: Buffer.from('RIFF'),
      headers: { 'content-type': 'audio/wav' },
    });
    expect(hook.status).toBe(400);
    expect(hook.body.error).toMatch(/^webhook_url: refused by the egress policy: fd00:ec2::254 is a cloud metadata address/);

    const legacy = await suite.server.request('POST', `${W}/pulse/get_text?language=en`, { body: { url: 'http://169.254.169.254/' } });
    expect(legacy.status).toBe(400);
    expect(legacy.body.errors).toMatch(/^url: refused by the egress policy/);
  });
});

describe('POST /stt/ with PARLEY_ALLOW_PRIVATE_EGRESS=0', () => {
  const suite = serverForSuite('sqlite', { PARLEY_ALLOW_PRIVATE_EGRESS: '0' });
  let receiver: http.Server;
  let port = 0;
  let hits = 0;
  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      hits++;
      res.writeHead(200, { 'content-type': 'audio/wav' }).end(Buffer.alloc(100));
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => receiver.close(() => r())));

  it('refuses loopback and private urls (literal or by name) with a 400 that says why, and never connects', async () => {
    const cases: [string, RegExp][] = [
      [`http://127.0.0.1:${port}/audio.wav`, /^url: refused by the egress policy: 127\.0\.0\.1 is a loopback address; this server does not allow requests to private networks$/],
      [`http://localhost:${port}/audio.wav`, /^url: refused by the egress policy: localhost is a loopback address/],
      [`http://[::ffff:127.0.0.1]:${port}/audio.wav`, /^url: refused by the egress policy: ::ffff:7f00:1 is a loopback address/],
      ['http://10.1.2.3/audio.wav', /^url: refused by the egress policy: 10\.1\.2\.3 is a private network address/],
    ];
    for (const [url, pattern] of cases) {
      const res = await suite.server.request('POST', `${W}/stt/?model=pulse&language=en`, { body: { url } });
      expect(res.status, url).toBe(400);
      expect(res.body.error, url).toMatch(pattern);
    }
    const hook = await suite.server.request('POST', `${W}/stt/?model=pulse&language=en&webhook_url=${encodeURIComponent(`http://127.0.0.1:${port}/hook`)}`, {
      raw: Buffer.from('RIFF'),
      headers: { 'content-type': 'audio/wav' },
    });
    expect(hook.status).toBe(400);
    expect(hook.body.error).toMatch(/^webhook_url: refused by the egress policy: 127\.0\.0\.1 is a loopback address/);
    expect(hits).toBe(0);
    expect((await suite.server.request('GET', '/health')).status).toBe(200);
  });
});
