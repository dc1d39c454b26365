// Validation schema of each agent configuration field (wire names), with the ranges the wire doc gives.
import { agentDictEntry } from '../pronunciation/dicts.js';
import { z } from 'zod';
import { transferOptionSchema, transferSettingsShape, workflowGraphSchema } from '../../engine/agent/brains/workflow-schema.js';
import { canonicalZone, timezoneSchema } from './timezone.js';
import { EgressError, checkEgressStatic } from '../../engine/net/egress.js';
import { PLACEHOLDER, headerName, headerValue, responseVariablesSchema, templatedUrl, toolAuthSchema } from '../tools/definition.js';

/** The wire's languages, then ours: de, fr, it (SVOX Pico's voices speak them; docs/models.md, "Voices and languages"). */
const LANGS = ['en', 'hi', 'mr', 'gu', 'ta', 'es', 'north_indic', 'bn', 'or', 'de', 'fr', 'it'] as const;
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;
const E164 = /^\+[1-9]\d{6,14}$/;
const noSpaces = z.string().min(1).max(64).regex(/^\S+$/, 'must not contain spaces');
const range = (min: number, max: number) => z.number().min(min).max(max);

/** The server's egress policy for URLs an agent's configuration names (PARLEY_ALLOW_PRIVATE_EGRESS; set at start). */
const egressPolicy = { allowPrivate: false };
export function setConfigEgressPolicy(allowPrivate: boolean): void {
  egressPolicy.allowPrivate = allowPrivate;
}
/** A URL the egress policy refuses without DNS (a private or loopback literal, metadata, localhost) is a 400 at write time. */
function refuseEgress(raw: string, ctx: z.RefinementCtx): void {
  try {
    checkEgressStatic(new URL(raw.replace(PLACEHOLDER, 'x')), egressPolicy);
  } catch (err) {
    if (err instanceof EgressError) ctx.addIssue({ code: 'custom', message: err.message });
  }
}

const language = z
  .object({
    default: z.enum(LANGS),
    supported: z.array(z.enum(LANGS)).min(1).optional(),
    switching: z
      .object({
        isEnabled: z.boolean().optional(),
        minWordsForDetection: range(1, 10).optional(),
        strongSignalThreshold: range(0.1, 0.9).optional(),
        weakSignalThreshold: range(0.1, 0.9).optional(),
        minConsecutiveForWeakThresholdSwitch: range(1, 5).optional(),
      })
      .passthrough()
      .optional(),
  })
  .passthrough()
  .superRefine((v, ctx) => {
    const supported = v.supported ?? [v.default];
    if (!supported.includes(v.default)) ctx.addIssue({ code: 'custom', path: ['default'], message: 'must be one of language.supported' });
    if (supported.includes('ta') && supported.length > 1) ctx.addIssue({ code: 'custom', path: ['supported'], message: 'ta cannot be combined with other languages' });
  });

const synthesizer = z
  .object({
    voiceConfig: z
      .object({ model: z.string().min(1).max(100).optional(), voiceId: z.string().min(1).max(200).optional(), gender: z.enum(['male', 'female']).optional() })
      .passthrough()
      .optional(),
    speed: range(0, 2).optional(),
    consistency: range(0, 1).optional(),
    similarity: range(0, 1).optional(),
    enhancement: z.union([z.literal(0), z.literal(1), z.literal(2)]).optional(),
    sampleRate: z.union([z.literal(8000), z.literal(16000), z.literal(24000), z.literal(44100), z.literal(48000)]).optional(),
  })
  .passthrough();

const systemTool = z
  .object({
    type: z.enum(['end_call', 'transfer_call', 'api_call', 'extract_dynamic_variables', 'knowledge_base_search']),
    name: noSpaces,
    description: z.string().min(1).max(2000),
    enabled: z.boolean().optional(),
    transferNumber: z.string().regex(E164, 'must be an E.164 number').optional(),
    // The wire marks it required; configs stored before it was checked omit it, so an absent one means cold_transfer.
    transferOption: transferOptionSchema.optional(),
    ...transferSettingsShape,
    url: z.string().url().optional(),
    method: z.enum(HTTP_METHODS).optional(),
    timeout: z.number().int().min(1000).max(30000).optional(),
    knowledgeBaseId: z.string().min(1).max(100).optional(),
  })
  .passthrough()
  .superRefine((t, ctx) => {
    if (t.type === 'knowledge_base_search' && !t.knowledgeBaseId) ctx.addIssue({ code: 'custom', path: ['knowledgeBaseId'], message: 'required for knowledge_base_search' });
    if (t.type === 'transfer_call' && !t.transferNumber) ctx.addIssue({ code: 'custom', path: ['transferNumber'], message: 'required for transfer_call' });
    if (t.type === 'api_call' && !t.url) ctx.addIssue({ code: 'custom', path: ['url'], message: 'required for api_call' });
    if (t.type === 'api_call' && !t.method) ctx.addIssue({ code: 'custom', path: ['method'], message: 'required for api_call' });
  });

const workflowGraph = workflowGraphSchema.nullable();

const model = z
  .object({
    provider: z.literal('openai_compatible'),
    baseUrl: z.string().url(),
    model: z.string().min(1).max(200),
    apiKeySecret: z.string().min(1).max(200).optional(),
    temperature: range(0, 2).optional(),
  })
  .strict()
  .nullable();

/** Every configuration field an agent, a draft or a revision can carry. */
export const CONFIG_FIELDS: Record<string, z.ZodTypeAny> = {
  prompt: z.string().max(100_000),
  globalPrompt: z.string().max(4000),
  firstMessage: z.string().max(500),
  tools: z.array(systemTool).max(64),
  toolRefs: z.array(z.string().regex(/^tool_[a-z0-9]{24}$/, 'must be a tool id (tool_ + 24 lowercase alphanumerics)')).max(128),
  workflowGraph,
  slmModel: z.enum(['electron', 'electron-kogta', 'electron-kogta-v2', 'gpt-4o', 'gpt-4.1', 'gpt-5.2', 'gpt-realtime', 'gpt-realtime-mini']),
  model,
  synthesizer,
  language,
  transcriberType: z.string().min(1).max(100),
  allowInterruptions: z.boolean(),
  waitForUserToSpeakFirst: z.boolean(),
  muteUserUntilFirstBotResponse: z.boolean(),
  interruptionBackoffTimer: range(0, 10),
  voiceMailDetectionConfig: z.object({ enabled: z.boolean(), endText: z.string().max(200).optional() }).passthrough(),
  defaultVariables: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.union([z.string(), z.number(), z.boolean()])),
  preCallAPI: z
    .object({
      isEnabled: z.boolean().optional(),
      url: templatedUrl.superRefine(refuseEgress),
      method: z.enum(HTTP_METHODS),
      timeout: z.number().int().min(1).max(30).optional(),
      headers: z.record(headerName, headerValue).optional(),
      queryParams: z.record(z.string().min(1).max(200), z.union([z.string().max(4000), z.number(), z.boolean()])).optional(),
      body: z.record(z.unknown()).optional(),
      responseVariables: responseVariablesSchema.optional(),
      /** Our field: credentials from the vault by secret name, as a library tool's `auth`. */
      auth: toolAuthSchema.optional(),
    })
    .strict()
    .superRefine((v, ctx) => {
      if (v.method === 'GET' && v.body !== undefined) ctx.addIssue({ code: 'custom', path: ['body'], message: 'a GET request cannot carry a body' });
    }),
  timezone: timezoneSchema,
  globalKnowledgeBaseId: z.string().max(100),
  voiceDetectionConfig: z
    .object({ confidence: range(0, 1).optional(), minVolume: range(0, 1).optional(), triggerTimeInSecs: range(0, 10).optional(), releaseTimeInSecs: range(0, 10).optional() })
    .passthrough(),
  smartTurnConfig: z.object({ isEnabled: z.boolean(), waitTimeInSecs: range(0, 10).optional() }).passthrough(),
  endpointingConfig: z
    .object({ minDelayMs: z.number().int().min(0).max(5000), maxDelayMs: z.number().int().min(0).max(10000) })
    .strict()
    .refine((v) => v.minDelayMs <= v.maxDelayMs, { message: 'minDelayMs must not exceed maxDelayMs', path: ['minDelayMs'] }),
  postCallAnalyticsConfig: z
    .object({
      dispositionMetrics: z
        .array(z.object({ identifier: z.string().regex(/^[a-z0-9_]+$/), dispositionMetricPrompt: z.string(), dispositionMetricType: z.enum(['STRING', 'BOOLEAN', 'INTEGER', 'ENUM', 'DATETIME']) }).passthrough())
        .optional(),
    })
    .passthrough(),
  callDispositionConfig: z.string().max(4000),
  llmIdleTimeoutConfig: z
    .object({ chatTimeoutTimeInSecs: range(1, 300).optional(), webcallTimeoutTimeInSecs: range(1, 300).optional(), telephonyTimeoutTimeInSecs: range(1, 300).optional(), maxRetries: z.number().int().min(0).max(10).optional() })
    .passthrough(),
  sessionTimeoutConfig: z.object({ timeoutTimeInSecs: z.number().int().min(1).max(3600) }).passthrough(),
  backgroundSound: z.enum(['', 'office', 'cafe', 'call_center', 'static']),
  denoisingConfig: z.object({ isEnabled: z.boolean() }).passthrough(),
  // Our fields beside the wire's isEnabled: pii / pci (default true) leave one kind out.
  redactionConfig: z.object({ isEnabled: z.boolean(), pii: z.boolean().optional(), pci: z.boolean().optional() }).strict(),
  // Pronunciation dictionary ids (checked against the organization's when written) or inline {word, pronunciation} entries.
  pronunciationDicts: z.array(z.union([z.string().min(1).max(64), agentDictEntry])).max(500),
  speechFormatting: z.boolean(),
  enableStyleGuide: z.boolean(),
  playbooks: z.array(z.object({}).passthrough()),
};

export const WORKFLOW_TYPES = ['single_prompt', 'workflow_graph'] as const;
export type WorkflowType = (typeof WORKFLOW_TYPES)[number];

/** Written values that have one stored form: a timezone object or string becomes its IANA name. Invalid values pass unchanged (validation names them). */
export function normalizeField(field: string, value: unknown): unknown {
  if (field === 'timezone') return canonicalZone(value) ?? value;
  return value;
}

/** Validates one field; returns messages naming the field path. */
export function validateField(field: string, value: unknown): string[] {
  const schema = Object.hasOwn(CONFIG_FIELDS, field) ? CONFIG_FIELDS[field] : undefined;
  if (!schema) return [`${field}: unknown configuration field`];
  const result = schema.safeParse(value);
  if (result.success) return [];
  return result.error.issues.map((i) => `${[field, ...i.path].join('.')}: ${i.message}`);
}
