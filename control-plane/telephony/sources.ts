// Answer sources in the store: what a source id names, who answers it, and the numbers an agent answers on.
import type { Db, Tx } from '../store/db.js';
import { isObjectId, nowIso } from '../store/ids.js';
import { badRequest, conflict, notFound } from '../errors.js';

type Q = Db | Tx;
export const SOURCE_KINDS = ['phoneNumber', 'sipTrunk'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

export interface Source {
  kind: SourceKind;
  id: string;
  /** The E.164 numbers the source brings (an extension-only trunk has none). */
  numbers: string[];
}

export interface AgentRef {
  _id: string;
  name: string;
}

const sourceNotFound = (kind: SourceKind) =>
  notFound(kind === 'phoneNumber' ? 'Answer source not found: no number with this product id in your organization' : 'Answer source not found: no inbound SIP trunk with this id in your organization');

/**
 * What a source id names in the organization: a platform number it holds or a number of one of its inbound trunks
 * (`phoneNumber`, by product id), or one of its inbound trunks (`sipTrunk`); 404 otherwise.
 */
export async function resolveSource(q: Q, orgId: string, kind: SourceKind, sourceId: string): Promise<Source> {
  if (!isObjectId(sourceId)) throw sourceNotFound(kind);
  if (kind === 'phoneNumber') {
    const platform = await q.selectFrom('platform_numbers').select('phone_number').where('id', '=', sourceId).where('org_id', '=', orgId).executeTakeFirst();
    if (platform) return { kind, id: sourceId, numbers: [platform.phone_number] };
    const custom = await q
      .selectFrom('sip_trunk_numbers')
      .select('phone_number')
      .where('id', '=', sourceId)
      .where('org_id', '=', orgId)
      .where('direction', '=', 'inbound')
      .executeTakeFirst();
    if (custom) return { kind, id: sourceId, numbers: [custom.phone_number] };
    throw sourceNotFound(kind);
  }
  const trunk = await q.selectFrom('sip_trunks').select('direction').where('id', '=', sourceId).where('org_id', '=', orgId).executeTakeFirst();
  if (!trunk) throw sourceNotFound(kind);
  if (trunk.direction !== 'inbound') throw badRequest('sourceId: names an outbound trunk; only inbound trunks (and numbers) can be answered');
  const numbers = await q.selectFrom('sip_trunk_numbers').select('phone_number').where('trunk_id', '=', sourceId).orderBy('position').execute();
  return { kind, id: sourceId, numbers: numbers.map((n) => n.phone_number) };
}

/** The agent answering each of these sources (absent: nobody). */
export async function answeringAgents(q: Q, sourceIds: string[]): Promise<Map<string, AgentRef>> {
  if (!sourceIds.length) return new Map();
  const rows = await q
    .selectFrom('answer_sources')
    .innerJoin('agents', 'agents.id', 'answer_sources.agent_id')
    .select(['answer_sources.source_id', 'agents.id', 'agents.name'])
    .where('answer_sources.source_id', 'in', sourceIds)
    .execute();
  return new Map(rows.map((r) => [r.source_id, { _id: r.id, name: r.name }]));
}

export interface AnswerRecord {
  agentId: string;
  sourceKind: SourceKind;
  sourceId: string;
  phoneNumbers: string[];
  createdAt: string;
}

/** An agent's answer sources, oldest first, each with the numbers it brings. */
export async function agentAnswers(q: Q, agentId: string): Promise<AnswerRecord[]> {
  const rows = await q.selectFrom('answer_sources').selectAll().where('agent_id', '=', agentId).orderBy('created_at').orderBy('source_id').execute();
  const out: AnswerRecord[] = [];
  for (const r of rows) {
    const source = await resolveSource(q, r.org_id, r.source_kind as SourceKind, r.source_id).catch(() => ({ numbers: [] as string[] }));
    out.push({ agentId, sourceKind: r.source_kind as SourceKind, sourceId: r.source_id, phoneNumbers: source.numbers, createdAt: r.created_at });
  }
  return out;
}

/**
 * `phoneNumber` of `GET /agent/{id}`: the E.164 numbers calls to which reach this agent. A trunk's number answered
 * on its own by another agent goes to that agent (the number is the more specific source), not to the trunk's.
 */
export async function agentPhoneNumbers(q: Q, agentId: string): Promise<string[]> {
  const answers = await agentAnswers(q, agentId);
  const trunkIds = answers.filter((a) => a.sourceKind === 'sipTrunk').map((a) => a.sourceId);
  const claimed = new Set<string>();
  if (trunkIds.length) {
    const rows = await q
      .selectFrom('sip_trunk_numbers')
      .innerJoin('answer_sources', 'answer_sources.source_id', 'sip_trunk_numbers.id')
      .select('sip_trunk_numbers.phone_number')
      .where('sip_trunk_numbers.trunk_id', 'in', trunkIds)
      .where('answer_sources.agent_id', '!=', agentId)
      .execute();
    for (const r of rows) claimed.add(r.phone_number);
  }
  const numbers = new Set<string>();
  for (const a of answers) for (const n of a.phoneNumbers) if (a.sourceKind === 'phoneNumber' || !claimed.has(n)) numbers.add(n);
  return [...numbers];
}

export const alreadyAnswered = (sourceId: string, agentId: string) =>
  conflict('source_already_answered', `Source ${sourceId} is already answered by agent ${agentId}; remove that answer first (DELETE /agent/${agentId}/answers/${sourceId})`);

/** Inserts the answer row inside `tx`; 409 naming the agent that already answers the source. Idempotent for the same agent. */
export async function insertAnswer(tx: Tx, orgId: string, agentId: string, kind: SourceKind, sourceId: string): Promise<boolean> {
  const current = await tx.selectFrom('answer_sources').select('agent_id').where('source_id', '=', sourceId).executeTakeFirst();
  if (current) {
    if (current.agent_id !== agentId) throw alreadyAnswered(sourceId, current.agent_id);
    return false;
  }
  await tx.insertInto('answer_sources').values({ source_id: sourceId, source_kind: kind, org_id: orgId, agent_id: agentId, created_at: nowIso() }).execute();
  return true;
}
