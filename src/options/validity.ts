/**
 * How long a lease can be trusted, on the holder's monotonic clock. Counted from the moment the
 * acquire (or extend) call was sent, so the time the call took is already spent: the server's
 * expiry is at least `ttl` after that moment. Clocks of different machines drift apart, so a
 * margin is kept as Redlock does: `drift = ttl·1% + 2 ms`. The holder considers the lease lost
 * at `sentAt + validity`, before the server can hand the key to anyone else.
 */

/** Lease validity in ms for a TTL of `ttl` ms: `ttl − (ttl·0.01 + 2)`. Can be ≤ 0 for tiny TTLs. */
export function leaseValidity(ttl: number): number {
  return ttl - (ttl * 0.01 + 2);
}

/** Default renewal interval: a third of the TTL, at least 1 ms. */
export function defaultRenewInterval(ttl: number): number {
  return Math.max(1, Math.floor(ttl / 3));
}

/** The renewal interval to use: `interval` when it fits within the validity, else the default. */
export function renewIntervalFor(ttl: number, interval: number | undefined): number {
  return interval !== undefined && interval < leaseValidity(ttl) ? interval : defaultRenewInterval(ttl);
}
