// Table types of the store (one schema for SQLite and PostgreSQL; JSON kept as text, times as ISO text).
import type { Generated } from 'kysely';

export interface OrganizationsTable {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  org_id: string;
  name: string;
  key_hash: string;
  prefix: string;
  rate_limit_per_min: number | null;
  request_count: Generated<number>;
  last_used_at: string | null;
  created_at: string;
}

export interface AgentsTable {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  workflow_type: string;
  /** JSON: section -> block id; the unversioned configuration (before the first commit). */
  base_blocks: string;
  /** JSON: metadata fields (avatarUrl, allowInboundCall, visibleToEveryone). */
  meta: string;
  default_branch_id: string;
  live_branch_id: string;
  versioned: number;
  /** JSON {reason, setBy, setAt} while a configuration freeze is active. */
  freeze: string | null;
  archived: number;
  archived_at: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface BlocksTable {
  id: string;
  agent_id: string;
  section: string;
  content: string;
  /** 'passed' once this exact content passed the security scan. */
  scan_status: string | null;
  created_at: string;
}

export interface BranchesTable {
  id: string;
  agent_id: string;
  name: string;
  is_default: number;
  source_branch_id: string | null;
  source_revision_id: string | null;
  head_revision_id: string | null;
  open_draft_id: string | null;
  status: string;
  revision_counter: number;
  draft_counter: number;
  lock_token: string | null;
  lock_expires_at: string | null;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export interface RevisionsTable {
  id: string;
  agent_id: string;
  branch_id: string | null;
  status: string;
  revision_number: number | null;
  version_number: number | null;
  label: string | null;
  description: string | null;
  is_pinned: number;
  published_by: string | null;
  published_at: string | null;
  restored_from_label: string | null;
  restored_from_revision_id: string | null;
  draft_id: string | null;
  draft_name: string | null;
  draft_revision: number | null;
  /** draft_counter of the branch when this draft opened (the state before its first edit). */
  draft_base_revision: number | null;
  source_version_id: string | null;
  source_draft_id: string | null;
  blocks: string;
  workflow_type: string;
  parent_version: string | null;
  activated_by: string | null;
  activated_at: string | null;
  security_check: string | null;
  pending_publish: string | null;
  prompt_score: string | null;
  prompt_score_hash: string | null;
  /** When it entered the branch history (publish, deferred publish or restore); orders the revision list. */
  listed_at: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface DraftEditsTable {
  id: string;
  draft_id: string;
  draft_revision: number;
  /** JSON: [{path, value}] leaf writes of this edit. */
  changes: string;
  changed_sections: string;
  editor: string;
  created_at: string;
  /** JSON BlockRefs of the draft after this edit; null on edits made before 0008. */
  blocks: string | null;
  /** The draft's workflow type after this edit; null on edits made before 0008. */
  workflow_type: string | null;
}

/** Secrets the server generates for itself (for example the access-token signing key). */
export interface ServerSecretsTable {
  name: string;
  value: string;
  created_at: string;
}

/** One conversation (agent WebSocket session, later telephony legs). JSON columns as text. */
export interface CallsTable {
  id: string;
  /** Object keys of the recordings (mono mix, dual channel); null until written. */
  recording_mono: Generated<string | null>;
  recording_dual: Generated<string | null>;
  /** `CALL-<epoch ms>-<6 hex>`: the id conversation routes take. */
  call_id: string;
  org_id: string;
  agent_id: string;
  branch_id: string | null;
  revision_id: string | null;
  /** 'live' | 'draft' | 'revision'. */
  config_source: string;
  /** 'webcall' | 'telephony_inbound' | 'telephony_outbound'. */
  type: string;
  /** 'webcall' | 'chat'. */
  mode: string;
  is_test: number;
  status: string;
  from_number: string | null;
  to_number: string | null;
  started_at: string;
  ended_at: string | null;
  duration_s: number | null;
  end_reason: string | null;
  /** Voicemail detection's verdict on an outbound call (human, voicemail, ivr, silence); null when it did not run. */
  answered_by: string | null;
  /** JSON: [{role, content, timestamp, interrupted?}]. */
  transcript: string;
  variables: string;
  /** JSON: {turns: [...per-turn latency metrics]}. */
  metrics: string | null;
  voice_config: string;
  slm_model: string | null;
  created_at: string;
  updated_at: string;
}

/** A running call's transcript entries (`seq` from 0), upserted as turns happen; removed when the call ends. */
export interface CallTurnsTable {
  call_id: string;
  seq: number;
  role: string;
  content: string;
  /** ISO time of the entry. */
  at: string;
  interrupted: number;
}

/** Single-use `wct_` agent WebSocket tokens, stored only as SHA-256 hashes. */
export interface CallTokensTable {
  token_hash: string;
  org_id: string;
  agent_id: string;
  mode: string;
  variables: string;
  config_source: string;
  branch_id: string | null;
  /** The revisions row the session runs (a draft's id for a draft test call); null for the live config. */
  revision_id: string | null;
  /** The call id announced at mint time (test calls); null: a new one when the session opens. */
  call_id: Generated<string | null>;
  sample_rate: number;
  expires_at: string;
  used_at: string | null;
  created_at: string;
}

/** Organization secrets vault: AES-256-GCM ciphertext, IV and auth tag, each base64. */
export interface SecretsTable {
  id: string;
  org_id: string;
  name: string;
  ciphertext: string;
  iv: string;
  tag: string;
  created_at: string;
  updated_at: string;
}

/** Organization tool library (`toolId` is what agents reference in `toolRefs`). */
export interface ToolsTable {
  id: string;
  /** `tool_` + 24 lowercase alphanumerics. */
  tool_id: string;
  org_id: string;
  name: string;
  type: string;
  /** JSON: the validated definition (auth carries secret names, never values). */
  definition: string;
  created_at: string;
  updated_at: string;
}

/** Webhook endpoints of an organization; `secret` is the signing secret sealed with the vault's master key. */
export interface WebhooksTable {
  id: string;
  org_id: string;
  url: string;
  description: string;
  /** JSON: custom headers {name: value} sent with every delivery. */
  headers: string;
  secret: string;
  /** 'enabled' | 'disabled'. */
  status: string;
  created_by: string;
  created_at: string;
  updated_at: string;
}

/** Which agent sends which event type to which webhook. */
export interface WebhookSubscriptionsTable {
  id: string;
  webhook_id: string;
  agent_id: string;
  event_type: string;
  created_at: string;
  updated_at: string;
}

/** One webhook delivery (the outbox row and its log): `body` holds the exact bytes sent and signed. */
export interface WebhookOutboxTable {
  /** Orders deliveries; bigint on PostgreSQL (returned as a string there), so only compared in SQL. */
  seq: Generated<number>;
  /** The delivery id (24-hex), also the envelope's `id`. */
  id: string;
  org_id: string;
  webhook_id: string;
  agent_id: string;
  call_id: string;
  event_type: string;
  url: string;
  /** JSON: the webhook's custom headers when the event was queued. */
  headers: string;
  body: string;
  /** 'PENDING' | 'SENDING' | 'DELIVERED' | 'FAILED'. */
  status: string;
  response_code: number | null;
  latency_ms: number | null;
  error: string | null;
  created_at: string;
  /** When the attempt started (the row was claimed). */
  sent_at: string | null;
}

/** The operator's platform numbers; `org_id` is the organization that rented it (null: available). */
export interface PlatformNumbersTable {
  /** The `Product._id` of the number. */
  id: string;
  /** E.164. */
  phone_number: string;
  provider: string;
  country_code: string;
  area_code: string | null;
  org_id: string | null;
  rented_at: string | null;
  created_at: string;
  updated_at: string;
}

/** SIP trunks; direction-specific columns are null on the other direction. JSON columns as text. */
export interface SipTrunksTable {
  id: string;
  org_id: string;
  /** 'inbound' | 'outbound'. */
  direction: string;
  name: string;
  /** Outbound: the carrier address as given (`host` or `host:port`). */
  address: string | null;
  /** Outbound: `transport:host:port` normalised (lower-case host, default port); unique across the platform. */
  address_key: string | null;
  transport: string | null;
  /** JSON string[] (inbound). */
  allowed_addresses: string;
  /** JSON string[] (inbound). */
  allowed_numbers: string;
  auth_username: string | null;
  /** Sealed with the vault's master key (TrunkSecrets); never returned. */
  auth_password: string | null;
  media_encryption: string;
  noise_suppression: number;
  ringing_timeout_secs: number | null;
  max_call_duration_secs: number | null;
  cps_limit: number | null;
  /** JSON {name: value}. */
  headers: string;
  created_at: string;
  updated_at: string;
}

/** A trunk's numbers in order; an inbound row's id is the number's custom product id. */
export interface SipTrunkNumbersTable {
  id: string;
  trunk_id: string;
  org_id: string;
  direction: string;
  phone_number: string;
  /** `in:<number>` (unique across the platform) or `out:<org>:<number>` (unique within an organization). */
  unique_key: string;
  position: number;
  created_at: string;
}

/** Which agent answers a source ('phoneNumber': a platform or trunk number's product id; 'sipTrunk': an inbound trunk). */
export interface AnswerSourcesTable {
  source_id: string;
  source_kind: string;
  org_id: string;
  agent_id: string;
  created_at: string;
}

/** Deprecated caller-ids bridge: an agent's default caller IDs, the lowest position first. */
export interface CallerIdsTable {
  id: string;
  org_id: string;
  agent_id: string;
  phone_number: string;
  platform_number_id: string | null;
  trunk_id: string | null;
  position: number;
  created_at: string;
}

/** The number an agent's transfers dial from (a platform number it holds or an outbound trunk number). */
export interface TransferSourcesTable {
  agent_id: string;
  org_id: string;
  phone_number: string;
  platform_number_id: string | null;
  trunk_id: string | null;
  updated_at: string;
}

/** Outbound calls for the dialer (migration 0012); the call's record is the `calls` row with the same call_id. */
export interface OutboundCallsTable {
  call_id: string;
  org_id: string;
  agent_id: string;
  to_number: string;
  from_number: string;
  /** The outbound trunk dialed through; null: the platform carrier. */
  trunk_id: string | null;
  /** The carrier address the call is paced on (`transport:host:port`). */
  pace_key: string;
  /** A revision to run (`versionId`); null: the agent's live configuration. */
  revision_id: string | null;
  /** JSON object of the request's variables. */
  variables: string;
  is_test: number;
  /** 'queued' | 'claimed' | 'slotted' | 'dialing' | 'done'. */
  state: string;
  queue_order: string;
  claimed_by: string | null;
  claimed_at: string | null;
  cancel_requested: number;
  retry_of: string | null;
  /** The campaign that placed it (migration 0014); null for a call placed by the API. */
  campaign_id: Generated<string | null>;
  created_at: string;
  updated_at: string;
}

/** A campaign audience (migration 0013): the recipients of one CSV upload and those added since. */
export interface AudiencesTable {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  /** The CSV column the numbers came from. */
  phone_number_column: string;
  /** The CSV column naming each member uniquely; null when the audience has none. */
  identifier_column: string | null;
  /** The API key name that uploaded it. */
  created_by: string;
  created_at: string;
  updated_at: string;
  /** Set while its CSV upload is still being written (the time of the latest batch; migration 0019): invisible until null. */
  pending_since: Generated<string | null>;
}

/** One recipient of an audience: an E.164 number (unique in the audience), an optional identifier and call variables. */
export interface AudienceMembersTable {
  id: string;
  audience_id: string;
  phone_number: string;
  identifier: string | null;
  /** JSON object of call variables. */
  variables: string;
  /** Lower-cased number, identifier and variable values joined by U+001F (never in a query), for search. */
  search_text: string;
  /** File order (members added later go after). */
  position: number;
  created_at: string;
}

/** A campaign (migration 0014). */
export interface CampaignsTable {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  agent_id: string;
  audience_id: string;
  /** JSON array of the E.164 numbers it calls from, frozen at creation. */
  from_numbers: string;
  scheduled_at: string | null;
  max_retries: number;
  /** Minutes between a recipient's attempts. */
  retry_delay_min: number;
  /** 'draft' | 'scheduled' | 'processing' | 'running' | 'paused' | 'completed' | 'failed'. */
  status: string;
  error: string | null;
  created_by: string;
  paused_at: string | null;
  failed_at: string | null;
  completed_at: string | null;
  created_at: string;
  updated_at: string;
}

/** One recipient of a campaign, frozen at creation from its audience. */
export interface CampaignRecipientsTable {
  id: string;
  campaign_id: string;
  position: number;
  member_id: string | null;
  phone_number: string;
  /** The number this recipient is called from (every attempt). */
  from_number: string;
  /** JSON object of call variables. */
  variables: string;
  /** 'pending' | 'calling' | 'waiting' | 'done'. */
  state: string;
  attempts: number;
  /** When a waiting recipient's retry is due. */
  next_at: string | null;
  last_call_id: string | null;
  /** The last attempt's outcome: 'completed' | 'busy' | 'no_answer' | 'failed' | 'canceled' | 'dnc' (on the do-not-call list: skipped, or its queued call taken back). */
  outcome: string | null;
  connected: Generated<number>;
  updated_at: string;
}

/** What happened to a campaign, and who made it happen (`user`, `scheduler`, `system`). */
export interface CampaignEventsTable {
  id: string;
  campaign_id: string;
  trigger_source: string;
  event_action: string;
  detail: string | null;
  created_at: string;
}

/** A console sign-in (migration 0015): the cookie is stored only as its SHA-256; the row acts as `key_id`. */
export interface BrowserSessionsTable {
  token_hash: string;
  key_id: string;
  org_id: string;
  /** Sent back in `X-CSRF-Token` on state-changing requests; readable by the signed-in page only. */
  csrf_token: string;
  created_at: string;
  /** Absolute expiry (ISO); sign-in time plus PARLEY_SESSION_TTL_HOURS. */
  expires_at: string;
}

/** A recording kept in the store (migration 0016, PARLEY_RECORDING_STORE=database): the whole WAV file. */
export interface RecordingObjectsTable {
  /** `<orgId>/<callId>/<channel>.wav`, as in `calls.recording_mono` / `recording_dual`. */
  key: string;
  bytes: Buffer;
  size: number;
  created_at: string;
}

/**
 * A do-not-call entry (migration 0017): a number the organization must not call, for the whole organization
 * (`agent_id` null) or for one agent's calls. `scope` is `org` or the agent id, so one number is listed once per
 * scope (a unique key; NULLs would not collide in one).
 */
export interface DncEntriesTable {
  id: string;
  org_id: string;
  /** E.164, normalized. */
  phone_number: string;
  agent_id: string | null;
  scope: string;
  reason: string | null;
  /** 'manual' (added through the API); 'call_outcome' is kept for entries a call adds. */
  source: string;
  created_by: string;
  created_at: string;
}

/**
 * A call that is up on some server (migration 0020): its holder renews `renewed_at` while it runs; a row not renewed
 * for the lease belongs to a server that stopped, and whoever is alive ends the call (calls/live-calls.ts).
 */
export interface LiveCallsTable {
  call_id: string;
  org_id: string;
  /** The server holding the call (its process name). */
  owner: string;
  renewed_at: string;
  /** A phone call's SIP dialog (JSON, telephony/sip/dialog.ts DialogSnapshot): where the BYE goes when it is ended for a stopped server; null for web and chat calls. */
  sip_dialog: string | null;
  created_at: string;
}

/** A pronunciation dictionary of an organization (control-plane/pronunciation/dicts.ts). */
export interface PronunciationDictsTable {
  id: string;
  org_id: string;
  /** JSON: `[{word, pronunciation}]`. */
  items: string;
  created_at: string;
  updated_at: string;
}

export interface Database {
  organizations: OrganizationsTable;
  api_keys: ApiKeysTable;
  agents: AgentsTable;
  blocks: BlocksTable;
  branches: BranchesTable;
  revisions: RevisionsTable;
  draft_edits: DraftEditsTable;
  server_secrets: ServerSecretsTable;
  calls: CallsTable;
  call_turns: CallTurnsTable;
  call_tokens: CallTokensTable;
  secrets: SecretsTable;
  webhooks: WebhooksTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_outbox: WebhookOutboxTable;
  tools: ToolsTable;
  platform_numbers: PlatformNumbersTable;
  sip_trunks: SipTrunksTable;
  sip_trunk_numbers: SipTrunkNumbersTable;
  answer_sources: AnswerSourcesTable;
  caller_ids: CallerIdsTable;
  transfer_sources: TransferSourcesTable;
  outbound_calls: OutboundCallsTable;
  audiences: AudiencesTable;
  audience_members: AudienceMembersTable;
  campaigns: CampaignsTable;
  campaign_recipients: CampaignRecipientsTable;
  campaign_events: CampaignEventsTable;
  browser_sessions: BrowserSessionsTable;
  recording_objects: RecordingObjectsTable;
  dnc_entries: DncEntriesTable;
  live_calls: LiveCallsTable;
  pronunciation_dicts: PronunciationDictsTable;
}
