// `GET /events?callId=` (hosted reference, "Atoms LiveTranscripts"): a running call's live events as server-sent
// events, from `sse_init` to `sse_close` (calls/live-events.ts has the event types and the slow-subscriber rule). The
// call may run on another server sharing the store (PostgreSQL LISTEN/NOTIFY or Redis pub/sub); its record is checked
// every RECHECK_MS as well, so a stream ends even when the server running the call stopped without saying so.
import type { HttpServer } from '../http/server.js';
import { docs, type HttpResponse, type ResponseSink } from '../http/types.js';
import { actorOf, type RouteContext } from './context.js';
import { FINAL_CALL_STATUSES, loadCall } from '../../control-plane/calls/calls.js';
import { badRequest } from '../../control-plane/errors.js';
import { closeEvent, liveEvent, type LiveEvent, type LiveEvents } from '../../calls/live-events.js';

/** How often a stream looks at the call's record (ended elsewhere, or its server gone). */
const RECHECK_MS = 5000;
/** A comment line this often keeps proxies from closing a quiet stream. */
const KEEPALIVE_MS = 15000;

const frame = (e: LiveEvent): string => `event: message\ndata: ${JSON.stringify(e)}\n\n`;

export function liveEventRoutes(server: HttpServer, prefix: string, ctx: RouteContext, live: LiveEvents): void {
  const d = docs('Live events');
  server.route(
    'GET',
    `${prefix}/events`,
    async (req): Promise<HttpResponse> => {
      const callId = req.query.get('callId') ?? '';
      if (!callId) throw badRequest('callId: required, the id of a running call');
      // 404 for an unknown call, 403 for another organization's (as the conversation routes answer).
      const row = await loadCall(ctx.db, actorOf(req), callId);
      if (FINAL_CALL_STATUSES.has(row.status)) throw badRequest(`Call ${callId} has ended (${row.status}): only active calls can be subscribed to`);
      const sub = await live.subscribe(callId);
      const status = async () => (await ctx.db.selectFrom('calls').select('status').where('call_id', '=', callId).executeTakeFirst())?.status;
      return {
        status: 200,
        headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' },
        stream: async (sink: ResponseSink) => {
          let lastWrite = Date.now();
          let lastCheck = 0;
          // Writes go one after another (a keep-alive never overtakes an event waiting for the socket).
          let chain: Promise<void> = Promise.resolve();
          const write = (text: string): Promise<void> => (chain = chain.then(() => sink.write(text)));
          // The client leaving, the record ending (checked now: the call may have ended between the read and the
          // subscription), a keep-alive: looked at once a second, never by the call itself.
          const check = async () => {
            if (sink.closed) return sub.close();
            if (Date.now() - lastCheck >= RECHECK_MS) {
              lastCheck = Date.now();
              // A store that does not answer now is asked again at the next check; a record gone or final ends the stream.
              const read = await status().then((s) => ({ s }), () => null);
              if (read && (read.s === undefined || FINAL_CALL_STATUSES.has(read.s))) {
                sub.push(liveEvent(callId, 'call_end', { status: read.s ?? 'unknown' }));
                sub.close(closeEvent(callId, 'call_ended'));
              }
            }
            if (Date.now() - lastWrite >= KEEPALIVE_MS) {
              lastWrite = Date.now();
              void write(': keep-alive\n\n');
            }
          };
          void check();
          const timer = setInterval(() => void check(), 1000);
          try {
            const stalled = sub.whenStalled();
            await write(frame(liveEvent(callId, 'sse_init', { status: row.status })));
            for (let e = await sub.next(); e; e = await sub.next()) {
              lastWrite = Date.now();
              // A write that waits on a client too slow to read is abandoned once the subscription gives up on it.
              await Promise.race([write(frame(e)), stalled]);
              if (sub.stalled && e.event_type !== 'sse_close') {
                void sink.write(frame(closeEvent(callId, 'subscriber_too_slow')));
                break;
              }
            }
          } finally {
            clearInterval(timer);
            sub.close();
          }
        },
      };
    },
    {
      auth: 'key',
      doc: d('Subscribe to live call events (server-sent events)', {
        description:
          'A running call\'s events as `event: message` frames whose `data` is `{event_type, event_id, timestamp, call_id, event_time, ...}`: ' +
          '`sse_init` (with the call\'s `status`), `call_start`, `user_turn_start`/`user_turn_end`, `user_interim_transcription` (`interim_transcription_text`), ' +
          '`user_transcription` (`user_transcription_text`, `turn_index`), `agent_turn_start`/`agent_turn_end` (`turn_id`, `status`), `agent_interim_transcription` and `tts_completed` (`tts_text`), ' +
          '`turn_latency`, `variable_extraction` (`extracted_variables`), `tool_call_start`/`tool_call_end`/`tool_call_error` (`tool_call_id`, `function_name`), `agent_error`, `call_end` (`status`, `metadata.endReason`), then `sse_close` (`metadata.reason`) and the stream ends. ' +
          'The call may run on another server sharing the store. A subscriber more than 512 events behind is closed (`sse_close` with reason `subscriber_too_slow`); the call never waits for it. ' +
          '400 without `callId` or for a call that has ended; 404 for an unknown call; 403 for another organization\'s.',
        query: [
          { name: 'callId', required: true, description: 'The call to follow (a running call).' },
          { name: 'organization_id', description: 'Accepted for session-cookie clients; the key\'s organization is used.' },
        ],
        response: { contentType: 'text/event-stream', schema: { type: 'string' }, description: 'Server-sent events until the call ends.' },
        errors: [403, 404],
      }),
    },
  );
}
