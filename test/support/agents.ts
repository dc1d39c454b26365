// Small helpers over the agent platform API for the versioning suites.
import { expect } from 'vitest';
import type { TestServer } from './server.js';

export const A = '/atoms/v1';

/** A prompt the security scan refuses (a Luhn-valid card number). */
export const LEAKY_PROMPT = 'Charge the card 4111 1111 1111 1111 when the caller agrees.';

export async function createAgent(server: TestServer, body: Record<string, unknown> = {}, key?: string): Promise<string> {
  const res = await server.request('POST', `${A}/agent`, { body: { name: 'Support agent', ...body }, key });
  expect(res.status, res.text).toBe(201);
  return res.body.data as string;
}

/** A new agent and the id of its Main branch. */
export async function agentWithMain(server: TestServer): Promise<{ agent: string; main: string }> {
  const agent = await createAgent(server);
  return { agent, main: await mainBranchId(server, agent) };
}

export async function mainBranchId(server: TestServer, agentId: string): Promise<string> {
  const res = await server.request('GET', `${A}/agent/${agentId}/branches`);
  expect(res.status, res.text).toBe(200);
  const main = (res.body.data.branches as { branch: { _id: string; isDefault: boolean } }[]).find((b) => b.branch.isDefault);
  return main!.branch._id;
}

export async function putDraft(server: TestServer, agentId: string, branchId: string, body: Record<string, unknown>) {
  return server.request('PUT', `${A}/agent/${agentId}/branches/${branchId}/draft`, { body });
}

export async function publish(server: TestServer, agentId: string, branchId: string, label?: string) {
  return server.request('POST', `${A}/agent/${agentId}/branches/${branchId}/draft/publish`, label === undefined ? {} : { body: { label } });
}

/** Edits the draft and publishes it; expects a synchronous commit and returns the revision. */
export async function commit(server: TestServer, agentId: string, branchId: string, draft: Record<string, unknown>, label?: string): Promise<any> {
  const put = await putDraft(server, agentId, branchId, draft);
  expect(put.status, put.text).toBe(200);
  const res = await publish(server, agentId, branchId, label);
  expect(res.status, res.text).toBe(200);
  expect(res.body.data.state).toBe('committed');
  return res.body.data.revision;
}

export async function pollRevision(server: TestServer, agentId: string, branchId: string, revisionId: string, until: (rev: any) => boolean): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const res = await server.request('GET', `${A}/agent/${agentId}/branches/${branchId}/revisions/${revisionId}`);
    expect(res.status, res.text).toBe(200);
    if (until(res.body.data.revision)) return res.body.data.revision;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('revision did not reach the expected state');
}
