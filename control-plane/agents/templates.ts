// Agent templates: the catalog `GET /agent/template` lists and `POST /agent/from-template` creates ready-to-call agents from.
import type { Db } from '../store/db.js';
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { bodyObject, parseBody, says } from '../validation.js';
import { DEMO_AGENT_TEMPLATE_ID, demoAgentConfig } from '../../engine/agent/demo-agent.js';
import { createAgent, type Actor } from './agents.js';

interface AgentTemplate {
  id: string;
  name: string;
  description: string;
  industry: string;
  useCase: string;
  callType: 'inbound' | 'outbound';
  /** `global`, or the region the template is written for (phone numbers, conventions). */
  region: string;
  trending: boolean;
  defaultLanguage: string;
  /** The create-agent body (wire field names); the created agent is unversioned and serves this config at once. */
  agent: () => Record<string, unknown>;
}

export const RECEPTIONIST_TEMPLATE_ID = 'front-desk-receptionist';

const RECEPTIONIST_PROMPT = `You are the front desk receptionist of {{business_name}}, answering the phone for the business.

# What you know
- Opening hours: {{business_hours}}.
- Address: {{business_address}}.
- Services: {{business_services}}.
- Today is {{current_day}}, {{current_date}}; the local time is {{current_time}} ({{timezone}}).
Only state facts listed here. If the caller asks something you do not know (prices, availability, medical, legal or account details), say you do not have that information and offer to take a message for the team.

# What you do
1. Greet the caller warmly and find out why they are calling.
2. Answer questions about opening hours, the address and the services from the facts above.
3. For appointments, call-backs or anything the team must handle, take a message: ask for the caller's full name, the best phone number to reach them, and a short reason for the call. Ask for one item at a time, then read the details back once to confirm.
4. Tell the caller what happens next: the team will get back to them during opening hours.
5. When the caller has nothing else, thank them, say goodbye, and end the call with the end_call tool.

# How you speak
- This is a phone call: keep each reply to one or two short sentences and ask one question at a time.
- Be friendly, calm and professional. Do not use lists, markdown, emoji or abbreviations; say numbers the way people say them.
- If you did not understand, ask the caller to repeat; never guess names or numbers.
- Never invent an appointment, price or promise. Never ask for card numbers, passwords or other sensitive data.
- If the caller is upset or asks for a person, acknowledge it, take a message marked urgent, and reassure them the team will call back.`;

function receptionistConfig(): Record<string, unknown> {
  return {
    name: 'Front desk receptionist',
    description: 'Answers inbound calls for a small business: opening hours, address and services, and takes messages for call-backs.',
    workflowType: 'single_prompt',
    prompt: RECEPTIONIST_PROMPT,
    firstMessage: 'Hello, thank you for calling {{business_name}}. How can I help you today?',
    tools: [
      {
        type: 'end_call',
        name: 'end_call',
        description: 'End the call after you have said goodbye and the caller has nothing else to ask.',
      },
    ],
    language: { default: 'en', supported: ['en'] },
    allowInterruptions: true,
    defaultVariables: {
      business_name: 'Northside Family Practice',
      business_hours: 'Monday to Friday from 8 am to 6 pm, and Saturday from 9 am to noon',
      business_address: '120 Market Street, second floor',
      business_services: 'general check-ups, vaccinations, blood tests and travel health advice',
    },
  };
}

const TEMPLATES: AgentTemplate[] = [
  {
    id: DEMO_AGENT_TEMPLATE_ID,
    name: 'Dental clinic receptionist (offline demo)',
    description: 'Books appointments, tells opening hours and transfers to the front desk. A workflow graph that runs with no language model.',
    industry: 'healthcare',
    useCase: 'appointment_booking',
    callType: 'inbound',
    region: 'us',
    trending: true,
    defaultLanguage: 'en',
    agent: demoAgentConfig,
  },
  {
    id: RECEPTIONIST_TEMPLATE_ID,
    name: 'Front desk receptionist',
    description: 'Answers questions about hours, address and services and takes messages for call-backs. Single prompt; uses a language model.',
    industry: 'general',
    useCase: 'front_desk',
    callType: 'inbound',
    region: 'global',
    trending: false,
    defaultLanguage: 'en',
    agent: receptionistConfig,
  },
];

function templateDto(t: AgentTemplate): Record<string, unknown> {
  const agent = t.agent();
  return {
    _id: t.id,
    id: t.id,
    name: t.name,
    description: t.description,
    avatarUrl: null,
    referenceUrl: null,
    industry: t.industry,
    useCase: t.useCase,
    callType: t.callType,
    workflowType: agent.workflowType,
    region: t.region,
    trending: t.trending,
    defaultLanguage: t.defaultLanguage,
    singlePromptConfig: agent.workflowType === 'single_prompt' ? { prompt: agent.prompt, tools: agent.tools ?? [] } : null,
  };
}

/** `GET /agent/template?region=`: a region lists its own templates and the global ones. */
export function listTemplates(query: URLSearchParams): Record<string, unknown>[] {
  const region = query.get('region');
  if (region !== null && !/^[a-z][a-z_-]{1,31}$/i.test(region)) throw badRequest('region: must be a region code such as us, in or global');
  const wanted = region?.toLowerCase();
  return TEMPLATES.filter((t) => !wanted || t.region === wanted || t.region === 'global').map(templateDto);
}

const text = z.string(says('must be a non-empty string')).regex(/\S/).nullish();

/** `POST /agent/from-template` with `{templateId, agentName?, agentDescription?}` (`name`/`description` also accepted). */
export const fromTemplateBody = bodyObject({
  templateId: z.enum(TEMPLATES.map((t) => t.id) as [string, ...string[]], says(`must be one of ${TEMPLATES.map((t) => t.id).join(', ')}`)),
  agentName: text,
  name: text.describe('Same as agentName.'),
  agentDescription: text,
  description: text.describe('Same as agentDescription.'),
});

export async function createFromTemplate(db: Db, actor: Actor, body: unknown): Promise<string> {
  const input = parseBody(fromTemplateBody, body);
  const template = TEMPLATES.find((t) => t.id === input.templateId) as (typeof TEMPLATES)[number];
  const name = input.agentName ?? input.name ?? undefined;
  const description = input.agentDescription ?? input.description ?? undefined;
  const config = template.agent();
  if (name !== undefined) config.name = name;
  if (description !== undefined) config.description = description;
  return createAgent(db, actor, config);
}
