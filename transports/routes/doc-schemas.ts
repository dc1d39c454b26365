// Request-body schemas for /openapi.json that several route files share, made of the zod schemas that validate them
// (agent configuration fields, widget settings, tool definitions) plus the fields still checked by hand.
import { z } from 'zod';
import { CONFIG_FIELDS, WORKFLOW_TYPES } from '../../control-plane/agents/config-schema.js';
import { widgetConfigSchema } from '../../control-plane/agents/widget-config.js';
import { apiCallToolSchema, clientToolSchema } from '../../control-plane/tools/definition.js';
import { jsonSchema } from '../http/openapi.js';

/** Every configuration field, each validated by its CONFIG_FIELDS schema (all optional in a write). */
const configProperties = jsonSchema(z.object(CONFIG_FIELDS).partial()).properties as Record<string, unknown>;

const object = (properties: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties, ...(required.length ? { required } : {}) });
const workflowType = { type: 'string', enum: [...WORKFLOW_TYPES] };

/** The agent's own fields (checked by hand in control-plane/agents/agents.ts). */
const agentMeta = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  description: { type: ['string', 'null'], maxLength: 2000 },
  avatarUrl: { type: ['string', 'null'] },
  allowInboundCall: { type: 'boolean', description: 'Removed after the telephony migration window (use answers).' },
  visibleToEveryone: { type: 'boolean' },
  workflowType,
  widgetConfig: jsonSchema(widgetConfigSchema),
};

/** `POST /agent`: name required, any configuration field. */
export const createAgentBody = object({ ...agentMeta, ...configProperties }, ['name']);

/** `PATCH /agent/{id}`: configuration fields only while the agent is unversioned (then through drafts). */
export const updateAgentBody = object({ ...agentMeta, telephonyProductId: { description: 'Deprecated: numbers answered by this agent.' }, ...configProperties });

/** `PUT .../draft`: configuration fields, optionally guarded by the revision the edit was based on. */
export const draftBody = object({ expectedRevision: { type: 'integer', minimum: 0, description: 'Refuse (409) if the draft moved past this edit.' }, workflowType, ...configProperties });

/** `POST /tool`: a definition validated by its type's schema. */
export const createToolBody = z.object({ definition: z.union([apiCallToolSchema, clientToolSchema]) });

/** `PATCH /tool/{toolId}`: a merge patch of the definition (the result is validated as a whole). */
export const updateToolBody = object({ definition: { type: 'object', description: 'Fields to change; the merged definition must pass the create schema.' } }, ['definition']);

export { widgetConfigSchema };

/** A JSON object body whose fields the route still checks by hand (a later step moves it to zod). */
export const anyObject = (properties: Record<string, unknown> = {}, required: string[] = []) => ({ ...object(properties, required), additionalProperties: true });
