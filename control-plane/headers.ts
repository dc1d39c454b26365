// Validation of user-given header maps (webhook delivery headers, SIP trunk headers): names, reserved names, values.

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

/** `{name: value}` checked against `rules`; the map, or undefined after pushing one error per problem. */
export function validateHeaderMap(value: unknown, errors: string[], rules: HeaderRules): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    errors.push(`headers: ${rules.notObject}`);
    return undefined;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  const before = errors.length;
  if (entries.length > rules.maxHeaders) errors.push(`headers: at most ${rules.maxHeaders} headers`);
  const seen = new Set<string>();
  for (const [name, v] of entries) {
    const lower = name.toLowerCase();
    if (!rules.token.test(name)) errors.push(`headers.${name}: ${rules.badName}`);
    else if (rules.reserved.has(lower)) errors.push(`headers.${name}: ${rules.reservedName}`);
    else if (seen.has(lower)) errors.push(`headers.${name}: given twice (header names are case-insensitive)`);
    seen.add(lower);
    if (typeof v !== 'string') errors.push(`headers.${name}: value must be a string`);
    else if (v.length > rules.maxValue) errors.push(`headers.${name}: value longer than ${rules.maxValue} characters`);
    else if (/[\r\n\0]/.test(v)) errors.push(`headers.${name}: value must not contain CR, LF or NUL`);
  }
  return errors.length === before ? (Object.fromEntries(entries) as Record<string, string>) : undefined;
}
