// Runs calls: a resolved agent configuration becomes an engine session whose call record is kept in the store.
// Shared by the agent WebSocket, the test-call route and (later) telephony.
import type { Logger } from 'pino';
import type { Db } from '../../control-plane/store/db.js';
import type { ResolvedCallConfig } from '../../control-plane/calls/call-config.js';
import { createCall, newCallId, updateCall, type CallMode, type CallType } from '../../control-plane/calls/calls.js';
import type { SecretVault } from '../../control-plane/secrets/vault.js';
import { AgentSession, type SessionEvent } from '../../engine/agent/session.js';
import type { LlmEndpoint, Vars } from '../../engine/agent/types.js';
import { callVariables, standardVariables } from '../../engine/agent/variables.js';
import type { Encoding } from '../../engine/audio/codecs.js';
import type { ModelRegistry } from '../../engine/models/registry.js';
import { agentSpec } from './agent-spec.js';
import type { AgentMetrics } from './agent-metrics.js';
import { createBrain } from './brains.js';

export interface CallRuntimeDeps {
  db: Db;
  registry: ModelRegistry;
  vault: SecretVault;
  logger: Logger;
  metrics: AgentMetrics;
  /** The server's default language model (PARLEY_LLM_*), for single-prompt agents without a model block. */
  defaultLlm?: LlmEndpoint;
}

export interface StartCall {
  resolved: ResolvedCallConfig;
  mode: CallMode;
  type: CallType;
  isTest: boolean;
  /** Per-call variables (already validated; reserved keys stripped). */
  variables: Vars;
  inputRate: number;
  inputEncoding?: Encoding;
  outputRate: number;
  fromNumber?: string;
  toNumber?: string;
  /** The call id, when the caller had to announce it before the call started. */
  callId?: string;
}

export interface RunningCall {
  callId: string;
  session: AgentSession;
  /** Resolves when the call has ended and its record is written. */
  finished: Promise<void>;
}

const CONVERSATION_TYPE: Record<CallType, string> = { webcall: 'webcall', telephony_inbound: 'telephonyInbound', telephony_outbound: 'telephonyOutbound' };

export class CallRuntime {
  constructor(private readonly deps: CallRuntimeDeps) {}

  /** A call id for a call about to start (the agent WebSocket announces it in `session.created`). */
  newCallId(): string {
    return newCallId();
  }

  /**
   * Creates the call record and the session, and starts it. `emit` gets every session event (after the runtime has
   * recorded what it needs). The opening turn begins at once.
   */
  async start(call: StartCall, emit: (event: SessionEvent) => void): Promise<RunningCall> {
    const { db, registry, logger, metrics } = this.deps;
    const { resolved } = call;
    const agentId = resolved.agent.id;
    const orgId = resolved.agent.org_id;
    const spec = agentSpec(agentId, resolved.workflowType, resolved.config, registry);
    const callId = call.callId ?? newCallId();
    const conversationType = CONVERSATION_TYPE[call.type];
    const variables = callVariables(
      spec.defaultVariables,
      call.variables,
      standardVariables({
        callId,
        conversationType,
        userNumber: call.fromNumber,
        agentNumber: call.toNumber,
        agentGender: spec.voiceGender,
        defaultLanguage: spec.languageDefault,
        supportedLanguages: spec.languagesSupported,
        timezone: spec.timezone,
      }),
    );
    const brain = await createBrain(spec, resolved.config, { vault: this.deps.vault, orgId, defaultLlm: this.deps.defaultLlm });
    const slmModel = typeof resolved.config.slmModel === 'string' ? resolved.config.slmModel : null;
    await createCall(db, {
      orgId,
      agentId,
      branchId: resolved.branchId,
      revisionId: resolved.revisionId,
      configSource: resolved.configSource,
      type: call.type,
      mode: call.mode,
      isTest: call.isTest,
      variables,
      voiceConfig: { model: 'flite', voiceId: spec.voiceId, gender: spec.voiceGender ?? null },
      slmModel,
      fromNumber: call.fromNumber ?? null,
      toNumber: call.toNumber ?? null,
      callId,
    });
    metrics.opened(call.mode);

    // Record writes go out one after another, so a later state never lands before an earlier one.
    let writes: Promise<unknown> = Promise.resolve();
    const write = (patch: Parameters<typeof updateCall>[2]) => {
      writes = writes
        .then(() => updateCall(db, callId, patch))
        .catch((err: unknown) => logger.warn({ err: err instanceof Error ? err.message : String(err), callId }, 'could not update the call record'));
    };
    let resolveFinished!: () => void;
    const finished = new Promise<void>((r) => {
      resolveFinished = r;
    });
    const session: AgentSession = new AgentSession({
      mode: call.mode,
      conversationType,
      spec,
      brain,
      variables,
      registry,
      inputRate: call.inputRate,
      inputEncoding: call.inputEncoding,
      outputRate: call.outputRate,
      emit: (event) => {
        switch (event.type) {
          case 'user_transcript':
          case 'agent_transcript':
            write({ transcript: [...session.transcript] });
            break;
          case 'variables':
            write({ variables: { ...variables } });
            break;
          case 'turn_metrics':
            metrics.turn(call.mode, event.metrics);
            write({ metrics: { turns: [...session.turnMetrics], interruptions: [...session.interruptions] } });
            break;
          case 'ended': {
            const endedAt = new Date();
            metrics.closed(call.mode, event.reason);
            write({
              status: event.reason === 'error' ? 'failed' : 'completed',
              endReason: event.reason,
              endedAt: endedAt.toISOString(),
              durationS: Math.round((endedAt.getTime() - session.startedAt.getTime()) / 100) / 10,
              transcript: [...session.transcript],
              variables: { ...variables },
              metrics: { turns: [...session.turnMetrics], interruptions: [...session.interruptions], processedAt: endedAt.toISOString() },
            });
            void writes.then(resolveFinished);
            break;
          }
          case 'error':
            logger.info({ callId, code: event.code, message: event.message }, 'call error');
            break;
        }
        emit(event);
      },
    });
    session.start();
    return { callId, session, finished };
  }
}
