// Audience CSV uploads (wire §5), read as a stream: rows are parsed as the body arrives, checked, and written in
// batches to an audience that stays invisible (pending) until its last row is in. Work is cut into slices of a few
// milliseconds with the event loop let go between them; memory holds one batch, not the file. A refused or failed
// upload is deleted before the answer goes; one whose server died is swept once it has been still for a while.
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse, CsvError } from 'csv-parse';
import type { Db } from '../store/db.js';
import { newId, nowIso } from '../store/ids.js';
import { ApiError, badRequest } from '../errors.js';
import type { Actor } from '../agents/agents.js';
import { parseCallVariables } from '../calls/variables.js';
import { isE164, unknownFields } from '../telephony/validation.js';
import { MAX_MEMBERS, SHOWN, audienceView, columnNameErrors, insertMembers, type NewMember } from './audiences.js';
import { ABANDONED_AFTER_MS, DISCARDING, removePending, nextTurn, sweepAbandonedUploads } from './audience-removal.js';

export const UPLOAD_FIELDS = ['file', 'name', 'description', 'phoneNumberColumnName', 'identifierColumnName'] as const;
/** Rows per batch: one transaction (two look-ups and an INSERT) of this many rows takes a couple of milliseconds. */
const UPLOAD_BATCH = 100;
/** Bytes of CSV parsed in one go: a slice's rows parse in a millisecond or two. */
const SLICE_BYTES = 16 * 1024;
/** The longest an upload works before it lets the event loop run (timers, sockets, other requests). */
const SLICE_MS = 8;
/** Longest CSV record, in characters: a row of 100 variables of 4000 characters fits. */
const MAX_RECORD_CHARS = 512 * 1024;

/** An upload form's text fields, checked. */
export interface UploadFields {
  name: string;
  description: string | null;
  phoneColumn: string;
  idColumn: string | null;
}

const optionalText = (value: string | undefined): string | null => (value === undefined || value.trim() === '' ? null : value.trim());
const hasNul = (text: string): boolean => text.includes('\u0000');

/**
 * Checks an upload form: its text fields, the names of its other file parts, and whether the CSV part came;
 * 400 naming each problem.
 */
export function checkUploadFields(fields: Record<string, string>, otherParts: string[], hasFile: boolean): UploadFields {
  const names = [...Object.keys(fields), ...otherParts, ...(hasFile ? ['file'] : [])];
  const errors = unknownFields(Object.fromEntries(names.map((n) => [n, true])), UPLOAD_FIELDS);
  for (const [field, value] of Object.entries(fields)) if (hasNul(value)) errors.push(`${field}: must not contain NUL bytes`);
  const name = fields.name?.trim() ?? '';
  if (name === '' || name.length > 200) errors.push('name: required, a non-empty text field of at most 200 characters');
  const description = optionalText(fields.description);
  if (description && description.length > 2000) errors.push('description: at most 2000 characters');
  const phoneColumn = optionalText(fields.phoneNumberColumnName);
  if (!phoneColumn) errors.push('phoneNumberColumnName: required, the CSV column holding E.164 phone numbers');
  const idColumn = optionalText(fields.identifierColumnName);
  if (idColumn && idColumn === phoneColumn) errors.push('identifierColumnName: must differ from phoneNumberColumnName');
  if (!hasFile) errors.push(`file: required, the CSV as a file part named "file"${fields.file !== undefined ? ' (it came as a text field)' : ''}`);
  if (errors.length || !phoneColumn) throw badRequest(errors);
  return { name, description, phoneColumn, idColumn };
}

/** The rows one kind of problem was found on: the first few kept (with the value, if any), the rest counted. */
class Offenders {
  readonly shown: { line: number; value?: string }[] = [];
  count = 0;

  add(line: number, value?: string): void {
    if (this.shown.length < SHOWN) this.shown.push({ line, value });
    this.count++;
  }

  /** `line 3 ("555-0100"), line 7 ("x") and 12 more`. */
  toString(): string {
    const shown = this.shown.map((r) => (r.value === undefined ? `line ${r.line}` : `line ${r.line} (${JSON.stringify(r.value.slice(0, 40))})`)).join(', ');
    return this.count > this.shown.length ? `${shown} and ${this.count - this.shown.length} more` : shown;
  }
}

/** A row read from the file, waiting for its batch: `ok` false when it has a problem of its own (it is not stored). */
interface Candidate {
  line: number;
  ok: boolean;
  member: NewMember;
}

interface Columns {
  phoneAt: number;
  idAt: number;
  vars: { col: string; i: number }[];
}

/** Cuts a byte stream into SLICE_BYTES pieces, so no one parse step holds the loop for long. */
async function* slices(source: AsyncIterable<Buffer | string>): AsyncGenerator<Buffer> {
  for await (const chunk of source) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let at = 0; at < bytes.length; at += SLICE_BYTES) yield bytes.subarray(at, at + SLICE_BYTES);
  }
}

/** One upload on its way into the store. */
class UploadImport {
  /** The pending audience, once the first batch is written; null again once committed or removed. */
  private id: string | null = null;
  private columns: Columns | null = null;
  private headerSeen = false;
  private rows = 0;
  private stored = 0;
  private skipped = 0;
  private batch: Candidate[] = [];
  private since = performance.now();
  private readonly started = nowIso();
  private readonly badNumbers = new Offenders();
  private readonly emptyIds = new Offenders();
  private readonly repeatedIds = new Offenders();
  private readonly nulRows = new Offenders();
  private readonly badValues: string[] = [];

  constructor(
    private readonly db: Db,
    private readonly actor: Actor,
    private readonly fields: UploadFields,
  ) {}

  /** Reads the CSV to its end, storing each batch as it fills; 400 for a file that cannot be an audience. */
  async read(csv: Readable): Promise<void> {
    const parser = parse({
      bom: true,
      trim: true,
      skip_empty_lines: true,
      skip_records_with_empty_values: true,
      record_delimiter: ['\r\n', '\n', '\r'],
      info: true,
      max_record_size: MAX_RECORD_CHARS,
    });
    // A failure anywhere (the client left, the body outgrew its limit, the CSV broke) ends the loop below through the parser.
    const flowing = pipeline(csv, slices, parser);
    flowing.catch(() => {});
    try {
      for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
        await this.take(record, info.lines);
        if (performance.now() - this.since > SLICE_MS) await this.breathe();
      }
      await flowing;
    } catch (err) {
      if (err instanceof CsvError) throw badRequest(`file: not a readable CSV: ${err.message}`);
      throw err;
    }
    await this.flush();
  }

  private async breathe(): Promise<void> {
    await nextTurn();
    this.since = performance.now();
  }

  private async take(record: string[], line: number): Promise<void> {
    if (!this.headerSeen) {
      this.headerSeen = true;
      this.columns = this.readHeader(record, line);
      return;
    }
    const columns = this.columns as Columns;
    if (++this.rows > MAX_MEMBERS) throw badRequest(`file: at most ${MAX_MEMBERS} members (rows after the header)`);
    if (record.some(hasNul)) {
      this.nulRows.add(line);
      return;
    }
    const phoneNumber = record[columns.phoneAt] as string;
    if (!isE164(phoneNumber)) {
      this.badNumbers.add(line, phoneNumber);
      return;
    }
    let ok = true;
    const identifier = columns.idAt < 0 ? null : (record[columns.idAt] as string);
    if (identifier === '') {
      this.emptyIds.add(line);
      ok = false;
    }
    const parsed = parseCallVariables(Object.fromEntries(columns.vars.map(({ col, i }) => [col, record[i] as string])), 'column');
    if (parsed.errors.length) {
      ok = false;
      // Column names passed the variable-name rule (no `.` or `:`), so each error reads back as `column.NAME: why`.
      if (this.badValues.length < SHOWN) this.badValues.push(`file: line ${line}, ${parsed.errors.map((e) => e.replace(/^column\.([^:]*):/, 'column "$1":')).join('; ')}`);
    }
    this.batch.push({ line, ok, member: { phoneNumber, identifier, variables: parsed.variables } });
    if (this.batch.length >= UPLOAD_BATCH) await this.flush();
  }

  /** Where the number, the identifier and the variables are; 400 for a header that cannot name them. */
  private readHeader(header: string[], line: number): Columns {
    const { phoneColumn, idColumn } = this.fields;
    if (header.some(hasNul)) throw badRequest(`file: NUL bytes are not allowed in the CSV; line ${line} (the header row) holds one`);
    const errors: string[] = [];
    header.forEach((col, i) => {
      if (col === '') errors.push(`file: column ${i + 1} of the header row has no name`);
      else if (header.indexOf(col) !== i) errors.push(`file: column "${col}" appears twice in the header row`);
    });
    const listed = header.map((c) => JSON.stringify(c)).join(', ');
    const phoneAt = header.indexOf(phoneColumn);
    if (phoneAt < 0) errors.push(`phoneNumberColumnName: no column "${phoneColumn}" in the CSV header row (its columns: ${listed})`);
    const idAt = idColumn ? header.indexOf(idColumn) : -1;
    if (idColumn && idAt < 0) errors.push(`identifierColumnName: no column "${idColumn}" in the CSV header row (its columns: ${listed})`);
    const vars = header.map((col, i) => ({ col, i })).filter(({ col, i }) => col !== '' && i !== phoneAt && i !== idAt);
    errors.push(...columnNameErrors(vars.map((v) => v.col)));
    if (errors.length) throw badRequest(errors);
    return { phoneAt, idAt, vars };
  }

  /**
   * Stores the waiting batch in one transaction: a number already stored (an earlier row) is skipped and counted, an
   * identifier already held is a problem of that row. The pending audience is written with the first batch, and
   * each batch marks it alive (and finds it gone if a sweep took it).
   */
  private async flush(): Promise<void> {
    const rows = this.batch;
    if (!rows.length) return;
    this.batch = [];
    const id = await this.pendingAudience();
    await this.db.transaction().execute(async (tx) => {
      const alive = await tx.updateTable('audiences').set({ pending_since: nowIso() }).where('id', '=', id).where('pending_since', '>', DISCARDING).executeTakeFirst();
      if (Number(alive.numUpdatedRows) !== 1) throw new ApiError(408, `file: the upload stood still for over ${ABANDONED_AFTER_MS / 60_000} minutes and was dropped; send it again`);
      const numbers = new Set(
        (await tx.selectFrom('audience_members').select('phone_number').where('audience_id', '=', id).where('phone_number', 'in', rows.map((r) => r.member.phoneNumber)).execute()).map((r) => r.phone_number),
      );
      const wanted = rows.flatMap((r) => (r.member.identifier ? [r.member.identifier] : []));
      const held = new Set(
        wanted.length ? (await tx.selectFrom('audience_members').select('identifier').where('audience_id', '=', id).where('identifier', 'in', wanted).execute()).map((r) => r.identifier) : [],
      );
      const fresh: NewMember[] = [];
      for (const { line, ok, member } of rows) {
        if (numbers.has(member.phoneNumber)) {
          this.skipped++;
          continue;
        }
        numbers.add(member.phoneNumber);
        const identifier = member.identifier;
        if (identifier) {
          if (held.has(identifier)) {
            this.repeatedIds.add(line, identifier);
            continue;
          }
          held.add(identifier);
        }
        if (ok) fresh.push(member);
      }
      await insertMembers(tx, id, fresh, this.stored, this.started);
      this.stored += fresh.length;
    });
    await this.breathe();
  }

  private async pendingAudience(): Promise<string> {
    if (this.id) return this.id;
    const id = newId();
    const { name, description, phoneColumn, idColumn } = this.fields;
    const now = this.started;
    await this.db
      .insertInto('audiences')
      .values({ id, org_id: this.actor.orgId, name, description, phone_number_column: phoneColumn, identifier_column: idColumn, created_by: this.actor.name, created_at: now, updated_at: now, pending_since: nowIso() })
      .execute();
    this.id = id;
    return id;
  }

  /** Every problem found, as the 400's errors (none: the file is good). */
  private problems(): string[] {
    const { phoneColumn, idColumn } = this.fields;
    const errors: string[] = [];
    if (this.nulRows.count) errors.push(`file: NUL bytes are not allowed in the CSV; they are on ${this.nulRows.toString()}`);
    if (this.badNumbers.count) errors.push(`file: column "${phoneColumn}" must hold E.164 numbers such as +15550100; it does not on ${this.badNumbers.toString()}`);
    if (this.emptyIds.count) errors.push(`file: column "${idColumn}" (identifierColumnName) is empty on ${this.emptyIds.toString()}`);
    if (this.repeatedIds.count) errors.push(`file: column "${idColumn}" (identifierColumnName) must be unique; values repeat on ${this.repeatedIds.toString()}`);
    return [...errors, ...this.badValues];
  }

  /** Makes the audience visible (with the form's final name and description), or refuses the whole upload. */
  async commit(final: UploadFields): Promise<Record<string, unknown>> {
    if (!this.headerSeen) throw badRequest('file: the CSV is empty; it needs a header row naming its columns, then one row per member');
    if (this.rows === 0) throw badRequest('file: the CSV has a header row but no members');
    const errors = this.problems();
    if (errors.length) throw badRequest(errors);
    const id = await this.pendingAudience();
    const now = nowIso();
    const done = await this.db
      .updateTable('audiences')
      .set({ pending_since: null, name: final.name, description: final.description, created_at: now, updated_at: now })
      .where('id', '=', id)
      .where('pending_since', '>', DISCARDING)
      .executeTakeFirst();
    if (Number(done.numUpdatedRows) !== 1) throw new ApiError(408, 'file: the upload stood still too long and was dropped; send it again');
    this.id = null;
    const row = await this.db.selectFrom('audiences').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    return { ...audienceView(row, this.stored), skippedDuplicates: this.skipped };
  }

  /** Removes what this upload wrote (nothing once committed). */
  async discard(): Promise<void> {
    const id = this.id;
    this.id = null;
    // Left behind (the store failed too), it stays invisible and a later sweep removes it.
    if (id) await removePending(this.db, id).catch(() => {});
  }
}

/**
 * `POST /audience`: reads `csv` into a new audience under `fields`. The audience appears whole or not at all: rows
 * are stored in batches to a pending audience, and any refusal (400 naming the rows), failure or departed client
 * removes it before this returns. `finish` (the rest of the form, once the file has ended) may still refuse the
 * upload, or give the final name and description.
 */
export async function importAudience(db: Db, actor: Actor, fields: UploadFields, csv: Readable, finish?: () => Promise<UploadFields>): Promise<Record<string, unknown>> {
  await sweepAbandonedUploads(db).catch(() => 0);
  const upload = new UploadImport(db, actor, fields);
  try {
    await upload.read(csv);
    return await upload.commit(finish ? await finish() : fields);
  } catch (err) {
    await upload.discard();
    throw err;
  }
}
