// Agent brains: call variables and templating, the workflow-graph brain (and the demo agent), the LLM brain over real HTTP.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { validateField } from '../control-plane/agents/config-schema.js';
import { LlmBrain, functionToolsFromAgentTools } from '../engine/agent/brains/llm.js';
import { WorkflowBrain } from '../engine/agent/brains/workflow.js';
import { KeypadCollector, keypressText, pressedKeys } from '../engine/agent/keypad.js';
import { parseWorkflowGraph } from '../engine/agent/brains/workflow-schema.js';
import { DEMO_AGENT_TEMPLATE_ID, demoAgentConfig } from '../engine/agent/demo-agent.js';
import type { BrainContext, BrainEvent, Vars } from '../engine/agent/types.js';
import { STANDARD_KEYS, callVariables, renderTemplate, sanitizePerCallVariables, standardVariables } from '../engine/agent/variables.js';
import { OpenAiMock, textPieces, type MockReply } from './support/openai-mock.js';

const ctxOf = (variables: Vars = {}, signal = new AbortController().signal): BrainContext => ({ variables, signal });

async function collect(events: AsyncIterable<BrainEvent>): Promise<BrainEvent[]> {
  const out: BrainEvent[] = [];
  for await (const ev of events) out.push(ev);
  return out;
}

const textOf = (events: BrainEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.text] : [])).join('');
const nonText = (events: BrainEvent[]) => events.filter((e) => e.type !== 'text');

describe('call variables', () => {
  // 20:30 UTC on Sunday 10 March 2024: already Monday morning in Tokyo, Sunday afternoon (just after DST began) in Los Angeles.
  const now = new Date('2024-03-10T20:30:00Z');
  const base = { callId: 'call_1', conversationType: 'webcall', defaultLanguage: 'en', supportedLanguages: ['en', 'hi'], now };

  it('renders date, time and weekday in an IANA zone', () => {
    const tokyo = standardVariables({ ...base, timezone: 'Asia/Tokyo' });
    const la = standardVariables({ ...base, timezone: 'America/Los_Angeles' });
    expect([tokyo.current_date, tokyo.current_time, tokyo.current_day]).toEqual(['2024-03-11', '05:30', 'Monday']);
    expect([la.current_date, la.current_time, la.current_day]).toEqual(['2024-03-10', '13:30', 'Sunday']);
    expect(la.timezone).toBe('America/Los_Angeles');
  });

  it('renders in a {label, offset} zone, east and west of UTC, and uses the label', () => {
    const ist = standardVariables({ ...base, timezone: { label: 'IST', offset: 330 } });
    expect([ist.current_date, ist.current_time, ist.current_day, ist.timezone]).toEqual(['2024-03-11', '02:00', 'Monday', 'IST']);
    const hst = standardVariables({ ...base, timezone: { label: 'HST', offset: -600 } });
    expect([hst.current_date, hst.current_time, hst.current_day]).toEqual(['2024-03-10', '10:30', 'Sunday']);
  });

  it('has exactly the 11 standard keys; a web call has empty numbers', () => {
    const v = standardVariables({ ...base, timezone: 'UTC', agentGender: 'female' });
    expect(Object.keys(v).sort()).toEqual([...STANDARD_KEYS].sort());
    expect(STANDARD_KEYS).toHaveLength(11);
    expect(v).toMatchObject({ call_id: 'call_1', user_number: '', agent_number: '', conversation_type: 'webcall', agent_gender: 'female', default_language: 'en', supported_languages: 'en,hi' });
    const phone = standardVariables({ ...base, timezone: 'UTC', userNumber: '+14155550123', agentNumber: '+14155550999' });
    expect([phone.user_number, phone.agent_number]).toEqual(['+14155550123', '+14155550999']);
  });

  it('merges defaults < per-call < standard, dropping reserved keys from defaults and per-call values', () => {
    const standard = standardVariables({ ...base, timezone: 'UTC' });
    const merged = callVariables({ clinic: 'Default', city: 'Paris', current_date: '1999-01-01' }, { clinic: 'Per call', call_id: 'forged', vip: true }, standard);
    expect(merged).toMatchObject({ clinic: 'Per call', city: 'Paris', vip: true, call_id: 'call_1', current_date: '2024-03-10' });
    expect(callVariables({ a: 1 }, undefined, {})).toEqual({ a: 1 });
  });

  it('sanitizes per-call variables: bad keys and nested values are named, reserved keys silently dropped', () => {
    const { vars, errors } = sanitizePerCallVariables({ name: 'Ann', age: 41, vip: false, call_id: 'forged', '1bad': 'x', nested: { a: 1 }, long: 'x'.repeat(2001) });
    expect(vars).toEqual({ name: 'Ann', age: 41, vip: false });
    expect(errors).toHaveLength(3);
    expect(errors.find((e) => e.includes('1bad'))).toBeDefined();
    expect(errors.find((e) => e.includes('nested'))).toMatch(/no nesting/);
    expect(errors.find((e) => e.includes('long'))).toMatch(/2000/);
    expect(sanitizePerCallVariables([1, 2]).errors).toHaveLength(1);
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i]));
    expect(sanitizePerCallVariables(many).errors[0]).toMatch(/at most 100/);
    expect(sanitizePerCallVariables(undefined)).toEqual({ vars: {}, errors: [] });
  });

  it('templates {{ name }} with or without inner spaces; unknown names render empty', () => {
    expect(renderTemplate('Hi {{name}}, {{ count }} items, vip={{  vip }}.{{missing}}', { name: 'Ann', count: 3, vip: true })).toBe('Hi Ann, 3 items, vip=true.');
    expect(renderTemplate('{{ not a var }} {single}', {})).toBe('{{ not a var }} {single}');
  });
});

const GRAPH = {
  startNodeId: 'greet',
  nodes: [
    {
      id: 'greet',
      type: 'say',
      text: 'Hello {{name}}, do you have an order number?',
      extract: [{ variable: 'order_id', regex: '(\\d{4,})' }],
      set: { stage: 'greeting' },
      noMatchText: 'Sorry, say that again?',
    },
    { id: 'order', type: 'say', text: 'Looking up order {{order_id}}. Anything else?', set: { stage: 'order' } },
    { id: 'other', type: 'say', text: 'Tell me more.' },
    { id: 'bye', type: 'end_call', text: 'Goodbye {{name}}.' },
    { id: 'agent', type: 'transfer', text: 'Transferring you now.', transferNumber: '+15550100' },
  ],
  edges: [
    { from: 'greet', to: 'bye', condition: { type: 'keyword', keywords: ['bye', 'no thanks'] } },
    { from: 'greet', to: 'order', condition: { type: 'regex', pattern: '\\border\\b', flags: 'i' } },
    { from: 'greet', to: 'agent', condition: { type: 'keyword', keywords: ['human'] } },
    { from: 'order', to: 'bye', condition: { type: 'keyword', keywords: ['no'] } },
    { from: 'other', to: 'greet', condition: { type: 'any' } },
  ],
};

describe('WorkflowBrain', () => {
  it('opens with the start node text and its set variables', async () => {
    const brain = new WorkflowBrain(GRAPH);
    const ctx = ctxOf({ name: 'Ann' });
    const events = await collect(brain.opening(ctx));
    expect(events).toEqual([
      { type: 'variables', values: { stage: 'greeting' } },
      { type: 'text', text: 'Hello Ann, do you have an order number?' },
    ]);
    expect(ctx.variables.stage).toBe('greeting');
  });

  it('follows digits edges on keypresses (an IVR menu), and extraction sees the keys pressed', async () => {
    const menu = {
      nodes: [
        { id: 'menu', type: 'say', text: 'Press 1 for sales, 2 for support, or enter your account number and hash.', extract: [{ variable: 'account', regex: '(\\d{4,})#' }] },
        { id: 'sales', type: 'say', text: 'Sales it is.' },
        { id: 'support', type: 'say', text: 'Support it is.' },
        { id: 'account', type: 'say', text: 'Account {{account}} found.' },
      ],
      edges: [
        { from: 'menu', to: 'sales', condition: { type: 'digits', digits: '1' } },
        { from: 'menu', to: 'support', condition: { type: 'digits', digits: '2' } },
        { from: 'menu', to: 'account', condition: { type: 'digits' } },
      ],
    };
    const pick = async (said: string) => {
      const brain = new WorkflowBrain(menu);
      const ctx = ctxOf({});
      await collect(brain.opening(ctx));
      return { text: textOf(await collect(brain.reply(said, ctx))), node: brain.currentNodeId, vars: ctx.variables };
    };
    expect(await pick(keypressText('2'))).toMatchObject({ text: 'Support it is.', node: 'support' });
    expect(await pick(keypressText('1'))).toMatchObject({ text: 'Sales it is.', node: 'sales' });
    expect(await pick(keypressText('48213#'))).toMatchObject({ text: 'Account 48213 found.', node: 'account', vars: { account: '48213' } });
    // Saying "one" is not pressing 1.
    expect((await pick('one')).node).toBe('menu');
    expect(() => new WorkflowBrain({ ...menu, edges: [{ from: 'menu', to: 'sales', condition: { type: 'digits', digits: '1x' } }] })).toThrow(/keypad keys/);
  });

  it('collects keys into one entry: a pause or # ends it', async () => {
    const entries: string[] = [];
    const keypad = new KeypadCollector((keys) => entries.push(keys), 60);
    for (const k of ['4', '8', '#', '1']) keypad.press(k);
    keypad.press('x');
    expect(entries).toEqual(['48#']);
    await new Promise((r) => setTimeout(r, 120));
    expect(entries).toEqual(['48#', '1']);
    expect(pressedKeys(keypressText('12*'))).toBe('12*');
    expect(pressedKeys('pressed 1')).toBeNull();
    keypad.close();
  });

  it('opens with a templated firstMessage instead, on the start node', async () => {
    const brain = new WorkflowBrain(GRAPH, { firstMessage: 'Welcome, {{name}}!' });
    expect(textOf(await collect(brain.opening(ctxOf({ name: 'Bo' }))))).toBe('Welcome, Bo!');
    expect(brain.currentNodeId).toBe('greet');
  });

  it('extracts, follows a regex edge, applies set and renders the target with the extracted value', async () => {
    const brain = new WorkflowBrain(GRAPH);
    const ctx = ctxOf({ name: 'Ann' });
    await collect(brain.opening(ctx));
    const events = await collect(brain.reply('Yes, my ORDER is 123456.', ctx));
    expect(events).toEqual([
      { type: 'variables', values: { order_id: '123456' } },
      { type: 'variables', values: { stage: 'order' } },
      { type: 'text', text: 'Looking up order 123456. Anything else?' },
    ]);
    expect(ctx.variables).toMatchObject({ order_id: '123456', stage: 'order' });
    expect(brain.currentNodeId).toBe('order');
  });

  it('matches keywords as whole words, ignoring case and punctuation, first edge in order winning', async () => {
    const brain = new WorkflowBrain(GRAPH);
    const ctx = ctxOf({ name: 'Ann' });
    // "bye" inside "Goodbyes" is no match; "No, THANKS!" normalises to the phrase "no thanks" and wins over the later order edge.
    expect(textOf(await collect(brain.reply('Goodbyes are sad', ctx)))).toBe('Sorry, say that again? Hello Ann, do you have an order number?');
    const events = await collect(brain.reply(' No, THANKS! Order later maybe.', ctx));
    expect(events).toEqual([
      { type: 'text', text: 'Goodbye Ann.' },
      { type: 'end_call', reason: 'workflow_end' },
    ]);
  });

  it('says the no-match text then the node text again and stays; the default no-match text when none is set', async () => {
    const brain = new WorkflowBrain(GRAPH);
    const ctx = ctxOf({ name: 'Ann' });
    expect(await collect(brain.reply('What?', ctx))).toEqual([{ type: 'text', text: 'Sorry, say that again? Hello Ann, do you have an order number?' }]);
    expect(brain.currentNodeId).toBe('greet');
    await collect(brain.reply('order 9999', ctx));
    expect(textOf(await collect(brain.reply('yes please', ctx)))).toBe("Sorry, I didn't catch that. Looking up order 9999. Anything else?");
  });

  it('ends the call at an end_call node and says nothing afterwards', async () => {
    const brain = new WorkflowBrain(GRAPH);
    const ctx = ctxOf({ name: 'Ann' });
    await collect(brain.reply('order 4242', ctx));
    expect(nonText(await collect(brain.reply('No.', ctx)))).toEqual([{ type: 'end_call', reason: 'workflow_end' }]);
    expect(await collect(brain.reply('hello?', ctx))).toEqual([]);
  });

  it('transfers at a transfer node', async () => {
    const brain = new WorkflowBrain(GRAPH);
    const events = await collect(brain.reply('I want a human.', ctxOf()));
    expect(events).toEqual([
      { type: 'text', text: 'Transferring you now.' },
      { type: 'transfer', number: '+15550100' },
    ]);
  });

  it('follows an any edge, defaults the start node to the first node, and allows a terminal start node', async () => {
    const brain = new WorkflowBrain({ ...GRAPH, startNodeId: 'other' });
    expect(textOf(await collect(brain.reply('whatever', ctxOf({ name: 'Cy' }))))).toBe('Hello Cy, do you have an order number?');
    const first = new WorkflowBrain({ nodes: GRAPH.nodes.slice(2), edges: [] });
    expect(first.currentNodeId).toBe('other');
    const terminal = new WorkflowBrain({ startNodeId: 'bye', nodes: GRAPH.nodes, edges: [] }, { firstMessage: 'Sorry, we are closed.' });
    expect(await collect(terminal.opening(ctxOf()))).toEqual([
      { type: 'text', text: 'Sorry, we are closed.' },
      { type: 'end_call', reason: 'workflow_end' },
    ]);
  });

  it('yields nothing for reply(null) or an aborted signal', async () => {
    const brain = new WorkflowBrain(GRAPH);
    expect(await collect(brain.reply(null, ctxOf()))).toEqual([]);
    const ac = new AbortController();
    ac.abort();
    expect(await collect(brain.reply('order 1234', ctxOf({}, ac.signal)))).toEqual([]);
    expect(brain.currentNodeId).toBe('greet');
  });

  it('rejects invalid graphs with messages naming the path', () => {
    const issues = (graph: unknown) => validateField('workflowGraph', graph);
    expect(issues(null)).toEqual([]);
    expect(issues(GRAPH)).toEqual([]);
    const dup = { nodes: [{ id: 'a', type: 'say', text: 'x' }, { id: 'a', type: 'say', text: 'y' }], edges: [] };
    expect(issues(dup)).toEqual(['workflowGraph.nodes.1.id: duplicate node id "a"']);
    const dangling = { nodes: [{ id: 'a', type: 'say' }], edges: [{ from: 'a', to: 'zz', condition: { type: 'any' } }] };
    expect(issues(dangling)).toEqual(['workflowGraph.edges.0.to: no node has id "zz"']);
    const noNumber = { nodes: [{ id: 'a', type: 'transfer', text: 'x' }] };
    expect(issues(noNumber)).toEqual(['workflowGraph.nodes.0.transferNumber: required for transfer nodes']);
    const badNumber = { nodes: [{ id: 'a', type: 'transfer', transferNumber: '555-0100' }] };
    expect(issues(badNumber)[0]).toMatch(/^workflowGraph\.nodes\.0\.transferNumber: must be an E\.164 number/);
    const badRegex = { nodes: [{ id: 'a', type: 'say' }], edges: [{ from: 'a', to: 'a', condition: { type: 'regex', pattern: '(unclosed' } }] };
    expect(issues(badRegex)[0]).toMatch(/^workflowGraph\.edges\.0\.condition\.pattern: invalid regular expression/);
    const badExtract = { nodes: [{ id: 'a', type: 'say', extract: [{ variable: 'v', regex: '[z-a]' }] }] };
    expect(issues(badExtract)[0]).toMatch(/^workflowGraph\.nodes\.0\.extract\.0\.regex: invalid regular expression/);
    const emptyKeyword = { nodes: [{ id: 'a', type: 'say' }], edges: [{ from: 'a', to: 'a', condition: { type: 'keyword', keywords: ['  '] } }] };
    expect(issues(emptyKeyword)[0]).toMatch(/^workflowGraph\.edges\.0\.condition\.keywords\.0:/);
    const noKeywords = { nodes: [{ id: 'a', type: 'say' }], edges: [{ from: 'a', to: 'a', condition: { type: 'keyword', keywords: [] } }] };
    expect(issues(noKeywords)[0]).toMatch(/^workflowGraph\.edges\.0\.condition\.keywords:/);
    expect(issues({ nodes: [{ id: 'a', type: 'say', text: 'x'.repeat(2001) }] })[0]).toMatch(/^workflowGraph\.nodes\.0\.text:/);
    expect(issues({ nodes: Array.from({ length: 501 }, (_, i) => ({ id: `n${i}`, type: 'say' })) })[0]).toMatch(/^workflowGraph\.nodes:/);
    expect(issues({ nodes: [] })[0]).toMatch(/^workflowGraph\.nodes:/);
    expect(issues({ startNodeId: 'b', nodes: [{ id: 'a', type: 'say' }] })).toEqual(['workflowGraph.startNodeId: no node has id "b"']);
    expect(issues({ nodes: [{ id: 'a', type: 'say', extract: [{ variable: 'v', regex: 'x', flags: 'g' }] }] })[0]).toMatch(/^workflowGraph\.nodes\.0\.extract\.0\.flags:/);
  });

  it('refuses to run on an invalid or missing graph, naming the path', () => {
    expect(() => new WorkflowBrain({ nodes: [{ id: 'a', type: 'say' }], edges: [{ from: 'b', to: 'a', condition: { type: 'any' } }] })).toThrow(
      'Invalid workflow graph: edges.0.from: no node has id "b"',
    );
    expect(() => new WorkflowBrain(null)).toThrow(/no workflowGraph/);
    expect(() => parseWorkflowGraph({ nodes: 'x' })).toThrow(/^Invalid workflow graph: nodes: /);
  });
});

describe('demo agent', () => {
  const config = demoAgentConfig();
  const start = () => {
    const brain = new WorkflowBrain(config.workflowGraph, { firstMessage: config.firstMessage as string });
    const standard = standardVariables({ callId: 'call_demo', conversationType: 'webcall', defaultLanguage: 'en', supportedLanguages: ['en'], timezone: 'UTC' });
    const ctx = ctxOf(callVariables(config.defaultVariables as Vars, undefined, standard));
    return { brain, ctx, say: async (text: string) => collect(brain.reply(text, ctx)) };
  };

  it('is a valid create-agent body', () => {
    expect(DEMO_AGENT_TEMPLATE_ID).toBe('parley-demo');
    expect(config).toMatchObject({ workflowType: 'workflow_graph', allowInterruptions: true });
    for (const field of ['firstMessage', 'workflowGraph', 'allowInterruptions', 'defaultVariables']) expect(validateField(field, config[field])).toEqual([]);
  });

  it('books an appointment from Whisper-style transcripts and ends the call', async () => {
    const { brain, ctx, say } = start();
    expect(textOf(await collect(brain.opening(ctx)))).toMatch(/^Hello, thanks for calling Bright Smile Dental\. I can book an appointment/);
    expect(textOf(await say(" I'd like to book an appointment."))).toMatch(/What name should I put the appointment under\?$/);
    const named = await say(' Yeah, my name is Sarah.');
    expect(named[0]).toEqual({ type: 'variables', values: { caller_name: 'Sarah' } });
    expect(textOf(named)).toMatch(/^Thanks Sarah\. Which day would suit you\?/);
    const booked = await say(' Tuesday.');
    expect(booked[0]).toEqual({ type: 'variables', values: { day: 'Tuesday' } });
    expect(textOf(booked)).toMatch(/^Thanks Sarah, you are booked for Tuesday at Bright Smile Dental\./);
    expect(booked.at(-1)).toEqual({ type: 'end_call', reason: 'workflow_end' });
    expect(ctx.variables).toMatchObject({ caller_name: 'Sarah', day: 'Tuesday', appointment_booked: true });
  });

  it('takes a bare name after a misheard answer, and "tomorrow" as a day', async () => {
    const { ctx, say } = start();
    expect(textOf(await say(' Um.'))).toMatch(/^Sorry, I didn't catch that\. I can book an appointment/);
    await say(' Can I schedule a cleaning?');
    expect(textOf(await say(' Mm, what?? I mean, what do you need?'))).toMatch(/^Sorry, I didn't catch your name\./);
    expect(textOf(await say(' Priya Patel.'))).toMatch(/^Thanks Priya\./);
    expect(textOf(await say(' Tomorrow works for me.'))).toMatch(/you are booked for Tomorrow|you are booked for tomorrow/i);
    expect(ctx.variables.caller_name).toBe('Priya');
  });

  it('answers opening hours, returns to the menu on "yes", and transfers to a person', async () => {
    const { say } = start();
    expect(textOf(await say(' What are your opening hours?'))).toMatch(/^Bright Smile Dental is open Monday to Friday.*anything else/);
    expect(textOf(await say(' Yes, please.'))).toMatch(/^I can book an appointment/);
    const transfer = await say(' Can I talk to a real person?');
    expect(transfer.at(-1)).toEqual({ type: 'transfer', number: '+15555550100' });
  });

  it('says goodbye after hours when nothing else is needed', async () => {
    const { say } = start();
    await say(' When are you open on Saturday?');
    const bye = await say(" No, that's all. Thank you.");
    expect(textOf(bye)).toBe('Thanks for calling Bright Smile Dental. Goodbye!');
    expect(bye.at(-1)).toEqual({ type: 'end_call', reason: 'workflow_end' });
  });
});

describe('LlmBrain over OpenAI-compatible HTTP', () => {
  const API_KEY = 'sk-test-SECRET-0123456789abcdef';
  let mock: OpenAiMock | null = null;
  afterEach(async () => {
    await mock?.close();
    mock = null;
  });
  const serve = async (respond: (req: import('./support/openai-mock.js').MockRequest) => MockReply | Promise<MockReply>, apiKey: string | undefined = API_KEY) => {
    mock = new OpenAiMock({ apiKey, respond });
    return mock.start();
  };
  const brainAt = (baseUrl: string, extra: Partial<ConstructorParameters<typeof LlmBrain>[0]> = {}) =>
    new LlmBrain({ endpoint: { baseUrl, model: 'test-model', apiKey: API_KEY, temperature: 0.3 }, systemPrompt: 'You are the receptionist of {{clinic}}. Today is {{current_day}}.', ...extra });

  it('streams text incrementally: the first piece arrives before the server sends its last chunk', async () => {
    const text = 'Sure, I can help you with that appointment. Which day would suit you best?';
    const baseUrl = await serve(() => ({ text, chunkDelayMs: 25 }));
    const brain = brainAt(baseUrl);
    const arrivals: number[] = [];
    const events: BrainEvent[] = [];
    for await (const ev of brain.reply('Hi', ctxOf({ clinic: 'Bright Smile' }))) {
      arrivals.push(performance.now());
      events.push(ev);
    }
    const sent = mock!.chunkTimes[0]!;
    expect(events.length).toBe(textPieces(text).length);
    expect(events.every((e) => e.type === 'text')).toBe(true);
    expect(textOf(events)).toBe(text);
    expect(arrivals[0]!).toBeLessThan(sent.at(-1)!);
    expect(sent.at(-1)! - arrivals[0]!).toBeGreaterThan(100);
  });

  it('sends the rendered system prompt first, the model, temperature, stream and the bearer key', async () => {
    const baseUrl = await serve(() => ({ text: 'Hello!' }));
    await collect(brainAt(baseUrl).reply('Hi', ctxOf({ clinic: 'Bright Smile', current_day: 'Monday' })));
    const req = mock!.requests[0]!;
    expect(req.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(req.body).toMatchObject({ model: 'test-model', stream: true, temperature: 0.3 });
    expect(req.body.tools).toBeUndefined();
    expect(req.body.messages).toEqual([
      { role: 'system', content: 'You are the receptionist of Bright Smile. Today is Monday.' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('keeps the history across turns, starting with a templated first message', async () => {
    let n = 0;
    const baseUrl = await serve(() => ({ text: `Answer ${++n}.` }));
    const brain = brainAt(baseUrl, { firstMessage: 'Welcome to {{clinic}}!' });
    const ctx = ctxOf({ clinic: 'Bright Smile' });
    expect(await collect(brain.opening(ctx))).toEqual([{ type: 'text', text: 'Welcome to Bright Smile!' }]);
    await collect(brain.reply('First question', ctx));
    brain.noteUser('Unanswered aside');
    await collect(brain.reply('Second question', ctx));
    expect(mock!.requests[1]!.body.messages!.slice(1)).toEqual([
      { role: 'assistant', content: 'Welcome to Bright Smile!' },
      { role: 'user', content: 'First question' },
      { role: 'assistant', content: 'Answer 1.' },
      { role: 'user', content: 'Unanswered aside' },
      { role: 'user', content: 'Second question' },
    ]);
  });

  it('assembles a streamed tool call, then sends the tool result and streams the narration', async () => {
    const args = '{"order_id":"A-12345","include_history":true}';
    const baseUrl = await serve((req) => (req.body.messages!.at(-1)!.role === 'tool' ? { text: 'Your order has shipped.' } : { text: 'Let me check.', toolCalls: [{ name: 'lookup_order', arguments: args }] }));
    const { tools, systemTools } = functionToolsFromAgentTools([
      { type: 'api_call', name: 'lookup_order', description: 'Look up an order', url: 'https://example.com', method: 'GET', llmParameters: [{ name: 'order_id', description: 'The order id', type: 'text', required: true }, { name: 'include_history', type: 'boolean' }] },
    ]);
    const brain = brainAt(baseUrl, { tools, systemTools });
    const ctx = ctxOf();
    const first = await collect(brain.reply('Where is my order?', ctx));
    expect(textOf(first)).toBe('Let me check.');
    const call = first.at(-1);
    expect(call).toEqual({ type: 'tool_call', call: { id: expect.stringMatching(/^call_/), name: 'lookup_order', arguments: args } });
    expect(mock!.requests[0]!.body).toMatchObject({ tool_choice: 'auto', tools: [{ type: 'function', function: { name: 'lookup_order', description: 'Look up an order' } }] });
    const id = (call as Extract<BrainEvent, { type: 'tool_call' }>).call.id;
    brain.addToolResult(id, '{"status":"shipped"}');
    const narration = await collect(brain.reply(null, ctx));
    expect(textOf(narration)).toBe('Your order has shipped.');
    expect(mock!.requests[1]!.body.messages!.slice(-3)).toEqual([
      { role: 'user', content: 'Where is my order?' },
      { role: 'assistant', content: 'Let me check.', tool_calls: [{ id, type: 'function', function: { name: 'lookup_order', arguments: args } }] },
      { role: 'tool', tool_call_id: id, content: '{"status":"shipped"}' },
    ]);
  });

  it('turns the end-call and transfer functions into end_call and transfer events', async () => {
    let next: MockReply = { text: 'Goodbye!', toolCalls: [{ name: 'hang_up', arguments: '{}' }] };
    const baseUrl = await serve(() => next);
    const { tools, systemTools } = functionToolsFromAgentTools([
      { type: 'end_call', name: 'hang_up', description: 'End the call' },
      { type: 'transfer_call', name: 'to_billing', description: 'Transfer to billing', transferNumber: '+14155550100' },
    ]);
    const brain = brainAt(baseUrl, { tools, systemTools });
    const ended = await collect(brain.reply('Bye', ctxOf()));
    expect(textOf(ended)).toBe('Goodbye!');
    expect(nonText(ended)).toEqual([{ type: 'end_call', reason: 'agent_ended_call' }]);
    next = { toolCalls: [{ name: 'to_billing', arguments: '' }] };
    expect(await collect(brain.reply('Billing please', ctxOf()))).toEqual([{ type: 'transfer', number: '+14155550100' }]);
    expect(mock!.requests[0]!.body.tools).toEqual([
      { type: 'function', function: { name: 'hang_up', description: 'End the call', parameters: { type: 'object', properties: {}, additionalProperties: false } } },
      { type: 'function', function: { name: 'to_billing', description: 'Transfer to billing', parameters: { type: 'object', properties: {}, additionalProperties: false } } },
    ]);
  });

  it('yields one error event for HTTP 500, an unreachable endpoint and a wrong key, never showing the key', async () => {
    const baseUrl = await serve(() => ({ status: 500 }));
    const failed = await collect(brainAt(baseUrl).reply('Hi', ctxOf()));
    expect(failed).toEqual([{ type: 'error', code: 'llm_unavailable', message: expect.stringContaining('HTTP 500') }]);

    const wrongKey = new LlmBrain({ endpoint: { baseUrl, model: 'm', apiKey: 'sk-wrong-key-987654321' }, systemPrompt: '' });
    const denied = await collect(wrongKey.reply('Hi', ctxOf()));
    expect(denied).toEqual([{ type: 'error', code: 'llm_unavailable', message: expect.stringContaining('HTTP 401') }]);
    expect(JSON.stringify(denied)).not.toMatch(/sk-wr|4321/);

    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const unreachable = await collect(brainAt(`http://127.0.0.1:${port}/v1`).reply('Hi', ctxOf()));
    expect(unreachable).toEqual([{ type: 'error', code: 'llm_unavailable', message: expect.stringContaining('ECONNREFUSED') }]);
    expect(JSON.stringify([failed, unreachable])).not.toContain(API_KEY);
  });

  it('times out when the endpoint does not answer', async () => {
    const baseUrl = await serve(() => new Promise<MockReply>((r) => setTimeout(() => r({ text: 'late' }), 1500)));
    const started = performance.now();
    const events = await collect(brainAt(baseUrl, { timeoutMs: 200 }).reply('Hi', ctxOf()));
    expect(events).toEqual([{ type: 'error', code: 'llm_unavailable', message: 'LLM endpoint did not answer within 200 ms' }]);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('reports a malformed or cut-off stream as llm_bad_response after the text already streamed', async () => {
    const servers: Server[] = [];
    const rawServer = async (payload: string) => {
      const s = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(payload);
      });
      servers.push(s);
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      return `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`;
    };
    const chunk = (content: string) => `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
    try {
      const garbled = await collect(brainAt(await rawServer(`${chunk('Hel')}data: {not json\n\n`)).reply('Hi', ctxOf()));
      expect(garbled).toEqual([{ type: 'text', text: 'Hel' }, { type: 'error', code: 'llm_bad_response', message: expect.stringContaining('not JSON') }]);
      const cut = await collect(brainAt(await rawServer(chunk('Hello'))).reply('Hi', ctxOf()));
      expect(cut).toEqual([{ type: 'text', text: 'Hello' }, { type: 'error', code: 'llm_bad_response', message: 'LLM stream ended before the reply finished' }]);
    } finally {
      await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    }
  });

  it('stops streaming and cancels the request when the signal aborts', async () => {
    const text = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    const baseUrl = await serve(() => ({ text, chunkDelayMs: 20 }));
    const ac = new AbortController();
    const brain = brainAt(baseUrl);
    const events: BrainEvent[] = [];
    for await (const ev of brain.reply('Talk', ctxOf({}, ac.signal))) {
      events.push(ev);
      if (events.length === 2) ac.abort();
    }
    expect(events).toHaveLength(2);
    const sentAtAbort = mock!.chunkTimes[0]!.length;
    await new Promise((r) => setTimeout(r, 150));
    // The server noticed the closed connection and stopped writing long before the 43 chunks of the full reply.
    expect(mock!.chunkTimes[0]!.length).toBeLessThanOrEqual(sentAtAbort + 1);
    expect(mock!.chunkTimes[0]!.length).toBeLessThan(20);
  });

  it('truncateLastReply changes the assistant message sent next time', async () => {
    let n = 0;
    const baseUrl = await serve(() => ({ text: n++ === 0 ? 'One two three four five.' : 'OK.' }));
    const brain = brainAt(baseUrl);
    await collect(brain.reply('Count', ctxOf()));
    brain.truncateLastReply('One two');
    await collect(brain.reply('Stop', ctxOf()));
    expect(mock!.requests[1]!.body.messages!.slice(1)).toEqual([
      { role: 'user', content: 'Count' },
      { role: 'assistant', content: 'One two' },
      { role: 'user', content: 'Stop' },
    ]);
  });

  it('the mock answers a non-streaming request with one chat.completion', async () => {
    const baseUrl = await serve(() => ({ text: 'Plain answer', toolCalls: [{ name: 'f', arguments: '{"a":1}' }] }));
    const res = await fetch(`${baseUrl}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [] }) });
    const body = (await res.json()) as { object: string; choices: { message: { content: string; tool_calls: { function: { name: string; arguments: string } }[] }; finish_reason: string }[] };
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0]).toMatchObject({ message: { content: 'Plain answer', tool_calls: [{ function: { name: 'f', arguments: '{"a":1}' } }] }, finish_reason: 'tool_calls' });
  });
});

describe('functionToolsFromAgentTools', () => {
  it('builds JSON Schemas from llmParameters and variablesExtractionSchema, skips disabled tools', () => {
    const { tools, systemTools } = functionToolsFromAgentTools([
      { type: 'end_call', name: 'hang_up', description: 'End', enabled: false },
      { type: 'api_call', name: 'book', description: 'Book a slot', llmParameters: [{ name: 'day', description: 'Weekday', type: 'enum', values: ['mon', 'tue'], required: true }, { name: 'people', type: 'number' }] },
      { type: 'extract_dynamic_variables', name: 'extract', description: 'Extract', variablesExtractionSchema: [{ name: 'email', description: 'Email', type: 'text' }, { name: 'vip', type: 'boolean' }] },
      { type: 'knowledge_base_search', name: 'kb', description: 'Search', knowledgeBaseId: 'kb1' },
    ]);
    expect(systemTools).toEqual({});
    expect(tools.map((t) => t.name)).toEqual(['book', 'extract', 'kb']);
    expect(tools[0]!.parameters).toEqual({ type: 'object', properties: { day: { type: 'string', enum: ['mon', 'tue'], description: 'Weekday' }, people: { type: 'number' } }, required: ['day'] });
    expect(tools[1]!.parameters).toEqual({ type: 'object', properties: { email: { type: 'string', description: 'Email' }, vip: { type: 'boolean' } } });
    expect(tools[2]!.parameters).toMatchObject({ properties: { query: { type: 'string' } }, required: ['query'] });
  });
});
