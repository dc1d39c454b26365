// The `extract_dynamic_variables` tool in a call (issue 35 item 2): the model calls it with the values of the tool's
// `variablesExtractionSchema` as arguments; each is checked against its declared type (text, number, boolean, enum
// with its values) and, when all are good, they join the call's variables (the record, post-conversation, `{{name}}`
// in later prompts). A call with a bad value stores nothing: the tool result tells the model what was wrong.
import type { ToolCall, Vars } from '../engine/agent/types.js';
import { STANDARD_KEYS } from '../engine/agent/variables.js';

/** Longest text value stored (characters), as for per-call variables. */
const MAX_TEXT = 2000;
const RESERVED: ReadonlySet<string> = new Set(STANDARD_KEYS);

interface Field {
  type: 'text' | 'number' | 'boolean' | 'enum';
  values: string[];
}

/** One run of the tool, as the live events and logs report it (never more than the names and values extracted). */
export interface ExtractionRecord {
  tool: string;
  values: Vars;
  errors: string[];
}

export interface VariableExtractionOptions {
  /** The agent's wire tools (`extract_dynamic_variables` ones are taken). */
  agentTools: Record<string, unknown>[];
  /** Each run of the tool, good or refused. */
  onExtract?(record: ExtractionRecord): void;
}

export class VariableExtraction {
  /** Function name -> its variables by name. */
  private readonly byName = new Map<string, Map<string, Field>>();

  constructor(private readonly opts: VariableExtractionOptions) {
    for (const t of opts.agentTools) {
      if (t.type !== 'extract_dynamic_variables' || t.enabled === false || typeof t.name !== 'string' || !t.name) continue;
      const fields = new Map<string, Field>();
      for (const p of Array.isArray(t.variablesExtractionSchema) ? (t.variablesExtractionSchema as Record<string, unknown>[]) : []) {
        if (typeof p?.name !== 'string' || !p.name || RESERVED.has(p.name)) continue;
        const type = p.type === 'number' || p.type === 'boolean' || p.type === 'enum' ? p.type : 'text';
        fields.set(p.name, { type, values: Array.isArray(p.values) ? p.values.map(String) : [] });
      }
      this.byName.set(t.name, fields);
    }
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The tool result for the model, and the values stored (none when anything was refused). */
  run(call: ToolCall): { result: string; values: Vars | null } {
    const fields = this.byName.get(call.name);
    if (!fields) return { result: JSON.stringify({ error: `no tool named ${call.name}` }), values: null };
    let args: Record<string, unknown>;
    try {
      const parsed = call.arguments ? (JSON.parse(call.arguments) as unknown) : {};
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return this.refuse(call.name, ['the arguments must be a JSON object of variable names and values']);
      args = parsed as Record<string, unknown>;
    } catch {
      return this.refuse(call.name, ['the arguments were not valid JSON']);
    }
    const values: Vars = {};
    const errors: string[] = [];
    for (const [name, raw] of Object.entries(args)) {
      const field = fields.get(name);
      if (!field) {
        errors.push(`${name}: not a variable of this tool (expected ${[...fields.keys()].join(', ') || 'none'})`);
        continue;
      }
      // null: the model does not know it yet; nothing is stored for it.
      if (raw === null || raw === undefined) continue;
      const checked = check(name, field, raw);
      if (typeof checked === 'string') errors.push(checked);
      else values[name] = checked.value;
    }
    if (errors.length) return this.refuse(call.name, errors);
    if (!Object.keys(values).length) return this.refuse(call.name, [`no values given: pass ${[...fields.keys()].join(', ')}`]);
    this.opts.onExtract?.({ tool: call.name, values, errors: [] });
    return { result: JSON.stringify({ stored: values }), values };
  }

  private refuse(tool: string, errors: string[]): { result: string; values: null } {
    this.opts.onExtract?.({ tool, values: {}, errors });
    return { result: JSON.stringify({ error: 'nothing was stored', errors }), values: null };
  }
}

/** The value as its type stores it, or what is wrong with it. */
function check(name: string, field: Field, raw: unknown): { value: string | number | boolean } | string {
  switch (field.type) {
    case 'number': {
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw.trim()) : NaN;
      return Number.isFinite(n) ? { value: n } : `${name}: must be a number, got ${JSON.stringify(raw)}`;
    }
    case 'boolean':
      if (typeof raw === 'boolean') return { value: raw };
      if (raw === 'true' || raw === 'false') return { value: raw === 'true' };
      return `${name}: must be true or false, got ${JSON.stringify(raw)}`;
    case 'enum': {
      const text = typeof raw === 'string' ? raw.trim() : typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : null;
      const match = text === null ? undefined : (field.values.find((v) => v === text) ?? field.values.find((v) => v.toLowerCase() === text.toLowerCase()));
      return match !== undefined ? { value: match } : `${name}: must be one of ${field.values.map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(raw)}`;
    }
    default: {
      if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean') return `${name}: must be text, got ${Array.isArray(raw) ? 'a list' : 'an object'}`;
      const text = String(raw).trim();
      if (!text) return `${name}: must not be empty`;
      return text.length > MAX_TEXT ? `${name}: longer than ${MAX_TEXT} characters` : { value: text };
    }
  }
}
