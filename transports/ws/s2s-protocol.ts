// Speech-to-speech wire vocabulary (inference-api.md §10): models and their voices, tool validation, the session's
// agent settings. The socket itself is transports/ws/s2s.ts.
import type { AgentSpec, FunctionTool } from '../../engine/agent/types.js';
import { DEFAULT_MAX_DELAY_MS, DEFAULT_MIN_DELAY_MS, DEFAULT_TRIGGER_S } from '../../engine/turn/end-of-turn.js';

export const S2S_MODELS = ['hydra-v1.1', 'hydra-v1.0', 'hydra'] as const;
export type S2sModel = (typeof S2S_MODELS)[number];
export const CURRENT_MODEL: S2sModel = 'hydra-v1.1';
export const DEFAULT_VOICE = 'sterling';

/**
 * The voice names each model offers. What each sounds like (gender, accent) is in the one voice table,
 * HOSTED_VOICES in engine/models/voice-table.ts (docs/models.md, "Voices and languages"); the registry picks the
 * nearest voice this server has for it (RHVoice when installed, else Flite).
 */
export const S2S_VOICES: Record<S2sModel, readonly string[]> = {
  'hydra-v1.1': ['zoe', 'maya', 'elena', 'ivy', 'grace', 'aria', 'alex', 'leo', 'sam', 'kai'],
  'hydra-v1.0': ['vaughn', 'brooks', 'cole', 'hayes', 'pierce', 'sterling', 'ellis', 'lane', 'quinn', 'arden', 'rowan', 'blair', 'emery', 'sawyer'],
  hydra: ['wren', 'sloane', 'marlowe', 'reed', 'knox', 'tate'],
};

const MAX_TOOLS = 128;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const SESSION_TIMEOUT_SECONDS = 1800;

export interface WireTool {
  type: 'function';
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

export const words = (t: string): string[] => t.split(/\s+/).filter(Boolean);
export const tokens = (chars: number): number => Math.ceil(chars / 4);
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export type Problem = { param: string; message: string };

/** Validates a `tools` array; `strict` refuses unknown keys in a tool (session.update). */
export function parseTools(raw: unknown, param: string, strict: boolean): WireTool[] | Problem {
  if (!Array.isArray(raw)) return { param, message: `${param} must be an array` };
  if (raw.length > MAX_TOOLS) return { param, message: `${param}: at most ${MAX_TOOLS} tools` };
  const out: WireTool[] = [];
  const names = new Set<string>();
  for (const [i, t] of raw.entries()) {
    const at = `${param}[${i}]`;
    if (!isObject(t)) return { param: at, message: `${at} must be an object` };
    if (strict) {
      const extra = Object.keys(t).find((k) => !['type', 'name', 'description', 'parameters'].includes(k));
      if (extra) return { param: `${at}.${extra}`, message: `${at}: unknown field "${extra}"` };
    }
    if (t.type !== 'function') return { param: `${at}.type`, message: `${at}.type must be "function"` };
    if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) return { param: `${at}.name`, message: `${at}.name must be 1-64 characters of letters, digits, _ or -` };
    if (names.has(t.name)) return { param: `${at}.name`, message: `${at}.name: "${t.name}" is defined twice` };
    names.add(t.name);
    if (t.description !== undefined && typeof t.description !== 'string') return { param: `${at}.description`, message: `${at}.description must be a string` };
    if (t.parameters !== undefined && !isObject(t.parameters)) return { param: `${at}.parameters`, message: `${at}.parameters must be a JSON Schema object` };
    out.push({
      type: 'function',
      name: t.name,
      ...(t.description !== undefined ? { description: t.description as string } : {}),
      ...(t.parameters !== undefined ? { parameters: t.parameters as Record<string, unknown> } : {}),
    });
  }
  return out;
}

export const toFunction = (t: WireTool): FunctionTool => ({ name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), ...(t.parameters ? { parameters: t.parameters } : {}) });

export function s2sSpec(voiceId: string, instructions: string): AgentSpec {
  return {
    agentId: 's2s',
    workflowType: 'single_prompt',
    prompt: instructions,
    tools: [],
    voiceId,
    speed: 1,
    languageDefault: 'en',
    languagesSupported: ['en'],
    timezone: 'UTC',
    defaultVariables: {},
    allowInterruptions: true,
    // The session never opens by itself: generate_initial_response asks for a reply explicitly.
    waitForUserToSpeakFirst: true,
    interruptionBackoffSeconds: 0,
    vad: { confidence: 0.5, minVolume: 0, triggerTimeInSecs: DEFAULT_TRIGGER_S, releaseTimeInSecs: 0.8 },
    endpointing: { minDelayMs: DEFAULT_MIN_DELAY_MS, maxDelayMs: DEFAULT_MAX_DELAY_MS },
    smartTurn: { enabled: true, waitMs: 0 },
    // 0 disables the engine's idle reprompts; the socket has its own idle close.
    idle: { chatSeconds: 0, webcallSeconds: 0, telephonySeconds: 0, maxRetries: 0 },
    sessionTimeoutSeconds: SESSION_TIMEOUT_SECONDS,
  };
}
