// Schema migrations, written once with Kysely's schema builder so they run on SQLite and PostgreSQL alike.
import { pronunciationDictsMigration } from '../pronunciation/migration.js';
import { PostgresAdapter, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { knowledgeBaseMigration } from '../knowledge/migration.js';
import { organizationSurfacesMigration } from '../organization/migration.js';
import { analyticsMigration } from '../analytics/migration.js';

const migrations: Record<string, Migration> = {
  '0001_foundation': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('organizations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('rate_limit_per_min', 'integer')
        .addColumn('request_count', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('last_used_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('agents')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('workflow_type', 'text', (c) => c.notNull())
        .addColumn('base_blocks', 'text', (c) => c.notNull())
        .addColumn('meta', 'text', (c) => c.notNull())
        .addColumn('default_branch_id', 'text', (c) => c.notNull())
        .addColumn('live_branch_id', 'text', (c) => c.notNull())
        .addColumn('versioned', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('freeze', 'text')
        .addColumn('archived', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('archived_at', 'text')
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('agents_org').on('agents').columns(['org_id', 'created_at']).execute();
      await db.schema
        .createTable('blocks')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
        .addColumn('section', 'text', (c) => c.notNull())
        .addColumn('content', 'text', (c) => c.notNull())
        .addColumn('scan_status', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('branches')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('is_default', 'integer', (c) => c.notNull())
        .addColumn('source_branch_id', 'text')
        .addColumn('source_revision_id', 'text')
        .addColumn('head_revision_id', 'text')
        .addColumn('open_draft_id', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('revision_counter', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('draft_counter', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lock_token', 'text')
        .addColumn('lock_expires_at', 'text')
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('updated_by', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      // Branch names are unique per agent regardless of case.
      await sql`CREATE UNIQUE INDEX branches_agent_name ON branches (agent_id, lower(name))`.execute(db);
      await db.schema
        .createTable('revisions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
        .addColumn('branch_id', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('revision_number', 'integer')
        .addColumn('version_number', 'integer')
        .addColumn('label', 'text')
        .addColumn('description', 'text')
        .addColumn('is_pinned', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('published_by', 'text')
        .addColumn('published_at', 'text')
        .addColumn('restored_from_label', 'text')
        .addColumn('restored_from_revision_id', 'text')
        .addColumn('draft_id', 'text')
        .addColumn('draft_name', 'text')
        .addColumn('draft_revision', 'integer')
        .addColumn('draft_base_revision', 'integer')
        .addColumn('source_version_id', 'text')
        .addColumn('source_draft_id', 'text')
        .addColumn('blocks', 'text', (c) => c.notNull())
        .addColumn('workflow_type', 'text', (c) => c.notNull())
        .addColumn('parent_version', 'text')
        .addColumn('activated_by', 'text')
        .addColumn('activated_at', 'text')
        .addColumn('security_check', 'text')
        .addColumn('pending_publish', 'text')
        .addColumn('prompt_score', 'text')
        .addColumn('prompt_score_hash', 'text')
        .addColumn('listed_at', 'text')
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('revisions_branch_number', ['branch_id', 'revision_number'])
        .execute();
      await db.schema.createIndex('revisions_branch_listed').on('revisions').columns(['branch_id', 'listed_at']).execute();
      await db.schema
        .createTable('draft_edits')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('draft_id', 'text', (c) => c.notNull().references('revisions.id').onDelete('cascade'))
        .addColumn('draft_revision', 'integer', (c) => c.notNull())
        .addColumn('changes', 'text', (c) => c.notNull())
        .addColumn('changed_sections', 'text', (c) => c.notNull())
        .addColumn('editor', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('draft_edits_rev', ['draft_id', 'draft_revision'])
        .execute();
    },
  },
  '0002_server_secrets': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('server_secrets')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0003_calls': {
    async up(db: Kysely<any>) {
      // No foreign key to agents: a call record outlives the agent it ran (deleting an agent keeps its history).
      await db.schema
        .createTable('calls')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('call_id', 'text', (c) => c.notNull().unique())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('branch_id', 'text')
        .addColumn('revision_id', 'text')
        .addColumn('config_source', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('mode', 'text', (c) => c.notNull())
        .addColumn('is_test', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('from_number', 'text')
        .addColumn('to_number', 'text')
        .addColumn('started_at', 'text', (c) => c.notNull())
        .addColumn('ended_at', 'text')
        .addColumn('duration_s', 'real')
        .addColumn('end_reason', 'text')
        .addColumn('transcript', 'text', (c) => c.notNull())
        .addColumn('variables', 'text', (c) => c.notNull())
        .addColumn('metrics', 'text')
        .addColumn('voice_config', 'text', (c) => c.notNull())
        .addColumn('slm_model', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('calls_org_agent_created').on('calls').columns(['org_id', 'agent_id', 'created_at']).execute();
      await db.schema.createIndex('calls_org_created').on('calls').columns(['org_id', 'created_at']).execute();
      await db.schema
        .createTable('call_tokens')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('mode', 'text', (c) => c.notNull())
        .addColumn('variables', 'text', (c) => c.notNull())
        .addColumn('config_source', 'text', (c) => c.notNull())
        .addColumn('branch_id', 'text')
        .addColumn('revision_id', 'text')
        .addColumn('sample_rate', 'integer', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('used_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('call_tokens_expires').on('call_tokens').column('expires_at').execute();
      await db.schema
        .createTable('secrets')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('ciphertext', 'text', (c) => c.notNull())
        .addColumn('iv', 'text', (c) => c.notNull())
        .addColumn('tag', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('secrets_org_name', ['org_id', 'name'])
        .execute();
    },
  },
  '0006_call_recordings': {
    async up(db: Kysely<any>) {
      // Object keys of the call's recordings (mono mix and dual channel), once written.
      await db.schema.alterTable('calls').addColumn('recording_mono', 'text').execute();
      await db.schema.alterTable('calls').addColumn('recording_dual', 'text').execute();
    },
  },
  '0004_tools': {
    async up(db: Kysely<any>) {
      // Organization tool library; `definition` is the validated JSON (auth holds secret names only).
      await db.schema
        .createTable('tools')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('tool_id', 'text', (c) => c.notNull().unique())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('definition', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('tools_org_name', ['org_id', 'name'])
        .execute();
      await db.schema.createIndex('tools_org_created').on('tools').columns(['org_id', 'created_at']).execute();
    },
  },
  '0005_webhooks': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhooks')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('headers', 'text', (c) => c.notNull())
        // The signing secret, sealed with the vault's master key (AES-256-GCM, bound to the webhook id).
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('webhooks_org_url', ['org_id', 'url'])
        .execute();
      await db.schema
        .createTable('webhook_subscriptions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        // No cascade: a webhook cannot be deleted while subscribed (the store enforces the rule too).
        .addColumn('webhook_id', 'text', (c) => c.notNull().references('webhooks.id'))
        // Deleting an agent drops its subscriptions.
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('webhook_subscriptions_unique', ['webhook_id', 'agent_id', 'event_type'])
        .execute();
      await db.schema.createIndex('webhook_subscriptions_agent').on('webhook_subscriptions').columns(['agent_id', 'event_type']).execute();
      // `seq` orders deliveries (a call's events go out in seq order); the delivery id is `id`.
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      await db.schema
        .createTable('webhook_outbox')
        .addColumn('seq', postgres ? 'bigint' : 'integer', (c) => (postgres ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey().autoIncrement()))
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('webhook_id', 'text', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('call_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('headers', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('response_code', 'integer')
        .addColumn('latency_ms', 'integer')
        .addColumn('error', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('sent_at', 'text')
        .execute();
      await db.schema.createIndex('webhook_outbox_status').on('webhook_outbox').columns(['status', 'seq']).execute();
      await db.schema.createIndex('webhook_outbox_call').on('webhook_outbox').columns(['webhook_id', 'call_id', 'seq']).execute();
      await db.schema.createIndex('webhook_outbox_webhook').on('webhook_outbox').columns(['webhook_id', 'seq']).execute();
    },
  },
  '0007_call_token_call_id': {
    async up(db: Kysely<any>) {
      // The call id a test call announced when it minted the token; the session's call record takes it.
      await db.schema.alterTable('call_tokens').addColumn('call_id', 'text').execute();
    },
  },
  '0008_draft_edit_snapshots': {
    async up(db: Kysely<any>) {
      // What the draft was after each edit (block references and workflow type): the editHistory's Revision snapshots.
      await db.schema.alterTable('draft_edits').addColumn('blocks', 'text').execute();
      await db.schema.alterTable('draft_edits').addColumn('workflow_type', 'text').execute();
    },
  },
  '0009_call_turns': {
    async up(db: Kysely<any>) {
      // A running call's transcript, a row per entry, written as turns happen (the call record gets the whole
      // transcript once, when the call ends, and these rows go).
      await db.schema
        .createTable('call_turns')
        .addColumn('call_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('content', 'text', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('interrupted', 'integer', (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('call_turns_pk', ['call_id', 'seq'])
        .execute();
    },
  },
  '0010_widget_config_to_meta': {
    async up(db: Kysely<any>) {
      // Widget settings became agent metadata (not versioned): move what an agent's served configuration still
      // carries in its `widget` block into `meta.widgetConfig`, so no agent loses its widget.
      const agents = await db.selectFrom('agents').select(['id', 'meta', 'base_blocks', 'live_branch_id']).execute();
      for (const agent of agents) {
        const meta = JSON.parse(agent.meta) as Record<string, unknown>;
        if (meta.widgetConfig !== undefined) continue;
        const branch = await db.selectFrom('branches').select('head_revision_id').where('id', '=', agent.live_branch_id).executeTakeFirst();
        const head = branch?.head_revision_id
          ? await db.selectFrom('revisions').select('blocks').where('id', '=', branch.head_revision_id).executeTakeFirst()
          : undefined;
        const refs = JSON.parse(head?.blocks ?? agent.base_blocks) as Record<string, string>;
        if (!refs.widget) continue;
        const block = await db.selectFrom('blocks').select('content').where('id', '=', refs.widget).executeTakeFirst();
        const widget = block ? (JSON.parse(block.content) as Record<string, unknown>).widgetConfig : undefined;
        if (!widget || typeof widget !== 'object' || Array.isArray(widget)) continue;
        await db.updateTable('agents').set({ meta: JSON.stringify({ ...meta, widgetConfig: widget }) }).where('id', '=', agent.id).execute();
      }
    },
  },
  '0011_telephony': {
    async up(db: Kysely<any>) {
      // The operator's platform numbers: an organization holds one once it rents it (org_id), none before.
      await db.schema
        .createTable('platform_numbers')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('phone_number', 'text', (c) => c.notNull().unique())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('country_code', 'text', (c) => c.notNull())
        .addColumn('area_code', 'text')
        .addColumn('org_id', 'text', (c) => c.references('organizations.id').onDelete('set null'))
        .addColumn('rented_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('platform_numbers_org').on('platform_numbers').columns(['org_id', 'phone_number']).execute();
      // SIP trunks of an organization; `address_key` (outbound only) is the normalised carrier address, one trunk each.
      await db.schema
        .createTable('sip_trunks')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('direction', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('address', 'text')
        .addColumn('address_key', 'text', (c) => c.unique())
        .addColumn('transport', 'text')
        .addColumn('allowed_addresses', 'text', (c) => c.notNull())
        .addColumn('allowed_numbers', 'text', (c) => c.notNull())
        .addColumn('auth_username', 'text')
        .addColumn('auth_password', 'text')
        .addColumn('media_encryption', 'text', (c) => c.notNull())
        .addColumn('noise_suppression', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('ringing_timeout_secs', 'integer')
        .addColumn('max_call_duration_secs', 'integer')
        .addColumn('cps_limit', 'integer')
        .addColumn('headers', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sip_trunks_org').on('sip_trunks').columns(['org_id', 'direction', 'created_at']).execute();
      // A trunk's numbers, a row each (an inbound row's id is its custom product id). `unique_key` holds the
      // uniqueness rule: `in:<number>` across the platform, `out:<org>:<number>` within an organization.
      await db.schema
        .createTable('sip_trunk_numbers')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('trunk_id', 'text', (c) => c.notNull().references('sip_trunks.id').onDelete('cascade'))
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('direction', 'text', (c) => c.notNull())
        .addColumn('phone_number', 'text', (c) => c.notNull())
        .addColumn('unique_key', 'text', (c) => c.notNull().unique())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sip_trunk_numbers_trunk').on('sip_trunk_numbers').columns(['trunk_id', 'position']).execute();
      await db.schema.createIndex('sip_trunk_numbers_org').on('sip_trunk_numbers').columns(['org_id', 'direction', 'phone_number']).execute();
      // Who answers what: a source (platform number, trunk number or inbound trunk) is answered by one agent.
      await db.schema
        .createTable('answer_sources')
        .addColumn('source_id', 'text', (c) => c.primaryKey())
        .addColumn('source_kind', 'text', (c) => c.notNull())
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('answer_sources_agent').on('answer_sources').columns(['agent_id', 'created_at']).execute();
      // The deprecated caller-ids bridge (an agent's default caller IDs, first attached first) and transfer sources.
      await db.schema
        .createTable('caller_ids')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
        .addColumn('phone_number', 'text', (c) => c.notNull())
        .addColumn('platform_number_id', 'text')
        .addColumn('trunk_id', 'text')
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('caller_ids_agent_number', ['agent_id', 'phone_number'])
        .execute();
      await db.schema
        .createTable('transfer_sources')
        .addColumn('agent_id', 'text', (c) => c.primaryKey().references('agents.id').onDelete('cascade'))
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('phone_number', 'text', (c) => c.notNull())
        .addColumn('platform_number_id', 'text')
        .addColumn('trunk_id', 'text')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      // The telephony rework's release date for this deployment (the day it first ran with telephony): the
      // deprecated telephony API works for 45 days after it (PARLEY_TELEPHONY_REWORK_DATE overrides it).
      const now = new Date().toISOString();
      await db.insertInto('server_secrets').values({ name: 'telephony_rework_date', value: now, created_at: now }).execute();
    },
  },
  '0012_outbound_calls': {
    async up(db: Kysely<any>) {
      // Outbound calls waiting for, or placed by, the dialer: one row per call (its record is in `calls`, same call_id).
      // `state`: queued -> claimed (a dialer took it) -> slotted (to be sent at its pace slot) -> dialing (sent) -> done.
      // `queue_order` is FIFO per carrier address (`pace_key`, a trunk's address_key); `claimed_by`/`claimed_at` a lease,
      // so a claim left by a dead server goes back to the queue, while a call it may have dialed is never dialed again.
      await db.schema
        .createTable('outbound_calls')
        .addColumn('call_id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('to_number', 'text', (c) => c.notNull())
        .addColumn('from_number', 'text', (c) => c.notNull())
        .addColumn('trunk_id', 'text')
        .addColumn('pace_key', 'text', (c) => c.notNull())
        .addColumn('revision_id', 'text')
        .addColumn('variables', 'text', (c) => c.notNull())
        .addColumn('is_test', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('queue_order', 'text', (c) => c.notNull())
        .addColumn('claimed_by', 'text')
        .addColumn('claimed_at', 'text')
        .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('retry_of', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('outbound_calls_queue').on('outbound_calls').columns(['state', 'pace_key', 'queue_order']).execute();
      await db.schema.createIndex('outbound_calls_retry').on('outbound_calls').columns(['retry_of']).execute();
    },
  },
  '0013_audiences': {
    async up(db: Kysely<any>) {
      // Campaign audiences: the recipients of an uploaded CSV. Member counts are counted, not stored.
      await db.schema
        .createTable('audiences')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('phone_number_column', 'text', (c) => c.notNull())
        .addColumn('identifier_column', 'text')
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('audiences_org').on('audiences').columns(['org_id', 'created_at']).execute();
      // One row per recipient: a number once per audience, an identifier (when the audience has one) once too.
      // `position` keeps file order; `search_text` is the lower-cased number, identifier and variable values, joined by U+001F.
      await db.schema
        .createTable('audience_members')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('audience_id', 'text', (c) => c.notNull().references('audiences.id').onDelete('cascade'))
        .addColumn('phone_number', 'text', (c) => c.notNull())
        .addColumn('identifier', 'text')
        .addColumn('variables', 'text', (c) => c.notNull())
        .addColumn('search_text', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('audience_members_number', ['audience_id', 'phone_number'])
        .addUniqueConstraint('audience_members_identifier', ['audience_id', 'identifier'])
        .execute();
      await db.schema.createIndex('audience_members_order').on('audience_members').columns(['audience_id', 'position']).execute();
    },
  },
  '0014_campaigns': {
    async up(db: Kysely<any>) {
      // Campaigns (wire §5): an agent calling an audience's members from rotating numbers, with retries. The
      // recipients are frozen at creation (audience members then, each with the number it is called from).
      await db.schema
        .createTable('campaigns')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('audience_id', 'text', (c) => c.notNull())
        .addColumn('from_numbers', 'text', (c) => c.notNull())
        .addColumn('scheduled_at', 'text')
        .addColumn('max_retries', 'integer', (c) => c.notNull())
        .addColumn('retry_delay_min', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('paused_at', 'text')
        .addColumn('failed_at', 'text')
        .addColumn('completed_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('campaigns_org').on('campaigns').columns(['org_id', 'created_at']).execute();
      await db.schema.createIndex('campaigns_status').on('campaigns').columns(['status']).execute();
      // One row per recipient. `state`: pending -> calling (a call is queued or up: `last_call_id`) -> waiting (a retry
      // is due at `next_at`) -> ... -> done. Every move is a guarded update, so each attempt is queued once.
      await db.schema
        .createTable('campaign_recipients')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('campaign_id', 'text', (c) => c.notNull().references('campaigns.id').onDelete('cascade'))
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('member_id', 'text')
        .addColumn('phone_number', 'text', (c) => c.notNull())
        .addColumn('from_number', 'text', (c) => c.notNull())
        .addColumn('variables', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_at', 'text')
        .addColumn('last_call_id', 'text')
        .addColumn('outcome', 'text')
        .addColumn('connected', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('campaign_recipients_state').on('campaign_recipients').columns(['campaign_id', 'state', 'position']).execute();
      await db.schema
        .createTable('campaign_events')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('campaign_id', 'text', (c) => c.notNull().references('campaigns.id').onDelete('cascade'))
        .addColumn('trigger_source', 'text', (c) => c.notNull())
        .addColumn('event_action', 'text', (c) => c.notNull())
        .addColumn('detail', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('campaign_events_campaign').on('campaign_events').columns(['campaign_id', 'created_at']).execute();
      await db.schema.alterTable('outbound_calls').addColumn('campaign_id', 'text').execute();
      await db.schema.createIndex('outbound_calls_campaign').on('outbound_calls').columns(['campaign_id']).execute();
    },
  },
  '0015_browser_sessions': {
    async up(db: Kysely<any>) {
      // Console sign-ins: the cookie's SHA-256 (never the cookie), the key it acts as, and its CSRF token. Rows go
      // with their key (cascade), so deleting a key signs its browsers out on every server sharing the store.
      await db.schema
        .createTable('browser_sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('key_id', 'text', (c) => c.notNull().references('api_keys.id').onDelete('cascade'))
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('csrf_token', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('browser_sessions_key').on('browser_sessions').column('key_id').execute();
      await db.schema.createIndex('browser_sessions_expires').on('browser_sessions').column('expires_at').execute();
    },
  },
  '0016_recording_objects': {
    async up(db: Kysely<any>) {
      // Recordings kept in the store (PARLEY_RECORDING_STORE=database), so every server sharing it serves them.
      // One row a key (`<org>/<callId>/<channel>.wav`), written whole by one upsert.
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      await db.schema
        .createTable('recording_objects')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('bytes', postgres ? 'bytea' : 'blob', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      // PCM audio gains little from compression; uncompressed out-of-line storage lets a slice be read without the rest.
      if (postgres) await sql`ALTER TABLE recording_objects ALTER COLUMN bytes SET STORAGE EXTERNAL`.execute(db);
    },
  },
  '0017_dnc_entries': {
    async up(db: Kysely<any>) {
      // The do-not-call list: per organization, each entry for the whole organization (scope 'org') or one agent
      // (scope = the agent id). One number once per scope.
      await db.schema
        .createTable('dnc_entries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('phone_number', 'text', (c) => c.notNull())
        .addColumn('agent_id', 'text')
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('reason', 'text')
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('dnc_entries_number', ['org_id', 'phone_number', 'scope'])
        .execute();
      await db.schema.createIndex('dnc_entries_list').on('dnc_entries').columns(['org_id', 'created_at']).execute();
      await db.schema.createIndex('dnc_entries_agent').on('dnc_entries').columns(['org_id', 'agent_id']).execute();
    },
  },
  '0018_answered_by': {
    async up(db: Kysely<any>) {
      // Who answered an outbound call with voicemail detection on: human, voicemail, ivr or silence (null: not detected).
      await db.schema.alterTable('calls').addColumn('answered_by', 'text').execute();
    },
  },
  '0019_audience_uploads': {
    async up(db: Kysely<any>) {
      // An audience whose CSV is still being written (in batches, as it arrives) carries the time of its latest
      // batch here and is invisible to every read; the last batch clears it. A failed upload is deleted; one whose
      // server died is swept once it has been still for a while (control-plane/campaigns/audience-upload.ts).
      await db.schema.alterTable('audiences').addColumn('pending_since', 'text').execute();
    },
  },
  '0020_live_calls': {
    async up(db: Kysely<any>) {
      // The calls that are up, each with the server holding it and when it last said so; a phone call also keeps its
      // SIP dialog, so that a call whose server died can be hung up (BYE) by another (calls/live-calls.ts).
      await db.schema
        .createTable('live_calls')
        .addColumn('call_id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('renewed_at', 'text', (c) => c.notNull())
        .addColumn('sip_dialog', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('live_calls_owner').on('live_calls').columns(['owner']).execute();
      await db.schema.createIndex('live_calls_renewed').on('live_calls').columns(['renewed_at']).execute();
    },
  },
  // Knowledge bases, their items and chunks, with each store's full-text index (control-plane/knowledge/).
  '0021_knowledge_bases': knowledgeBaseMigration,
  // Pronunciation dictionaries per organization (control-plane/pronunciation/).
  '0022_pronunciation_dicts': pronunciationDictsMigration,
  // Agents' concurrency reservations and call actions (control-plane/organization/).
  '0023_organization_surfaces': organizationSurfacesMigration,
  // The covering index of the analytics routes' aggregates over call records (control-plane/analytics/).
  '0024_analytics_index': analyticsMigration,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
