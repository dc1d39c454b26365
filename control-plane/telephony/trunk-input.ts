// SIP trunk input (wire §2): every field's type, default and range for create and PATCH; errors name each bad field.
import { badRequest } from '../errors.js';
import {
  TRANSPORTS,
  carrierAddressKey,
  parseCarrierAddress,
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

function int(value: unknown, field: string, min: number, max: number, errors: string[]): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return value;
  errors.push(`${field}: must be an integer from ${min} to ${max}`);
  return undefined;
}

const USERNAME = /^[^\s"\\\x00-\x1f\x7f]{1,128}$/;

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
    if (typeof input.name !== 'string' || input.name.trim() === '' || input.name.length > 200) errors.push('name: required, a non-empty string of at most 200 characters');
    else f.name = input.name.trim();
  }
  if (given('numbers')) f.numbers = validateNumberList(input.numbers, 'numbers', errors) ?? f.numbers;
  if (direction === 'inbound') {
    if (given('allowedAddresses')) f.allowedAddresses = validateAddressList(input.allowedAddresses, 'allowedAddresses', errors) ?? f.allowedAddresses;
    if (given('allowedNumbers')) f.allowedNumbers = validateNumberList(input.allowedNumbers, 'allowedNumbers', errors, 1000) ?? f.allowedNumbers;
    if (given('noiseSuppression')) {
      if (typeof input.noiseSuppression === 'boolean') f.noiseSuppression = input.noiseSuppression;
      else errors.push('noiseSuppression: must be a boolean');
    }
    if (given('ringingTimeoutSecs')) f.ringingTimeoutSecs = int(input.ringingTimeoutSecs, 'ringingTimeoutSecs', 1, 120, errors) ?? f.ringingTimeoutSecs;
    if (given('maxCallDurationSecs')) f.maxCallDurationSecs = int(input.maxCallDurationSecs, 'maxCallDurationSecs', 60, 14400, errors) ?? f.maxCallDurationSecs;
  } else {
    readCarrier(input, f, errors, current !== undefined);
    if (given('cpsLimit')) f.cpsLimit = int(input.cpsLimit, 'cpsLimit', 1, 50, errors) ?? f.cpsLimit;
  }
  if (given('mediaEncryption')) {
    if (MEDIA_ENCRYPTION.includes(input.mediaEncryption as never)) f.mediaEncryption = input.mediaEncryption as string;
    else errors.push(`mediaEncryption: must be one of ${MEDIA_ENCRYPTION.join(', ')}`);
  }
  if (given('headers')) f.headers = validateSipHeaders(input.headers, errors) ?? f.headers;

  if (input.authUsername !== undefined) {
    if (input.authUsername === null) f.authUsername = null;
    else if (typeof input.authUsername === 'string' && USERNAME.test(input.authUsername)) f.authUsername = input.authUsername;
    else errors.push('authUsername: must be null or 1-128 characters without spaces, quotes, backslashes or control characters');
  }
  let password: string | null | undefined;
  if (input.authPassword !== undefined) {
    const p = input.authPassword;
    if (p === null || (typeof p === 'string' && p.length >= 1 && p.length <= 256 && !/[\r\n\0]/.test(p))) password = p;
    else errors.push('authPassword: must be null or a string of 1-256 characters without CR, LF or NUL');
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
  if (input.transport !== undefined) {
    if (!TRANSPORTS.includes(input.transport as never)) errors.push(`transport: must be one of ${TRANSPORTS.join(', ')}`);
    else if (patch && input.transport !== f.transport) errors.push('transport: immutable; create another outbound trunk for another transport');
    else transport = input.transport as Transport;
  }
  if (input.address === undefined && patch) return;
  const parsed = parseCarrierAddress(input.address);
  if (!parsed) {
    errors.push('address: required, the carrier as host or host:port (an optional sip: or sips: prefix is stripped)');
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
