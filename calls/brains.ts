// Picks an agent's brain: the offline workflow graph, or an OpenAI-compatible model (its model block, the operator's
// model its slmModel names, or the server default).
import type { SecretVault } from '../control-plane/secrets/vault.js';
import { LlmBrain, functionToolsFromAgentTools } from '../engine/agent/brains/llm.js';
import { WorkflowBrain } from '../engine/agent/brains/workflow.js';
import type { AgentSpec, Brain, BrainEvent, FunctionTool, LlmEndpoint } from '../engine/agent/types.js';
import { DEFAULT_LLM_SETTING, LlmModels } from './llm-models.js';

export { DEFAULT_LLM_SETTING };

export interface BrainDeps {
  vault: SecretVault;
  orgId: string;
  defaultLlm?: LlmEndpoint;
  /** The operator's named models (PARLEY_LLM_MODELS) and the default; without it only `defaultLlm` is known. */
  models?: LlmModels;
  /** Where a call whose model is not configured says so (a warning log line). */
  warn?: (fields: Record<string, unknown>, message: string) => void;
}

/** The end reason (and error code) of a call whose agent has no language model to answer with. */
export const LLM_NOT_CONFIGURED = 'llm_not_configured';

/** `extraTools`: library tools (toolRefs) offered to the model beside the agent's own `tools`. */
export async function createBrain(spec: AgentSpec, config: Record<string, unknown>, deps: BrainDeps, extraTools: FunctionTool[] = []): Promise<Brain> {
  if (spec.workflowType === 'workflow_graph') {
    try {
      return new WorkflowBrain(spec.workflowGraph, { firstMessage: spec.firstMessage });
    } catch (err) {
      return new UnavailableBrain('workflow_invalid', `The agent's workflow graph cannot run: ${err instanceof Error ? err.message : String(err)}`, spec.firstMessage);
    }
  }
  const chosen = await chooseLlm(config, deps);
  if ('error' in chosen) {
    const slmModel = typeof config.slmModel === 'string' ? config.slmModel : null;
    // A model block that cannot be used (a missing key secret) keeps the call up, apologising each turn, as before.
    deps.warn?.({ slmModel, code: LLM_NOT_CONFIGURED, reason: chosen.error }, chosen.missing ? 'the agent has no language model: the call ends at its first turn (llm_not_configured)' : "the agent's model block cannot be used");
    return new UnavailableBrain(LLM_NOT_CONFIGURED, chosen.error, spec.firstMessage, chosen.missing);
  }
  const { tools, systemTools } = functionToolsFromAgentTools(spec.tools ?? []);
  const systemPrompt = [spec.globalPrompt, spec.prompt].filter((p) => p && p.trim()).join('\n\n');
  const names = new Set(extraTools.map((t) => t.name));
  return new LlmBrain({ endpoint: chosen.endpoint, modelName: chosen.label, systemPrompt, firstMessage: spec.firstMessage, tools: [...tools.filter((t) => !names.has(t.name)), ...extraTools], systemTools });
}

/**
 * The model a single-prompt agent's calls use, first that applies: its own `model` block (an endpoint the agent
 * names itself, its key from the vault); the operator's model named by its `slmModel` (PARLEY_LLM_MODELS); the
 * server default (PARLEY_LLM_*). `label` is what the call record's `slmModelUsed` says: the configured name of a
 * named model, else the model id. `missing`: no model at all (not a model block that cannot be used).
 */
export async function chooseLlm(config: Record<string, unknown>, deps: BrainDeps): Promise<{ endpoint: LlmEndpoint; label: string } | { error: string; missing: boolean }> {
  const model = config.model;
  if (model && typeof model === 'object') {
    const m = model as { baseUrl?: string; model?: string; apiKeySecret?: string; temperature?: number };
    if (!m.baseUrl || !m.model) return { error: 'The agent model block needs baseUrl and model', missing: false };
    let apiKey: string | undefined;
    if (m.apiKeySecret) {
      apiKey = await deps.vault.get(deps.orgId, m.apiKeySecret);
      if (apiKey === undefined) return { error: `The agent's model API key secret "${m.apiKeySecret}" does not exist in the vault (POST /secret)`, missing: false };
    }
    return { endpoint: { baseUrl: m.baseUrl, model: m.model, apiKey, temperature: m.temperature }, label: m.model };
  }
  const models = deps.models ?? new LlmModels([], deps.defaultLlm);
  const slm = typeof config.slmModel === 'string' ? config.slmModel : undefined;
  const chosen = models.choose(slm);
  if (chosen) return { endpoint: chosen.endpoint, label: chosen.label };
  return { error: `${models.notConfigured(slm)}; set it, or the agent's model block`, missing: true };
}

/** The endpoint of `chooseLlm` (post-call analytics use the call's own model). */
export async function llmEndpoint(config: Record<string, unknown>, deps: BrainDeps): Promise<LlmEndpoint | { error: string }> {
  const chosen = await chooseLlm(config, deps);
  return 'error' in chosen ? { error: chosen.error } : chosen.endpoint;
}

/**
 * A brain that cannot answer: says the first message (if any), then on each turn reports why as an error event and
 * apologises. With `endCall` (no model is configured at all) the first turn's apology is the last thing said: the
 * call ends with the error's code as its end reason.
 */
export class UnavailableBrain implements Brain {
  constructor(
    private readonly code: string,
    private readonly message: string,
    private readonly firstMessage?: string,
    private readonly endCall = false,
  ) {}

  async *opening(): AsyncIterable<BrainEvent> {
    if (this.firstMessage) yield { type: 'text', text: this.firstMessage };
  }

  async *reply(): AsyncIterable<BrainEvent> {
    yield { type: 'error', code: this.code, message: this.message };
    if (!this.endCall) return;
    yield { type: 'text', text: "Sorry, I can't answer right now. Please try again later. Goodbye." };
    yield { type: 'end_call', reason: this.code, endReason: this.code };
  }

  addToolResult(): void {}
  truncateLastReply(): void {}
}
