// Every environment variable the server reads, declared once: its name, group, how it is parsed (and so what values
// it allows), its default, one line of meaning, and the Settings field it fills. server/settings.ts builds Settings from
// this list; server/settings-docs.ts writes docs/settings.md from it. An empty value counts as unset.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { STT_DEFAULTS } from '../engine/models/defaults.js';
import { defaultPublicAddress } from '../telephony/sip/address.js';
import { DEFAULT_RTP_PORTS, parsePortRange, type PortRange } from '../telephony/media/ports.js';
import { DEFAULT_RTP_SENDERS, DEFAULT_SEND_LEAD_MS } from '../telephony/media/sendpool.js';
import { DEFAULT_MEDIA_PRIORITY, MEDIA_PRIORITIES, type MediaPriority } from '../telephony/media/priority.js';
import { TRANSPORTS, parseCarrierAddress, validateAddressList } from '../control-plane/telephony/validation.js';
import { parseReworkDate } from '../control-plane/telephony/window.js';
import { RECORDING_STORES } from '../control-plane/recordings/object-store.js';
import { MODELS_FILE_SETTING, parseLlmModels } from '../calls/llm-models.js';
import type { Settings } from './settings.js';

export type Env = Record<string, string | undefined>;

/** Sections of docs/settings.md, in order. */
export const GROUPS = {
  server: 'Server',
  storage: 'Storage',
  access: 'Keys, tokens and egress',
  sessions: 'Realtime sessions',
  models: 'Speech models and inference',
  agents: 'Agents, language model and speech-to-speech',
  webhooks: 'Webhooks',
  sip: 'SIP and RTP',
  carrier: 'Platform carrier',
  outbound: 'Outbound calls and campaigns',
  observability: 'Observability',
} as const;
export type Group = keyof typeof GROUPS;

// ------------------------------------------------------------------------------------------------- Settings paths
type Leaf = string | number | boolean | Date | readonly unknown[] | PortRange;
/** Dot paths of Settings down to its leaves (`port`, `sip.rtpPorts`, `sessionCaps.speech.server`). */
export type SettingsPath<T = Settings> = {
  [K in keyof T & string]-?: NonNullable<T[K]> extends Leaf ? K : K | `${K}.${SettingsPath<NonNullable<T[K]>>}`;
}[keyof T & string];
/** The type at a path; under an optional parent (`llm?`) undefined is allowed too (that parent is then left out). */
export type PathValue<T, P extends string> = P extends `${infer K}.${infer R}`
  ? K extends keyof T
    ? PathValue<NonNullable<T[K]>, R> | (undefined extends T[K] ? undefined : never)
    : never
  : P extends keyof T
    ? T[P]
    : never;

// ---------------------------------------------------------------------------------------------------- kinds
/** How a value is read: `raw` is undefined when the variable is unset or empty; throws an Error naming `name`. */
export interface Kind<T> {
  parse(raw: string | undefined, name: string, env: Env): T;
  /** The default as docs/settings.md shows it. */
  shownDefault: string;
  /** The values allowed, as docs/settings.md shows them. */
  allowed: string;
}

export interface Setting {
  name: string;
  group: Group;
  /** The Settings field it fills (a dot path). */
  field: SettingsPath;
  /** One line: what it does. */
  doc: string;
  /** One of the few settings most operators set; the rest are tuning. */
  essential: boolean;
  shownDefault: string;
  allowed: string;
  read(env: Env): unknown;
}

const valueOf = (env: Env, name: string): string | undefined => {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
};

function setting<P extends SettingsPath>(
  name: string,
  group: Group,
  field: P,
  kind: Kind<PathValue<Settings, P>>,
  doc: string,
  opts: { essential?: boolean; shownDefault?: string } = {},
): Setting {
  return {
    name,
    group,
    field,
    doc,
    essential: opts.essential ?? false,
    shownDefault: opts.shownDefault ?? kind.shownDefault,
    allowed: kind.allowed,
    read: (env) => kind.parse(valueOf(env, name), name, env),
  };
}

/** An integer from `min` (to `max`): `NAME must be an integer >= min`, or `NAME must be min-max` above the top. */
function int(dflt: number, min: number, max?: number, hint?: string): Kind<number> {
  return {
    shownDefault: `\`${dflt}\``,
    allowed: max === undefined ? `integer >= ${min}` : `integer ${min}-${max}`,
    parse(raw, name) {
      if (raw === undefined) return dflt;
      const n = Number(raw);
      if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}`);
      if (max !== undefined && n > max) throw new Error(`${name} must be ${min}-${max}${hint ? ` (${hint})` : ''}`);
      return n;
    },
  };
}

const ON = ['1', 'true', 'yes'];
const OFF = ['0', 'false', 'no'];
/** A switch: 1/true/yes or 0/false/no; anything else refuses start-up. */
function bool(dflt: boolean): Kind<boolean> {
  return {
    shownDefault: dflt ? '`1`' : '`0`',
    allowed: '`1`/`true`/`yes`, `0`/`false`/`no`',
    parse(raw, name) {
      if (raw === undefined) return dflt;
      const v = raw.trim().toLowerCase();
      if (ON.includes(v)) return true;
      if (OFF.includes(v)) return false;
      throw new Error(`${name} must be 1 or 0 (also true/false, yes/no)`);
    },
  };
}

/** One of `values` (trimmed, case-insensitive); `message` is the tail after the name. */
function oneOf<V extends string, D extends V | undefined>(values: readonly V[], dflt: D, message = `must be ${values.join(', ')}`): Kind<V | D> {
  return {
    shownDefault: dflt === undefined ? 'unset' : `\`${dflt}\``,
    allowed: values.map((v) => `\`${v}\``).join(', '),
    parse(raw, name) {
      if (raw === undefined) return dflt;
      const v = raw.trim().toLowerCase() as V;
      if (!values.includes(v)) throw new Error(`${name} ${message}`);
      return v;
    },
  };
}

/** Free text; unset gives `dflt`. */
function text<D extends string | undefined>(dflt: D, allowed = 'any text'): Kind<string | D> {
  return { shownDefault: dflt === undefined ? 'unset' : `\`${dflt}\``, allowed, parse: (raw) => raw ?? dflt };
}

/** Anything checked by `check`, which throws naming the variable. */
function custom<T>(shownDefault: string, allowed: string, parse: (raw: string | undefined, name: string, env: Env) => T): Kind<T> {
  return { shownDefault, allowed, parse };
}

const directory = (dflt: string | undefined): Kind<string | undefined> =>
  custom(dflt === undefined ? 'unset' : `\`${dflt}\``, 'a directory path', (raw) => (raw ?? dflt) === undefined ? undefined : path.resolve((raw ?? dflt) as string));

const prefix = (dflt: string): Kind<string> =>
  custom(`\`${dflt}\``, 'a path such as `/name/v1`', (raw, name) => {
    const value = (raw ?? dflt).replace(/\/+$/, '');
    if (!/^(\/[A-Za-z0-9._-]+)+$/.test(value)) throw new Error(`${name} must look like /name/v1, got "${raw}"`);
    return value;
  });

const date = (example: string): Kind<Date | undefined> =>
  custom('unset', `a date such as \`${example}\``, (raw, name) => {
    if (raw === undefined) return undefined;
    const d = new Date(raw);
    if (Number.isNaN(d.getTime())) throw new Error(`${name} must be a date such as ${example}`);
    return d;
  });

const url = (schemes: string[], example: string): Kind<string | undefined> =>
  custom('unset', `a ${schemes.map((s) => `\`${s}://\``).join(' or ')} URL`, (raw, name) => {
    if (raw === undefined) return undefined;
    let ok = false;
    try {
      ok = schemes.includes(new URL(raw.trim()).protocol.replace(/:$/, ''));
    } catch {
      /* not a URL */
    }
    if (!ok) throw new Error(`${name} must be ${schemes[0]?.startsWith('h') ? 'an' : 'a'} ${schemes.join(' or ')} URL such as ${example}`);
    return raw.trim();
  });

// ------------------------------------------------------------------------------------------------- media profiles
export const MEDIA_PROFILES = ['balanced', 'light', 'realtime'] as const;
export type MediaProfile = (typeof MEDIA_PROFILES)[number];
/** What each PARLEY_MEDIA_PROFILE sets (bench:telephony measured `balanced`; see docs/settings-notes.md). */
export const MEDIA_PROFILE_VALUES: Readonly<Record<MediaProfile, { priority: MediaPriority; senders: number; leadMs: number }>> = {
  balanced: { priority: DEFAULT_MEDIA_PRIORITY, senders: DEFAULT_RTP_SENDERS, leadMs: DEFAULT_SEND_LEAD_MS },
  light: { priority: 'normal', senders: 0, leadMs: DEFAULT_SEND_LEAD_MS },
  realtime: { priority: 'realtime', senders: DEFAULT_RTP_SENDERS, leadMs: DEFAULT_SEND_LEAD_MS },
};

/** A media setting whose default is the profile's (PARLEY_MEDIA_PROFILE, itself checked by its own setting). */
function fromProfile<T>(kind: Kind<T | undefined>, part: 'priority' | 'senders' | 'leadMs'): Kind<T> {
  return {
    shownDefault: `the profile's`,
    allowed: kind.allowed,
    parse(raw, name, env) {
      if (raw !== undefined) return kind.parse(raw, name, env) as T;
      const profile = (valueOf(env, 'PARLEY_MEDIA_PROFILE')?.trim().toLowerCase() ?? 'balanced') as MediaProfile;
      return (MEDIA_PROFILE_VALUES[profile] ?? MEDIA_PROFILE_VALUES.balanced)[part] as T;
    },
  };
}

// ------------------------------------------------------------------------------------------------- the settings
const PINO_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const SETTINGS: readonly Setting[] = [
  // Server
  setting('HOST', 'server', 'host', text('0.0.0.0', 'an address to listen on'), 'Where HTTP and WebSocket connections are accepted.', { essential: true }),
  setting('PORT', 'server', 'port', int(8080, 0, 65535), 'The HTTP port; `0` picks a free one (logged in the `listening` line).', { essential: true }),
  setting('LOG_LEVEL', 'server', 'logLevel', oneOf(PINO_LEVELS, 'info'), 'pino level; logs are JSON lines on stdout and never contain keys.'),
  setting('PARLEY_SHUTDOWN_TIMEOUT_MS', 'server', 'shutdownTimeoutMs', int(10_000, 0), 'How long SIGTERM waits for in-flight requests.'),
  setting('PARLEY_MAX_BODY_BYTES', 'server', 'maxBodyBytes', int(1024 * 1024, 1), 'Largest request body (413 beyond).'),
  setting('PARLEY_ATOMS_PREFIX', 'server', 'atomsPrefix', prefix('/atoms/v1'), 'Prefix of the agent-platform API.'),
  setting('PARLEY_WAVES_PREFIX', 'server', 'wavesPrefix', prefix('/waves/v1'), 'Prefix of the inference API.'),
  setting('PARLEY_V1_SUNSET', 'server', 'v1SunsetDate', date('2027-06-30'), 'Legacy v1 responses carry a `Sunset` header with this date.'),

  // Storage
  setting('PARLEY_DATA_DIR', 'storage', 'dataDir', custom('`./data`', 'a directory path', (raw) => path.resolve(raw ?? './data')), 'The SQLite store (`parley.sqlite`, WAL mode), recordings (`files` store) and the secrets key file.', { essential: true }),
  setting('DATABASE_URL', 'storage', 'databaseUrl', text(undefined, 'a `postgres://` URL'), 'Use PostgreSQL instead of SQLite (same migrations, same code).', { essential: true }),
  setting('DATABASE_SCHEMA', 'storage', 'databaseSchema', text(undefined, 'a schema name'), 'PostgreSQL schema to use (created if missing).'),
  setting('PARLEY_RECORDING_STORE', 'storage', 'recordingStore', oneOf(RECORDING_STORES, undefined, `must be ${RECORDING_STORES.join(' or ')}`), 'Where call recordings are written: `files` (`<data dir>/recordings`; only this server serves them) or `database` (every server sharing the store serves every recording). Unset: `files`.', { shownDefault: '`files`' }),
  setting('PARLEY_SECRET_KEY', 'storage', 'secretKey', text(undefined, '64 hex characters or base64 of 32 bytes'), 'Master key of the secrets vault. Unset: a key file `<data dir>/secret.key` is generated once (mode 0600).', { essential: true }),
  setting('PARLEY_REDIS_URL', 'storage', 'redisUrl', url(['redis', 'rediss'], 'redis://host:6379'), 'A Redis shared by several servers: outbound pace and digest-guess counts are kept there, and live call events travel through it (on PostgreSQL; without it LISTEN/NOTIFY carries them). Unset: counts kept in the process.'),

  // Keys, tokens and egress
  setting('PARLEY_BOOTSTRAP_KEY', 'access', 'bootstrapKey', text(undefined, 'an `sk_...` key'), 'An API key created at start-up if absent (for automation).', { essential: true }),
  setting('PARLEY_RATE_LIMIT_PER_MINUTE', 'access', 'rateLimitPerMinute', int(600, 1), 'Default requests per minute per key (a key may carry its own).'),
  setting('PARLEY_TOKEN_MINTS_PER_MINUTE', 'access', 'tokenMintsPerMinute', int(60, 1), 'Access tokens (`POST /waves/v1/auth/token`) one key may mint per minute (429 beyond).'),
  setting('PARLEY_REGION', 'access', 'region', custom('`local`', 'a short lower-case name such as `us-east`', (raw) => {
    const value = raw ?? 'local';
    if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(value)) throw new Error('PARLEY_REGION must be a short lower-case name such as us-east or ap-south-1');
    return value;
  }), 'The region this server mints access tokens for and accepts them in.'),
  setting('PARLEY_KEY_CACHE_MS', 'access', 'keyCacheMs', int(3000, 0), 'How long a resolved key is cached: a deleted key (and its access tokens) stops working within this.'),
  setting('PARLEY_SESSION_TTL_HOURS', 'access', 'sessionTtlSeconds', custom('`12`', 'hours, above 0 and at most 720 (fractions allowed)', (raw) => {
    if (raw === undefined || raw.trim() === '') return 12 * 3600;
    const hours = Number(raw);
    if (!Number.isFinite(hours) || hours <= 0 || hours > 720) throw new Error('PARLEY_SESSION_TTL_HOURS must be a number of hours above 0 and at most 720');
    return Math.max(1, Math.round(hours * 3600));
  }), 'Lifetime of a console sign-in, counted from sign-in and not renewed by use.'),
  setting('PARLEY_ALLOW_PRIVATE_EGRESS', 'access', 'allowPrivateEgress', bool(false), 'Lets outbound requests to user-given URLs (`POST /stt/` `url`, webhooks, tools) reach private, loopback and unspecified addresses; link-local and cloud metadata addresses are refused either way.'),

  // Realtime sessions. Sized from `npm run bench:agents` on a 2-core machine: 16 voice sessions keep up even when all
  // callers speak at the same moments (24 do not); 128 chat sessions answer within 2 ms (p95).
  setting('PARLEY_MAX_SPEECH_SESSIONS', 'sessions', 'sessionCaps.speech.server', int(16, 1), 'Concurrent sessions that run speech models (agent voice sessions and phone calls, live recognition, live synthesis, speech-to-speech), server-wide; beyond: 503 with `Retry-After` before the upgrade.', { essential: true }),
  setting('PARLEY_MAX_SPEECH_SESSIONS_PER_KEY', 'sessions', 'sessionCaps.speech.perOwner', int(6, 1), 'The same per key, and per organization for its agent calls (web, inbound, outbound: `orgLimit` in `GET /concurrency`; reservations of its agents are places within it); beyond: 429 with `Retry-After`.'),
  setting('PARLEY_MAX_CHAT_SESSIONS', 'sessions', 'sessionCaps.chat.server', int(128, 1), 'Concurrent text-only agent sessions (`mode=chat`), server-wide.'),
  setting('PARLEY_MAX_CHAT_SESSIONS_PER_KEY', 'sessions', 'sessionCaps.chat.perOwner', int(32, 1), 'Concurrent text-only agent sessions per key.'),
  setting('PARLEY_STT_IDLE_SECONDS', 'sessions', 'sttIdleSeconds', int(60, 1), 'A live recognition socket that gets no audio and no message for this long receives an `error` and is closed.'),

  // Speech models and inference
  setting('PARLEY_MODELS_DIR', 'models', 'modelsDir', directory(undefined), 'A directory of your own voices (`voices/<voice_id>/voice.onnx` + `voice.onnx.json`).'),
  setting('PARLEY_WARM_MODELS', 'models', 'warmModels', bool(true), 'Load every speech model at start; off: each loads at first use.'),
  setting('PARLEY_INFERENCE_CONCURRENCY', 'models', 'inferenceConcurrency', int(2, 1), 'Inference jobs that run at once (one recognition and one synthesis worker per slot); waiting jobs are served by priority, what a caller waits for first.', { essential: true }),
  setting('PARLEY_INFERENCE_QUEUE', 'models', 'inferenceQueue', int(16, 0), 'Jobs that may wait for a slot; beyond that 503 with `Retry-After`.'),
  setting('PARLEY_INFERENCE_NICE', 'models', 'inferenceNice', int(10, 0, 19), 'Nice value of the recognition and synthesis worker threads, so the event loop and RTP get a core first; `0` keeps the server\'s priority.'),
  setting('PARLEY_STT_MAX_BYTES', 'models', 'sttMaxBytes', int(64 * 1024 * 1024, 1024), 'Largest `POST /stt/` body, or audio fetched by `url`.'),
  setting('PARLEY_STT_MAX_SECONDS', 'models', 'sttMaxSeconds', int(600, 1), 'Longest audio one `POST /stt/` request recognises (400 beyond).'),
  setting('PARLEY_STT_BEAMS', 'models', 'sttBeams', int(STT_DEFAULTS.beams, 1), 'Whisper beam width for whole files (`POST /stt/`, `get_text`).'),
  setting('PARLEY_STT_LIVE_BEAMS', 'models', 'sttLiveBeams', int(STT_DEFAULTS.liveBeams, 1), 'Whisper beam width for live recognition and agent turns (1 = greedy).'),
  setting('PARLEY_STT_THREADS', 'models', 'sttThreads', int(STT_DEFAULTS.threads, 1), 'Threads inside each recognizer worker.'),
  setting('PARLEY_STT_SHORT_WINDOW', 'models', 'sttShortWindow', custom('`busy`', '`busy`, `1`/`true`/`yes`, `0`/`false`/`no`', (raw) => {
    const v = (raw ?? '').trim().toLowerCase();
    if (v === 'busy' || v === '') return 'busy' as const;
    if (OFF.includes(v)) return false;
    if (ON.includes(v)) return true;
    throw new Error('PARLEY_STT_SHORT_WINDOW must be true, false or busy');
  }), 'The shorter Whisper encoder window (about 1.6x cheaper) for greedy clips up to 5 s: `busy` only for a live recognition that other jobs wait behind; true always; false never.'),

  // Agents, language model and speech-to-speech
  setting('PARLEY_LLM_BASE_URL', 'agents', 'llm.baseUrl', custom('unset', 'an `http://` or `https://` URL (up to `/v1`)', (raw, name, env) => {
    const value = url(['http', 'https'], 'https://api.example.com/v1').parse(raw, name, env);
    return value?.replace(/\/+$/, '');
  }), 'The server\'s default language model, any OpenAI-compatible chat-completions endpoint: used by speech-to-speech and by single-prompt agents without a `model` block.', { essential: true }),
  setting('PARLEY_LLM_MODEL', 'agents', 'llm.model', text('gpt-4o-mini', 'a model name'), 'The model asked of `PARLEY_LLM_BASE_URL`.', { essential: true }),
  setting('PARLEY_LLM_API_KEY', 'agents', 'llm.apiKey', text(undefined, 'a key'), 'The bearer key for `PARLEY_LLM_BASE_URL`.', { essential: true }),
  setting('PARLEY_LLM_MODELS', 'agents', 'llmModels', custom('unset (none)', 'a JSON object `{"<name>": {"baseUrl": "https://host/v1", "model": "<id>", "apiKey": "<optional>"}}`', (raw, name, env) => {
    const file = valueOf(env, MODELS_FILE_SETTING);
    if (raw !== undefined && file !== undefined) throw new Error(`${name} and ${MODELS_FILE_SETTING} are both set: set one`);
    if (raw !== undefined) return parseLlmModels(raw, name);
    if (file === undefined) return [];
    let text: string;
    try {
      text = readFileSync(path.resolve(file), 'utf8');
    } catch (err) {
      throw new Error(`${MODELS_FILE_SETTING}: cannot read ${path.resolve(file)} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    return parseLlmModels(text, `${MODELS_FILE_SETTING} (${path.resolve(file)})`);
  }), 'Named OpenAI-compatible models: an agent whose `slmModel` is one of the names is answered by it (unless its own `model` block names an endpoint), and `POST /chat/completions` serves any of them by `model`. Keys are never logged nor returned. Checked at start (docs/agent-sessions.md, "Model choice").'),
  setting('PARLEY_LLM_MODELS_FILE', 'agents', 'llmModelsFile', custom('unset', 'a path to a JSON file (the same object as `PARLEY_LLM_MODELS`)', (raw) => (raw === undefined ? undefined : path.resolve(raw))), 'The named models read from a file instead (keeps the keys out of the environment); read once at start; not together with `PARLEY_LLM_MODELS`.'),
  setting('PARLEY_SCAN_BUDGET_MS', 'agents', 'scanBudgetMs', int(200, 0), 'A publish whose security scan finishes within this answers 200; otherwise 202 and the scan finishes in the background; `0` always defers.'),
  setting('PARLEY_SCAN_TIMEOUT_MS', 'agents', 'scanTimeoutMs', int(30_000, 100), 'A security scan running longer is abandoned as an error (retry it).'),
  setting('PARLEY_S2S_TOOL_TIMEOUT_MS', 'agents', 's2sToolTimeoutMs', int(15_000, 1), 'How long a speech-to-speech response waits for client tool outputs.'),

  // Webhooks
  setting('PARLEY_WEBHOOK_TIMEOUT_MS', 'webhooks', 'webhookTimeoutMs', int(30_000, 100), 'Time limit of each delivery attempt.'),
  setting('PARLEY_WEBHOOK_POLL_MS', 'webhooks', 'webhookPollMs', int(1000, 10), 'How often the outbox is read.'),
  setting('PARLEY_WEBHOOK_CONCURRENCY', 'webhooks', 'webhookConcurrency', int(8, 1), 'Deliveries in flight at once.'),

  // SIP and RTP
  setting('PARLEY_SIP_PORT', 'sip', 'sip.port', custom('`5060`', 'port 0-65535, or `off`', (raw, name) => {
    if (raw?.trim().toLowerCase() === 'off') return null;
    const n = raw === undefined ? 5060 : Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number (0 for any free one) or off`);
    return n;
  }), 'The SIP port, UDP and TCP; `0` picks a free one (logged in the `sip listening` line); `off` disables SIP.', { essential: true }),
  setting('PARLEY_SIP_HOST', 'sip', 'sip.host', custom('`0.0.0.0`', 'an IPv4 address', (raw, name) => {
    const host = raw ?? '0.0.0.0';
    if (!isIPv4(host)) throw new Error(`${name} must be an IPv4 address such as 0.0.0.0`);
    return host;
  }), 'The IPv4 address SIP and RTP bind to.'),
  setting('PARLEY_SIP_PUBLIC_ADDRESS', 'sip', 'sip.publicAddress', custom('the SIP host, or the first external IPv4', 'an IPv4 address or a host name', (raw, name, env) => {
    const value = raw ?? defaultPublicAddress(valueOf(env, 'PARLEY_SIP_HOST') ?? '0.0.0.0');
    if (!isIPv4(value) && !/^(?=.{1,253}$)[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/.test(value)) throw new Error(`${name} must be an IPv4 address or a host name`);
    return value;
  }), 'The address put in Via, Contact and SDP: set it to the public IP behind NAT.', { essential: true }),
  setting('PARLEY_RTP_PORTS', 'sip', 'sip.rtpPorts', custom(`\`${DEFAULT_RTP_PORTS}\``, '`min-max`, 1024-65535', (raw) => parsePortRange(raw ?? DEFAULT_RTP_PORTS)), 'The UDP range RTP ports are taken from (an even port a call).', { essential: true }),
  setting('PARLEY_RTP_TIMEOUT_SECS', 'sip', 'sip.rtpTimeoutSecs', int(60, 0), 'A phone call whose caller sends no RTP this long (while not holding the call) is hung up (`media_timeout`); `0` never.'),
  setting('PARLEY_MEDIA_PROFILE', 'sip', 'sip.mediaProfile', oneOf(MEDIA_PROFILES, 'balanced'), 'How the media worker thread that runs every call\'s RTP is scheduled and sends: `balanced` (a 0.1 ms EEVDF time slice on Linux 6.12+, two pinned sender threads, packets handed over 10 ms ahead), `light` (normal scheduling, the media thread sends each packet itself: a one-CPU container), `realtime` (as `balanced`, with SCHED_RR where the process may). The three settings below override one part each.', { essential: true }),
  setting('PARLEY_MEDIA_PRIORITY', 'sip', 'sip.mediaPriority', fromProfile(oneOf(MEDIA_PRIORITIES, undefined), 'priority'), 'Advanced, overrides the profile: the media thread\'s scheduling, `latency` (a 0.1 ms EEVDF time slice), `realtime` (SCHED_RR where the process may) or `normal`.'),
  setting('PARLEY_RTP_SENDERS', 'sip', 'sip.rtpSenders', fromProfile(int(DEFAULT_RTP_SENDERS, 0, 8, 'sender threads, one per CPU'), 'senders'), 'Advanced, overrides the profile: sender threads, each pinned to its own CPU, that send the calls\' RTP packets at their times; `0`: the media thread sends each packet itself.'),
  setting('PARLEY_RTP_SEND_LEAD_MS', 'sip', 'sip.rtpSendLeadMs', fromProfile(int(DEFAULT_SEND_LEAD_MS, 1, 40, 'milliseconds'), 'leadMs'), 'Advanced, overrides the profile: how far ahead of its time a packet is built and handed to the senders; the agent\'s audio starts that much later.'),
  setting('PARLEY_TELEPHONY_REWORK_DATE', 'sip', 'telephonyReworkDate', custom('the stored date', 'an ISO date such as `2026-07-01`', (raw) => parseReworkDate(raw)), 'Start of the 45-day window of the deprecated telephony API (stored the day the deployment first ran with telephony).'),

  // Platform carrier
  setting('PARLEY_CARRIER_NAME', 'carrier', 'carrier.name', text('carrier', 'a name'), 'Provider name shown on platform numbers (and the numbers CLI\'s default `--provider`).'),
  setting('PARLEY_CARRIER_ADDRESS', 'carrier', 'carrier.address', custom('unset', '`host` or `host:port` (an optional `sip:` prefix is stripped)', (raw, name) => {
    if (raw === undefined) return undefined;
    const parsed = parseCarrierAddress(raw);
    if (!parsed) throw new Error(`${name} must be host or host:port (an optional sip: prefix is stripped)`);
    return parsed.address;
  }), 'Where the platform dials out through; unset: no platform carrier.', { essential: true }),
  setting('PARLEY_CARRIER_TRANSPORT', 'carrier', 'carrier.transport', oneOf(TRANSPORTS, 'udp', `must be one of ${TRANSPORTS.join(', ')}`), 'Transport towards the carrier.'),
  setting('PARLEY_CARRIER_CPS', 'carrier', 'carrier.cps', int(1, 1, 50), 'Outbound calls per second towards the carrier.'),
  setting('PARLEY_CARRIER_ALLOWED_ADDRESSES', 'carrier', 'carrier.allowedAddresses', custom('unset (any)', 'IPs or CIDRs, comma separated', (raw, name) => {
    const errors: string[] = [];
    const list = (raw ?? '').split(',').map((a) => a.trim()).filter(Boolean);
    const allowed = validateAddressList(list, name, errors);
    if (!allowed) throw new Error(errors.join('; '));
    return allowed;
  }), 'Addresses the carrier sends calls from; empty: any.'),
  setting('PARLEY_CARRIER_USERNAME', 'carrier', 'carrier.username', text(undefined, 'a user name (with `PARLEY_CARRIER_PASSWORD`)'), 'Digest user name, both ways; set together with the password.'),
  setting('PARLEY_CARRIER_PASSWORD', 'carrier', 'carrier.password', text(undefined, 'a password (with `PARLEY_CARRIER_USERNAME`)'), 'Digest password, both ways; never logged.'),

  // Outbound calls and campaigns
  setting('PARLEY_OUTBOUND_QUEUE', 'outbound', 'outboundQueue', int(1000, 1), 'Outbound calls that may wait per carrier address; beyond it `POST /conversation/outbound` answers 429 with `Retry-After`.'),
  setting('PARLEY_OUTBOUND_RING_SECS', 'outbound', 'outboundRingSecs', int(60, 1), 'How long an outbound call rings before we CANCEL it (`no_answer`, `ringing_timeout`).'),
  setting('PARLEY_OUTBOUND_LEASE_SECS', 'outbound', 'outboundLeaseSecs', int(30, 2), 'A server\'s claim on the calls it places or has up, not renewed this long (its server stopped), is taken back by a live server.'),
  setting('PARLEY_CAMPAIGN_MINUTE_MS', 'outbound', 'campaignMinuteMs', int(60_000, 1), 'How long one minute of a campaign\'s `retryDelay` lasts (tests and dry runs shorten it).'),

  // Observability: OpenTelemetry's standard variables (docs/traces.md). The SDK is loaded only when an endpoint is set.
  setting('OTEL_EXPORTER_OTLP_ENDPOINT', 'observability', 'traces.endpoint', url(['http', 'https'], 'http://localhost:4318'), 'Switches traces on: spans go there over OTLP/HTTP (protobuf), at `<endpoint>/v1/traces`. Unset (and no traces endpoint): no spans are kept and the SDK is not loaded.'),
  setting('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'observability', 'traces.tracesEndpoint', url(['http', 'https'], 'http://localhost:4318/v1/traces'), 'The full URL spans are sent to (as given, nothing appended); wins over `OTEL_EXPORTER_OTLP_ENDPOINT` and also switches traces on.'),
  setting('OTEL_SERVICE_NAME', 'observability', 'traces.serviceName', text('parley', 'a name'), 'The `service.name` of every span.'),
  setting('OTEL_EXPORTER_OTLP_HEADERS', 'observability', 'traces.headers', custom('unset', '`key=value` pairs, comma separated (values URL-encoded)', (raw, name) => parseOtlpHeaders(raw, name)), 'Headers sent with every export (a collector\'s or vendor\'s key); never logged, never in a span.'),
];

/** OTEL_EXPORTER_OTLP_HEADERS as the OpenTelemetry SDK reads it: `k1=v1,k2=v2`, values URL-decoded. */
function parseOtlpHeaders(raw: string | undefined, name: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const entry of (raw ?? '').split(',')) {
    if (!entry.trim()) continue;
    // As W3C baggage, which the SDK parses it as: properties after `;` are dropped.
    const pair = entry.split(';')[0] as string;
    const at = pair.indexOf('=');
    let key = '';
    let value = '';
    try {
      key = at > 0 ? decodeURIComponent(pair.slice(0, at).trim()) : '';
      value = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      /* refused below */
    }
    // The value is not echoed: it is usually a credential.
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key) || !value) throw new Error(`${name} must be key=value pairs separated by commas (entry ${key ? `"${key}"` : 'without a name'} is not)`);
    headers[key] = value;
  }
  return headers;
}

/** Settings taken out of the product: set, they refuse start-up with what happens now. */
export const REMOVED: Readonly<Record<string, string>> = {
  PARLEY_INFERENCE_SCHEDULER:
    'waiting inference jobs are always served by priority (what a caller waits for first, then by age); the fifo and split schedulers were measured and not adopted',
  PARLEY_MEDIA_THREAD: 'every call\'s RTP runs on the media worker thread; running it on the main thread was measured and not adopted',
  PARLEY_S2S_MAX_SESSIONS:
    'speech-to-speech sessions count against PARLEY_MAX_SPEECH_SESSIONS and PARLEY_MAX_SPEECH_SESSIONS_PER_KEY (503 or 429 before the upgrade), which came first at the defaults',
};

/** PARLEY_* variables the tests and benches read for themselves; the server ignores them. */
export const HARNESS: Readonly<Record<string, string>> = {
  PARLEY_TEST_TIER: '`unit`: `vitest` runs the unit tier only (`npm run test:unit`).',
  PARLEY_TEST_DIALECTS: 'Store dialects the store-backed test suites run on (`sqlite,postgres`).',
  PARLEY_TEST_MEDIA_DIALECTS: 'Store dialects the realtime test suites run on (the first of the above).',
  PARLEY_TEST_PG_URL: 'The PostgreSQL the tests use (`postgres://postgres@127.0.0.1:5432/test`).',
  PARLEY_SERVER_NODE_FLAGS: 'Extra node flags for every server a test or bench starts (e.g. `--cpu-prof`).',
};

const KNOWN = new Map(SETTINGS.map((s) => [s.name, s]));
if (KNOWN.size !== SETTINGS.length) throw new Error('a setting is declared twice');

/** Levenshtein distance. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min((prev[j] as number) + 1, (cur[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length] as number;
}

/** The declared setting nearest to `name`. */
export function nearestSetting(name: string): string {
  let best = '';
  let bestDistance = Infinity;
  for (const known of KNOWN.keys()) {
    const d = editDistance(name, known);
    if (d < bestDistance) {
      best = known;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * Reads every setting from `env`: the values by Settings field, and every problem found (an unknown PARLEY_* name,
 * a removed setting that is set, a bad value), each naming its variable.
 */
export function readSettings(env: Env): { values: Map<SettingsPath, unknown>; errors: string[] } {
  const errors: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('PARLEY_') || KNOWN.has(name) || Object.hasOwn(HARNESS, name)) continue;
    if (Object.hasOwn(REMOVED, name)) {
      if (valueOf(env, name) !== undefined) errors.push(`${name} was removed: ${REMOVED[name]}. Unset it.`);
      continue;
    }
    errors.push(`${name} is not a setting; did you mean ${nearestSetting(name)}? (docs/settings.md lists them all)`);
  }
  const values = new Map<SettingsPath, unknown>();
  for (const s of SETTINGS) {
    try {
      values.set(s.field, s.read(env));
    } catch (err) {
      errors.push(err instanceof Error ? err.message : String(err));
    }
  }
  return { values, errors };
}
