/**
 * A read-write lock as a shared lock (see ../../store/SharedLockStore.ts): readers take 1 permit
 * out of {@link READ_WRITE_CAPACITY}, a writer takes all of them. So readers share, a writer is
 * exclusive, and the store's first-come, first-served line makes readers that come after a
 * waiting writer queue behind it (no writer starvation).
 */

/** The capacity of a read-write lock: how many readers can hold it at once. */
export const READ_WRITE_CAPACITY = 2 ** 31 - 1;

/** A reader's and a writer's permits. */
export const READ_PERMITS = 1;
export const WRITE_PERMITS = READ_WRITE_CAPACITY;
