// The operator's language models without a server: PARLEY_LLM_MODELS / PARLEY_LLM_MODELS_FILE read and refused at
// start (every problem named, no key ever in a message), which model an agent's configuration gets (its model block,
// then its slmModel's named model, then the default), and what publishing warns about.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../server/settings.js';
import { LlmModels, modelWarnings, parseLlmModels } from '../calls/llm-models.js';
import { chooseLlm, createBrain, UnavailableBrain } from '../calls/brains.js';
import type { SecretVault } from '../control-plane/secrets/vault.js';
import type { AgentSpec, BrainEvent } from '../engine/agent/types.js';

const KEY = 'sk-unit-secret-7f3Kq9';
const dir = mkdtempSync(path.join(tmpdir(), 'parley-llm-models-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The message `fn` throws. */
function thrown(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error('did not throw');
}

const vault = { get: async (_org: string, name: string) => (name === 'block-key' ? 'block-secret' : undefined) } as unknown as SecretVault;

describe('PARLEY_LLM_MODELS', () => {
  it('reads a map of names to endpoints (trailing slashes dropped, the key optional)', () => {
    const models = parseLlmModels(JSON.stringify({ 'gpt-4o': { baseUrl: 'http://127.0.0.1:9000/v1/', model: 'llama3', apiKey: KEY }, electron: { baseUrl: 'https://llm.example.com/v1', model: 'qwen' } }), 'PARLEY_LLM_MODELS');
    expect(models).toEqual([
      { name: 'gpt-4o', baseUrl: 'http://127.0.0.1:9000/v1', model: 'llama3', apiKey: KEY },
      { name: 'electron', baseUrl: 'https://llm.example.com/v1', model: 'qwen' },
    ]);
    expect(loadSettings({ PARLEY_LLM_MODELS: JSON.stringify({ a: { baseUrl: 'http://h/v1', model: 'm' } }) }).llmModels).toEqual([{ name: 'a', baseUrl: 'http://h/v1', model: 'm' }]);
    expect(loadSettings({}).llmModels).toEqual([]);
  });

  it('refuses bad JSON and bad entries at start, naming each problem and never the key', () => {
    const broken = thrown(() => loadSettings({ PARLEY_LLM_MODELS: `{"a": {"baseUrl": "http://h/v1", "model": "m", "apiKey": "${KEY}"` }));
    expect(broken).toMatch(/^PARLEY_LLM_MODELS is not valid JSON/);
    expect(broken).not.toContain(KEY);
    expect(thrown(() => loadSettings({ PARLEY_LLM_MODELS: '["a"]' }))).toContain('PARLEY_LLM_MODELS must be a JSON object of model names');
    const bad = thrown(() =>
      loadSettings({
        PARLEY_LLM_MODELS: JSON.stringify({
          a: { baseUrl: 'localhost:11434', model: 'm', apiKey: KEY },
          b: { baseUrl: 'http://h/v1', api_key: KEY },
          c: 'http://h/v1',
          d: { baseUrl: `https://user:${KEY}@h/v1`, model: 'm' },
          'bad name': { baseUrl: 'http://h/v1', model: 'm' },
        }),
      }),
    );
    expect(bad).toContain('PARLEY_LLM_MODELS "a".baseUrl must be an http or https URL');
    expect(bad).toContain('PARLEY_LLM_MODELS "b": unknown field api_key (allowed: baseUrl, model, apiKey)');
    expect(bad).toContain('PARLEY_LLM_MODELS "b".model must be the model id');
    expect(bad).toContain('PARLEY_LLM_MODELS "c" must be an object');
    expect(bad).toContain('PARLEY_LLM_MODELS "d".baseUrl must not carry credentials');
    expect(bad).toContain('"bad name" is not a usable model name');
    expect(bad).not.toContain(KEY);
  });

  it('PARLEY_LLM_MODELS_FILE: the same map from a file; not with PARLEY_LLM_MODELS; a missing file refuses start', () => {
    const file = path.join(dir, 'models.json');
    writeFileSync(file, JSON.stringify({ local: { baseUrl: 'http://127.0.0.1:8000/v1', model: 'phi', apiKey: KEY } }));
    const settings = loadSettings({ PARLEY_LLM_MODELS_FILE: file });
    expect(settings.llmModels).toEqual([{ name: 'local', baseUrl: 'http://127.0.0.1:8000/v1', model: 'phi', apiKey: KEY }]);
    expect(settings.llmModelsFile).toBe(file);
    expect(thrown(() => loadSettings({ PARLEY_LLM_MODELS_FILE: file, PARLEY_LLM_MODELS: '{}' }))).toContain('PARLEY_LLM_MODELS and PARLEY_LLM_MODELS_FILE are both set');
    expect(thrown(() => loadSettings({ PARLEY_LLM_MODELS_FILE: path.join(dir, 'none.json') }))).toContain('PARLEY_LLM_MODELS_FILE: cannot read');
    writeFileSync(file, JSON.stringify({ local: { baseUrl: 'ftp://h', model: 'phi', apiKey: KEY } }));
    const message = thrown(() => loadSettings({ PARLEY_LLM_MODELS_FILE: file }));
    expect(message).toContain(`PARLEY_LLM_MODELS_FILE (${file}) "local".baseUrl must be an http or https URL`);
    expect(message).not.toContain(KEY);
  });
});

describe('which model answers', () => {
  const models = new LlmModels([{ name: 'gpt-4o', baseUrl: 'http://a/v1', model: 'model-a', apiKey: KEY }], { baseUrl: 'http://d/v1', model: 'model-d' });
  const none = new LlmModels([{ name: 'gpt-4o', baseUrl: 'http://a/v1', model: 'model-a' }]);
  const deps = (m: LlmModels) => ({ vault, orgId: 'org', models: m });

  it('the model block first, then the named model of slmModel, then the default; labelled for the call record', async () => {
    expect(await chooseLlm({ slmModel: 'gpt-4o', model: { baseUrl: 'http://b/v1', model: 'block', apiKeySecret: 'block-key' } }, deps(models))).toEqual({
      endpoint: { baseUrl: 'http://b/v1', model: 'block', apiKey: 'block-secret', temperature: undefined },
      label: 'block',
    });
    expect(await chooseLlm({ slmModel: 'gpt-4o' }, deps(models))).toEqual({ endpoint: { baseUrl: 'http://a/v1', model: 'model-a', apiKey: KEY }, label: 'gpt-4o' });
    expect(await chooseLlm({ slmModel: 'electron' }, deps(models))).toEqual({ endpoint: { baseUrl: 'http://d/v1', model: 'model-d' }, label: 'model-d' });
    const missing = await chooseLlm({ slmModel: 'electron' }, deps(none));
    expect(missing).toEqual({ error: expect.stringContaining('slmModel "electron" is not configured on this server (PARLEY_LLM_MODELS has "gpt-4o") and there is no default model (PARLEY_LLM_BASE_URL)'), missing: true });
    // A model block whose key secret is missing is not a missing model: the call goes on apologising, as before.
    expect(await chooseLlm({ model: { baseUrl: 'http://b/v1', model: 'block', apiKeySecret: 'nope' } }, deps(none))).toMatchObject({ missing: false });
  });

  it('an agent with no model: the first turn apologises and ends the call llm_not_configured, with a warning', async () => {
    const warned: unknown[] = [];
    const spec = { workflowType: 'single_prompt', firstMessage: 'Hello.', tools: [] } as unknown as AgentSpec;
    const brain = await createBrain(spec, { slmModel: 'electron' }, { ...deps(none), warn: (f) => warned.push(f) });
    expect(brain).toBeInstanceOf(UnavailableBrain);
    expect(brain.modelName).toBeUndefined();
    expect(warned).toEqual([expect.objectContaining({ slmModel: 'electron', code: 'llm_not_configured' })]);
    const events: BrainEvent[] = [];
    for await (const ev of brain.reply('Hi', { variables: {}, signal: new AbortController().signal })) events.push(ev);
    expect(events.map((e) => e.type)).toEqual(['error', 'text', 'end_call']);
    expect(events[2]).toEqual({ type: 'end_call', reason: 'llm_not_configured', endReason: 'llm_not_configured' });
    const named = await createBrain(spec, { slmModel: 'gpt-4o' }, deps(models));
    expect(named.modelName).toBe('gpt-4o');
  });

  it('publish warnings: only where a single-prompt agent without a model block has no named model', () => {
    expect(modelWarnings('single_prompt', { slmModel: 'electron' }, none)).toEqual([expect.stringContaining('calls of this agent end with endReason llm_not_configured')]);
    expect(modelWarnings('single_prompt', { slmModel: 'gpt-4o' }, none)).toEqual([]);
    expect(modelWarnings('workflow_graph', { slmModel: 'electron' }, none)).toEqual([]);
    expect(modelWarnings('single_prompt', { slmModel: 'electron', model: { baseUrl: 'http://b/v1', model: 'x' } }, none)).toEqual([]);
    expect(modelWarnings('single_prompt', { slmModel: 'electron' }, models)).toEqual(['slmModel "electron" is not one of the configured models (gpt-4o): calls use the server default model (model-d)']);
    // Only a default, no named models: every slmModel uses it, nothing to warn about.
    expect(modelWarnings('single_prompt', { slmModel: 'electron' }, new LlmModels([], { baseUrl: 'http://d/v1', model: 'model-d' }))).toEqual([]);
    for (const w of [...modelWarnings('single_prompt', { slmModel: 'electron' }, none), ...modelWarnings('single_prompt', { slmModel: 'electron' }, models)]) expect(w).not.toContain(KEY);
  });
});
