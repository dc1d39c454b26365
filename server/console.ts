// The console (console/): bundled with esbuild when the server starts (no build step, no CDN: everything comes from
// npm packages and our own code), kept in memory, and served at `/` with ETags and brotli/gzip when the browser
// accepts them.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, gzipSync, constants as zlib } from 'node:zlib';
import { build } from 'esbuild';
import type { HttpServer } from '../transports/http/server.js';
import { docs, type HttpRequest, type HttpResponse } from '../transports/http/types.js';

const DIR = fileURLToPath(new URL('../console/', import.meta.url));

interface Asset {
  type: string;
  body: Buffer;
  br: Buffer;
  gzip: Buffer;
  etag: string;
}

function asset(type: string, body: Buffer): Asset {
  return {
    type,
    body,
    br: brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }),
    gzip: gzipSync(body, { level: 9 }),
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
  };
}

/** Bundles the console: app.js (preact and our code, minified) and app.css; then the page that loads them. */
export async function buildConsole(atomsPrefix: string, wavesPrefix: string): Promise<Map<string, Asset>> {
  const out = await build({
    entryPoints: { app: `${DIR}src/main.tsx`, 'app-style': `${DIR}src/style.css`, 'mic-worklet': `${DIR}src/mic-worklet.ts` },
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: '/console',
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const files = new Map<string, Asset>();
  for (const f of out.outputFiles) {
    if (f.path.endsWith('/app.js')) files.set('app.js', asset('text/javascript; charset=utf-8', Buffer.from(f.contents)));
    else if (f.path.endsWith('/app-style.css')) files.set('app.css', asset('text/css; charset=utf-8', Buffer.from(f.contents)));
    else if (f.path.endsWith('/mic-worklet.js')) files.set('mic-worklet.js', asset('text/javascript; charset=utf-8', Buffer.from(f.contents)));
  }
  const version = createHash('sha256').update(files.get('app.js')?.body ?? '').update(files.get('app.css')?.body ?? '').digest('base64url').slice(0, 12);
  const html = (await readFile(`${DIR}index.html`, 'utf8')).replaceAll('%ATOMS%', escapeAttr(atomsPrefix)).replaceAll('%WAVES%', escapeAttr(wavesPrefix)).replaceAll('%VERSION%', version);
  files.set('index.html', asset('text/html; charset=utf-8', Buffer.from(html)));
  return files;
}

const escapeAttr = (s: string) => s.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page's own policy: scripts, styles, connections and media from this origin only. */
const CSP = "default-src 'self'; connect-src 'self' ws: wss:; media-src 'self' blob:; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; frame-ancestors 'none'";

function serve(files: Map<string, Asset>, name: string, req: HttpRequest): HttpResponse {
  const f = files.get(name);
  if (!f) return { status: 404, body: 'Not found', headers: { 'Content-Type': 'text/plain' } };
  const headers: Record<string, string> = {
    'Content-Type': f.type,
    ETag: f.etag,
    // A URL with the bundle's version (`?v=`, as the page names them) never changes; anything else is revalidated.
    'Cache-Control': req.query.has('v') ? 'public, max-age=31536000, immutable' : 'no-cache',
    'X-Content-Type-Options': 'nosniff',
    Vary: 'Accept-Encoding',
  };
  if (name === 'index.html') Object.assign(headers, { 'Content-Security-Policy': CSP, 'Referrer-Policy': 'same-origin', 'X-Frame-Options': 'DENY' });
  if (req.headers['if-none-match'] === f.etag) return { status: 304, headers };
  const accepts = req.headers['accept-encoding'] ?? '';
  if (/\bbr\b/.test(accepts)) return { status: 200, body: f.br, headers: { ...headers, 'Content-Encoding': 'br' } };
  if (/\bgzip\b/.test(accepts)) return { status: 200, body: f.gzip, headers: { ...headers, 'Content-Encoding': 'gzip' } };
  return { status: 200, body: f.body, headers };
}

/** The console's routes in /openapi.json: pages and assets, not API. */
const page = (summary: string) => docs('Console')(summary, { response: { description: 'HTML, JavaScript or CSS.', contentType: 'text/html', schema: { type: 'string' } } });

export function consoleRoutes(server: HttpServer, files: Map<string, Asset>): void {
  server.route('GET', '/', (req) => serve(files, 'index.html', req), { auth: 'none', doc: page('The console (sign in with an API key)') });
  server.route('GET', '/console/:file', (req) => serve(files, req.params.file as string, req), { auth: 'none', doc: page("The console's bundled assets") });
}
