/**
 * `rxjs-lock/otel`: a locker's events as OpenTelemetry metrics and spans (`instrumentLocker`).
 * Needs `@opentelemetry/api` (an optional peer dependency) and an OpenTelemetry SDK of yours. The
 * other entry points never load OpenTelemetry.
 *
 * @module rxjs-lock/otel
 */
export * from './integrations/otel/index.js';
