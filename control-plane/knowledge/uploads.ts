// The hosted platform's presigned-upload flow, answered by this server: `get-presigned-url` hands out a signed URL of
// this server (no S3), the client PUTs the file there (the signed key is the authorization, as a presigned URL's is),
// and `compelete-file-upload` (sic) returns the item the PUT made. The key carries the organization, knowledge base,
// file name, type and size, and expires after an hour; a key's file is taken once.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Db } from '../store/db.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { bodyObject, parseBody, says } from '../validation.js';
import { failItem, finishItem, itemDoc, ownKnowledgeBase, startItem, textOfFile, titleOf } from './knowledge-bases.js';
import { kbDb } from './migration.js';
import { isPdf, pdfText } from './pdf.js';

/** Largest file uploaded this way (bytes). */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;
const TTL_S = 3600;

export interface UploadClaim {
  org: string;
  kb: string;
  name: string;
  type: string;
  size: number;
  exp: number;
  n: string;
}

const str = (what: string) => z.string(says(`must be ${what}`)).min(1, `must be ${what}`);
export const presignBody = bodyObject({
  fileName: str('a file name').max(255).optional(),
  file_name: str('a file name').max(255).optional(),
  fileSize: z.number(says('must be a number of bytes')).int().nonnegative().optional(),
  file_size: z.number(says('must be a number of bytes')).int().nonnegative().optional(),
  contentType: str('a MIME type').max(200).optional(),
  content_type: str('a MIME type').max(200).optional(),
  knowledgeBaseId: str('a knowledge base id').optional(),
  knowledge_base_id: str('a knowledge base id').optional(),
});
export const completeBody = presignBody.extend({ key: str('the key get-presigned-url returned') });

/** The SDK's snake_case or camelCase fields, one set. */
function fields(input: z.output<typeof presignBody>): { fileName?: string; fileSize?: number; contentType?: string; knowledgeBaseId?: string } {
  return { fileName: input.fileName ?? input.file_name, fileSize: input.fileSize ?? input.file_size, contentType: input.contentType ?? input.content_type, knowledgeBaseId: input.knowledgeBaseId ?? input.knowledge_base_id };
}

const sign = (secret: Buffer, payload: string) => createHmac('sha256', secret).update(payload).digest('base64url');

export function encodeKey(secret: Buffer, claim: UploadClaim): string {
  const payload = Buffer.from(JSON.stringify(claim)).toString('base64url');
  return `${payload}.${sign(secret, payload)}`;
}

/** The claim of a key this server signed and that has not expired; null otherwise. */
export function decodeKey(secret: Buffer, key: string): UploadClaim | null {
  const [payload, signature, extra] = key.split('.');
  if (!payload || !signature || extra !== undefined) return null;
  const want = Buffer.from(sign(secret, payload));
  const got = Buffer.from(signature);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return null;
  const claim = JSON.parse(Buffer.from(payload, 'base64url').toString()) as UploadClaim;
  return claim.exp * 1000 > Date.now() ? claim : null;
}

/** `POST /knowledgebase/get-presigned-url`: the key (the upload URL is made by the route from it). */
export async function presignUpload(db: Db, actor: Actor, body: unknown, secret: Buffer): Promise<string> {
  const f = fields(parseBody(presignBody, body));
  const errors: string[] = [];
  if (!f.fileName) errors.push('fileName: required');
  if (!f.contentType) errors.push('contentType: required');
  if (!f.knowledgeBaseId) errors.push('knowledgeBaseId: required');
  if (f.fileSize !== undefined && f.fileSize > MAX_UPLOAD_BYTES) errors.push(`fileSize: at most ${MAX_UPLOAD_BYTES} bytes`);
  if (errors.length) throw badRequest(errors);
  if (!isPdf(f.fileName!, f.contentType!) && !textOfFile(f.fileName!, f.contentType!, Buffer.alloc(0))) {
    throw badRequest(`contentType: ${f.fileName} (${f.contentType}) is not a file this server reads: PDF, text or Markdown`);
  }
  await ownKnowledgeBase(db, actor.orgId, f.knowledgeBaseId!);
  const claim: UploadClaim = { org: actor.orgId, kb: f.knowledgeBaseId!, name: f.fileName!, type: f.contentType!, size: f.fileSize ?? MAX_UPLOAD_BYTES, exp: Math.floor(Date.now() / 1000) + TTL_S, n: randomBytes(8).toString('hex') };
  return encodeKey(secret, claim);
}

/** The PUT to the upload URL: the file indexed as an item (failed, with the reason, when it cannot be read). */
export async function receiveUpload(db: Db, key: string, bytes: Buffer, secret: Buffer): Promise<void> {
  const claim = decodeKey(secret, key);
  if (!claim) throw notFound('The upload URL is not valid or has expired');
  if (bytes.length > claim.size) throw badRequest(`The file is larger than the ${claim.size} bytes announced`);
  const kb = await kbDb(db).selectFrom('knowledge_bases').select('org_id').where('id', '=', claim.kb).executeTakeFirst();
  if (!kb || kb.org_id !== claim.org) throw notFound(`Knowledge base ${claim.kb} not found`);
  const taken = await kbDb(db).selectFrom('kb_items').select('id').where('kb_id', '=', claim.kb).where('metadata', 'like', `%"uploadKey":"${claim.n}"%`).executeTakeFirst();
  if (taken) throw new ApiError(409, 'A file was already uploaded with this URL', { errorType: 'upload_used' });
  const pdf = isPdf(claim.name, claim.type);
  const text = pdf ? null : textOfFile(claim.name, claim.type, bytes);
  const item = await startItem(db, claim.org, claim.kb, {
    itemType: 'file',
    title: text ? (titleOf(text.text) ?? claim.name) : claim.name,
    fileName: claim.name,
    contentType: pdf ? 'application/pdf' : (text?.contentType ?? claim.type),
    size: bytes.length,
    metadata: { uploadKey: claim.n },
  });
  try {
    if (pdf) {
      const read = await pdfText(bytes);
      await finishItem(db, item, read.text, { uploadKey: claim.n, pages: read.pages });
    } else await finishItem(db, item, text?.text ?? '');
  } catch (err) {
    await failItem(db, item, err instanceof Error ? err.message : String(err));
  }
}

/** `POST /knowledgebase/compelete-file-upload`: the item the upload made (400 when nothing was uploaded with the key). */
export async function completeUpload(db: Db, actor: Actor, body: unknown, secret: Buffer): Promise<Record<string, unknown>> {
  const input = parseBody(completeBody, body);
  const claim = decodeKey(secret, input.key);
  if (!claim || claim.org !== actor.orgId) throw badRequest('key: not a key get-presigned-url gave this organization, or it has expired');
  await ownKnowledgeBase(db, actor.orgId, claim.kb);
  const row = await kbDb(db).selectFrom('kb_items').selectAll().where('kb_id', '=', claim.kb).where('metadata', 'like', `%"uploadKey":"${claim.n}"%`).executeTakeFirst();
  if (!row) throw badRequest('key: no file was uploaded with this key yet (PUT it to the URL first)');
  return itemDoc(row);
}
