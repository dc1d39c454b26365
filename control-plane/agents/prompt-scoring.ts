// On-demand prompt scoring (POST /prompt-scoring/score) of a version or draft, stored on its revision; the publish-time score.
import type { Db, Tx } from '../store/db.js';
import { nowIso } from '../store/ids.js';
import { z } from 'zod';
import { ApiError, badRequest, notFound } from '../errors.js';
import { NOT_AN_OBJECT, bodyObject, parseBody, says } from '../validation.js';
import type { RateLimiter } from '../auth/rate-limit.js';
import type { BlockRefs } from './config.js';
import { loadAgent, type Actor } from './agents.js';
import { loadConfig, promptScoreKey } from './records.js';
import { scorePrompt, type PromptScore } from './prompt-score.js';

/** Scoring requests per organization per minute (the wire's `prompt-scoring` route class). */
export const PROMPT_SCORING_PER_MINUTE = 10;

/** Scores the prompt texts and tools of a revision's blocks (what publish stores, and this route re-computes). */
export async function scoreBlocks(q: Db | Tx, refs: BlockRefs, workflowType: string): Promise<PromptScore & { scoredAt: string }> {
  const config = await loadConfig(q, refs);
  const tools = (config.tools as { name?: string }[] | undefined) ?? [];
  const result = scorePrompt({
    prompt: String(config.prompt ?? ''),
    globalPrompt: typeof config.globalPrompt === 'string' ? config.globalPrompt : undefined,
    firstMessage: typeof config.firstMessage === 'string' ? config.firstMessage : undefined,
    toolNames: tools.map((t) => String(t.name ?? '')).filter(Boolean),
    workflowType: workflowType === 'workflow_graph' ? 'workflow_graph' : 'single_prompt',
  });
  return { ...result, scoredAt: nowIso() };
}

/** Counts one scoring request of the organization; over the limit, the wire's 429 body with `Retry-After`. */
export function limitPromptScoring(limiter: RateLimiter, orgId: string): void {
  const decision = limiter.hit(`prompt-scoring:${orgId}`, PROMPT_SCORING_PER_MINUTE);
  if (decision.allowed) return;
  throw new ApiError(429, 'Rate limit exceeded', {
    headers: { 'Retry-After': String(decision.retryAfterSec) },
    rawBody: { message: 'Rate limit exceeded', rateLimit: { routeClass: 'prompt-scoring', limit: PROMPT_SCORING_PER_MINUTE, retryAfterSec: decision.retryAfterSec } },
  });
}

const revisionId = z.string(says('must be a 24-hex id')).regex(/^[a-f\d]{24}$/).optional();

/** `POST /prompt-scoring/score`: exactly one of the two (checked in code first). */
export const promptScoreBody = bodyObject({ versionId: revisionId.describe('A committed revision.'), draftId: revisionId.describe('An open draft.') });

function parseTarget(body: unknown): { kind: 'version' | 'draft'; id: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest(NOT_AN_OBJECT);
  const given = body as Record<string, unknown>;
  if ((given.versionId === undefined) === (given.draftId === undefined)) throw badRequest('Send exactly one of versionId or draftId');
  const { versionId, draftId } = parseBody(promptScoreBody, body);
  return versionId !== undefined ? { kind: 'version', id: versionId } : { kind: 'draft', id: draftId as string };
}

/**
 * Scores a committed version (`versionId`, a revision id) or an open draft (`draftId`, its revision id) of a
 * single-prompt agent, stores the score on that revision and returns it. Refuses (400) a prompt unchanged since its
 * last score: the stored `prompt_score_hash` still matches the prompt and tools blocks.
 */
export async function scoreRevisionPrompt(db: Db, actor: Actor, body: unknown): Promise<PromptScore> {
  const target = parseTarget(body);
  const label = target.kind === 'version' ? 'Version' : 'Draft';
  const row = await db.selectFrom('revisions').selectAll().where('id', '=', target.id).executeTakeFirst();
  const matches = row && (target.kind === 'version' ? row.status === 'published' : row.status === 'draft' && row.listed_at === null);
  if (!row || !matches) throw notFound(`${label} not found`);
  await loadAgent(db, actor, row.agent_id).catch((err: unknown) => {
    // Prompt scoring's 403 is the plain envelope (no `data`).
    if (err instanceof ApiError && err.status === 403) throw new ApiError(403, err.errors);
    throw err;
  });
  if (row.workflow_type !== 'single_prompt') throw badRequest('Prompt scoring is for single_prompt agents only; this one is a workflow_graph agent');
  const refs = JSON.parse(row.blocks) as BlockRefs;
  const key = promptScoreKey(refs);
  if (row.prompt_score !== null && row.prompt_score_hash === key) throw badRequest('Prompt unchanged since it was last scored');
  let score: PromptScore & { scoredAt: string };
  try {
    score = await scoreBlocks(db, refs, row.workflow_type);
  } catch {
    throw new ApiError(500, 'Prompt scoring failed');
  }
  // Stored only while the revision still has the blocks that were scored (a concurrent draft edit wins).
  await db.updateTable('revisions').set({ prompt_score: JSON.stringify(score), prompt_score_hash: key }).where('id', '=', row.id).where('blocks', '=', row.blocks).execute();
  const { scoredAt: _scoredAt, ...data } = score;
  return data;
}
