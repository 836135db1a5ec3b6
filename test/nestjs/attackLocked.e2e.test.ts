/**
 * Attack review of `@Locked` (provider methods Nest calls without a request) and of `@WithLock`
 * key functions returning lists: lock leaks on every way a call can end (rejection, synchronous
 * throw, a never-settling Promise, a key function that throws or returns junk, the module closing
 * while a call waits or holds, the lease lost while the method runs), unhandled rejections,
 * `this` binding (detached calls, subclasses, scopes, providers Nest did not construct), decorator
 * order with real `@Cron`/`@Timeout` jobs, stacked `@Locked`, reentrancy and options. Real Redis
 * (the suite's private server); the probe's gates and notes, no sleeps.
 */
import 'reflect-metadata';
import { Body, Controller, Inject, Injectable, Module, Post, Scope } from '@nestjs/common';
import { ContextIdFactory, ModuleRef } from '@nestjs/core';
import { Cron, ScheduleModule, Timeout } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { isLockLostError, isLockOptionsError, isLockTimeoutError, type LockEvent, type Locker } from '../../src/index.js';
import { LOCKER, LockModule, Locked, WithLock } from '../../src/nestjs.js';
import { redisSuite } from '../support/redisSuite.js';
import { lockedAppsOn } from './fixtures/lockedApp.js';
import { NEST_MAJOR } from './fixtures/nestVersion.js';
import { APP_NAME, PROBE, Probe } from './fixtures/probe.js';
import { until } from '../support/timing.js';
import { optionOf } from '../support/optionOf.js';
import { lockedInstance, rejection } from './fixtures/lockedInstances.js';

// unhandled rejections checked after each test, so a failure names its test
const suite = redisSuite({ unhandled: 'afterEach' });

/** Every lock key left in Redis (holders and lines). */
const leftovers = () => suite.admin.keys('lock:*');

const instance = (name: string, probe: Probe, providers: unknown[], options?: Parameters<typeof lockedInstance>[4]) =>
  lockedInstance(suite, name, probe, providers, options);

/** A provider whose methods tell the probe when they run and wait on its gates. */
@Injectable()
class Work {
  constructor(
    @Inject(PROBE) readonly probe: Probe,
    @Inject(APP_NAME) readonly app: string,
  ) {}

  runs = 0;

  @Locked('job:held', { waitTimeout: 20_000 })
  async held(gate: string): Promise<string> {
    this.runs++;
    this.probe.note('enter', gate, this.app);
    await this.probe.gate(gate);
    this.probe.note('exit', gate, this.app);
    return gate;
  }

  /** Never settles: holds its lock until something else ends the call. */
  @Locked('job:forever')
  forever(): Promise<void> {
    this.runs++;
    this.probe.note('enter', 'forever', this.app);
    return new Promise<void>(() => {});
  }

  @Locked('job:sync-throw')
  syncThrow(): Promise<void> {
    this.runs++;
    throw new Error('sync');
  }

  /** Returns a Promise that is already rejected (not an async function). */
  @Locked('job:pre-rejected')
  preRejected(): Promise<void> {
    this.runs++;
    return Promise.reject(new Error('pre-rejected'));
  }

  @Locked(
    (keys: unknown) => {
      if (keys === 'throw') throw new Error('key function threw');
      return keys as string[];
    },
    { waitTimeout: 2_000 },
  )
  async anyKeys(_keys: unknown): Promise<string> {
    this.runs++;
    return 'ran';
  }

  /** With a short renewed lease: a lost key is noticed within ~100 ms; rejects once its gate opens. */
  @Locked('job:short', { ttl: 300 })
  async short(gate: string): Promise<void> {
    this.probe.note('enter', gate, this.app);
    await this.probe.gate(gate);
    this.probe.note('exit', gate, this.app);
    throw new Error(`late failure of ${gate}`);
  }

  @Locked('job:no-renew', { ttl: 200, renew: false })
  async noRenew(gate: string): Promise<string> {
    this.probe.note('enter', gate, this.app);
    await this.probe.gate(gate);
    return gate;
  }

  @Locked('job:notify', { ttl: 300, onLost: 'notify' })
  async notify(gate: string): Promise<string> {
    this.probe.note('enter', gate, this.app);
    await this.probe.gate(gate);
    return `${gate} done`;
  }

  @Locked((skus: string[], _gate: string) => skus.map((s) => `sku:${s}`), { onBusy: 'skip' })
  async skipList(_skus: string[], gate: string): Promise<string | undefined> {
    this.probe.note('enter', gate, this.app);
    await this.probe.gate(gate);
    return gate;
  }

  @Locked('job:held', { waitTimeout: 0 })
  async heldNow(): Promise<string> {
    return 'now';
  }

  /** Rejects with exactly what it is given. */
  @Locked('job:odd')
  async rejectWith(value: unknown): Promise<void> {
    throw value;
  }

  @Locked((_gate: string) => ['pair:a', 'pair:b'], { ttl: 300 })
  async pair(gate: string): Promise<string> {
    this.probe.note('enter', gate, this.app);
    await this.probe.gate(gate);
    return gate;
  }
}

describe('@Locked: every lock is given back, whatever ends the call', () => {
  it('a synchronous throw and an already-rejected Promise reject the call, with nothing left held', async () => {
    const probe = new Probe();
    const work = (await instance('a', probe, [Work])).get(Work);
    const thrown = work.syncThrow();
    expect(thrown).toBeInstanceOf(Promise);
    expect((await rejection(thrown)).message).toBe('sync');
    expect((await rejection(work.preRejected())).message).toBe('pre-rejected');
    expect(work.runs).toBe(2);
    expect(await leftovers()).toEqual([]);
  });

  it('a key function that throws or returns junk rejects with the method not run and nothing held; duplicates are taken once', async () => {
    const probe = new Probe();
    const work = (await instance('a', probe, [Work])).get(Work);
    expect((await rejection(work.anyKeys('throw'))).message).toBe('key function threw');
    const junk: Array<[unknown, string]> = [
      [42, 'key'],
      [undefined, 'key'],
      ['', 'key'],
      [new Set(['a']), 'key'],
      [['ok', 42], 'keys[1]'],
      [['ok', ''], 'keys[1]'],
      [Array.from({ length: 65 }, (_, i) => `k${i}`), 'keys'],
      [[['nested']], 'keys[0]'],
    ];
    for (const [keys, option] of junk) {
      const error = await rejection(work.anyKeys(keys));
      expect(isLockOptionsError(error), `${String(keys)}: ${error.message}`).toBe(true);
      expect((error as unknown as { option: string }).option, String(keys)).toBe(option);
    }
    expect(work.runs).toBe(0);
    // 64 distinct keys is the limit; duplicates are taken once and not counted (65 × one key runs)
    expect(await work.anyKeys(Array.from({ length: 64 }, (_, i) => `k${i}`))).toBe('ran');
    expect(await work.anyKeys(['d', 'd', 'd'])).toBe('ran');
    expect(await work.anyKeys(Array.from({ length: 65 }, () => 'same'))).toBe('ran');
    expect(work.runs).toBe(3);
    expect(await leftovers()).toEqual([]);
  });

  it('the call rejects with exactly what the method rejected with: an Error, a string, undefined, a plain object', async () => {
    const probe = new Probe();
    const work = (await instance('a', probe, [Work])).get(Work);
    const custom = new TypeError('custom');
    const plain = { code: 42 };
    for (const value of [custom, 'a string', undefined, plain]) {
      const rejected = await work.rejectWith(value).then(
        () => 'resolved',
        (error: unknown) => ({ error }),
      );
      expect(rejected, String(value)).toEqual({ error: value });
      expect((rejected as { error: unknown }).error).toBe(value);
    }
    expect(await leftovers()).toEqual([]);
  });

  it('one key of a list lost while the method runs: the call rejects with LockLostError and the other key is given back', async () => {
    const probe = new Probe();
    const work = (await instance('a', probe, [Work])).get(Work);
    const call = rejection(work.pair('p'));
    await probe.waitFor('enter', 'p');
    expect(await suite.admin.exists('lock:pair:a', 'lock:pair:b')).toBe(2);
    await suite.admin.del('lock:pair:b');
    const error = await call;
    expect(isLockLostError(error), error.message).toBe(true);
    expect((error as unknown as { key: string }).key).toBe('pair:b');
    await until(async () => (await leftovers()).length === 0, 'pair:a given back');
    probe.open('p');
  });

  it("two calls at once on one instance with onBusy: 'skip': the second skips (its own locker holds the key)", async () => {
    const probe = new Probe();
    const work = (await instance('a', probe, [Work])).get(Work);
    const first = work.skipList(['x'], 'first');
    await probe.waitFor('enter', 'first');
    expect(await work.skipList(['x'], 'second')).toBeUndefined();
    probe.open('first');
    expect(await first).toBe('first');
    expect(probe.notes.some((n) => n.key === 'second')).toBe(false);
  });

  it('moduleRef.close() while one call holds (a never-settling Promise) and one waits: both reject, the key is gone', async () => {
    const probe = new Probe();
    const moduleRef = await instance('a', probe, [Work]);
    const other = await instance('b', probe, [Work]);
    const work = moduleRef.get(Work);
    const holding = rejection(work.forever());
    await probe.waitFor('enter', 'forever');
    expect(await suite.admin.exists('lock:job:forever')).toBe(1);
    // a waiter on the same instance, and one on the other instance
    const waiting = rejection(work.forever());
    const waitingElsewhere = rejection(other.get(Work).forever());
    // (a waiter of the holder's own locker waits at its local gate: Redis's line shows the other one)
    await until(async () => ((await lastValueFrom(other.get<Locker>(LOCKER).inspect('job:forever')))?.waiting ?? 0) >= 1, 'b waits in line');
    await moduleRef.close();
    const [held, waited] = [await holding, await waiting];
    expect(isLockLostError(held), held.message).toBe(true);
    expect((held as unknown as { reason: string }).reason).toBe('locker-closed');
    expect(waited.name, waited.message).toMatch(/LockLostError|LockerClosedError/);
    // the other instance gets the lock (its own never-settling run now holds it)
    await until(() => probe.notes.filter((n) => n.key === 'forever').length === 2, 'b runs');
    expect(work.runs).toBe(1);
    // a call after close rejects (never a synchronous throw)
    const late = work.forever();
    expect(late).toBeInstanceOf(Promise);
    expect((await rejection(late)).name).toMatch(/LockerClosedError|LockLostError/);
    await other.close();
    expect((await waitingElsewhere).name).toBe('LockLostError');
    expect(await leftovers()).toEqual([]);
  });

  it('the key deleted while the method runs: the call rejects with LockLostError; the method rejecting later is no unhandled rejection', async () => {
    const probe = new Probe();
    const work = (await instance('a', probe, [Work])).get(Work);
    const call = work.short('s1');
    await probe.waitFor('enter', 's1');
    await suite.admin.del('lock:job:short');
    const error = await rejection(call);
    expect(isLockLostError(error), error.message).toBe(true);
    // the method still runs (a Promise cannot be stopped): let it fail now
    probe.open('s1');
    await probe.waitFor('exit', 's1');
    // a few turns for a rejection to surface as unhandled (checked after the test)
    await new Promise((resolve) => setTimeout(resolve, 50));
    // the key is free: the next call takes it
    const next = work.short('s2');
    await probe.waitFor('enter', 's2');
    expect(await suite.admin.exists('lock:job:short')).toBe(1);
    probe.open('s2');
    expect((await rejection(next)).message).toBe('late failure of s2');
    expect(await leftovers()).toEqual([]);
  });

  it('FLUSHALL while the method runs and renew: false with a short ttl both reject with LockLostError; onLost: notify resolves', async () => {
    const probe = new Probe();
    const work = (await instance('a', probe, [Work])).get(Work);
    const flushed = work.short('f1');
    await probe.waitFor('enter', 'f1');
    await suite.admin.flushall();
    expect(isLockLostError(await rejection(flushed))).toBe(true);
    probe.open('f1');
    await probe.waitFor('exit', 'f1');

    const expired = work.noRenew('e1');
    await probe.waitFor('enter', 'e1');
    const error = await rejection(expired);
    expect(isLockLostError(error), error.message).toBe(true);
    expect((error as unknown as { reason: string }).reason).toBe('expired');
    probe.open('e1');

    const lost: LockEvent[] = [];
    const watch = lockerOf(work).events$.subscribe((e) => lost.push(e));
    suite.closers.push(() => watch.unsubscribe());
    const notified = work.notify('n1');
    await probe.waitFor('enter', 'n1');
    await suite.admin.del('lock:job:notify');
    // lost, reported, but the call goes on to the method's value
    await until(() => lost.some((e) => e.type === 'lost' && e.key === 'job:notify'), 'the loss reported');
    probe.open('n1');
    expect(await notified).toBe('n1 done');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await leftovers()).toEqual([]);
  });
});

/** The locker injected into a provider for its @Locked methods (undefined: none). */
function lockerOf(provider: object): Locker {
  return (provider as Record<symbol, Locker>)[Symbol.for('rxjs-lock/nestjs:locked-locker')]!;
}

/** A base class with a @Locked method, and subclasses made providers. */
abstract class BaseJob {
  constructor(
    @Inject(PROBE) readonly probe: Probe,
    @Inject(APP_NAME) readonly app: string,
  ) {}

  abstract readonly kind: string;

  @Locked('job:base', { waitTimeout: 20_000 })
  async shared(gate: string): Promise<string> {
    this.probe.note('enter', gate, `${this.app}/${this.kind}`);
    await this.probe.gate(gate);
    this.probe.note('exit', gate, `${this.app}/${this.kind}`);
    return `${this.kind}:${gate}`;
  }
}

/** Inherits the @Locked method, has none of its own. */
@Injectable()
class PlainSub extends BaseJob {
  readonly kind = 'plain';
}

/** Inherits one, has one of its own, and overrides the base method with another @Locked key. */
@Injectable()
class LockedSub extends BaseJob {
  readonly kind = 'locked';

  @Locked('job:own')
  async own(): Promise<string> {
    return `own by ${this.app}`;
  }
}

@Injectable()
class OverridingSub extends BaseJob {
  readonly kind = 'overriding';

  @Locked('job:override', { waitTimeout: 20_000 })
  override async shared(gate: string): Promise<string> {
    // super's wrapper takes job:base inside job:override
    return `override(${await super.shared(gate)})`;
  }
}

@Injectable()
class Creator {
  constructor(@Inject(ModuleRef) readonly moduleRef: ModuleRef) {}
}

@Injectable({ scope: Scope.TRANSIENT })
class TransientWork extends Work {}

@Injectable({ scope: Scope.REQUEST })
class RequestWork extends Work {}

/** Methods with short leases, for a Redis that stops answering. */
@Injectable()
class Fragile {
  constructor(@Inject(PROBE) private readonly probe: Probe) {}

  @Locked('fragile:held', { ttl: 600 })
  async held(gate: string): Promise<void> {
    this.probe.note('enter', gate, '');
    await this.probe.gate(gate);
    throw new Error(`late failure of ${gate}`);
  }

  @Locked('fragile:skip', { onBusy: 'skip' })
  async skip(): Promise<string | undefined> {
    return 'ran';
  }
}

describe('@Locked: Redis stops answering (SIGSTOP)', () => {
  it('a lease lost to a frozen Redis rejects the call; a skip call meanwhile rejects; its late grant is given back once Redis answers; nothing unhandled', async () => {
    const probe = new Probe();
    const moduleRef = await instance('a', probe, [Fragile], { locker: { commandTimeout: 200 } });
    const events: LockEvent[] = [];
    const watch = moduleRef.get<Locker>(LOCKER).events$.subscribe((e) => events.push(e));
    suite.closers.push(() => watch.unsubscribe());
    const fragile = moduleRef.get(Fragile);
    const held = rejection(fragile.held('h'));
    await probe.waitFor('enter', 'h');
    suite.server.pause();
    suite.closers.push(() => suite.server.resume());
    try {
      const lost = await held;
      expect(isLockLostError(lost), lost.message).toBe(true);
      // a store failure is not "busy": skip rejects too (a @Cron job logs it; it does not crash)
      const skipped = await rejection(fragile.skip());
      expect(skipped.name, skipped.message).toBe('LockStoreError');
      probe.open('h');
    } finally {
      suite.server.resume();
    }
    // the frozen server ran the skip's acquisition when it woke: the locker gives that grant back
    await until(() => events.some((e) => e.type === 'abandoned-released' && e.key === 'fragile:skip'), 'the late grant given back', 5_000);
    expect(await suite.admin.exists('lock:fragile:skip')).toBe(0);
    // the lost lease expires on its own (ttl 600 ms); the next calls work
    await until(async () => (await leftovers()).length === 0, 'the lost lease expires', 5_000);
    expect(await fragile.skip()).toBe('ran');
  });
});

describe('@Locked: this, subclasses, scopes, providers Nest did not construct', () => {
  it('a detached call (const f = work.held; f()) rejects with LockOptionsError, never a synchronous throw, and runs nothing', async () => {
    const probe = new Probe();
    const work = (await instance('a', probe, [Work])).get(Work);
    const detached = work.held;
    let call: Promise<unknown> | undefined;
    expect(() => {
      call = detached('d1');
    }).not.toThrow();
    const error = await rejection(call!);
    expect(isLockOptionsError(error), error.message).toBe(true);
    expect(error.message).toMatch(/held has no locker/);
    expect(work.runs).toBe(0);
    // bound, it works
    probe.open('d2');
    expect(await detached.call(work, 'd2')).toBe('d2');
  });

  it('subclasses: an inherited @Locked method is locked on each subclass provider, across classes sharing the base', async () => {
    const probe = new Probe();
    const a = await instance('a', probe, [PlainSub, LockedSub]);
    const b = await instance('b', probe, [PlainSub]);
    const first = a.get(PlainSub).shared('p1');
    await probe.waitFor('enter', 'p1');
    // the other subclass on the same instance, and the same subclass on another, wait for job:base
    const second = a.get(LockedSub).shared('l1');
    const third = b.get(PlainSub).shared('p2');
    await until(async () => ((await lastValueFrom(b.get<Locker>(LOCKER).inspect('job:base')))?.waiting ?? 0) >= 1, 'b waits');
    expect(await a.get(LockedSub).own()).toBe('own by a');
    expect(probe.notes.filter((n) => n.what === 'enter').map((n) => n.key)).toEqual(['p1']);
    probe.openAll();
    expect(await Promise.all([first, second, third])).toEqual(['plain:p1', 'locked:l1', 'plain:p2']);
    let running = 0;
    for (const note of probe.notes) {
      running += note.what === 'enter' ? 1 : -1;
      expect(running).toBeLessThanOrEqual(1);
    }
    expect(await leftovers()).toEqual([]);
  });

  it('an override with its own @Locked calling super: both keys held while the base method runs', async () => {
    const probe = new Probe();
    const a = await instance('a', probe, [OverridingSub]);
    const call = a.get(OverridingSub).shared('o1');
    await probe.waitFor('enter', 'o1');
    expect(await suite.admin.exists('lock:job:override', 'lock:job:base')).toBe(2);
    probe.open('o1');
    expect(await call).toBe('override(overriding:o1)');
    expect(await leftovers()).toEqual([]);
  });

  it('transient, request-scoped and ModuleRef.create instances get the locker (property injection per instance)', async () => {
    const probe = new Probe();
    const a = await instance('a', probe, [TransientWork, RequestWork, Creator]);
    const transient = await a.resolve(TransientWork);
    const scoped = await a.resolve(RequestWork, ContextIdFactory.create());
    // ModuleRef.create makes an instance outside the container: it gets the locker too
    const created = await a.get(Creator).moduleRef.create(Work);
    probe.open('c0');
    expect(await created.held('c0')).toBe('c0');
    const held = transient.held('t1');
    await probe.waitFor('enter', 't1');
    // same key, the other instance waits (no more than waitTimeout: 0 allows)
    expect(isLockTimeoutError(await rejection(scoped.heldNow()))).toBe(true);
    probe.open('t1');
    expect(await held).toBe('t1');
    expect(await scoped.heldNow()).toBe('now');
    expect(await leftovers()).toEqual([]);
  });

  it('useClass works; useFactory and useValue instances (not constructed by Nest) reject every call with LockOptionsError', async () => {
    const probe = new Probe();
    const USE_CLASS = Symbol('useClass');
    const USE_FACTORY = Symbol('useFactory');
    const USE_VALUE = Symbol('useValue');
    const a = await instance('a', probe, [
      { provide: USE_CLASS, useClass: Work },
      { provide: USE_FACTORY, useFactory: (p: Probe, app: string) => new Work(p, app), inject: [PROBE, APP_NAME] },
      { provide: USE_VALUE, useValue: new Work(probe, 'v') },
    ]);
    probe.open('c1');
    expect(await a.get<Work>(USE_CLASS).held('c1')).toBe('c1');
    for (const token of [USE_FACTORY, USE_VALUE]) {
      const work = a.get<Work>(token);
      const error = await rejection(work.held('never'));
      expect(isLockOptionsError(error), error.message).toBe(true);
      expect(error.message).toMatch(/LockModule/);
      expect(work.runs).toBe(0);
    }
  });
});

/** Real @Cron (every second) and @Timeout jobs, the decorator written above and below @Locked. */
@Injectable()
class Scheduled {
  constructor(
    @Inject(PROBE) private readonly probe: Probe,
    @Inject(APP_NAME) private readonly app: string,
  ) {}

  @Cron('* * * * * *')
  @Locked('cron:above', { onBusy: 'skip' })
  async above(): Promise<void> {
    await this.run('above', 400);
  }

  @Locked('cron:below', { onBusy: 'skip' })
  @Cron('* * * * * *')
  async below(): Promise<void> {
    await this.run('below', 400);
  }

  @Timeout(20)
  @Locked('timeout:above', { onBusy: 'skip' })
  async onceAbove(): Promise<void> {
    await this.run('once-above', 0, 'once-above');
  }

  @Locked('timeout:below', { onBusy: 'skip' })
  @Timeout(20)
  async onceBelow(): Promise<void> {
    await this.run('once-below', 0, 'once-below');
  }

  /** Holds its key `ms` ms, or until `gate` opens. */
  private async run(job: string, ms: number, gate?: string): Promise<void> {
    this.probe.note('enter', job, this.app);
    await (gate === undefined ? new Promise((resolve) => setTimeout(resolve, ms)) : this.probe.gate(gate));
    this.probe.note('exit', job, this.app);
  }
}

/** Several @Locked on one method, and methods that call each other under the same key. */
@Injectable()
class Nested {
  constructor(@Inject(PROBE) private readonly probe: Probe) {}

  @Locked('stack:outer')
  @Locked('stack:inner')
  async twoKeys(): Promise<number> {
    this.probe.note('enter', 'two-keys', '');
    return await suite.admin.exists('lock:stack:outer', 'lock:stack:inner');
  }

  @Locked('stack:same')
  @Locked('stack:same', { waitTimeout: 200 })
  async sameKeyTwice(): Promise<string> {
    return 'ran';
  }

  @Locked('re:k')
  async outer(): Promise<string> {
    return `outer(${await this.inner()})`;
  }

  @Locked('re:k', { waitTimeout: 200 })
  async inner(): Promise<string> {
    return 'inner';
  }

  innerRuns = 0;

  @Locked('re:skip')
  async outerSkip(): Promise<string> {
    return `outerSkip(${await this.innerSkip()})`;
  }

  @Locked('re:skip', { onBusy: 'skip' })
  async innerSkip(): Promise<string | undefined> {
    this.innerRuns++;
    return 'innerSkip';
  }

  @Locked(() => ['re:b', 're:a'])
  async outerList(): Promise<string> {
    return `outerList(${await this.innerB()})`;
  }

  @Locked('re:b', { waitTimeout: 200 })
  async innerB(): Promise<string> {
    return 'innerB';
  }
}

describe('@Locked: decorator order, stacking, reentrancy', () => {
  it('real @Cron every second and @Timeout, written above and below @Locked, run on one instance at a time', async () => {
    const probe = new Probe();
    await instance('a', probe, [Scheduled], { imports: [ScheduleModule.forRoot()] });
    await instance('b', probe, [Scheduled], { imports: [ScheduleModule.forRoot()] });
    // @Timeout fires once per instance: one of them runs, the other skips (the gate holds the key)
    await probe.waitFor('enter', 'once-above');
    await probe.waitFor('enter', 'once-below');
    const ran = (job: string) => probe.notes.filter((n) => n.what === 'exit' && n.key === job).length;
    await until(() => ran('above') >= 2 && ran('below') >= 2, 'two seconds of cron ticks', 10_000);
    probe.open('once-above');
    probe.open('once-below');
    await until(() => ran('once-above') === 1 && ran('once-below') === 1, 'the timeouts end');
    for (const job of ['above', 'below', 'once-above', 'once-below']) {
      let running = 0;
      for (const note of probe.notes.filter((n) => n.key === job)) {
        running += note.what === 'enter' ? 1 : -1;
        expect(running, `${job} runs at once`).toBeLessThanOrEqual(1);
      }
    }
    expect(probe.notes.filter((n) => n.what === 'enter' && n.key.startsWith('once-')).length).toBe(2);
  });

  it('stacked @Locked with two keys holds both while the method runs', async () => {
    const probe = new Probe();
    const nested = (await instance('a', probe, [Nested])).get(Nested);
    expect(await nested.twoKeys()).toBe(2);
    expect(await leftovers()).toEqual([]);
  });

  it('stacked @Locked with the same key waits for itself: LockTimeoutError at the inner waitTimeout, nothing left held (accepted, not refused)', async () => {
    const probe = new Probe();
    const nested = (await instance('a', probe, [Nested])).get(Nested);
    const error = await rejection(nested.sameKeyTwice());
    expect(isLockTimeoutError(error), error.message).toBe(true);
    expect(await leftovers()).toEqual([]);
    // with a reentrant locker the inner one joins the outer lease
    const reentrant = (await instance('r', probe, [Nested], { locker: { reentrant: true } })).get(Nested);
    expect(await reentrant.sameKeyTwice()).toBe('ran');
    expect(await leftovers()).toEqual([]);
  });

  it('a @Locked method calling another with the same key: LockTimeoutError on the default locker, joins with reentrant: true (one store lease)', async () => {
    const probe = new Probe();
    const plain = (await instance('a', probe, [Nested])).get(Nested);
    expect(isLockTimeoutError(await rejection(plain.outer()))).toBe(true);
    expect(isLockTimeoutError(await rejection(plain.outerList()))).toBe(true);
    expect(await leftovers()).toEqual([]);
    const moduleRef = await instance('r', probe, [Nested], { locker: { reentrant: true } });
    const events: LockEvent[] = [];
    const watch = moduleRef.get<Locker>(LOCKER).events$.subscribe((e) => events.push(e));
    suite.closers.push(() => watch.unsubscribe());
    const reentrant = moduleRef.get(Nested);
    expect(await reentrant.outer()).toBe('outer(inner)');
    expect(await reentrant.outerList()).toBe('outerList(innerB)');
    expect(events.filter((e) => e.type === 'acquired').map((e) => e.key)).toEqual(['re:k', 're:a', 're:b']);
    expect(await leftovers()).toEqual([]);
  });
});

describe('@Locked: a nested skip', () => {
  it("a nested onBusy: 'skip' call on the key its caller holds silently does not run on the default locker; runs with reentrant: true", async () => {
    const probe = new Probe();
    const plain = (await instance('a', probe, [Nested])).get(Nested);
    expect(await plain.outerSkip()).toBe('outerSkip(undefined)');
    expect(plain.innerRuns).toBe(0);
    const reentrant = (await instance('r', probe, [Nested], { locker: { reentrant: true } })).get(Nested);
    expect(await reentrant.outerSkip()).toBe('outerSkip(innerSkip)');
    expect(await leftovers()).toEqual([]);
  });
});

describe('@Locked: options', () => {
  it("onBusy: 'skip' with a list: one key held elsewhere → undefined, not run, the free key not left held", async () => {
    const probe = new Probe();
    const [a, b] = [await instance('a', probe, [Work]), await instance('b', probe, [Work])];
    const held = a.get(Work).skipList(['2'], 'h');
    await probe.waitFor('enter', 'h');
    // '1' sorts before '2': taken, then given back when '2' is busy
    expect(await b.get(Work).skipList(['1', '2', '3'], 'never')).toBeUndefined();
    expect(probe.notes.some((n) => n.key === 'never')).toBe(false);
    expect((await leftovers()).sort()).toEqual(['lock:sku:2']);
    // an empty list does not lock: runs even while everything is held
    probe.open('e');
    expect(await b.get(Work).skipList([], 'e')).toBe('e');
    probe.open('h');
    expect(await held).toBe('h');
    expect(await leftovers()).toEqual([]);
  });

  it('waitTimeout: 0 (waiting mode) rejects with LockTimeoutError at once when busy', async () => {
    const probe = new Probe();
    const [a, b] = [await instance('a', probe, [Work]), await instance('b', probe, [Work])];
    const held = a.get(Work).held('w');
    await probe.waitFor('enter', 'w');
    const started = performance.now();
    const error = await rejection(b.get(Work).heldNow());
    expect(isLockTimeoutError(error), error.message).toBe(true);
    expect(performance.now() - started).toBeLessThan(2_000);
    probe.open('w');
    await held;
  });

  it('bad options and keys throw LockOptionsError naming the option when the class is defined', () => {
    const cases: Array<[() => unknown, string]> = [
      [() => Locked('k', { ttl: 0 }), 'ttl'],
      [() => Locked('k', { ttl: Number.NaN }), 'ttl'],
      [() => Locked('k', { renew: 5 as never }), 'renew'],
      [() => Locked('k', { reentrant: 'yes' as never }), 'reentrant'],
      [() => Locked('k', { onLost: 'ignore' as never }), 'onLost'],
      [() => Locked('k', { tll: 5 } as never), 'options.tll'],
      [() => Locked('k', null as never), 'options'],
      [() => Locked(['a', 'b'] as never), 'key'],
      [() => Locked('x'.repeat(10_000)), 'key'],
      [() => Locked('k')(class {}, 'static', { value: async () => {} }), 'Locked'],
      [() => Locked('k')({}, 'getter', { get: async () => {} } as never), 'Locked'],
    ];
    for (const [decorate, option] of cases) expect(optionOf(decorate), option).toBe(option);
    // valid combinations are accepted
    expect(() => Locked('k', { onBusy: 'skip', waitTimeout: 0, reentrant: true, ttl: 1_000, renew: false, onLost: 'notify' })).not.toThrow();
  });
});

/** Flushes its work under the lock in every shutdown hook Nest has, and calls itself in its constructor. */
@Injectable()
class Flusher {
  readonly results: Record<string, string> = {};
  readonly early: Promise<unknown>;

  constructor(@Inject(PROBE) readonly probe: Probe) {
    // the locker is injected after the constructor: this call cannot be locked
    this.early = this.flush('constructor').then(
      () => 'ran',
      (error: Error) => error.name,
    );
  }

  @Locked('flush')
  async flush(hook: string): Promise<void> {
    this.probe.note('flush', hook, '');
  }

  private async record(hook: string): Promise<void> {
    this.results[hook] = await this.flush(hook).then(
      () => 'ok',
      (error: Error) => error.name,
    );
  }

  onModuleInit = () => this.record('onModuleInit');
  onModuleDestroy = () => this.record('onModuleDestroy');
  beforeApplicationShutdown = () => this.record('beforeApplicationShutdown');
  onApplicationShutdown = () => this.record('onApplicationShutdown');
}

@Module({ providers: [Flusher], exports: [Flusher] })
class FlushFeature {}

describe('@Locked: the application lifecycle', () => {
  async function lifecycle(where: string): Promise<Flusher> {
    const probe = new Probe();
    const lockModule = LockModule.forRoot({ redis: { host: suite.server.host, port: suite.server.port }, isGlobal: where.includes('global') });
    const feature = { module: FlushFeature, imports: where === 'feature module' ? [lockModule] : [], providers: [{ provide: PROBE, useValue: probe }] };
    const moduleRef = await Test.createTestingModule(
      where === 'feature module'
        ? { imports: [feature] }
        : where === 'feature module beside a global LockModule'
          ? { imports: [lockModule, feature] }
          : where === 'feature module before a global LockModule'
            ? { imports: [feature, lockModule] }
            : { imports: [lockModule], providers: [Flusher, { provide: PROBE, useValue: probe }] },
    ).compile();
    moduleRef.useLogger(false);
    // (closed by the test, or after it if an expectation failed before that)
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await moduleRef.close();
    };
    suite.closers.push(close);
    await moduleRef.init();
    const flusher = moduleRef.get(Flusher, { strict: false });
    expect(await flusher.early).toBe('LockOptionsError');
    await close();
    expect(await leftovers()).toEqual([]);
    return flusher;
  }

  for (const where of [
    'root module',
    'feature module',
    'global LockModule',
    'feature module beside a global LockModule',
    'feature module before a global LockModule',
  ]) {
    it(`calls from onModuleInit, onModuleDestroy, beforeApplicationShutdown of a provider in a ${where} are locked; one from its constructor rejects with LockOptionsError`, async () => {
      const { results } = await lifecycle(where);
      expect([results.onModuleInit, results.onModuleDestroy, results.beforeApplicationShutdown]).toEqual(['ok', 'ok', 'ok']);
    });
  }

  // Nest 10 (documented, not fixed: no later hook to close the locker in): it runs
  // onApplicationShutdown of imported modules first, so LockModule has closed the locker when the
  // application's own providers get the hook, and a final flush under the lock there rejects with
  // LockerClosedError. Nest 11 and 12 run it root first.
  (NEST_MAJOR >= 11 ? it : it.fails)('a call from a provider’s onApplicationShutdown is locked too (fails on Nest 10: LockerClosedError)', async () => {
    const { results } = await lifecycle('root module');
    expect(results.onApplicationShutdown).toBe('ok');
  });
});

/** @WithLock key functions that return whatever the request body says. */
@Controller()
class KeyListController {
  constructor(@Inject(PROBE) private readonly probe: Probe) {}

  @Post('one')
  @WithLock(bodyKeys, { waitTimeout: 0 })
  async one(@Body() body: { gate?: string }): Promise<string> {
    return this.run(body.gate);
  }

  @Post('beside')
  @WithLock(['fixed:{body.fixed}', bodyKeys, bodyKeys], { waitTimeout: 0 })
  async beside(@Body() body: { gate?: string }): Promise<string> {
    return this.run(body.gate);
  }

  private async run(gate: string | undefined): Promise<string> {
    this.probe.note('enter', gate ?? 'run', '');
    if (gate !== undefined) await this.probe.gate(gate);
    return 'ran';
  }
}

function bodyKeys(context: import('@nestjs/common').ExecutionContext): string | readonly string[] {
  const { keys } = context.switchToHttp().getRequest<{ body: { keys: unknown } }>().body;
  if (keys === 'throw') throw new Error('key function threw');
  return keys as string[];
}

describe('@WithLock: key functions returning lists, attacked over HTTP', () => {
  const start = lockedAppsOn(suite, 'express', [KeyListController]);

  it('junk from a key function (alone or flattened beside templates) fails the request without running the handler or leaving a key', async () => {
    const probe = new Probe();
    const { url } = await start('a', probe);
    const junk: unknown[] = ['throw', 42, null, '', ['ok', 42], ['ok', ''], Array.from({ length: 65 }, (_, i) => `k${i}`), [['nested']], { 0: 'a', length: 1 }];
    for (const keys of junk) {
      for (const path of ['/one', '/beside']) {
        const response = await request(url).post(path).send({ keys, fixed: 'f' });
        // a programming error of the key function: Nest's 500 (never a lock taken "undefined")
        expect(response.status, `${path} ${JSON.stringify(keys)}`).toBe(500);
      }
    }
    expect(probe.notes).toEqual([]);
    expect(await leftovers()).toEqual([]);
  });

  it('duplicates taken once and not counted against the 64-key limit; a list flattened beside itself and a template; busy → 409 with nothing left held', async () => {
    const probe = new Probe();
    const { url } = await start('a', probe);
    expect(
      (
        await request(url)
          .post('/one')
          .send({ keys: ['d', 'd'] })
      ).status,
    ).toBe(201);
    // 1 template + a list of 31 twice = 63 entries: fine
    expect(
      (
        await request(url)
          .post('/beside')
          .send({ keys: Array.from({ length: 31 }, (_, i) => `k${i}`), fixed: 'f' })
      ).status,
    ).toBe(201);
    // the limit counts distinct keys, not entries: 1 + 2 × 63 = 127 entries naming 64 keys, and 65
    // entries of one key, are fine; 1 + 2 × 64 entries naming 65 keys are refused, 500
    expect(
      (
        await request(url)
          .post('/beside')
          .send({ keys: Array.from({ length: 63 }, (_, i) => `k${i}`), fixed: 'f' })
      ).status,
    ).toBe(201);
    expect(
      (
        await request(url)
          .post('/one')
          .send({ keys: Array.from({ length: 65 }, () => 'same') })
      ).status,
    ).toBe(201);
    expect(
      (
        await request(url)
          .post('/beside')
          .send({ keys: Array.from({ length: 64 }, (_, i) => `k${i}`), fixed: 'f' })
      ).status,
    ).toBe(500);
    expect(probe.notes).toHaveLength(4);
    const held = request(url)
      .post('/beside')
      .send({ keys: ['b', 'c'], fixed: 'f', gate: 'g' })
      .then((r) => r);
    await probe.waitFor('enter', 'g');
    expect((await leftovers()).sort()).toEqual(['lock:b', 'lock:c', 'lock:fixed:f']);
    // 'a' sorts first: taken, then given back when 'b' is busy
    const busy = await request(url)
      .post('/one')
      .send({ keys: ['a', 'b'] });
    expect(busy.status).toBe(409);
    expect((await leftovers()).sort()).toEqual(['lock:b', 'lock:c', 'lock:fixed:f']);
    // an empty list beside a busy template still waits for the template: 409
    expect((await request(url).post('/beside').send({ keys: [], fixed: 'f' })).status).toBe(409);
    probe.open('g');
    expect((await held).status).toBe(201);
    expect(await leftovers()).toEqual([]);
  });
});
