/**
 * Guide "Operations": a locker's events as structured logs and as OpenTelemetry metrics. Run by
 * test/docs/examples.test.ts on the in-memory store with the OpenTelemetry SDK's in-memory reader.
 */
import { defer, filter, lastValueFrom } from 'rxjs';
import { createLocker, type Locker } from 'rxjs-lock';

// #region logs
export function logLockEvents(locker: Locker, logger: { info(fields: object, message: string): void }) {
  return locker.events$
    .pipe(filter((event) => event.type !== 'renewed')) // one line per renewal is a lot
    .subscribe((event) => logger.info({ lock: event.key, ...('fence' in event ? { fence: event.fence } : {}) }, `lock ${event.type}`));
}
// #endregion logs

// #region otel
import { instrumentLocker } from 'rxjs-lock/otel';

export async function instrumented(work: () => Promise<void>): Promise<void> {
  const locker = createLocker();
  // With an OpenTelemetry SDK registered (NodeSDK, or a MeterProvider and TracerProvider):
  const instrumentation = instrumentLocker(locker, { keyGroup: (key) => key.split(':')[0] ?? key });
  try {
    await lastValueFrom(defer(work).pipe(locker.withLock('report:daily')), { defaultValue: undefined });
  } finally {
    instrumentation.stop(); // closing the locker stops it too
    await locker.close();
  }
}
// #endregion otel
