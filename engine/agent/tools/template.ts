// `{{name}}` placeholders of api_call tools: in plain text (optionally encoded) and in JSON text with JSON-safe escaping.

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const PLACEHOLDER_AT = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/y;

export type Values = Record<string, unknown>;

const lookup = (values: Values, name: string): unknown => (Object.hasOwn(values, name) ? values[name] : undefined);

/** A value as text: strings as they are, objects as JSON, absent values as empty text. */
export function asText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Fills placeholders in plain text; `encode` maps each value (e.g. encodeURIComponent inside a URL). */
export function fillText(text: string, values: Values, encode: (s: string) => string = (s) => s): string {
  return text.replace(PLACEHOLDER, (_, name: string) => encode(asText(lookup(values, name))));
}

/**
 * Fills placeholders in JSON text. Inside a JSON string a value is inserted escaped (quotes, backslashes and
 * control characters cannot end the string); a placeholder standing as a whole value becomes that value's JSON
 * (a string is quoted, a number or boolean stays one, an absent value is `null`). The result is always valid JSON
 * when the template was (which the definition's validation checks).
 */
export function fillJson(text: string, values: Values): string {
  let out = '';
  let inString = false;
  let escaped = false;
  let i = 0;
  while (i < text.length) {
    if (!escaped && text.startsWith('{{', i)) {
      PLACEHOLDER_AT.lastIndex = i;
      const m = PLACEHOLDER_AT.exec(text);
      if (m) {
        const value = lookup(values, m[1] as string);
        out += inString ? JSON.stringify(asText(value)).slice(1, -1) : value === undefined ? 'null' : (JSON.stringify(value) ?? 'null');
        i += m[0].length;
        continue;
      }
    }
    const ch = text[i] as string;
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
    }
    out += ch;
    i++;
  }
  return out;
}
