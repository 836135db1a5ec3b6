/**
 * `instrumentLocker`: a locker's events as OpenTelemetry metrics and spans.
 */
import { metrics, trace, type Attributes, type MeterProvider, type TracerProvider } from '@opentelemetry/api';
import type { Locker } from '../../engine/Locker.js';
import { LockOptionsError } from '../../errors/errors.js';
import { LockMetrics } from './lockMetrics.js';
import { LockSpans } from './lockSpans.js';

/**
 * Options of {@link instrumentLocker}.
 *
 * @example
 * ```ts
 * import { instrumentLocker, type InstrumentLockerOptions } from 'rxjs-lock/otel';
 *
 * // metrics only, grouped by the key's first segment ('invoice:42' -> 'invoice')
 * const options: InstrumentLockerOptions = { spans: false, keyGroup: (key) => key.split(':')[0] };
 * instrumentLocker(locker, options);
 * ```
 */
export interface InstrumentLockerOptions {
  /**
   * Where the metrics go.
   * @default the global MeterProvider (`metrics.getMeterProvider()` of `@opentelemetry/api`)
   */
  meterProvider?: MeterProvider;
  /**
   * Where the spans go.
   * @default the global TracerProvider (`trace.getTracerProvider()`)
   */
  tracerProvider?: TracerProvider;
  /** Record metrics. @default true */
  metrics?: boolean;
  /** Record spans. @default true */
  spans?: boolean;
  /**
   * The `rxjs_lock.key_group` attribute of a key's metrics: a few values for many keys (say
   * `(key) => key.split(':')[0]`), or `undefined` for none. Lock keys themselves are usually too
   * many for metric attributes (every distinct value is a time series), so metrics carry no key
   * unless you group them; spans always carry the key (`rxjs_lock.key`).
   * @default no key attribute on metrics
   */
  keyGroup?: (key: string) => string | undefined;
}

/**
 * What {@link instrumentLocker} returns.
 *
 * @example
 * ```ts
 * const instrumentation: LockerInstrumentation = instrumentLocker(locker);
 * // later, to stop recording while the locker goes on (closing the locker stops it too):
 * instrumentation.stop();
 * ```
 */
export interface LockerInstrumentation {
  /** Stops recording and ends the hold spans still open. It stops by itself when the locker closes. */
  stop(): void;
}

const OPTION_NAMES = ['meterProvider', 'tracerProvider', 'metrics', 'spans', 'keyGroup'];
const SCOPE = 'rxjs-lock';

/**
 * Records a locker's `events$` as OpenTelemetry metrics and spans, through `@opentelemetry/api`
 * (an optional peer dependency: install it and an SDK to use this entry point).
 *
 * Metrics:
 * - `rxjs_lock.acquisitions` (counter): acquisitions that ended, by `rxjs_lock.outcome`
 *   (`acquired`, `timed_out`, `skipped`, `failed`, `closed`) and, when acquired,
 *   `rxjs_lock.handoff` (true: from the previous local holder, no store call);
 * - `rxjs_lock.acquire.wait_time` (histogram, ms): from subscribing to the end of the wait;
 * - `rxjs_lock.hold.duration` (histogram, ms): from the grant to the release or loss, by outcome
 *   (`released`, `passed`, `gone`, `lost`);
 * - `rxjs_lock.renewals` (counter) by outcome (`renewed`, `failed`); `rxjs_lock.losses` (counter)
 *   by `rxjs_lock.reason`; `rxjs_lock.releases` (counter) by outcome (`released`, `passed`, `gone`,
 *   `failed`, `abandoned`).
 *
 * Spans (tracer `rxjs-lock`): `rxjs_lock.acquire` for each acquisition's wait (its status is an
 * error when it timed out, was skipped, failed or was closed) and `rxjs_lock.hold` from each grant
 * to the release (events `renewed` / `renew failed` on the way; an error status when the lease was
 * lost, its release failed, or the store no longer had it). Both carry `rxjs_lock.key`, and the
 * hold its fence and lease id. They are recorded from events, after the fact, so they are not
 * parents of the work's own spans.
 *
 * @param locker The locker to watch.
 * @param options See {@link InstrumentLockerOptions}.
 * @returns A handle whose `stop()` stops recording.
 * @throws LockOptionsError for options that are not what {@link InstrumentLockerOptions} says.
 *
 * @example
 * ```ts
 * import { createLocker } from 'rxjs-lock';
 * import { instrumentLocker } from 'rxjs-lock/otel';
 *
 * const locker = createLocker({ store });
 * // with an OpenTelemetry SDK registered globally (NodeSDK, or MeterProvider + TracerProvider):
 * const instrumentation = instrumentLocker(locker, { keyGroup: (key) => key.split(':')[0] });
 * // … on shutdown (closing the locker also stops it):
 * instrumentation.stop();
 * await locker.close();
 * ```
 */
export function instrumentLocker(locker: Locker, options: InstrumentLockerOptions = {}): LockerInstrumentation {
  if (typeof locker !== 'object' || locker === null || typeof (locker as Partial<Locker>).events$?.subscribe !== 'function') {
    throw new LockOptionsError('locker', 'a Locker (from createLocker)', locker);
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new LockOptionsError('options', `an object of instrumentLocker options (${OPTION_NAMES.join(', ')})`, options);
  const unknown = Object.keys(options).find((name) => !OPTION_NAMES.includes(name));
  if (unknown !== undefined)
    throw new LockOptionsError(
      `options.${unknown}`,
      `one of the known instrumentLocker options: ${OPTION_NAMES.join(', ')}`,
      (options as Record<string, unknown>)[unknown],
    );
  const { meterProvider, tracerProvider, metrics: withMetrics = true, spans: withSpans = true, keyGroup } = options;
  if (typeof withMetrics !== 'boolean') throw new LockOptionsError('metrics', 'true or false', withMetrics);
  if (typeof withSpans !== 'boolean') throw new LockOptionsError('spans', 'true or false', withSpans);
  if (keyGroup !== undefined && typeof keyGroup !== 'function') throw new LockOptionsError('keyGroup', 'a function (key) => string | undefined', keyGroup);
  if (meterProvider !== undefined && typeof meterProvider?.getMeter !== 'function')
    throw new LockOptionsError('meterProvider', 'an OpenTelemetry MeterProvider', meterProvider);
  if (tracerProvider !== undefined && typeof tracerProvider?.getTracer !== 'function')
    throw new LockOptionsError('tracerProvider', 'an OpenTelemetry TracerProvider', tracerProvider);

  const groupOf = (key: string): Attributes => {
    if (keyGroup === undefined) return {};
    let group: unknown;
    try {
      group = keyGroup(key);
    } catch {
      return {}; // a throwing keyGroup must not break the locker's event stream
    }
    return typeof group === 'string' ? { 'rxjs_lock.key_group': group } : {};
  };
  const lockMetrics = withMetrics ? new LockMetrics((meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE), groupOf) : undefined;
  const lockSpans = withSpans ? new LockSpans((tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE), (key) => ({ 'rxjs_lock.key': key })) : undefined;
  // Hold times of lost leases come from the grants seen; kept here when spans are off.
  const grantedAt = new Map<string, number>();

  const subscription = locker.events$.subscribe({
    next: (event) => {
      try {
        let heldMs: number | undefined;
        if (event.type === 'acquired' && lockSpans === undefined) grantedAt.set(event.id, Date.now());
        if (event.type === 'lost' || event.type === 'released') {
          const at = grantedAt.get(event.id);
          grantedAt.delete(event.id);
          heldMs = lockSpans?.heldMs(event.id) ?? (at === undefined ? undefined : Date.now() - at);
        }
        lockMetrics?.record(event, heldMs);
        lockSpans?.record(event);
      } catch {
        // Telemetry never breaks the locker: an SDK that throws loses this data point only.
      }
    },
    complete: () => lockSpans?.endAll(),
  });
  return {
    stop: () => {
      subscription.unsubscribe();
      lockSpans?.endAll();
      grantedAt.clear();
    },
  };
}
