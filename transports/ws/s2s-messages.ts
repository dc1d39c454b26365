// The frames a client sends on the speech-to-speech WebSocket (`/s2s`), as one discriminated union on `type`: the
// socket routes each frame by it, and docs/s2s-ws.md documents exactly these types (a unit test checks the two agree).
// The union gives each frame's shape; the fields are checked by the socket's handlers (transports/ws/s2s.ts), which
// answer each fault with the wire's `error` frame, `param` and code (session.configure's fields one by one, the audio
// as base64 PCM16, a strict session.update), so the shapes here stay as loose as those checks expect.
import { z } from 'zod';

const eventId = z.unknown().optional().describe('Echoed as `error.event_id` when the frame is refused.');

export const s2sClientFrame = z.discriminatedUnion('type', [
  z
    .object({ type: z.literal('session.configure'), event_id: eventId, session: z.unknown().optional() })
    .passthrough()
    .describe('`session{instructions?, voice?, tools?[], generate_initial_response?, pronunciation_dicts?}`: the first one applied configures the session; later ones are ignored.'),
  z.object({ type: z.literal('session.update'), event_id: eventId, session: z.unknown() }).passthrough().describe('`session{tools}`: replaces the tools; strict (any other field is refused).'),
  z.object({ type: z.literal('input_audio_buffer.append'), event_id: eventId, audio: z.unknown() }).passthrough().describe('Base64 PCM16 mono 16 kHz, 20-40 ms a frame; dropped before `session.configured`.'),
  z.object({ type: z.literal('conversation.item.create'), event_id: eventId, item: z.unknown() }).passthrough().describe('Only `{type: "function_call_output", call_id, output}`: a tool result.'),
  z.object({ type: z.literal('response.create'), event_id: eventId, response: z.unknown().optional() }).passthrough().describe('Narration after tool outputs, or a response when none is in flight.'),
  z.object({ type: z.literal('response.cancel'), event_id: eventId, response_id: z.unknown().optional() }).passthrough().describe('Cancels the response in flight (a no-op when none, or when `response_id` names another).'),
]);

export type S2sClientFrame = z.infer<typeof s2sClientFrame>;

/** Every client frame type, in the union's order. */
export const S2S_CLIENT_FRAME_TYPES: readonly string[] = s2sClientFrame.options.map((o) => o.shape.type.value);

/** A frame as the socket routes it, or null when its `type` is none of the union's. */
export function parseS2sClientFrame(msg: Record<string, unknown>): S2sClientFrame | null {
  const parsed = s2sClientFrame.safeParse(msg);
  return parsed.success ? parsed.data : null;
}
