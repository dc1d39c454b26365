// Outbound HTTP for recognition: fetching audio by URL (bounded size and time) and posting webhook results,
// both under the egress policy (every address and every redirect hop checked; see engine/net/egress.ts).
import { safeFetch, type EgressOptions } from '../../engine/net/egress.js';

const FETCH_TIMEOUT_MS = 30_000;
const MAX_REDIRECTS = 3;

export async function fetchAudio(url: string, maxBytes: number, egress: EgressOptions): Promise<Buffer> {
  const res = await safeFetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) }, { ...egress, maxRedirects: MAX_REDIRECTS });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    throw new Error(`HTTP ${res.status}`);
  }
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await res.body.cancel();
    throw new Error(`audio larger than ${maxBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new Error(`audio larger than ${maxBytes} bytes`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks, size);
}

export async function postJson(url: string, body: unknown, egress: EgressOptions): Promise<void> {
  const res = await safeFetch(
    url,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) },
    { ...egress, maxRedirects: MAX_REDIRECTS },
  );
  await res.body?.cancel();
  if (!res.ok) throw new Error(`webhook answered ${res.status}`);
}
