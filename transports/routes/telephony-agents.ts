// Per-agent telephony routes (wire §3): answer sources, the transfer source and the deprecated caller-ids bridge.
import type { HttpServer } from '../http/server.js';
import { ok, type HttpRequest } from '../http/types.js';
import { attachAnswer, detachAnswer, listAnswers } from '../../control-plane/telephony/answers.js';
import { addCallerId, getTransferSource, listCallerIds, removeCallerId, setTransferSource } from '../../control-plane/telephony/dialing.js';
import { deprecatedPath } from './telephony.js';
import { actorOf, type RouteContext } from './context.js';

export function telephonyAgentRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const a = `${prefix}/agent/:agentId`;
  const agent = (req: HttpRequest) => req.params.agentId as string;

  server.route('POST', `${a}/answers`, async (req) => {
    const { answer, created } = await attachAnswer(ctx.db, actorOf(req), agent(req), req.json());
    return ok(answer, created ? 201 : 200);
  }, auth);
  server.route('GET', `${a}/answers`, async (req) => ok(await listAnswers(ctx.db, actorOf(req), agent(req))), auth);
  server.route('DELETE', `${a}/answers/:sourceId`, async (req) => ok(await detachAnswer(ctx.db, actorOf(req), agent(req), req.params.sourceId as string)), auth);

  server.route('PUT', `${a}/transfer-source`, async (req) => ok(await setTransferSource(ctx.db, actorOf(req), agent(req), req.json())), auth);
  server.route('GET', `${a}/transfer-source`, async (req) => ok(await getTransferSource(ctx.db, actorOf(req), agent(req))), auth);

  // The deprecated bridge works during the telephony window, then answers as a removed route.
  const bridge = deprecatedPath(ctx);
  server.route('POST', `${a}/caller-ids`, async (req) => bridge(201, () => addCallerId(ctx.db, actorOf(req), agent(req), req.json())), auth);
  server.route('GET', `${a}/caller-ids`, async (req) => bridge(200, () => listCallerIds(ctx.db, actorOf(req), agent(req))), auth);
  server.route('DELETE', `${a}/caller-ids/:phoneNumber`, async (req) =>
    bridge(200, () => removeCallerId(ctx.db, actorOf(req), agent(req), req.params.phoneNumber as string)), auth);
}
