/**
 * A store grant as its lease tells it at the release ({@link ReleasedGrant}): made once per
 * acquisition, so a class (one shape, one allocation site that V8 keeps in the young generation,
 * where an object literal's site can be pretenured into old space).
 */
import type { ReleasedGrant } from '../../store/LockStore.js';

export class AnsweredGrant implements ReleasedGrant {
  constructor(
    readonly fence: number,
    readonly fences: number,
    readonly answeredAt: number,
  ) {}
}
