// `GET /disposition-metric-templates` (hosted reference): ready-made disposition metrics for an agent's
// `postCallAnalyticsConfig.dispositionMetrics`. Each is `{identifier, dispositionMetricPrompt, dispositionMetricType}`
// as the reference shows, plus what our post-call analytics (calls/analytics.ts) need to compute it without a
// language model: an `extractor` (keywords or a regular expression over what the caller said). Metrics these cannot
// decide (sentiment, for one) are left out: they need a language model, and a template here is one that works here.
// With a language model configured the prompt is what it answers; the extractor is the fallback. Copied as they are
// into an agent's configuration, every template yields a value here (test/organization_surfaces.test.ts checks it).

export interface MetricTemplate {
  identifier: string;
  dispositionMetricPrompt: string;
  dispositionMetricType: 'STRING' | 'BOOLEAN' | 'INTEGER' | 'ENUM' | 'DATETIME';
  choices?: string[];
  extractor?: { type: 'keyword'; keywords: string[] } | { type: 'regex'; pattern: string; flags?: string };
}

export const DISPOSITION_METRIC_TEMPLATES: readonly MetricTemplate[] = Object.freeze([
  {
    identifier: 'call_resolved',
    dispositionMetricPrompt: "Was the caller's question or issue resolved by the end of the call?",
    dispositionMetricType: 'BOOLEAN',
    extractor: { type: 'keyword', keywords: ['that helps', 'that solves it', 'resolved', 'all set', 'that answers', 'perfect thanks', 'great thanks', 'got it thanks'] },
  },
  {
    identifier: 'callback_requested',
    dispositionMetricPrompt: 'Did the caller ask to be called back later?',
    dispositionMetricType: 'BOOLEAN',
    extractor: { type: 'keyword', keywords: ['call me back', 'call back', 'callback', 'call me later', 'call later', 'ring me back'] },
  },
  {
    identifier: 'do_not_call_requested',
    dispositionMetricPrompt: 'Did the caller ask not to be called again?',
    dispositionMetricType: 'BOOLEAN',
    extractor: { type: 'keyword', keywords: ['do not call', "don't call", 'stop calling', 'remove me', 'take me off', 'unsubscribe'] },
  },
  {
    identifier: 'appointment_booked',
    dispositionMetricPrompt: 'Did the caller agree to book or schedule an appointment?',
    dispositionMetricType: 'BOOLEAN',
    extractor: { type: 'keyword', keywords: ['book it', 'book me', 'schedule it', 'schedule me', 'that time works', 'that works for me', 'see you then'] },
  },
  {
    identifier: 'interested',
    dispositionMetricPrompt: 'Did the caller express interest in the offer?',
    dispositionMetricType: 'BOOLEAN',
    extractor: { type: 'keyword', keywords: ['interested', 'sounds good', 'sign me up', 'tell me more', "i'd like that", 'i would like that'] },
  },
  {
    identifier: 'callback_time',
    dispositionMetricPrompt: 'When did the caller ask to be called back (a time or day, as they said it)?',
    dispositionMetricType: 'DATETIME',
    extractor: { type: 'regex', pattern: '\\b((?:tomorrow|today|tonight|monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?:\\s+(?:morning|afternoon|evening))?|(?:at\\s+)?\\d{1,2}(?::\\d{2})?\\s*(?:a\\.?m\\.?|p\\.?m\\.?|o\'clock))\\b' },
  },
  {
    identifier: 'email_address',
    dispositionMetricPrompt: 'What e-mail address did the caller give?',
    dispositionMetricType: 'STRING',
    extractor: { type: 'regex', pattern: '([a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,})' },
  },
  {
    identifier: 'quantity_requested',
    dispositionMetricPrompt: 'How many units did the caller ask for (a whole number)?',
    dispositionMetricType: 'INTEGER',
    extractor: { type: 'regex', pattern: '\\b(\\d{1,6})\\s+(?:units?|items?|pieces?|seats?|licen[cs]es?|tickets?|boxes?)\\b' },
  },
]) as readonly MetricTemplate[];
