/** Largest delay a JavaScript timer honours, and so the largest time option accepted (ms). */
export const MAX_MS = 2_147_483_647;
/** Longest key accepted, in characters. */
export const MAX_KEY_LENGTH = 4096;
/** Longest key prefix accepted, in characters. */
export const MAX_PREFIX_LENGTH = 1024;
/**
 * Most local hand-offs per store grant (`cohort.maxPasses`): each holder gets a fence of its own
 * from the block the engine reserves at the grant (see engine/fencing/FenceBlock.ts).
 */
export const MAX_PASSES = 1023;
/**
 * Most distinct keys one multi-key acquisition (`withLocks`, `usingLocks`, `acquireLocks`) takes:
 * the keys are taken one after the other, a store round trip each, so a longer set mostly buys a
 * longer wait with every key already taken held meanwhile.
 */
export const MAX_KEYS = 64;
