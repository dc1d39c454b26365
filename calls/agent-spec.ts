// Turns a stored agent configuration (wire field names) into the engine's AgentSpec; picks a voice we actually have.
import type { AgentSpec, Vars } from '../engine/agent/types.js';
import { DEFAULT_MAX_DELAY_MS, DEFAULT_MIN_DELAY_MS, DEFAULT_TRIGGER_S } from '../engine/turn/end-of-turn.js';
import type { ModelRegistry } from '../engine/models/registry.js';
import { isBackgroundSound } from '../engine/audio/ambience.js';

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const num = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
const bool = (v: unknown, fallback: boolean): boolean => (typeof v === 'boolean' ? v : fallback);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/** Built-in voices used when the configured voice id is not one of ours (hosted-platform ids such as `nyah`). */
const DEFAULT_VOICE = { female: 'slt', male: 'rms' } as const;

export function resolveVoice(registry: ModelRegistry, voiceId: string | undefined, gender: string | undefined): string {
  if (voiceId && registry.voice(voiceId)) return voiceId;
  return gender === 'male' ? DEFAULT_VOICE.male : DEFAULT_VOICE.female;
}

export function agentSpec(agentId: string, workflowType: string, config: Record<string, unknown>, registry: ModelRegistry): AgentSpec {
  const synth = obj(config.synthesizer);
  const voiceConfig = obj(synth.voiceConfig);
  const language = obj(config.language);
  const vad = obj(config.voiceDetectionConfig);
  const endpointing = obj(config.endpointingConfig);
  const smart = obj(config.smartTurnConfig);
  const idle = obj(config.llmIdleTimeoutConfig);
  const session = obj(config.sessionTimeoutConfig);
  const minDelayMs = num(endpointing.minDelayMs, DEFAULT_MIN_DELAY_MS);
  const tz = config.timezone;
  return {
    agentId,
    workflowType: workflowType === 'workflow_graph' ? 'workflow_graph' : 'single_prompt',
    prompt: str(config.prompt),
    globalPrompt: str(config.globalPrompt),
    firstMessage: str(config.firstMessage),
    workflowGraph: config.workflowGraph ?? null,
    tools: Array.isArray(config.tools) ? (config.tools as Record<string, unknown>[]) : [],
    voiceId: resolveVoice(registry, str(voiceConfig.voiceId), str(voiceConfig.gender)),
    voiceGender: str(voiceConfig.gender) ?? 'female',
    // The wire's default speed is 1.2; it maps to the voice's natural rate (speed 1 for the synthesiser).
    speed: Math.min(2, Math.max(0.4, num(synth.speed, 1.2) / 1.2)),
    languageDefault: str(language.default) ?? 'en',
    languagesSupported: Array.isArray(language.supported) ? (language.supported as string[]) : [str(language.default) ?? 'en'],
    timezone: typeof tz === 'string' || (tz && typeof tz === 'object') ? (tz as AgentSpec['timezone']) : 'UTC',
    defaultVariables: obj(config.defaultVariables) as Vars,
    allowInterruptions: bool(config.allowInterruptions, true),
    waitForUserToSpeakFirst: bool(config.waitForUserToSpeakFirst, false),
    interruptionBackoffSeconds: num(config.interruptionBackoffTimer, 0),
    vad: {
      confidence: num(vad.confidence, 0.5),
      minVolume: num(vad.minVolume, 0),
      triggerTimeInSecs: num(vad.triggerTimeInSecs, DEFAULT_TRIGGER_S),
      releaseTimeInSecs: num(vad.releaseTimeInSecs, 0.8),
    },
    endpointing: { minDelayMs, maxDelayMs: Math.max(minDelayMs, num(endpointing.maxDelayMs, DEFAULT_MAX_DELAY_MS)) },
    // Smart turn is on unless switched off; waitTimeInSecs caps its wait for a turn that sounds unfinished.
    smartTurn: { enabled: bool(smart.isEnabled, true), waitMs: Math.round(num(smart.waitTimeInSecs, 0) * 1000) },
    idle: {
      chatSeconds: num(idle.chatTimeoutTimeInSecs, 60),
      webcallSeconds: num(idle.webcallTimeoutTimeInSecs, 20),
      telephonySeconds: num(idle.telephonyTimeoutTimeInSecs, 20),
      maxRetries: num(idle.maxRetries, 2),
    },
    sessionTimeoutSeconds: num(session.timeoutTimeInSecs, 1800),
    muteUserUntilFirstBotResponse: bool(config.muteUserUntilFirstBotResponse, false),
    denoise: bool(obj(config.denoisingConfig).isEnabled, false),
    // '' (the default) is no ambience.
    backgroundSound: isBackgroundSound(config.backgroundSound) ? config.backgroundSound : undefined,
  };
}

/** `voiceMailDetectionConfig` of an agent when it is on: the message to leave on a machine ('' : none). */
export function voicemailDetection(config: Record<string, unknown>): { endText: string } | null {
  const v = obj(config.voiceMailDetectionConfig);
  if (v.enabled !== true) return null;
  return { endText: str(v.endText)?.trim() ?? '' };
}
