// Server settings from the environment. Each variable is declared once in settings-schema.ts (name, parser, default,
// meaning, the field below it fills); docs/settings.md is generated from there (`npm run docs:settings`).
import type { PortRange } from '../telephony/media/ports.js';
import type { MediaPriority } from '../telephony/media/priority.js';
import type { CarrierSettings } from '../control-plane/telephony/carrier.js';
import type { RecordingStoreKind } from '../control-plane/recordings/object-store.js';
import { readSettings, type Env, type MediaProfile } from './settings-schema.js';
import type { NamedLlm } from '../calls/llm-models.js';

export type { CarrierSettings };

export interface Settings {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl?: string;
  databaseSchema?: string;
  atomsPrefix: string;
  wavesPrefix: string;
  maxBodyBytes: number;
  rateLimitPerMinute: number;
  /** Region this server mints and accepts access tokens for. */
  region: string;
  tokenMintsPerMinute: number;
  /** A directory of user models (`voices/<id>/voice.onnx` + `.onnx.json`). */
  modelsDir?: string;
  warmModels: boolean;
  inferenceConcurrency: number;
  inferenceQueue: number;
  sttMaxBytes: number;
  sttMaxSeconds: number;
  /** Whisper beam width for whole-file recognition (POST /stt/, get_text). */
  sttBeams: number;
  /** Whisper beam width for live interims, live finals and agent turns. */
  sttLiveBeams: number;
  /** Threads inside each recognizer worker. */
  sttThreads: number;
  /**
   * Shorter Whisper encoder window for greedy clips up to 5 s (PARLEY_STT_SHORT_WINDOW: true, false, or `busy`, the
   * default: only a live recognition that other jobs wait behind; see docs/models.md).
   */
  sttShortWindow: boolean | 'busy';
  inferenceNice: number;
  bootstrapKey?: string;
  keyCacheMs: number;
  /** Lifetime of a console sign-in (absolute, from sign-in), in seconds; set in hours by PARLEY_SESSION_TTL_HOURS. */
  sessionTtlSeconds: number;
  scanBudgetMs: number;
  scanTimeoutMs: number;
  v1SunsetDate?: Date;
  shutdownTimeoutMs: number;
  logLevel: string;
  /** Secrets vault master key (64 hex or base64 of 32 bytes); unset: `<dataDir>/secret.key`. */
  secretKey?: string;
  /** The server's default language model (OpenAI-compatible): used by speech-to-speech and by single-prompt agents without a model block. */
  llm?: { baseUrl: string; model: string; apiKey?: string };
  /** Named models (PARLEY_LLM_MODELS, or the file PARLEY_LLM_MODELS_FILE) that an agent's `slmModel` and chat completions' `model` choose. */
  llmModels: readonly NamedLlm[];
  /** Where llmModels were read from, when from a file. */
  llmModelsFile?: string;
  /** Speech-to-speech: how long a response waits for client tool outputs (its sessions count against sessionCaps.speech). */
  s2sToolTimeoutMs: number;
  /** Concurrent realtime sessions, server-wide and per key, for sessions that run speech models and for text-only ones. */
  sessionCaps: { speech: { server: number; perOwner: number }; chat: { server: number; perOwner: number } };
  /** Live recognition sockets that receive no audio and no message for this long are closed. */
  sttIdleSeconds: number;
  /** Egress policy: allow outbound requests (audio by URL, webhooks) to private, loopback and unspecified addresses. */
  allowPrivateEgress: boolean;
  /** Webhook deliveries: per-attempt timeout, how often pending rows are polled, and how many go out at once. */
  webhookTimeoutMs: number;
  webhookPollMs: number;
  webhookConcurrency: number;
  /** The platform carrier (operator's numbers): read by the SIP leg; the password is never logged. */
  carrier: CarrierSettings;
  /** Overrides the stored telephony rework release date (start of the 45-day window of deprecated telephony items). */
  telephonyReworkDate?: Date;
  /**
   * SIP signalling: UDP and TCP on one port (0: an ephemeral port; null: `off`), the bind address, and the address put
   * in Via, Contact and SDP. Every call's RTP runs on the media worker thread: mediaProfile sets the next three
   * (PARLEY_MEDIA_PROFILE), each of which a setting of its own may override; mediaPriority is its scheduling,
   * rtpSenders the send pool's sender threads (0: the media thread sends itself), rtpSendLeadMs how far ahead of its
   * time a packet is built; rtpTimeoutSecs: a call whose caller sends no RTP this long is hung up (0: never).
   */
  sip: { port: number | null; host: string; publicAddress: string; rtpPorts: PortRange; mediaProfile: MediaProfile; mediaPriority: MediaPriority; rtpSenders: number; rtpSendLeadMs: number; rtpTimeoutSecs: number };
  /** Redis shared by several servers (PARLEY_REDIS_URL): the outbound pace per carrier address is kept there. */
  redisUrl?: string;
  /** Outbound calls that may wait per carrier address (PARLEY_OUTBOUND_QUEUE); beyond it 429 with Retry-After. */
  outboundQueue: number;
  /** How long an outbound call rings before we CANCEL it (PARLEY_OUTBOUND_RING_SECS): a no-answer. */
  outboundRingSecs: number;
  /** A claim on a queued call that its server has not renewed this long is taken back (PARLEY_OUTBOUND_LEASE_SECS). */
  outboundLeaseSecs: number;
  /** Where recordings are kept (PARLEY_RECORDING_STORE): `files` under the data dir (unset: the default) or `database`. */
  recordingStore?: RecordingStoreKind;
  /** How long one minute of a campaign's `retryDelay` lasts (PARLEY_CAMPAIGN_MINUTE_MS, 60000; tests and dry runs shorten it). */
  campaignMinuteMs: number;
  /**
   * OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_SERVICE_NAME,
   * OTEL_EXPORTER_OTLP_HEADERS): on when an endpoint is set (server/tracing.ts). The headers are credentials.
   */
  traces: { endpoint?: string; tracesEndpoint?: string; serviceName: string; headers: Record<string, string> };
}

/** Sets `obj.a.b.c` for the path `a.b.c`, making the objects on the way. */
function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = obj;
  for (const part of parts.slice(0, -1)) cur = (cur[part] ??= {}) as Record<string, unknown>;
  cur[parts[parts.length - 1] as string] = value;
}

/**
 * Settings from the environment. Refuses (throws, naming every variable at fault) an unknown PARLEY_* variable with
 * the nearest setting's name, a removed setting that is set, and a value the setting does not allow.
 */
export function loadSettings(env: Env = process.env): Settings {
  const { values, errors } = readSettings(env);
  const built: Record<string, unknown> = {};
  for (const [field, value] of values) setPath(built, field, value);
  const settings = built as unknown as Settings;
  if (Boolean(settings.carrier?.username) !== Boolean(settings.carrier?.password)) {
    errors.push('PARLEY_CARRIER_USERNAME and PARLEY_CARRIER_PASSWORD go together: set both or neither');
  }
  if (errors.length) throw new Error(errors.join('\n'));
  // The default language model exists only with its base URL.
  if (!settings.llm?.baseUrl) settings.llm = undefined;
  return settings;
}
