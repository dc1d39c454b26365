// The agent's web widget settings (agent metadata, not versioned): defaults, validation, merge and how they read.
import { z } from 'zod';
import { isPlainObject } from './config.js';

/** What an agent's widget looks like until someone sets it. */
export const WIDGET_DEFAULTS = {
  position: 'bottom-right',
  size: 'medium',
  mode: 'voice',
  theme: 'light',
  primaryColor: '#2563EB',
  backgroundColor: '#FFFFFF',
  textColor: '#111827',
  title: 'Talk to us',
  startButtonText: 'Start a call',
  endButtonText: 'End call',
  chatPlaceholder: 'Type a message…',
  consentRequired: false,
  consentTitle: 'Before we start',
  consentText: 'This conversation is with an AI agent and may be recorded and transcribed.',
  consentAcceptText: 'I agree',
  consentDeclineText: 'No thanks',
  allowlist: [] as string[],
};

const colour = z.string().regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/, 'must be a hex colour such as #2563EB');
const text = (max: number) => z.string().max(max);
/** A site the widget may be embedded on: an origin or host name, optionally `*.` for its subdomains. */
const site = z
  .string()
  .max(253)
  .regex(/^(?:https?:\/\/)?(?:\*\.)?[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*(?::\d{1,5})?$/i, 'must be an origin or host name such as https://example.com or *.example.com');

/** Known settings are type-checked; settings we do not know are kept as sent (up to the size limit). */
const schema = z
  .object({
    position: z.enum(['bottom-right', 'bottom-left', 'top-right', 'top-left']),
    size: z.enum(['small', 'medium', 'large']),
    mode: z.enum(['voice', 'chat', 'voice_and_chat']),
    theme: z.enum(['light', 'dark', 'system']),
    primaryColor: colour,
    backgroundColor: colour,
    textColor: colour,
    title: text(100),
    startButtonText: text(60),
    endButtonText: text(60),
    chatPlaceholder: text(100),
    consentRequired: z.boolean(),
    consentTitle: text(200),
    consentText: text(2000),
    consentAcceptText: text(60),
    consentDeclineText: text(60),
    allowlist: z.array(site).max(100),
  })
  .partial()
  .passthrough();

/** The schema that validates the settings, as /openapi.json documents them. */
export { schema as widgetConfigSchema };

const MAX_BYTES = 16 * 1024;

export type WidgetConfig = Record<string, unknown>;

/**
 * Merges a patch into stored settings: each key set replaces, `null` resets that key to its default.
 * Returns the new stored settings (only the keys that were set) and an error naming each bad field.
 */
export function mergeWidgetConfig(stored: WidgetConfig, patch: unknown, field = 'widgetConfig'): { merged: WidgetConfig; errors: string[] } {
  if (!isPlainObject(patch)) return { merged: stored, errors: [`${field}: must be an object`] };
  const merged = Object.fromEntries([
    ...Object.entries(stored).filter(([k]) => !Object.hasOwn(patch, k)),
    ...Object.entries(patch).filter(([, v]) => v !== null),
  ]);
  const result = schema.safeParse(merged);
  const errors = result.success ? [] : result.error.issues.map((i) => `${[field, ...i.path].join('.')}: ${i.message}`);
  if (!errors.length && Buffer.byteLength(JSON.stringify(merged)) > MAX_BYTES) errors.push(`${field}: must be at most ${MAX_BYTES} bytes of JSON`);
  return { merged, errors };
}

/** The stored settings in an agent's metadata (`agents.meta`). */
export function storedWidgetConfig(meta: Record<string, unknown>): WidgetConfig {
  return isPlainObject(meta.widgetConfig) ? meta.widgetConfig : {};
}

/** The widget as clients read it: defaults overlaid with what was set. */
export const widgetConfigView = (stored: WidgetConfig): WidgetConfig => ({ ...WIDGET_DEFAULTS, ...stored });
