// `/waves/v1/pronunciation-dicts`: list, create, replace and delete an organization's pronunciation dictionaries
// (hosted reference; logic in control-plane/pronunciation/dicts.ts). Applied in synthesis through `pronunciation_dicts`.
import type { HttpServer } from '../http/server.js';
import { docs, type HttpResponse } from '../http/types.js';
import { dictErrorBody } from './inference-errors.js';
import { createBody, createDict, deleteBody, deleteDict, listDicts, updateBody, updateDict } from '../../control-plane/pronunciation/dicts.js';
import type { Db } from '../../control-plane/store/db.js';

/** The wire's bodies are bare (no `{status, data}` envelope). */
const bare = (body: unknown): HttpResponse => ({ status: 200, body });

const ITEM = '`{id, items: [{word, pronunciation}], createdAt}`';

export function pronunciationDictRoutes(server: HttpServer, prefix: string, db: Db): void {
  const opts = { auth: 'inference-key-only' as const, errorBody: dictErrorBody, maxBodyBytes: 512 * 1024 };
  const d = docs('Pronunciation dictionaries');
  const p = `${prefix}/pronunciation-dicts`;
  const org = (auth: { orgId: string } | undefined) => {
    if (!auth) throw new Error('route requires authentication');
    return auth.orgId;
  };
  server.route('GET', p, async (req) => bare(await listDicts(db, org(req.auth))), {
    ...opts,
    doc: d("List the organization's pronunciation dictionaries", { response: { description: `An array of ${ITEM}, oldest first.` } }),
  });
  server.route('POST', p, async (req) => bare(await createDict(db, org(req.auth), req.json())), {
    ...opts,
    doc: d('Create a pronunciation dictionary', {
      description: 'Synthesis says each `word` (a whole word, any case) as its `pronunciation`, a spelling for speech; name the dictionary in `pronunciation_dicts` of a synthesis request or in an agent\'s `pronunciationDicts`. Phonetic (IPA) spellings are refused.',
      body: { schema: createBody },
      response: { description: ITEM },
    }),
  });
  server.route('PUT', p, async (req) => bare(await updateDict(db, org(req.auth), req.json())), {
    ...opts,
    doc: d("Replace a pronunciation dictionary's items", { body: { schema: updateBody }, response: { description: '`{id, items}`; 404 when the organization has no dictionary `id`.' } }),
  });
  server.route('DELETE', p, async (req) => bare(await deleteDict(db, org(req.auth), req.json())), {
    ...opts,
    doc: d('Delete a pronunciation dictionary', { body: { schema: deleteBody }, response: { description: '`{id, deleted: true}`; 404 when the organization has no dictionary `id`. Agents naming it skip it from then on.' } }),
  });
}
