// Webhook signing secrets at rest: AES-256-GCM under the vault's master key, each bound to its webhook id.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1';

export class WebhookSecretBox {
  /** `key`: the 32-byte master key (loadMasterKey from the vault). */
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('webhook secret box needs a 32-byte key');
  }

  /** A fresh signing secret: `whsec_` + 32 random bytes in hex. */
  static generate(): string {
    return `whsec_${randomBytes(32).toString('hex')}`;
  }

  /** `v1.<iv>.<tag>.<ciphertext>` (base64url); the webhook id is associated data, so a moved value does not open. */
  seal(webhookId: string, secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(`webhook\0${webhookId}`, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  open(webhookId: string, sealed: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw new Error(`webhook ${webhookId}: signing secret is not in a known format`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
      decipher.setAAD(Buffer.from(`webhook\0${webhookId}`, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new Error(`webhook ${webhookId}: signing secret cannot be decrypted (the master key differs from the one it was sealed with)`);
    }
  }
}
