// Validation schema of a workflow graph (the shape is documented in ./workflow.ts); shared by the engine and the API.
import { z } from 'zod';

const E164 = /^\+[1-9]\d{6,14}$/;
const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_TEXT = 2000;

const text = z.string().max(MAX_TEXT);
const id = z.string().min(1).max(100);
const variableName = z.string().regex(VARIABLE, 'must be a variable name (a letter or _, then up to 63 letters, digits or _)');
/** Only flags that keep RegExp.test stateless (no g or y). */
const flags = z.string().regex(/^(?!.*(.).*\1)[imsu]*$/, 'flags may only be i, m, s and u, each at most once').optional();

const compiles = (pattern: string, f: string | undefined): string | null => {
  try {
    new RegExp(pattern, f);
    return null;
  } catch (err) {
    return `invalid regular expression: ${err instanceof Error ? err.message : String(err)}`;
  }
};

const extractRule = z.object({ variable: variableName, regex: z.string().min(1).max(MAX_TEXT), flags }).passthrough();

/** A warm transfer's handoff line (wire `privateHandoffOption` / `publicHandoffOption`): `prompt` is what is said. */
const handoff = z.object({ type: z.enum(['prompt', 'static']).optional(), prompt: text.optional() }).passthrough();

/**
 * A transfer's `transferOption` (wire): cold (REFER, or a bridged second call) or warm (the target is called first and
 * hears the private handoff). Shared by the workflow transfer node and the `transfer_call` tool.
 */
export const transferOptionSchema = z
  .object({
    type: z.enum(['cold_transfer', 'warm_transfer']).default('cold_transfer'),
    privateHandoffOption: handoff.optional(),
    publicHandoffOption: handoff.optional(),
  })
  .passthrough();

/**
 * The rest of a transfer's settings, beside `transferOption` on the `transfer_call` tool (wire) and on the workflow
 * transfer node: what the caller hears while the target rings, and whether only a person may be joined.
 */
export const transferSettingsShape = {
  onHoldMusic: z.enum(['ringtone', 'relaxing_sound', 'uplifting_beats', 'none']).optional(),
  transferOnlyIfHuman: z.boolean().optional(),
  detectionTimeout: z.number().int().min(5).max(60).optional(),
};

const node = z
  .object({
    id,
    type: z.enum(['say', 'end_call', 'transfer']),
    text: text.optional(),
    extract: z.array(extractRule).max(50).optional(),
    set: z.record(variableName, z.union([z.string().max(MAX_TEXT), z.number(), z.boolean()])).optional(),
    noMatchText: text.optional(),
    transferNumber: z.string().regex(E164, 'must be an E.164 number').optional(),
    /** Transfer nodes: how (cold by default). */
    transferOption: transferOptionSchema.optional(),
    ...transferSettingsShape,
  })
  .passthrough();

const condition = z.discriminatedUnion('type', [
  z.object({ type: z.literal('keyword'), keywords: z.array(z.string().trim().min(1).max(200)).min(1).max(100) }).passthrough(),
  z.object({ type: z.literal('regex'), pattern: z.string().min(1).max(MAX_TEXT), flags }).passthrough(),
  z.object({ type: z.literal('any') }).passthrough(),
  // Keys pressed on a telephone keypad (DTMF): exactly these keys, or any keypress without `digits`.
  z.object({ type: z.literal('digits'), digits: z.string().regex(/^[0-9*#A-D]{1,32}$/, 'must be keypad keys (0-9, *, #, A-D)').optional() }).passthrough(),
]);

const edge = z.object({ from: id, to: id, condition }).passthrough();

/** A workflow graph (not null). */
export const workflowGraphSchema = z
  .object({
    startNodeId: id.optional(),
    nodes: z.array(node).min(1).max(500),
    edges: z.array(edge).max(2000).default([]),
  })
  .passthrough()
  .superRefine((g, ctx) => {
    const ids = new Set<string>();
    g.nodes.forEach((n, i) => {
      if (ids.has(n.id)) ctx.addIssue({ code: 'custom', path: ['nodes', i, 'id'], message: `duplicate node id "${n.id}"` });
      ids.add(n.id);
      if (n.type === 'transfer' && !n.transferNumber) ctx.addIssue({ code: 'custom', path: ['nodes', i, 'transferNumber'], message: 'required for transfer nodes' });
      n.extract?.forEach((r, j) => {
        const bad = compiles(r.regex, r.flags);
        if (bad) ctx.addIssue({ code: 'custom', path: ['nodes', i, 'extract', j, 'regex'], message: bad });
      });
    });
    if (g.startNodeId !== undefined && !ids.has(g.startNodeId)) ctx.addIssue({ code: 'custom', path: ['startNodeId'], message: `no node has id "${g.startNodeId}"` });
    g.edges.forEach((e, i) => {
      if (!ids.has(e.from)) ctx.addIssue({ code: 'custom', path: ['edges', i, 'from'], message: `no node has id "${e.from}"` });
      if (!ids.has(e.to)) ctx.addIssue({ code: 'custom', path: ['edges', i, 'to'], message: `no node has id "${e.to}"` });
      if (e.condition.type === 'regex') {
        const bad = compiles(e.condition.pattern, e.condition.flags);
        if (bad) ctx.addIssue({ code: 'custom', path: ['edges', i, 'condition', 'pattern'], message: bad });
      }
    });
  });

export type WorkflowGraph = z.infer<typeof workflowGraphSchema>;
export type WorkflowNode = WorkflowGraph['nodes'][number];
export type WorkflowEdge = WorkflowGraph['edges'][number];

/** Parses a graph; throws an Error listing every problem with its path (e.g. `edges.2.to: no node has id "x"`). */
export function parseWorkflowGraph(graph: unknown): WorkflowGraph {
  if (graph === null || graph === undefined) throw new Error('Invalid workflow graph: the agent has no workflowGraph');
  const result = workflowGraphSchema.safeParse(graph);
  if (result.success) return result.data;
  const problems = result.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(graph)'}: ${i.message}`);
  throw new Error(`Invalid workflow graph: ${problems.join('; ')}`);
}
