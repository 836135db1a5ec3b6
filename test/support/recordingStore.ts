/**
 * Wraps a real store and records every call (with a timestamp from `now`), so tests can see how
 * often and when the engine talked to the store. The calls still go to the real store. It offers
 * the inner store's core and batched extension only (no line, no wake-up): the engine then polls.
 */
import { createLocker, MemoryLockStore, type LockerOptions, type LockEvent } from '../../src/index.js';
import type { BatchExtendStore, ExtendRequest } from '../../src/store/capabilities.js';
import type { AcquireResult, ExtendOutcome, LockStore, ReleasedGrant } from '../../src/store/LockStore.js';

export interface StoreCallRecord {
  op: 'tryAcquire' | 'release' | 'extend' | 'extendMany';
  key: string;
  token: string;
  at: number;
  /** Fences asked for (tryAcquire). */
  fences?: number;
  /** What the store answered (tryAcquire), once it did. */
  result?: AcquireResult;
  /** The grant, as the engine told the store (release). */
  grant?: ReleasedGrant;
}

export class RecordingStore implements LockStore, BatchExtendStore {
  readonly calls: StoreCallRecord[] = [];
  constructor(
    readonly inner: LockStore,
    private readonly now: () => number = () => performance.now(),
  ) {}

  count(op: StoreCallRecord['op']): number {
    return this.calls.filter((c) => c.op === op).length;
  }

  tryAcquire(key: string, token: string, ttlMs: number, fences?: number): Promise<AcquireResult> {
    const record: StoreCallRecord = { op: 'tryAcquire', key, token, at: this.now(), fences };
    this.calls.push(record);
    return this.inner.tryAcquire(key, token, ttlMs, fences).then((result) => {
      record.result = result;
      return result;
    });
  }

  release(key: string, token: string, grant?: ReleasedGrant): Promise<boolean> {
    this.calls.push({ op: 'release', key, token, at: this.now(), grant });
    return this.inner.release(key, token, grant);
  }

  extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    this.calls.push({ op: 'extend', key, token, at: this.now() });
    return this.inner.extend(key, token, ttlMs);
  }

  /** Recorded once per batch (key and token of its first lease); one-by-one if the inner store cannot batch. */
  extendMany(requests: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>> {
    const first = requests[0]!;
    this.calls.push({ op: 'extendMany', key: first.key, token: first.token, at: this.now() });
    const inner = this.inner as Partial<BatchExtendStore>;
    if (inner.extendMany !== undefined) return inner.extendMany(requests);
    return Promise.all(requests.map((r) => this.inner.extend(r.key, r.token, r.ttlMs)));
  }
}

/**
 * A locker on an in-memory store seen through a {@link RecordingStore}, with its events collected:
 * the usual set-up of the engine tests (`keyPrefix: ''` unless `options` says otherwise).
 */
export function recordingLocker(options: LockerOptions = {}) {
  const memory = new MemoryLockStore();
  const store = new RecordingStore(memory);
  const locker = createLocker({ store, keyPrefix: '', ...options });
  const events: LockEvent[] = [];
  locker.events$.subscribe((e) => events.push(e));
  return { memory, store, locker, events };
}
