// The console in a real browser (Debian's Chromium through playwright-core) against the real server: sign in with a
// key, create an agent from a template, edit and publish it twice, compare the revisions, resolve a draft conflict,
// the CSRF refusal, sign out, and the phone-sized layout. Every page's screenshot must not be blank, and the
// console's own JavaScript must log no error. One store dialect (the API suites cover both; this one checks the UI).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import wavefile from 'wavefile';
import { speech } from './support/agent-client.js';
import { CHROMIUM, launchBrowser, screenshotDeviation, type TestBrowser } from './support/browser.js';
import { testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';

const A = '/atoms/v1';
/** Chromium's own log lines about HTTP answers (a 401 before signing in, the 409 of a conflict): not our script's errors. */
const ownErrors = (errors: string[]) => errors.filter((e) => !/Failed to load resource: the server responded with a status of (401|403|404|409)/.test(e));

describe.skipIf(!existsSync(CHROMIUM))('console in Chromium', () => {
  const suite = serverForSuite(testDialects()[0] ?? 'sqlite');
  let b: TestBrowser;
  const serverErrors: string[] = [];

  beforeAll(async () => {
    b = await launchBrowser();
    b.context.on('response', (r) => {
      if (r.status() >= 500) serverErrors.push(`${r.status()} ${r.url()}`);
    });
  }, 60_000);
  afterAll(async () => {
    await b?.close();
  });

  const expectRendered = async () => expect(await screenshotDeviation(b.page)).toBeGreaterThan(1);

  it('signs in with a key (Enter submits), refusing a wrong one', async () => {
    const { page } = b;
    await page.goto(suite.server.base + '/');
    const key = page.getByLabel('API key');
    await expect(key.getAttribute('type')).resolves.toBe('password');
    await expectRendered();
    await key.fill('sk_not_a_real_key_at_all_0000000000');
    await key.press('Enter');
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/invalid API key.*401/i);
    await key.fill(suite.server.key);
    await key.press('Enter');
    await page.getByRole('heading', { name: 'Agents' }).waitFor();
    const cookies = await b.context.cookies();
    const session = cookies.find((c) => c.name === 'parley_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    // The key itself is kept nowhere in the page.
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie)).not.toContain(suite.server.key);
    await expectRendered();
  }, 60_000);

  it('creates an agent from a template, edits and publishes it twice, and shows the diff of the two revisions', async () => {
    const { page } = b;
    await page.getByRole('button', { name: 'New agent' }).click();
    await page.getByLabel('Name').fill('Console desk');
    await page.getByRole('radio', { name: /Front desk receptionist/ }).check();
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Console desk' }).waitFor();
    const agentId = decodeURIComponent(new URL(page.url()).hash.split('/')[2] as string);
    await expectRendered();

    const publish = async (prompt: string, label: string, count: number) => {
      await page.getByLabel('Prompt').fill(prompt);
      await page.getByRole('button', { name: 'Save draft' }).click();
      await page.getByText(/edit\(s\) in this draft/).waitFor();
      await page.getByLabel('Revision label').fill(label);
      await page.getByRole('button', { name: 'Publish draft' }).click();
      await page.getByRole('status').filter({ hasText: 'Published' }).waitFor();
      await page.locator('table.revisions tbody tr').nth(count - 1).waitFor();
    };
    await publish('You are the Console desk. Be brief.', 'first', 1);
    await publish('You are the Console desk. Be brief and kind.', 'second', 2);
    expect(await page.locator('table.revisions tbody tr').count()).toBe(2);

    // What the API says matches what the page did.
    const branches = (await suite.server.request('GET', `${A}/agent/${agentId}/branches`)).body.data.branches;
    const main = branches[0].branch._id as string;
    const revisions = (await suite.server.request('GET', `${A}/agent/${agentId}/branches/${main}/revisions`)).body.data.revisions;
    expect(revisions.map((r: { label: string }) => r.label)).toEqual(['second', 'first']);
    expect((await suite.server.request('GET', `${A}/agent/${agentId}`)).body.data.prompt).toBe('You are the Console desk. Be brief and kind.');

    await page.getByRole('checkbox', { name: 'compare revision 1' }).check();
    await page.getByRole('checkbox', { name: 'compare revision 2' }).check();
    await page.getByRole('button', { name: 'Compare selected' }).click();
    const diff = page.getByRole('table', { name: 'Differences' });
    await diff.waitFor();
    const row = diff.locator('tr', { hasText: 'prompt' });
    expect(await row.locator('td.old').textContent()).toBe('You are the Console desk. Be brief.');
    expect(await row.locator('td.new').textContent()).toBe('You are the Console desk. Be brief and kind.');
    await expectRendered();
  }, 120_000);

  it('shows a draft conflict and re-reads, keeping the edits of this page', async () => {
    const { page } = b;
    const agentId = decodeURIComponent(new URL(page.url()).hash.split('/')[2] as string);
    const main = (await suite.server.request('GET', `${A}/agent/${agentId}/branches`)).body.data.branches[0].branch._id as string;
    // This page opens a draft, then someone else edits the same field through the API.
    await page.getByLabel('First message').fill('Hello from the console.');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByText('1 edit(s) in this draft').waitFor();
    const draft = (await suite.server.request('GET', `${A}/agent/${agentId}/branches/${main}/draft`)).body.data.latest.draftRevision as number;
    const theirs = await suite.server.request('PUT', `${A}/agent/${agentId}/branches/${main}/draft`, { body: { firstMessage: 'Hello from the API.', expectedRevision: draft } });
    expect(theirs.status).toBe(200);
    await page.getByLabel('First message').fill('Hello again from the console.');
    await page.getByRole('button', { name: 'Save draft' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('Someone else changed this draft').waitFor();
    expect(await alert.textContent()).toContain('Hello from the API.');
    await page.getByRole('button', { name: 'Re-read and keep my edits' }).click();
    await alert.waitFor({ state: 'detached' });
    await page.getByText('Unsaved: firstMessage').waitFor();
    expect(await page.getByLabel('First message').inputValue()).toBe('Hello again from the console.');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByText('3 edit(s) in this draft').waitFor();
    const after = (await suite.server.request('GET', `${A}/agent/${agentId}?draftId=${(await suite.server.request('GET', `${A}/agent/${agentId}/branches/${main}/draft`)).body.data.latest._id}`)).body.data;
    expect(after.firstMessage).toBe('Hello again from the console.');
  }, 60_000);

  it('refuses writes without the CSRF token, and a cross-site form post changes nothing', async () => {
    const { page } = b;
    const count = async () => (await suite.server.request('GET', `${A}/agent?offset=100`)).body.data.agents.length as number;
    const before = await count();
    // Same origin, the session cookie, no token: refused.
    const noToken = await page.evaluate(async (a) => {
      const r = await fetch(`${a}/agent`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'No token' }) });
      return { status: r.status, body: await r.json() };
    }, A);
    expect(noToken.status).toBe(403);
    expect(noToken.body).toMatchObject({ status: false });
    // Another origin's page posting a form to us. Same site (127.0.0.1, another port), so the browser does send the
    // SameSite=Strict cookie: the server's own check (no token, a foreign Origin) must refuse it.
    const evil = http.createServer((_req, res) => {
      res.setHeader('Content-Type', 'text/html');
      res.end(`<form id="f" method="POST" action="${suite.server.base}${A}/agent" enctype="application/x-www-form-urlencoded"><input name="name" value="Evil"></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    try {
      const evilPage = await b.context.newPage();
      const answered = evilPage.waitForResponse((r) => r.url().startsWith(`${suite.server.base}${A}/agent`));
      await evilPage.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`).catch(() => undefined);
      expect((await answered).status()).toBe(403);
      await evilPage.close();
    } finally {
      evil.close();
    }
    expect(await count()).toBe(before);
  }, 60_000);

  it('signs out: the cookie no longer works', async () => {
    const { page } = b;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    const status = await page.evaluate(async (a) => (await fetch(`${a}/agent`)).status, A);
    expect(status).toBe(401);
    expect(ownErrors(b.errors)).toEqual([]);
    expect(serverErrors).toEqual([]);
  }, 30_000);

  it('works on a phone-sized screen', async () => {
    const phone = await b.browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    try {
      const page = await phone.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(suite.server.base + '/');
      await page.getByLabel('API key').fill(suite.server.key);
      await page.getByLabel('API key').press('Enter');
      await page.getByRole('heading', { name: 'Agents' }).waitFor();
      await page.getByRole('link', { name: 'Console desk' }).waitFor();
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      expect(await screenshotDeviation(page)).toBeGreaterThan(1);
      expect(errors).toEqual([]);
    } finally {
      await phone.close();
    }
  }, 60_000);
});

describe.skipIf(!existsSync(CHROMIUM))('talking to an agent from the console (fake microphone)', () => {
  const suite = serverForSuite(testDialects()[0] ?? 'sqlite');
  let b: TestBrowser | undefined;
  let dir = '';
  afterAll(async () => {
    await b?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('streams the microphone, plays the agent back, shows the transcript and each turn\'s latency, then opens the call and its recording', async () => {
    const server = suite.server;
    // The caller: 14 s of silence (the agent's greeting plays meanwhile), a question, then silence (%noloop).
    const rate = 16000;
    const question = await speech(server, 'What are your opening hours?', rate);
    const silence = (s: number) => Buffer.alloc(Math.round(s * rate) * 2);
    const pcm = Buffer.concat([silence(14), question, silence(20)]);
    const wav = new wavefile.WaveFile();
    wav.fromScratch(1, rate, '16', new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2));
    dir = mkdtempSync(path.join(os.tmpdir(), 'parley-mic-'));
    const mic = path.join(dir, 'caller.wav');
    writeFileSync(mic, wav.toBuffer());
    const agentId = (await server.request('POST', `${A}/agent/from-template`, { body: { templateId: 'parley-demo', name: 'Talk demo' } })).body.data as string;

    b = await launchBrowser({ micWav: mic });
    const { page } = b;
    await page.goto(server.base + '/');
    await page.getByLabel('API key').fill(server.key);
    await page.getByLabel('API key').press('Enter');
    await page.getByRole('heading', { name: 'Agents' }).waitFor();
    await page.goto(`${server.base}/#/agents/${agentId}`);
    await page.getByRole('heading', { name: 'Talk demo' }).waitFor();
    // A fake microphone needs no echo cancellation (Chromium's processing changes its level for the first seconds).
    await page.getByLabel('Echo cancellation').uncheck();
    const sockets: string[] = [];
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await page.getByRole('button', { name: 'Talk' }).click();
    const transcript = page.getByRole('list', { name: 'Transcript' });
    await transcript.locator('li.assistant', { hasText: 'Bright Smile Dental' }).first().waitFor({ timeout: 30_000 });
    await transcript.locator('li.user', { hasText: /opening hours/i }).waitFor({ timeout: 60_000 });
    await transcript.locator('li.assistant:not(.partial)', { hasText: 'Monday to Friday' }).waitFor({ timeout: 30_000 });
    // The session was opened with a wct_ token, never the key.
    expect(sockets.length).toBe(1);
    expect(sockets[0]).toMatch(/\/agent\/connect\?token=wct_/);
    expect(sockets[0]).not.toContain(server.key);
    // The agent's audio was played, and the turn's latency was drawn.
    const played = Number(/([\d.]+) s/.exec((await page.getByLabel('Agent audio played').textContent()) ?? '')?.[1]);
    expect(played).toBeGreaterThan(8);
    const bars = page.locator('figure.latency svg rect.bar');
    await bars.first().waitFor();
    const latencyMs = Number(await page.locator('figure.latency svg g text').first().textContent());
    console.log(`console talk: end of the caller's speech -> first agent audio played ${latencyMs} ms; agent audio ${played} s`);
    expect(latencyMs).toBeGreaterThan(0);
    expect(latencyMs).toBeLessThan(60_000);
    expect(await screenshotDeviation(page)).toBeGreaterThan(1);

    await page.getByRole('button', { name: 'Hang up' }).click();
    await page.getByRole('link', { name: 'Open the call' }).click();
    const calls = page.getByRole('list', { name: 'Call transcript' });
    await calls.locator('li.user', { hasText: /opening hours/i }).waitFor({ timeout: 30_000 });
    const audio = page.getByLabel('Recording');
    await audio.waitFor({ timeout: 30_000 });
    const fetched = await page.evaluate(async () => {
      const src = (document.querySelector('audio') as HTMLAudioElement).src;
      const r = await fetch(src);
      return { status: r.status, type: r.headers.get('content-type'), bytes: (await r.arrayBuffer()).byteLength, sameOrigin: new URL(src).origin === location.origin };
    });
    expect(fetched).toMatchObject({ status: 200, sameOrigin: true });
    expect(fetched.type).toMatch(/audio\/(wav|x-wav)/);
    expect(fetched.bytes).toBeGreaterThan(100_000);
    expect(ownErrors(b.errors)).toEqual([]);
  }, 180_000);
});
