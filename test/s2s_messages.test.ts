// The speech-to-speech socket's client frames: one discriminated union routes them, and the protocol document
// (docs/s2s-ws.md) lists exactly its types.
import { describe, expect, it } from 'vitest';
import { documentedTypes } from './support/doc-table.js';
import { parseS2sClientFrame, S2S_CLIENT_FRAME_TYPES } from '../transports/ws/s2s-messages.js';

describe('speech-to-speech client frames', () => {
  it('docs/s2s-ws.md documents exactly the frame types the socket routes', () => {
    expect(documentedTypes(new URL('../docs/s2s-ws.md', import.meta.url), 'session.configure')).toEqual([...S2S_CLIENT_FRAME_TYPES]);
  });

  it('routes every documented type with its fields as sent, and no other', () => {
    expect(parseS2sClientFrame({ type: 'input_audio_buffer.append', audio: 'AAA=', event_id: 'e1' })).toEqual({ type: 'input_audio_buffer.append', audio: 'AAA=', event_id: 'e1' });
    // The fields are the handlers' to check: a frame of a known type is routed whatever they hold.
    expect(parseS2sClientFrame({ type: 'session.update', session: { tools: [], extra: 1 }, other: true })).toMatchObject({ type: 'session.update', other: true });
    expect(parseS2sClientFrame({ type: 'response.create' })).toEqual({ type: 'response.create' });
    for (const type of S2S_CLIENT_FRAME_TYPES) expect(parseS2sClientFrame({ type })?.type).toBe(type);
    expect(parseS2sClientFrame({ type: 'response.output_audio.delta' })).toBeNull();
    expect(parseS2sClientFrame({ audio: 'AAA=' })).toBeNull();
    expect(parseS2sClientFrame({ type: 5 })).toBeNull();
  });
});
