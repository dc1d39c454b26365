// SIP trunk input (wire §2): every field's type, default and range for create and PATCH; errors name each bad field.
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { checkField, says, strictBody } from '../validation.js';
import {
  TRANSPORTS,
  addressListSchema,
  carrierAddressKey,
  numberListSchema,
  parseCarrierAddress,
  sipHeadersSchema,
  unknownFields,
  validateAddressList,
  validateNumberList,
  validateSipHeaders,
  type Transport,
} from './validation.js';

export const DIRECTIONS = ['inbound', 'outbound'] as const;
export type Direction = (typeof DIRECTIONS)[number];
export const MEDIA_ENCRYPTION = ['disable', 'allow', 'require'] as const;

const INBOUND_FIELDS = ['name', 'numbers', 'allowedAddresses', 'allowedNumbers', 'authUsername', 'authPassword', 'mediaEncryption', 'noiseSuppression', 'ringingTimeoutSecs', 'maxCallDurationSecs', 'headers'] as const;
const OUTBOUND_FIELDS = ['name', 'address', 'transport', 'numbers', 'authUsername', 'authPassword', 'mediaEncryption', 'cpsLimit', 'headers'] as const;
export const FIELDS: Record<Direction, readonly string[]> = { inbound: INBOUND_FIELDS, outbound: OUTBOUND_FIELDS };

/** A trunk's stored settings (everything but the password). */
export interface TrunkFields {
  name: string;
  numbers: string[];
  allowedAddresses: string[];
  allowedNumbers: string[];
  authUsername: string | null;
  mediaEncryption: string;
  noiseSuppression: boolean;
  ringingTimeoutSecs: number | null;
  maxCallDurationSecs: number | null;
  headers: Record<string, string>;
  address: string | null;
  addressKey: string | null;
  transport: Transport | null;
  cpsLimit: number | null;
}

export interface TrunkInput {
  fields: TrunkFields;
  /** A new password; null clears it; undefined leaves it as it is. */
  password: string | null | undefined;
}

function defaults(direction: Direction): TrunkFields {
  const inbound = direction === 'inbound';
  return {
    name: '',
    numbers: [],
    allowedAddresses: [],
    allowedNumbers: [],
    authUsername: null,
    mediaEncryption: 'allow',
    noiseSuppression: false,
    ringingTimeoutSecs: inbound ? 30 : null,
    maxCallDurationSecs: inbound ? 3600 : null,
    headers: {},
    address: null,
    addressKey: null,
    transport: inbound ? null : 'udp',
    cpsLimit: inbound ? null : 1,
  };
}

const USERNAME = /^[^\s"\\\x00-\x1f\x7f]{1,128}$/;
/**
 * The shortest new inbound trunk password (the digest secret a caller must present: at 10 guesses per address and 50
 * per trunk a minute, then cooling off, 12 characters are out of reach). Stored shorter ones keep working until
 * changed; outbound trunks carry the carrier's password as the carrier issued it.
 */
export const INBOUND_PASSWORD_MIN = 12;
const PASSWORD_MESSAGE = 'must be null or a string of 1-256 characters without CR, LF or NUL';
const ADDRESS_MESSAGE = 'required, the carrier as host or host:port (an optional sip: or sips: prefix is stripped)';
const intRange = (min: number, max: number) => z.number(says(`must be an integer from ${min} to ${max}`)).int().min(min).max(max);

/**
 * Every trunk field's type and range (inbound and outbound fields; wire §2). Checked in code after these: fields of
 * the other direction, the carrier address form and immutability of `address`/`transport` on PATCH, and that
 * `authUsername` and `authPassword` come together.
 */
export const trunkShape = {
  name: z.string(says('required, a non-empty string of at most 200 characters')).regex(/\S/).max(200),
  numbers: numberListSchema(100).describe('E.164 numbers of this trunk.'),
  allowedAddresses: addressListSchema(100).describe('Inbound: peer IPs/CIDRs allowed to call (empty: any).'),
  allowedNumbers: numberListSchema(1000).describe('Inbound: caller numbers allowed (empty: any).'),
  authUsername: z.string(says('must be null or 1-128 characters without spaces, quotes, backslashes or control characters')).regex(USERNAME).nullable(),
  authPassword: z
    .string(says(PASSWORD_MESSAGE))
    .min(1)
    .max(256)
    .regex(/^[^\r\n\0]*$/)
    .nullable()
    .describe(`Stored encrypted, never returned. A new inbound trunk password has at least ${INBOUND_PASSWORD_MIN} characters.`),
  mediaEncryption: z.enum(MEDIA_ENCRYPTION, says(`must be one of ${MEDIA_ENCRYPTION.join(', ')}`)),
  noiseSuppression: z.boolean(says('must be a boolean')),
  ringingTimeoutSecs: intRange(1, 120),
  maxCallDurationSecs: intRange(60, 14400),
  headers: sipHeadersSchema,
  address: z.string(says(ADDRESS_MESSAGE)).describe('Outbound: the carrier as host or host:port (an optional sip: or sips: prefix is stripped); immutable.'),
  transport: z.enum(TRANSPORTS, says(`must be one of ${TRANSPORTS.join(', ')}`)).describe('Outbound; immutable.'),
  cpsLimit: intRange(1, 50).describe('Outbound: calls per second to the carrier.'),
};

/** An inbound trunk's new password: as `authPassword`, and at least INBOUND_PASSWORD_MIN characters. */
const inboundAuthPassword = z
  .string(says(`must be null or a string of ${INBOUND_PASSWORD_MIN}-256 characters without CR, LF or NUL`))
  .min(INBOUND_PASSWORD_MIN, `must be at least ${INBOUND_PASSWORD_MIN} characters (a new inbound trunk password; one stored shorter keeps working until it is changed)`)
  .max(256)
  .regex(/^[^\r\n\0]*$/)
  .nullable()
  .describe(`Stored encrypted, never returned; at least ${INBOUND_PASSWORD_MIN} characters.`);

const pick = <K extends keyof typeof trunkShape>(keys: readonly K[]) => Object.fromEntries(keys.map((k) => [k, trunkShape[k]])) as Pick<typeof trunkShape, K>;
const optional = <T extends z.ZodRawShape>(shape: T) => z.object(shape).partial().shape;

/** `POST /sip-trunk/inbound`: `name` required; unknown fields refused. */
export const inboundTrunkBody = strictBody({ ...optional(pick(INBOUND_FIELDS)), name: trunkShape.name, authPassword: inboundAuthPassword.optional() });
/** `POST /sip-trunk/outbound`: `name` and `address` required; unknown fields refused. */
export const outboundTrunkBody = strictBody({ ...optional(pick(OUTBOUND_FIELDS)), name: trunkShape.name, address: trunkShape.address });
/** `PATCH /sip-trunk/{id}`: any field of the trunk's direction (others refused). */
export const trunkPatchBody = z.object(trunkShape).partial().strict().describe('Fields of the trunk\'s own direction only; `address` and `transport` may be repeated, not changed.');

/** One field checked by its schema: the parsed value, or undefined after pushing its errors. */
const field = <K extends keyof typeof trunkShape>(key: K, value: unknown, errors: string[]) => checkField(trunkShape, key, value, errors);

/**
 * Validates a create body (`current` absent) or a PATCH body over a trunk's current settings; throws one 400
 * naming every bad field. `address` and `transport` are immutable: a PATCH may repeat them, not change them.
 */
export function readTrunkInput(direction: Direction, input: Record<string, unknown>, current?: { fields: TrunkFields; hasPassword: boolean }): TrunkInput {
  const errors: string[] = [];
  const other = direction === 'inbound' ? OUTBOUND_FIELDS : INBOUND_FIELDS;
  for (const key of Object.keys(input)) {
    if (FIELDS[direction].includes(key)) continue;
    errors.push(other.includes(key as never) ? `${key}: not a field of ${direction} trunks` : unknownFields({ [key]: null }, FIELDS[direction])[0] as string);
  }
  const f: TrunkFields = current ? { ...current.fields } : defaults(direction);
  const given = (k: string) => input[k] !== undefined;

  if (given('name') || !current) {
    const name = field('name', input.name, errors);
    if (name.ok) f.name = (name.data as string).trim();
  }
  if (given('numbers')) f.numbers = validateNumberList(input.numbers, 'numbers', errors) ?? f.numbers;
  if (direction === 'inbound') {
    if (given('allowedAddresses')) f.allowedAddresses = validateAddressList(input.allowedAddresses, 'allowedAddresses', errors) ?? f.allowedAddresses;
    if (given('allowedNumbers')) f.allowedNumbers = validateNumberList(input.allowedNumbers, 'allowedNumbers', errors, 1000) ?? f.allowedNumbers;
    if (given('noiseSuppression')) f.noiseSuppression = field('noiseSuppression', input.noiseSuppression, errors).data ?? f.noiseSuppression;
    if (given('ringingTimeoutSecs')) f.ringingTimeoutSecs = field('ringingTimeoutSecs', input.ringingTimeoutSecs, errors).data ?? f.ringingTimeoutSecs;
    if (given('maxCallDurationSecs')) f.maxCallDurationSecs = field('maxCallDurationSecs', input.maxCallDurationSecs, errors).data ?? f.maxCallDurationSecs;
  } else {
    readCarrier(input, f, errors, current !== undefined);
    if (given('cpsLimit')) f.cpsLimit = field('cpsLimit', input.cpsLimit, errors).data ?? f.cpsLimit;
  }
  if (given('mediaEncryption')) f.mediaEncryption = field('mediaEncryption', input.mediaEncryption, errors).data ?? f.mediaEncryption;
  if (given('headers')) f.headers = validateSipHeaders(input.headers, errors) ?? f.headers;

  if (input.authUsername !== undefined) {
    const username = field('authUsername', input.authUsername, errors);
    if (username.ok) f.authUsername = username.data as string | null;
  }
  let password: string | null | undefined;
  if (input.authPassword !== undefined) {
    // Only a password given now is held to the inbound minimum: a trunk's stored one is never checked again.
    const p = direction === 'inbound' ? checkField({ authPassword: inboundAuthPassword }, 'authPassword', input.authPassword, errors) : field('authPassword', input.authPassword, errors);
    if (p.ok) password = p.data as string | null;
  }
  // Clearing the username without naming the password clears both.
  if (input.authUsername === null && input.authPassword === undefined && current?.hasPassword) password = null;
  const hasPassword = password === undefined ? Boolean(current?.hasPassword) : password !== null;
  if (f.authUsername !== null && !hasPassword) errors.push('authPassword: required with authUsername (digest credentials are a username and a password)');
  if (f.authUsername === null && hasPassword) errors.push('authUsername: required with authPassword (digest credentials are a username and a password)');
  if (errors.length) throw badRequest(errors);
  return { fields: f, password };
}

/** Outbound `address` and `transport`: required and normalised on create, immutable on PATCH. */
function readCarrier(input: Record<string, unknown>, f: TrunkFields, errors: string[], patch: boolean): void {
  let transport = f.transport as Transport;
  if (input.transport !== undefined && field('transport', input.transport, errors).ok) {
    if (patch && input.transport !== f.transport) errors.push('transport: immutable; create another outbound trunk for another transport');
    else transport = input.transport as Transport;
  }
  if (input.address === undefined && patch) return;
  if (!field('address', input.address, errors).ok) return;
  const parsed = parseCarrierAddress(input.address);
  if (!parsed) {
    errors.push(`address: ${ADDRESS_MESSAGE}`);
    return;
  }
  // A `sips:` address without an explicit transport means TLS.
  if (!patch && parsed.secure && input.transport === undefined) transport = 'tls';
  const key = carrierAddressKey(parsed, transport);
  if (patch) {
    if (key !== f.addressKey) errors.push('address: immutable; create another outbound trunk for another carrier address');
    return;
  }
  f.address = parsed.address;
  f.addressKey = key;
  f.transport = transport;
}
