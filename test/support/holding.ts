/** A lock held by a `using` stream until the test lets it go. */
import { lastValueFrom } from 'rxjs';
import type { AcquireOptions, Lease, Locker } from '../../src/index.js';

export interface Holding {
  /** Resolves with the lease once the lock is held. */
  readonly lease: Promise<Lease>;
  /** Lets the work end (the lock is then released). */
  release(): void;
  /** Resolves when the stream ended: `'done'`, or its error. */
  readonly ended: Promise<unknown>;
}

/** Holds `key` with `locker` until `release()` is called. */
export function holdUntilReleased(locker: Locker, key: string, options: AcquireOptions = {}): Holding {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let gotLease!: (lease: Lease) => void;
  const lease = new Promise<Lease>((resolve) => (gotLease = resolve));
  const ended = lastValueFrom(
    locker.using(
      key,
      async (l) => {
        gotLease(l);
        await released;
        return 'done';
      },
      options,
    ),
  ).catch((error: unknown) => error);
  return { lease, release, ended };
}
