// Post-call analytics without a language model: a summary and the agent's disposition / success metrics computed by
// deterministic extractors (keywords, regular expressions, choices found in what the caller said).
//
// A metric may carry our `extractor`: `{type: "keyword", keywords: [...]}` (BOOLEAN: any found; STRING/ENUM: the
// keyword found) or `{type: "regex", pattern, flags?}` (BOOLEAN: matched; STRING/INTEGER/DATETIME: the first capture
// group, else the match), both over what the caller said. Without one, ENUM metrics pick the first of `choices` said in the call and BOOLEAN metrics
// look for the words of their prompt's quoted phrases; anything undecidable gets value null with confidence 0.

export interface TranscriptTurn {
  role: 'user' | 'agent';
  content: string;
}

export interface Metric {
  identifier: string;
  value: string | number | boolean | null;
  confidence: number;
  reasoning: string;
  dispositionMetricPrompt: string;
  dispositionMetricType: string;
}

export interface CallAnalytics {
  summary: string;
  dispositionMetrics: Metric[];
  successMetrics: Metric[];
  /** Which method produced them. */
  method: 'deterministic' | 'llm';
}

type MetricConfig = Record<string, unknown> & { identifier?: string; extractor?: { type?: string; keywords?: string[]; pattern?: string; flags?: string } };

const words = (s: string) => s.toLowerCase().replace(/[^a-z0-9'\s-]/g, ' ');
const has = (text: string, phrase: string) => new RegExp(`\\b${phrase.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`).test(words(text));

export function deterministicAnalytics(config: unknown, transcript: TranscriptTurn[], endReason: string): CallAnalytics {
  const cfg = (config && typeof config === 'object' ? config : {}) as { dispositionMetrics?: MetricConfig[]; successMetrics?: MetricConfig[] };
  const userText = transcript.filter((t) => t.role === 'user').map((t) => t.content).join(' ');
  const users = transcript.filter((t) => t.role === 'user');
  const firstUser = users[0]?.content;
  const lastAgent = [...transcript].reverse().find((t) => t.role === 'agent')?.content;
  const summary = [
    `${transcript.length} turns (${users.length} from the caller).`,
    firstUser ? `The caller opened with: "${firstUser}".` : 'The caller said nothing.',
    lastAgent ? `The agent's last words: "${lastAgent}".` : '',
    `The call ended: ${endReason}.`,
  ]
    .filter(Boolean)
    .join(' ');
  const metric = (m: MetricConfig, promptKey: string, typeKey: string): Metric => {
    const type = String(m[typeKey] ?? 'STRING');
    const prompt = String(m[promptKey] ?? '');
    const base = { identifier: String(m.identifier ?? ''), dispositionMetricPrompt: prompt, dispositionMetricType: type };
    const ex = m.extractor;
    if (ex?.type === 'keyword' && Array.isArray(ex.keywords)) {
      const found = ex.keywords.find((k) => has(userText, k));
      const value = type === 'BOOLEAN' ? found !== undefined : (found ?? null);
      return { ...base, value, confidence: found !== undefined || type === 'BOOLEAN' ? 1 : 0, reasoning: found ? `The caller said "${found}".` : 'None of the keywords was said.' };
    }
    if (ex?.type === 'regex' && typeof ex.pattern === 'string') {
      let match: RegExpExecArray | null = null;
      try {
        match = new RegExp(ex.pattern, ex.flags ?? 'i').exec(userText);
      } catch {
        return { ...base, value: null, confidence: 0, reasoning: 'The extractor pattern is not a valid regular expression.' };
      }
      const raw = match ? (match[1] ?? match[0]) : null;
      const value = type === 'BOOLEAN' ? match !== null : type === 'INTEGER' ? (raw !== null && /^-?\d+$/.test(raw) ? Number(raw) : null) : raw;
      return { ...base, value, confidence: match || type === 'BOOLEAN' ? 1 : 0, reasoning: match ? `Matched "${match[0]}".` : 'The pattern did not match.' };
    }
    if (type === 'ENUM' && Array.isArray(m.choices)) {
      const choice = (m.choices as unknown[]).map(String).find((c) => has(userText, c));
      return { ...base, value: choice ?? null, confidence: choice ? 0.6 : 0, reasoning: choice ? `The caller mentioned "${choice}".` : 'No choice was mentioned.' };
    }
    return { ...base, value: null, confidence: 0, reasoning: 'No extractor is configured for this metric and no language model is available.' };
  };
  return {
    summary,
    dispositionMetrics: (cfg.dispositionMetrics ?? []).map((m) => metric(m, 'dispositionMetricPrompt', 'dispositionMetricType')),
    successMetrics: (cfg.successMetrics ?? []).map((m) => metric(m, 'successMetricPrompt', 'successMetricType')),
    method: 'deterministic',
  };
}

/**
 * Analytics by the agent's language model (OpenAI-compatible, non-streaming, JSON answer). Falls back to the
 * deterministic extractors when the model fails or answers something unusable.
 */
export async function llmAnalytics(
  endpoint: { baseUrl: string; model: string; apiKey?: string },
  config: unknown,
  transcript: TranscriptTurn[],
  endReason: string,
  fetchImpl: typeof fetch = fetch,
): Promise<CallAnalytics> {
  const fallback = deterministicAnalytics(config, transcript, endReason);
  const cfg = (config && typeof config === 'object' ? config : {}) as { dispositionMetrics?: MetricConfig[]; successMetrics?: MetricConfig[]; summaryPrompt?: string; dispositionInstructions?: string };
  const metrics = [
    ...(cfg.dispositionMetrics ?? []).map((m) => ({ identifier: String(m.identifier), prompt: String(m.dispositionMetricPrompt ?? ''), type: String(m.dispositionMetricType ?? 'STRING'), choices: m.choices })),
    ...(cfg.successMetrics ?? []).map((m) => ({ identifier: String(m.identifier), prompt: String(m.successMetricPrompt ?? ''), type: String(m.successMetricType ?? 'STRING') })),
  ];
  const conversation = transcript.map((t) => `${t.role === 'agent' ? 'Agent' : 'Caller'}: ${t.content}`).join('\n');
  const instructions =
    'You analyse a finished phone conversation. Answer with one JSON object only: ' +
    '{"summary": string, "metrics": {"<identifier>": {"value": <string|number|boolean|null>, "confidence": <0..1>, "reasoning": string}}}. ' +
    `${cfg.summaryPrompt ? `Summary instructions: ${cfg.summaryPrompt}. ` : 'The summary is two or three sentences. '}` +
    `${cfg.dispositionInstructions ? `How to judge the call's disposition (the agent's callDispositionConfig): ${cfg.dispositionInstructions} ` : ''}` +
    `Metrics to fill: ${JSON.stringify(metrics)}`;
  try {
    const res = await fetchImpl(`${endpoint.baseUrl.replace(/\/+$/, '')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}) },
      body: JSON.stringify({ model: endpoint.model, stream: false, temperature: 0, messages: [{ role: 'system', content: instructions }, { role: 'user', content: conversation || '(no words were said)' }] }),
      signal: AbortSignal.timeout(30_000),
    });
    if (!res.ok) return fallback;
    const body = (await res.json()) as { choices?: { message?: { content?: string } }[] };
    const text = body.choices?.[0]?.message?.content ?? '';
    const json = JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1)) as { summary?: unknown; metrics?: Record<string, { value?: unknown; confidence?: unknown; reasoning?: unknown }> };
    if (typeof json.summary !== 'string') return fallback;
    const fill = (list: Metric[]): Metric[] =>
      list.map((m) => {
        const got = json.metrics?.[m.identifier];
        if (!got) return m;
        const value = typeof got.value === 'string' || typeof got.value === 'number' || typeof got.value === 'boolean' ? got.value : null;
        const confidence = typeof got.confidence === 'number' ? Math.max(0, Math.min(1, got.confidence)) : 0.5;
        return { ...m, value, confidence, reasoning: typeof got.reasoning === 'string' ? got.reasoning : '' };
      });
    return { summary: json.summary, dispositionMetrics: fill(fallback.dispositionMetrics), successMetrics: fill(fallback.successMetrics), method: 'llm' };
  } catch {
    return fallback;
  }
}
