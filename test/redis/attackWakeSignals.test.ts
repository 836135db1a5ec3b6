/**
 * Attack: a grant signal that arrives late on the subscriber connection.
 *
 * A waiter woken by pub/sub dates a grant that comes by signal from "the send time of the last
 * attempt the store answered 'queued'" (StoreSession.signalled), assuming the grant was made after
 * that attempt. Pub/sub messages and command replies travel on two different connections, so
 * nothing orders them: if the subscriber connection is slower (another route, a proxy, a shared
 * subscriber busy with other channels), the signal of a grant that has lapsed since can arrive
 * after a later refresh of the waiter's place was answered. The waiter then takes the stale signal
 * for a fresh grant, with a validity counted from that later refresh, and holds the lock while
 * the process that took the key after the lapse holds it too.
 *
 * Set-up on a real Redis: A holds the key; B (ttl 300, place TTL 3000, so while woken by signals
 * it refreshes its place every 750-1000 ms) waits in line with its subscriber connection behind a
 * TCP proxy that delays what Redis sends by 1050 ms; C (place TTL 300) waits behind B. Just after
 * B refreshed its place, A releases: the key goes to B for 300 ms (B's ttl) and B's signal is on
 * its way; B's grant lapses unclaimed and C takes the key; B's next refresh (750-1000 ms after the
 * release) is answered "queued" (behind C); then B's signal arrives, 1050 ms after the release,
 * within 300 ms of that refresh.
 * Promise: never two holders (`lease.held` true in two places). The scenario is in
 * ../support/lateGrantSignal.ts (attackMixedVersions.test.ts runs it too).
 */
import { describe, expect, it } from 'vitest';
import { lateGrantSignalRounds } from '../support/lateGrantSignal.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();

describe('attack: a grant signal delayed on the subscriber connection', () => {
  it('a waiter never takes a lapsed grant for its own while another process holds the key', async () => {
    const { overlaps, staleWins } = await lateGrantSignalRounds(suite, 4, async (a) => {
      expect(await a.release()).toBe(true);
    });
    // Never two holders: B may only get the key after C gave it back.
    expect({ overlaps, staleWins }).toEqual({ overlaps: [], staleWins: 0 });
  });
});
