// `POST /conversation/register-call`: validates the body and mints a wct_ token for the agent's live configuration.
import type { Db } from '../store/db.js';
import { badRequest } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { resolveCallConfig } from './call-config.js';
import { mintCallToken } from './call-tokens.js';
import type { CallMode } from './calls.js';
import { callVariablesField, parseCallVariables } from './variables.js';
import { NOT_AN_OBJECT, bodyObject, checkBody, says } from '../validation.js';
import { z } from 'zod';

/** `POST /conversation/register-call`; the variables' keys and values are checked by parseCallVariables after it. */
export const registerCallBody = bodyObject({
  agent_id: z.string(says('required, the id of the agent')).min(1),
  mode: z.enum(['webcall', 'chat'], says('must be webcall or chat')).nullish().describe('Default webcall.'),
  variables: callVariablesField,
});

export async function registerCall(db: Db, actor: Actor, body: unknown): Promise<{ access_token: string; expires_in: number; sample_rate: number }> {
  const { errors } = checkBody(registerCallBody, body);
  if (errors[0] === NOT_AN_OBJECT) throw badRequest(errors);
  const input = body as Record<string, unknown>;
  const agentId = input.agent_id;
  const mode = input.mode ?? 'webcall';
  const vars = parseCallVariables(input.variables);
  for (const e of vars.errors) if (!errors.includes(e)) errors.push(e);
  if (errors.length) throw badRequest(errors);
  // Checks the agent (404, 403, archived); the live configuration itself is resolved when the session connects.
  const resolved = await resolveCallConfig(db, actor, agentId as string, { kind: 'live' });
  const minted = await mintCallToken(db, {
    orgId: actor.orgId,
    agentId: resolved.agent.id,
    mode: mode as CallMode,
    variables: vars.variables,
    configSource: 'live',
    branchId: null,
    revisionId: null,
  });
  return { access_token: minted.token, expires_in: minted.expiresIn, sample_rate: minted.sampleRate };
}
