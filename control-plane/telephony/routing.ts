// Inbound call routing for the SIP leg: which organization, agent and trunk a called number (or peer) reaches. No HTTP, no SIP.
import type { Db } from '../store/db.js';
import { telephonyWindow } from './window.js';
import { addressAllowed } from './validation.js';

export { addressAllowed } from './validation.js';
export { trunkPassword } from './trunk-secrets.js';

/** What the SIP leg needs of an inbound trunk to apply its checks (403 addresses/numbers, 401 digest, timers, media). */
export interface InboundTrunk {
  id: string;
  mediaEncryption: 'disable' | 'allow' | 'require';
  noiseSuppression: boolean;
  ringingTimeoutSecs: number;
  maxCallDurationSecs: number;
  /** IPs/CIDRs the carrier may send from; empty: any (check with `addressAllowed`). */
  allowedAddresses: string[];
  /** Caller numbers allowed; empty: any. */
  allowedNumbers: string[];
  /** Digest username the carrier must present (the trunk then has a password: `trunkPassword`); null: no digest. */
  authUsername: string | null;
  /** Extra SIP headers to send on responses. */
  headers: Record<string, string>;
}

export type InboundRoute =
  | {
      kind: 'found';
      orgId: string;
      /** The answering agent; null: nobody answers this source (the SIP leg answers 404). */
      agentId: string | null;
      /** The inbound trunk; null for a platform number (the platform carrier's settings apply). */
      trunk: InboundTrunk | null;
      /** The deprecated kill switch (`false`: refuse with 603); always true once the telephony window has ended. */
      allowInboundCall: boolean;
    }
  | {
      kind: 'none';
      /**
       * No username was given and an extension-only trunk with digest credentials could take this caller (its
       * `allowedAddresses` is empty or admits the source): the caller may be that trunk's carrier, so the SIP leg may
       * challenge (401) and resolve again with the username it presents. Otherwise the answer is 404.
       */
      tryCredentials: boolean;
    };

export interface InboundCall {
  /** E.164 (the SIP leg adds the `+` to a digits-only user part). */
  calledNumber: string;
  /** The peer's IP address. */
  sourceAddress: string;
  /** The digest username the request carried, if any. */
  authUsername?: string;
}

type TrunkRow = {
  id: string;
  org_id: string;
  media_encryption: string;
  noise_suppression: number;
  ringing_timeout_secs: number | null;
  max_call_duration_secs: number | null;
  allowed_addresses: string;
  allowed_numbers: string;
  auth_username: string | null;
  headers: string;
};

const TRUNK_COLUMNS = [
  'sip_trunks.id',
  'sip_trunks.org_id',
  'sip_trunks.media_encryption',
  'sip_trunks.noise_suppression',
  'sip_trunks.ringing_timeout_secs',
  'sip_trunks.max_call_duration_secs',
  'sip_trunks.allowed_addresses',
  'sip_trunks.allowed_numbers',
  'sip_trunks.auth_username',
  'sip_trunks.headers',
] as const;

function inboundTrunk(row: TrunkRow): InboundTrunk {
  return {
    id: row.id,
    mediaEncryption: row.media_encryption as InboundTrunk['mediaEncryption'],
    noiseSuppression: Boolean(row.noise_suppression),
    ringingTimeoutSecs: row.ringing_timeout_secs ?? 30,
    maxCallDurationSecs: row.max_call_duration_secs ?? 3600,
    allowedAddresses: JSON.parse(row.allowed_addresses) as string[],
    allowedNumbers: JSON.parse(row.allowed_numbers) as string[],
    authUsername: row.auth_username,
    headers: JSON.parse(row.headers) as Record<string, string>,
  };
}

/** The first of these sources that an agent answers (in order), with that agent's kill switch. */
async function answerOf(db: Db, sourceIds: string[]): Promise<{ agentId: string | null; allowInboundCall: boolean }> {
  const rows = await db
    .selectFrom('answer_sources')
    .innerJoin('agents', 'agents.id', 'answer_sources.agent_id')
    .select(['answer_sources.source_id', 'agents.id', 'agents.meta'])
    .where('answer_sources.source_id', 'in', sourceIds)
    .execute();
  const windowOpen = (await telephonyWindow(db)).open;
  for (const id of sourceIds) {
    const row = rows.find((r) => r.source_id === id);
    if (!row) continue;
    const meta = JSON.parse(row.meta) as { allowInboundCall?: unknown };
    return { agentId: row.id, allowInboundCall: !windowOpen || meta.allowInboundCall !== false };
  }
  return { agentId: null, allowInboundCall: true };
}

/**
 * Routes an inbound call: the called number against the platform numbers organizations hold, then against inbound
 * trunks' numbers (a number answered on its own wins over its trunk's answer); otherwise an extension-only trunk
 * (no numbers) whose `allowedAddresses` list the peer (preferring one whose `authUsername` matches), or whose
 * `authUsername` is the one presented. With no route, a challenge is offered only when a credentialed extension-only
 * trunk would accept the peer's address. The trunk checks themselves are the SIP leg's.
 */
export async function resolveInbound(db: Db, call: InboundCall): Promise<InboundRoute> {
  const platform = await db.selectFrom('platform_numbers').select(['id', 'org_id']).where('phone_number', '=', call.calledNumber).where('org_id', 'is not', null).executeTakeFirst();
  if (platform) return { kind: 'found', orgId: platform.org_id as string, trunk: null, ...(await answerOf(db, [platform.id])) };

  const numbered = await db
    .selectFrom('sip_trunk_numbers')
    .innerJoin('sip_trunks', 'sip_trunks.id', 'sip_trunk_numbers.trunk_id')
    .select([...TRUNK_COLUMNS, 'sip_trunk_numbers.id as number_id'])
    .where('sip_trunk_numbers.unique_key', '=', `in:${call.calledNumber}`)
    .executeTakeFirst();
  if (numbered) return { kind: 'found', orgId: numbered.org_id, trunk: inboundTrunk(numbered), ...(await answerOf(db, [numbered.number_id, numbered.id])) };

  const extensionOnly = await db
    .selectFrom('sip_trunks')
    .select([...TRUNK_COLUMNS])
    .where('sip_trunks.direction', '=', 'inbound')
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('sip_trunk_numbers').select('sip_trunk_numbers.id').whereRef('sip_trunk_numbers.trunk_id', '=', 'sip_trunks.id'))))
    .orderBy('sip_trunks.created_at')
    .orderBy('sip_trunks.id')
    .execute();
  const addresses = (t: TrunkRow) => JSON.parse(t.allowed_addresses) as string[];
  const byAddress = extensionOnly.filter((t) => addresses(t).length > 0 && addressAllowed(addresses(t), call.sourceAddress));
  const named = (t: TrunkRow) => call.authUsername !== undefined && t.auth_username === call.authUsername;
  // A trunk found by its username alone may still refuse the peer's address: that 403 is the SIP leg's check.
  const match = byAddress.find(named) ?? byAddress[0] ?? extensionOnly.find(named);
  if (match) return { kind: 'found', orgId: match.org_id, trunk: inboundTrunk(match), ...(await answerOf(db, [match.id])) };
  // A challenge only where a credentialed trunk would accept this source: anyone else gets 404, not a 401 to probe.
  const couldTake = (t: TrunkRow) => t.auth_username !== null && (addresses(t).length === 0 || addressAllowed(addresses(t), call.sourceAddress));
  return { kind: 'none', tryCredentials: call.authUsername === undefined && extensionOnly.some(couldTake) };
}
