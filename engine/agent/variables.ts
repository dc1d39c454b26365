// Call variables: the 11 standard keys, merging defaults/per-call/standard values, per-call checks, {{ }} templating.
import type { Vars } from './types.js';

/** Keys the platform sets itself at call start; values from elsewhere for them are dropped. */
export const STANDARD_KEYS = [
  'call_id',
  'user_number',
  'agent_number',
  'conversation_type',
  'agent_gender',
  'default_language',
  'supported_languages',
  'current_date',
  'current_time',
  'current_day',
  'timezone',
] as const;

const RESERVED: ReadonlySet<string> = new Set(STANDARD_KEYS);
const KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_KEYS = 100;
const MAX_VALUE_CHARS = 2000;
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

export interface StandardVariablesInput {
  callId: string;
  conversationType: string;
  userNumber?: string;
  agentNumber?: string;
  agentGender?: string;
  defaultLanguage: string;
  supportedLanguages: string[];
  /** IANA zone name, or `{label, offset}` with offset in minutes east of UTC. */
  timezone: string | { label: string; offset: number };
  now?: Date;
}

/** Wall-clock parts of `now` in the zone. */
/** A formatter per IANA zone (making one took about 1 ms of the main thread, at every call start). */
const CLOCKS = new Map<string, Intl.DateTimeFormat>();

function wallClock(now: Date, timezone: StandardVariablesInput['timezone']): { y: number; mo: number; d: number; h: number; mi: number; wd: number } {
  if (typeof timezone !== 'string') {
    const t = new Date(now.getTime() + timezone.offset * 60_000);
    return { y: t.getUTCFullYear(), mo: t.getUTCMonth() + 1, d: t.getUTCDate(), h: t.getUTCHours(), mi: t.getUTCMinutes(), wd: t.getUTCDay() };
  }
  let fmt = CLOCKS.get(timezone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      weekday: 'long',
      hourCycle: 'h23',
    });
    CLOCKS.set(timezone, fmt);
  }
  const parts = Object.fromEntries(fmt.formatToParts(now).map((p) => [p.type, p.value]));
  const num = (k: string) => Number(parts[k]);
  return { y: num('year'), mo: num('month'), d: num('day'), h: num('hour') % 24, mi: num('minute'), wd: WEEKDAYS.indexOf(parts.weekday ?? '') };
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** The 11 standard variables, with date and time rendered at `now` (default: the present) in the agent's timezone. */
export function standardVariables(input: StandardVariablesInput): Vars {
  const c = wallClock(input.now ?? new Date(), input.timezone);
  return {
    call_id: input.callId,
    user_number: input.userNumber ?? '',
    agent_number: input.agentNumber ?? '',
    conversation_type: input.conversationType,
    agent_gender: input.agentGender ?? '',
    default_language: input.defaultLanguage,
    supported_languages: input.supportedLanguages.join(','),
    current_date: `${pad(c.y, 4)}-${pad(c.mo)}-${pad(c.d)}`,
    current_time: `${pad(c.h)}:${pad(c.mi)}`,
    current_day: WEEKDAYS[c.wd] ?? '',
    timezone: typeof input.timezone === 'string' ? input.timezone : input.timezone.label,
  };
}

const withoutReserved = (vars: Vars | undefined): Vars => Object.fromEntries(Object.entries(vars ?? {}).filter(([k]) => !RESERVED.has(k)));

/** The call's variables: agent defaults, overridden by per-call values, overridden by the standard keys. */
export function callVariables(defaults: Vars, perCall: Vars | undefined, standard: Vars): Vars {
  return { ...withoutReserved(defaults), ...withoutReserved(perCall), ...standard };
}

/** Checks caller-supplied variables (flat string/number/boolean values); reserved keys are dropped without an error. */
export function sanitizePerCallVariables(input: unknown): { vars: Vars; errors: string[] } {
  const vars: Vars = {};
  if (input === undefined || input === null) return { vars, errors: [] };
  if (typeof input !== 'object' || Array.isArray(input)) return { vars, errors: ['variables: must be an object of string, number or boolean values'] };
  const entries = Object.entries(input as Record<string, unknown>);
  if (entries.length > MAX_KEYS) return { vars, errors: [`variables: at most ${MAX_KEYS} variables`] };
  const errors: string[] = [];
  for (const [key, value] of entries) {
    if (RESERVED.has(key)) continue;
    if (!KEY.test(key)) {
      const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key;
      errors.push(`variables.${shown}: names start with a letter or _ and hold up to 64 letters, digits or _`);
    } else if (typeof value === 'string') {
      if (value.length > MAX_VALUE_CHARS) errors.push(`variables.${key}: at most ${MAX_VALUE_CHARS} characters`);
      else vars[key] = value;
    } else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') {
      vars[key] = value;
    } else {
      errors.push(`variables.${key}: must be a string, number or boolean (no nesting)`);
    }
  }
  return { vars, errors };
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** Replaces `{{ name }}` placeholders with variable values; unknown names render as empty text. */
export function renderTemplate(text: string, vars: Vars): string {
  return text.replace(PLACEHOLDER, (_, name: string) => (Object.hasOwn(vars, name) ? String(vars[name]) : ''));
}
