// Publishing: security scan within a budget (200 committed) or in the background (202 scanning), restore, retry, cancel.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db, Tx } from '../store/db.js';
import { newId, nowIso } from '../store/ids.js';
import { z } from 'zod';
import { badRequest, conflict, forbidden, notFound } from '../errors.js';
import { bodyObject, parseBody, says } from '../validation.js';
import type { BlockRefs, Section } from './config.js';
import { loadAgentForWrite, type Actor, type AgentRow } from './agents.js';
import { assertWritable, liveHeadId, loadBranch, scanningRevision } from './branches.js';
import { openDraft } from './drafts.js';
import { loadConfig, loadSections, markBlocksPassed, parseJson, promptScoreKey, revisionDto, unscannedSections, type PendingPublish, type RevisionRow, type SecurityCheck } from './records.js';
import { scoreBlocks } from './prompt-scoring.js';
import { summarizeFindings, type ScanRule } from './security-scan.js';
import type { ScanOutcome, ScanRunner } from './scan-runner.js';

export interface PublishResult {
  status: 200 | 202;
  /** `warnings`: what the revision will not do as configured on this server (ConfigAdvisor); absent when none. */
  data: ({ state: 'committed'; revision: Record<string, unknown> } | { state: 'scanning' }) & { warnings?: string[] };
}

/**
 * What a configuration will not do on this server, one sentence each (for example an `slmModel` no configured
 * language model answers): the server passes it, as the control plane does not know the server's settings.
 */
export type ConfigAdvisor = (workflowType: string, config: Record<string, unknown>) => string[];

type Verdict = { kind: 'passed' } | { kind: 'failed'; reason: string } | { kind: 'error'; reason: string };

/**
 * One scan of one armed revision: the blocks that were scanned and when the publish was armed. A verdict only
 * settles the revision while it is still armed by that same publish with those same blocks.
 */
interface Attempt {
  revisionId: string;
  blocks: string;
  armedAt: string;
}

function isArmedBy(row: RevisionRow | undefined, attempt: Attempt): row is RevisionRow {
  const pending = parseJson<PendingPublish>(row?.pending_publish ?? null);
  return row?.status === 'draft' && pending?.state === 'active' && pending.startedAt === attempt.armedAt && row.blocks === attempt.blocks;
}

async function loadArmed(q: Db | Tx, attempt: Attempt): Promise<RevisionRow | null> {
  const row = await q.selectFrom('revisions').selectAll().where('id', '=', attempt.revisionId).executeTakeFirst();
  return isArmedBy(row, attempt) ? row : null;
}

/** Takes the branch row's write lock for the rest of the transaction (PostgreSQL; SQLite transactions serialize). */
async function lockBranchRow(tx: Tx, branchId: string): Promise<void> {
  await tx.updateTable('branches').set({ updated_at: nowIso() }).where('id', '=', branchId).execute();
}

export class PublishService {
  constructor(
    private readonly db: Db,
    private readonly scanner: ScanRunner,
    private readonly budgetMs: number,
    private readonly logger: Logger,
    private readonly advise?: ConfigAdvisor,
  ) {
    // The per-branch lock is held for a publish's scan budget and its commit; a crashed holder's lock expires.
    this.lockMs = Math.max(10_000, budgetMs * 2 + 5_000);
  }

  private readonly lockMs: number;

  async publish(actor: Actor, agentId: string, branchId: string, body: unknown): Promise<PublishResult> {
    const label = parseLabel(body);
    const agent = await loadAgentForWrite(this.db, actor, agentId);
    const branch = await loadBranch(this.db, agent, branchId);
    assertWritable(branch);
    const draft = await openDraft(this.db, branch);
    await this.assertNotBlocked(branchId);
    return this.withLock(branchId, async () => {
      const fresh = await loadBranch(this.db, agent, branchId);
      if (fresh.open_draft_id !== draft.id) throw notFound('This branch has no open draft');
      await this.assertNotBlocked(branchId);
      const armedAt = nowIso();
      const pending: PendingPublish = { state: 'active', startedBy: actor.name, startedAt: armedAt };
      const check: SecurityCheck = { status: 'pending', reason: null, triggeredAt: armedAt, completedAt: null };
      const row = await this.db
        .updateTable('revisions')
        .set({ pending_publish: JSON.stringify(pending), security_check: JSON.stringify(check), label, published_by: actor.name, updated_at: armedAt })
        .where('id', '=', draft.id)
        .returning(['blocks', 'workflow_type'])
        .executeTakeFirstOrThrow();
      const warnings = await this.warnings(row.workflow_type, row.blocks);
      return withWarnings(await this.scanAndSettle(agent, branchId, { revisionId: draft.id, blocks: row.blocks, armedAt }, actor.name, true), warnings);
    });
  }

  /**
   * Re-runs the scan of a revision whose scan failed or could not complete. `acknowledge` names finding rules
   * the caller confirms as intended for this revision (a false positive such as a documented test card number);
   * findings of those rules no longer fail it, and the acknowledgement stays on its security check.
   */
  async retryScan(actor: Actor, agentId: string, branchId: string, revisionId: string, body: unknown): Promise<PublishResult> {
    const acknowledgedRules = parseAcknowledge(body);
    const agent = await loadAgentForWrite(this.db, actor, agentId);
    const branch = await loadBranch(this.db, agent, branchId);
    assertWritable(branch);
    const row = await this.db.selectFrom('revisions').selectAll().where('id', '=', revisionId).executeTakeFirst();
    if (!row || row.agent_id !== agentId || row.branch_id !== branchId) throw notFound('Revision not found on this branch');
    const check = parseJson<SecurityCheck>(row.security_check);
    if (row.status !== 'draft' || row.listed_at === null) throw badRequest('Only a revision that is still scanning can have its scan retried');
    if (check?.status === 'pending') throw conflict('publish_in_progress', 'The security scan of this revision is still running');
    return this.withLock(branchId, async () => {
      const current = await this.db.selectFrom('revisions').selectAll().where('id', '=', revisionId).executeTakeFirstOrThrow();
      const pending = parseJson<PendingPublish>(current.pending_publish);
      if (current.status !== 'draft' || current.listed_at === null || pending?.state !== 'active') throw badRequest('Only a revision that is still scanning can have its scan retried');
      const started: SecurityCheck = { status: 'pending', reason: null, triggeredAt: nowIso(), completedAt: null, ...(acknowledgedRules.length ? { acknowledgedRules } : {}) };
      await this.db.updateTable('revisions').set({ security_check: JSON.stringify(started), updated_at: nowIso() }).where('id', '=', revisionId).execute();
      return this.scanAndSettle(agent, branchId, { revisionId, blocks: current.blocks, armedAt: pending.startedAt }, actor.name, false);
    });
  }

  /**
   * Runs the scan (only sections whose exact content has not passed before) and races it against the budget.
   * Within budget and passed: commit now (200). Otherwise the revision enters history as scanning (202);
   * a deferred scan settles it in the background.
   */
  private async scanAndSettle(agent: AgentRow, branchId: string, attempt: Attempt, actorName: string, fromDraft: boolean): Promise<PublishResult> {
    const todo = await unscannedSections(this.db, JSON.parse(attempt.blocks) as BlockRefs);
    // Content whose every block passed a scan before needs no fresh scan: it commits at once, whatever the budget.
    const verdictPromise = this.verdict(attempt, todo);
    const inBudget = todo.length === 0 ? await verdictPromise : this.budgetMs > 0 ? await raceBudget(verdictPromise, this.budgetMs) : null;
    if (inBudget?.kind === 'passed') {
      const committed = await this.commit(agent, branchId, attempt, actorName);
      if (committed) return { status: 200, data: { state: 'committed', revision: committed } };
      throw conflict('publish_in_progress', 'The publish was cancelled before it committed');
    }
    const revisionId = attempt.revisionId;
    await this.db.transaction().execute(async (tx) => {
      await lockBranchRow(tx, branchId);
      if (!(await loadArmed(tx, attempt))) throw conflict('publish_in_progress', 'The publish was cancelled before it entered the history');
      if (fromDraft) {
        await tx.updateTable('branches').set({ open_draft_id: null }).where('id', '=', branchId).where('open_draft_id', '=', revisionId).execute();
        await tx.updateTable('revisions').set({ listed_at: nowIso(), draft_id: null, source_draft_id: revisionId }).where('id', '=', revisionId).execute();
      }
      if (inBudget) await this.recordFailure(tx, branchId, attempt, inBudget);
    });
    if (!inBudget) void verdictPromise.then((v) => this.settleInBackground(agent, branchId, attempt, actorName, v));
    return { status: 202, data: { state: 'scanning' } };
  }

  /** Scans the sections in `todo` (those not passed before), ignoring findings of rules acknowledged on a retry. */
  /** Never rejects: a store or scanner failure is an `error` verdict (the revision can be retried). */
  private async verdict(attempt: Attempt, todo: Section[]): Promise<Verdict> {
    if (todo.length === 0) return { kind: 'passed' };
    try {
      const sections = await loadSections(this.db, JSON.parse(attempt.blocks) as BlockRefs);
      const outcome: ScanOutcome = await this.scanner.scan(Object.fromEntries(todo.map((s) => [s, sections[s]])));
      if (!outcome.ok) return { kind: 'error', reason: `Security scan could not complete: ${outcome.error}; retry the scan` };
      const row = await this.db.selectFrom('revisions').select('security_check').where('id', '=', attempt.revisionId).executeTakeFirst();
      const acknowledged = new Set(parseJson<SecurityCheck>(row?.security_check ?? null)?.acknowledgedRules ?? []);
      const reason = summarizeFindings(outcome.findings.filter((f) => !acknowledged.has(f.rule)));
      return reason === null ? { kind: 'passed' } : { kind: 'failed', reason };
    } catch (err) {
      this.logger.error({ err: err instanceof Error ? err.message : String(err), revisionId: attempt.revisionId }, 'security scan failed to run');
      return { kind: 'error', reason: 'Security scan could not complete (internal error); retry the scan' };
    }
  }

  private async settleInBackground(agent: AgentRow, branchId: string, attempt: Attempt, actorName: string, verdict: Verdict): Promise<void> {
    try {
      await this.withLock(branchId, async () => {
        if (verdict.kind === 'passed') await this.commit(agent, branchId, attempt, actorName);
        else await this.db.transaction().execute((tx) => this.recordFailure(tx, branchId, attempt, verdict));
      }, true);
    } catch (err) {
      this.logger.error({ err: err instanceof Error ? err.message : String(err), revisionId: attempt.revisionId }, 'settling a deferred scan failed');
    }
  }

  private async recordFailure(tx: Tx, branchId: string, attempt: Attempt, verdict: Exclude<Verdict, { kind: 'passed' }>): Promise<void> {
    await lockBranchRow(tx, branchId);
    const row = await loadArmed(tx, attempt);
    if (!row) return;
    const prior = parseJson<SecurityCheck>(row.security_check);
    const check: SecurityCheck = { ...prior, status: 'failed', reason: verdict.reason, triggeredAt: prior?.triggeredAt ?? nowIso(), completedAt: nowIso() };
    await tx.updateTable('revisions').set({ security_check: JSON.stringify(check), updated_at: nowIso() }).where('id', '=', row.id).execute();
  }

  /** Commits the armed revision at the branch head with the next revision number; null if that publish was cancelled meanwhile. */
  private async commit(agent: AgentRow, branchId: string, attempt: Attempt, actorName: string): Promise<Record<string, unknown> | null> {
    const revisionId = attempt.revisionId;
    const done = await this.db.transaction().execute(async (tx) => {
      await lockBranchRow(tx, branchId);
      const row = await loadArmed(tx, attempt);
      if (!row) return false;
      const refs = JSON.parse(row.blocks) as BlockRefs;
      const number = await nextRevisionNumber(tx, branchId);
      const score = await scoreBlocks(tx, refs, row.workflow_type);
      const now = nowIso();
      const check = parseJson<SecurityCheck>(row.security_check);
      await markBlocksPassed(tx, refs);
      await tx
        .updateTable('revisions')
        .set({
          status: 'published',
          revision_number: number,
          published_by: row.published_by ?? actorName,
          published_at: now,
          draft_id: null,
          draft_revision: null,
          source_draft_id: row.draft_id ?? row.source_draft_id,
          pending_publish: null,
          security_check: JSON.stringify({ ...check, status: 'passed', reason: null, triggeredAt: check?.triggeredAt ?? now, completedAt: now } satisfies SecurityCheck),
          prompt_score: JSON.stringify(score),
          prompt_score_hash: promptScoreKey(refs),
          listed_at: row.listed_at ?? now,
          updated_at: now,
        })
        .where('id', '=', revisionId)
        .execute();
      await this.advanceHead(tx, agent.id, branchId, revisionId, actorName, now);
      await tx.updateTable('branches').set({ open_draft_id: null }).where('id', '=', branchId).where('open_draft_id', '=', revisionId).execute();
      return true;
    });
    return done ? this.revisionRecord(agent, revisionId) : null;
  }

  private async advanceHead(tx: Tx, agentId: string, branchId: string, revisionId: string, actorName: string, now: string): Promise<void> {
    await tx.updateTable('branches').set({ head_revision_id: revisionId, updated_by: actorName, updated_at: now }).where('id', '=', branchId).execute();
    const live = await tx.selectFrom('agents').select('live_branch_id').where('id', '=', agentId).executeTakeFirstOrThrow();
    if (live.live_branch_id === branchId) {
      // Publishing on the live branch takes effect in production at once.
      await tx.updateTable('agents').set({ versioned: 1, updated_at: now }).where('id', '=', agentId).execute();
      await tx.updateTable('revisions').set({ activated_by: actorName, activated_at: now }).where('id', '=', revisionId).execute();
    }
  }

  async restore(actor: Actor, agentId: string, branchId: string, revisionId: string, body: unknown): Promise<PublishResult> {
    const label = parseLabel(body);
    const agent = await loadAgentForWrite(this.db, actor, agentId);
    const branch = await loadBranch(this.db, agent, branchId);
    assertWritable(branch);
    const source = await this.db.selectFrom('revisions').selectAll().where('id', '=', revisionId).executeTakeFirst();
    if (!source || source.agent_id !== agentId || (source.status === 'draft' && source.listed_at === null)) throw notFound('Revision not found');
    if (source.status !== 'published' || parseJson<SecurityCheck>(source.security_check)?.status !== 'passed') {
      throw forbidden('The source revision has not passed the security scan and cannot be restored');
    }
    await this.assertNotBlocked(branchId);
    return this.withLock(branchId, async () => {
      await this.assertNotBlocked(branchId);
      const id = newId();
      await this.db.transaction().execute(async (tx) => {
        const head = await tx.selectFrom('branches').select('head_revision_id').where('id', '=', branchId).executeTakeFirstOrThrow();
        const number = await nextRevisionNumber(tx, branchId);
        const now = nowIso();
        await tx
          .insertInto('revisions')
          .values({
            ...source,
            id,
            branch_id: branchId,
            status: 'published',
            revision_number: number,
            version_number: null,
            label,
            description: null,
            is_pinned: 0,
            published_by: actor.name,
            published_at: now,
            restored_from_label: source.label,
            restored_from_revision_id: source.id,
            draft_id: null,
            draft_name: null,
            draft_revision: null,
            draft_base_revision: null,
            source_version_id: source.id,
            source_draft_id: null,
            parent_version: head.head_revision_id,
            activated_by: null,
            activated_at: null,
            security_check: JSON.stringify({ status: 'passed', reason: 'content unchanged from a scanned revision', triggeredAt: now, completedAt: now } satisfies SecurityCheck),
            pending_publish: null,
            listed_at: now,
            created_by: actor.name,
            created_at: now,
            updated_at: now,
          })
          .execute();
        await this.advanceHead(tx, agentId, branchId, id, actor.name, now);
      });
      return withWarnings({ status: 200, data: { state: 'committed', revision: await this.revisionRecord(agent, id) } }, await this.warnings(source.workflow_type, source.blocks));
    });
  }

  /** Cancels an armed publish: the revision goes back to being the branch's open draft (or is archived if a new draft exists). */
  async cancel(actor: Actor, agentId: string, branchId: string): Promise<void> {
    const agent = await loadAgentForWrite(this.db, actor, agentId);
    const branch = await loadBranch(this.db, agent, branchId);
    assertWritable(branch);
    await this.withLock(branchId, () => this.db.transaction().execute(async (tx) => {
      await lockBranchRow(tx, branchId);
      const armed = await tx.selectFrom('revisions').selectAll().where('branch_id', '=', branchId).where('status', '=', 'draft').where('pending_publish', 'is not', null).execute();
      for (const row of armed) {
        const pending = parseJson<PendingPublish>(row.pending_publish);
        if (pending?.state !== 'active') continue;
        const cancelled: PendingPublish = { ...pending, state: 'cancelled' };
        const current = await tx.selectFrom('branches').select('open_draft_id').where('id', '=', branchId).executeTakeFirstOrThrow();
        const reopen = current.open_draft_id === null || current.open_draft_id === row.id;
        await tx
          .updateTable('revisions')
          .set({
            pending_publish: JSON.stringify(cancelled),
            security_check: JSON.stringify({ ...parseJson<SecurityCheck>(row.security_check), status: 'cancelled', completedAt: nowIso() }),
            status: reopen ? 'draft' : 'archived',
            listed_at: null,
            draft_id: reopen ? row.id : null,
            draft_revision: reopen ? row.draft_revision : null,
            updated_at: nowIso(),
          })
          .where('id', '=', row.id)
          .execute();
        if (reopen) await tx.updateTable('branches').set({ open_draft_id: row.id, updated_by: actor.name, updated_at: nowIso() }).where('id', '=', branchId).execute();
      }
    }), true);
  }

  /** After a restart: scans that were deferred and never settled run again in the background. */
  async resumePendingScans(): Promise<number> {
    const rows = await this.db.selectFrom('revisions').selectAll().where('status', '=', 'draft').where('listed_at', 'is not', null).execute();
    let resumed = 0;
    for (const row of rows) {
      if (parseJson<SecurityCheck>(row.security_check)?.status !== 'pending' || !row.branch_id) continue;
      const agent = await this.db.selectFrom('agents').selectAll().where('id', '=', row.agent_id).executeTakeFirst();
      if (!agent) continue;
      const pending = parseJson<PendingPublish>(row.pending_publish);
      if (pending?.state !== 'active') continue;
      resumed++;
      const attempt: Attempt = { revisionId: row.id, blocks: row.blocks, armedAt: pending.startedAt };
      const todo = await unscannedSections(this.db, JSON.parse(row.blocks) as BlockRefs);
      const branchId = row.branch_id;
      void this.verdict(attempt, todo).then((v) => this.settleInBackground(agent, branchId, attempt, row.published_by ?? 'system', v));
    }
    return resumed;
  }

  /** The advisor's warnings on a revision's configuration; a failing advisor warns nothing (it never blocks a publish). */
  private async warnings(workflowType: string, blocks: string): Promise<string[]> {
    if (!this.advise) return [];
    try {
      return this.advise(workflowType, await loadConfig(this.db, JSON.parse(blocks) as BlockRefs));
    } catch (err) {
      this.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not check the published configuration');
      return [];
    }
  }

  private async assertNotBlocked(branchId: string): Promise<void> {
    const scanning = await scanningRevision(this.db, branchId);
    if (!scanning) return;
    if (scanning.check?.status === 'failed') {
      throw conflict('security_scan_failed', `Revision ${scanning.id} failed its security scan (${scanning.check.reason ?? 'see securityCheck.reason'}); retry the scan or cancel that publish first`);
    }
    throw conflict('publish_in_progress', `Revision ${scanning.id} is still being scanned; wait for it to commit`);
  }

  /** One publish, restore or scan settlement per branch at a time; HTTP callers get 409, the background waits. */
  private async withLock<T>(branchId: string, fn: () => Promise<T>, wait = false): Promise<T> {
    const token = randomUUID();
    for (let attempt = 0; ; attempt++) {
      const now = new Date();
      const res = await this.db
        .updateTable('branches')
        .set({ lock_token: token, lock_expires_at: new Date(now.getTime() + this.lockMs).toISOString() })
        .where('id', '=', branchId)
        .where((eb) => eb.or([eb('lock_token', 'is', null), eb('lock_expires_at', '<', now.toISOString())]))
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 1) break;
      if (!wait || attempt > 1200) throw conflict('publish_in_progress', 'Another publish or restore is in progress on this branch');
      await new Promise((r) => setTimeout(r, 50));
    }
    try {
      return await fn();
    } finally {
      await this.db.updateTable('branches').set({ lock_token: null, lock_expires_at: null }).where('id', '=', branchId).where('lock_token', '=', token).execute();
    }
  }

  private async revisionRecord(agent: AgentRow, revisionId: string): Promise<Record<string, unknown>> {
    const row = await this.db.selectFrom('revisions').selectAll().where('id', '=', revisionId).executeTakeFirstOrThrow();
    return revisionDto(row, { liveHeadId: await liveHeadId(this.db, agent) });
  }
}

function withWarnings(result: PublishResult, warnings: string[]): PublishResult {
  return warnings.length ? { ...result, data: { ...result.data, warnings } } : result;
}

async function nextRevisionNumber(tx: Tx, branchId: string): Promise<number> {
  const row = await tx
    .updateTable('branches')
    .set((eb) => ({ revision_counter: eb('revision_counter', '+', 1) }))
    .where('id', '=', branchId)
    .returning('revision_counter')
    .executeTakeFirstOrThrow();
  return Number(row.revision_counter);
}

const SCAN_RULES: readonly ScanRule[] = ['api_key', 'private_key', 'card_number', 'national_id', 'prompt_injection', 'url_credentials'];

const rulesText = SCAN_RULES.join(', ');

/** `POST .../revisions/{revisionId}/scan`: rules whose findings are accepted on the retry. */
export const retryScanBody = bodyObject({
  acknowledge: z
    .array(z.enum(SCAN_RULES as [ScanRule, ...ScanRule[]], says(`must be a scan rule (${rulesText})`)), says(`must be an array of scan rules (${rulesText})`))
    .optional()
    .describe('Scan rules whose findings are accepted.'),
});

/** `POST .../draft/publish` and `.../restore`: an optional label for the revision. */
export const publishBody = bodyObject({ label: z.string(says('must be a string of at most 200 characters, or null')).max(200).nullish() });

function parseAcknowledge(body: unknown): ScanRule[] {
  if (body === undefined || body === null) return [];
  return [...new Set(parseBody(retryScanBody, body).acknowledge ?? [])];
}

function parseLabel(body: unknown): string | null {
  if (body === undefined || body === null) return null;
  return parseBody(publishBody, body).label ?? null;
}

async function raceBudget(p: Promise<Verdict>, ms: number): Promise<Verdict | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

