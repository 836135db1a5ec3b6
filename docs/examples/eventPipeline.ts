/**
 * Guide "Event pipelines": messages keyed by account, one message per account at a time across
 * every instance, accounts in parallel, each account's messages in arrival order. Run by
 * test/docs/examples.test.ts on the in-memory store.
 */
// #region sample
import { catchError, defer, EMPTY, from, lastValueFrom } from 'rxjs';
import { exclusivePerKey, isLockTimeoutError, type Locker } from 'rxjs-lock';

export interface Payment {
  readonly id: string;
  readonly accountId: string;
  readonly amount: number;
}

export async function applyPayments(
  payments: readonly Payment[],
  applyPayment: (payment: Payment, fence: number) => Promise<void>,
  locker: Locker, // yours: createLocker({ store }) at start-up, locker.close() at shutdown
): Promise<string[]> {
  const skipped: string[] = [];
  await lastValueFrom(
    from(payments).pipe(
      exclusivePerKey(
        (payment) => `account:${payment.accountId}`,
        // Runs with the account's lock held; `lease.fence` lets the database refuse a late writer.
        (payment, lease) =>
          defer(() => applyPayment(payment, lease.fence)).pipe(
            // Catch inside: an error here would end the whole pipeline (as in mergeMap).
            catchError((error: unknown) => {
              if (isLockTimeoutError(error)) {
                skipped.push(payment.id); // retry later, or dead-letter it
                return EMPTY;
              }
              throw error;
            }),
          ),
        { locker, concurrency: 16, waitTimeout: 30_000 },
      ),
    ),
    { defaultValue: undefined },
  );
  return skipped;
}
// #endregion sample
