// Local object storage for recordings under the data directory, with HMAC-signed, expiring download URLs.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

export type Channel = 'mono' | 'dual';
export const CHANNELS: readonly Channel[] = ['mono', 'dual'];

/** Object keys are `<orgId>/<callId>/<channel>.wav`; the same string, prefixed, is the stable `recordingUrl`. */
export const recordingKey = (orgId: string, callId: string, channel: Channel): string => `${orgId}/${callId}/${channel}.wav`;
export const recordingIdentifier = (key: string): string => `parley-recording://${key}`;

export class ObjectStore {
  constructor(
    private readonly root: string,
    private readonly secret: Buffer,
  ) {}

  private file(key: string): string {
    if (!/^[A-Za-z0-9_-]+\/CALL-\d+-[0-9a-f]+\/(mono|dual)\.wav$/.test(key)) throw new Error(`bad object key ${key}`);
    return path.join(this.root, key);
  }

  /** Writes atomically (temp file, then rename), so a reader never sees half a file. */
  async put(key: string, bytes: Buffer): Promise<void> {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(`${file}.tmp`, bytes, { mode: 0o600 });
    await rename(`${file}.tmp`, file);
  }

  async get(key: string): Promise<Buffer | null> {
    return readFile(this.file(key)).catch(() => null);
  }

  /** Query parameters of a download URL for `key` valid until `expiresAt` (epoch seconds). */
  sign(key: string, expiresAt: number): { expires: string; signature: string } {
    return { expires: String(expiresAt), signature: this.mac(key, expiresAt) };
  }

  /** True when the signature is ours for this key and has not expired. */
  verify(key: string, expires: string | null, signature: string | null, now = Date.now()): boolean {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires)) return false;
    const exp = Number(expires);
    if (exp * 1000 < now) return false;
    const expected = Buffer.from(this.mac(key, exp), 'hex');
    const given = Buffer.from(signature, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private mac(key: string, expiresAt: number): string {
    return createHmac('sha256', this.secret).update(`${key}\n${expiresAt}`).digest('hex');
  }
}
