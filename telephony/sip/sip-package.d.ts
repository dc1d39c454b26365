// Types for the parts of the npm `sip` package (0.0.6, plain JavaScript) that telephony/sip uses.
declare module 'sip' {
  export interface RawUri {
    schema?: string;
    user?: string;
    password?: string;
    host: string;
    port?: number;
    params: Record<string, string | null>;
    headers: Record<string, string>;
  }
  export interface RawAor {
    name?: string;
    uri: string | RawUri;
    params: Record<string, string | null>;
  }
  export interface RawVia {
    version?: string;
    protocol: string;
    host: string;
    port?: number;
    params: Record<string, string | null>;
  }
  export interface RawCSeq {
    seq: number;
    method: string;
  }
  /** Parsed headers: the ones below are objects, any other is the raw value (repeats joined with commas). */
  export interface RawHeaders {
    via?: RawVia[];
    to?: RawAor;
    from?: RawAor;
    'call-id'?: string;
    cseq?: RawCSeq;
    /** Parsed: a list (or '*'); a string when we set it for sending. */
    contact?: RawAor[] | string;
    route?: RawAor[] | string;
    'record-route'?: RawAor[];
    'content-length'?: number;
    [name: string]: unknown;
  }
  export interface RawMessage {
    method?: string;
    uri?: string | RawUri;
    status?: number;
    reason?: string;
    version?: string;
    headers: RawHeaders;
    content?: string;
  }
  /** What a transaction sends through: one hop. */
  export interface Connection {
    send(m: RawMessage): void;
    release(): void;
    protocol: string;
  }
  export interface ServerTransaction {
    send(m: RawMessage): void;
    message(m: RawMessage): void;
    shutdown(): void;
  }
  export interface ClientTransaction {
    message(m: RawMessage, remote?: unknown): void;
    shutdown(): void;
  }
  export interface TransactionLayer {
    createServerTransaction(rq: RawMessage, cn: Connection): ServerTransaction;
    createClientTransaction(cn: Connection, rq: RawMessage, callback: (rs: RawMessage) => void): ClientTransaction;
    getServer(m: RawMessage): ServerTransaction | undefined;
    getClient(m: RawMessage): ClientTransaction | undefined;
    destroy(): void;
  }
  export interface ResolvedAddress {
    protocol: string;
    address: string;
    port: number;
  }
  /** Parses a whole message (start line, headers, body); undefined when the start line or a header line is not SIP. */
  export function parse(s: string): RawMessage | undefined;
  export function stringify(m: RawMessage): string;
  export function makeResponse(rq: RawMessage, status: number, reason?: string, extension?: { headers?: Record<string, unknown>; content?: string }): RawMessage;
  export function parseUri(s: string | RawUri): RawUri | undefined;
  export function stringifyUri(uri: string | RawUri): string;
  export function parseAOR(data: { s: string; i: number }): RawAor;
  export function generateBranch(): string;
  /** RFC 3263 lookup: IP literals directly, hostnames through DNS SRV then A/AAAA. */
  export function resolve(uri: RawUri, action: (addresses: ResolvedAddress[]) => void): void;
  export function makeTransactionLayer(options: Record<string, unknown>, transport?: unknown): TransactionLayer;
}

declare module 'sip/digest.js' {
  export function calculateUserRealmPasswordHash(user: string, realm: string, password: string): string;
  export function calculateDigest(ctx: { ha1: string; method: string; nonce: string; nc?: string; cnonce?: string; qop?: string; uri: string; entity?: string }): string;
}
