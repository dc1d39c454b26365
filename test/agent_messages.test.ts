// The agent WebSocket's client messages: one discriminated union, the refusals the socket sends for each, and the
// protocol document (docs/agent-session-ws.md) listing exactly its types.
import { describe, expect, it } from 'vitest';
import { documentedTypes } from './support/doc-table.js';
import { AGENT_CLIENT_MESSAGE_TYPES, MAX_TEXT, parseAgentClientMessage } from '../transports/ws/agent-messages.js';

describe('agent socket client messages', () => {
  it('docs/agent-session-ws.md documents exactly the message types the socket parses', () => {
    expect(documentedTypes(new URL('../docs/agent-session-ws.md', import.meta.url), 'input_audio_buffer.append')).toEqual([...AGENT_CLIENT_MESSAGE_TYPES]);
  });

  it('accepts each documented shape and refuses with the texts the socket sends', () => {
    expect(parseAgentClientMessage({ type: 'input_audio_buffer.append', audio: 'AAA=' })).toMatchObject({ ok: true, msg: { type: 'input_audio_buffer.append', audio: 'AAA=' } });
    expect(parseAgentClientMessage({ type: 'session.update', session: { x: 1 } })).toMatchObject({ ok: true });
    expect(parseAgentClientMessage({ type: 'function_call.result', call_id: 'c1', output: { a: 1 } })).toMatchObject({ ok: true, msg: { output: { a: 1 } } });
    const refused = (m: Record<string, unknown>) => {
      const r = parseAgentClientMessage(m);
      return r.ok ? null : r.error;
    };
    expect(refused({ type: 'nope' })).toBe('unknown message type "nope"');
    expect(refused({ audio: 'AAA=' })).toBe('unknown message type null');
    expect(refused({ type: 'input_audio_buffer.append' })).toBe('audio is required (base64 PCM16)');
    expect(refused({ type: 'input_audio_buffer.append', audio: '' })).toBe('audio is required (base64 PCM16)');
    expect(refused({ type: 'input_text.send', text: '   ' })).toBe('text is required (a non-empty string)');
    expect(refused({ type: 'input_text.send', text: 5 })).toBe('text is required (a non-empty string)');
    expect(refused({ type: 'input_text.send', text: 'x'.repeat(MAX_TEXT + 1) })).toBe(`text must be at most ${MAX_TEXT} characters`);
    expect(refused({ type: 'input_text.send', text: 'x'.repeat(MAX_TEXT) })).toBeNull();
  });
});
