/**
 * Wake-up signals over Redis pub/sub: one inbox channel per store (so per process, as a rule),
 * subscribed on one connection, to which a release publishes a grant addressed to a waiter of this
 * store. Each waiting session registers its token; a grant is delivered to that session only.
 *
 * Why an inbox per store rather than a channel per key: a process subscribes once, however many
 * keys it waits for (a channel per key would cost a SUBSCRIBE and an UNSUBSCRIBE per key waited
 * for, on workloads with many distinct keys), and a grant wakes its grantee alone instead of every
 * process waiting for the key.
 *
 * Connection loss: when the subscriber connection drops (a network blip, `CLIENT KILL TYPE
 * pubsub`, a Redis restart), the inbox is inactive until it is subscribed again on the new
 * connection, and every session hears of both moments: it polls meanwhile, and looks at once when
 * the channel is back (a grant published while it was down was lost). So wake-ups resume as soon
 * as the connection does, and the store never stays on polling.
 *
 * The channel stays subscribed for a while after the last session leaves (`linger`), so a process
 * that keeps taking hot keys does not subscribe again and again and can queue at once; then the
 * connection is closed, so an idle process can exit.
 */
import { grantRecipient } from './protocol/codec.js';
import type { RedisSubscriber } from './RedisClient.js';

/** One session's registration. */
export interface InboxWatch {
  /** True when the inbox is subscribed (a grant cannot be missed from here on). */
  readonly active: boolean;
  /** Resolves once the inbox is first subscribed (never rejects; a failed SUBSCRIBE just never wakes). */
  readonly ready: Promise<void>;
  stop(): void;
}

/** What a session hears: its grant messages, and the channel going down or coming back. */
export interface InboxListener {
  message(message: string): void;
  status(active: boolean): void;
}

/**
 * A promise that never settles, made afresh each time: one shared module-wide would be kept alive
 * by the module and keep every promise resolved with it, and every reaction attached to those
 * (one per wait while a node stays down: a leak).
 */
export const never = (): Promise<void> => new Promise<void>(() => undefined);

export class WakeInbox {
  private subscriber: RedisSubscriber | undefined;
  private readonly listeners = new Map<string, InboxListener>();
  private active = false;
  private ready: Promise<void> = Promise.resolve();
  private linger: ReturnType<typeof setTimeout> | undefined;
  /** The connections our handlers are on (a caller's connection comes back on every open). */
  private readonly listenedTo = new WeakSet<RedisSubscriber>();
  /** Bumped by every open and shut, so a late SUBSCRIBE reply cannot mark a later opening active. */
  private generation = 0;
  private closed = false;

  constructor(
    /** The channel name. */
    readonly channel: string,
    private readonly connect: () => RedisSubscriber,
    private readonly lingerMs: number,
    /** Whether the connection is ours to close. */
    private readonly owned: boolean,
  ) {}

  /** Delivers the messages addressed to `token` to `listener` until stopped. */
  watch(token: string, listener: InboxListener): InboxWatch {
    if (this.closed) return { active: false, ready: never(), stop: () => undefined };
    if (this.linger !== undefined) {
      clearTimeout(this.linger);
      this.linger = undefined;
    }
    if (this.subscriber === undefined) this.open();
    this.listeners.set(token, listener);
    const inbox = this;
    let stopped = false;
    return {
      get active() {
        return inbox.active && !stopped;
      },
      ready: this.ready,
      stop: () => {
        if (stopped) return;
        stopped = true;
        if (this.listeners.get(token) === listener) this.listeners.delete(token);
        if (this.listeners.size === 0) this.scheduleClose();
      },
    };
  }

  /** Unsubscribes and closes an owned connection, for good: later watches never become active. */
  close(): void {
    this.closed = true;
    if (this.linger !== undefined) clearTimeout(this.linger);
    this.linger = undefined;
    this.listeners.clear();
    this.shut();
  }

  private open(): void {
    const subscriber = this.connect();
    this.subscriber = subscriber;
    this.active = false;
    const generation = ++this.generation;
    if (!this.listenedTo.has(subscriber)) {
      this.listenedTo.add(subscriber);
      subscriber.on('error', () => undefined); // reconnects on its own; waiters poll meanwhile
      subscriber.on('message', (channel, message) => {
        if (channel === this.channel && this.subscriber === subscriber) this.deliver(message);
      });
      subscriber.on('close', () => {
        if (this.subscriber === subscriber) this.setActive(false);
      });
      subscriber.on('ready', () => {
        // A new connection (after a drop): subscribe again before counting on it.
        if (this.subscriber === subscriber && !this.active) this.subscribe(subscriber, this.generation);
      });
    }
    this.ready = this.subscribe(subscriber, generation);
  }

  /** Subscribes the inbox on `subscriber`; resolves once it is (or never, if that fails). */
  private subscribe(subscriber: RedisSubscriber, generation: number): Promise<void> {
    return subscriber.subscribe(this.channel).then(
      () => {
        if (this.generation === generation && this.subscriber === subscriber) this.setActive(true);
      },
      () => never(),
    );
  }

  private setActive(active: boolean): void {
    if (this.active === active) return;
    this.active = active;
    for (const listener of [...this.listeners.values()]) listener.status(active);
  }

  private scheduleClose(): void {
    if (this.linger !== undefined) return;
    this.linger = setTimeout(() => {
      this.linger = undefined;
      if (this.listeners.size === 0) this.shut();
    }, this.lingerMs);
    this.linger.unref?.();
  }

  private shut(): void {
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    this.active = false;
    this.generation++;
    if (subscriber === undefined) return;
    if (this.owned) subscriber.disconnect();
    else subscriber.unsubscribe(this.channel).catch(() => undefined);
  }

  /** `granted <token> …`, as the release script publishes it. */
  private deliver(message: string): void {
    const token = grantRecipient(message);
    if (token !== undefined) this.listeners.get(token)?.message(message);
  }
}
