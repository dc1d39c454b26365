// Recording objects: the store interface, HMAC-signed expiring download URLs, and the local files store under the data dir.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

export type Channel = 'mono' | 'dual';
export const CHANNELS: readonly Channel[] = ['mono', 'dual'];

/** Object keys are `<orgId>/<callId>/<channel>.wav`; the same string, prefixed, is the stable `recordingUrl`. */
export const recordingKey = (orgId: string, callId: string, channel: Channel): string => `${orgId}/${callId}/${channel}.wav`;
export const recordingIdentifier = (key: string): string => `parley-recording://${key}`;

/** Throws on anything but a well-formed recording key (it also names a file: no `..`, no other characters). */
export function checkKey(key: string): string {
  if (!/^[A-Za-z0-9_-]+\/CALL-\d+-[0-9a-f]+\/(mono|dual)\.wav$/.test(key)) throw new Error(`bad object key ${key}`);
  return key;
}

/** Where recordings are kept (PARLEY_RECORDING_STORE): this server's data dir, or the store every server shares. */
export type RecordingStoreKind = 'files' | 'database';
export const RECORDING_STORES: readonly RecordingStoreKind[] = ['files', 'database'];

export interface ObjectStore {
  readonly kind: RecordingStoreKind;
  /** Stores the whole object; a reader never sees half of it. Writing a key again replaces it. */
  put(key: string, bytes: Buffer): Promise<void>;
  /** The object, or null when there is none. */
  get(key: string): Promise<Buffer | null>;
  /** Query parameters of a download URL for `key` valid until `expiresAt` (epoch seconds). */
  sign(key: string, expiresAt: number): { expires: string; signature: string };
  /** True when the signature is ours for this key and has not expired. */
  verify(key: string, expires: string | null, signature: string | null, now?: number): boolean;
}

/** Download-URL signing shared by both stores: HMAC-SHA256 with the store's `recording_url_signing_key`. */
export abstract class SignedObjects {
  constructor(private readonly secret: Buffer) {}

  sign(key: string, expiresAt: number): { expires: string; signature: string } {
    return { expires: String(expiresAt), signature: this.mac(key, expiresAt) };
  }

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

/** Objects as files under `root` (`<data dir>/recordings`): only the server that wrote one can serve it. */
export class FileObjectStore extends SignedObjects implements ObjectStore {
  readonly kind = 'files' as const;

  constructor(
    private readonly root: string,
    secret: Buffer,
  ) {
    super(secret);
  }

  private file(key: string): string {
    return path.join(this.root, checkKey(key));
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
}

/** The files store under the name it had before there were two (`new ObjectStore(root, secret)`). */
export const ObjectStore = FileObjectStore;
