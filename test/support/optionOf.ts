/** What a bad-input check names: the `option` of the `LockOptionsError` a call throws. */
import { isLockOptionsError } from '../../src/index.js';

/**
 * Calls `f`: the option named by the `LockOptionsError` it throws, `undefined` when it throws
 * nothing; any other error is thrown again.
 */
export function optionOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (error) {
    if (isLockOptionsError(error)) return error.option;
    throw error;
  }
  return undefined;
}
