/**
 * `@Locked` on provider methods, which Nest calls without an interceptor: two "instances" (Nest
 * application contexts with their own LockModule, Redis connection and locker) call the same
 * methods, by hand and from `@nestjs/schedule` intervals; the lock holds across them, a busy
 * `onBusy: 'skip'` call runs nothing, key functions see the arguments, failures reach the caller
 * with the lock given back, and misuse fails loudly (at start-up or at the call, never unlocked).
 */
import 'reflect-metadata';
import { Inject, Injectable, Module, SetMetadata } from '@nestjs/common';
import { Interval, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { concatMap, lastValueFrom, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { isLockOptionsError, type LockEvent, type Locker } from '../../src/index.js';
import { LOCKER, Locked } from '../../src/nestjs.js';
import { redisSuite } from '../support/redisSuite.js';
import { APP_NAME, PROBE, Probe } from './fixtures/probe.js';
import { until } from '../support/timing.js';
import { optionOf } from '../support/optionOf.js';
import { lockedInstance, rejection } from './fixtures/lockedInstances.js';

const suite = redisSuite();

interface Order {
  readonly tag: string;
  readonly skus: readonly string[];
}

@Injectable()
class Jobs {
  /** Calls of a method whose `this` Nest did not see: the count of synchronous runs. */
  syncRuns = 0;

  constructor(
    @Inject(PROBE) private readonly probe: Probe,
    @Inject(APP_NAME) private readonly app: string,
  ) {}

  @Locked('job:report', { waitTimeout: 20_000 })
  async report(tag: string): Promise<string> {
    await this.section('report', `report:${tag}`);
    return `report ${tag} by ${this.app}`;
  }

  @Locked('job:sweep', { onBusy: 'skip' })
  async sweep(tag: string): Promise<string | undefined> {
    await this.section('sweep', `sweep:${tag}`);
    return tag;
  }

  @Locked(
    function (this: Jobs, order: Order) {
      // a key function runs with the provider as `this`
      this.probe.note('keys', order.tag, this.app);
      return order.skus.map((sku) => `sku:${sku}`);
    },
    { waitTimeout: 20_000 },
  )
  async reserve(order: Order): Promise<string> {
    await this.section(`order:${order.skus.join(',')}`, `order:${order.tag}`);
    return order.tag;
  }

  @Locked('job:sync')
  bump(): void {
    this.syncRuns++;
  }

  @Locked('job:fails')
  async fails(how: 'reject' | 'throw'): Promise<void> {
    if (how === 'throw') throw new Error('thrown');
    await new Promise((resolve) => setTimeout(resolve, 1));
    throw new Error('rejected');
  }

  private async section(key: string, gate: string): Promise<void> {
    this.probe.note('enter', key, this.app);
    this.probe.note('enter', gate, this.app);
    await this.probe.gate(gate);
    this.probe.note('exit', key, this.app);
  }
}

/** Two jobs every instance schedules every 10 ms; each run holds its key 25 ms, so most ticks find it busy. */
@Injectable()
class Ticks {
  constructor(
    @Inject(PROBE) private readonly probe: Probe,
    @Inject(APP_NAME) private readonly app: string,
  ) {}

  @Interval(10)
  @Locked('job:tick', { onBusy: 'skip' })
  async tick(): Promise<void> {
    await this.run('tick');
  }

  // the other order: @Interval's metadata was set on the method before @Locked replaced it
  @Locked('job:tock', { onBusy: 'skip' })
  @Interval(10)
  async tock(): Promise<void> {
    await this.run('tock');
  }

  private async run(job: string): Promise<void> {
    this.probe.note('enter', job, this.app);
    await new Promise((resolve) => setTimeout(resolve, 25));
    this.probe.note('exit', job, this.app);
  }
}

const instance = (name: string, probe: Probe, providers: unknown[], imports: unknown[] = []) => lockedInstance(suite, name, probe, providers, { imports });

describe('@Locked on provider methods', () => {
  it('excludes calls on two instances; the value of the method comes back; the key is free once it ends', async () => {
    const probe = new Probe();
    const [a, b] = [await instance('a', probe, [Jobs]), await instance('b', probe, [Jobs])];
    const first = a.get(Jobs).report('1');
    await probe.waitFor('enter', 'report:1');
    expect(await suite.admin.exists('lock:job:report')).toBe(1);
    const second = b.get(Jobs).report('2');
    await until(async () => (await lastValueFrom(b.get<Locker>(LOCKER).inspect('job:report')))?.waiting === 1, 'b waits in line');
    expect(probe.notes.some((n) => n.key === 'report:2')).toBe(false);
    probe.open('report:1');
    await probe.waitFor('enter', 'report:2');
    probe.open('report:2');
    expect([await first, await second]).toEqual(['report 1 by a', 'report 2 by b']);
    expect(probe.notes.filter((n) => n.key === 'report').map((n) => `${n.what}:${n.app}`)).toEqual(['enter:a', 'exit:a', 'enter:b', 'exit:b']);
    expect(await suite.admin.exists('lock:job:report')).toBe(0);
  });

  it("onBusy: 'skip': a call that finds the key held elsewhere resolves undefined without running, reported as a skip", async () => {
    const probe = new Probe();
    const [a, b] = [await instance('a', probe, [Jobs]), await instance('b', probe, [Jobs])];
    const events: LockEvent[] = [];
    const watch = b.get<Locker>(LOCKER).events$.subscribe((event) => events.push(event));
    suite.closers.push(() => watch.unsubscribe());
    const held = a.get(Jobs).sweep('1');
    await probe.waitFor('enter', 'sweep:1');
    expect(await b.get(Jobs).sweep('2')).toBeUndefined();
    expect(probe.notes.some((n) => n.key === 'sweep:2')).toBe(false);
    expect(events.some((e) => e.type === 'timed-out' && e.key === 'job:sweep' && e.skipped === true)).toBe(true);
    probe.open('sweep:1');
    expect(await held).toBe('1');
    // free again: the next call runs
    probe.open('sweep:3');
    expect(await b.get(Jobs).sweep('3')).toBe('3');
  });

  it('a key function of the arguments: its list locked all or none across instances; an empty list locks nothing', async () => {
    const probe = new Probe();
    const [a, b] = [await instance('a', probe, [Jobs]), await instance('b', probe, [Jobs])];
    const o1 = a.get(Jobs).reserve({ tag: 'o1', skus: ['p1', 'p2'] });
    await probe.waitFor('enter', 'order:o1');
    expect(await suite.admin.exists('lock:sku:p1', 'lock:sku:p2')).toBe(2);
    const o2 = b.get(Jobs).reserve({ tag: 'o2', skus: ['p3', 'p2'] });
    await until(async () => (await lastValueFrom(b.get<Locker>(LOCKER).inspect('sku:p2')))?.waiting === 1, 'o2 waits for p2');
    // in the global order p2 comes first: o2 holds nothing while it waits
    expect(await suite.admin.exists('lock:sku:p3')).toBe(0);
    const o3 = b.get(Jobs).reserve({ tag: 'o3', skus: ['p4'] });
    await probe.waitFor('enter', 'order:o3');
    const o4 = a.get(Jobs).reserve({ tag: 'o4', skus: [] });
    await probe.waitFor('enter', 'order:o4');
    probe.open('order:o3');
    probe.open('order:o4');
    expect([await o3, await o4]).toEqual(['o3', 'o4']);
    expect(probe.notes.some((n) => n.key === 'order:o2')).toBe(false);
    probe.open('order:o1');
    await probe.waitFor('enter', 'order:o2');
    probe.open('order:o2');
    expect([await o1, await o2]).toEqual(['o1', 'o2']);
    // the key function ran once per call, with the provider as this
    expect(probe.notes.filter((n) => n.what === 'keys').map((n) => `${n.key}@${n.app}`)).toEqual(['o1@a', 'o2@b', 'o3@b', 'o4@a']);
    expect(await suite.admin.keys('lock:sku:*')).toEqual([]);
  });

  it('a method that returns nothing runs under the lock and its call returns a Promise; failures reject with the lock given back', async () => {
    const probe = new Probe();
    const a = await instance('a', probe, [Jobs]);
    const jobs = a.get(Jobs);
    const call = jobs.bump();
    expect(call).toBeInstanceOf(Promise);
    // the method runs only once the lock is held: not yet, synchronously
    expect(jobs.syncRuns).toBe(0);
    await call;
    expect(jobs.syncRuns).toBe(1);
    for (const how of ['reject', 'throw'] as const) {
      const call = jobs.fails(how);
      expect(call).toBeInstanceOf(Promise);
      expect((await rejection(call)).message).toBe(how === 'throw' ? 'thrown' : 'rejected');
      expect(await suite.admin.exists('lock:job:fails')).toBe(0);
    }
  });

  it('runs @nestjs/schedule jobs on one instance at a time, with @Interval written above or below @Locked', async () => {
    const probe = new Probe();
    await instance('a', probe, [Ticks], [ScheduleModule.forRoot()]);
    await instance('b', probe, [Ticks], [ScheduleModule.forRoot()]);
    const ran = (job: string, app: string) => probe.notes.filter((n) => n.what === 'exit' && n.key === job && n.app === app).length;
    // both orders schedule the job (on both instances)
    await until(() => ['tick', 'tock'].every((job) => ran(job, 'a') + ran(job, 'b') >= 6), 'six runs of each job');
    for (const job of ['tick', 'tock']) {
      let running = 0;
      for (const note of probe.notes.filter((n) => n.key === job)) {
        running += note.what === 'enter' ? 1 : -1;
        expect(running, `${job} runs at once`).toBeLessThanOrEqual(1);
      }
    }
  });

  it('misuse fails loudly: a provider whose module cannot see LockModule fails at start-up; a call on an object Nest did not make rejects', async () => {
    @Module({ providers: [Jobs, { provide: PROBE, useValue: new Probe() }, { provide: APP_NAME, useValue: 'x' }] })
    class WithoutLockModule {}
    await expect(Test.createTestingModule({ imports: [WithoutLockModule] }).compile()).rejects.toThrow(/Jobs/);
    const error = await rejection(new Jobs(new Probe(), 'x').report('1'));
    expect(isLockOptionsError(error)).toBe(true);
    expect((error as { option?: string }).option).toBe('Locked');
    expect(error.message).toMatch(/LockModule/);
  });

  it('decorated while the process runs: fixed keys and key functions, and what a method returns at run time (null, a thenable, an Observable from untyped code)', async () => {
    // (classes defined here, not at import: the decorator runs inside the test)
    const probe = new Probe();
    @Injectable()
    class Late {
      @Locked('late:fixed')
      async fixed(): Promise<string | null> {
        probe.note('held', String(await suite.admin.exists('lock:late:fixed')), 'late');
        return null;
      }

      // untyped code returning plain values: resolved as they are
      @Locked('late:plain')
      nothing(): Promise<unknown> {
        return null as unknown as Promise<unknown>;
      }

      @Locked('late:plain')
      plain(): Promise<unknown> {
        return { answer: 42 } as unknown as Promise<unknown>;
      }

      // metadata set on the method before @Locked wraps it (as @Cron written above or below)
      @Locked((id: string) => `late:${id}`)
      @SetMetadata('rxjs-lock-test:tag', 'kept')
      async byId(id: string): Promise<string> {
        probe.note('held', String(await suite.admin.exists(`lock:late:${id}`)), 'late');
        return id;
      }

      @Locked('late:thenable')
      thenable(): Promise<number> {
        // a thenable that is not a Promise: awaited all the same
        // biome-ignore lint/suspicious/noThenProperty: the thenable is what this test is about
        return { then: (resolve: (value: number) => void) => resolve(7) } as unknown as Promise<number>;
      }

      @Locked('late:stream')
      stream(): Promise<number> {
        // untyped code returning an Observable: it runs under the lock, and its last value comes back
        return timer(20).pipe(
          concatMap(async () => {
            probe.note('held', String(await suite.admin.exists('lock:late:stream')), 'late');
            return 3;
          }),
        ) as unknown as Promise<number>;
      }
    }
    const late = (await instance('late', probe, [Late])).get(Late);
    expect(await late.fixed()).toBeNull();
    expect(await late.nothing()).toBeNull();
    expect(await late.plain()).toEqual({ answer: 42 });
    // the wrapper keeps the method's name; the locker is injected once per class, however many methods
    expect([Late.prototype.fixed.name, Late.prototype.byId.name]).toEqual(['fixed', 'byId']);
    expect(Reflect.getMetadata('self:properties_metadata', Late)).toHaveLength(1);
    expect(Reflect.getMetadata('rxjs-lock-test:tag', Late.prototype.byId)).toBe('kept');
    expect(await late.byId('x1')).toBe('x1');
    expect(await late.thenable()).toBe(7);
    expect(await late.stream()).toBe(3);
    await until(() => probe.notes.length === 3, 'three notes');
    expect(probe.notes.map((n) => n.key)).toEqual(['1', '1', '1']);
    expect(await suite.admin.keys('lock:late:*')).toEqual([]);
  });

  it('checks its key and options when the class is defined', () => {
    const cases: Array<[() => unknown, string]> = [
      [() => Locked(''), 'key'],
      [() => Locked(42 as never), 'key'],
      [() => Locked('k', { waitTimeout: -1 }), 'waitTimeout'],
      [() => Locked('k', { onBusy: 'skip', waitTimeout: 5 }), 'waitTimeout'],
      [() => Locked('k', { onBusy: 'later' as never }), 'onBusy'],
      [() => Locked('k', { errors: {} } as never), 'options.errors'],
      [() => Locked('k')({}, 'notAMethod', { value: 42 as never }), 'Locked'],
    ];
    for (const [decorate, option] of cases) expect(optionOf(decorate), option).toBe(option);
    // the messages say what is accepted
    expect(() => Locked('k')({}, 'notAMethod', { value: 42 as never })).toThrow(/an instance method of a provider/);
    expect(() => Locked('k')(class {}, 'staticMethod', { value: async () => undefined })).toThrow(/an instance method/);
    // and a method is accepted
    expect(() => Locked('k')({}, 'method', { value: async () => undefined })).not.toThrow();
  });
});
