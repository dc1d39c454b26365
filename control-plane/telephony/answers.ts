// Who answers (wire §3): attach a source to an agent (one agent per source), list an agent's sources, stop answering.
import { isUniqueViolation, type Db } from '../store/db.js';
import { notFound } from '../errors.js';
import { loadAgent, loadAgentForWrite, type Actor } from '../agents/agents.js';
import { SOURCE_KINDS, agentAnswers, alreadyAnswered, answeringAgents, insertAnswer, resolveSource, type AnswerRecord, type SourceKind } from './sources.js';
import { z } from 'zod';
import { parseBody, says, strictBody } from '../validation.js';

export interface AnswerView {
  agentId: string;
  sourceKind: SourceKind;
  sourceId: string;
  phoneNumbers: string[];
}

const view = (a: AnswerRecord): AnswerView => ({ agentId: a.agentId, sourceKind: a.sourceKind, sourceId: a.sourceId, phoneNumbers: a.phoneNumbers });

/** `POST /agent/{agentId}/answers`: unknown fields refused. */
export const answerBody = strictBody({
  sourceKind: z.enum(SOURCE_KINDS, says(`required, one of ${SOURCE_KINDS.join(', ')}`)),
  sourceId: z.string(says('required, a product id (phoneNumber) or an inbound SIP trunk id (sipTrunk)')).min(1),
});

/** `POST /agent/{agentId}/answers`: 201 with the answer (200 when the agent already answers it). */
export async function attachAnswer(db: Db, actor: Actor, agentId: string, body: unknown): Promise<{ answer: AnswerView; created: boolean }> {
  const input = parseBody(answerBody, body);
  await loadAgentForWrite(db, actor, agentId);
  const kind = input.sourceKind;
  const source = await resolveSource(db, actor.orgId, kind, input.sourceId);
  let created: boolean;
  try {
    created = await db.transaction().execute((tx) => insertAnswer(tx, actor.orgId, agentId, kind, source.id));
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const winner = (await answeringAgents(db, [source.id])).get(source.id);
    throw alreadyAnswered(source.id, winner?._id ?? 'unknown');
  }
  return { answer: { agentId, sourceKind: kind, sourceId: source.id, phoneNumbers: source.numbers }, created };
}

export async function listAnswers(db: Db, actor: Actor, agentId: string): Promise<{ answers: AnswerView[] }> {
  await loadAgent(db, actor, agentId);
  return { answers: (await agentAnswers(db, agentId)).map(view) };
}

export async function detachAnswer(db: Db, actor: Actor, agentId: string, sourceId: string): Promise<{ removed: true }> {
  await loadAgentForWrite(db, actor, agentId);
  const result = await db.deleteFrom('answer_sources').where('source_id', '=', sourceId).where('agent_id', '=', agentId).executeTakeFirst();
  if (Number(result.numDeletedRows) === 0) throw notFound('This agent does not answer that source');
  return { removed: true };
}
