/**
 * Type-level tests of the public API: what users' code gets from the compiler (checked by `tsc`
 * in `npm test`, which includes test/; the runtime assertions are trivially true). A change that
 * widens an operator to `unknown`, loses a generic through `pipe`, or turns a guard into a plain
 * boolean fails the type check.
 */
import { Observable, of, type MonoTypeOperatorFunction, type OperatorFunction } from 'rxjs';
import { map } from 'rxjs/operators';
import { describe, expectTypeOf, it } from 'vitest';
import {
  createLocker,
  exclusivePerKey,
  isLockError,
  isLockLostError,
  isLockTimeoutError,
  usingLock,
  usingLocks,
  withLock,
  withLocks,
  type Lease,
  type LeaseSet,
  type LockError,
  type LockEvent,
  type LockLostError,
  type Locker,
  type LockStore,
  type LockTimeoutError,
} from '../src/index.js';
import { FencedResource, RedisLockStore } from '../src/redis.js';

describe('public API types', () => {
  it('createLocker gives a Locker whose acquire emits Leases', () => {
    const locker = createLocker();
    expectTypeOf(locker).toEqualTypeOf<Locker>();
    expectTypeOf(locker.acquire('k')).toEqualTypeOf<Observable<Lease>>();
    expectTypeOf(locker.events$).toEqualTypeOf<Observable<LockEvent>>();
    expectTypeOf(locker.close()).toEqualTypeOf<Promise<void>>();
    expectTypeOf<Lease['fence']>().toEqualTypeOf<number>();
    expectTypeOf<Lease['release']>().returns.toEqualTypeOf<Promise<boolean>>();
    expectTypeOf<Lease['lost$']>().toEqualTypeOf<Observable<LockLostError>>();
  });

  it("withLock keeps the stream's type through pipe, before and after other operators", () => {
    const locker = createLocker();
    expectTypeOf(withLock<number>('k')).toEqualTypeOf<MonoTypeOperatorFunction<number>>();
    expectTypeOf(of(1, 2).pipe(withLock('k'))).toEqualTypeOf<Observable<number>>();
    expectTypeOf(
      of(1).pipe(
        map(String),
        withLock('k'),
        map((s) => s.length),
      ),
    ).toEqualTypeOf<Observable<number>>();
    expectTypeOf(of({ id: 'a' }).pipe(locker.withLock('k', { ttl: 5_000, onBusy: 'skip' }))).toEqualTypeOf<Observable<{ id: string }>>();
    // Compiled, never run (at run time both throw LockOptionsError).
    const rejectedByTheCompiler = () => {
      // @ts-expect-error: an option that does not exist
      withLock('k', { tll: 5_000 });
      // @ts-expect-error: the key is a string
      withLock(42);
    };
    expectTypeOf(rejectedByTheCompiler).toBeFunction();
  });

  it("using and usingLock infer the work's value type from an Observable, a Promise or an array", () => {
    const locker = createLocker();
    expectTypeOf(locker.using('k', () => of('x'))).toEqualTypeOf<Observable<string>>();
    expectTypeOf(locker.using('k', async (lease) => lease.fence)).toEqualTypeOf<Observable<number>>();
    expectTypeOf(usingLock('k', (_lease, signal) => [signal.aborted])).toEqualTypeOf<Observable<boolean>>();
  });

  it("the multi-key operators keep the stream's type; usingLocks infers the work's; acquireLocks emits a LeaseSet", () => {
    const locker = createLocker();
    expectTypeOf(of(1).pipe(withLocks(['a', 'b']))).toEqualTypeOf<Observable<number>>();
    expectTypeOf(of('x').pipe(locker.withLocks(['a', 'b'], { onBusy: 'skip' }))).toEqualTypeOf<Observable<string>>();
    expectTypeOf(locker.usingLocks(['a'], async (locks) => locks.fences.get('a'))).toEqualTypeOf<Observable<number | undefined>>();
    expectTypeOf(usingLocks(['a'], (locks, signal) => of(locks.keys.length, Number(signal.aborted)))).toEqualTypeOf<Observable<number>>();
    expectTypeOf(locker.acquireLocks(['a', 'b'])).toEqualTypeOf<Observable<LeaseSet>>();
    expectTypeOf<LeaseSet['leases']>().toEqualTypeOf<ReadonlyMap<string, Lease>>();
    const rejectedByTheCompiler = () => {
      // @ts-expect-error: keys are an array
      withLocks('a');
    };
    expectTypeOf(rejectedByTheCompiler).toBeFunction();
  });

  it("exclusivePerKey maps messages to the projection's values", () => {
    const op = exclusivePerKey(
      (m: { account: string; amount: number }) => m.account,
      (m, lease) => of(m.amount + lease.fence),
    );
    expectTypeOf(op).toEqualTypeOf<OperatorFunction<{ account: string; amount: number }, number>>();
    expectTypeOf(of({ account: 'a', amount: 1 }).pipe(op)).toEqualTypeOf<Observable<number>>();
  });

  it('error guards narrow unknown errors', () => {
    const error: unknown = new Error('x');
    if (isLockTimeoutError(error)) expectTypeOf(error).toEqualTypeOf<LockTimeoutError>();
    if (isLockLostError(error)) expectTypeOf(error.reason).toBeString();
    if (isLockError(error)) expectTypeOf(error).toMatchTypeOf<LockError>();
  });

  it('the Redis store and FencedResource are stores and resources users can hold', () => {
    expectTypeOf(RedisLockStore).constructorParameters.toMatchTypeOf<[unknown, ...unknown[]]>();
    expectTypeOf<RedisLockStore>().toMatchTypeOf<LockStore>();
    expectTypeOf<FencedResource['write']>().parameters.toEqualTypeOf<[fence: number, value: string]>();
  });
});
