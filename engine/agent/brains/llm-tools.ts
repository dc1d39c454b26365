// Turns an agent's wire tools (end_call, transfer_call, api_call, ...) into functions for the language model.
import type { FunctionTool, TransferOption } from '../types.js';
import { z } from 'zod';
import { transferOptionSchema, transferSettingsShape } from './workflow-schema.js';

/** Functions the brain acts on itself instead of handing them to the caller. */
export interface SystemTools {
  /** Name of the function that ends the call. */
  endCall?: string;
  /** Function name -> the E.164 number it transfers to, and how (cold when no option). */
  transfers?: Record<string, { number: string; option?: TransferOption }>;
}

interface WireParameter {
  name?: unknown;
  description?: unknown;
  type?: unknown;
  values?: unknown;
  required?: unknown;
}

const NO_ARGUMENTS = { type: 'object', properties: {}, additionalProperties: false };

/** JSON Schema of an object whose properties are the wire parameters (`{name, description, type, values, required}`). */
function parametersSchema(params: unknown): Record<string, unknown> {
  const properties: Record<string, Record<string, unknown>> = {};
  const required: string[] = [];
  for (const p of (Array.isArray(params) ? params : []) as WireParameter[]) {
    if (typeof p?.name !== 'string' || !p.name) continue;
    const prop: Record<string, unknown> = {};
    if (p.type === 'number') prop.type = 'number';
    else if (p.type === 'boolean') prop.type = 'boolean';
    else {
      prop.type = 'string';
      if (p.type === 'enum' && Array.isArray(p.values)) prop.enum = p.values.map(String);
    }
    if (typeof p.description === 'string' && p.description) prop.description = p.description;
    properties[p.name] = prop;
    if (p.required === true) required.push(p.name);
  }
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}

/**
 * A tool's `transferOption` with its sibling settings (`onHoldMusic`, `transferOnlyIfHuman`, `detectionTimeout`) as
 * the transfer event carries them; none when all are absent (a cold transfer), an unreadable option counts as absent.
 */
export function transferOptionOf(tool: Record<string, unknown>): { option?: TransferOption } {
  const raw = tool.transferOption;
  const parsed = raw === undefined || raw === null ? null : transferOptionSchema.safeParse(raw);
  const settings = z.object(transferSettingsShape).safeParse({ onHoldMusic: tool.onHoldMusic, transferOnlyIfHuman: tool.transferOnlyIfHuman, detectionTimeout: tool.detectionTimeout });
  const extra = settings.success ? Object.fromEntries(Object.entries(settings.data).filter(([, v]) => v !== undefined)) : {};
  if (!parsed?.success && !Object.keys(extra).length) return {};
  return { option: { ...(parsed?.success ? (parsed.data as TransferOption) : { type: 'cold_transfer' }), ...extra } };
}

/** The functions for an agent's enabled tools, and which of them end or transfer the call. */
export function functionToolsFromAgentTools(tools: Record<string, unknown>[]): { tools: FunctionTool[]; systemTools: SystemTools } {
  const out: FunctionTool[] = [];
  const systemTools: SystemTools = {};
  for (const t of tools) {
    if (t.enabled === false || typeof t.name !== 'string' || !t.name) continue;
    const base = { name: t.name, ...(typeof t.description === 'string' && t.description ? { description: t.description } : {}) };
    switch (t.type) {
      case 'end_call':
        systemTools.endCall = t.name;
        out.push({ ...base, parameters: NO_ARGUMENTS });
        break;
      case 'transfer_call':
        if (typeof t.transferNumber !== 'string') continue;
        (systemTools.transfers ??= {})[t.name] = { number: t.transferNumber, ...transferOptionOf(t) };
        out.push({ ...base, parameters: NO_ARGUMENTS });
        break;
      case 'api_call':
        out.push({ ...base, parameters: parametersSchema(t.llmParameters) });
        break;
      case 'extract_dynamic_variables':
        out.push({ ...base, parameters: parametersSchema(t.variablesExtractionSchema) });
        break;
      case 'knowledge_base_search':
        out.push({
          ...base,
          parameters: { type: 'object', properties: { query: { type: 'string', description: 'What to look up in the knowledge base' } }, required: ['query'] },
        });
        break;
      default:
        break;
    }
  }
  return { tools: out, systemTools };
}
