// Validation of user-given header maps (webhook delivery headers, SIP trunk headers): names, reserved names, values.
import { z } from 'zod';
import { issueMessages, says } from './validation.js';

export interface HeaderRules {
  /** Allowed name characters (RFC 7230 or RFC 3261 token). */
  token: RegExp;
  /** Lower-case names the platform writes itself. */
  reserved: ReadonlySet<string>;
  maxHeaders: number;
  maxValue: number;
  /** Error texts: the map is not an object; a name is not a token; a name is reserved. */
  notObject: string;
  badName: string;
  reservedName: string;
}

/**
 * The schema of a header map: an object of names to values. The rules on names and values (tokens, reserved and
 * repeated names, count, value length and characters) are one refinement, so every problem is named in one answer.
 */
export function headerMapSchema(rules: HeaderRules) {
  return z
    .record(z.unknown(), says(rules.notObject))
    .superRefine((map, ctx) => {
      const entries = Object.entries(map);
      if (entries.length > rules.maxHeaders) ctx.addIssue({ code: 'custom', message: `at most ${rules.maxHeaders} headers` });
      const seen = new Set<string>();
      for (const [name, v] of entries) {
        const issue = (message: string) => ctx.addIssue({ code: 'custom', path: [name], message });
        const lower = name.toLowerCase();
        if (!rules.token.test(name)) issue(rules.badName);
        else if (rules.reserved.has(lower)) issue(rules.reservedName);
        else if (seen.has(lower)) issue('given twice (header names are case-insensitive)');
        seen.add(lower);
        if (typeof v !== 'string') issue('value must be a string');
        else if (v.length > rules.maxValue) issue(`value longer than ${rules.maxValue} characters`);
        else if (/[\r\n\0]/.test(v)) issue('value must not contain CR, LF or NUL');
      }
    })
    .describe(
      `Header name to string value: at most ${rules.maxHeaders} headers, token names (case-insensitively unique), not ${[...rules.reserved].join(', ')}; ` +
        `values of at most ${rules.maxValue} characters without CR, LF or NUL.`,
    );
}

/** `{name: value}` checked by its schema; the map, or undefined after pushing one error per problem. */
export function validateHeaderMap(value: unknown, errors: string[], schema: ReturnType<typeof headerMapSchema>): Record<string, string> | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data as Record<string, string>;
  errors.push(...issueMessages(result.error, 'headers'));
  return undefined;
}
