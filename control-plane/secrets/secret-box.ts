// Secrets we keep to use ourselves, at rest: webhook signing secrets (bound to the webhook id) and SIP trunk digest
// passwords (bound to `sip-trunk/<trunk id>`: control-plane/telephony/trunk-secrets.ts). AES-256-GCM under the vault's
// master key; what a value is bound to is its associated data, so a value moved to another row does not open. (The
// secrets vault, control-plane/secrets/vault.ts, holds the customer's named secrets for tools and the pre-call API.)
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1';
/**
 * Prefix of the associated data. It says `webhook` because webhook secrets were sealed first; trunk passwords sealed
 * since carry it too (behind their `sip-trunk/` binding), so it stays: changing it would leave every stored value unopenable.
 */
const AAD_PREFIX = 'webhook\0';

export class SecretBox {
  /** `key`: the 32-byte master key (loadMasterKey from the vault). */
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the secret box needs a 32-byte key');
  }

  /** A fresh signing secret: `whsec_` + 32 random bytes in hex. */
  static generate(): string {
    return `whsec_${randomBytes(32).toString('hex')}`;
  }

  /** `v1.<iv>.<tag>.<ciphertext>` (base64url), bound to `boundTo` (a webhook id, `sip-trunk/<id>`). */
  seal(boundTo: string, secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(`${AAD_PREFIX}${boundTo}`, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  open(boundTo: string, sealed: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw new Error(`${boundTo}: the sealed secret is not in a known format`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
      decipher.setAAD(Buffer.from(`${AAD_PREFIX}${boundTo}`, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new Error(`${boundTo}: the sealed secret cannot be decrypted (the master key differs from the one it was sealed with)`);
    }
  }
}
