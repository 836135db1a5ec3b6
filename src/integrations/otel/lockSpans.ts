/**
 * The spans of {@link instrumentLocker}, from a locker's events: one `rxjs_lock.acquire` span per
 * acquisition that ended (its wait, dated back from the event's `waitedMs`), and one
 * `rxjs_lock.hold` span per lease, from the grant to its release or loss.
 */
import { SpanKind, SpanStatusCode, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import type { LockEvent } from '../../engine/events/events.js';

/** A hold span still open, and when its lease was granted (for the hold time of a loss). */
interface OpenHold {
  readonly id: string;
  readonly span: Span;
  readonly key: string;
  readonly token: string;
  readonly grantedAt: number;
}

export class LockSpans {
  /** Open hold spans by lease id (`<token>:<fence>`). */
  private readonly holds = new Map<string, OpenHold>();
  /**
   * The same, by key and token (what `renewed`, `renew-failed` and `release-failed` name): looked
   * up once per renewal of every lease, so never a scan of all holds.
   */
  private readonly byHolder = new Map<string, Set<OpenHold>>();

  constructor(
    private readonly tracer: Tracer,
    private readonly keyAttributes: (key: string) => Attributes,
  ) {}

  /** How long the lease `id` has been held, in ms, when its grant was seen. */
  heldMs(id: string): number | undefined {
    const hold = this.holds.get(id);
    return hold === undefined ? undefined : Date.now() - hold.grantedAt;
  }

  record(event: LockEvent): void {
    const now = Date.now();
    switch (event.type) {
      case 'acquired': {
        const attributes = {
          ...this.keyAttributes(event.key),
          'rxjs_lock.fence': event.fence,
          'rxjs_lock.attempts': event.attempts,
          'rxjs_lock.handoff': event.passed,
        };
        this.waitSpan(now, event.waitedMs, attributes).end(now);
        const span = this.tracer.startSpan('rxjs_lock.hold', {
          kind: SpanKind.INTERNAL,
          startTime: now,
          attributes: { ...attributes, 'rxjs_lock.lease_id': event.id },
        });
        this.open({ id: event.id, span, key: event.key, token: event.token, grantedAt: now });
        return;
      }
      case 'timed-out': {
        const span = this.waitSpan(now, event.waitedMs, {
          ...this.keyAttributes(event.key),
          'rxjs_lock.attempts': event.attempts,
          'rxjs_lock.skipped': event.skipped,
        });
        span.setStatus({ code: SpanStatusCode.ERROR, message: event.skipped ? 'skipped: the lock was held' : 'timed out waiting for the lock' });
        span.end(now);
        return;
      }
      case 'acquire-failed':
      case 'closed': {
        const span = this.waitSpan(now, 0, {
          ...this.keyAttributes(event.key),
          ...(event.type === 'acquire-failed' ? { 'rxjs_lock.attempts': event.attempts } : {}),
        });
        span.recordException(event.error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: event.error.message });
        span.end(now);
        return;
      }
      case 'renewed':
      case 'renew-failed':
        for (const hold of this.holdsOf(event.key, event.token)) {
          hold.span.addEvent(event.type === 'renewed' ? 'renewed' : 'renew failed', { 'rxjs_lock.valid_for_ms': event.validForMs }, now);
        }
        return;
      case 'released': {
        const hold = this.take(event.id);
        if (hold === undefined) return;
        hold.span.setAttribute('rxjs_lock.release_outcome', event.outcome);
        if (event.outcome === 'gone') hold.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the store no longer had the lock at its release' });
        hold.span.end(now);
        return;
      }
      case 'lost': {
        const hold = this.take(event.id);
        if (hold === undefined) return;
        hold.span.recordException(event.error);
        hold.span.setStatus({ code: SpanStatusCode.ERROR, message: event.error.message });
        hold.span.end(now);
        return;
      }
      case 'release-failed':
        for (const hold of this.holdsOf(event.key, event.token)) {
          this.take(hold.id);
          hold.span.recordException(event.error);
          hold.span.setStatus({ code: SpanStatusCode.ERROR, message: event.error.message });
          hold.span.end(now);
        }
        return;
      case 'abandoned-released':
      case 'long-wait': // (the acquire span is made when the wait ends, from its outcome's event)
        return;
    }
  }

  /** Ends the hold spans still open (the instrumentation stops, or the locker closed). */
  endAll(): void {
    const now = Date.now();
    for (const hold of this.holds.values()) hold.span.end(now);
    this.holds.clear();
    this.byHolder.clear();
  }

  private waitSpan(now: number, waitedMs: number, attributes: Attributes): Span {
    return this.tracer.startSpan('rxjs_lock.acquire', { kind: SpanKind.INTERNAL, startTime: now - waitedMs, attributes });
  }

  private take(id: string): OpenHold | undefined {
    const hold = this.holds.get(id);
    if (hold === undefined) return undefined;
    this.holds.delete(id);
    const same = this.byHolder.get(holderOf(hold.key, hold.token));
    same?.delete(hold);
    if (same?.size === 0) this.byHolder.delete(holderOf(hold.key, hold.token));
    return hold;
  }

  private open(hold: OpenHold): void {
    this.holds.set(hold.id, hold);
    const holder = holderOf(hold.key, hold.token);
    const same = this.byHolder.get(holder);
    if (same === undefined) this.byHolder.set(holder, new Set([hold]));
    else same.add(hold);
  }

  /** The open holds of `key` by `token` (a copy: callers may end them while iterating). */
  private holdsOf(key: string, token: string): OpenHold[] {
    const same = this.byHolder.get(holderOf(key, token));
    return same === undefined ? [] : [...same];
  }
}

/** The index key of a key's holder (NUL cannot appear in a token: the engine's are UUID-based). */
const holderOf = (key: string, token: string): string => `${token}\u0000${key}`;
