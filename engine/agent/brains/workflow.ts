// Deterministic, offline brain for `workflow_graph` agents: walks a graph of spoken nodes on keyword/regex edges.
//
// Graph shape (validated by ./workflow-schema.ts):
//   { "startNodeId": "greet",                       // optional; default the first node
//     "nodes": [
//       { "id": "greet", "type": "say",               // say | end_call | transfer
//         "text": "Hello {{name}}, ...",              // spoken on arrival ({{var}} templated)
//         "extract": [{ "variable": "order_id", "regex": "(\\d{4,})", "flags": "i" }],  // applied to the user's reply
//         "set": { "stage": "greeting" },             // variables set on arrival
//         "noMatchText": "Sorry, ..." },              // said when no edge matches (then the text again)
//       { "id": "bye", "type": "end_call", "text": "Goodbye." },
//       { "id": "agent", "type": "transfer", "text": "Transferring you now.", "transferNumber": "+15550100",
//         "transferOption": { "type": "warm_transfer",  // optional; cold_transfer by default
//                             "privateHandoffOption": { "type": "static", "prompt": "A caller about billing." } },
//         "onHoldMusic": "ringtone", "transferOnlyIfHuman": true, "detectionTimeout": 30 } ],  // optional, as on transfer_call
//     "edges": [                                      // evaluated in order per node; first match wins
//       { "from": "greet", "to": "bye", "condition": { "type": "keyword", "keywords": ["bye", "no thanks"] } },
//       { "from": "greet", "to": "x", "condition": { "type": "regex", "pattern": "\\border\\b", "flags": "i" } },
//       { "from": "menu", "to": "sales", "condition": { "type": "digits", "digits": "1" } },  // keypad (DTMF)
//       { "from": "greet", "to": "y", "condition": { "type": "any" } } ] }
//
// Keywords match as whole words/phrases, ignoring case and punctuation ("I'd like to BOOK." matches "book").
// A keypress reaches the graph as the user turn `(pressed 1)` (see ../keypad.ts): a `digits` edge matches exactly
// those keys (or any keypress without `digits`); extraction rules see the same text, so `(\d+)` captures the digits.
// Extraction stores the first capture group that matched (or the whole match); per variable the first matching rule wins.
// end_call and transfer nodes are terminal: their text is followed by an end_call/transfer event, then replies yield nothing.
// A transfer can be refused (a call type or line that cannot transfer): a transfer node with edges out of it is then
// where the conversation goes on, from those edges; without edges it stays terminal.
import type { Brain, BrainContext, BrainEvent, ChatMessage, Vars } from '../types.js';
import { renderTemplate } from '../variables.js';
import { pressedKeys } from '../keypad.js';
import { transferOptionOf } from './llm-tools.js';
import { parseWorkflowGraph, type WorkflowEdge, type WorkflowGraph, type WorkflowNode } from './workflow-schema.js';

const DEFAULT_NO_MATCH = "Sorry, I didn't catch that.";

/** Lowercases, drops apostrophes and turns other punctuation into spaces: "I'd like to book." -> "id like to book". */
function normalize(text: string): string {
  return text
    .toLowerCase()
    .replace(/['’`]/g, '')
    .replace(/[^\p{L}\p{M}\p{N}]+/gu, ' ')
    .trim();
}

function matches(edge: WorkflowEdge, userText: string): boolean {
  const c = edge.condition;
  if (c.type === 'any') return true;
  if (c.type === 'digits') {
    const keys = pressedKeys(userText);
    return keys !== null && (c.digits === undefined || keys === c.digits);
  }
  if (c.type === 'regex') return new RegExp(c.pattern, c.flags).test(userText);
  const said = ` ${normalize(userText)} `;
  return c.keywords.some((k) => {
    const kw = normalize(k);
    return kw !== '' && said.includes(` ${kw} `);
  });
}

export class WorkflowBrain implements Brain {
  /** The conversation so far (for symmetry with the LLM brain; the graph alone decides). */
  readonly history: ChatMessage[] = [];
  private readonly graph: WorkflowGraph;
  private readonly nodes = new Map<string, WorkflowNode>();
  private current: WorkflowNode;
  private ended = false;

  constructor(
    graph: unknown,
    private readonly opts: { firstMessage?: string } = {},
  ) {
    this.graph = parseWorkflowGraph(graph);
    for (const n of this.graph.nodes) this.nodes.set(n.id, n);
    this.current = this.node(this.graph.startNodeId ?? this.graph.nodes[0]!.id);
  }

  /** Id of the node the conversation is on. */
  get currentNodeId(): string {
    return this.current.id;
  }

  async *opening(ctx: BrainContext): AsyncGenerator<BrainEvent> {
    if (ctx.signal.aborted) return;
    const set = this.applySet(this.current, ctx);
    if (set) yield set;
    const first = renderTemplate(this.opts.firstMessage ?? '', ctx.variables).trim();
    yield* this.arrive(this.current, first || undefined, ctx);
  }

  async *reply(userText: string | null, ctx: BrainContext): AsyncGenerator<BrainEvent> {
    if (userText === null || this.ended || ctx.signal.aborted) return;
    this.history.push({ role: 'user', content: userText });
    const extracted = this.extract(this.current, userText, ctx);
    if (extracted) yield extracted;
    const edge = this.graph.edges.find((e) => e.from === this.current.id && matches(e, userText));
    if (!edge) {
      const sorry = renderTemplate(this.current.noMatchText ?? DEFAULT_NO_MATCH, ctx.variables).trim();
      const again = renderTemplate(this.current.text ?? '', ctx.variables).trim();
      yield* this.say([sorry, again].filter(Boolean).join(' '), ctx);
      return;
    }
    this.current = this.node(edge.to);
    const set = this.applySet(this.current, ctx);
    if (set && !ctx.signal.aborted) yield set;
    yield* this.arrive(this.current, undefined, ctx);
  }

  addToolResult(): void {}

  truncateLastReply(heardText: string): void {
    const last = this.history.at(-1);
    if (last?.role === 'assistant') last.content = heardText;
  }

  noteUser(text: string): void {
    this.history.push({ role: 'user', content: text });
  }

  private node(id: string): WorkflowNode {
    const n = this.nodes.get(id);
    if (!n) throw new Error(`workflow graph has no node "${id}"`);
    return n;
  }

  /** Speaks a node's text (or `override`), then its terminal event. */
  private async *arrive(node: WorkflowNode, override: string | undefined, ctx: BrainContext): AsyncGenerator<BrainEvent> {
    if (node.type === 'end_call' || (node.type === 'transfer' && !this.graph.edges.some((e) => e.from === node.id))) this.ended = true;
    yield* this.say(override ?? renderTemplate(node.text ?? '', ctx.variables).trim(), ctx);
    if (ctx.signal.aborted) return;
    if (node.type === 'end_call') yield { type: 'end_call', reason: 'workflow_end' };
    else if (node.type === 'transfer') yield { type: 'transfer', number: node.transferNumber!, ...transferOptionOf(node) };
  }

  private async *say(text: string, ctx: BrainContext): AsyncGenerator<BrainEvent> {
    if (!text || ctx.signal.aborted) return;
    this.history.push({ role: 'assistant', content: text });
    yield { type: 'text', text };
  }

  private applySet(node: WorkflowNode, ctx: BrainContext): BrainEvent | null {
    if (!node.set || Object.keys(node.set).length === 0) return null;
    Object.assign(ctx.variables, node.set);
    return { type: 'variables', values: { ...node.set } };
  }

  private extract(node: WorkflowNode, userText: string, ctx: BrainContext): BrainEvent | null {
    const values: Vars = {};
    for (const rule of node.extract ?? []) {
      if (Object.hasOwn(values, rule.variable)) continue;
      const m = new RegExp(rule.regex, rule.flags).exec(userText);
      if (!m) continue;
      const value = (m.slice(1).find((g) => g !== undefined) ?? m[0]).trim();
      if (value) values[rule.variable] = value;
    }
    if (Object.keys(values).length === 0) return null;
    Object.assign(ctx.variables, values);
    return { type: 'variables', values };
  }
}
