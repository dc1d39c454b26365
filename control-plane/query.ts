// Query-string parsing shared by list routes.
import { badRequest } from './errors.js';

/** An integer query parameter in [min, max]; `dflt` when absent; a 400 naming it otherwise. */
export function intParam(query: URLSearchParams, name: string, dflt: number, min: number, max: number): number {
  const raw = query.get(name);
  if (raw === null) return dflt;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(n) || n < min || n > max) throw badRequest(`${name}: must be an integer from ${min} to ${max}`);
  return n;
}
