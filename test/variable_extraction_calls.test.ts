// `extract_dynamic_variables` in calls (issue 35 item 2): the values a language model (a stand-in speaking the real
// chat-completions wire) passes for the tool's `variablesExtractionSchema` are checked by type and stored in the call's
// variables: the call record, post-conversation's `variables`, and `{{name}}` in the prompt of later turns; a bad value
// is refused back to the model as the tool result (what was wrong) and nothing is stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDialects, type TestServer } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { AgentCaller, connectUrl, endedCall } from './support/agent-client.js';
import { OpenAiMock, type MockRequest, type MockReply } from './support/openai-mock.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const A = '/atoms/v1';
const GOOD = { customer_name: 'Ada Lovelace', tickets: 3, vip: true, plan: 'GOLD' };
const BAD = { customer_name: 'Ada', tickets: 'many', plan: 'platinum', shoe_size: 9 };

type Message = { role: string; content: string | null };

/** The model: on "book" it extracts GOOD, on "wrong" it extracts BAD; after a tool result it reports it. */
function respond(req: MockRequest): MockReply {
  // Post-call analytics asks without tools: an empty answer.
  if (!Array.isArray(req.body.tools)) return { text: '{}' };
  const messages = req.body.messages as Message[];
  const last = messages.at(-1)!;
  if (last.role === 'user') {
    if (/book/i.test(last.content ?? '')) return { toolCalls: [{ name: 'save_details', arguments: JSON.stringify(GOOD) }] };
    if (/wrong/i.test(last.content ?? '')) return { toolCalls: [{ name: 'save_details', arguments: JSON.stringify(BAD) }] };
    return { text: 'Anything else?' };
  }
  if (last.role === 'tool') {
    const result = JSON.parse(last.content ?? '{}') as { stored?: object; errors?: string[] };
    return { text: result.stored ? 'Saved your details.' : `Could not save: ${(result.errors ?? []).join(' | ')}` };
  }
  return { text: 'Hello.' };
}

async function chat(server: TestServer, agentId: string, texts: string[]): Promise<{ answers: string[]; callId: string }> {
  const reg = await server.request('POST', `${A}/conversation/register-call`, { body: { agent_id: agentId, mode: 'chat' } });
  expect(reg.status, reg.text).toBeLessThan(300);
  const c = new AgentCaller(connectUrl(server, { token: reg.body.data.access_token }), 24000);
  await c.opened;
  const created = await c.waitFor((f) => f.type === 'session.created');
  const answers: string[] = [];
  for (const text of texts) {
    const mark = c.frames.length;
    c.send({ type: 'input_text.send', text });
    answers.push(String((await c.agentTurn(mark, 20_000)).text));
  }
  c.send({ type: 'session.close' });
  await c.closed;
  return { answers, callId: created.call_id as string };
}

for (const dialect of testDialects()) {
  describe(`extract_dynamic_variables in calls (${dialect})`, () => {
    const suite = serverForSuite(dialect);
    let mock: OpenAiMock;
    let hooks: WebhookReceiver;
    let agentId: string;

    beforeAll(async () => {
      mock = new OpenAiMock({ respond });
      const llmBase = await mock.start();
      hooks = new WebhookReceiver();
      await hooks.start();
      const res = await suite.server.request('POST', `${A}/agent`, {
        body: {
          name: 'Ticket desk',
          workflowType: 'single_prompt',
          prompt: 'You sell tickets. Customer: [{{customer_name}}], tickets: [{{tickets}}], plan: [{{plan}}].',
          model: { provider: 'openai_compatible', baseUrl: llmBase, model: 'test-model' },
          tools: [
            {
              type: 'extract_dynamic_variables',
              name: 'save_details',
              description: "Save the caller's details",
              variablesExtractionSchema: [
                { name: 'customer_name', description: "The caller's name", type: 'text' },
                { name: 'tickets', description: 'How many tickets', type: 'number' },
                { name: 'vip', description: 'Is the caller a VIP', type: 'boolean' },
                { name: 'plan', description: 'The plan', type: 'enum', values: ['gold', 'silver'] },
              ],
            },
          ],
        },
      });
      expect(res.status, res.text).toBe(201);
      agentId = res.body.data as string;
      const hook = await suite.server.request('POST', `${A}/webhook`, { body: { endpoint: hooks.url, events: [{ agentId, eventType: 'post-conversation' }] } });
      expect(hook.status, hook.text).toBe(201);
    });
    afterAll(async () => {
      await mock?.close();
      await hooks?.close();
    });

    it('stores the extracted values: the record, post-conversation and the prompt of a later turn', async () => {
      const before = mock.requests.length;
      const { answers, callId } = await chat(suite.server, agentId, ['I want to book, I am Ada Lovelace', 'Thanks']);
      expect(answers).toEqual(['Saved your details.', 'Anything else?']);
      const requests = mock.requests.slice(before).filter((r) => Array.isArray(r.body.tools));
      expect(requests).toHaveLength(3);
      // The function the model was offered is the schema's.
      const fn = (requests[0]!.body.tools as { function: { name: string; parameters: any } }[]).find((t) => t.function.name === 'save_details')!;
      expect(Object.keys(fn.function.parameters.properties)).toEqual(['customer_name', 'tickets', 'vip', 'plan']);
      // The first request had nothing to fill the prompt with; the later turn's prompt has the values (the enum as declared).
      const system = (r: MockRequest) => (r.body.messages as Message[]).find((m) => m.role === 'system')!.content;
      expect(system(requests[0]!)).toContain('Customer: [], tickets: [], plan: [].');
      expect(system(requests.at(-1)!)).toContain('Customer: [Ada Lovelace], tickets: [3], plan: [gold].');
      const toolResult = (requests[1]!.body.messages as Message[]).find((m) => m.role === 'tool')!;
      expect(JSON.parse(toolResult.content!)).toEqual({ stored: { customer_name: 'Ada Lovelace', tickets: 3, vip: true, plan: 'gold' } });

      const record = await endedCall(suite.server, callId);
      expect(record.variables).toMatchObject({ customer_name: 'Ada Lovelace', tickets: 3, vip: true, plan: 'gold', call_id: callId });
      const post = await hooks.waitFor(callId, 'post-conversation');
      expect(post.metadata.variables).toMatchObject({ customer_name: 'Ada Lovelace', tickets: 3, vip: true, plan: 'gold' });
    });

    it('refuses bad values back to the model, naming each, and stores none of them', async () => {
      const before = mock.requests.length;
      const { answers, callId } = await chat(suite.server, agentId, ['This is wrong']);
      expect(answers[0]).toMatch(/^Could not save: /);
      expect(answers[0]).toContain('tickets: must be a number, got "many"');
      expect(answers[0]).toContain('plan: must be one of "gold", "silver", got "platinum"');
      expect(answers[0]).toContain('shoe_size: not a variable of this tool');
      const toolResult = mock.requests
        .slice(before)
        .flatMap((r) => r.body.messages as Message[])
        .find((m) => m.role === 'tool')!;
      expect(JSON.parse(toolResult.content!)).toMatchObject({ error: 'nothing was stored' });
      const record = await endedCall(suite.server, callId);
      // Not even the good one (customer_name): a refused call stores nothing; no error event, no fallback spoken.
      expect(record.variables.customer_name).toBeUndefined();
      expect(record.variables.tickets).toBeUndefined();
      const post = await hooks.waitFor(callId, 'post-conversation');
      expect(post.metadata.variables.plan).toBeUndefined();
    });
  });
}
