// Picks an agent's brain: the offline workflow graph, or an OpenAI-compatible model (its API key read from the vault).
import type { SecretVault } from '../control-plane/secrets/vault.js';
import { LlmBrain, functionToolsFromAgentTools } from '../engine/agent/brains/llm.js';
import { WorkflowBrain } from '../engine/agent/brains/workflow.js';
import type { AgentSpec, Brain, BrainEvent, FunctionTool, LlmEndpoint } from '../engine/agent/types.js';

export interface BrainDeps {
  vault: SecretVault;
  orgId: string;
  defaultLlm?: LlmEndpoint;
}

/** Setting that names the server's default language model. */
export const DEFAULT_LLM_SETTING = 'PARLEY_LLM_BASE_URL';

/** `extraTools`: library tools (toolRefs) offered to the model beside the agent's own `tools`. */
export async function createBrain(spec: AgentSpec, config: Record<string, unknown>, deps: BrainDeps, extraTools: FunctionTool[] = []): Promise<Brain> {
  if (spec.workflowType === 'workflow_graph') {
    try {
      return new WorkflowBrain(spec.workflowGraph, { firstMessage: spec.firstMessage });
    } catch (err) {
      return new UnavailableBrain('workflow_invalid', `The agent's workflow graph cannot run: ${err instanceof Error ? err.message : String(err)}`, spec.firstMessage);
    }
  }
  const endpoint = await llmEndpoint(config.model, deps);
  if ('error' in endpoint) return new UnavailableBrain('llm_not_configured', endpoint.error, spec.firstMessage);
  const { tools, systemTools } = functionToolsFromAgentTools(spec.tools ?? []);
  const systemPrompt = [spec.globalPrompt, spec.prompt].filter((p) => p && p.trim()).join('\n\n');
  const names = new Set(extraTools.map((t) => t.name));
  return new LlmBrain({ endpoint, systemPrompt, firstMessage: spec.firstMessage, tools: [...tools.filter((t) => !names.has(t.name)), ...extraTools], systemTools });
}

export async function llmEndpoint(model: unknown, deps: BrainDeps): Promise<LlmEndpoint | { error: string }> {
  if (model && typeof model === 'object') {
    const m = model as { baseUrl?: string; model?: string; apiKeySecret?: string; temperature?: number };
    if (!m.baseUrl || !m.model) return { error: 'The agent model block needs baseUrl and model' };
    let apiKey: string | undefined;
    if (m.apiKeySecret) {
      apiKey = await deps.vault.get(deps.orgId, m.apiKeySecret);
      if (apiKey === undefined) return { error: `The agent's model API key secret "${m.apiKeySecret}" does not exist in the vault (POST /secret)` };
    }
    return { baseUrl: m.baseUrl, model: m.model, apiKey, temperature: m.temperature };
  }
  if (deps.defaultLlm) return deps.defaultLlm;
  return { error: `No language model is configured: set the agent's model block or the server's ${DEFAULT_LLM_SETTING}` };
}

/** A brain that cannot answer: says the first message (if any), then an apology, and reports why as an error event. */
export class UnavailableBrain implements Brain {
  constructor(
    private readonly code: string,
    private readonly message: string,
    private readonly firstMessage?: string,
  ) {}

  async *opening(): AsyncIterable<BrainEvent> {
    if (this.firstMessage) yield { type: 'text', text: this.firstMessage };
  }

  async *reply(): AsyncIterable<BrainEvent> {
    yield { type: 'error', code: this.code, message: this.message };
  }

  addToolResult(): void {}
  truncateLastReply(): void {}
}
