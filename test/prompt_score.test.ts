// Prompt-quality scorer: 11 tiered dimensions, overall score/grade, token band thresholds and prefill (TTFT) overhead.
import { describe, expect, it } from 'vitest';
import { estimateTokens, PREFILL_MS_PER_TOKEN, scorePrompt, type PromptScore } from '../control-plane/agents/prompt-score.js';

const LEVELS = ['Strong', 'Adequate', 'Weak', 'Missing', 'Not Applicable'];
const TOOLS = ['check_availability', 'book_appointment'];

const GOOD_PROMPT = `You are Maya, a friendly scheduling assistant working for {{clinic_name}}.
Your name is Maya and you speak on behalf of the clinic.
Your goal is to book, move or cancel appointments so that every caller leaves with a confirmed slot.
Help the caller find the earliest suitable time.

Conversation flow:
1. Greet {{customer_name}} and confirm their date of birth.
2. Ask what they need, then look up free slots with check_availability.
3. Book the chosen slot with book_appointment and read it back.
Finally, say goodbye and end the call.

Guardrails:
- Never give medical advice or discuss other patients.
- Only discuss scheduling topics.

Style: keep answers short, one or two sentences, in a warm, conversational tone. No markdown or lists.
If the caller is unclear, ask them to repeat the date, or ask a clarifying question.
If the caller asks for a person or is upset, transfer to a human agent.

For example, offer two options such as "Tuesday at 10 or Wednesday at 2".
Caller: I need to move my appointment.
Agent: Sure, what day works better for you?`;

const ONE_LINER = 'You are a helpful assistant.';

function dim(score: PromptScore, title: string) {
  const d = score.dimensions.find((x) => x.title === title);
  if (!d) throw new Error(`no dimension ${title}`);
  return d;
}

/** A prompt whose estimated token count is exactly n ("word" is one token). */
function promptOfTokens(n: number): string {
  const text = 'word '.repeat(n).trim();
  expect(estimateTokens(text)).toBe(n);
  return text;
}

describe('scorePrompt: dimensions', () => {
  it.each([
    ['well-structured', GOOD_PROMPT, TOOLS],
    ['one-line', ONE_LINER, []],
    ['empty', '', undefined],
  ])('returns 11 well-formed dimensions for a %s prompt', (_name, prompt, toolNames) => {
    const score = scorePrompt({ prompt, toolNames, workflowType: 'single_prompt' });
    expect(score.dimensions).toHaveLength(11);
    for (const d of score.dimensions) {
      expect([1, 2, 3]).toContain(d.tier);
      expect(LEVELS).toContain(d.level);
      expect(typeof d.evidence_span).toBe('string');
      expect(typeof d.title).toBe('string');
      expect(d.title.length).toBeGreaterThan(0);
      expect(typeof d.description).toBe('string');
      expect(d.description.length).toBeGreaterThan(0);
      expect(d.evidence_span.length).toBeLessThanOrEqual(160);
    }
    expect(new Set(score.dimensions.map((d) => d.title)).size).toBe(11);
  });

  it('gives each tier-1 dimension Strong evidence in the well-structured prompt', () => {
    const score = scorePrompt({ prompt: GOOD_PROMPT, toolNames: TOOLS, workflowType: 'single_prompt' });
    for (const title of ['Role and identity', 'Goal', 'Conversation flow', 'Guardrails']) {
      const d = dim(score, title);
      expect(d.tier).toBe(1);
      expect(d.level).toBe('Strong');
      expect(GOOD_PROMPT.toLowerCase()).toContain(d.evidence_span.toLowerCase());
    }
    for (const title of ['Spoken style', 'Unclear input', 'Escalation and handoff', 'Tool usage', 'Examples']) {
      expect(dim(score, title).level).toBe('Strong');
    }
    expect(dim(score, 'Variables').level).not.toBe('Missing');
    expect(dim(score, 'Length and efficiency').level).toBe('Strong');
  });
});

describe('scorePrompt: overall score and grade', () => {
  it('scores a well-structured prompt above a one-line prompt, graded Good or Excellent', () => {
    const good = scorePrompt({ prompt: GOOD_PROMPT, workflowType: 'single_prompt' });
    const withTools = scorePrompt({ prompt: GOOD_PROMPT, toolNames: TOOLS, workflowType: 'workflow_graph' });
    const weak = scorePrompt({ prompt: ONE_LINER, workflowType: 'single_prompt' });
    expect(good.overall_score).toBeGreaterThan(weak.overall_score);
    expect(['Good', 'Excellent']).toContain(good.overall_grade);
    expect(['Good', 'Excellent']).toContain(withTools.overall_grade);
    expect(['Needs Work', 'Poor']).toContain(weak.overall_grade);
    for (const s of [good, withTools, weak]) {
      expect(Number.isInteger(s.overall_score)).toBe(true);
      expect(s.overall_score).toBeGreaterThanOrEqual(0);
      expect(s.overall_score).toBeLessThanOrEqual(100);
    }
  });

  it('scores an empty (or whitespace-only) prompt 0 / Poor', () => {
    for (const prompt of ['', '   \n  ']) {
      const s = scorePrompt({ prompt, workflowType: 'single_prompt' });
      expect(s.overall_score).toBe(0);
      expect(s.overall_grade).toBe('Poor');
      expect(s.band).toBe('lean');
      expect(s.estimated_ttft_overhead_ms).toBe(0);
      expect(s.dimensions.every((d) => d.level === 'Missing' || d.level === 'Not Applicable')).toBe(true);
    }
  });

  it('counts the global prompt towards the dimensions', () => {
    const alone = scorePrompt({ prompt: ONE_LINER, workflowType: 'workflow_graph' });
    const withGlobal = scorePrompt({ prompt: ONE_LINER, globalPrompt: GOOD_PROMPT, workflowType: 'workflow_graph' });
    expect(withGlobal.overall_score).toBeGreaterThan(alone.overall_score);
  });
});

describe('scorePrompt: token band and prefill overhead', () => {
  it.each([
    [1, 'lean'],
    [3999, 'lean'],
    [4000, 'normal'],
    [9999, 'normal'],
    [10_000, 'heavy'],
    [14_999, 'heavy'],
    [15_000, 'overweight'],
    [20_000, 'overweight'],
  ] as const)('%i tokens -> %s', (n, band) => {
    const s = scorePrompt({ prompt: promptOfTokens(n), workflowType: 'single_prompt' });
    expect(s.band).toBe(band);
    const expected = { lean: 'Strong', normal: 'Adequate', heavy: 'Weak', overweight: 'Weak' }[band];
    expect(dim(s, 'Length and efficiency').level).toBe(expected);
  });

  it('estimated_ttft_overhead_ms is tokens x PREFILL_MS_PER_TOKEN rounded to 0.1 ms and grows with length', () => {
    let previous = -1;
    for (const n of [7, 333, 3999, 4001, 12_345]) {
      const ms = scorePrompt({ prompt: promptOfTokens(n), workflowType: 'single_prompt' }).estimated_ttft_overhead_ms;
      expect(Math.abs(ms - n * PREFILL_MS_PER_TOKEN)).toBeLessThanOrEqual(0.05 + 1e-9);
      expect(Math.abs(ms * 10 - Math.round(ms * 10))).toBeLessThan(1e-6);
      expect(ms).toBeGreaterThan(previous);
      previous = ms;
    }
    const g = scorePrompt({ prompt: GOOD_PROMPT, workflowType: 'single_prompt' });
    expect(g.estimated_ttft_overhead_ms).toBeCloseTo(estimateTokens(`${GOOD_PROMPT}\n`) * PREFILL_MS_PER_TOKEN, 1);
  });

  it('counts the first message towards tokens', () => {
    const a = scorePrompt({ prompt: promptOfTokens(3999), workflowType: 'single_prompt' });
    const b = scorePrompt({ prompt: promptOfTokens(3999), firstMessage: 'Hello there', workflowType: 'single_prompt' });
    expect(a.band).toBe('lean');
    expect(b.band).toBe('normal');
    expect(b.estimated_ttft_overhead_ms).toBeGreaterThan(a.estimated_ttft_overhead_ms);
  });
});

describe('scorePrompt: tool usage', () => {
  it('is Not Applicable without tools', () => {
    for (const toolNames of [undefined, []]) {
      const d = dim(scorePrompt({ prompt: GOOD_PROMPT, toolNames, workflowType: 'single_prompt' }), 'Tool usage');
      expect(d.level).toBe('Not Applicable');
      expect(d.evidence_span).toBe('');
    }
  });

  it('is Strong when every tool is named, Adequate when some are, Weak when none are', () => {
    const all = dim(scorePrompt({ prompt: GOOD_PROMPT, toolNames: TOOLS, workflowType: 'single_prompt' }), 'Tool usage');
    expect(all.level).toBe('Strong');
    expect(all.evidence_span).toContain('check_availability');
    const some = scorePrompt({ prompt: GOOD_PROMPT, toolNames: [...TOOLS, 'send_invoice'], workflowType: 'single_prompt' });
    expect(dim(some, 'Tool usage').level).toBe('Adequate');
    const none = scorePrompt({ prompt: ONE_LINER, toolNames: TOOLS, workflowType: 'single_prompt' });
    expect(dim(none, 'Tool usage').level).toBe('Weak');
  });
});

describe('scorePrompt: evidence patterns', () => {
  it('takes "Example:" and "e.g." as examples', () => {
    for (const prompt of ['You are a receptionist. Example: say "Good morning, how can I help?"', 'You are a receptionist. Greet warmly, e.g. "Good morning!"']) {
      expect(dim(scorePrompt({ prompt, workflowType: 'single_prompt' }), 'Examples').level, prompt).not.toBe('Missing');
    }
  });

  it('asks for escalation only when a tool or the prompt is about handing off or ending the call', () => {
    const calendar = scorePrompt({ prompt: ONE_LINER, toolNames: ['book_calendar', 'send_sms', 'append_note'], workflowType: 'single_prompt' });
    expect(dim(calendar, 'Escalation and handoff').level).toBe('Not Applicable');
    const transfer = scorePrompt({ prompt: ONE_LINER, toolNames: ['transfer_to_billing'], workflowType: 'single_prompt' });
    expect(dim(transfer, 'Escalation and handoff').level).toBe('Missing');
  });

  it('rates two distinct variables Strong and one Adequate', () => {
    expect(dim(scorePrompt({ prompt: 'Greet {{customer_name}}.', workflowType: 'single_prompt' }), 'Variables').level).toBe('Adequate');
    expect(dim(scorePrompt({ prompt: 'Greet {{customer_name}} from {{city}}.', workflowType: 'single_prompt' }), 'Variables').level).toBe('Strong');
  });
});

describe('scorePrompt: determinism', () => {
  it('returns identical results for identical input', () => {
    const input = { prompt: GOOD_PROMPT, globalPrompt: 'Be polite.', firstMessage: 'Hi {{customer_name}}!', toolNames: TOOLS, workflowType: 'single_prompt' as const };
    expect(scorePrompt(input)).toEqual(scorePrompt({ ...input, toolNames: [...TOOLS] }));
    expect(estimateTokens(GOOD_PROMPT)).toBe(estimateTokens(GOOD_PROMPT));
  });
});
