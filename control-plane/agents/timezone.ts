// Agent timezone: stored as an IANA name, accepted as that name or the wire's `{label, offset}`, read as `{label, offset}` now.
import { z } from 'zod';

export interface TimezoneView {
  /** The IANA name, e.g. `America/New_York`. */
  label: string;
  /** Minutes from UTC at the time of the read (daylight saving time included). */
  offset: number;
}

/** What an agent with no timezone reads as. */
export const DEFAULT_TIMEZONE = 'UTC';

/** The hosted platform's display prefix, e.g. `(GMT+5:30) Asia/Kolkata` or its DTO default `(GMT+0:00) UTC`. */
const DISPLAY_PREFIX = /^\(\s*(?:GMT|UTC)\s*(?:[+\-\u2212]\s*\d{1,2}(?::?\d{2})?)?\s*\)\s*/i;

/**
 * IANA zone names without an area prefix (tzdata's `etcetera`, `northamerica`, `europe` and `backward` files). ICU also
 * takes Java-era abbreviations (`IST` is Asia/Kolkata, `BST` Asia/Dhaka): those are not IANA names and are refused.
 */
const SINGLE_NAMES = new Map(
  [
    'UTC', 'UCT', 'GMT', 'GMT0', 'GMT+0', 'GMT-0', 'Greenwich', 'Universal', 'Zulu',
    'EST', 'MST', 'HST', 'EST5EDT', 'CST6CDT', 'MST7MDT', 'PST8PDT', 'CET', 'MET', 'EET', 'WET',
    'Cuba', 'Egypt', 'Eire', 'GB', 'GB-Eire', 'Hongkong', 'Iceland', 'Iran', 'Israel', 'Jamaica', 'Japan', 'Kwajalein',
    'Libya', 'NZ', 'NZ-CHAT', 'Navajo', 'PRC', 'Poland', 'Portugal', 'ROC', 'ROK', 'Singapore', 'Turkey', 'W-SU',
  ].map((n) => [n.toLowerCase(), n]),
);

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat | null {
  let f = formatters.get(zone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    } catch {
      return null;
    }
    if (formatters.size > 1000) formatters.clear();
    formatters.set(zone, f);
  }
  return f;
}

/**
 * The IANA name a written timezone stands for: a string, or an object whose `label` counts (its `offset` is ignored).
 * Keeps the caller's spelling (ICU would turn `Asia/Kolkata` into `Asia/Calcutta`) when written as IANA writes it; fixes
 * letter case otherwise (`asia/kolkata` reads as ICU's `Asia/Calcutta`). Null if not an IANA zone.
 */
export function canonicalZone(value: unknown): string | null {
  const raw = typeof value === 'string' ? value : value && typeof value === 'object' && !Array.isArray(value) ? (value as { label?: unknown }).label : undefined;
  if (typeof raw !== 'string') return null;
  const name = raw.trim().replace(DISPLAY_PREFIX, '');
  if (!name || name.length > 64 || !/^[A-Za-z]/.test(name)) return null;
  const single = SINGLE_NAMES.get(name.toLowerCase());
  if (!single && (!name.includes('/') || /^systemv\//i.test(name))) return null;
  const f = formatter(name);
  if (!f) return null;
  if (single) return single;
  const resolved = f.resolvedOptions().timeZone;
  if (resolved.toLowerCase() === name.toLowerCase()) return resolved;
  // A name ICU resolves to another (Asia/Kolkata -> Asia/Calcutta): the caller's spelling when it is written as
  // IANA writes names (each part capitalised), else the zone of that name in any case, else ICU's name for it.
  if (name.split('/').every((part) => /^[A-Z][a-z]/.test(part))) return name;
  return zonesByLowerCase().get(name.toLowerCase()) ?? resolved;
}

let lowerCaseZones: Map<string, string> | null = null;
/** ICU's zone names by their lower case. */
function zonesByLowerCase(): Map<string, string> {
  lowerCaseZones ??= new Map(Intl.supportedValuesOf('timeZone').map((z) => [z.toLowerCase(), z]));
  return lowerCaseZones;
}

/** Minutes from UTC of an IANA zone at `at` (e.g. America/New_York: -300 in winter, -240 in summer). */
export function zoneOffsetMinutes(zone: string, at: Date = new Date()): number {
  const part = formatter(zone)?.formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  const m = /^GMT([+-])(\d{1,2})(?::(\d{2}))?$/.exec(part);
  if (!m) return 0;
  const minutes = Number(m[2]) * 60 + Number(m[3] ?? 0);
  return m[1] === '-' ? -minutes : minutes;
}

/** How a stored timezone reads: `{label: IANA name, offset: minutes now}`; none reads as UTC. */
export function timezoneView(stored: unknown, at: Date = new Date()): TimezoneView {
  const zone = canonicalZone(stored ?? DEFAULT_TIMEZONE);
  if (zone) return { label: zone, offset: zoneOffsetMinutes(zone, at) };
  // An object stored before zones were checked (e.g. `{label: 'IST', offset: 330}`) reads as it was written.
  const legacy = stored as { label?: unknown; offset?: unknown };
  if (typeof legacy?.label === 'string' && typeof legacy.offset === 'number') return { label: legacy.label, offset: legacy.offset };
  return { label: DEFAULT_TIMEZONE, offset: 0 };
}

/** A configuration as clients read it: the timezone as `{label, offset}`. */
export function withTimezoneView<T extends Record<string, unknown>>(config: T): T {
  return { ...config, timezone: timezoneView(config.timezone) };
}

const ZONE_MESSAGE = 'must be an IANA time zone such as Europe/Berlin, as a string or as {label, offset}';

/** The write schema: the IANA name, or `{label, offset?}` with an IANA label. */
export const timezoneSchema = z.union([
  z.string().refine((v) => canonicalZone(v) !== null, ZONE_MESSAGE),
  z
    .object({ label: z.string().refine((v) => canonicalZone(v) !== null, ZONE_MESSAGE), offset: z.number().min(-720).max(840).optional() })
    .passthrough(),
], { errorMap: () => ({ message: ZONE_MESSAGE }) });
