// Per-agent telephony routes (wire §3): answer sources, the transfer source and the deprecated caller-ids bridge.
import type { HttpServer } from '../http/server.js';
import { docs, ok, type HttpRequest } from '../http/types.js';
import { answerBody, attachAnswer, detachAnswer, listAnswers } from '../../control-plane/telephony/answers.js';
import { addCallerId, callerIdBody, getTransferSource, listCallerIds, removeCallerId, setTransferSource, transferSourceBody } from '../../control-plane/telephony/dialing.js';
import { deprecatedPath } from './telephony.js';
import { actorOf, type RouteContext } from './context.js';

export function telephonyAgentRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const d = docs('Telephony');
  const a = `${prefix}/agent/:agentId`;
  const agent = (req: HttpRequest) => req.params.agentId as string;

  server.route('POST', `${a}/answers`, async (req) => {
    const { answer, created } = await attachAnswer(ctx.db, actorOf(req), agent(req), req.json());
    return ok(answer, created ? 201 : 200);
  }, { ...auth, doc: d('Make the agent answer a number or trunk', { body: { schema: answerBody }, response: { status: 201, description: '201 when attached, 200 when it already was.' } }) });
  server.route('GET', `${a}/answers`, async (req) => ok(await listAnswers(ctx.db, actorOf(req), agent(req))), { ...auth, doc: d('What the agent answers') });
  server.route('DELETE', `${a}/answers/:sourceId`, async (req) => ok(await detachAnswer(ctx.db, actorOf(req), agent(req), req.params.sourceId as string)), { ...auth, doc: d('Stop answering a number or trunk') });

  server.route('PUT', `${a}/transfer-source`, async (req) => ok(await setTransferSource(ctx.db, actorOf(req), agent(req), req.json())), { ...auth, doc: d("Set the agent's transfer source (caller ID of transfers)", { body: { schema: transferSourceBody } }) });
  server.route('GET', `${a}/transfer-source`, async (req) => ok(await getTransferSource(ctx.db, actorOf(req), agent(req))), { ...auth, doc: d("Read the agent's transfer source") });

  // The deprecated bridge works during the telephony window, then answers as a removed route.
  const bridge = deprecatedPath(ctx);
  server.route('POST', `${a}/caller-ids`, async (req) => bridge(201, () => addCallerId(ctx.db, actorOf(req), agent(req), req.json())), { ...auth, doc: d('Add a caller ID (deprecated bridge)', { deprecated: true, body: { schema: callerIdBody }, response: { status: 201 } }) });
  server.route('GET', `${a}/caller-ids`, async (req) => bridge(200, () => listCallerIds(ctx.db, actorOf(req), agent(req))), { ...auth, doc: d('List caller IDs (deprecated bridge)', { deprecated: true }) });
  server.route('DELETE', `${a}/caller-ids/:phoneNumber`, async (req) =>
    bridge(200, () => removeCallerId(ctx.db, actorOf(req), agent(req), req.params.phoneNumber as string)), { ...auth, doc: d('Remove a caller ID (deprecated bridge)', { deprecated: true }) });
}
