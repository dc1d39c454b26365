// Debian's Chromium driven by playwright-core, kept on loopback (design.md's flags), with a temporary HOME, the
// page's console errors collected, and a cheap check that a screenshot is not blank.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { PNG } from 'pngjs';

export const CHROMIUM = '/usr/bin/chromium';
/** Headless in CI, and on loopback only (design.md): no lookups of update or account hosts. */
export const CHROMIUM_ARGS = [
  '--disable-dev-shm-usage',
  '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

export interface TestBrowser {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught exceptions of the pages, in order. */
  errors: string[];
  close(): Promise<void>;
}

/** Launches Chromium (a fake microphone playing `micWav` once when given) and opens one page. */
export async function launchBrowser(options: { micWav?: string; viewport?: { width: number; height: number } } = {}): Promise<TestBrowser> {
  const home = mkdtempSync(path.join(os.tmpdir(), 'parley-chromium-'));
  const args = [...CHROMIUM_ARGS];
  if (options.micWav) args.push('--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${options.micWav}%noloop`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args, env: { ...process.env, HOME: home } });
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 800 } });
  const errors: string[] = [];
  const watch = (p: Page) => {
    p.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    p.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  };
  context.on('page', watch);
  const page = await context.newPage();
  return {
    browser,
    context,
    page,
    errors,
    async close() {
      await browser.close().catch(() => undefined);
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Standard deviation of the screenshot's pixel luminance: 0 for a blank page (design.md). */
export async function screenshotDeviation(page: Page): Promise<number> {
  const png = PNG.sync.read(await page.screenshot({ type: 'png' }));
  let sum = 0;
  let sq = 0;
  const n = png.width * png.height;
  for (let i = 0; i < n; i++) {
    const o = i * 4;
    const y = 0.2126 * (png.data[o] as number) + 0.7152 * (png.data[o + 1] as number) + 0.0722 * (png.data[o + 2] as number);
    sum += y;
    sq += y * y;
  }
  const mean = sum / n;
  return Math.sqrt(Math.max(0, sq / n - mean * mean));
}
