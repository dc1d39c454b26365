// The operator's language models: named OpenAI-compatible endpoints (PARLEY_LLM_MODELS or PARLEY_LLM_MODELS_FILE) and
// the server default (PARLEY_LLM_*); which one an agent's `slmModel` or a chat-completions `model` gets.
import type { LlmEndpoint } from '../engine/agent/types.js';

/** One configured model: the name agents (`slmModel`) and chat completions (`model`) ask for, and where it runs. */
export interface NamedLlm {
  name: string;
  /** Up to and including the version segment (`/chat/completions` is appended); trailing slashes removed. */
  baseUrl: string;
  /** The model id sent to that endpoint. */
  model: string;
  /** Bearer key for the endpoint; never logged, never returned. */
  apiKey?: string;
}

/** The settings that name the models (for messages). */
export const MODELS_SETTING = 'PARLEY_LLM_MODELS';
export const MODELS_FILE_SETTING = 'PARLEY_LLM_MODELS_FILE';
export const DEFAULT_LLM_SETTING = 'PARLEY_LLM_BASE_URL';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$/;
const FIELDS = new Set(['baseUrl', 'model', 'apiKey']);

/**
 * Reads the JSON map `{"<name>": {"baseUrl": "https://…/v1", "model": "…", "apiKey"?: "…"}}`. Throws one Error naming
 * `source` and every problem found; no message ever contains a key (nor the JSON text, which holds them).
 */
export function parseLlmModels(json: string, source: string): NamedLlm[] {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    // V8's message quotes the text around the fault, which may be a key: only the position is kept.
    const at = /position (\d+)/.exec(err instanceof Error ? err.message : '')?.[1];
    throw new Error(`${source} is not valid JSON${at ? ` (at character ${at})` : ''}: expected {"<name>": {"baseUrl": "https://host/v1", "model": "<model id>", "apiKey": "<optional key>"}}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`${source} must be a JSON object of model names, e.g. {"electron": {"baseUrl": "https://host/v1", "model": "<model id>"}}`);
  }
  const problems: string[] = [];
  const models: NamedLlm[] = [];
  for (const [name, entry] of Object.entries(value as Record<string, unknown>)) {
    const where = `${source} "${name}"`;
    if (!NAME.test(name)) problems.push(`${source}: "${name}" is not a usable model name (letters, digits and . _ : / -, at most 100)`);
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      problems.push(`${where} must be an object with baseUrl, model and an optional apiKey`);
      continue;
    }
    const e = entry as Record<string, unknown>;
    const unknown = Object.keys(e).filter((k) => !FIELDS.has(k));
    if (unknown.length) problems.push(`${where}: unknown field${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (allowed: baseUrl, model, apiKey)`);
    let baseUrl: string | undefined;
    let credentials = false;
    if (typeof e.baseUrl === 'string') {
      try {
        const url = new URL(e.baseUrl.trim());
        credentials = Boolean(url.username || url.password);
        if ((url.protocol === 'http:' || url.protocol === 'https:') && !credentials) baseUrl = e.baseUrl.trim().replace(/\/+$/, '');
      } catch {
        /* reported below */
      }
    }
    if (credentials) problems.push(`${where}.baseUrl must not carry credentials (put the key in apiKey)`);
    else if (!baseUrl) problems.push(`${where}.baseUrl must be an http or https URL up to the version segment, such as https://api.example.com/v1`);
    const model = typeof e.model === 'string' && e.model.trim() ? e.model.trim() : undefined;
    if (!model) problems.push(`${where}.model must be the model id to ask of that endpoint (a non-empty string)`);
    if (e.apiKey !== undefined && (typeof e.apiKey !== 'string' || !e.apiKey)) problems.push(`${where}.apiKey must be a non-empty string when given`);
    if (baseUrl && model) models.push({ name, baseUrl, model, ...(typeof e.apiKey === 'string' && e.apiKey ? { apiKey: e.apiKey } : {}) });
  }
  if (problems.length) throw new Error(problems.join('; '));
  return models;
}

/** A model chosen to answer: where it runs and the name the call record and the logs show for it. */
export interface ChosenLlm {
  endpoint: LlmEndpoint;
  /** The configured name for a named model; the model id for the server default or an agent's model block. */
  label: string;
  source: 'named' | 'default';
}

/** The operator's models: the named ones and the server default. */
export class LlmModels {
  private readonly byName: Map<string, NamedLlm>;

  constructor(
    named: readonly NamedLlm[] = [],
    readonly defaultLlm?: LlmEndpoint,
  ) {
    this.byName = new Map(named.map((m) => [m.name, m]));
  }

  /** The configured names, in the order given. */
  names(): string[] {
    return [...this.byName.keys()];
  }

  /** The named model `name`, if configured. */
  named(name: string): ChosenLlm | undefined {
    const m = this.byName.get(name);
    if (!m) return undefined;
    return { endpoint: { baseUrl: m.baseUrl, model: m.model, ...(m.apiKey ? { apiKey: m.apiKey } : {}) }, label: m.name, source: 'named' };
  }

  /** The named model `name` if configured, else the server default; undefined when neither exists. */
  choose(name: string | undefined): ChosenLlm | undefined {
    const named = name ? this.named(name) : undefined;
    if (named) return named;
    if (this.defaultLlm) return { endpoint: this.defaultLlm, label: this.defaultLlm.model, source: 'default' };
    return undefined;
  }

  /** Why `name` cannot be served (no such named model and no default): one sentence for logs, records and publish. */
  notConfigured(name: string | undefined): string {
    const known = this.names();
    const which = name ? `slmModel "${name}" is not configured on this server` : 'No language model is configured on this server';
    return `${which} (${MODELS_SETTING}${known.length ? ` has ${known.map((n) => `"${n}"`).join(', ')}` : ' is unset'}) and there is no default model (${DEFAULT_LLM_SETTING})`;
  }
}

/**
 * What publishing an agent with this configuration should warn about: a single-prompt agent without its own model
 * block whose `slmModel` no configured model answers (its calls would end `llm_not_configured`), or answers only by
 * falling back to the server default while named models are configured.
 */
export function modelWarnings(workflowType: string, config: Record<string, unknown>, models: LlmModels): string[] {
  if (workflowType === 'workflow_graph') return [];
  if (config.model && typeof config.model === 'object') return [];
  const slm = typeof config.slmModel === 'string' ? config.slmModel : undefined;
  if (slm && models.named(slm)) return [];
  if (models.defaultLlm) {
    if (!models.names().length) return [];
    return [`slmModel "${slm ?? ''}" is not one of the configured models (${models.names().join(', ')}): calls use the server default model (${models.defaultLlm.model})`];
  }
  return [`${models.notConfigured(slm)}: calls of this agent end with endReason llm_not_configured`];
}
