// Audience routes (wire §5): CSV upload (multipart/form-data, parsed with busboy), audiences, and their members.
import busboy from 'busboy';
import type { HttpServer } from '../http/server.js';
import { docs, ok, type HttpRequest } from '../http/types.js';
import { badRequest } from '../../control-plane/errors.js';
import {
  addMembers,
  addMembersBody,
  createAudience,
  deleteAudience,
  deleteMembers,
  deleteMembersBody,
  getAudience,
  listAudiences,
  listMembers,
  searchMembers,
  type AudienceUpload,
} from '../../control-plane/campaigns/audiences.js';
import { campaignsUsingAudience } from '../../control-plane/campaigns/campaigns.js';
import { actorOf, type RouteContext } from './context.js';

/** Largest upload (the CSV and the form around it), and largest add-members body. */
const AUDIENCE_MAX_BYTES = 10 * 1024 * 1024;
/** Largest text field of the upload form. */
const MAX_FIELD_BYTES = 64 * 1024;

const notMultipart = 'file: the request must be multipart/form-data with the CSV in a file part named "file"';

/** The text fields and file parts of a multipart/form-data body (already read within the route's limit). */
function readMultipart(req: HttpRequest): Promise<AudienceUpload> {
  const type = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*;/i.test(type)) return Promise.reject(badRequest(notMultipart));
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { 'content-type': type }, limits: { fieldSize: MAX_FIELD_BYTES, parts: 20 } });
  } catch (err) {
    return Promise.reject(badRequest(`${notMultipart} (${(err as Error).message})`));
  }
  return new Promise((resolve, reject) => {
    const upload: AudienceUpload = { fields: {}, files: {} };
    const errors: string[] = [];
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) errors.push(`${name}: at most ${MAX_FIELD_BYTES} bytes`);
      upload.fields[name] = value;
    });
    parser.on('file', (name, stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        upload.files[name] = Buffer.concat(chunks);
      });
    });
    parser.on('partsLimit', () => errors.push('file: too many form parts (expected file, name, description, phoneNumberColumnName, identifierColumnName)'));
    parser.on('error', (err: Error) => reject(badRequest(`file: malformed multipart body: ${err.message}`)));
    parser.on('close', () => (errors.length ? reject(badRequest(errors)) : resolve(upload)));
    parser.end(req.body);
  });
}

export function audienceRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const d = docs('Audiences');
  const large = { ...auth, maxBodyBytes: AUDIENCE_MAX_BYTES };
  const a = `${prefix}/audience`;
  const id = (req: HttpRequest) => req.params.id as string;

  server.route('POST', a, async (req) => ok(await createAudience(ctx.db, actorOf(req), await readMultipart(req)), 201), { ...large, doc: d('Create an audience from a CSV upload', { body: { contentType: 'multipart/form-data', schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', contentMediaType: 'text/csv' }, name: { type: 'string' }, description: { type: 'string' }, phoneNumberColumnName: { type: 'string' }, identifierColumnName: { type: 'string' } } } }, response: { status: 201 } }) });
  server.route('GET', a, async (req) => ok(await listAudiences(ctx.db, actorOf(req))), { ...auth, doc: d('List audiences') });
  server.route('GET', `${a}/:id`, async (req) => ok(await getAudience(ctx.db, actorOf(req), id(req))), { ...auth, doc: d('Read an audience') });
  // An audience a campaign still needs (not completed or failed) is not deleted: 409 naming the campaigns.
  server.route('DELETE', `${a}/:id`, async (req) => ok(await deleteAudience(ctx.db, actorOf(req), id(req), campaignsUsingAudience)), { ...auth, doc: d('Delete an audience (409 while a campaign needs it)') });
  server.route('GET', `${a}/:id/members`, async (req) => ok(await listMembers(ctx.db, actorOf(req), id(req), req.query)), { ...auth, doc: d("An audience's members", { query: [{ name: 'page', schema: { type: 'integer', minimum: 1 } }, { name: 'limit', schema: { type: 'integer', minimum: 1 } }] }) });
  server.route('POST', `${a}/:id/members`, async (req) => ok(await addMembers(ctx.db, actorOf(req), id(req), req.json()), 201), { ...large, doc: d('Add members', { body: { schema: addMembersBody }, response: { status: 201 } }) });
  server.route('DELETE', `${a}/:id/members`, async (req) => ok(await deleteMembers(ctx.db, actorOf(req), id(req), req.json())), { ...auth, doc: d('Delete members', { body: { schema: deleteMembersBody } }) });
  server.route('GET', `${a}/:id/members/search`, async (req) => ok(await searchMembers(ctx.db, actorOf(req), id(req), req.query)), { ...auth, doc: d('Search members', { query: [{ name: 'query', required: true }, { name: 'page', schema: { type: 'integer', minimum: 1 } }] }) });
}
