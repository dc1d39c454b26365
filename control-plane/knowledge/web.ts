// Web pages for knowledge bases: fetched through the egress guard (engine/net/egress.ts: checked addresses only,
// each redirect checked again), HTML reduced to its text, PDFs read, sitemaps' URLs listed.
import { safeFetch } from '../../engine/net/egress.js';
import { isPdf, pdfText } from './pdf.js';

/** Largest page read (bytes). */
export const MAX_PAGE_BYTES = 5 * 1024 * 1024;
const TIMEOUT_MS = 15_000;

export interface FetchedPage {
  text: string;
  title: string | null;
  contentType: string;
  size: number;
}

/** The body of a fetched URL, at most `max` bytes (an error past it). */
async function readBody(res: Response, max: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  const reader = res.body?.getReader();
  if (!reader) return Buffer.alloc(0);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw new Error(`the page is larger than ${max} bytes`);
    }
    parts.push(Buffer.from(value));
  }
  return Buffer.concat(parts);
}

/** GETs a URL under the egress policy: the response's type and bytes (an error for a non-2xx answer). */
export async function fetchUrl(url: string, allowPrivate: boolean, accept = 'text/html,application/xhtml+xml,text/plain,application/pdf;q=0.9,*/*;q=0.5'): Promise<{ contentType: string; bytes: Buffer }> {
  const res = await safeFetch(new URL(url), { method: 'GET', headers: { accept, 'user-agent': 'Parley knowledge-base fetcher' }, signal: AbortSignal.timeout(TIMEOUT_MS) }, { allowPrivate, maxRedirects: 3 });
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`the page answered HTTP ${res.status}`);
  }
  return { contentType: res.headers.get('content-type') ?? '', bytes: await readBody(res, MAX_PAGE_BYTES) };
}

/** A page's text by its type: HTML reduced to text, plain text as it is, PDF read. */
export async function fetchPage(url: string, allowPrivate: boolean): Promise<FetchedPage> {
  const { contentType, bytes } = await fetchUrl(url, allowPrivate);
  const type = contentType.toLowerCase().split(';')[0]!.trim();
  if (isPdf(new URL(url).pathname, type)) return { ...(await pdfText(bytes).then((p) => ({ text: p.text, title: null }))), contentType: 'application/pdf', size: bytes.length };
  const body = bytes.toString('utf8');
  if (type === 'text/plain' || type === 'text/markdown') return { text: body, title: null, contentType: type, size: bytes.length };
  if (type && type !== 'text/html' && type !== 'application/xhtml+xml') throw new Error(`the page is ${type}, not HTML, text or PDF`);
  const { text, title } = htmlToText(body);
  return { text, title, contentType: 'text/html', size: bytes.length };
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', ndash: '–', mdash: '—', hellip: '…', rsquo: '’', lsquo: '‘', rdquo: '”', ldquo: '“', copy: '©', reg: '®', euro: '€', pound: '£' };

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
    }
    return ENTITIES[e.toLowerCase()] ?? m;
  });
}

const BLOCK = /<\/?(p|div|section|article|main|header|footer|aside|h[1-6]|ul|ol|li|dl|dt|dd|table|tr|blockquote|pre|figure|figcaption|address|hr)\b[^>]*>/gi;

/** The readable text of an HTML page: scripts, styles, navigation and forms out; blocks as paragraphs; entities decoded. */
export function htmlToText(html: string): { text: string; title: string | null } {
  const titleMatch = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html);
  const title = titleMatch ? decodeEntities(titleMatch[1]!.replace(/\s+/g, ' ').trim()) || null : null;
  let s = html
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(script|style|noscript|template|svg|head|nav|form|iframe|select|button)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(BLOCK, '\n\n')
    .replace(/<td\b[^>]*>|<th\b[^>]*>/gi, ' ')
    .replace(/<[^>]+>/g, '');
  s = decodeEntities(s)
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { text: s, title };
}

/** The page URLs of a sitemap (`<urlset>`), or of the sitemaps a sitemap index lists; an error for anything else. */
export function sitemapLocs(xml: string): { urls: string[]; sitemaps: string[] } {
  if (!/<(urlset|sitemapindex)\b/i.test(xml)) throw new Error('not a sitemap (no <urlset> or <sitemapindex>)');
  const locs = [...xml.matchAll(/<loc>\s*([\s\S]*?)\s*<\/loc>/gi)].map((m) => decodeEntities(m[1]!.replace(/^<!\[CDATA\[|\]\]>$/g, '')).trim()).filter((u) => /^https?:\/\//i.test(u));
  return /<sitemapindex\b/i.test(xml) ? { urls: [], sitemaps: locs } : { urls: [...new Set(locs)], sitemaps: [] };
}

/** Most URLs a sitemap lookup returns, and sitemaps of an index it reads. */
const MAX_SITEMAP_URLS = 5000;
const MAX_CHILD_SITEMAPS = 10;

/** The page URLs of a sitemap (a sitemap.xml, an index of them, or a site whose /sitemap.xml is one). */
export async function sitemapUrls(siteUrl: string, allowPrivate: boolean): Promise<string[]> {
  let first: { contentType: string; bytes: Buffer };
  let url = siteUrl;
  first = await fetchUrl(url, allowPrivate, 'application/xml,text/xml,text/html;q=0.5');
  if (!/<(urlset|sitemapindex)\b/i.test(first.bytes.toString('utf8', 0, 4096))) {
    // A home page: its site's /sitemap.xml.
    url = new URL('/sitemap.xml', siteUrl).toString();
    first = await fetchUrl(url, allowPrivate, 'application/xml,text/xml');
  }
  const top = sitemapLocs(first.bytes.toString('utf8'));
  const urls = [...top.urls];
  for (const child of top.sitemaps.slice(0, MAX_CHILD_SITEMAPS)) {
    const sub = sitemapLocs((await fetchUrl(child, allowPrivate, 'application/xml,text/xml')).bytes.toString('utf8'));
    urls.push(...sub.urls);
    if (urls.length >= MAX_SITEMAP_URLS) break;
  }
  return [...new Set(urls)].slice(0, MAX_SITEMAP_URLS);
}
