// OpenTelemetry spans of a call: the call, each spoken turn (from the latency figures the session reports), each tool
// call, an outbound call's dial. Written against @opentelemetry/api alone: server/tracing.ts loads the SDK when
// OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise every span here is the API's no-op (nothing kept, nothing sent).
// Attributes are ids, names, figures and outcomes: never arguments, transcripts, phone numbers, URLs or secrets.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { TurnMetrics } from '../engine/agent/session.js';
import type { CallMode, CallType } from '../control-plane/calls/calls.js';

export const tracer = trace.getTracer('parley');

/** On every span of a call (control-plane/webhooks/dispatcher.ts writes the same names on deliveries). */
export const CALL_ID = 'parley.call_id';
export const ORG_ID = 'parley.org_id';

export interface CallTraceInfo {
  callId: string;
  orgId: string;
  agentId: string;
  mode: CallMode;
  type: CallType;
  isTest: boolean;
}

/** How a tool call ended: answered, failed (an HTTP error, bad arguments, the request failed), not answered in time by the app, sent without waiting for an answer, or no such tool here. */
export type ToolOutcome = 'ok' | 'error' | 'timeout' | 'sent' | 'unavailable';

export interface ToolSpan {
  end(outcome: ToolOutcome, httpStatus?: number | null): void;
}

export interface DialSpan {
  /** `status`/`reason` as the call record gets them (`answered` for an answer); `sipStatus` the final response's. */
  end(outcome: { status: string; reason: string }, sipStatus?: number | null): void;
}

const NOT_FAILED = new Set(['busy', 'no_answer', 'ringing_timeout', 'canceled']);

/** A call's span and the context its child spans hang from. `end` may be called more than once: the first one counts. */
export class CallTrace {
  private ended = false;
  private readonly context: Context;

  private constructor(
    private readonly span: Span,
    private readonly ids: Attributes,
  ) {
    this.context = trace.setSpan(ROOT_CONTEXT, span);
  }

  /** Starts a call's span (`startTime`: epoch ms, default now). */
  static start(info: CallTraceInfo, startTime?: number): CallTrace {
    const ids = { [CALL_ID]: info.callId, [ORG_ID]: info.orgId };
    const span = tracer.startSpan('parley.call', {
      startTime,
      attributes: { ...ids, 'parley.agent_id': info.agentId, 'parley.call.mode': info.mode, 'parley.call.type': info.type, 'parley.call.is_test': info.isTest },
    });
    return new CallTrace(span, ids);
  }

  /** False when traces are off (the no-op span): callers may skip work that only feeds spans. */
  get recording(): boolean {
    return this.span.isRecording();
  }

  /**
   * One spoken turn, from the caller's end of speech to the agent's first audio, made from the figures the session
   * reports at that first audio (the call record's `metrics.turns` entry), with explicit times.
   */
  turn(m: TurnMetrics): void {
    if (!this.span.isRecording()) return;
    const end = (m.botStart && Date.parse(m.botStart)) || Date.now();
    const start = m.e2eMs !== null ? end - m.e2eMs : Date.parse(m.userEnd) || end;
    const attributes: Attributes = { ...this.ids, 'parley.turn.number': m.turn, 'parley.turn.eou_delay_ms': m.eouDelayMs, 'parley.turn.recognition_ms': m.recognitionMs };
    const put = (name: string, ms: number | null) => {
      if (ms !== null && Number.isFinite(ms)) attributes[name] = ms;
    };
    put('parley.turn.brain_first_text_ms', m.brainFirstTokenMs);
    put('parley.turn.brain_first_phrase_ms', m.brainFirstPhraseMs);
    put('parley.turn.tts_first_byte_ms', m.ttsFirstByteMs);
    put('parley.turn.first_audio_ms', m.e2eMs);
    put('parley.turn.engine_overhead_ms', m.engineOverheadMs);
    const span = tracer.startSpan('parley.turn', { startTime: start, attributes }, this.context);
    // The turn's moments on its timeline: committed (end of the end-of-turn wait), the brain's first text and phrase.
    const committed = start + m.eouDelayMs;
    span.addEvent('turn.committed', committed);
    if (m.brainFirstTokenMs !== null) span.addEvent('brain.first_text', committed + m.brainFirstTokenMs);
    if (m.brainFirstPhraseMs !== null) span.addEvent('brain.first_phrase', committed + m.brainFirstPhraseMs);
    span.end(end);
  }

  /** A tool call's span, started now: its name and kind; the arguments and the answer are never recorded. */
  tool(name: string, type: string): ToolSpan {
    const span = tracer.startSpan('parley.tool', { kind: SpanKind.CLIENT, attributes: { ...this.ids, 'parley.tool.name': name, 'parley.tool.type': type } }, this.context);
    let done = false;
    return {
      end(outcome, httpStatus) {
        if (done) return;
        done = true;
        span.setAttribute('parley.tool.outcome', outcome);
        if (httpStatus) span.setAttribute('http.response.status_code', httpStatus);
        if (outcome === 'error' || outcome === 'timeout') span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      },
    };
  }

  /** An outbound call's INVITE, from `startTime` (epoch ms) until the answer or the final failure. */
  dial(trunkId: string | null, startTime: number): DialSpan {
    const span = tracer.startSpan('parley.dial', { kind: SpanKind.CLIENT, startTime, attributes: { ...this.ids, 'parley.trunk_id': trunkId ?? 'platform' } }, this.context);
    let done = false;
    return {
      end(outcome, sipStatus) {
        if (done) return;
        done = true;
        span.setAttributes({ 'parley.dial.outcome': outcome.reason });
        if (sipStatus) span.setAttribute('parley.sip.status_code', sipStatus);
        if (outcome.status === 'failed' && !NOT_FAILED.has(outcome.reason)) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      },
    };
  }

  /** Ends the call's span with the record's final status and end reason. */
  end(outcome: { status: string; reason: string }, more: Attributes = {}): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttributes({ ...more, 'parley.call.status': outcome.status, 'parley.call.end_reason': outcome.reason });
    if (outcome.status === 'failed') this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
  }
}
