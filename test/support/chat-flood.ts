// One chat client floods its agent session with text messages sent back to back while a bystander keeps using the
// server: /health polled every 25 ms and a second chat session answering a message a second. Shared by the
// hostile-client test and bench/chat-flood.ts.
import { AgentCaller, connectUrl } from './agent-client.js';
import { sleep, type TestServer } from './server.js';

export interface FloodResult {
  /** From the first message sent until the flooder's session was closed or went quiet. */
  floodMs: number;
  /** /health round trips during the flood (ms). */
  health: number[];
  /** The bystander session's reply times during the flood (ms). */
  bystander: number[];
  flooder: { callId: string; closeCode: number | null; closeReason: string; replies: number; errors: Record<string, number> };
}

/** How long the flooder's session may stay silent before the flood counts as over (the unprotected server keeps answering). */
const QUIET_MS = 3000;
/** The bystander is measured for at least this long, however quickly the flood ends. */
const MIN_WINDOW_MS = 3000;

export async function chatFlood(server: TestServer, agentId: string, messages: number, timeoutMs = 120_000): Promise<FloodResult> {
  const open = async () => {
    const caller = new AgentCaller(connectUrl(server, { api_key: server.key, agent_id: agentId, mode: 'chat' }), 24000);
    await caller.opened;
    await caller.agentTurn(0);
    return caller;
  };
  const bystander = await open();
  const flooder = await open();
  const callId = String(flooder.frames.find((f) => f.type === 'session.created')?.call_id);

  let flooding = true;
  const health: number[] = [];
  const polling = (async () => {
    while (flooding) {
      const t = performance.now();
      const res = await fetch(`${server.base}/health`);
      await res.arrayBuffer();
      health.push(performance.now() - t);
      await sleep(25);
    }
  })();
  const replies: number[] = [];
  const chatting = (async () => {
    while (flooding) {
      const after = bystander.frames.length;
      const t = performance.now();
      bystander.send({ type: 'input_text.send', text: 'Are you still there?' });
      await bystander.agentTurn(after, 30_000);
      replies.push(performance.now() - t);
      await sleep(1000);
    }
  })();

  const started = performance.now();
  for (let i = 0; i < messages; i++) flooder.send({ type: 'input_text.send', text: `Message number ${i}, please answer it.` });
  const deadline = started + timeoutMs;
  for (;;) {
    const last = flooder.frames[flooder.frames.length - 1]?.at ?? started;
    if (flooder.closeCode !== null || performance.now() - Math.max(last, started) > QUIET_MS || performance.now() > deadline) break;
    await sleep(50);
  }
  const floodMs = Math.max((flooder.frames[flooder.frames.length - 1]?.at ?? started) - started, 0);
  await sleep(Math.max(0, started + MIN_WINDOW_MS - performance.now()));
  flooding = false;
  await Promise.all([polling, chatting]);

  const errors: Record<string, number> = {};
  for (const f of flooder.of('error')) errors[String(f.code)] = (errors[String(f.code)] ?? 0) + 1;
  const result: FloodResult = {
    floodMs,
    health,
    bystander: replies,
    flooder: { callId, closeCode: flooder.closeCode, closeReason: flooder.closeReason, replies: flooder.of('transcript', (f) => f.role === 'assistant').length - 1, errors },
  };
  for (const c of [bystander, flooder]) if (c.closeCode === null) c.ws.close();
  await Promise.all([bystander.closed, flooder.closed]);
  return result;
}
