// OpenTelemetry: when an OTLP endpoint is set, loads the SDK (a dynamic import: unset, none of it is loaded) and
// registers a tracer provider whose spans go out in batches over OTLP/HTTP (protobuf). The spans themselves are made
// with @opentelemetry/api where they happen (calls/tracing.ts, control-plane/webhooks/dispatcher.ts); without a
// provider they are the API's no-op. Other standard OTEL_* variables the SDK reads itself (OTEL_BSP_*,
// OTEL_TRACES_SAMPLER, OTEL_EXPORTER_OTLP_TIMEOUT, _COMPRESSION, _CERTIFICATE): docs/traces.md.
import { diag, DiagLogLevel, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Settings } from './settings.js';

export interface Tracing {
  /** Sends the spans not yet sent and stops exporting (the SIGTERM path, after the calls have ended). */
  shutdown(): Promise<void>;
}

/** Where spans go, as the SDK derives it: the traces endpoint as given, else `<endpoint>/v1/traces`; null: traces off. */
export function tracesUrl(t: Settings['traces']): string | null {
  if (t.tracesEndpoint) return t.tracesEndpoint;
  if (!t.endpoint) return null;
  return `${t.endpoint.endsWith('/') ? t.endpoint : `${t.endpoint}/`}v1/traces`;
}

/** Starts exporting spans when an endpoint is set; null (and nothing loaded) when not. */
export async function startTracing(t: Settings['traces'], logger: Logger): Promise<Tracing | null> {
  const url = tracesUrl(t);
  if (!url) return null;
  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, { ATTR_SERVICE_NAME }] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  // The SDK reports failed exports through `diag`: to the log, without the headers (they hold the collector's key).
  diag.setLogger(
    {
      error: (message) => logger.warn({ detail: message }, 'traces: export problem'),
      warn: (message) => logger.warn({ detail: message }, 'traces: export problem'),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: t.serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url, headers: t.headers }))],
  });
  trace.setGlobalTracerProvider(provider);
  const where = new URL(url);
  logger.info({ endpoint: `${where.origin}${where.pathname}`, service: t.serviceName }, 'traces: exporting spans over OTLP/HTTP');
  return {
    async shutdown() {
      try {
        await provider.shutdown();
      } catch (err) {
        logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'traces: could not send the last spans');
      }
      trace.disable();
      diag.disable();
    },
  };
}
