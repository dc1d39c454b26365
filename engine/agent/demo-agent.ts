// The built-in demo agent: a dental clinic receptionist as a workflow graph, spoken end to end with no external service.
export const DEMO_AGENT_TEMPLATE_ID = 'parley-demo';

const BOOK = ['book', 'booking', 'appointment', 'appointments', 'schedule', 'reserve', 'reservation', 'check up', 'checkup', 'cleaning', 'see the dentist', 'see a dentist'];
const HOURS = ['hours', 'opening', 'open', 'close', 'closing', 'closed', 'what time', 'when are you'];
const PERSON = ['person', 'human', 'someone', 'somebody', 'receptionist', 'operator', 'representative', 'real person', 'talk to', 'speak to', 'front desk'];
const BYE = ['bye', 'goodbye', 'good bye', 'no thanks', 'no thank you', 'nothing', 'nothing else', "that's all", "that's it", 'that is all', "i'm done", 'all set', 'no', 'nope'];
const YES = ['yes', 'yeah', 'yep', 'sure', 'please'];
const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday', 'today', 'tomorrow'];

/** "My name is Sarah." / "It's Sarah." / "This is Sarah speaking." -> Sarah. */
const NAME_PHRASE = "\\b(?:my name is|my name['’]?s|name is|it['’]?s|it is|this is|i am|i['’]?m|call me|under)\\s+([a-z][a-z'-]*)";
/** A bare name of one or two words: "Sarah." / " Sarah Connor." -> Sarah. */
const BARE_NAME = "^\\W*([A-Za-z][A-Za-z'-]*)(?:\\s+[A-Za-z][A-Za-z'-]*)?\\W*$";
const DAY = `\\b(${DAYS.join('|')})\\b`;

const keyword = (keywords: string[]) => ({ type: 'keyword', keywords });
const edge = (from: string, to: string, condition: Record<string, unknown>) => ({ from, to, condition });

/** Edges every question node shares: book, hours, a person, goodbye. */
const menuEdges = (from: string) => [
  edge(from, 'ask_name', keyword(BOOK)),
  edge(from, 'hours', keyword(HOURS)),
  edge(from, 'front_desk', keyword(PERSON)),
  edge(from, 'goodbye', keyword(BYE)),
];

const MENU = 'I can book an appointment, tell you our opening hours, or put you through to a person. What would you like?';

/** The graph (see engine/agent/brains/workflow.ts for the shape). */
export function demoWorkflowGraph(): Record<string, unknown> {
  return {
    startNodeId: 'menu',
    nodes: [
      { id: 'menu', type: 'say', text: MENU },
      {
        id: 'ask_name',
        type: 'say',
        text: 'Happy to book that for you. What name should I put the appointment under?',
        noMatchText: "Sorry, I didn't catch your name.",
        extract: [
          { variable: 'caller_name', regex: NAME_PHRASE, flags: 'i' },
          { variable: 'caller_name', regex: BARE_NAME },
        ],
      },
      {
        id: 'ask_day',
        type: 'say',
        text: 'Thanks {{caller_name}}. Which day would suit you? You can say a weekday, today or tomorrow.',
        noMatchText: "Sorry, I didn't catch the day.",
        extract: [{ variable: 'day', regex: DAY, flags: 'i' }],
      },
      {
        id: 'confirm',
        type: 'end_call',
        set: { appointment_booked: true },
        text: "Thanks {{caller_name}}, you are booked for {{day}} at {{clinic_name}}. We'll call you the day before to confirm the time. Goodbye!",
      },
      {
        id: 'hours',
        type: 'say',
        text: '{{clinic_name}} is open Monday to Friday from 8 am to 6 pm, and on Saturday from 9 am to 1 pm. Is there anything else I can help you with?',
      },
      { id: 'front_desk', type: 'transfer', text: "Of course. I'll put you through to our front desk now.", transferNumber: '+15555550100' },
      { id: 'goodbye', type: 'end_call', text: 'Thanks for calling {{clinic_name}}. Goodbye!' },
    ],
    edges: [
      ...menuEdges('menu'),
      edge('ask_name', 'goodbye', keyword(['bye', 'goodbye', 'never mind'])),
      edge('ask_name', 'ask_day', { type: 'regex', pattern: NAME_PHRASE, flags: 'i' }),
      edge('ask_name', 'ask_day', { type: 'regex', pattern: BARE_NAME }),
      edge('ask_day', 'confirm', keyword(DAYS)),
      edge('ask_day', 'goodbye', keyword(['bye', 'goodbye', 'never mind'])),
      ...menuEdges('hours'),
      edge('hours', 'menu', keyword(YES)),
    ],
  };
}

/** A create-agent request body (wire field names) for the demo agent. */
export function demoAgentConfig(): Record<string, unknown> {
  return {
    name: 'Parley demo: dental clinic receptionist',
    description: 'Books appointments, tells opening hours and transfers to the front desk; runs offline as a workflow graph.',
    workflowType: 'workflow_graph',
    firstMessage: `Hello, thanks for calling {{clinic_name}}. ${MENU}`,
    workflowGraph: demoWorkflowGraph(),
    allowInterruptions: true,
    defaultVariables: { clinic_name: 'Bright Smile Dental' },
  };
}
