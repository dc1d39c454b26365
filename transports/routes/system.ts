// Unauthenticated operational routes: health and Prometheus metrics.
import type { HttpServer } from '../http/server.js';
import { docs } from '../http/types.js';
import type { HttpMetrics } from '../http/metrics.js';
import type { Store } from '../../control-plane/store/db.js';
import { sql } from 'kysely';

export function systemRoutes(server: HttpServer, store: Store, metrics: HttpMetrics): void {
  const d = docs('System');
  server.route('GET', '/health', async () => {
    await sql`select 1`.execute(store.db);
    return { status: 200, body: { status: 'ok', store: store.dialect, uptimeSec: Math.round(process.uptime()) } };
  }, { auth: 'none', doc: d('Health: the store answers', { response: { description: '`{status: "ok", store, uptimeSec}`.', schema: { type: 'object', properties: { status: { const: 'ok' }, store: { type: 'string' }, uptimeSec: { type: 'integer' } } } } }) });
  server.route('GET', '/metrics', async () => {
    const { contentType, body } = await metrics.render();
    return { status: 200, body, headers: { 'Content-Type': contentType } };
  }, { auth: 'none', doc: d('Prometheus metrics', { response: { description: 'Prometheus text exposition.', contentType: 'text/plain', schema: { type: 'string' } } }) });
}
