// Prompt scoring route: POST /prompt-scoring/score (a version's or draft's single prompt), 10 a minute per organization.
import type { HttpServer } from '../http/server.js';
import { docs, ok } from '../http/types.js';
import { RateLimiter } from '../../control-plane/auth/rate-limit.js';
import { limitPromptScoring, promptScoreBody, scoreRevisionPrompt } from '../../control-plane/agents/prompt-scoring.js';
import { actorOf, type RouteContext } from './context.js';

export function promptScoringRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const limiter = new RateLimiter();
  server.route('POST', `${prefix}/prompt-scoring/score`, async (req) => {
    const actor = actorOf(req);
    limitPromptScoring(limiter, actor.orgId);
    return ok(await scoreRevisionPrompt(ctx.db, actor, req.json()));
  }, { auth: 'key', doc: docs('Agents')("Score a revision's or draft's single prompt (10 a minute per organization)", { body: { schema: promptScoreBody } }) });
}
