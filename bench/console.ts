// Benchmark: the console in Debian's Chromium (npm run bench:console; issue 16).
//  1. Load time to interactive, cold (a new browser context: empty cache, no cookie) and warm (the same page loaded
//     again: cached assets revalidated by ETag), BENCH_LOADS rounds interleaved: from navigation start
//     (performance.timeOrigin) to the sign-in form's key field being there, and, signed in, to the agents list
//     rendered. Read inside the page (performance.now() when the element appeared), so the browser's own start-up
//     is not counted.
//  2. What the browser downloads for a cold signed-in load of the agents list: encoded body and header bytes of
//     every response (Playwright's request.sizes()).
//  3. "Talk" latency, side by side in one run: the same agent (a workflow agent that answers every turn with one
//     sentence) and the same caller sentences, BENCH_TALK_ROUNDS rounds alternating
//       - the browser: Chromium's fake microphone plays a WAV (the opening's length of silence, then each sentence
//         followed by BENCH_GAP_S of silence); the console's own per-turn figure: end of speech as the page hears it
//         (last 20 ms block above -45 dBFS) -> the first agent audio of the reply scheduled to play;
//       - the raw WebSocket: test/support/agent-client.ts streams the same sentences at real-time pace at 24 kHz (the
//         rate the console's sessions use); end of speech (sentences trimmed at -45 dBFS) -> the first
//         output_audio.delta arriving.
//     The browser's figure includes its capture (20 ms blocks), its playback scheduling (at least 20 ms ahead) and
//     the page's own work; the difference of the medians is what the console adds.
// Env: BENCH_LOADS (10), BENCH_TALK_ROUNDS (3; 0 skips part 3), BENCH_GAP_S (6), BENCH_DIALECT (sqlite).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import wavefile from 'wavefile';
import { chromium } from 'playwright-core';
import { intEnv, stopAndCollectProblems, UNCAPPED_SESSIONS } from './lib/harness.js';
import { printTable, quantile, resultPath } from './lib/report.js';
import { CALLER_SENTENCES, closeCaller, createBenchAgent, isAssistantFinal, speechEndSamples } from './lib/voice-agent.js';
import { AgentCaller, speech } from '../test/support/agent-client.js';
import { CHROMIUM, CHROMIUM_ARGS, launchBrowser } from '../test/support/browser.js';
import { freshStore, startServer, type Dialect } from '../test/support/server.js';

const LOADS = intEnv('BENCH_LOADS', 10, 1);
const ROUNDS = intEnv('BENCH_TALK_ROUNDS', 3, 0);
const GAP_S = intEnv('BENCH_GAP_S', 6, 2);
const DIALECT = (process.env.BENCH_DIALECT ?? 'sqlite') as Dialect;
const TURNS = 4;
const WS_RATE = 24000;
const A = '/atoms/v1';
const started = performance.now();
const log = (m: string) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${m}\n`);
const r1 = (x: number) => Math.round(x * 10) / 10;
const stats = (xs: number[]) => ({ n: xs.length, p50: r1(quantile(xs, 0.5)), p95: r1(quantile(xs, 0.95)), min: r1(Math.min(...xs)), max: r1(Math.max(...xs)) });

const store = freshStore(DIALECT);
const server = await startServer({ store, env: { ...UNCAPPED_SESSIONS, PARLEY_WARM_MODELS: 'true', PARLEY_RATE_LIMIT_PER_MINUTE: '1000000' } });
const home = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-console-'));
const result: Record<string, unknown> = { benchmark: 'console', chromium: CHROMIUM, cpus: os.cpus().length, node: process.version, timestamp: new Date().toISOString() };
try {
  const agentId = await createBenchAgent(server, 'Console bench');
  const sentences = CALLER_SENTENCES.slice(0, TURNS);

  // 1 and 2: loads.
  log(`loads: ${LOADS} rounds, cold and warm`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    env: { ...process.env, HOME: home },
  });
  const at = (page: import('playwright-core').Page, selector: string) =>
    page.waitForSelector(selector).then(() => page.evaluate(() => performance.now()));
  const load = { coldSignIn: [] as number[], warmSignIn: [] as number[], coldAgents: [] as number[], warmAgents: [] as number[] };
  let download: { responses: number; bodyBytes: number; headerBytes: number; files: string[] } | null = null;
  for (let i = 0; i < LOADS; i++) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await ctx.newPage();
    const responses: import('playwright-core').Response[] = [];
    page.on('response', (r) => responses.push(r));
    await page.goto(server.base + '/', { waitUntil: 'commit' });
    load.coldSignIn.push(await at(page, 'input[name=apiKey]'));
    await page.reload({ waitUntil: 'commit' });
    load.warmSignIn.push(await at(page, 'input[name=apiKey]'));
    await page.fill('input[name=apiKey]', server.key);
    await page.press('input[name=apiKey]', 'Enter');
    await page.waitForSelector('table.list, p.empty');
    // Signed in: a fresh context with the cookie only (nothing cached) is the cold case; a reload the warm one.
    const cookies = await ctx.cookies();
    const cold = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await cold.addCookies(cookies);
    const coldPage = await cold.newPage();
    const coldResponses: import('playwright-core').Response[] = [];
    coldPage.on('response', (r) => coldResponses.push(r));
    await coldPage.goto(server.base + '/', { waitUntil: 'commit' });
    load.coldAgents.push(await at(coldPage, 'table.list'));
    if (!download) {
      const sizes = await Promise.all(coldResponses.map(async (r) => ({ url: r.url(), ...(await r.request().sizes()) })));
      download = {
        responses: sizes.length,
        bodyBytes: sizes.reduce((a, s) => a + s.responseBodySize, 0),
        headerBytes: sizes.reduce((a, s) => a + s.responseHeadersSize, 0),
        files: sizes.map((s) => `${new URL(s.url).pathname} ${s.responseBodySize} B`),
      };
    }
    await coldPage.reload({ waitUntil: 'commit' });
    load.warmAgents.push(await at(coldPage, 'table.list'));
    await cold.close();
    await ctx.close();
  }
  await browser.close();
  result.load = Object.fromEntries(Object.entries(load).map(([k, v]) => [k, stats(v)]));
  result.download = download;

  // 3: talk latency.
  const pcm16k = await Promise.all(sentences.map((t) => speech(server, t, 16000)));
  const pcm24k = await Promise.all(sentences.map(async (t) => {
    const p = await speech(server, t, WS_RATE);
    return p.subarray(0, speechEndSamples(p, WS_RATE) * 2);
  }));
  const silence = (s: number, rate: number) => Buffer.alloc(Math.round(s * rate) * 2);
  const parts: Buffer[] = [silence(6, 16000)];
  for (const p of pcm16k) parts.push(p.subarray(0, speechEndSamples(p, 16000) * 2), silence(GAP_S, 16000));
  parts.push(silence(10, 16000));
  const pcm = Buffer.concat(parts);
  const wav = new wavefile.WaveFile();
  wav.fromScratch(1, 16000, '16', new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2));
  const mic = path.join(home, 'caller.wav');
  writeFileSync(mic, wav.toBuffer());

  const browserMs: number[] = [];
  const wsMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    log(`talk round ${round + 1}/${ROUNDS}: browser`);
    const b = await launchBrowser({ micWav: mic });
    try {
      const { page } = b;
      await page.goto(server.base + '/');
      await page.fill('input[name=apiKey]', server.key);
      await page.press('input[name=apiKey]', 'Enter');
      await page.waitForSelector('table.list, p.empty');
      await page.goto(`${server.base}/#/agents/${agentId}`);
      await page.getByLabel('Echo cancellation').uncheck();
      await page.getByRole('button', { name: 'Talk' }).click();
      const bars = page.locator('figure.latency svg g text');
      const deadline = Date.now() + (6 + TURNS * (GAP_S + 4) + 30) * 1000;
      while ((await bars.count()) < TURNS && Date.now() < deadline) await page.waitForTimeout(500);
      const values = (await bars.allTextContents()).map(Number);
      if (values.length < TURNS) log(`  only ${values.length} of ${TURNS} turns measured in the browser`);
      browserMs.push(...values);
      await page.getByRole('button', { name: 'Hang up' }).click().catch(() => undefined);
    } finally {
      await b.close();
    }
    log(`talk round ${round + 1}/${ROUNDS}: raw WebSocket`);
    const token = (await server.request('POST', `${A}/conversation/register-call`, { body: { agent_id: agentId, mode: 'webcall' } })).body.data.access_token as string;
    const c = new AgentCaller(`ws://127.0.0.1:${server.port}${A}/agent/connect?token=${token}`, WS_RATE);
    try {
      await c.opened;
      c.startMic();
      await c.nextFrame(isAssistantFinal, 0, 60_000, 'opening');
      for (const s of pcm24k) {
        const mark = c.frames.length;
        await c.say(s);
        // say() resolves once the last chunk is sent; that chunk's speech ends one chunk later at real-time pace.
        const spokenAt = performance.now() + c.chunkMs;
        await c.nextFrame(isAssistantFinal, mark, 60_000, 'reply');
        const first = c.frames.slice(mark).find((f) => f.type === 'output_audio.delta');
        if (first) wsMs.push(r1(first.at - spokenAt));
        await new Promise((r) => setTimeout(r, 1000));
      }
    } finally {
      await closeCaller(c);
    }
  }
  const b = stats(browserMs);
  const w = stats(wsMs);
  if (ROUNDS > 0) result.talk = { browser: b, rawWebSocket: w, browserMinusWsP50Ms: r1(b.p50 - w.p50), ratioP50: Math.round((b.p50 / w.p50) * 100) / 100, browserMs, wsMs };

  printTable('Console load time to interactive (ms from navigation start, measured in the page)', ['case', 'n', 'p50', 'p95', 'min', 'max'], [
    ...Object.entries(load).map(([k, v]) => {
      const s = stats(v);
      return [k, String(s.n), String(s.p50), String(s.p95), String(s.min), String(s.max)];
    }),
  ], 1);
  if (download) console.log(`\nCold signed-in load: ${download.responses} responses, ${download.bodyBytes} B of bodies (encoded), ${download.headerBytes} B of headers\n  ${download.files.join('\n  ')}`);
  if (ROUNDS > 0) {
    printTable(`Talk latency, end of the caller's speech -> first agent audio (ms), ${ROUNDS} rounds x ${TURNS} turns each way`, ['path', 'turns', 'p50', 'p95', 'min', 'max'], [
      ['browser (console)', String(b.n), String(b.p50), String(b.p95), String(b.min), String(b.max)],
      ['raw WebSocket', String(w.n), String(w.p50), String(w.p95), String(w.min), String(w.max)],
    ], 1);
    console.log(`\nbrowser - raw WebSocket, p50: ${r1(b.p50 - w.p50)} ms (ratio ${(b.p50 / w.p50).toFixed(2)})`);
  } else console.log('\ntalk latency not measured (BENCH_TALK_ROUNDS=0)');
} finally {
  const { problems } = await stopAndCollectProblems(server);
  result.serverProblems = problems;
  await store.cleanup();
  rmSync(home, { recursive: true, force: true });
  writeFileSync(resultPath('console'), `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(process.cwd(), resultPath('console'))}`);
}
