/**
 * How lock failures reach a client: HTTP exceptions for controllers, `RpcException`s for
 * microservice handlers, `GraphQLError`s for resolvers. Without this, Nest answers every
 * `LockTimeoutError` with a 500.
 */
import { ConflictException, HttpException, HttpStatus, InternalServerErrorException, ServiceUnavailableException, type ExecutionContext } from '@nestjs/common';
import { isLockError, LockOptionsError, type LockError } from '../../errors/errors.js';
import { MissingKeyValueError } from './lockKey.js';

/**
 * The status of a lock still busy after `waitTimeout`: 409 Conflict, 423 Locked or 503 Service
 * Unavailable (with `Retry-After`).
 *
 * @example
 * ```ts
 * LockModule.forRoot({ store, errors: { busyStatus: 423 } });
 * ```
 */
export type BusyStatus = 409 | 423 | 503;

/**
 * A custom mapping: return what to throw for `error` (an `HttpException`, an `RpcException`…),
 * or `undefined` to keep the default mapping. Called for every rxjs-lock error the handler's
 * stream ends with (also those from locks the handler takes itself) and for a template value the
 * request lacks.
 *
 * @example
 * ```ts
 * import { HttpException } from '@nestjs/common';
 * import { isLockTimeoutError } from 'rxjs-lock';
 *
 * const errors: LockErrorOptions = {
 *   map: (error) =>
 *     isLockTimeoutError(error)
 *       ? new HttpException({ message: 'Another change of this order is in progress', key: error.key }, 409)
 *       : undefined, // the default answer for the others
 * };
 * ```
 */
export type LockErrorMapper = (error: LockError, context: ExecutionContext) => unknown;

/**
 * How lock failures are answered. Set defaults on `LockModule.forRoot({ errors })` and override
 * them per handler in `@WithLock(key, { errors })`.
 *
 * | failure | HTTP | RPC (`RpcException` error `code`), GraphQL (`GraphQLError` `extensions.code`) |
 * |---|---|---|
 * | `LockTimeoutError` (still busy after `waitTimeout`) | `busyStatus` (409) | `LOCK_BUSY` |
 * | `LockStoreError` (store failed or timed out; `ReplicaAckError` too), `LockerClosedError` | 503 + `Retry-After` | `LOCK_STORE_UNAVAILABLE` |
 * | `LockLostError` (lease lost while the handler ran; its stream is unsubscribed) | 500 | `LOCK_LOST` |
 * | a template value the request lacks | 400 | `LOCK_KEY_MISSING` |
 *
 * A GraphQL error's `extensions` also carry the HTTP `status` it stands for and, with a 503, the
 * `retryAfter` seconds: `{ code: 'LOCK_BUSY', status: 409 }`. (The response itself stays 200, as
 * GraphQL answers a field that failed.)
 *
 * @example
 * ```ts
 * LockModule.forRoot({ redis: 'redis://localhost:6379', errors: { busyStatus: 503, retryAfter: 2 } });
 * ```
 */
export interface LockErrorOptions {
  /**
   * HTTP status for a lock that stayed busy for the whole `waitTimeout`.
   * @default 409
   */
  busyStatus?: BusyStatus;
  /**
   * `Retry-After` of 503 answers, in seconds (an integer from 0 to 86400): with `busyStatus: 503`
   * and for store failures.
   * @default 1
   */
  retryAfter?: number;
  /**
   * Custom mapping, tried first (see {@link LockErrorMapper}).
   * @default undefined (the table above)
   */
  map?: LockErrorMapper;
}

const ERROR_OPTION_NAMES = ['busyStatus', 'retryAfter', 'map'];

/** Validates `errors` options (named `option` in messages). */
export function checkErrorOptions(options: unknown, option: string): LockErrorOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LockOptionsError(option, `an object of ${ERROR_OPTION_NAMES.join(', ')}`, options);
  }
  const o = options as Record<string, unknown>;
  for (const name of Object.keys(o)) {
    if (!ERROR_OPTION_NAMES.includes(name)) throw new LockOptionsError(`${option}.${name}`, `one of ${ERROR_OPTION_NAMES.join(', ')}`, o[name]);
  }
  if (o.busyStatus !== undefined && o.busyStatus !== 409 && o.busyStatus !== 423 && o.busyStatus !== 503) {
    throw new LockOptionsError(`${option}.busyStatus`, '409, 423 or 503', o.busyStatus);
  }
  if (o.retryAfter !== undefined && (!Number.isInteger(o.retryAfter) || (o.retryAfter as number) < 0 || (o.retryAfter as number) > 86_400)) {
    throw new LockOptionsError(`${option}.retryAfter`, 'an integer from 0 to 86400 (seconds)', o.retryAfter);
  }
  if (o.map !== undefined && typeof o.map !== 'function') throw new LockOptionsError(`${option}.map`, 'a function (error, context) => error to throw', o.map);
  return o as LockErrorOptions;
}

/** A lock failure, classified once for both transports. */
export interface LockFailure {
  readonly status: number;
  readonly code: 'LOCK_BUSY' | 'LOCK_STORE_UNAVAILABLE' | 'LOCK_LOST' | 'LOCK_KEY_MISSING';
  readonly message: string;
  readonly retryAfter?: number;
}

/** What `error` means for the client, or `undefined` if it is not a lock failure to translate. */
export function classify(error: unknown, options: LockErrorOptions): LockFailure | undefined {
  const retryAfter = options.retryAfter ?? 1;
  if (error instanceof MissingKeyValueError) {
    return { status: HttpStatus.BAD_REQUEST, code: 'LOCK_KEY_MISSING', message: error.message };
  }
  if (!isLockError(error)) return undefined;
  switch (error.name) {
    case 'LockTimeoutError': {
      const status = options.busyStatus ?? HttpStatus.CONFLICT;
      return { status, code: 'LOCK_BUSY', message: `The resource is busy: ${error.message}`, ...(status === 503 ? { retryAfter } : {}) };
    }
    case 'LockStoreError':
    case 'ReplicaAckError':
    case 'LockerClosedError':
      return {
        status: HttpStatus.SERVICE_UNAVAILABLE,
        code: 'LOCK_STORE_UNAVAILABLE',
        message: `The lock service is unavailable: ${error.message}`,
        retryAfter,
      };
    case 'LockLostError':
      return {
        status: HttpStatus.INTERNAL_SERVER_ERROR,
        code: 'LOCK_LOST',
        message: `${error.message} while the handler ran; its stream was stopped and its work may be incomplete`,
      };
    default:
      return undefined; // LockOptionsError: a programming error, left to Nest (500, logged)
  }
}

/** The HTTP exception for `failure`. */
export function httpException(failure: LockFailure): HttpException {
  switch (failure.status) {
    case 409:
      return new ConflictException(failure.message);
    case 503:
      return new ServiceUnavailableException(failure.message);
    case 500:
      return new InternalServerErrorException(failure.message);
    default:
      return new HttpException({ statusCode: failure.status, message: failure.message, error: failure.code }, failure.status);
  }
}
