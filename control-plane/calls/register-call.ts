// `POST /conversation/register-call`: validates the body and mints a wct_ token for the agent's live configuration.
import type { Db } from '../store/db.js';
import { badRequest } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { resolveCallConfig } from './call-config.js';
import { mintCallToken } from './call-tokens.js';
import type { CallMode } from './calls.js';
import { parseCallVariables } from './variables.js';

export async function registerCall(db: Db, actor: Actor, body: unknown): Promise<{ access_token: string; expires_in: number; sample_rate: number }> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  const input = body as Record<string, unknown>;
  const errors: string[] = [];
  const agentId = input.agent_id;
  if (typeof agentId !== 'string' || agentId === '') errors.push('agent_id: required, the id of the agent');
  const mode = input.mode ?? 'webcall';
  if (mode !== 'webcall' && mode !== 'chat') errors.push('mode: must be webcall or chat');
  const vars = parseCallVariables(input.variables);
  errors.push(...vars.errors);
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
