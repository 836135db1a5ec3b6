/** Scenarios shared by the reentrancy tests. */
import { concat, defer, firstValueFrom, lastValueFrom, Subject, take, timer } from 'rxjs';
import type { Locker } from '../../src/index.js';

/** X holds k2 and, inside its work, takes and gives back k1 while Y waits for k1 (Y subscribed from the root). */
export async function giverHoldsK2(locker: Locker, y: () => Promise<unknown>): Promise<unknown> {
  const outerHeld = new Subject<void>();
  const finishOuter = new Subject<void>();
  const x = lastValueFrom(
    locker.using('k2', () =>
      concat(
        defer(() => {
          outerHeld.next();
          return timer(30);
        }).pipe(locker.withLock('k1')),
        finishOuter.pipe(take(1)),
      ),
    ),
    { defaultValue: undefined },
  );
  await firstValueFrom(outerHeld);
  const outcome = await y();
  finishOuter.next();
  await x;
  return outcome;
}
