// SIP trunk passwords at rest: sealed in the secret box (the vault's master key), bound to the trunk id.
import type { Db, Tx } from '../store/db.js';
import type { SecretBox } from '../secrets/secret-box.js';

/** Associated data of a trunk's password: never equal to a webhook id (24 hex), so neither kind opens as the other. */
const bound = (trunkId: string): string => `sip-trunk/${trunkId}`;

export const sealTrunkPassword = (box: SecretBox, trunkId: string, password: string): string => box.seal(bound(trunkId), password);

/** A trunk's plaintext digest password (null when it has none), for the SIP leg only: never for a response, a log or an event. */
export async function trunkPassword(q: Db | Tx, box: SecretBox, trunkId: string): Promise<string | null> {
  const row = await q.selectFrom('sip_trunks').select('auth_password').where('id', '=', trunkId).executeTakeFirst();
  if (!row?.auth_password) return null;
  try {
    return box.open(bound(trunkId), row.auth_password);
  } catch {
    throw new Error(`SIP trunk ${trunkId}: password cannot be decrypted (the master key differs from the one it was sealed with)`);
  }
}
