// Recordings: `GET /recordings/{callId}?channel=` and `GET /conversation/{callId}/recording/download-url` hand out
// short-lived signed URLs; `GET /recording-files/...` serves the WAV to whoever holds a valid one (no key needed).
import { loadCall } from '../../control-plane/calls/calls.js';
import { ApiError, badRequest, notFound } from '../../control-plane/errors.js';
import { CHANNELS, type Channel, type ObjectStore } from '../../control-plane/recordings/object-store.js';
import type { HttpServer } from '../http/server.js';
import { docs, ok, type HttpRequest } from '../http/types.js';
import { actorOf, type RouteContext } from './context.js';

/** How long a download URL works. */
export const RECORDING_URL_TTL_S = 300;

export function recordingRoutes(server: HttpServer, prefix: string, ctx: RouteContext, objects: ObjectStore): void {
  const auth = { auth: 'key' as const };
  const d = docs('Recordings');

  const signedUrl = async (req: HttpRequest, channel: Channel) => {
    const callId = req.params.callId as string;
    const row = await loadCall(ctx.db, actorOf(req), callId);
    const key = channel === 'mono' ? row.recording_mono : row.recording_dual;
    if (!key) throw notFound('No recording for this call');
    const expiresAt = Math.floor(Date.now() / 1000) + RECORDING_URL_TTL_S;
    const { expires, signature } = objects.sign(key, expiresAt);
    const proto = req.headers['x-forwarded-proto'] === 'https' ? 'https' : 'http';
    const host = req.headers.host ?? `127.0.0.1:${ctx.settings.port}`;
    const url = `${proto}://${host}${prefix}/recording-files/${key}?expires=${expires}&signature=${signature}`;
    return { url, expiresAt: new Date(expiresAt * 1000).toISOString(), channel };
  };

  server.route('GET', `${prefix}/recordings/:callId`, async (req) => {
    const channel = (req.query.get('channel') ?? 'mono') as Channel;
    if (!CHANNELS.includes(channel)) throw badRequest('channel: must be mono or dual');
    return ok(await signedUrl(req, channel));
  }, { ...auth, doc: d("A signed URL of a call's recording (valid 5 minutes)", { query: [{ name: 'channel', schema: { type: 'string', enum: ['mono', 'dual'], default: 'mono' } }] }) });

  server.route('GET', `${prefix}/conversation/:callId/recording/download-url`, async (req) => {
    if (!/^CALL-\d+-[0-9a-f]+$/.test(req.params.callId as string)) throw badRequest('Invalid call ID format');
    return ok({ presignedUrl: (await signedUrl(req, 'mono')).url });
  }, { ...auth, doc: d("A signed download URL of a call's recording", { response: { description: '`{presignedUrl}`.' }, errors: [400] }) });

  server.route('GET', `${prefix}/recording-files/:org/:callId/:file`, async (req) => {
    const key = `${req.params.org}/${req.params.callId}/${req.params.file}`;
    const refused = () => new ApiError(403, 'This recording link is invalid or has expired');
    let valid = false;
    try {
      valid = objects.verify(key, req.query.get('expires'), req.query.get('signature'));
    } catch {
      valid = false;
    }
    if (!valid) throw refused();
    // null: no such object; a store that cannot answer (the database down) is a 500, not a missing recording.
    const bytes = await objects.get(key);
    if (!bytes) throw notFound('No such recording');
    return { status: 200, body: bytes, headers: { 'Content-Type': 'audio/wav', 'Cache-Control': 'private, no-store' } };
  }, { auth: 'none', doc: d('A recording (WAV), for whoever holds a valid signed URL', { query: [{ name: 'expires', required: true }, { name: 'signature', required: true }], response: { description: 'The recording.', contentType: 'audio/wav', schema: { type: 'string', contentMediaType: 'audio/wav' } }, errors: [403] }) });
}
