// The messages an app sends on the agent WebSocket (`/agent/connect`), as one discriminated union on `type`: the
// socket parses each message with it before acting, and docs/agent-session-ws.md documents exactly these types (a unit
// test checks the two agree). What needs the session (chat or webcall mode, a pending tool call) is checked there.
import { z } from 'zod';

/** Largest decoded audio message: 16 s at 48 kHz of 16-bit samples. */
export const MAX_AUDIO_BYTES = 16 * 48000 * 2;
/** Longest typed user turn, characters. */
export const MAX_TEXT = 4000;

const AUDIO_REQUIRED = 'audio is required (base64 PCM16)';
const TEXT_REQUIRED = 'text is required (a non-empty string)';

export const agentClientMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('input_audio_buffer.append'), audio: z.string({ message: AUDIO_REQUIRED }).min(1, AUDIO_REQUIRED) }).describe("The user's audio: base64 16-bit PCM at the session rate."),
  z.object({ type: z.literal('input_audio_buffer.commit') }).passthrough().describe('Accepted; no effect (reserved for push-to-talk).'),
  z.object({ type: z.literal('session.update') }).passthrough().describe('Accepted; no effect (reserved).'),
  z
    .object({
      type: z.literal('input_text.send'),
      text: z
        .string({ message: TEXT_REQUIRED })
        .refine((t) => t.trim() !== '', TEXT_REQUIRED)
        .refine((t) => t.length <= MAX_TEXT, `text must be at most ${MAX_TEXT} characters`),
    })
    .describe('A typed user turn, committed at once.'),
  z.object({ type: z.literal('session.close') }).describe('Ends the session.'),
  z
    .object({ type: z.literal('function_call.result'), call_id: z.unknown(), result: z.unknown().optional(), output: z.unknown().optional() })
    .describe("The app's answer to a client tool call (`output` is an alias of `result`)."),
]);

export type AgentClientMessage = z.infer<typeof agentClientMessage>;

/** Every client message type, in the union's order. */
export const AGENT_CLIENT_MESSAGE_TYPES: readonly string[] = agentClientMessage.options.map((o) => o.shape.type.value);

/** A message as the socket acts on it, or the `invalid_event` text that refuses it. */
export function parseAgentClientMessage(msg: Record<string, unknown>): { ok: true; msg: AgentClientMessage } | { ok: false; error: string } {
  if (typeof msg.type !== 'string' || !AGENT_CLIENT_MESSAGE_TYPES.includes(msg.type)) {
    return { ok: false, error: `unknown message type ${JSON.stringify(msg.type ?? null)}` };
  }
  const parsed = agentClientMessage.safeParse(msg);
  if (parsed.success) return { ok: true, msg: parsed.data };
  return { ok: false, error: parsed.error.issues[0]?.message ?? 'invalid message' };
}
