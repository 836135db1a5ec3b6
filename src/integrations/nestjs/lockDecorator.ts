/**
 * What the lock decorators share: checking a handler's options (the acquisition's, `errors`,
 * `onDisconnect`) when the class is defined, and recording the lock for `LockInterceptor`.
 */
import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { LockOptionsError } from '../../errors/errors.js';
import type { AcquireOptions } from '../../options/LockerOptions.js';
import { checkAcquireOptions } from '../../options/validate.js';
import type { OnDisconnect } from './clientDisconnect.js';
import { checkErrorOptions, type LockErrorOptions } from './lockErrorResponses.js';
import { LockInterceptor } from './LockInterceptor.js';
import type { LockSpec, LockTarget } from './lockSpec.js';
import { WITH_LOCK_METADATA } from './tokens.js';

/**
 * The options every lock decorator takes beside the acquisition's.
 *
 * @example
 * ```ts
 * const handler: HandlerLockOptions = { errors: { busyStatus: 503, retryAfter: 10 }, onDisconnect: 'finish' };
 *
 * @Post(':id/export')
 * @WithLock('export:{params.id}', { waitTimeout: 0, ...handler }) // busy: 503 + Retry-After: 10; runs to its end if the client leaves
 * export(@Param('id') id: string) { return this.exports.run(id); }
 * ```
 */
export interface HandlerLockOptions {
  /**
   * How lock failures of this handler are answered; each field overrides the module's `errors`.
   * @default the module's `errors`
   */
  errors?: LockErrorOptions;
  /**
   * What happens when the HTTP client disconnects before the response (see {@link OnDisconnect}).
   * @default 'auto'
   */
  onDisconnect?: OnDisconnect;
}

const DISCONNECT_MODES: readonly OnDisconnect[] = ['auto', 'cancel', 'finish'];

/**
 * Checks `options` of the decorator `name` (`acquireKeys`: the acquisition options it accepts)
 * and returns the decorator that records `target` under them. Throws `LockOptionsError`.
 */
export function lockDecorator(name: string, target: LockTarget, options: object, acquireKeys: readonly string[]): ClassDecorator & MethodDecorator {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LockOptionsError(`${name} options`, `an object of ${[...acquireKeys, 'errors', 'onDisconnect'].join(', ')}`, options);
  }
  const { errors, onDisconnect = 'auto', ...acquire } = options as HandlerLockOptions & AcquireOptions;
  checkAcquireOptions(acquire, acquireKeys);
  if (!DISCONNECT_MODES.includes(onDisconnect)) throw new LockOptionsError('onDisconnect', DISCONNECT_MODES.map((m) => `'${m}'`).join(', '), onDisconnect);
  const spec: LockSpec = { target, acquire, errors: checkErrorOptions(errors, 'errors'), onDisconnect };
  return applyDecorators(SetMetadata(WITH_LOCK_METADATA, spec), UseInterceptors(LockInterceptor)) as ClassDecorator & MethodDecorator;
}
