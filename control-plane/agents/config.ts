// Agent configuration as the spec's blocks: which field lives in which section, defaults, merging and leaf paths.
import { createHash } from 'node:crypto';
import { CONFIG_FIELDS, normalizeField, validateField } from './config-schema.js';
import { DEFAULT_MAX_DELAY_MS, DEFAULT_MIN_DELAY_MS, DEFAULT_TRIGGER_S } from '../../engine/turn/end-of-turn.js';

export const SECTIONS = [
  'workflow_prompt',
  'workflow_tools',
  'workflow_graph',
  'llm',
  'voice',
  'language',
  'call_handling',
  'detection',
  'analytics',
  'timeouts',
  'audio',
  'privacy',
  'widget',
  'playbooks',
] as const;
export type Section = (typeof SECTIONS)[number];

export type AgentConfig = Record<string, unknown>;
export type SectionContents = Record<Section, Record<string, unknown>>;
export type BlockRefs = Record<Section, string>;

export const FIELD_SECTION: Record<string, Section> = {
  prompt: 'workflow_prompt',
  globalPrompt: 'workflow_prompt',
  firstMessage: 'workflow_prompt',
  tools: 'workflow_tools',
  toolRefs: 'workflow_tools',
  workflowGraph: 'workflow_graph',
  slmModel: 'llm',
  model: 'llm',
  synthesizer: 'voice',
  language: 'language',
  transcriberType: 'language',
  allowInterruptions: 'call_handling',
  waitForUserToSpeakFirst: 'call_handling',
  muteUserUntilFirstBotResponse: 'call_handling',
  interruptionBackoffTimer: 'call_handling',
  voiceMailDetectionConfig: 'call_handling',
  defaultVariables: 'call_handling',
  preCallAPI: 'call_handling',
  timezone: 'call_handling',
  globalKnowledgeBaseId: 'call_handling',
  voiceDetectionConfig: 'detection',
  smartTurnConfig: 'detection',
  endpointingConfig: 'detection',
  postCallAnalyticsConfig: 'analytics',
  callDispositionConfig: 'analytics',
  llmIdleTimeoutConfig: 'timeouts',
  sessionTimeoutConfig: 'timeouts',
  backgroundSound: 'audio',
  denoisingConfig: 'audio',
  pronunciationDicts: 'audio',
  speechFormatting: 'audio',
  enableStyleGuide: 'audio',
  redactionConfig: 'privacy',
  playbooks: 'playbooks',
};

/** The section a configuration field lives in; undefined for anything else (including inherited names like `constructor`). */
export function sectionOf(field: string): Section | undefined {
  return Object.hasOwn(FIELD_SECTION, field) ? FIELD_SECTION[field] : undefined;
}

/** The configuration fields of a request body, each in its stored form (see `normalizeField`). */
export function pickConfig(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([k]) => sectionOf(k) !== undefined).map(([k, v]) => [k, normalizeField(k, v)]));
}

for (const field of Object.keys(CONFIG_FIELDS)) {
  if (!FIELD_SECTION[field]) throw new Error(`config field ${field} has no section`);
}

/**
 * Every configuration field's default, written once: a new agent starts from a copy (`defaultConfig`), and the call
 * runtime (calls/agent-spec.ts) falls back to these same values for a field a stored configuration lacks.
 */
export const AGENT_CONFIG_DEFAULTS = deepFreeze({
  prompt: '',
  firstMessage: '',
  tools: [] as unknown[],
  toolRefs: [] as unknown[],
  workflowGraph: null,
  slmModel: 'electron',
  model: null,
  synthesizer: {
    voiceConfig: { model: 'waves_lightning_v3_1', voiceId: 'nyah', gender: 'female' },
    speed: 1.2,
    consistency: 0.5,
    similarity: 0,
    enhancement: 1,
    sampleRate: 16000,
  },
  language: {
    default: 'en',
    supported: ['en'],
    switching: { isEnabled: false, minWordsForDetection: 2, strongSignalThreshold: 0.7, weakSignalThreshold: 0.3, minConsecutiveForWeakThresholdSwitch: 2 },
  },
  allowInterruptions: true,
  waitForUserToSpeakFirst: false,
  muteUserUntilFirstBotResponse: false,
  interruptionBackoffTimer: 0,
  voiceMailDetectionConfig: { enabled: false },
  defaultVariables: {},
  timezone: 'UTC',
  voiceDetectionConfig: { confidence: 0.5, minVolume: 0, triggerTimeInSecs: DEFAULT_TRIGGER_S, releaseTimeInSecs: 0.8 },
  smartTurnConfig: { isEnabled: true, waitTimeInSecs: 0 },
  endpointingConfig: { minDelayMs: DEFAULT_MIN_DELAY_MS, maxDelayMs: DEFAULT_MAX_DELAY_MS },
  postCallAnalyticsConfig: { dispositionMetrics: [] as unknown[] },
  callDispositionConfig: '',
  llmIdleTimeoutConfig: { chatTimeoutTimeInSecs: 60, webcallTimeoutTimeInSecs: 20, telephonyTimeoutTimeInSecs: 20, maxRetries: 2 },
  sessionTimeoutConfig: { timeoutTimeInSecs: 1800 },
  backgroundSound: '',
  denoisingConfig: { isEnabled: false },
  pronunciationDicts: [] as unknown[],
  enableStyleGuide: true,
  redactionConfig: { isEnabled: false },
});

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** A new agent's configuration: a fresh, mutable copy of AGENT_CONFIG_DEFAULTS. */
export function defaultConfig(): AgentConfig {
  return structuredClone(AGENT_CONFIG_DEFAULTS) as AgentConfig;
}

export function splitConfig(config: AgentConfig): SectionContents {
  const out = Object.fromEntries(SECTIONS.map((s) => [s, {}])) as SectionContents;
  for (const [field, value] of Object.entries(config)) {
    const section = sectionOf(field);
    if (section && value !== undefined) out[section][field] = value;
  }
  return out;
}

export function joinSections(contents: Partial<SectionContents>): AgentConfig {
  const config: AgentConfig = {};
  for (const section of SECTIONS) Object.assign(config, contents[section] ?? {});
  return config;
}

/** Canonical JSON (sorted keys) so equal content hashes equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (isPlainObject(value)) {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys(value[k])]));
  }
  return value;
}

export const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Content-addressed block id: equal content of one agent's section shares one block. */
export function blockId(agentId: string, section: Section, content: unknown): string {
  return createHash('sha256').update(`${agentId}\n${section}\n${canonicalJson(content)}`).digest('hex').slice(0, 24);
}

/** Merge patch: objects merge recursively, arrays and scalars replace, null clears. */
export function deepMerge(base: unknown, patch: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch)) out[k] = isPlainObject(v) && isPlainObject(out[k]) ? deepMerge(out[k], v) : v;
  return out;
}

/** Leaf writes of a patch: `{synthesizer:{speed:1}}` -> [{path:'synthesizer.speed', value:1}]. Arrays are leaves. */
export function leafWrites(patch: unknown, prefix = ''): { path: string; value: unknown }[] {
  if (!isPlainObject(patch) || (prefix && Object.keys(patch).length === 0)) return [{ path: prefix, value: patch }];
  return Object.entries(patch).flatMap(([k, v]) => leafWrites(v, prefix ? `${prefix}.${k}` : k));
}

export function getPath(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (!isPlainObject(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

/** Two dot paths touch the same data when one is a prefix of the other. */
export const pathsOverlap = (a: string, b: string): boolean => a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);

export const sameValue = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

/**
 * Validates a partial configuration against the current one: each present field is merged into
 * its current value and the merged value validated. Returns the merged full values of the touched fields.
 */
export function applyConfigPatch(current: AgentConfig, patch: Record<string, unknown>): { merged: AgentConfig; touched: string[]; errors: string[] } {
  const merged: AgentConfig = { ...current };
  const touched: string[] = [];
  const errors: string[] = [];
  for (const [field, value] of Object.entries(patch)) {
    if (!sectionOf(field)) continue;
    const next = isPlainObject(value) && isPlainObject(current[field]) ? deepMerge(current[field], value) : value;
    errors.push(...validateField(field, next));
    merged[field] = next;
    touched.push(field);
  }
  return { merged, touched, errors };
}

/** Config changes between two flattened configs, per section, as leaf paths. */
export function diffConfigs(a: AgentConfig, b: AgentConfig): { unchangedSections: Section[]; diffs: { section: Section; changes: { path: string; oldValue: unknown; newValue: unknown }[] }[] } {
  const sa = splitConfig(a);
  const sb = splitConfig(b);
  const unchangedSections: Section[] = [];
  const diffs: { section: Section; changes: { path: string; oldValue: unknown; newValue: unknown }[] }[] = [];
  for (const section of SECTIONS) {
    const changes = leafDiff(sa[section], sb[section], '');
    if (changes.length === 0) unchangedSections.push(section);
    else diffs.push({ section, changes });
  }
  return { unchangedSections, diffs };
}

function leafDiff(a: unknown, b: unknown, prefix: string): { path: string; oldValue: unknown; newValue: unknown }[] {
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => leafDiff(a[k], b[k], prefix ? `${prefix}.${k}` : k));
  }
  if (sameValue(a, b)) return [];
  return [{ path: prefix, oldValue: a ?? null, newValue: b ?? null }];
}
