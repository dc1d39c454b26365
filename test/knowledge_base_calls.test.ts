// Knowledge bases in calls (issue 35 item 1): a language-model agent's `knowledge_base_search` tool and its
// `globalKnowledgeBaseId` run the model's query against the organization's knowledge base; the chunks found go back to
// the model (a stand-in speaking the real chat-completions wire) and what was retrieved is in the call record; chat
// sessions on each store, and one spoken web call (real speech in, recognized, the answer synthesized).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrgKey, mediaDialects, testDialects, type TestServer } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { AgentCaller, connectUrl, endedCall, speech } from './support/agent-client.js';
import { OpenAiMock, type MockRequest, type MockReply } from './support/openai-mock.js';

const A = '/atoms/v1';
const HOURS =
  'Opening hours. The Bright Smile clinic is open from nine in the morning until six in the evening, Monday to Friday. ' +
  'On Saturdays we open at ten and close at two. We are closed on Sundays.';
const PARKING = 'Parking. Free parking is available behind the building on Elm Street.';

/** The model: asks the tool on a question, then answers with the first retrieved passage's sentence about Saturdays. */
function respond(tool: string) {
  return (req: MockRequest): MockReply => {
    const messages = req.body.messages as { role: string; content: string | null }[];
    const last = messages.at(-1)!;
    if (last.role === 'user') return { toolCalls: [{ name: tool, arguments: JSON.stringify({ query: 'opening hours on Saturday' }) }] };
    if (last.role === 'tool') {
      const found = JSON.parse(last.content ?? '{}') as { results?: { content: string }[]; error?: string };
      const passage = found.results?.[0]?.content ?? '';
      const sentence = passage.split(/(?<=\.)\s+/).find((s) => /saturday/i.test(s));
      return { text: sentence ? `Here is what I found: ${sentence}` : "I don't know." };
    }
    return { text: 'How can I help?' };
  };
}

async function chatTurn(server: TestServer, agentId: string, text: string): Promise<{ answer: string; callId: string }> {
  const reg = await server.request('POST', `${A}/conversation/register-call`, { body: { agent_id: agentId, mode: 'chat' } });
  expect(reg.status, reg.text).toBeLessThan(300);
  const c = new AgentCaller(connectUrl(server, { token: reg.body.data.access_token }), 24000);
  await c.opened;
  const created = await c.waitFor((f) => f.type === 'session.created');
  const mark = c.frames.length;
  c.send({ type: 'input_text.send', text });
  const turn = await c.agentTurn(mark, 20_000);
  c.send({ type: 'session.close' });
  await c.closed;
  return { answer: String(turn.text), callId: created.call_id as string };
}

for (const dialect of testDialects()) {
  describe(`knowledge bases in calls (${dialect})`, () => {
    const suite = serverForSuite(dialect);
    let mock: OpenAiMock;
    let llmBase: string;
    let tool = 'search_knowledge_base';
    let kbId: string;

    beforeAll(async () => {
      mock = new OpenAiMock({ respond: (req) => respond(tool)(req) });
      llmBase = await mock.start();
      const kb = await suite.server.request('POST', `${A}/knowledgebase`, { body: { name: 'Clinic' } });
      kbId = kb.body.data as string;
      for (const content of [HOURS, PARKING]) {
        const item = await suite.server.request('POST', `${A}/knowledgebase/${kbId}/items/text`, { body: { content } });
        expect(item.status, item.text).toBe(201);
      }
    });
    afterAll(async () => {
      await mock?.close();
    });

    const agent = async (extra: Record<string, unknown>): Promise<string> => {
      const res = await suite.server.request('POST', `${A}/agent`, {
        body: { name: 'Front desk', workflowType: 'single_prompt', prompt: 'You are the front desk.', model: { provider: 'openai_compatible', baseUrl: llmBase, model: 'test-model' }, ...extra },
      });
      expect(res.status, res.text).toBe(201);
      return res.body.data as string;
    };

    it("answers from the agent's globalKnowledgeBaseId, with the retrieval in the call record", async () => {
      tool = 'search_knowledge_base';
      const agentId = await agent({ globalKnowledgeBaseId: kbId });
      const before = mock.requests.length;
      const { answer, callId } = await chatTurn(suite.server, agentId, 'Are you open on Saturday?');
      expect(answer).toContain('On Saturdays we open at ten and close at two.');
      // The model was offered the search function, and got the passage as the tool result.
      const offered = (mock.requests[before]!.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
      expect(offered).toContain('search_knowledge_base');
      const toolMessage = mock.requests
        .slice(before)
        .flatMap((r) => r.body.messages as { role: string; content: string }[])
        .find((m) => m.role === 'tool')!;
      expect(JSON.parse(toolMessage.content).results[0].content).toBe(HOURS);
      const record = await endedCall(suite.server, callId);
      expect(record.knowledgeBaseSearches).toHaveLength(1);
      expect(record.knowledgeBaseSearches[0]).toMatchObject({ tool: 'search_knowledge_base', knowledgeBaseIds: [kbId], query: 'opening hours on Saturday', results: [{ knowledgeBaseId: kbId, content: HOURS }] });
      // The knowledge base is in use now: it cannot be deleted.
      expect((await suite.server.request('DELETE', `${A}/knowledgebase/${kbId}`)).status).toBe(400);
    });

    it.runIf(dialect === mediaDialects()[0])('speaks the answer found in the knowledge base on a web call with speech', async () => {
      tool = 'search_knowledge_base';
      const agentId = await agent({ globalKnowledgeBaseId: kbId, firstMessage: 'Hello, front desk.' });
      const c = new AgentCaller(connectUrl(suite.server, { token: suite.server.key, agent_id: agentId, sample_rate: '16000' }), 16000);
      await c.opened;
      const created = await c.waitFor((f) => f.type === 'session.created');
      c.startMic();
      await c.agentTurn(0, 40_000);
      const mark = c.frames.length;
      await c.say(await speech(suite.server, 'Are you open on Saturday?'));
      const user = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 30_000, mark);
      expect(user.text.toLowerCase()).toContain('saturday');
      const reply = await c.agentTurn(mark, 40_000);
      expect(reply.text).toContain('On Saturdays we open at ten and close at two.');
      // Spoken: about 3 s of the answer's audio reached the caller.
      expect(c.audioBetween(mark).length / 2 / 16000).toBeGreaterThan(2);
      c.send({ type: 'session.close' });
      await c.closed;
      const record = await endedCall(suite.server, created.call_id as string);
      expect(record.knowledgeBaseSearches[0]).toMatchObject({ tool: 'search_knowledge_base', results: [{ content: HOURS }] });
      expect(record.transcript.map((t: any) => t.content).join(' ')).toContain('On Saturdays we open at ten');
    }, 120_000);

    it("runs a knowledge_base_search tool on its configured knowledge base; an id that is not the organization's is refused when saved", async () => {
      tool = 'lookup';
      const agentId = await agent({ tools: [{ type: 'knowledge_base_search', name: 'lookup', description: 'Look things up', knowledgeBaseId: kbId }] });
      const { answer, callId } = await chatTurn(suite.server, agentId, 'When do you open on Saturdays?');
      expect(answer).toContain('On Saturdays we open at ten and close at two.');
      const record = await endedCall(suite.server, callId);
      expect(record.knowledgeBaseSearches[0]).toMatchObject({ tool: 'lookup', results: [{ content: HOURS }] });

      // A tool naming a knowledge base that is not the organization's (unknown, or another's) is refused when saved.
      const other = await createOrgKey(suite.store, `kb-calls-${dialect}`, `org-kb-calls-${dialect}`);
      const theirs = (await suite.server.request('POST', `${A}/knowledgebase`, { key: other, body: { name: 'Theirs' } })).body.data as string;
      for (const id of ['0123456789abcdef01234567', theirs]) {
        const refused = await suite.server.request('POST', `${A}/agent`, { body: { name: 'KB tool', workflowType: 'single_prompt', prompt: 'Hi.', tools: [{ type: 'end_call', name: 'bye', description: 'End' }, { type: 'knowledge_base_search', name: 'lookup', description: 'Look things up', knowledgeBaseId: id }] } });
        expect(refused.status, refused.text).toBe(400);
        expect(refused.body.errors).toEqual([`tools.1.knowledgeBaseId: no knowledge base ${id} in your organization`]);
      }
      // And one naming none (the wire requires it).
      const none = await suite.server.request('POST', `${A}/agent`, { body: { name: 'KB tool', workflowType: 'single_prompt', prompt: 'Hi.', tools: [{ type: 'knowledge_base_search', name: 'lookup', description: 'Look things up' }] } });
      expect(none.status, none.text).toBe(400);
      expect(none.body.errors).toEqual(['tools.0.knowledgeBaseId: required for knowledge_base_search']);
    });
  });
}
