// Organization secrets vault: AES-256-GCM at rest under a master key (PARLEY_SECRET_KEY or <dataDir>/secret.key).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isUniqueViolation, type Db } from '../store/db.js';
import { newId, nowIso } from '../store/ids.js';
import { z } from 'zod';
import { conflict, notFound } from '../errors.js';
import { bodyObject, parseBody, says } from '../validation.js';

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;
const MAX_VALUE_BYTES = 8 * 1024;
export const KEY_FILE = 'secret.key';

export interface SecretInfo {
  name: string;
  createdAt: string;
  updatedAt: string;
}

/** Parses a master key: 64 hex characters, or base64 (standard or url-safe) of exactly 32 bytes; null otherwise. */
export function parseMasterKey(text: string): Buffer | null {
  const value = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(value)) {
    const key = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (key.length === 32 && key.toString('base64').replace(/=+$/, '') === value.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '')) return key;
  }
  return null;
}

/** The env key when given (a bad one is a start-up error naming the variable), else the data dir's key file (created once, 0600). */
export function loadMasterKey(dataDir: string, envKey?: string): Buffer {
  if (envKey !== undefined && envKey !== '') {
    const key = parseMasterKey(envKey);
    if (!key) throw new Error('PARLEY_SECRET_KEY must be 64 hex characters or the base64 of 32 bytes (for example: openssl rand -hex 32)');
    return key;
  }
  const file = path.join(dataDir, KEY_FILE);
  mkdirSync(dataDir, { recursive: true });
  try {
    // 'wx' fails when the file exists, so two processes starting together cannot both write a key.
    writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
    chmodSync(file, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const key = parseMasterKey(readFileSync(file, 'utf8'));
  if (!key) throw new Error(`${file} does not hold a valid secrets master key (64 hex characters); restore it or set PARLEY_SECRET_KEY`);
  return key;
}

const VALUE_MESSAGE = `required, a non-empty string of at most ${MAX_VALUE_BYTES} bytes`;
const secretName = z.string(says('required, 1-100 characters of letters, digits, _ . or -')).regex(NAME);
const secretValue = z
  .string(says(VALUE_MESSAGE))
  .min(1)
  .max(MAX_VALUE_BYTES)
  .refine((v) => Buffer.byteLength(v, 'utf8') <= MAX_VALUE_BYTES, VALUE_MESSAGE)
  .describe(`At most ${MAX_VALUE_BYTES} bytes of UTF-8; never returned.`);

/** `POST /secret`. */
export const createSecretBody = bodyObject({ name: secretName, value: secretValue });
/** `PUT /secret/{name}`: the new value. */
export const rotateSecretBody = bodyObject({ value: secretValue });

/** A name from the path. */
function validateName(name: unknown): string {
  return parseBody(z.object({ name: secretName }), { name }).name;
}

export class SecretVault {
  private constructor(
    private readonly db: Db,
    private readonly key: Buffer,
  ) {}

  static async open(db: Db, options: { dataDir: string; envKey?: string }): Promise<SecretVault> {
    return new SecretVault(db, loadMasterKey(options.dataDir, options.envKey));
  }

  /** The organization and name are bound in as associated data: a ciphertext moved to another row does not decrypt. */
  private seal(orgId: string, name: string, value: string): { ciphertext: string; iv: string; tag: string } {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(`${orgId}\0${name}`, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return { ciphertext: ciphertext.toString('base64'), iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
  }

  async create(orgId: string, name: unknown, value: unknown): Promise<{ name: string; createdAt: string }> {
    const { name: n, value: v } = parseBody(createSecretBody, { name, value });
    const now = nowIso();
    const exists = () => conflict('secret_name_exists', `A secret named "${n}" already exists; PUT /secret/${n} rotates it`);
    const found = await this.db.selectFrom('secrets').select('id').where('org_id', '=', orgId).where('name', '=', n).executeTakeFirst();
    if (found) throw exists();
    try {
      await this.db.insertInto('secrets').values({ id: newId(), org_id: orgId, name: n, ...this.seal(orgId, n, v), created_at: now, updated_at: now }).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw exists();
      throw err;
    }
    return { name: n, createdAt: now };
  }

  /** Rotates: a new value (and IV) under an existing name. */
  async put(orgId: string, name: unknown, value: unknown): Promise<{ name: string; updatedAt: string }> {
    const n = validateName(name);
    const { value: v } = parseBody(rotateSecretBody, { value });
    const now = nowIso();
    const result = await this.db.updateTable('secrets').set({ ...this.seal(orgId, n, v), updated_at: now }).where('org_id', '=', orgId).where('name', '=', n).executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) throw notFound('Secret not found');
    return { name: n, updatedAt: now };
  }

  async list(orgId: string): Promise<SecretInfo[]> {
    const rows = await this.db.selectFrom('secrets').select(['name', 'created_at', 'updated_at']).where('org_id', '=', orgId).orderBy('name').execute();
    return rows.map((r) => ({ name: r.name, createdAt: r.created_at, updatedAt: r.updated_at }));
  }

  async delete(orgId: string, name: unknown): Promise<void> {
    const n = validateName(name);
    const result = await this.db.deleteFrom('secrets').where('org_id', '=', orgId).where('name', '=', n).executeTakeFirst();
    if (Number(result.numDeletedRows) === 0) throw notFound('Secret not found');
  }

  /** The plaintext, for the runtime at the moment it is needed; never for an API response or a log line. */
  async get(orgId: string, name: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('secrets').select(['ciphertext', 'iv', 'tag']).where('org_id', '=', orgId).where('name', '=', name).executeTakeFirst();
    if (!row) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(row.iv, 'base64'), { authTagLength: 16 });
      decipher.setAAD(Buffer.from(`${orgId}\0${name}`, 'utf8'));
      decipher.setAuthTag(Buffer.from(row.tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(row.ciphertext, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw new Error(`secret "${name}" cannot be decrypted: the master key differs from the one it was stored with`);
    }
  }
}
