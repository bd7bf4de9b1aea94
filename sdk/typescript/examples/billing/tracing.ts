// Traces for the example, as the Go example's internal/tracing.Setup reads the standard OTEL_*
// names (docs/tracing.md): OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or
// OTEL_TRACES_EXPORTER=otlp, turn them on (OTLP over HTTP, JSON); OTEL_TRACES_EXPORTER=none and
// OTEL_SDK_DISABLED=true turn them off. The SDK itself only uses @opentelemetry/api; the exporter
// is the service's choice, so it is loaded here, and only when asked for.

import { trace } from "@opentelemetry/api";

/** Installs a global tracer provider when OTEL_* asks for one; returns what flushes it at exit. */
export async function setupTracing(serviceName: string, warn: (line: string) => void): Promise<() => Promise<void>> {
  const env = process.env;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? "").trim().toLowerCase();
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (env.OTEL_SDK_DISABLED === "true" || exporter === "none") return async () => undefined;
  if (exporter !== "" && exporter !== "otlp") {
    warn(`OTEL_TRACES_EXPORTER=${exporter} is not supported (otlp or none); going on without traces`);
    return async () => undefined;
  }
  if (!endpoint && exporter !== "otlp") return async () => undefined;
  try {
    const { BasicTracerProvider, BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
    const { resourceFromAttributes } = await import("@opentelemetry/resources");
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME || serviceName }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    trace.setGlobalTracerProvider(provider);
    return () => provider.shutdown();
  } catch (e) {
    warn(`traces need @opentelemetry/sdk-trace-base, exporter-trace-otlp-http and resources (npm ci in sdk/typescript installs them): ${(e as Error).message}; going on without traces`);
    return async () => undefined;
  }
}
