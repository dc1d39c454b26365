// The end-of-turn decision checked as a caller meets it: corpus items streamed at real-time pace to the agent
// WebSocket of a real server (default agent settings), each in its own session. A user transcript before the true end
// of speech is a false cut-off; after it, its arrival minus the true end is the end-of-turn delay. Confirms the
// simulated operating point (bench/lib/turn-policies.ts) on the server itself.
import { AgentCaller, connectUrl, type Frame } from '../../test/support/agent-client.js';
import type { TestServer } from '../../test/support/server.js';
import { encodeLinear16 } from '../../engine/audio/codecs.js';
import { closeCaller } from './voice-agent.js';
import { readItemAudio, type TurnItem } from './turn-corpus.js';

export interface LiveOutcome {
  id: string;
  kind: string;
  rate: number;
  cutoff: boolean;
  /** Transcript arrival minus the true end of speech, ms (negative: a cut-off). */
  delayMs: number | null;
  error?: string;
}

const ANSWER = 'Thank you.';

/** A workflow agent that answers every turn with one short sentence; it opens with `question` or waits for the caller. */
async function liveAgent(server: TestServer, question: string | undefined): Promise<string> {
  const res = await server.request('POST', '/atoms/v1/agent', {
    body: {
      name: `turns-live-${question ? 'q' : 'open'}`,
      workflowType: 'workflow_graph',
      workflowGraph: { startNodeId: 'answer', nodes: [{ id: 'answer', type: 'say', text: ANSWER }], edges: [{ from: 'answer', to: 'answer', condition: { type: 'any' } }] },
      ...(question ? { firstMessage: question } : { waitForUserToSpeakFirst: true }),
      llmIdleTimeoutConfig: { chatTimeoutTimeInSecs: 300, webcallTimeoutTimeInSecs: 300, telephonyTimeoutTimeInSecs: 300, maxRetries: 0 },
    },
  });
  if (res.status !== 201) throw new Error(`POST /agent -> ${res.status}: ${res.text}`);
  return res.body.data as string;
}

const isUserFinal = (f: Frame) => f.type === 'transcript' && f.role === 'user';

async function one(server: TestServer, agentId: string, item: TurnItem, asked: boolean): Promise<LiveOutcome> {
  const out: LiveOutcome = { id: item.id, kind: item.pauses[0]?.kind ?? 'no_pause', rate: item.rate, cutoff: false, delayMs: null };
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: agentId, sample_rate: String(item.rate) }), item.rate, {}, 20);
  c.ws.on('error', () => undefined);
  try {
    await c.opened;
    await c.nextFrame((f) => f.type === 'session.created', 0, 15_000, 'session.created');
    c.startMic();
    if (asked) {
      await c.nextFrame((f) => f.type === 'agent_stop_talking', 0, 30_000, 'the question');
      await new Promise((r) => setTimeout(r, 400));
    }
    const audio = readItemAudio(item);
    const mark = c.frames.length;
    await c.say(encodeLinear16(audio));
    const endAt = c.lastSpeechEndAt;
    const startAt = endAt - (audio.length / item.rate) * 1000;
    const speechEndAt = startAt + (item.speechEnd / item.rate) * 1000;
    const t = await c.nextFrame(isUserFinal, mark, Math.max(1000, endAt - performance.now() + 1500), 'user transcript');
    out.delayMs = Math.round(t.at - speechEndAt);
    out.cutoff = t.at < speechEndAt - 32;
  } catch (err) {
    out.error = err instanceof Error ? err.message : String(err);
  } finally {
    await closeCaller(c);
  }
  return out;
}

/** Streams each item in its own session, `concurrency` at a time. */
export async function liveCheck(server: TestServer, items: TurnItem[], concurrency = 2): Promise<LiveOutcome[]> {
  const agents = new Map<string, string>();
  for (const q of new Set(items.map((i) => i.question ?? ''))) agents.set(q, await liveAgent(server, q || undefined));
  const results: LiveOutcome[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const item = items[next++] as TurnItem;
        results.push(await one(server, agents.get(item.question ?? '') as string, item, Boolean(item.question)));
      }
    }),
  );
  return results;
}
