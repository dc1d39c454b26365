// Runs calls: a resolved agent configuration becomes an engine session whose call record is kept in the store.
// Shared by the agent WebSocket, the test-call route and (later) telephony.
import { agentSpeechText } from './speech-text.js';
import type { Logger } from 'pino';
import type { Db } from '../control-plane/store/db.js';
import { pinnedTarget, resolveCallConfig, type ResolvedCallConfig } from '../control-plane/calls/call-config.js';
import { CallRecordWriter } from './record-writer.js';
import { activateQueuedCall, createCall, FINAL_CALL_STATUSES, newCallId, type CallMetrics, type CallMode, type CallType, type TranscriptEntry } from '../control-plane/calls/calls.js';
import { loadTurns } from '../control-plane/calls/turns.js';
import { parseJson } from '../control-plane/agents/records.js';
import type { LiveCalls } from './live-calls.js';
import type { SecretVault } from '../control-plane/secrets/vault.js';
import { AgentSession, type SessionEvent, type TransferOutcome, type TransferRequest } from '../engine/agent/session.js';
import type { Brain, BrainEvent, LlmEndpoint, Vars } from '../engine/agent/types.js';
import { AnswerDetector, type AnswerDecision } from '../engine/agent/answer-detect.js';
import { prepareAmbience } from '../engine/audio/ambience.js';
import { callVariables, standardVariables } from '../engine/agent/variables.js';
import type { Encoding } from '../engine/audio/codecs.js';
import type { ModelRegistry } from '../engine/models/registry.js';
import { registryModels } from '../engine/models/turn-models.js';
import { agentSpec } from './agent-spec.js';
import type { AgentMetrics } from './agent-metrics.js';
import { createBrain, llmEndpoint, LLM_NOT_CONFIGURED } from './brains.js';
import { LANGUAGE_UNSUPPORTED, voiceCallLanguageProblem } from './call-language.js';
import type { LlmModels } from './llm-models.js';
import { deterministicAnalytics, llmAnalytics, type CallAnalytics } from './analytics.js';
import { CallEvents } from './events.js';
import { CallRecorder, type RecordingExtension } from './recorder.js';
import { CallTools, orgRequestOptions, type ClientToolChannel } from './tools.js';
import { KnowledgeTools, type KnowledgeSearchRecord } from './knowledge-tool.js';
import { VariableExtraction } from './variables-tool.js';
import { CallFeed, type LiveEvents } from './live-events.js';
import { runPreCall, type PreCallResult } from './pre-call.js';
import { CallPrivacy, REDACTION_NOTE, redactionOptions } from './privacy.js';
import { resolveAgentTools } from '../control-plane/tools/tools.js';
import { CallTrace } from './tracing.js';
import { recordingKey, type ObjectStore } from '../control-plane/recordings/object-store.js';

export interface CallRuntimeDeps {
  db: Db;
  registry: ModelRegistry;
  vault: SecretVault;
  logger: Logger;
  metrics: AgentMetrics;
  /** The server's default language model (PARLEY_LLM_*), for single-prompt agents without a model block. */
  defaultLlm?: LlmEndpoint;
  /** The operator's named models (PARLEY_LLM_MODELS) that `slmModel` chooses from, with the default (calls/llm-models.ts). */
  llmModels?: LlmModels;
  /** Where recordings go. */
  objects: ObjectStore;
  /** Tool calls may reach private and loopback addresses (PARLEY_ALLOW_PRIVATE_EGRESS). */
  allowPrivateEgress: boolean;
  /** Wakes the webhook dispatcher after events were queued. */
  notifyWebhooks(): void;
  /** The calls up on this server, in the store (ended by another server if this one dies). */
  live?: LiveCalls;
  /** Live call events (`GET /events`): each call's events are published there. */
  liveEvents?: LiveEvents;
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
  /** How far ahead of real time the agent's audio is handed to the transport (ms; the session's default 80). */
  outputLeadMs?: number;
  fromNumber?: string;
  toNumber?: string;
  /** The call id, when the caller had to announce it before the call started. */
  callId?: string;
  /** The record exists already (an outbound call queued with this callId, an inbound one opened before its answer): it is activated instead of created. */
  queued?: boolean;
  /** How client tools reach the app (the agent WebSocket); without it client tools cannot run. */
  clientTools?: ClientToolChannel;
  /** Carries out the agent's transfers (phone calls); without it a transfer ends the call as transfer_unavailable. */
  transfer?(req: TransferRequest): Promise<TransferOutcome>;
  /** The caller's audio is denoised already (a SIP trunk's noiseSuppression): the agent's denoisingConfig is not applied again. */
  inputDenoised?: boolean;
  /** Voicemail detection's verdict on an outbound call (recorded as `answeredBy`, its reason in `answerDetection`). */
  answer?: AnswerDecision;
  /**
   * A machine answered: instead of the agent's conversation the call says this (the agent's `endText`; '' says
   * nothing) and hangs up; it ends with the verdict (`voicemail`, `ivr`) as its reason.
   */
  leaveMessage?: string;
  /** The transport keeps the call's live row (a phone call, from its answer, with its dialog): the runtime does not. */
  lineHeld?: boolean;
  /** The call's span, when it began before the session (an outbound call's, from its INVITE); otherwise one starts here. */
  trace?: CallTrace;
  /** The pre-call API already under way (`CallRuntime.preCall`: an outbound call starts it while it rings). */
  preCall?: Promise<PreCallResult | null>;
}

export interface RunningCall {
  callId: string;
  session: AgentSession;
  /** Resolves when the call has ended and its record is written. */
  finished: Promise<void>;
  /**
   * Records audio beyond the agent's turns into the call's recording (a transfer: hold sound, handoffs, the bridge);
   * null when the call is not recorded. Ending it after the call has ended saves the recording again, longer; the
   * record (duration, end time) stays as it was at the handover.
   */
  extendRecording(rate: number): (Omit<RecordingExtension, 'end'> & { end(): Promise<void> }) | null;
}

/** The brain of a call answered by a machine: the message (if any), then the end of the call. */
class MessageBrain implements Brain {
  constructor(private readonly message: string) {}
  async *opening(): AsyncIterable<BrainEvent> {
    if (this.message) yield { type: 'text', text: this.message };
    yield { type: 'end_call', reason: 'voicemail' };
  }
  async *reply(): AsyncIterable<BrainEvent> {}
  addToolResult(): void {}
  truncateLastReply(): void {}
}

/** How far before the VAD's speech start a redacted turn's silence begins (16 kHz samples: 0.5 s). */
const TURN_LEAD_SAMPLES = 8000;

const CONVERSATION_TYPE: Record<CallType, string> = { webcall: 'webcall', telephony_inbound: 'telephonyInbound', telephony_outbound: 'telephonyOutbound' };

export class CallRuntime {
  constructor(private readonly deps: CallRuntimeDeps) {}

  /** A voicemail detector for an outbound call's callee audio (8 kHz), on the server's own VAD and recognizer. */
  async answerDetector(): Promise<AnswerDetector> {
    return new AnswerDetector(await registryModels(this.deps.registry).turn(), { rate: 8000 });
  }

  /** A call id for a call about to start (the agent WebSocket announces it in `session.created`). */
  newCallId(): string {
    return newCallId();
  }

  /**
   * Starts the agent's pre-call API ahead of the call, with the variables the call will have (an outbound call: while
   * it rings, so the callee does not wait for it after answering). Give the promise to start() as `preCall`. Never
   * rejects; null when the agent has none enabled.
   */
  preCall(call: Pick<StartCall, 'resolved' | 'type' | 'variables' | 'fromNumber' | 'toNumber'> & { callId: string }): Promise<PreCallResult | null> {
    const { resolved } = call;
    const spec = agentSpec(resolved.agent.id, resolved.workflowType, resolved.config, this.deps.registry);
    // Phone calls are voice calls: one its agent's languages refuse (start() ends it) asks nothing of the CRM.
    if (voiceCallLanguageProblem(spec.languageDefault, spec.languagesSupported, this.deps.registry.localVoices())) return Promise.resolve(null);
    return runPreCall(resolved.config.preCallAPI, this.variablesOf(spec, call, call.callId), this.preCallOptions(resolved.agent.org_id));
  }

  /**
   * An inbound phone call about to be answered: its record (`processing`, as an outbound call's once answered) and its
   * live row exist before the 200 OK, so a server that dies between the answer and the agent's start leaves a record
   * that whoever is alive ends (`failed`, `server_stopped`). Start it with `queued: true`; one that is not answered
   * after all is ended with recordUnanswered (its callId).
   */
  async openInbound(call: { resolved: ResolvedCallConfig; callId: string; fromNumber?: string; toNumber?: string }): Promise<void> {
    const { agent } = call.resolved;
    const spec = agentSpec(agent.id, call.resolved.workflowType, call.resolved.config, this.deps.registry);
    // The standard keys and the agent's defaults from the start (a record a stopped server left carries them too).
    const variables = this.variablesOf(spec, { type: 'telephony_inbound', variables: {}, fromNumber: call.fromNumber, toNumber: call.toNumber }, call.callId);
    await createCall(this.deps.db, {
      orgId: agent.org_id,
      agentId: agent.id,
      branchId: call.resolved.branchId,
      revisionId: call.resolved.revisionId,
      configSource: call.resolved.configSource,
      type: 'telephony_inbound',
      mode: 'webcall',
      isTest: false,
      variables,
      voiceConfig: {},
      fromNumber: call.fromNumber ?? null,
      toNumber: call.toNumber ?? null,
      callId: call.callId,
      status: 'processing',
    });
    await this.deps.live?.hold(call.callId, agent.org_id);
  }

  /** The call's variables: the agent's defaults, the call's own, the standard keys. */
  private variablesOf(spec: ReturnType<typeof agentSpec>, call: Pick<StartCall, 'type' | 'variables' | 'fromNumber' | 'toNumber'>, callId: string): Vars {
    return callVariables(
      spec.defaultVariables,
      call.variables,
      standardVariables({
        callId,
        conversationType: CONVERSATION_TYPE[call.type],
        // The user is the caller of an inbound call and the callee of an outbound one.
        userNumber: call.type === 'telephony_outbound' ? call.toNumber : call.fromNumber,
        agentNumber: call.type === 'telephony_outbound' ? call.fromNumber : call.toNumber,
        agentGender: spec.voiceGender,
        defaultLanguage: spec.languageDefault,
        supportedLanguages: spec.languagesSupported,
        timezone: spec.timezone,
      }),
    );
  }

  private preCallOptions(orgId: string) {
    return orgRequestOptions({ orgId, vault: this.deps.vault, allowPrivateEgress: this.deps.allowPrivateEgress });
  }

  /**
   * Creates the call record and the session, and starts it. `emit` gets every session event (after the runtime has
   * recorded what it needs). The opening turn begins at once.
   */
  async start(call: StartCall, emit: (event: SessionEvent) => void): Promise<RunningCall> {
    const callId = call.callId ?? newCallId();
    const { agent } = call.resolved;
    const trace = call.trace ?? CallTrace.start({ callId, orgId: agent.org_id, agentId: agent.id, mode: call.mode, type: call.type, isTest: call.isTest });
    try {
      return await this.run({ ...call, callId }, emit, trace);
    } catch (err) {
      trace.end({ status: 'failed', reason: 'start_failed' });
      throw err;
    }
  }

  private async run(call: StartCall & { callId: string }, emit: (event: SessionEvent) => void, trace: CallTrace): Promise<RunningCall> {
    const { db, registry, logger, metrics } = this.deps;
    const { resolved, callId } = call;
    const agentId = resolved.agent.id;
    const orgId = resolved.agent.org_id;
    const spec = agentSpec(agentId, resolved.workflowType, resolved.config, registry);
    if (call.inputDenoised) spec.denoise = false;
    spec.speechText = await agentSpeechText(db, orgId, resolved.config);
    // Leaving a message on a machine: the message plays whole, whatever the machine does meanwhile.
    if (call.leaveMessage !== undefined) spec.allowInterruptions = false;
    // The ambience is rendered off the event loop the first time a kind is used at this rate.
    if (spec.backgroundSound) await prepareAmbience(spec.backgroundSound, call.outputRate);
    const conversationType = CONVERSATION_TYPE[call.type];
    const variables = this.variablesOf(spec, call, callId);
    // A voice call in languages this server cannot speak or hear is refused at start (calls/call-language.ts).
    const languageProblem = call.mode === 'webcall' ? voiceCallLanguageProblem(spec.languageDefault, spec.languagesSupported, registry.localVoices()) : undefined;
    if (languageProblem) logger.warn({ callId, agentId, code: LANGUAGE_UNSUPPORTED, reason: languageProblem }, 'voice call refused: the agent\'s language cannot be served here');
    // The pre-call API, before the agent speaks: its variables fill the call's (the first message may use them). A
    // machine that answered gets the agent's message only, so what a pre-call started while ringing found is not used.
    const preCall = call.leaveMessage !== undefined || languageProblem ? null : await (call.preCall ?? runPreCall(resolved.config.preCallAPI, variables, this.preCallOptions(orgId)));
    if (preCall) {
      Object.assign(variables, preCall.variables);
      if (!preCall.outcome.ok) logger.info({ callId, error: preCall.outcome.error, status: preCall.outcome.status }, 'pre-call API failed; the call goes on with its defaults');
    }
    /** What every write of the record's metrics carries besides the turns. */
    const callFacts = {
      ...(preCall ? { preCallApi: preCall.outcome } : {}),
      ...(call.answer ? { answerDetection: { verdict: call.answer.verdict, atMs: Math.round(call.answer.atMs), reason: call.answer.reason, messageLeft: call.leaveMessage !== undefined ? call.leaveMessage !== '' : null } } : {}),
    };
    const answeredBy = call.answer?.verdict ?? null;
    const toolRefs = Array.isArray(resolved.config.toolRefs) ? (resolved.config.toolRefs as string[]) : [];
    const library = await resolveAgentTools(db, orgId, toolRefs);
    // Knowledge-base searches, each kept for the record's metrics (knowledgeBaseSearches) from the first one on.
    const kbSearches: KnowledgeSearchRecord[] = [];
    const knowledge = new KnowledgeTools({ db, orgId, agentTools: spec.tools ?? [], globalKnowledgeBaseId: resolved.config.globalKnowledgeBaseId, onSearch: (r) => {
      kbSearches.push(r);
      Object.assign(callFacts, { knowledgeBaseSearches: kbSearches });
    } });
    const feed = this.deps.liveEvents ? new CallFeed(this.deps.liveEvents, callId) : null;
    // extract_dynamic_variables: the values the model passes, checked, join the call's variables (onVariables below).
    const extraction = new VariableExtraction({ agentTools: spec.tools ?? [], onExtract: (r) => {
      if (r.errors.length) logger.info({ callId, tool: r.tool, errors: r.errors }, 'variable extraction refused');
      else feed?.variables(r.values, { ...variables, ...r.values });
    } });
    const tools = new CallTools(library, spec.tools ?? [], {
      orgId,
      knowledge,
      extraction,
      vault: this.deps.vault,
      allowPrivateEgress: this.deps.allowPrivateEgress,
      client: call.clientTools,
      trace,
      onVariables: (values) => {
        Object.assign(variables, values);
        writer.update({ variables: { ...variables } });
      },
    });
    const redaction = redactionOptions(resolved.config.redactionConfig);
    // The model sees placeholders where the caller's details were: it is told so, and not to read them aloud.
    if (redaction) spec.globalPrompt = [spec.globalPrompt, REDACTION_NOTE].filter(Boolean).join('\n\n');
    const brain: Brain = call.leaveMessage !== undefined ? new MessageBrain(call.leaveMessage) : await createBrain(spec, resolved.config, { vault: this.deps.vault, orgId, defaultLlm: this.deps.defaultLlm, models: this.deps.llmModels, warn: (f, m) => logger.warn({ callId, agentId, ...f }, m) }, [...tools.libraryFunctions(library), ...knowledge.functions()]);
    // The model that answers (calls/brains.ts chooseLlm: a named model's name, else the model id): null for a workflow graph.
    const slmModel = brain.modelName ?? null;
    const events = new CallEvents(db, this.deps.notifyWebhooks, {
      orgId,
      agentId,
      callId,
      conversationType,
      fromNumber: call.fromNumber ?? null,
      toNumber: call.toNumber ?? null,
      callType: call.type,
    });
    await events.begin(async (tx) => {
      const record = {
      orgId,
      agentId,
      branchId: resolved.branchId,
      revisionId: resolved.revisionId,
      configSource: resolved.configSource,
      type: call.type,
      mode: call.mode,
      isTest: call.isTest,
      variables,
      // The voice that spoke (after the voice table and the agent's language), its engine and its own gender.
      voiceConfig: { model: registry.voice(spec.voiceId)?.model ?? 'flite', voiceId: spec.voiceId, gender: registry.voice(spec.voiceId)?.gender || spec.voiceGender || null },
      slmModel,
      fromNumber: call.fromNumber ?? null,
      toNumber: call.toNumber ?? null,
      callId,
      };
      if (!call.queued) await createCall(tx, record);
      else if (!(await activateQueuedCall(tx, record))) throw new Error(`call ${callId} is no longer waiting to start`);
    });
    if (!call.lineHeld) await this.deps.live?.hold(callId, orgId);
    feed?.started('in_progress');
    metrics.opened(call.mode);
    const recorder = call.mode === 'webcall' ? new CallRecorder(call.outputRate) : null;
    const privacy = redaction ? new CallPrivacy(redaction, { transcript: () => session.transcript, entryChanged: (index) => writer.entryChanged(index) }) : null;
    /** Where the caller's current turn began on the recording's timeline (redacted turns are silenced from there). */
    let turnStartedAt: number | null = null;

    // Record writes go out one after another (a later state never lands before an earlier one), coalesced under load.
    let writer!: CallRecordWriter;
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
      models: registryModels(registry),
      inputRate: call.inputRate,
      inputEncoding: call.inputEncoding,
      outputRate: call.outputRate,
      leadMs: call.outputLeadMs,
      tap: recorder ?? undefined,
      privacy: privacy ?? undefined,
      runTool: (toolCall) => (feed ? feed.tool(toolCall, () => tools.run(toolCall, variables)) : tools.run(toolCall, variables)),
      fillerFor: (toolCall) => tools.fillerFor(toolCall),
      transfer: call.transfer,
      emit: (event) => {
        feed?.session(event);
        switch (event.type) {
          case 'user_speech_started':
            // The turn's speech began a little before the VAD was sure of it.
            if (recorder && turnStartedAt === null) turnStartedAt = Math.max(0, recorder.callerSamples - TURN_LEAD_SAMPLES);
            break;
          case 'user_transcript':
            if (recorder && privacy?.takeUserTurnRedacted()) recorder.silenceCaller(turnStartedAt ?? 0, recorder.callerSamples);
            turnStartedAt = null;
            writer.transcriptChanged();
            break;
          case 'agent_transcript':
            writer.transcriptChanged();
            break;
          case 'variables':
            writer.update({ variables: { ...variables } });
            break;
          case 'turn_metrics':
            metrics.turn(call.mode, event.metrics);
            trace.turn(event.metrics);
            writer.update({ metrics: { ...callFacts, turns: [...session.turnMetrics], interruptions: [...session.interruptions] } });
            break;
          case 'ended': {
            const endedAt = new Date();
            metrics.closed(call.mode, event.reason);
            const final = {
              status: event.reason === 'error' || event.reason === LLM_NOT_CONFIGURED || event.reason === LANGUAGE_UNSUPPORTED ? ('failed' as const) : ('completed' as const),
              // A message left on a machine ends with the verdict (campaigns retry those: nobody was reached).
              endReason: call.leaveMessage !== undefined && event.reason === 'ended' && answeredBy ? answeredBy : event.reason,
              ...(answeredBy ? { answeredBy } : {}),
              endedAt: endedAt.toISOString(),
              durationS: Math.round((endedAt.getTime() - session.startedAt.getTime()) / 100) / 10,
              transcript: [...session.transcript],
              variables: { ...variables },
              metrics: { ...callFacts, turns: [...session.turnMetrics], interruptions: [...session.interruptions], processedAt: endedAt.toISOString() },
            };
            feed?.end(final.status, final.endReason);
            trace.end({ status: final.status, reason: final.endReason }, { 'parley.call.turns': final.metrics.turns.length, ...(answeredBy ? { 'parley.call.answered_by': answeredBy } : {}) });
            // The recording first (so post-conversation can name it), then the final record and its event together.
            writer.close();
            void writer
              .flushed()
              // A recording that cannot be saved (the disk full, the database down) leaves the call without one; the
              // record and its events are still finished.
              .then(() => saveRecording().catch((err: unknown) => {
                logger.error({ err: err instanceof Error ? err.message : String(err), callId }, 'could not save the recording');
                return {};
              }))
              .then((keys) =>
                events.end(
                  { ...final, ...keys },
                  {
                    startedAt: session.startedAt,
                    endedAt,
                    transcript: final.transcript,
                    variables: final.variables,
                    analyze: () => this.analyze(orgId, resolved.config, final.transcript, event.reason),
                  },
                ),
              )
              .catch((err: unknown) => logger.error({ err: err instanceof Error ? err.message : String(err), callId }, 'could not finish the call record'))
              .then(() => (call.lineHeld ? undefined : this.deps.live?.release(callId)))
              .then(resolveFinished);
            break;
          }
          case 'error':
            logger.info({ callId, code: event.code, message: event.message }, 'call error');
            break;
        }
        emit(event);
      },
    });
    // Saves go one after another: an extension ending after the call saves over the handover's copy, never under it.
    let saving: Promise<{ recordingMono?: string; recordingDual?: string }> = Promise.resolve({});
    const saveRecording = () => (saving = saving.catch(() => ({})).then(() => this.saveRecording(orgId, callId, recorder)));
    const extendRecording = (rate: number) => {
      if (!recorder) return null;
      const extension = recorder.extend(rate);
      return {
        caller: extension.caller,
        heard: extension.heard,
        end: async () => {
          extension.end();
          if (!session.ended) return;
          await saveRecording().catch((err: unknown) => logger.error({ err: err instanceof Error ? err.message : String(err), callId }, 'could not save the extended recording'));
        },
      };
    };
    writer = new CallRecordWriter(db, callId, session.transcript, logger);
    if (answeredBy) writer.update({ answeredBy, metrics: { ...callFacts, turns: [] } });
    if (languageProblem) session.fail(languageProblem, LANGUAGE_UNSUPPORTED);
    else session.start();
    return { callId, session, finished, extendRecording };
  }

  /**
   * A call that ended before it was answered (the caller canceled, no agent was ready in time; an outbound call busy,
   * unanswered, failed or canceled): its record and events as for any call, with no session. An outbound call's record
   * exists already (`callId`); otherwise one is created. Its variables are what the call would have started with (the
   * 11 standard keys, the agent's defaults, the call's own `variables`), its analytics the agent's configured metrics
   * (without a conversation to read: no language model is asked), and post-conversation's `answerTime` is null.
   * Returns the call id.
   */
  async recordUnanswered(
    call: { orgId: string; agentId: string; type: CallType; fromNumber?: string; toNumber?: string; callId?: string; variables?: Vars; revisionId?: string | null },
    outcome: { status: 'cancelled' | 'no_answer' | 'failed'; reason: string },
  ): Promise<string> {
    const callId = call.callId ?? newCallId();
    const conversationType = CONVERSATION_TYPE[call.type];
    const events = new CallEvents(this.deps.db, this.deps.notifyWebhooks, {
      orgId: call.orgId,
      agentId: call.agentId,
      callId,
      conversationType,
      fromNumber: call.fromNumber ?? null,
      toNumber: call.toNumber ?? null,
      callType: call.type,
    });
    const startedAt = new Date();
    const resolved = await this.configAsRun(call.orgId, call.agentId, call.revisionId ?? null);
    const spec = resolved ? agentSpec(call.agentId, resolved.workflowType, resolved.config, this.deps.registry) : null;
    const variables = callVariables(
      spec?.defaultVariables ?? {},
      call.variables ?? {},
      standardVariables({
        callId,
        conversationType,
        userNumber: call.type === 'telephony_outbound' ? call.toNumber : call.fromNumber,
        agentNumber: call.type === 'telephony_outbound' ? call.fromNumber : call.toNumber,
        agentGender: spec?.voiceGender,
        defaultLanguage: spec?.languageDefault ?? 'en',
        supportedLanguages: spec?.languagesSupported ?? ['en'],
        timezone: spec?.timezone ?? 'UTC',
      }),
    );
    await events.begin(async (tx) => {
      if (call.callId) return;
      await createCall(tx, { orgId: call.orgId, agentId: call.agentId, configSource: 'live', type: call.type, mode: 'webcall', isTest: false, variables, voiceConfig: {}, fromNumber: call.fromNumber ?? null, toNumber: call.toNumber ?? null, callId });
    });
    const analyticsConfig = resolved?.config.postCallAnalyticsConfig;
    await events.end(
      { status: outcome.status, endReason: outcome.reason, endedAt: startedAt.toISOString(), durationS: 0, transcript: [], variables, metrics: { turns: [], processedAt: startedAt.toISOString() } },
      { startedAt, endedAt: startedAt, answered: false, transcript: [], variables, analyze: async () => deterministicAnalytics(analyticsConfig, [], outcome.reason) },
      // A record that existed (queued, or opened for an answer) is ended only while open: never twice.
      { ifOpen: Boolean(call.callId) },
    );
    if (this.deps.liveEvents) new CallFeed(this.deps.liveEvents, callId).end(outcome.status, outcome.reason);
    return callId;
  }

  /**
   * Ends the record of a call whose server stopped while it was up (calls/live-calls.ts): `failed`, reason
   * `server_stopped`, ended when it was last known up, with the transcript its turns had written, and its
   * post-conversation and analytics-completed events, once (false, and nothing written, when the record was final
   * already or never created).
   */
  async closeAbandoned(callId: string, lastSeen: Date): Promise<boolean> {
    const { db } = this.deps;
    const row = await db.selectFrom('calls').selectAll().where('call_id', '=', callId).executeTakeFirst();
    if (!row || FINAL_CALL_STATUSES.has(row.status)) return false;
    const startedAt = new Date(row.started_at);
    const endedAt = new Date(Math.max(startedAt.getTime(), lastSeen.getTime()));
    // Every call with a live row was answered; one not yet activated (an outbound call's voicemail detection) has no
    // conversation, and its start time is still its queueing.
    const talking = row.status === 'in_progress';
    const transcript = talking ? await loadTurns(db, callId) : [];
    const variables = JSON.parse(row.variables) as Vars;
    const metrics = parseJson<CallMetrics>(row.metrics) ?? { turns: [] };
    const events = new CallEvents(db, this.deps.notifyWebhooks, {
      orgId: row.org_id,
      agentId: row.agent_id,
      callId,
      conversationType: CONVERSATION_TYPE[row.type as CallType],
      fromNumber: row.from_number,
      toNumber: row.to_number,
      callType: row.type as CallType,
    });
    const resolved = await this.configAsRun(row.org_id, row.agent_id, row.revision_id);
    const ended = await events.end(
      {
        status: 'failed',
        endReason: 'server_stopped',
        endedAt: endedAt.toISOString(),
        durationS: talking ? Math.round((endedAt.getTime() - startedAt.getTime()) / 100) / 10 : 0,
        transcript,
        variables,
        metrics: { ...metrics, processedAt: new Date().toISOString() },
      },
      {
        startedAt,
        endedAt,
        transcript,
        variables,
        analyze: () => (resolved ? this.analyze(row.org_id, resolved.config, transcript, 'server_stopped') : Promise.resolve(deterministicAnalytics(undefined, transcript, 'server_stopped'))),
      },
      { ifOpen: true },
    );
    if (ended && this.deps.liveEvents) new CallFeed(this.deps.liveEvents, callId).end('failed', 'server_stopped');
    return ended;
  }

  /** The agent's configuration as a call of it runs (its pinned revision, or live); null for an agent deleted or archived since. */
  private configAsRun(orgId: string, agentId: string, revisionId: string | null): Promise<ResolvedCallConfig | null> {
    return pinnedTarget(this.deps.db, revisionId)
      .then((target) => resolveCallConfig(this.deps.db, { orgId, name: 'telephony' }, agentId, target))
      .catch(() => null);
  }

  /** Post-call analytics: by the agent's language model (its model block, else the server default) when there is one. */
  private async analyze(orgId: string, config: Record<string, unknown>, transcript: TranscriptEntry[], endReason: string): Promise<CallAnalytics> {
    // callDispositionConfig (free text) goes to the language model with the metrics; the extractors cannot read it.
    const disposition = typeof config.callDispositionConfig === 'string' && config.callDispositionConfig.trim() ? config.callDispositionConfig.trim() : undefined;
    const base = config.postCallAnalyticsConfig && typeof config.postCallAnalyticsConfig === 'object' ? (config.postCallAnalyticsConfig as Record<string, unknown>) : {};
    const analyticsConfig = disposition ? { ...base, dispositionInstructions: disposition } : config.postCallAnalyticsConfig;
    const endpoint = await llmEndpoint(config, { vault: this.deps.vault, orgId, defaultLlm: this.deps.defaultLlm, models: this.deps.llmModels }).catch(() => ({ error: 'unavailable' }));
    if ('error' in endpoint) return deterministicAnalytics(analyticsConfig, transcript, endReason);
    return llmAnalytics(endpoint, analyticsConfig, transcript, endReason);
  }

  private async saveRecording(orgId: string, callId: string, recorder: CallRecorder | null): Promise<{ recordingMono?: string; recordingDual?: string }> {
    if (!recorder?.hasAudio) return {};
    const { mono, dual } = await recorder.finish();
    const monoKey = recordingKey(orgId, callId, 'mono');
    const dualKey = recordingKey(orgId, callId, 'dual');
    await Promise.all([this.deps.objects.put(monoKey, mono), this.deps.objects.put(dualKey, dual)]);
    return { recordingMono: monoKey, recordingDual: dualKey };
  }
}
