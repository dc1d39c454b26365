// Turns a stored agent configuration (wire field names) into the engine's AgentSpec; picks a voice we actually have.
// A field the stored configuration lacks takes its default from AGENT_CONFIG_DEFAULTS (control-plane/agents/config.ts).
import type { AgentSpec, Vars } from '../engine/agent/types.js';
import type { ModelRegistry } from '../engine/models/registry.js';
import { isBackgroundSound } from '../engine/audio/ambience.js';
import { AGENT_CONFIG_DEFAULTS as D } from '../control-plane/agents/config.js';

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const num = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
const bool = (v: unknown, fallback: boolean): boolean => (typeof v === 'boolean' ? v : fallback);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/**
 * The voice that speaks (engine/models/voice-table.ts, documented in docs/models.md): the configured one when we have it
 * and it speaks the agent's language; else the nearest voice of that language by gender and accent (a hosted id such
 * as `nyah` by the table's accent and the agent's gender: RHVoice slt/bdl when installed, else Flite slt/rms in
 * English; SVOX Pico's voice for de, es, fr, it). A language no voice here speaks keeps an English voice.
 */
export function resolveVoice(registry: ModelRegistry, voiceId: string | undefined, gender: string | undefined, language?: string): string {
  return registry.chooseVoice({ voiceId, gender, language, mode: 'agent' }).voiceId;
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
  const minDelayMs = num(endpointing.minDelayMs, D.endpointingConfig.minDelayMs);
  const tz = config.timezone;
  return {
    agentId,
    workflowType: workflowType === 'workflow_graph' ? 'workflow_graph' : 'single_prompt',
    prompt: str(config.prompt),
    globalPrompt: str(config.globalPrompt),
    firstMessage: str(config.firstMessage),
    workflowGraph: config.workflowGraph ?? null,
    tools: Array.isArray(config.tools) ? (config.tools as Record<string, unknown>[]) : [],
    voiceId: resolveVoice(registry, str(voiceConfig.voiceId), str(voiceConfig.gender), str(language.default) ?? D.language.default),
    voiceGender: str(voiceConfig.gender) ?? D.synthesizer.voiceConfig.gender,
    // The wire's default speed (1.2) is the voice's natural rate (speed 1 for the synthesiser).
    speed: Math.min(2, Math.max(0.4, num(synth.speed, D.synthesizer.speed) / D.synthesizer.speed)),
    languageDefault: str(language.default) ?? D.language.default,
    languagesSupported: Array.isArray(language.supported) ? (language.supported as string[]) : [str(language.default) ?? D.language.default],
    timezone: typeof tz === 'string' || (tz && typeof tz === 'object') ? (tz as AgentSpec['timezone']) : D.timezone,
    defaultVariables: obj(config.defaultVariables) as Vars,
    allowInterruptions: bool(config.allowInterruptions, D.allowInterruptions),
    waitForUserToSpeakFirst: bool(config.waitForUserToSpeakFirst, D.waitForUserToSpeakFirst),
    interruptionBackoffSeconds: num(config.interruptionBackoffTimer, D.interruptionBackoffTimer),
    vad: {
      confidence: num(vad.confidence, D.voiceDetectionConfig.confidence),
      minVolume: num(vad.minVolume, D.voiceDetectionConfig.minVolume),
      triggerTimeInSecs: num(vad.triggerTimeInSecs, D.voiceDetectionConfig.triggerTimeInSecs),
      releaseTimeInSecs: num(vad.releaseTimeInSecs, D.voiceDetectionConfig.releaseTimeInSecs),
    },
    endpointing: { minDelayMs, maxDelayMs: Math.max(minDelayMs, num(endpointing.maxDelayMs, D.endpointingConfig.maxDelayMs)) },
    // Smart turn is on unless switched off; waitTimeInSecs caps its wait for a turn that sounds unfinished.
    smartTurn: { enabled: bool(smart.isEnabled, D.smartTurnConfig.isEnabled), waitMs: Math.round(num(smart.waitTimeInSecs, D.smartTurnConfig.waitTimeInSecs) * 1000) },
    idle: {
      chatSeconds: num(idle.chatTimeoutTimeInSecs, D.llmIdleTimeoutConfig.chatTimeoutTimeInSecs),
      webcallSeconds: num(idle.webcallTimeoutTimeInSecs, D.llmIdleTimeoutConfig.webcallTimeoutTimeInSecs),
      telephonySeconds: num(idle.telephonyTimeoutTimeInSecs, D.llmIdleTimeoutConfig.telephonyTimeoutTimeInSecs),
      maxRetries: num(idle.maxRetries, D.llmIdleTimeoutConfig.maxRetries),
    },
    sessionTimeoutSeconds: num(session.timeoutTimeInSecs, D.sessionTimeoutConfig.timeoutTimeInSecs),
    muteUserUntilFirstBotResponse: bool(config.muteUserUntilFirstBotResponse, D.muteUserUntilFirstBotResponse),
    denoise: bool(obj(config.denoisingConfig).isEnabled, D.denoisingConfig.isEnabled),
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
