// Live call events in the process (calls/live-events.ts): a subscriber's bounded queue (one too slow is closed with
// `subscriber_too_slow`, and publishing never waits for it), the end of a call closing every stream, the session
// events as the reference names them, and the watch/ack/events exchange between two hubs over a bus.
import { describe, expect, it } from 'vitest';
import { CallFeed, LiveEvents, liveEvent, SUBSCRIBER_BUFFER, type BusMessage, type LiveBus } from '../calls/live-events.js';

/** Two hubs joined by an in-memory bus (every message reaches every hub, its sender too, as NOTIFY does). */
function pair(): [LiveEvents, LiveEvents] {
  const listeners: ((m: BusMessage) => void)[] = [];
  const bus = (): LiveBus => ({
    name: 'memory',
    async start(deliver) {
      listeners.push(deliver);
    },
    async send(msg) {
      const copy = JSON.parse(JSON.stringify(msg)) as BusMessage;
      setImmediate(() => listeners.forEach((l) => l(copy)));
    },
    async close() {},
  });
  return [new LiveEvents(bus()), new LiveEvents(bus())];
}

describe('live call events in the process', () => {
  it('closes a subscriber that falls SUBSCRIBER_BUFFER events behind; publishing never waits, others go on', async () => {
    const hub = new LiveEvents();
    const slow = await hub.subscribe('c1');
    const fast = await hub.subscribe('c1');
    const got: string[] = [];
    const reading = (async () => {
      for (let e = await fast.next(); e; e = await fast.next()) got.push(e.event_type);
    })();
    const started = performance.now();
    for (let i = 0; i < SUBSCRIBER_BUFFER + 10; i++) {
      hub.publish(liveEvent('c1', 'user_interim_transcription', { interim_transcription_text: `w${i}` }));
      if (i % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(performance.now() - started).toBeLessThan(500);
    expect(slow.stalled).toBe(true);
    const last = await slow.next();
    expect(last).toMatchObject({ event_type: 'sse_close', metadata: { reason: 'subscriber_too_slow' } });
    expect(await slow.next()).toBeNull();
    new CallFeed(hub, 'c1').end('completed', 'ended');
    await reading;
    expect(got.filter((t) => t === 'user_interim_transcription')).toHaveLength(SUBSCRIBER_BUFFER + 10);
    expect(got.slice(-2)).toEqual(['call_end', 'sse_close']);
  });

  it("names the session's events as the reference does", async () => {
    const hub = new LiveEvents();
    const sub = await hub.subscribe('c2');
    const feed = new CallFeed(hub, 'c2');
    feed.started('in_progress');
    feed.session({ type: 'user_transcript_delta', text: 'hel' });
    feed.session({ type: 'user_transcript', text: 'hello' });
    feed.session({ type: 'agent_transcript', text: 'Hi there.', interrupted: false });
    feed.session({ type: 'error', code: 'llm_unavailable', message: 'down' });
    feed.variables({ plan: 'gold' }, { plan: 'gold', call_id: 'c2' });
    expect(await feed.tool({ id: 't1', name: 'save', arguments: '{}' }, async () => 'ok')).toBe('ok');
    feed.end('failed', 'error');
    const events = [];
    for (let e = await sub.next(); e; e = await sub.next()) events.push(e);
    expect(events.map((e) => e.event_type)).toEqual(['call_start', 'user_interim_transcription', 'user_transcription', 'tts_completed', 'agent_error', 'variable_extraction', 'tool_call_start', 'tool_call_end', 'call_end', 'sse_close']);
    expect(events[2]).toMatchObject({ call_id: 'c2', user_transcription_text: 'hello', turn_index: 1 });
    expect(events[3]).toMatchObject({ tts_text: 'Hi there.', interrupted: false });
    expect(events[4]).toMatchObject({ error: { code: 'llm_unavailable', message: 'down' } });
    expect(events[5]).toMatchObject({ extracted_variables: { plan: 'gold' } });
    expect(events[7]).toMatchObject({ tool_call_id: 't1', function_name: 'save', success: true });
    expect(events[8]).toMatchObject({ status: 'failed', metadata: { endReason: 'error' } });
  });

  it('sends a call to another hub once a subscriber there watches it (acknowledged), and nothing before', async () => {
    const [runner, watcher] = pair();
    await runner.start();
    await watcher.start();
    const feed = new CallFeed(runner, 'c3');
    const sent: string[] = [];
    const original = (runner as any).bus.send.bind((runner as any).bus);
    (runner as any).bus.send = (m: BusMessage) => {
      sent.push(m.kind);
      return original(m);
    };
    feed.session({ type: 'user_transcript', text: 'before anyone watched' });
    expect(sent).toEqual([]);
    const sub = await watcher.subscribe('c3');
    expect(sent).toEqual(['ack']);
    feed.session({ type: 'user_transcript', text: 'watched now' });
    feed.end('completed', 'ended');
    const events = [];
    for (let e = await sub.next(); e; e = await sub.next()) events.push(e);
    expect(events.map((e) => e.event_type)).toEqual(['user_transcription', 'call_end', 'sse_close']);
    expect(events[0]!.user_transcription_text).toBe('watched now');
    await runner.close();
    await watcher.close();
  });

  it('ends open streams with server_shutdown when the hub closes', async () => {
    const hub = new LiveEvents();
    const sub = await hub.subscribe('c4');
    await hub.close();
    expect(await sub.next()).toMatchObject({ event_type: 'sse_close', metadata: { reason: 'server_shutdown' } });
    expect(await sub.next()).toBeNull();
  });
});
