// The voice benches' agent and callers: a workflow agent that greets, then answers every user turn with one spoken
// sentence (an `any` edge back to itself), the sentences the callers say, and where a synthesized sentence ends.
import { decodeLinear16 } from '../../engine/audio/codecs.js';
import type { AgentCaller, Frame } from '../../test/support/agent-client.js';
import type { TestServer } from '../../test/support/server.js';

export const CALLER_SENTENCES = [
  'I would like to check the status of my order.',
  'Can you tell me your opening hours?',
  'I need to change my delivery address.',
  'Could you send me a receipt by email?',
  'My card was charged twice last week.',
  'Thank you, that sounds good to me.',
];
export const OPENING = 'Hello, thanks for calling. How can I help you today?';
export const ANSWER = 'Thanks, I have made a note of that and will take care of it right away.';
export const GRAPH = {
  startNodeId: 'answer',
  nodes: [{ id: 'answer', type: 'say', text: ANSWER }],
  edges: [{ from: 'answer', to: 'answer', condition: { type: 'any' } }],
};

/** End of the last 20 ms frame above -45 dBFS, in samples of 16-bit PCM at `rate` (the whole length if none is). */
export function speechEndSamples(pcm: Buffer, rate: number): number {
  const s = decodeLinear16(pcm);
  const frame = (rate * 20) / 1000;
  let last = 0;
  for (let f = 0; f + frame <= s.length; f += frame) {
    let e = 0;
    for (let i = f; i < f + frame; i++) e += (s[i] as number) ** 2;
    if (10 * Math.log10(e / frame + 1e-12) > -45) last = f + frame;
  }
  return last || s.length;
}

/** The agent's turn is complete: its final assistant transcript. */
export const isAssistantFinal = (f: Frame) => f.type === 'transcript' && f.role === 'assistant';

/** Ends a web caller's session (session.close, then waits up to 10 s for the socket to close) and closes it. */
export async function closeCaller(c: AgentCaller): Promise<void> {
  if (c.closeCode === null) {
    try {
      c.send({ type: 'session.close' });
    } catch {
      /* already closing */
    }
    // A cleared timer: a pending 10 s one kept the bench's process alive 10 s after its last caller closed.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([c.closed, new Promise((r) => (timer = setTimeout(r, 10_000)))]);
    clearTimeout(timer);
  }
  c.close();
}

/** Creates the bench agent (idle hang-up pushed out of the way); returns its id. */
export async function createBenchAgent(server: TestServer, name: string): Promise<string> {
  const res = await server.request('POST', '/atoms/v1/agent', {
    body: {
      name,
      workflowType: 'workflow_graph',
      workflowGraph: GRAPH,
      firstMessage: OPENING,
      llmIdleTimeoutConfig: { chatTimeoutTimeInSecs: 300, webcallTimeoutTimeInSecs: 300, telephonyTimeoutTimeInSecs: 300, maxRetries: 0 },
    },
  });
  if (res.status !== 201) throw new Error(`POST /agent -> ${res.status}: ${res.text}`);
  return res.body.data as string;
}
