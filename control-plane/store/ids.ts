// Identifier formats: 24-hex object ids (4-byte time + 8 random bytes, like the ObjectIds clients expect).
import { randomBytes } from 'node:crypto';

export function newId(): string {
  const time = Math.floor(Date.now() / 1000).toString(16).padStart(8, '0');
  return time + randomBytes(8).toString('hex');
}

export const isObjectId = (value: string): boolean => /^[a-f\d]{24}$/.test(value);

export const nowIso = (): string => new Date().toISOString();
