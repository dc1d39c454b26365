// Pronunciation dictionaries (`/waves/v1/pronunciation-dicts`, hosted reference): per organization, lists of
// `{word, pronunciation}` pairs that synthesis says as written in `pronunciation`. Stored, listed, replaced, deleted
// here; resolved to plain entries for synthesis (TTS requests name them by id, agents in `pronunciationDicts`).
import type { Selectable } from 'kysely';
import { z } from 'zod';
import type { Db, Tx } from '../store/db.js';
import type { PronunciationDictsTable } from '../store/schema.js';
import { newId, nowIso } from '../store/ids.js';
import { ApiError } from '../errors.js';

export type PronunciationDictRow = Selectable<PronunciationDictsTable>;

export interface PronunciationItem {
  word: string;
  pronunciation: string;
}

/** Entries in one dictionary, and the length of a word or its pronunciation. */
export const MAX_ITEMS = 1000;
export const MAX_CHARS = 200;
/** Dictionaries one organization keeps. */
export const MAX_DICTS = 500;

/**
 * Characters of the International Phonetic Alphabet: our voices (Flite, RHVoice, Piper) read text, not phonemes, so a
 * phonetic spelling is refused and the word is to be spelled as it is said ("my-sequel").
 */
const IPA = /[\u0250-\u02AF\u02B0-\u02FF\u0298\u03B8\u00F0\u00E6\u0283\u0292\u014B]/u;
export const IPA_REFUSED = 'phonetic (IPA) spellings are not supported by this server\'s voices: spell the word as it is said, e.g. "my-sequel"';

/** Trimmed; blank is refused. */
const text = () => z.string().trim().min(1, 'must not be blank').max(MAX_CHARS);
const item = z.object({ word: text(), pronunciation: text().refine((s) => !IPA.test(s), IPA_REFUSED) }).strict();
/** An inline entry of an agent's `pronunciationDicts`. */
export const agentDictEntry = item;
const items = z.array(item).min(1).max(MAX_ITEMS);
const id = z.string().min(1).max(64);

/** `POST`: `{items}` (at least one item, strings of at least one character). */
export const createBody = z.object({ items: items.describe(`1-${MAX_ITEMS} \`{word, pronunciation}\` pairs; \`pronunciation\` is a spelling for speech (IPA is refused).`) });
/** `PUT`: `{id, items}` (the items replace the dictionary's). */
export const updateBody = z.object({ id, items });
/** `DELETE`: `{id}` in a JSON body. */
export const deleteBody = z.object({ id });

/** A 400 with the wire's zod-shaped details (`{error: "Invalid request body", details: [{code, expected, received, path, message}]}`). */
export class InvalidBody extends ApiError {
  constructor(readonly details: Record<string, unknown>[]) {
    super(400, details.map((d) => `${(d.path as (string | number)[]).join('.') || 'body'}: ${String(d.message)}`));
  }
}

function parse<T extends z.ZodTypeAny>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data as z.output<T>;
  throw new InvalidBody(result.error.issues.map((i) => ({ ...i })));
}

/** The dictionary as the API shows it. */
export function dictDoc(row: PronunciationDictRow, withCreatedAt = true): Record<string, unknown> {
  return { id: row.id, items: JSON.parse(row.items) as PronunciationItem[], ...(withCreatedAt ? { createdAt: row.created_at } : {}) };
}

const notFound = (dictId: string) => new ApiError(404, `Pronunciation dictionary ${dictId} not found`);

export async function listDicts(db: Db, orgId: string): Promise<Record<string, unknown>[]> {
  const rows = await db.selectFrom('pronunciation_dicts').selectAll().where('org_id', '=', orgId).orderBy('created_at', 'asc').orderBy('id', 'asc').execute();
  return rows.map((r) => dictDoc(r));
}

export async function createDict(db: Db, orgId: string, body: unknown): Promise<Record<string, unknown>> {
  const { items: list } = parse(createBody, body);
  const count = await db.selectFrom('pronunciation_dicts').select((eb) => eb.fn.countAll<number>().as('n')).where('org_id', '=', orgId).executeTakeFirst();
  if (Number(count?.n ?? 0) >= MAX_DICTS) throw new ApiError(400, `An organization keeps at most ${MAX_DICTS} pronunciation dictionaries`);
  const now = nowIso();
  const row: PronunciationDictRow = { id: newId(), org_id: orgId, items: JSON.stringify(list), created_at: now, updated_at: now };
  await db.insertInto('pronunciation_dicts').values(row).execute();
  return dictDoc(row);
}

/** Another organization's id is answered as a missing one (404), so ids tell nothing across organizations. */
async function own(q: Db | Tx, orgId: string, dictId: string): Promise<PronunciationDictRow> {
  const row = await q.selectFrom('pronunciation_dicts').selectAll().where('id', '=', dictId).where('org_id', '=', orgId).executeTakeFirst();
  if (!row) throw notFound(dictId);
  return row;
}

export async function updateDict(db: Db, orgId: string, body: unknown): Promise<Record<string, unknown>> {
  const { id: dictId, items: list } = parse(updateBody, body);
  const row = await own(db, orgId, dictId);
  const updated = { ...row, items: JSON.stringify(list), updated_at: nowIso() };
  await db.updateTable('pronunciation_dicts').set({ items: updated.items, updated_at: updated.updated_at }).where('id', '=', dictId).where('org_id', '=', orgId).execute();
  return dictDoc(updated, false);
}

export async function deleteDict(db: Db, orgId: string, body: unknown): Promise<Record<string, unknown>> {
  const { id: dictId } = parse(deleteBody, body);
  await own(db, orgId, dictId);
  await db.deleteFrom('pronunciation_dicts').where('id', '=', dictId).where('org_id', '=', orgId).execute();
  return { id: dictId, deleted: true };
}

/**
 * The entries of the dictionaries `ids` names, in that order (a word in a later dictionary wins), and the ids that
 * name none of the organization's dictionaries.
 */
export async function resolveDicts(q: Db | Tx, orgId: string, ids: readonly string[]): Promise<{ entries: PronunciationItem[]; unknown: string[] }> {
  if (!ids.length) return { entries: [], unknown: [] };
  const unique = [...new Set(ids)];
  const rows = await q.selectFrom('pronunciation_dicts').select(['id', 'items']).where('org_id', '=', orgId).where('id', 'in', unique).execute();
  const byId = new Map(rows.map((r) => [r.id, JSON.parse(r.items) as PronunciationItem[]]));
  return { entries: ids.flatMap((i) => byId.get(i) ?? []), unknown: unique.filter((i) => !byId.has(i)) };
}

/**
 * An agent's `pronunciationDicts` (validated when written by agents/config-schema.ts): dictionary ids (strings) and,
 * as the agent-platform wire also has it, inline `{word, pronunciation}` entries. Malformed elements are skipped.
 */
function splitAgentDicts(value: unknown): { ids: string[]; inline: PronunciationItem[] } {
  const ids: string[] = [];
  const inline: PronunciationItem[] = [];
  for (const v of Array.isArray(value) ? value : []) {
    if (typeof v === 'string') ids.push(v);
    else {
      const parsed = item.safeParse(v);
      if (parsed.success) inline.push(parsed.data);
    }
  }
  return { ids, inline };
}

/** Errors of an agent configuration's `pronunciationDicts` being written: ids naming none of the organization's dictionaries. */
export async function agentDictErrors(q: Db | Tx, orgId: string, value: unknown): Promise<string[]> {
  const { unknown } = await resolveDicts(q, orgId, splitAgentDicts(value).ids);
  return unknown.map((u) => `pronunciationDicts: no pronunciation dictionary ${u} in your organization (POST /waves/v1/pronunciation-dicts first)`);
}

/** What an agent's `pronunciationDicts` says, as entries for synthesis: dictionaries in order, then inline entries (ids deleted since are skipped). */
export async function agentPronunciations(q: Db | Tx, orgId: string, value: unknown): Promise<PronunciationItem[]> {
  const split = splitAgentDicts(value);
  const { entries } = await resolveDicts(q, orgId, split.ids);
  return [...entries, ...split.inline];
}
