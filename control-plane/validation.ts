// Request bodies checked by zod schemas (the schemas /openapi.json documents): each issue becomes one of the
// platform's `field.path: message` errors, worded as the hand-written checks these schemas replaced.
import { z } from 'zod';
import { badRequest } from './errors.js';

/**
 * Schema params that word every issue of one field: `message` for a wrong value, `required` (default `message`)
 * when the field is missing.
 */
export const says = (message: string, required = message): { errorMap: z.ZodErrorMap } => ({
  errorMap: (issue) => ({ message: issue.code === 'invalid_type' && issue.received === 'undefined' ? required : message }),
});

/** The message of a body that is not a JSON object. */
export const NOT_AN_OBJECT = 'Request body must be a JSON object';

/** A JSON object body (anything else: `Request body must be a JSON object`); unknown fields pass through. */
export const bodyObject = <T extends z.ZodRawShape>(shape: T) => z.object(shape, says(NOT_AN_OBJECT)).passthrough();

/** A JSON object body whose unknown fields are refused, each as `key: unknown field (expected <the fields>)`. */
export const strictBody = <T extends z.ZodRawShape>(shape: T) => {
  const expected = `unknown field (expected ${Object.keys(shape).join(', ')})`;
  return z.object(shape, { errorMap: (issue) => ({ message: issue.code === 'unrecognized_keys' ? expected : NOT_AN_OBJECT }) }).strict();
};

/** `events[0].agentId`: a path as the platform's messages write it. */
export function pathText(path: readonly (string | number)[]): string {
  return path.reduce<string>((out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${part}` : part), '');
}

/**
 * One `path: message` per issue, a field's repeated messages once, unknown fields first; an issue of the whole
 * body is its message alone.
 */
export function issueMessages(error: z.ZodError, prefix?: string): string[] {
  const out = new Set<string>();
  const issues = [...error.issues.filter((i) => i.code === 'unrecognized_keys'), ...error.issues.filter((i) => i.code !== 'unrecognized_keys')];
  for (const issue of issues) {
    const path = pathText([...(prefix ? [prefix] : []), ...issue.path]);
    if (issue.code === 'unrecognized_keys') {
      const message = issue.message.startsWith('Unrecognized key') ? 'unknown field' : issue.message;
      for (const key of issue.keys) out.add(`${path ? `${path}.` : ''}${key}: ${message}`);
    } else {
      out.add(path ? `${path}: ${issue.message}` : issue.message);
    }
  }
  return [...out];
}

/** One field of an object schema, checked on its own (its errors pushed under its name), for bodies whose other fields are checked in code. */
export function checkField<S extends z.ZodRawShape, K extends keyof S & string>(shape: S, key: K, value: unknown, errors: string[]): { ok: boolean; data: z.output<S[K]> | undefined } {
  const result = (shape[key] as z.ZodTypeAny).safeParse(value);
  if (result.success) return { ok: true, data: result.data as z.output<S[K]> };
  errors.push(...issueMessages(result.error, key));
  return { ok: false, data: undefined };
}

/** The errors with every one about `field` (or its items) replaced by one `field: message`, for routes that have always answered so. */
export function collapseField(errors: string[], field: string, message: string): string[] {
  const about = (e: string) => e.startsWith(`${field}: `) || e.startsWith(`${field}[`) || e.startsWith(`${field}.`);
  const at = errors.findIndex(about);
  return at < 0 ? errors : [...errors.slice(0, at), `${field}: ${message}`, ...errors.slice(at + 1).filter((e) => !about(e))];
}

/** The parsed value, or the errors naming each bad field. */
export function checkBody<T extends z.ZodTypeAny>(schema: T, body: unknown): { data: z.output<T> | null; errors: string[] } {
  const result = schema.safeParse(body);
  return result.success ? { data: result.data as z.output<T>, errors: [] } : { data: null, errors: issueMessages(result.error) };
}

/** The parsed value; a 400 naming each bad field otherwise. */
export function parseBody<T extends z.ZodTypeAny>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body);
  if (!result.success) throw badRequest(issueMessages(result.error));
  return result.data as z.output<T>;
}
