// `POST /agent/{id}/duplicate`: a new agent in the caller's organization with the source's metadata and live configuration.
import type { Db } from '../store/db.js';
import { z } from 'zod';
import { forbidden } from '../errors.js';
import { bodyObject, parseBody, says } from '../validation.js';
import { insertAgent, liveRefs, loadAgent, type Actor } from './agents.js';
import { loadConfig } from './records.js';

const NAME_MAX = 200;
const SUFFIX = ' (copy)';

/** `POST /agent/{id}/duplicate`: an optional target organization. */
export const duplicateBody = bodyObject({
  targetOrganizationId: z.string(says('must be an organization id')).min(1).nullish().describe('Your own organization only (403 otherwise).'),
});

/**
 * The copy is a fresh, unversioned agent (Main branch, live, no revisions) whose base configuration is what the
 * source serves now (its live branch head, else its base config), so a call to the copy runs as a call to the
 * source does. Metadata (description, avatar, inbound flag, visibility, widget) is copied; history, branches,
 * drafts, freeze, archive state and phone numbers are not. Answers the new agent's id.
 */
export async function duplicateAgent(db: Db, actor: Actor, agentId: string, body: unknown): Promise<string> {
  const target = body === undefined ? undefined : parseBody(duplicateBody, body).targetOrganizationId;
  if (target !== undefined && target !== null) {
    if (target !== actor.orgId) throw forbidden('targetOrganizationId: an agent can only be duplicated into your own organization');
  }
  const agent = await loadAgent(db, actor, agentId);
  const live = await liveRefs(db, agent);
  const head = live.revisionId ? await db.selectFrom('revisions').select('workflow_type').where('id', '=', live.revisionId).executeTakeFirst() : undefined;
  return insertAgent(db, actor, {
    name: `${agent.name.slice(0, NAME_MAX - SUFFIX.length)}${SUFFIX}`,
    description: agent.description,
    workflowType: head?.workflow_type ?? agent.workflow_type,
    meta: JSON.parse(agent.meta) as Record<string, unknown>,
    config: await loadConfig(db, live.refs),
  });
}
