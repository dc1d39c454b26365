// Per-call variables (register-call, test calls): flat string/number/boolean values, checked keys, reserved keys stripped.
import { z } from 'zod';

export type CallVariables = Record<string, string | number | boolean>;

/** Keys the platform sets itself at call start; a caller's values for them are dropped without an error. */
export const RESERVED_VARIABLES: ReadonlySet<string> = new Set([
  'call_id',
  'conversation_type',
  'agent_number',
  'user_number',
  'current_date',
  'current_time',
  'current_day',
  'agent_gender',
  'default_language',
  'supported_languages',
  'timezone',
]);

const KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_KEYS = 100;
const MAX_STRING = 4000;

/**
 * The body field's schema: an object. Its keys and values are checked by parseCallVariables after it (flat values,
 * key rules, reserved keys dropped), the one check shared with the WebSocket, campaigns and audience files.
 */
export const callVariablesField = z
  .record(z.unknown(), { errorMap: () => ({ message: 'must be an object of string, number or boolean values' }) })
  .optional()
  .describe(`Flat string, number or boolean values: at most ${MAX_KEYS}, names of up to 64 letters, digits or _ (not starting with a digit), strings of at most ${MAX_STRING} characters; the platform's own names are dropped.`);

/** Validates `raw` (absent means none); `field` names the body field in error messages. */
export function parseCallVariables(raw: unknown, field = 'variables'): { variables: CallVariables; errors: string[] } {
  const variables: CallVariables = {};
  if (raw === undefined) return { variables, errors: [] };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { variables, errors: [`${field}: must be an object of string, number or boolean values`] };
  }
  const errors: string[] = [];
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > MAX_KEYS) return { variables, errors: [`${field}: at most ${MAX_KEYS} variables`] };
  for (const [key, value] of entries) {
    if (RESERVED_VARIABLES.has(key)) continue;
    const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key;
    if (!KEY.test(key)) {
      errors.push(`${field}.${shown}: variable names start with a letter or _ and hold up to 64 letters, digits or _`);
      continue;
    }
    if (typeof value === 'string') {
      if (value.length > MAX_STRING) errors.push(`${field}.${key}: strings are at most ${MAX_STRING} characters`);
      else variables[key] = value;
    } else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') {
      variables[key] = value;
    } else {
      errors.push(`${field}.${key}: must be a string, number or boolean (no nesting)`);
    }
  }
  return { variables, errors };
}
