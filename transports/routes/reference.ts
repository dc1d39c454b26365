// `GET /openapi.json` (built once, from the route table, when this is registered: register it last) and the API
// reference page `GET /reference`, rendered in the browser by swagger-ui-dist's assets served from node_modules (offline).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { HttpServer } from '../http/server.js';
import { docs, type HttpRequest, type HttpResponse } from '../http/types.js';
import { buildOpenApi, type OpenApiInfo } from '../http/openapi.js';

const doc = docs('Reference');
const require = createRequire(import.meta.url);
const SWAGGER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parley API reference</title>
<link rel="stylesheet" href="/reference/swagger-ui.css">
<link rel="icon" type="image/png" href="/reference/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/reference/swagger-ui-bundle.js"></script>
<script src="/reference/init.js"></script>
</body>
</html>
`;

/** Renders /openapi.json; "Try it out" sends requests to this same server. */
const INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, presets: [SwaggerUIBundle.presets.apis], layout: 'BaseLayout' });\n`;

/** Scripts and styles from this origin only (Swagger UI sets inline style attributes). */
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
}

const asset = (type: string, body: Buffer): Asset => ({ type, body, gzip: gzipSync(body) });

function send(a: Asset, req: HttpRequest, headers: Record<string, string>): HttpResponse {
  const base = { 'Content-Type': a.type, 'X-Content-Type-Options': 'nosniff', Vary: 'Accept-Encoding', ...headers };
  if (/\bgzip\b/.test(req.headers['accept-encoding'] ?? '')) return { status: 200, body: a.gzip, headers: { ...base, 'Content-Encoding': 'gzip' } };
  return { status: 200, body: a.body, headers: base };
}

export function referenceRoutes(server: HttpServer, prefixes: Omit<OpenApiInfo, 'version'>): void {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  const assets = new Map<string, Asset>([
    ['swagger-ui.css', asset('text/css; charset=utf-8', readFileSync(path.join(SWAGGER_DIR, 'swagger-ui.css')))],
    ['swagger-ui-bundle.js', asset('text/javascript; charset=utf-8', readFileSync(path.join(SWAGGER_DIR, 'swagger-ui-bundle.js')))],
    ['favicon-32x32.png', asset('image/png', readFileSync(path.join(SWAGGER_DIR, 'favicon-32x32.png')))],
    ['init.js', asset('text/javascript; charset=utf-8', Buffer.from(INIT))],
  ]);
  const page = asset('text/html; charset=utf-8', Buffer.from(PAGE));
  let document: Asset | null = null;

  server.route('GET', '/openapi.json', (req) => send(document as Asset, req, { 'Cache-Control': 'no-cache' }), {
    auth: 'none',
    doc: doc('This document: OpenAPI 3.1 of both APIs', { response: { description: 'The OpenAPI document.', schema: { type: 'object' } } }),
  });
  server.route('GET', '/reference', (req) => send(page, req, { 'Cache-Control': 'no-cache', 'Content-Security-Policy': CSP, 'X-Frame-Options': 'DENY' }), {
    auth: 'none',
    doc: doc('API reference page (Swagger UI, offline)', { response: { description: 'The HTML page.', contentType: 'text/html', schema: { type: 'string' } } }),
  });
  server.route('GET', '/reference/:file', (req) => {
    const a = assets.get(req.params.file as string);
    if (!a) return { status: 404, body: 'Not found', headers: { 'Content-Type': 'text/plain' } };
    return send(a, req, { 'Cache-Control': 'public, max-age=3600' });
  }, {
    auth: 'none',
    doc: doc("The reference page's assets (from swagger-ui-dist)", {
      params: { file: 'swagger-ui.css, swagger-ui-bundle.js, init.js or favicon-32x32.png' },
      response: { description: 'The asset.', contentType: 'application/octet-stream', schema: { type: 'string' } },
    }),
  });
  // Built now, so it holds every route registered before this one and a broken doc fails the start, not a request.
  document = asset('application/json', Buffer.from(JSON.stringify(buildOpenApi(server.routes, { ...prefixes, version }))));
}
