// An OTLP/HTTP trace receiver for the tests: a plain node:http server that takes what an exporter POSTs to /v1/traces
// and decodes it from the protobuf wire format (ExportTraceServiceRequest of opentelemetry-proto's
// collector/trace/v1 and trace/v1, read field by field; OTLP JSON is decoded too) into flat spans.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export type AttributeValue = string | number | boolean | null | AttributeValue[];

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttributeValue>;
  events: { name: string; timeMs: number; attributes: Record<string, AttributeValue> }[];
  status: { code: number; message: string };
  resource: Record<string, AttributeValue>;
  scope: string;
}

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  bytes: number;
}

// ------------------------------------------------------------------------------------------------ protobuf wire
type Field = { wire: 0; value: bigint } | { wire: 1 | 2 | 5; value: Buffer };

/** Every field of one message by number, in order (wire types 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32). */
function fields(buf: Buffer): Map<number, Field[]> {
  const out = new Map<number, Field[]>();
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new Error('protobuf: truncated varint');
      const b = buf[pos++] as number;
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const tag = Number(varint());
    const number = tag >>> 3;
    const wire = tag & 7;
    let field: Field;
    if (wire === 0) field = { wire, value: varint() };
    else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      if (pos + size > buf.length) throw new Error('protobuf: truncated fixed field');
      field = { wire, value: buf.subarray(pos, pos + size) };
      pos += size;
    } else if (wire === 2) {
      const len = Number(varint());
      if (pos + len > buf.length) throw new Error('protobuf: truncated length-delimited field');
      field = { wire, value: buf.subarray(pos, pos + len) };
      pos += len;
    } else throw new Error(`protobuf: unexpected wire type ${wire}`);
    const list = out.get(number) ?? [];
    list.push(field);
    out.set(number, list);
  }
  return out;
}

const bytesOf = (f: Map<number, Field[]>, n: number): Buffer[] => (f.get(n) ?? []).filter((x) => x.wire === 2).map((x) => x.value as Buffer);
const first = (f: Map<number, Field[]>, n: number): Buffer | undefined => bytesOf(f, n)[0];
const str = (f: Map<number, Field[]>, n: number): string => first(f, n)?.toString('utf8') ?? '';
const hex = (f: Map<number, Field[]>, n: number): string => first(f, n)?.toString('hex') ?? '';
const uint = (f: Map<number, Field[]>, n: number): number => {
  const x = (f.get(n) ?? [])[0];
  return x?.wire === 0 ? Number(x.value) : 0;
};
/** fixed64 nanoseconds since the epoch, as milliseconds. */
const nanosMs = (f: Map<number, Field[]>, n: number): number => {
  const x = (f.get(n) ?? [])[0];
  return x?.wire === 1 ? Number((x.value as Buffer).readBigUInt64LE(0) / 1000n) / 1000 : 0;
};

/** AnyValue: string 1, bool 2, int64 3, double 4, array 5 (ArrayValue.values 1), kvlist 6, bytes 7. */
function anyValue(buf: Buffer): AttributeValue {
  const f = fields(buf);
  if (f.has(1)) return str(f, 1);
  const v = (n: number) => (f.get(n) ?? [])[0];
  const b = v(2);
  if (b?.wire === 0) return b.value !== 0n;
  const i = v(3);
  if (i?.wire === 0) return Number(BigInt.asIntN(64, i.value));
  const d = v(4);
  if (d?.wire === 1) return (d.value as Buffer).readDoubleLE(0);
  const arr = first(f, 5);
  if (arr) return bytesOf(fields(arr), 1).map(anyValue);
  const kv = first(f, 6);
  if (kv) return JSON.stringify(keyValues(bytesOf(fields(kv), 1)));
  const raw = first(f, 7);
  if (raw) return raw.toString('base64');
  return null;
}

/** KeyValue: key 1, value 2. */
function keyValues(list: Buffer[]): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list) {
    const f = fields(kv);
    const value = first(f, 2);
    out[str(f, 1)] = value ? anyValue(value) : null;
  }
  return out;
}

/** ExportTraceServiceRequest: resource_spans 1 -> (resource 1 -> attributes 1; scope_spans 2 -> (scope 1 -> name 1; spans 2)). */
export function decodeTraceRequest(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of bytesOf(fields(body), 1)) {
    const rsf = fields(rs);
    const resourceBuf = first(rsf, 1);
    const resource = resourceBuf ? keyValues(bytesOf(fields(resourceBuf), 1)) : {};
    for (const ss of bytesOf(rsf, 2)) {
      const ssf = fields(ss);
      const scopeBuf = first(ssf, 1);
      const scope = scopeBuf ? str(fields(scopeBuf), 1) : '';
      for (const sp of bytesOf(ssf, 2)) {
        // Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8, attributes 9, events 11, status 15.
        const f = fields(sp);
        const statusBuf = first(f, 15);
        const status = statusBuf ? fields(statusBuf) : new Map<number, Field[]>();
        spans.push({
          traceId: hex(f, 1),
          spanId: hex(f, 2),
          parentSpanId: hex(f, 4),
          name: str(f, 5),
          kind: uint(f, 6),
          startMs: nanosMs(f, 7),
          endMs: nanosMs(f, 8),
          attributes: keyValues(bytesOf(f, 9)),
          // Event: time 1, name 2, attributes 3.
          events: bytesOf(f, 11).map((e) => {
            const ef = fields(e);
            return { name: str(ef, 2), timeMs: nanosMs(ef, 1), attributes: keyValues(bytesOf(ef, 3)) };
          }),
          // Status: message 2, code 3.
          status: { code: uint(status, 3), message: str(status, 2) },
          resource,
          scope,
        });
      }
    }
  }
  return spans;
}

// ------------------------------------------------------------------------------------------------ OTLP JSON
type JsonAny = { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number; arrayValue?: { values?: JsonAny[] } };
const jsonValue = (v: JsonAny | undefined): AttributeValue =>
  v?.stringValue ?? v?.boolValue ?? (v?.intValue !== undefined ? Number(v.intValue) : undefined) ?? v?.doubleValue ?? (v?.arrayValue ? (v.arrayValue.values ?? []).map(jsonValue) : null);
const jsonAttributes = (list: { key: string; value?: JsonAny }[] = []) => Object.fromEntries(list.map((a) => [a.key, jsonValue(a.value)]));
const jsonNanos = (v: string | number | undefined) => (v === undefined ? 0 : Number(BigInt(v) / 1000n) / 1000);

/** The same from OTLP JSON (ids in hex, as the JSON encoding carries them). */
export function decodeTraceJson(body: any): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs: any) =>
    (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map((s: any) => ({
        traceId: s.traceId ?? '',
        spanId: s.spanId ?? '',
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind ?? 0,
        startMs: jsonNanos(s.startTimeUnixNano),
        endMs: jsonNanos(s.endTimeUnixNano),
        attributes: jsonAttributes(s.attributes),
        events: (s.events ?? []).map((e: any) => ({ name: e.name, timeMs: jsonNanos(e.timeUnixNano), attributes: jsonAttributes(e.attributes) })),
        status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
        resource: jsonAttributes(rs.resource?.attributes),
        scope: ss.scope?.name ?? '',
      })),
    ),
  );
}

// ------------------------------------------------------------------------------------------------ the receiver
export class OtlpReceiver {
  readonly requests: ReceivedRequest[] = [];
  readonly spans: ReceivedSpan[] = [];
  /** Bodies that could not be decoded (the test should find none). */
  readonly errors: string[] = [];
  private server: Server | null = null;
  port = 0;

  /** Listens on `host:port` (0: a free port). */
  async start(port = 0, host = '127.0.0.1'): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let body = Buffer.concat(chunks);
        this.requests.push({ path: req.url ?? '', headers: req.headers, bytes: body.length });
        try {
          if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
          const json = /json/.test(req.headers['content-type'] ?? '');
          this.spans.push(...(json ? decodeTraceJson(JSON.parse(body.toString('utf8'))) : decodeTraceRequest(body)));
          // An empty ExportTraceServiceResponse: full success.
          res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : Buffer.alloc(0));
        } catch (err) {
          this.errors.push(err instanceof Error ? err.message : String(err));
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** The base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
