// Deterministic prompt-quality scorer for voice-agent prompts: 11 dimensions, token band, prefill overhead.

export type PromptLevel = 'Strong' | 'Adequate' | 'Weak' | 'Missing' | 'Not Applicable';
export interface PromptScoreDimension {
  tier: 1 | 2 | 3;
  level: PromptLevel;
  evidence_span: string;
  title: string;
  description: string;
}
export interface PromptScore {
  overall_score: number;
  overall_grade: 'Excellent' | 'Good' | 'Needs Work' | 'Poor';
  band: 'lean' | 'normal' | 'heavy' | 'overweight';
  estimated_ttft_overhead_ms: number;
  dimensions: PromptScoreDimension[];
}
export interface PromptScoreInput {
  prompt: string;
  globalPrompt?: string;
  firstMessage?: string;
  toolNames?: string[];
  workflowType: 'single_prompt' | 'workflow_graph';
}

/** Prefill cost of one prompt token on a typical hosted model (first-token latency grows linearly with prompt length). */
export const PREFILL_MS_PER_TOKEN = 0.05;

/**
 * BPE-like token estimate: each word, number or punctuation run is one token, and a word longer
 * than 4 characters adds one token per further 4 characters (how sub-word tokenizers split long words).
 */
export function estimateTokens(text: string): number {
  let tokens = 0;
  for (const m of text.matchAll(/[A-Za-z\u00C0-\uFFFF]+|\d+|[^\sA-Za-z\d\u00C0-\uFFFF]+/g)) {
    const piece = m[0];
    tokens += 1 + Math.max(0, Math.ceil((piece.length - 4) / 4));
  }
  return tokens;
}

interface Rule {
  tier: 1 | 2 | 3;
  title: string;
  description: string;
  /** Patterns whose matches count as evidence; two or more distinct matches make it Strong. */
  patterns: RegExp[];
  applicable?: (input: PromptScoreInput, text: string) => boolean;
}

const RULES: Rule[] = [
  { tier: 1, title: 'Role and identity', description: 'Says who the agent is and whom it represents.', patterns: [/\byou are (?:a|an|the)\b[^.\n]{0,120}/i, /\byour name is\b[^.\n]{0,60}/i, /\b(?:on behalf of|representing|work(?:s|ing)? (?:for|at))\b[^.\n]{0,80}/i] },
  { tier: 1, title: 'Goal', description: 'States what a successful call achieves.', patterns: [/\b(?:your (?:goal|task|job|objective|purpose) is)\b[^.\n]{0,160}/i, /\b(?:help (?:the )?(?:caller|customer|user)s?)\b[^.\n]{0,120}/i, /\bso that\b[^.\n]{0,120}/i] },
  { tier: 1, title: 'Conversation flow', description: 'Gives the steps of the conversation in order.', patterns: [/^\s*(?:\d+[.)]|step \d+)[^\n]{0,160}/im, /\b(?:first|then|next|after that|finally)\b[^.\n]{0,120}/i] },
  { tier: 1, title: 'Guardrails', description: 'Says what the agent must never do or disclose.', patterns: [/\b(?:never|do not|don't|must not|avoid)\b[^.\n]{0,160}/i, /\b(?:only (?:discuss|talk about|answer))\b[^.\n]{0,120}/i] },
  { tier: 2, title: 'Spoken style', description: 'Asks for short, natural spoken sentences without markdown or lists.', patterns: [/\b(?:short|brief|concise)\b[^.\n]{0,120}/i, /\b(?:tone|friendly|warm|polite|professional|conversational)\b[^.\n]{0,120}/i, /\b(?:no (?:markdown|bullet|lists|emojis?))\b[^.\n]{0,80}/i] },
  { tier: 2, title: 'Unclear input', description: 'Tells the agent how to handle silence, noise or unclear answers.', patterns: [/\b(?:if (?:you (?:don't|do not) understand|the (?:caller|user|customer) is unclear|unclear|unsure))\b[^.\n]{0,120}/i, /\b(?:ask (?:them |the caller )?to (?:repeat|clarify)|clarif(?:y|ying) question)\b[^.\n]{0,120}/i] },
  {
    tier: 2,
    title: 'Escalation and handoff',
    description: 'Says when to transfer to a human or end the call.',
    patterns: [/\b(?:transfer|escalate|hand (?:off|over)|human agent|supervisor)\b[^.\n]{0,120}/i, /\b(?:end the call|hang up|say goodbye)\b[^.\n]{0,120}/i],
    applicable: (input, text) => (input.toolNames ?? []).some((t) => /transfer|escalat|handoff|hang_?up|(?:^|_)end_?call/i.test(t)) || /\b(?:transfer|escalat|end the call)/i.test(text),
  },
  {
    tier: 2,
    title: 'Tool usage',
    description: 'Names each available tool and when to call it.',
    patterns: [],
    applicable: (input) => (input.toolNames ?? []).length > 0,
  },
  { tier: 3, title: 'Variables', description: 'Uses call variables as {{placeholders}} for personalisation.', patterns: [/\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}/, /\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}[\s\S]*?(\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\})/] },
  { tier: 3, title: 'Examples', description: 'Shows example exchanges or phrasings.', patterns: [/(?:\bfor example\b|\be\.g\.|\bexample:|\bsuch as\b)[^\n]{0,160}/i, /^\s*(?:user|caller|agent|assistant)\s*:[^\n]{0,160}/im] },
  { tier: 3, title: 'Length and efficiency', description: 'Keeps the prompt lean enough for fast first responses.', patterns: [] },
];

const TIER_WEIGHT = { 1: 3, 2: 2, 3: 1 } as const;
const LEVEL_VALUE: Record<Exclude<PromptLevel, 'Not Applicable'>, number> = { Strong: 1, Adequate: 0.7, Weak: 0.35, Missing: 0 };

function bandOf(tokens: number): PromptScore['band'] {
  if (tokens < 4000) return 'lean';
  if (tokens < 10_000) return 'normal';
  if (tokens < 15_000) return 'heavy';
  return 'overweight';
}

const span = (s: string) => s.trim().slice(0, 160);

export function scorePrompt(input: PromptScoreInput): PromptScore {
  const text = [input.globalPrompt ?? '', input.prompt].filter(Boolean).join('\n');
  const tokens = estimateTokens(`${text}\n${input.firstMessage ?? ''}`);
  const band = bandOf(tokens);
  const dimensions: PromptScoreDimension[] = RULES.map((rule) => {
    const base = { tier: rule.tier, title: rule.title, description: rule.description };
    if (rule.applicable && !rule.applicable(input, text)) return { ...base, level: 'Not Applicable', evidence_span: '' };
    if (rule.title === 'Tool usage') {
      const tools = input.toolNames ?? [];
      const named = tools.filter((t) => text.includes(t));
      const level: PromptLevel = named.length === tools.length ? 'Strong' : named.length > 0 ? 'Adequate' : text.trim() ? 'Weak' : 'Missing';
      const idx = named.length ? text.indexOf(named[0] as string) : -1;
      return { ...base, level, evidence_span: idx >= 0 ? span(text.slice(Math.max(0, idx - 40), idx + 120)) : '' };
    }
    if (rule.title === 'Length and efficiency') {
      if (!text.trim()) return { ...base, level: 'Missing', evidence_span: '' };
      const level: PromptLevel = band === 'lean' ? 'Strong' : band === 'normal' ? 'Adequate' : 'Weak';
      return { ...base, level, evidence_span: span(text.slice(0, 80)) };
    }
    const hits = rule.patterns.map((re) => re.exec(text)?.[0]).filter((m): m is string => Boolean(m));
    const level: PromptLevel = hits.length >= 2 ? 'Strong' : hits.length === 1 ? 'Adequate' : 'Missing';
    return { ...base, level, evidence_span: hits[0] ? span(hits[0]) : '' };
  });
  let weight = 0;
  let sum = 0;
  for (const d of dimensions) {
    if (d.level === 'Not Applicable') continue;
    weight += TIER_WEIGHT[d.tier];
    sum += TIER_WEIGHT[d.tier] * LEVEL_VALUE[d.level];
  }
  const overall = text.trim() && weight ? Math.round((sum / weight) * 100) : 0;
  const grade: PromptScore['overall_grade'] = overall >= 85 ? 'Excellent' : overall >= 70 ? 'Good' : overall >= 50 ? 'Needs Work' : 'Poor';
  return {
    overall_score: overall,
    overall_grade: grade,
    band,
    estimated_ttft_overhead_ms: Math.round(tokens * PREFILL_MS_PER_TOKEN * 10) / 10,
    dimensions,
  };
}
