/** `@InjectLocker()`: injects the `Locker` of `LockModule`. */
import { Inject } from '@nestjs/common';
import { LOCKER } from './tokens.js';

/**
 * Injects the {@link rxjs-lock!Locker} that `LockModule` provides (same as `@Inject(LOCKER)`), for locks a
 * decorator cannot express: inside a service, around a part of a stream, with `using` for fences.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class ReportService {
 *   constructor(@InjectLocker() private readonly locker: Locker) {}
 *
 *   rebuild(): Observable<Report> {
 *     return this.build$().pipe(this.locker.withLock('report:rebuild'));
 *   }
 * }
 * ```
 */
export function InjectLocker(): PropertyDecorator & ParameterDecorator {
  return Inject(LOCKER);
}
