// Outbound tool credentials: secret names resolved at call time into a header or query parameter, and scrubbing of their values.
import type { ToolAuth } from './types.js';

export type SecretLookup = (name: string) => Promise<string | undefined>;

export interface ResolvedAuth {
  header?: [name: string, value: string];
  query?: [name: string, value: string];
  /** Every form a secret could be echoed back in (raw, encoded, the Basic credential): scrubbed from results. */
  sensitive: string[];
}

export class CredentialError extends Error {}

async function read(lookup: SecretLookup, name: string): Promise<string> {
  let value: string | undefined;
  try {
    value = await lookup(name);
  } catch {
    throw new CredentialError(`secret "${name}" could not be read from the organization's secrets vault`);
  }
  if (value === undefined || value === '') throw new CredentialError(`secret "${name}" is not in the organization's secrets vault`);
  return value;
}

/** Every text form of a secret value a server might echo. */
function forms(value: string): string[] {
  return [value, encodeURIComponent(value), new URLSearchParams({ v: value }).toString().slice(2), JSON.stringify(value).slice(1, -1)];
}

export async function resolveAuth(auth: ToolAuth | undefined, lookup: SecretLookup): Promise<ResolvedAuth> {
  switch (auth?.type) {
    case undefined:
    case 'none':
      return { sensitive: [] };
    case 'bearer': {
      const token = await read(lookup, auth.token);
      return { header: ['Authorization', `Bearer ${token}`], sensitive: forms(token) };
    }
    case 'api_key': {
      const value = await read(lookup, auth.value);
      return { ...(auth.location === 'query' ? { query: [auth.name, value] } : { header: [auth.name, value] }), sensitive: forms(value) } as ResolvedAuth;
    }
    case 'basic': {
      // The spec's table: both the username and the password are secret names.
      const username = await read(lookup, auth.username);
      const password = await read(lookup, auth.password);
      const credential = Buffer.from(`${username}:${password}`, 'utf8').toString('base64');
      return { header: ['Authorization', `Basic ${credential}`], sensitive: [...forms(username), ...forms(password), credential] };
    }
  }
}

/** Replaces every sensitive string in a JSON-like value (strings, keys, nested arrays and objects) with `[redacted]`. */
export function scrub<T>(value: T, sensitive: string[]): T {
  const needles = [...new Set(sensitive.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  if (!needles.length) return value;
  const text = (s: string): string => needles.reduce((acc, n) => acc.split(n).join('[redacted]'), s);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return text(v);
    if (typeof v === 'number' && needles.some((n) => String(v).includes(n))) return '[redacted]';
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [text(k), walk(x)]));
    return v;
  };
  return walk(value) as T;
}
