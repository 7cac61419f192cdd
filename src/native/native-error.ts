// Errors from the native addon cross the boundary as data: fallible bindings
// return `{ok: true, value}` or `{ok: false, code, message}` (see
// native/napi/result_js.h). `unwrapNative` turns the failure form into a typed
// NativeError whose stack points at the JS caller, not at this module, so logs
// show who asked. A wrapper whose failure surfaces after an await captures
// the call site first, as sharp does: batcher.ts and executor.ts do so and
// apply it themselves (their withCallSite); `unwrapNative` takes one too.
//
// Pure functions and an immutable error class; safe in any worker.

import { kindOfNativeCode, type ErrorKind, type NativeStatusCode } from '../common/error-kinds.js';
import { ClassifiedError } from '../common/classified-error.js';

/** Status code names shared with native/common/status.h (gRPC-style); the list and their kinds: common/error-kinds.ts. */
export type { NativeStatusCode } from '../common/error-kinds.js';

export type NativeResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly code: NativeStatusCode; readonly message: string };

/**
 * A failure of the native core, classified where it is made: its kind comes
 * from its status code (or, for a batcher rejection, from its reason), and
 * clients see the native message without the operation prefix.
 */
export class NativeError extends ClassifiedError {
  override readonly name = 'NativeError';
  readonly kind: ErrorKind;

  constructor(
    /** gRPC-style status code from the native core. */
    readonly code: NativeStatusCode,
    /** The native message, without the operation prefix. */
    readonly nativeMessage: string,
    /** The binding that failed, e.g. "deviceInfo". */
    readonly operation: string,
    /** Default: the code's kind (kindOfNativeCode). */
    kind?: ErrorKind,
  ) {
    super(`${operation}: ${code}: ${nativeMessage}`);
    this.kind = kind ?? kindOfNativeCode(code);
  }

  get clientMessage(): string {
    return this.nativeMessage;
  }
}

/** A stack captured where the user called in, for errors raised later. */
export interface CallSite {
  readonly stack?: string | undefined;
}

/**
 * Returns the value of a successful native result, or throws a NativeError.
 * Without `callSite` the stack starts at the caller of the wrapper that called
 * this (the `boundary` function); with it, the captured stack is used.
 */
export function unwrapNative<T>(
  result: NativeResult<T>,
  operation: string,
  boundary: (...args: never[]) => unknown = unwrapNative,
  callSite?: CallSite,
): T {
  if (typeof result !== 'object' || result === null || typeof result.ok !== 'boolean') {
    throw new NativeError('INTERNAL', `malformed result from the native addon: ${String(result)}`, operation);
  }
  if (result.ok) return result.value;
  const error = new NativeError(result.code, result.message, operation);
  if (callSite?.stack !== undefined) {
    const frames = callSite.stack.split('\n').slice(1).join('\n');
    error.stack = `${error.name}: ${error.message}\n${frames}`;
  } else {
    Error.captureStackTrace(error, boundary);
  }
  throw error;
}
