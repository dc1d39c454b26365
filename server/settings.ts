// Server settings from the environment, each with an embedded default so `npm start` needs none.
import path from 'node:path';
import { isIPv4 } from 'node:net';
import { STT_DEFAULTS } from '../engine/models/defaults.js';
import { INFERENCE_SCHEDULERS, type InferenceScheduler } from '../engine/models/queue.js';
import { defaultPublicAddress } from '../telephony/sip/address.js';
import { DEFAULT_RTP_PORTS, parsePortRange, type PortRange } from '../telephony/media/ports.js';
import { DEFAULT_RTP_SENDERS, DEFAULT_SEND_LEAD_MS } from '../telephony/media/sendpool.js';
import { DEFAULT_MEDIA_PRIORITY, MEDIA_PRIORITIES, type MediaPriority } from '../telephony/media/priority.js';
import { TRANSPORTS, parseCarrierAddress, validateAddressList, type Transport } from '../control-plane/telephony/validation.js';
import { parseReworkDate } from '../control-plane/telephony/window.js';
import type { CarrierSettings } from '../control-plane/telephony/carrier.js';
import { RECORDING_STORES, type RecordingStoreKind } from '../control-plane/recordings/object-store.js';

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
  /** How waiting inference jobs get a slot: fifo, priority (default) or split (synthesis has its own slots). */
  inferenceScheduler: InferenceScheduler;
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
   * default: only a live recognition that other jobs wait behind; see README "Models").
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
  /** Speech-to-speech: how long a response waits for client tool outputs, and how many sessions run at once. */
  s2sToolTimeoutMs: number;
  s2sMaxSessions: number;
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
  /** SIP signalling: UDP and TCP on one port (0: an ephemeral port; null: `off`), the bind address, and the address put in Via, Contact and SDP. */
  /**
   * mediaThread: where calls' RTP runs (PARLEY_MEDIA_THREAD: `worker`, the default, or `main`); mediaPriority: the
   * media worker thread's scheduling (PARLEY_MEDIA_PRIORITY: `latency`, the default, a short EEVDF time slice; `realtime`,
   * SCHED_RR where the process may; or `normal`); rtpSenders: the send pool's sender threads, one per CPU up to this
   * (PARLEY_RTP_SENDERS, 2; 0: the media thread sends itself); rtpSendLeadMs: how far ahead of its time a packet is
   * built and handed to them (PARLEY_RTP_SEND_LEAD_MS, 10).
   */
  /** rtpTimeoutSecs: a call whose caller sends no RTP this long is hung up (PARLEY_RTP_TIMEOUT_SECS; 0: never). */
  sip: { port: number | null; host: string; publicAddress: string; rtpPorts: PortRange; mediaThread: 'worker' | 'main'; mediaPriority: MediaPriority; rtpSenders: number; rtpSendLeadMs: number; rtpTimeoutSecs: number };
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
}

function scheduler(value: string | undefined): InferenceScheduler {
  const v = (value || 'priority') as InferenceScheduler;
  if (!INFERENCE_SCHEDULERS.includes(v)) throw new Error(`PARLEY_INFERENCE_SCHEDULER must be one of ${INFERENCE_SCHEDULERS.join(', ')}`);
  return v;
}

function recordingStore(raw: string | undefined): RecordingStoreKind | undefined {
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '') return undefined;
  if (!RECORDING_STORES.includes(value as RecordingStoreKind)) throw new Error(`PARLEY_RECORDING_STORE must be ${RECORDING_STORES.join(' or ')}`);
  return value as RecordingStoreKind;
}

function carrier(env: NodeJS.ProcessEnv): CarrierSettings {
  let address: string | undefined;
  if (env.PARLEY_CARRIER_ADDRESS) {
    const parsed = parseCarrierAddress(env.PARLEY_CARRIER_ADDRESS);
    if (!parsed) throw new Error('PARLEY_CARRIER_ADDRESS must be host or host:port (an optional sip: prefix is stripped)');
    address = parsed.address;
  }
  const transport = (env.PARLEY_CARRIER_TRANSPORT || 'udp').toLowerCase() as Transport;
  if (!TRANSPORTS.includes(transport)) throw new Error(`PARLEY_CARRIER_TRANSPORT must be one of ${TRANSPORTS.join(', ')}`);
  const cps = int(env, 'PARLEY_CARRIER_CPS', 1, 1);
  if (cps > 50) throw new Error('PARLEY_CARRIER_CPS must be an integer from 1 to 50');
  const errors: string[] = [];
  const list = (env.PARLEY_CARRIER_ALLOWED_ADDRESSES ?? '').split(',').map((a) => a.trim()).filter(Boolean);
  const allowedAddresses = validateAddressList(list, 'PARLEY_CARRIER_ALLOWED_ADDRESSES', errors);
  if (!allowedAddresses) throw new Error(errors.join('; '));
  const username = env.PARLEY_CARRIER_USERNAME || undefined;
  const password = env.PARLEY_CARRIER_PASSWORD || undefined;
  if (Boolean(username) !== Boolean(password)) throw new Error('PARLEY_CARRIER_USERNAME and PARLEY_CARRIER_PASSWORD go together: set both or neither');
  return { name: env.PARLEY_CARRIER_NAME || 'carrier', address, transport, cps, allowedAddresses, username, password };
}

function sipSettings(env: NodeJS.ProcessEnv): Settings['sip'] {
  const off = (env.PARLEY_SIP_PORT ?? '').trim().toLowerCase() === 'off';
  const port = off ? null : int(env, 'PARLEY_SIP_PORT', 5060, 0);
  if (port !== null && port > 65535) throw new Error('PARLEY_SIP_PORT must be a port number (0 for any free one) or off');
  const host = env.PARLEY_SIP_HOST || '0.0.0.0';
  if (!isIPv4(host)) throw new Error('PARLEY_SIP_HOST must be an IPv4 address such as 0.0.0.0');
  const publicAddress = env.PARLEY_SIP_PUBLIC_ADDRESS || defaultPublicAddress(host);
  if (!isIPv4(publicAddress) && !/^(?=.{1,253}$)[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/.test(publicAddress)) {
    throw new Error('PARLEY_SIP_PUBLIC_ADDRESS must be an IPv4 address or a host name');
  }
  const mediaThread = (env.PARLEY_MEDIA_THREAD || 'worker').trim().toLowerCase();
  if (mediaThread !== 'worker' && mediaThread !== 'main') throw new Error('PARLEY_MEDIA_THREAD must be worker or main');
  const mediaPriority = (env.PARLEY_MEDIA_PRIORITY || DEFAULT_MEDIA_PRIORITY).trim().toLowerCase();
  if (!MEDIA_PRIORITIES.includes(mediaPriority as MediaPriority)) throw new Error(`PARLEY_MEDIA_PRIORITY must be ${MEDIA_PRIORITIES.join(', ')}`);
  const rtpSenders = int(env, 'PARLEY_RTP_SENDERS', DEFAULT_RTP_SENDERS, 0);
  if (rtpSenders > 8) throw new Error('PARLEY_RTP_SENDERS must be 0-8 (sender threads, one per CPU)');
  const rtpSendLeadMs = int(env, 'PARLEY_RTP_SEND_LEAD_MS', DEFAULT_SEND_LEAD_MS, 1);
  if (rtpSendLeadMs > 40) throw new Error('PARLEY_RTP_SEND_LEAD_MS must be 1-40 (milliseconds)');
  return { port, host, publicAddress, rtpPorts: parsePortRange(env.PARLEY_RTP_PORTS ?? DEFAULT_RTP_PORTS), mediaThread, mediaPriority: mediaPriority as MediaPriority, rtpSenders, rtpSendLeadMs, rtpTimeoutSecs: int(env, 'PARLEY_RTP_TIMEOUT_SECS', 60, 0) };
}

function int(env: NodeJS.ProcessEnv, name: string, dflt: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}`);
  return n;
}

/** A boolean switch: 1/true/yes on, 0/false/no or unset off; anything else is a start-up error naming the variable. */
function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '' || raw === '0' || raw === 'false' || raw === 'no') return false;
  if (raw === '1' || raw === 'true' || raw === 'yes') return true;
  throw new Error(`${name} must be 1 or 0`);
}

/** PARLEY_STT_SHORT_WINDOW: 1/true/yes, 0/false/no, or busy (also when unset). */
function shortWindow(raw: string | undefined): boolean | 'busy' {
  const v = (raw ?? '').trim().toLowerCase();
  if (v === 'busy' || v === '') return 'busy';
  if (v === '0' || v === 'false' || v === 'no') return false;
  if (v === '1' || v === 'true' || v === 'yes') return true;
  throw new Error('PARLEY_STT_SHORT_WINDOW must be true, false or busy');
}

/** Hours, fractions allowed (tests use a few seconds), up to 30 days; at least one second. */
function sessionTtl(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return 12 * 3600;
  const hours = Number(raw);
  if (!Number.isFinite(hours) || hours <= 0 || hours > 720) throw new Error('PARLEY_SESSION_TTL_HOURS must be a number of hours above 0 and at most 720');
  return Math.max(1, Math.round(hours * 3600));
}

function prefix(raw: string | undefined, dflt: string): string {
  const value = (raw ?? dflt).replace(/\/+$/, '');
  if (!/^(\/[A-Za-z0-9._-]+)+$/.test(value)) throw new Error(`API prefix "${raw}" must look like /name/v1`);
  return value;
}

function region(raw: string | undefined): string {
  const value = raw ?? 'local';
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(value)) throw new Error('PARLEY_REGION must be a short lower-case name such as us-east or ap-south-1');
  return value;
}

export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  let sunset: Date | undefined;
  if (env.PARLEY_V1_SUNSET) {
    sunset = new Date(env.PARLEY_V1_SUNSET);
    if (Number.isNaN(sunset.getTime())) throw new Error('PARLEY_V1_SUNSET must be a date such as 2027-06-30');
  }
  return {
    host: env.HOST ?? '0.0.0.0',
    port: int(env, 'PORT', 8080, 0),
    dataDir: path.resolve(env.PARLEY_DATA_DIR ?? './data'),
    databaseUrl: env.DATABASE_URL || undefined,
    databaseSchema: env.DATABASE_SCHEMA || undefined,
    atomsPrefix: prefix(env.PARLEY_ATOMS_PREFIX, '/atoms/v1'),
    wavesPrefix: prefix(env.PARLEY_WAVES_PREFIX, '/waves/v1'),
    maxBodyBytes: int(env, 'PARLEY_MAX_BODY_BYTES', 1024 * 1024, 1),
    rateLimitPerMinute: int(env, 'PARLEY_RATE_LIMIT_PER_MINUTE', 600, 1),
    region: region(env.PARLEY_REGION),
    tokenMintsPerMinute: int(env, 'PARLEY_TOKEN_MINTS_PER_MINUTE', 60, 1),
    modelsDir: env.PARLEY_MODELS_DIR ? path.resolve(env.PARLEY_MODELS_DIR) : undefined,
    warmModels: (env.PARLEY_WARM_MODELS ?? 'true') !== 'false',
    inferenceConcurrency: int(env, 'PARLEY_INFERENCE_CONCURRENCY', 2, 1),
    inferenceQueue: int(env, 'PARLEY_INFERENCE_QUEUE', 16, 0),
    inferenceScheduler: scheduler(env.PARLEY_INFERENCE_SCHEDULER),
    sttMaxBytes: int(env, 'PARLEY_STT_MAX_BYTES', 64 * 1024 * 1024, 1024),
    sttMaxSeconds: int(env, 'PARLEY_STT_MAX_SECONDS', 600, 1),
    sttBeams: int(env, 'PARLEY_STT_BEAMS', STT_DEFAULTS.beams, 1),
    sttLiveBeams: int(env, 'PARLEY_STT_LIVE_BEAMS', STT_DEFAULTS.liveBeams, 1),
    sttThreads: int(env, 'PARLEY_STT_THREADS', STT_DEFAULTS.threads, 1),
    sttShortWindow: shortWindow(env.PARLEY_STT_SHORT_WINDOW),
    inferenceNice: Math.min(19, int(env, 'PARLEY_INFERENCE_NICE', 10, 0)),
    bootstrapKey: env.PARLEY_BOOTSTRAP_KEY || undefined,
    keyCacheMs: int(env, 'PARLEY_KEY_CACHE_MS', 3000, 0),
    sessionTtlSeconds: sessionTtl(env.PARLEY_SESSION_TTL_HOURS),
    scanBudgetMs: int(env, 'PARLEY_SCAN_BUDGET_MS', 200, 0),
    scanTimeoutMs: int(env, 'PARLEY_SCAN_TIMEOUT_MS', 30_000, 100),
    v1SunsetDate: sunset,
    shutdownTimeoutMs: int(env, 'PARLEY_SHUTDOWN_TIMEOUT_MS', 10_000, 0),
    logLevel: env.LOG_LEVEL ?? 'info',
    secretKey: env.PARLEY_SECRET_KEY || undefined,
    s2sToolTimeoutMs: int(env, 'PARLEY_S2S_TOOL_TIMEOUT_MS', 15_000, 1),
    s2sMaxSessions: int(env, 'PARLEY_S2S_MAX_SESSIONS', 32, 1),
    // Sized from `npm run bench:agents` on a 2-core machine (README "Capacity"): 16 voice sessions keep up even when
    // all callers speak at the same moments (e2e p95 0.72-0.78 s in three runs, with PARLEY_STT_SHORT_WINDOW=busy;
    // 24 do not); 128 chat sessions answer within 2 ms (p95).
    sessionCaps: {
      speech: { server: int(env, 'PARLEY_MAX_SPEECH_SESSIONS', 16, 1), perOwner: int(env, 'PARLEY_MAX_SPEECH_SESSIONS_PER_KEY', 6, 1) },
      chat: { server: int(env, 'PARLEY_MAX_CHAT_SESSIONS', 128, 1), perOwner: int(env, 'PARLEY_MAX_CHAT_SESSIONS_PER_KEY', 32, 1) },
    },
    sttIdleSeconds: int(env, 'PARLEY_STT_IDLE_SECONDS', 60, 1),
    allowPrivateEgress: flag(env, 'PARLEY_ALLOW_PRIVATE_EGRESS'),
    webhookTimeoutMs: int(env, 'PARLEY_WEBHOOK_TIMEOUT_MS', 30_000, 100),
    webhookPollMs: int(env, 'PARLEY_WEBHOOK_POLL_MS', 1000, 10),
    webhookConcurrency: int(env, 'PARLEY_WEBHOOK_CONCURRENCY', 8, 1),
    carrier: carrier(env),
    telephonyReworkDate: parseReworkDate(env.PARLEY_TELEPHONY_REWORK_DATE),
    sip: sipSettings(env),
    redisUrl: env.PARLEY_REDIS_URL || undefined,
    outboundQueue: int(env, 'PARLEY_OUTBOUND_QUEUE', 1000, 1),
    outboundRingSecs: int(env, 'PARLEY_OUTBOUND_RING_SECS', 60, 1),
    outboundLeaseSecs: int(env, 'PARLEY_OUTBOUND_LEASE_SECS', 30, 2),
    campaignMinuteMs: int(env, 'PARLEY_CAMPAIGN_MINUTE_MS', 60_000, 1),
    recordingStore: recordingStore(env.PARLEY_RECORDING_STORE),
    llm: env.PARLEY_LLM_BASE_URL
      ? { baseUrl: env.PARLEY_LLM_BASE_URL.replace(/\/+$/, ''), model: env.PARLEY_LLM_MODEL || 'gpt-4o-mini', apiKey: env.PARLEY_LLM_API_KEY || undefined }
      : undefined,
  };
}
