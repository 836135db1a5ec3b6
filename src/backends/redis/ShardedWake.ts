/**
 * Wake-up signals over sharded pub/sub (Redis ≥ 7 `SSUBSCRIBE`/`SPUBLISH`) on a Redis Cluster: a
 * shard channel per lock key and store, in the key's hash slot, subscribed on the node that owns
 * the slot, while this store has a waiter for the key. A release announces a hand-off with
 * `SPUBLISH`, which the owning node delivers to its own subscribers only; a `PUBLISH` to the
 * store's broadcast inbox (./WakeInbox.ts) is sent by the cluster bus to every node of the
 * cluster, so on N masters each hand-off costs N deliveries instead of one.
 *
 * Why a channel per key (and store) here, where the broadcast inbox is one channel per store: a
 * script on a Cluster may only touch channels of its keys' slot, so the channel must hash like the
 * lock key; naming the store in it keeps the grantee's process the only one woken.
 *
 * It runs on a duplicate of the caller's Cluster with ioredis' `shardedSubscribers` option (one
 * subscriber connection per master, re-subscribing after a failover or a slot migration, which
 * makes the node drop its shard subscriptions). The watches of every channel go inactive (their
 * waiters poll) when ioredis drops a node's subscriber, and resume (and look at once) when it says
 * its subscribers are ready again.
 *
 * Detection: the client must be an ioredis Cluster whose options know `shardedSubscribers`
 * (ioredis 6 does); otherwise the store keeps the broadcast inbox. If the server refuses
 * `SSUBSCRIBE` (an unknown or renamed command), the store falls back to the broadcast inbox for
 * every later wait ({@link ShardedWake.available} turns false).
 */
import { never, type InboxListener, type InboxWatch } from './WakeInbox.js';
import { grantRecipient } from './protocol/codec.js';
import { shardChannel } from './protocol/keyLayout.js';
import type { RedisClient, ShardSubscriber } from './RedisClient.js';

/** One shard channel's waiters and state. */
interface Channel {
  readonly name: string;
  readonly listeners: Map<string, InboxListener>;
  /** Subscribed (and the node's subscriber not known to be down). */
  active: boolean;
  /** Resolves once first subscribed. */
  ready: Promise<void>;
  subscribed: boolean;
  linger: ReturnType<typeof setTimeout> | undefined;
}

/** Does `client` offer sharded subscribers (an ioredis Cluster that knows the option)? */
export function supportsShardedWake(client: RedisClient): boolean {
  return client.isCluster === true && typeof client.duplicate === 'function' && client.options !== undefined && 'shardedSubscribers' in client.options;
}

export class ShardedWake {
  private subscriber: ShardSubscriber | undefined;
  private readonly channels = new Map<string, Channel>();
  private down = false;
  private closed = false;
  private unavailable = false;

  constructor(
    private readonly client: RedisClient,
    /** The store's id (its inbox's uuid), in every channel name. */
    private readonly storeId: string,
    /** The client's ioredis key prefix (channels are prefixed like keys). */
    private readonly clientPrefix: string,
    private readonly lingerMs: number,
  ) {}

  /** False once the server refused SSUBSCRIBE: waits then go to the broadcast inbox. */
  get available(): boolean {
    return !this.unavailable && !this.closed;
  }

  /** The channel a waiter for `key` names in its place (the release script publishes to it). */
  channelOf(key: string): string {
    return shardChannel(key, this.storeId, this.clientPrefix).published;
  }

  /** Delivers the messages addressed to `token` on `key`'s channel to `listener` until stopped. */
  watch(key: string, token: string, listener: InboxListener): InboxWatch {
    if (this.closed) return { active: false, ready: never(), stop: () => undefined };
    const { subscribed, published } = shardChannel(key, this.storeId, this.clientPrefix);
    let channel = this.channels.get(published);
    if (channel === undefined) {
      channel = { name: published, listeners: new Map(), active: false, ready: never(), subscribed: false, linger: undefined };
      this.channels.set(published, channel);
      channel.ready = this.subscribe(channel, subscribed);
    } else if (channel.linger !== undefined) {
      clearTimeout(channel.linger);
      channel.linger = undefined;
    }
    const entry = channel;
    entry.listeners.set(token, listener);
    let stopped = false;
    return {
      get active() {
        return entry.active && !stopped;
      },
      ready: entry.ready,
      stop: () => {
        if (stopped) return;
        stopped = true;
        if (entry.listeners.get(token) === listener) entry.listeners.delete(token);
        if (entry.listeners.size === 0) this.scheduleRemoval(entry, subscribed);
      },
    };
  }

  /**
   * Unsubscribes everything and closes the connection, for good. Live watches go inactive (and are
   * told): their waiters poll instead of sleeping on messages that will not come.
   */
  close(): void {
    this.closed = true;
    for (const channel of this.channels.values()) {
      if (channel.linger !== undefined) clearTimeout(channel.linger);
      this.setActive(channel, false);
    }
    this.channels.clear();
    this.subscriber?.disconnect();
    this.subscriber = undefined;
  }

  private connection(): ShardSubscriber {
    if (this.subscriber !== undefined) return this.subscriber;
    // (the Cluster's signature: start-up nodes first, then options that override its own)
    const duplicate = this.client.duplicate!.bind(this.client) as unknown as (nodes: [], options: { shardedSubscribers: true }) => ShardSubscriber;
    const subscriber = duplicate([], { shardedSubscribers: true });
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined); // ioredis reconnects its subscribers; waiters poll meanwhile
    subscriber.on('smessage', (name, message) => {
      if (this.subscriber !== subscriber) return;
      const token = grantRecipient(message);
      if (token !== undefined) this.channels.get(name)?.listeners.get(token)?.message(message);
    });
    // A node's subscriber dropped (a failover, a lost link): grants on its slots may go unheard.
    subscriber.on('-subscriber', () => {
      if (this.subscriber !== subscriber) return;
      this.down = true;
      for (const channel of this.channels.values()) this.setActive(channel, false);
    });
    // ioredis re-subscribed every channel on the current owners of their slots.
    subscriber.on('subscribersReady', () => {
      if (this.subscriber !== subscriber || !this.down) return;
      this.down = false;
      for (const channel of this.channels.values()) if (channel.subscribed) this.setActive(channel, true);
    });
    return subscriber;
  }

  private subscribe(channel: Channel, subscribed: string): Promise<void> {
    return this.connection()
      .ssubscribe(subscribed)
      .then(
        () => {
          const current = this.channels.get(channel.name);
          if (current !== channel) {
            // Removed while the subscription was on its way: take it back — unless the channel is
            // watched again. Then a newer SSUBSCRIBE of it was sent after ours, and a SUNSUBSCRIBE
            // sent now would land after that one: the node would drop the subscription the new
            // watch counts on (it says active, its waiters sleep long and miss every grant).
            if (current === undefined) this.subscriber?.sunsubscribe(subscribed).catch(() => undefined);
            return never();
          }
          channel.subscribed = true;
          if (!this.down) this.setActive(channel, true);
          return undefined;
        },
        (error: unknown) => {
          if (error instanceof Error && /unknown command|unknown subcommand|not allowed|NOPERM/i.test(error.message)) this.unavailable = true;
          return never();
        },
      );
  }

  private setActive(channel: Channel, active: boolean): void {
    if (channel.active === active) return;
    channel.active = active;
    for (const listener of [...channel.listeners.values()]) listener.status(active);
  }

  private scheduleRemoval(channel: Channel, subscribed: string): void {
    if (channel.linger !== undefined) return;
    channel.linger = setTimeout(() => {
      channel.linger = undefined;
      if (channel.listeners.size > 0 || this.channels.get(channel.name) !== channel) return;
      this.channels.delete(channel.name);
      if (channel.subscribed) this.subscriber?.sunsubscribe(subscribed).catch(() => undefined);
      if (this.channels.size === 0) {
        this.subscriber?.disconnect();
        this.subscriber = undefined;
      }
    }, this.lingerMs);
    channel.linger.unref?.();
  }
}
