/**
 * Guide "Testing your code": a test of your own code's locking, on the in-memory store, with the
 * overlap detector of rxjs-lock/testing. It is itself a test of this repository (vitest runs it),
 * and the guide shows it from the region below.
 */
// #region sample
import { defer, lastValueFrom, merge } from 'rxjs';
import { createLocker, MemoryLockStore } from 'rxjs-lock';
import { findOverlaps, SectionRecorder } from 'rxjs-lock/testing';
import { afterEach, expect, it } from 'vitest';

// The code under test: takes the lock of the order it updates.
const updateOrder = (locker: ReturnType<typeof createLocker>, recorder: SectionRecorder, id: string) =>
  defer(async () => {
    const exit = recorder.enter(); // the lock is held from here…
    await new Promise((resolve) => setTimeout(resolve, 5));
    exit(); // …to here
  }).pipe(locker.withLock(`order:${id}`));

// One store shared by two lockers: two "instances" of the service in one test process.
const store = new MemoryLockStore();
const lockers = [createLocker({ store }), createLocker({ store })];
afterEach(async () => {
  await Promise.all(lockers.map((locker) => locker.close()));
  store.close();
});

it('never updates one order from two instances at once', async () => {
  const recorder = new SectionRecorder();
  const updates = [...lockers, ...lockers].map((locker) => updateOrder(locker, recorder, '7'));
  await lastValueFrom(merge(...updates), { defaultValue: undefined });
  expect(recorder.sections).toHaveLength(4);
  expect(findOverlaps(recorder.sections)).toEqual([]);
});
// #endregion sample
