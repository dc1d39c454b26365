// POST /prompt-scoring/score: a draft's or version's single prompt scored on demand and stored on its revision; refusals and the rate limit.
import { describe, expect, it } from 'vitest';
import { createOrgKey, storeSql, testDialects } from './support/server.js';
import { serverForSuite } from './support/suite.js';
import { A, createAgent } from './support/agents.js';
import { scorePrompt } from '../control-plane/agents/prompt-score.js';

const FIRST = 'You are Ava, the front desk of a dental clinic. Your goal is to book appointments. Never give medical advice.';
const SECOND = `${FIRST}\nKeep answers short and friendly. If the caller is unclear, ask them to repeat.`;
const SCORE_KEYS = ['band', 'dimensions', 'estimated_ttft_overhead_ms', 'overall_grade', 'overall_score'];
const expected = (prompt: string) => scorePrompt({ prompt, toolNames: [], workflowType: 'single_prompt' });

describe.each(testDialects())('prompt scoring route on %s', (dialect) => {
  const suite = serverForSuite(dialect);
  // Each part runs in its own organization: the limit is 10 scoring requests a minute per organization.
  const as = (key: string) => {
    const req = (method: string, p: string, body?: unknown) => suite.server.request(method, `${A}${p}`, { key, ...(body === undefined ? {} : { body }) });
    return {
      req,
      score: (body: unknown) => req('POST', '/prompt-scoring/score', body),
      async agentWithDraft(body: Record<string, unknown>, draft: Record<string, unknown>) {
        const agent = await createAgent(suite.server, body, key);
        const main = (await req('GET', `/agent/${agent}/branches`)).body.data.branches[0].branch._id as string;
        const put = await req('PUT', `/agent/${agent}/branches/${main}/draft`, draft);
        expect(put.status, put.text).toBe(200);
        return { agent, main, draftId: put.body.data._id as string };
      },
    };
  };

  it('scores a draft, refuses it unchanged, rescores an edit, and scores a version once; each score is stored with scoredAt', async () => {
    const org = as(await createOrgKey(suite.store, 'scoring', 'scoring-org'));
    const { agent, main, draftId } = await org.agentWithDraft({}, { prompt: FIRST });
    const draftScore = async () => (await org.req('GET', `/agent/${agent}/branches/${main}/draft`)).body.data.latest;

    const first = await org.score({ draftId });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toEqual({ status: true, data: expected(FIRST) });
    expect(Object.keys(first.body.data).sort()).toEqual(SCORE_KEYS);
    expect(first.body.data.dimensions).toHaveLength(11);
    const stored = await draftScore();
    expect(stored.promptScore).toEqual({ ...expected(FIRST), scoredAt: expect.any(String) });
    expect(Date.now() - Date.parse(stored.promptScore.scoredAt)).toBeLessThan(60_000);
    expect(stored.promptScoreStale).toBe(false);

    const again = await org.score({ draftId });
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ status: false, errors: ['Prompt unchanged since it was last scored'] });

    expect((await org.req('PUT', `/agent/${agent}/branches/${main}/draft`, { prompt: SECOND })).status).toBe(200);
    expect((await draftScore()).promptScoreStale).toBe(true);
    const edited = await org.score({ draftId });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body.data).toEqual(expected(SECOND));
    expect(edited.body.data.overall_score).toBeGreaterThan(first.body.data.overall_score);
    expect((await draftScore()).promptScore).toEqual({ ...expected(SECOND), scoredAt: expect.any(String) });

    // Publishing scores the revision: the version is then unchanged since its last score.
    const published = await org.req('POST', `/agent/${agent}/branches/${main}/draft/publish`);
    expect(published.body.data.state).toBe('committed');
    const versionId = published.body.data.revision._id as string;
    expect(versionId).toBe(draftId);
    expect((await org.score({ versionId })).body.errors).toEqual(['Prompt unchanged since it was last scored']);
    // A version never scored (as revisions from before scoring existed) is scored and stored.
    await storeSql(suite.store, 'UPDATE revisions SET prompt_score = NULL, prompt_score_hash = NULL WHERE id = $1', [versionId]);
    const version = await org.score({ versionId });
    expect(version.status, version.text).toBe(200);
    expect(version.body.data).toEqual(expected(SECOND));
    const revision = (await org.req('GET', `/agent/${agent}/branches/${main}/revisions/${versionId}`)).body.data.revision;
    expect(revision.promptScore).toEqual({ ...expected(SECOND), scoredAt: expect.any(String) });
    expect((await org.score({ versionId })).status).toBe(400);

    // Workflow-graph agents have no single prompt to score.
    const graph = await org.agentWithDraft({ workflowType: 'workflow_graph', workflowGraph: { nodes: [{ id: 'a', type: 'say', text: 'Hi.' }], edges: [] } }, { firstMessage: 'Hello.' });
    const refused = await org.score({ draftId: graph.draftId });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatch(/single_prompt/);
  });

  it('refuses bad bodies (400), unknown or mismatched ids (404) and another organization (403, plain envelope)', async () => {
    const org = as(await createOrgKey(suite.store, 'scoring-bad', 'scoring-bad-org'));
    const { agent, main, draftId } = await org.agentWithDraft({}, { prompt: FIRST });
    const cases: [unknown, string][] = [
      [{}, 'Send exactly one of versionId or draftId'],
      [{ versionId: draftId, draftId }, 'Send exactly one of versionId or draftId'],
      [{ versionId: 'v1' }, 'versionId: must be a 24-hex id'],
      [{ draftId: 7 }, 'draftId: must be a 24-hex id'],
      [[draftId], 'Request body must be a JSON object'],
    ];
    for (const [body, error] of cases) {
      const res = await org.score(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual({ status: false, errors: [error] });
    }
    expect((await org.score({ versionId: '0123456789abcdef01234567' })).body).toEqual({ status: false, errors: ['Version not found'] });
    // An open draft is not a version; a committed revision is not a draft.
    const asVersion = await org.score({ versionId: draftId });
    expect(asVersion.status).toBe(404);
    expect(asVersion.body).toEqual({ status: false, errors: ['Version not found'] });
    expect((await org.req('POST', `/agent/${agent}/branches/${main}/draft/publish`)).body.data.state).toBe('committed');
    const asDraft = await org.score({ draftId });
    expect(asDraft.status).toBe(404);
    expect(asDraft.body).toEqual({ status: false, errors: ['Draft not found'] });

    const stranger = as(await createOrgKey(suite.store, 'scoring-stranger', 'scoring-stranger-org'));
    const foreign = await stranger.score({ versionId: draftId });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toEqual({ status: false, errors: ['This API key has no access to this agent'] });
    expect((await suite.server.request('POST', `${A}/prompt-scoring/score`, { key: null, body: { draftId } })).status).toBe(401);
  });

  it('allows 10 scoring requests a minute per organization, then 429 with the wire body and Retry-After', async () => {
    const org = as(await createOrgKey(suite.store, 'scoring-busy', 'scoring-busy-org'));
    const { draftId } = await org.agentWithDraft({}, { prompt: FIRST });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await org.score({ draftId })).status);
    // Every request counts, refused ones too.
    expect(statuses).toEqual([200, 400, 400, 400, 400, 400, 400, 400, 400, 400]);
    const limited = await org.score({ draftId });
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.body).toEqual({ message: 'Rate limit exceeded', rateLimit: { routeClass: 'prompt-scoring', limit: 10, retryAfterSec: retryAfter } });
    // Another organization has its own allowance.
    const other = as(await createOrgKey(suite.store, 'scoring-calm', 'scoring-calm-org'));
    const { draftId: theirs } = await other.agentWithDraft({}, { prompt: SECOND });
    expect((await other.score({ draftId: theirs })).status).toBe(200);
  });
});
