// What uses a trunk, a trunk's numbers or a platform number (answers, bridge caller IDs, transfer sources), worded for 409/400 messages.
import type { Db, Tx } from '../store/db.js';

type Q = Db | Tx;

const agentRef = (id: string, name: string | null): string => `agent ${id}${name ? ` ("${name}")` : ''}`;

async function answersOf(q: Q, sourceIds: string[], what: (sourceId: string) => string): Promise<string[]> {
  if (!sourceIds.length) return [];
  const rows = await q
    .selectFrom('answer_sources')
    .leftJoin('agents', 'agents.id', 'answer_sources.agent_id')
    .select(['answer_sources.source_id', 'answer_sources.agent_id', 'agents.name'])
    .where('answer_sources.source_id', 'in', sourceIds)
    .orderBy('answer_sources.created_at')
    .execute();
  return rows.map((r) => `${agentRef(r.agent_id, r.name)} answers ${what(r.source_id)}`);
}

/** Bridge caller IDs and transfer sources on a platform number or trunk (optionally only those numbers). */
async function dialersOf(q: Q, column: 'platform_number_id' | 'trunk_id', id: string, numbers?: string[]): Promise<string[]> {
  if (numbers && !numbers.length) return [];
  let callers = q
    .selectFrom('caller_ids')
    .leftJoin('agents', 'agents.id', 'caller_ids.agent_id')
    .select(['caller_ids.agent_id', 'caller_ids.phone_number', 'agents.name'])
    .where(`caller_ids.${column}`, '=', id);
  let transfers = q
    .selectFrom('transfer_sources')
    .leftJoin('agents', 'agents.id', 'transfer_sources.agent_id')
    .select(['transfer_sources.agent_id', 'transfer_sources.phone_number', 'agents.name'])
    .where(`transfer_sources.${column}`, '=', id);
  if (numbers) {
    callers = callers.where('caller_ids.phone_number', 'in', numbers);
    transfers = transfers.where('transfer_sources.phone_number', 'in', numbers);
  }
  return [
    ...(await callers.orderBy('caller_ids.created_at').execute()).map((r) => `${r.phone_number} is a caller ID of ${agentRef(r.agent_id, r.name)}`),
    ...(await transfers.orderBy('transfer_sources.agent_id').execute()).map((r) => `${r.phone_number} is the transfer source of ${agentRef(r.agent_id, r.name)}`),
  ];
}

/** Who answers on or dials from a platform number. */
export async function platformNumberUsage(q: Q, numberId: string): Promise<string[]> {
  return [...(await answersOf(q, [numberId], () => 'it')), ...(await dialersOf(q, 'platform_number_id', numberId))];
}

/**
 * What uses a trunk: an agent answering it or one of its numbers (inbound); a bridge caller ID or a transfer source
 * on its numbers (outbound). `numbers` narrows the check to those numbers (numbers a PATCH removes).
 */
export async function trunkUsage(q: Q, trunk: { id: string; direction: string }, numbers?: string[]): Promise<string[]> {
  if (trunk.direction === 'outbound') return [...(await dialersOf(q, 'trunk_id', trunk.id, numbers)), ...(await outboundWorkOn(q, trunk.id, numbers))];
  let rows = q.selectFrom('sip_trunk_numbers').select(['id', 'phone_number']).where('trunk_id', '=', trunk.id);
  if (numbers) rows = numbers.length ? rows.where('phone_number', 'in', numbers) : rows.where('id', '=', '');
  const byId = new Map((await rows.execute()).map((r) => [r.id, r.phone_number]));
  const sources = numbers ? [...byId.keys()] : [trunk.id, ...byId.keys()];
  return answersOf(q, sources, (sourceId) => (sourceId === trunk.id ? 'the trunk' : (byId.get(sourceId) as string)));
}

/** Calls waiting for or being dialed through an outbound trunk, and campaigns not yet finished that dial from its numbers. */
async function outboundWorkOn(q: Q, trunkId: string, numbers?: string[]): Promise<string[]> {
  let calls = q.selectFrom('outbound_calls').select((eb) => eb.fn.countAll().as('n')).where('trunk_id', '=', trunkId).where('state', '!=', 'done');
  if (numbers) calls = numbers.length ? calls.where('from_number', 'in', numbers) : calls.where('call_id', '=', '');
  const waiting = Number((await calls.executeTakeFirstOrThrow()).n);
  const own = numbers ?? (await q.selectFrom('sip_trunk_numbers').select('phone_number').where('trunk_id', '=', trunkId).execute()).map((r) => r.phone_number);
  const campaigns = own.length
    ? await q.selectFrom('campaigns').select(['id', 'name', 'from_numbers']).where('status', 'not in', ['completed', 'failed']).where((eb) => eb.or(own.map((n) => eb('from_numbers', 'like', `%"${n}"%`)))).orderBy('created_at').execute()
    : [];
  return [
    ...(waiting ? [`${waiting} outbound call${waiting === 1 ? ' is' : 's are'} queued or being dialed through it`] : []),
    ...campaigns.map((c) => `campaign ${c.id} ("${c.name}") dials from ${(JSON.parse(c.from_numbers) as string[]).filter((n) => own.includes(n)).join(', ')}`),
  ];
}
