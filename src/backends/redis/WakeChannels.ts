/**
 * Wake-up signals over Redis pub/sub: one subscriber connection per store, shared by every key a
 * waiter of this process watches, with each key's channel subscribed while anyone watches it.
 *
 * A channel stays subscribed for a short while after its last watcher leaves (`linger`), so that a
 * process taking the same hot key again and again does not pay a SUBSCRIBE and an UNSUBSCRIBE per
 * wait, and so that its next waiter can queue at once, knowing the channel is live. The
 * connection is closed when no channel is left, so an idle process can exit.
 */
import type { RedisSubscriber } from './RedisClient.js';

/** One watcher's handle. */
export interface WakeWatch {
  /** True when the channel is subscribed already (signals cannot be missed from here on). */
  readonly active: boolean;
  /** Resolves once the channel is subscribed (never rejects; a failed SUBSCRIBE just never wakes). */
  readonly ready: Promise<void>;
  stop(): void;
}

interface Channel {
  readonly listeners: Set<(message: string) => void>;
  active: boolean;
  ready: Promise<void>;
  linger: ReturnType<typeof setTimeout> | undefined;
}

export class WakeChannels {
  private subscriber: RedisSubscriber | undefined;
  private readonly channels = new Map<string, Channel>();

  constructor(
    private readonly connect: () => RedisSubscriber,
    private readonly lingerMs: number,
    /** Whether the connection is ours to close. */
    private readonly owned: boolean,
  ) {}

  watch(name: string, listener: (message: string) => void): WakeWatch {
    let channel = this.channels.get(name);
    if (channel === undefined) {
      channel = { listeners: new Set(), active: false, ready: Promise.resolve(), linger: undefined };
      const created = channel;
      this.channels.set(name, created);
      created.ready = this.connection()
        .subscribe(name)
        .then(
          () => void (created.active = true),
          () => undefined,
        );
    } else if (channel.linger !== undefined) {
      clearTimeout(channel.linger);
      channel.linger = undefined;
    }
    const current = channel;
    current.listeners.add(listener);
    let stopped = false;
    return {
      get active() {
        return current.active;
      },
      ready: current.ready,
      stop: () => {
        if (stopped) return;
        stopped = true;
        current.listeners.delete(listener);
        if (current.listeners.size === 0) this.linger(name, current);
      },
    };
  }

  /** Unsubscribes everything and closes an owned connection. */
  close(): void {
    for (const channel of this.channels.values()) if (channel.linger !== undefined) clearTimeout(channel.linger);
    this.channels.clear();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (subscriber !== undefined && this.owned) subscriber.disconnect();
  }

  private linger(name: string, channel: Channel): void {
    channel.linger = setTimeout(() => {
      channel.linger = undefined;
      if (channel.listeners.size > 0 || this.channels.get(name) !== channel) return;
      this.channels.delete(name);
      const subscriber = this.subscriber;
      if (subscriber === undefined) return;
      if (this.channels.size === 0 && this.owned) {
        this.subscriber = undefined;
        subscriber.disconnect();
      } else {
        subscriber.unsubscribe(name).catch(() => undefined);
      }
    }, this.lingerMs);
    channel.linger.unref?.();
  }

  private connection(): RedisSubscriber {
    if (this.subscriber !== undefined) return this.subscriber;
    const subscriber = this.connect();
    subscriber.on('error', () => undefined); // reconnects on its own; waiters fall back to polling meanwhile
    subscriber.on('message', (name, message) => this.deliver(name, message));
    return (this.subscriber = subscriber);
  }

  private deliver(name: string, message: string): void {
    const channel = this.channels.get(name);
    if (channel === undefined) return;
    for (const listener of [...channel.listeners]) listener(message);
  }
}
