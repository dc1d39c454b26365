// A stand-in for a customer's CRM, for the pre-call API's tests: answers every GET with a customer whose first name
// is `first` (after `delayMs`), noting when each request arrived; and the agent body that looks the caller up in it.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Crm {
  base: string;
  /** Each request as it arrived (Date.now()) with its path. */
  hits: { at: number; url: string }[];
  close(): Promise<void>;
}

export async function startCrm(first: string, delayMs = 0): Promise<Crm> {
  const hits: Crm['hits'] = [];
  const server = createServer((req, res) => {
    hits.push({ at: Date.now(), url: req.url ?? '' });
    req.resume();
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ customer: { first } })), delayMs);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A workflow agent that says `text` ({{customer_name}} filled by the lookup of `{{user_number}}`) and hangs up. */
export function lookupAgent(crm: Crm, text: string): Record<string, unknown> {
  return {
    name: 'Looks up first',
    workflowType: 'workflow_graph',
    workflowGraph: { nodes: [{ id: 'a', type: 'end_call', text }], edges: [] },
    defaultVariables: { customer_name: 'there' },
    preCallAPI: {
      isEnabled: true,
      url: `${crm.base}/lookup/{{user_number}}`,
      method: 'GET',
      timeout: 5,
      responseVariables: [{ variableName: 'customer_name', jsonPath: '$.customer.first' }],
    },
  };
}
