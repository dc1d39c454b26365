// Audience routes (wire §5): CSV upload (multipart/form-data, read with busboy as it arrives), audiences, and their members.
import { Readable } from 'node:stream';
import busboy from 'busboy';
import type { HttpServer } from '../http/server.js';
import { docs, ok, type HttpRequest } from '../http/types.js';
import { ApiError, badRequest } from '../../control-plane/errors.js';
import {
  addMembers,
  addMembersBody,
  deleteAudience,
  deleteMembers,
  deleteMembersBody,
  getAudience,
  listAudiences,
  listMembers,
  searchMembers,
} from '../../control-plane/campaigns/audiences.js';
import { checkUploadFields, importAudience, type UploadFields } from '../../control-plane/campaigns/audience-upload.js';
import { campaignsUsingAudience } from '../../control-plane/campaigns/campaigns.js';
import { actorOf, type RouteContext } from './context.js';

/** Largest upload (the CSV and the form around it), and largest add-members body. */
const AUDIENCE_MAX_BYTES = 10 * 1024 * 1024;
/** Largest text field of the upload form. */
const MAX_FIELD_BYTES = 64 * 1024;

const notMultipart = 'file: the request must be multipart/form-data with the CSV in a file part named "file"';

/**
 * `POST /audience`: reads the multipart body as it arrives. When the form's `name` and `phoneNumberColumnName` come
 * before the file (as clients send a form's fields in order), the CSV goes straight into the store as it is read;
 * a file before them is held (within the route's limit) until the form has ended. A field that says how to read the
 * file (`phoneNumberColumnName`, `identifierColumnName`) after a file already being read is refused.
 */
function receiveUpload(ctx: RouteContext, req: HttpRequest): Promise<Record<string, unknown>> {
  const type = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*;/i.test(type)) return Promise.reject(badRequest(notMultipart));
  let form: busboy.Busboy;
  try {
    form = busboy({ headers: { 'content-type': type }, limits: { fieldSize: MAX_FIELD_BYTES, parts: 20 } });
  } catch (err) {
    return Promise.reject(badRequest(`${notMultipart} (${(err as Error).message})`));
  }
  const body = req.stream as Readable;
  const actor = actorOf(req);
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    const otherParts: string[] = [];
    const formErrors: string[] = [];
    const lateFields: string[] = [];
    let csvSeen = false;
    let streaming = false;
    let held: Buffer[] | null = null;
    let importing: Promise<unknown> | null = null;
    let failure: unknown;
    let formEnded!: { resolve: () => void; reject: (err: unknown) => void };
    const formEnd = new Promise<void>((res, rej) => (formEnded = { resolve: res, reject: rej }));
    formEnd.catch(() => {});

    // Stops reading; an import under way fails, and the answer waits until it has removed what it wrote.
    const stop = (err: unknown): void => {
      if (failure !== undefined) return;
      failure = err;
      formEnded.reject(err);
      body.unpipe(form);
      form.destroy();
      void (importing ?? Promise.resolve()).catch(() => {}).then(() => reject(err));
    };
    const start = (checked: UploadFields, csv: Readable, finish?: () => Promise<UploadFields>): void => {
      const run = importAudience(ctx.db, actor, checked, csv, finish);
      importing = run;
      run.then(resolve, (err: unknown) => {
        if (failure === undefined) stop(err);
      });
    };

    form.on('field', (name, value, info) => {
      if (info.valueTruncated) formErrors.push(`${name}: at most ${MAX_FIELD_BYTES} bytes`);
      if (streaming && (name === 'phoneNumberColumnName' || name === 'identifierColumnName')) lateFields.push(name);
      fields[name] = value;
    });
    form.on('file', (name, stream) => {
      // Destroyed with the form when the upload stops; whoever reads it sees that failure on its own.
      stream.on('error', () => {});
      if (name !== 'file' || csvSeen) {
        otherParts.push(name);
        stream.resume();
        return;
      }
      csvSeen = true;
      if (fields.name === undefined || fields.phoneNumberColumnName === undefined) {
        const chunks: Buffer[] = [];
        held = chunks;
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        return;
      }
      let checked: UploadFields;
      try {
        if (formErrors.length) throw badRequest(formErrors);
        checked = checkUploadFields(fields, otherParts, true);
      } catch (err) {
        stop(err);
        return;
      }
      streaming = true;
      start(checked, stream, async () => {
        await formEnd;
        if (lateFields.length) throw badRequest(lateFields.map((f) => `${f}: send it before the file part (the CSV is read as it arrives)`));
        return checkUploadFields(fields, otherParts, true);
      });
    });
    form.on('partsLimit', () => formErrors.push('file: too many form parts (expected file, name, description, phoneNumberColumnName, identifierColumnName)'));
    form.on('error', (err: Error) => stop(badRequest(`file: malformed multipart body: ${err.message}`)));
    form.on('close', () => {
      if (failure !== undefined) return;
      if (formErrors.length) return stop(badRequest(formErrors));
      if (streaming) return formEnded.resolve();
      let checked: UploadFields;
      try {
        checked = checkUploadFields(fields, otherParts, held !== null);
      } catch (err) {
        return stop(err);
      }
      start(checked, Readable.from(held ?? []));
      held = null;
    });
    // The client left (no one to answer), or the body outgrew the limit (the 413 goes once what was written is removed).
    body.on('error', (err: Error) => stop(err instanceof ApiError ? err : badRequest(`file: the upload broke off: ${err.message}`)));
    body.pipe(form);
  });
}

export function audienceRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const d = docs('Audiences');
  const large = { ...auth, maxBodyBytes: AUDIENCE_MAX_BYTES };
  const a = `${prefix}/audience`;
  const id = (req: HttpRequest) => req.params.id as string;

  server.route('POST', a, async (req) => ok(await receiveUpload(ctx, req), 201), { ...large, streamBody: true, doc: d('Create an audience from a CSV upload', { body: { contentType: 'multipart/form-data', schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', contentMediaType: 'text/csv' }, name: { type: 'string' }, description: { type: 'string' }, phoneNumberColumnName: { type: 'string' }, identifierColumnName: { type: 'string' } } } }, response: { status: 201 } }) });
  server.route('GET', a, async (req) => ok(await listAudiences(ctx.db, actorOf(req))), { ...auth, doc: d('List audiences') });
  server.route('GET', `${a}/:id`, async (req) => ok(await getAudience(ctx.db, actorOf(req), id(req))), { ...auth, doc: d('Read an audience') });
  // An audience a campaign still needs (not completed or failed) is not deleted: 409 naming the campaigns.
  server.route('DELETE', `${a}/:id`, async (req) => ok(await deleteAudience(ctx.db, actorOf(req), id(req), campaignsUsingAudience)), { ...auth, doc: d('Delete an audience (409 while a campaign needs it)') });
  server.route('GET', `${a}/:id/members`, async (req) => ok(await listMembers(ctx.db, actorOf(req), id(req), req.query)), { ...auth, doc: d("An audience's members", { query: [{ name: 'page', schema: { type: 'integer', minimum: 1 } }, { name: 'limit', schema: { type: 'integer', minimum: 1 } }] }) });
  server.route('POST', `${a}/:id/members`, async (req) => ok(await addMembers(ctx.db, actorOf(req), id(req), req.json()), 201), { ...large, doc: d('Add members', { body: { schema: addMembersBody }, response: { status: 201 } }) });
  server.route('DELETE', `${a}/:id/members`, async (req) => ok(await deleteMembers(ctx.db, actorOf(req), id(req), req.json())), { ...auth, doc: d('Delete members', { body: { schema: deleteMembersBody } }) });
  server.route('GET', `${a}/:id/members/search`, async (req) => ok(await searchMembers(ctx.db, actorOf(req), id(req), req.query)), { ...auth, doc: d('Search members', { query: [{ name: 'query', required: true }, { name: 'page', schema: { type: 'integer', minimum: 1 } }] }) });
}
