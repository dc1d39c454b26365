// Request-body schemas for /openapi.json that combine several zod schemas, each of which validates its part of the
// body: the agent's own fields, the configuration fields (CONFIG_FIELDS), widget settings and tool definitions.
import { z } from 'zod';
import { CONFIG_FIELDS } from '../../control-plane/agents/config-schema.js';
import { widgetConfigSchema } from '../../control-plane/agents/widget-config.js';
import { createAgentMeta, updateAgentMeta } from '../../control-plane/agents/agents.js';
import { draftFields } from '../../control-plane/agents/drafts.js';
import { apiCallToolSchema, clientToolSchema } from '../../control-plane/tools/definition.js';

/** Every configuration field, each validated by its CONFIG_FIELDS schema (all optional in a write). */
const configFields = z.object(CONFIG_FIELDS).partial().shape;

/** `POST /agent`: the agent's fields (`name` required), any configuration field, widget settings. */
export const createAgentBody = createAgentMeta.extend({ ...configFields, widgetConfig: widgetConfigSchema.optional() });

/** `PATCH /agent/{id}`: configuration fields only while the agent is unversioned (then through drafts). */
export const updateAgentBody = updateAgentMeta.extend({ ...configFields, widgetConfig: widgetConfigSchema.optional() });

/** `PUT .../draft`: configuration fields, optionally guarded by the revision the edit was based on. */
export const draftBody = draftFields.extend(configFields);

/** `POST /tool`: a definition validated by its type's schema. */
export const createToolBody = z.object({ definition: z.union([apiCallToolSchema, clientToolSchema]) });

export { widgetConfigSchema };

