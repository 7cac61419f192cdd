// Typed arena failures. Both are NativeErrors with code RESOURCE_EXHAUSTED, so
// code that maps NativeError codes to gRPC statuses needs no special case;
// code that wants the numbers checks `instanceof`.
import { NativeError } from './native-error.js';
import type { ArenaResult, RawHolder } from './arena-binding-types.js';

function named<T extends Error>(error: T, name: string): T {
  // NativeError declares `name` as the literal 'NativeError'; subclasses
  // still want their own name in stacks and logs.
  Object.defineProperty(error, 'name', { value: name, enumerable: false, configurable: true, writable: false });
  return error;
}

/** A tenant's quota would be exceeded (after evicting what it could). */
export class ArenaQuotaError extends NativeError {
  constructor(
    message: string,
    operation: string,
    readonly tenant: string,
    readonly requested: number,
    readonly used: number,
    readonly quota: number,
  ) {
    super('RESOURCE_EXHAUSTED', message, operation);
    named(this, 'ArenaQuotaError');
  }
}

export interface ArenaHolder {
  /** 'tenant', or the owner kind ('model', 'batch', ...). */
  readonly kind: string;
  readonly name: string;
  readonly allocatedBytes: number;
  readonly reservedBytes: number;
}

/** The arena's capacity (or the device) is full after releasing its cache and evicting idle entries. */
export class ArenaOutOfMemoryError extends NativeError {
  constructor(
    message: string,
    operation: string,
    readonly tenant: string,
    readonly requested: number,
    /** Tenants first, then the largest owners. */
    readonly holders: readonly ArenaHolder[],
  ) {
    super('RESOURCE_EXHAUSTED', message, operation);
    named(this, 'ArenaOutOfMemoryError');
  }
}

function holder(raw: RawHolder): ArenaHolder {
  return { kind: raw.kind, name: raw.name, allocatedBytes: raw.allocated, reservedBytes: raw.reserved };
}

/**
 * The value of an ok arena result, or a thrown error: ArenaQuotaError or
 * ArenaOutOfMemoryError when the native side sent a detail, else NativeError.
 * The stack starts at the caller of `boundary`.
 */
export function unwrapArena<T>(result: ArenaResult<T>, operation: string, boundary: (...args: never[]) => unknown): T {
  if (result.ok) return result.value;
  let error: NativeError;
  const detail = result.detail;
  if (detail?.kind === 'quota') {
    error = new ArenaQuotaError(result.message, operation, detail.tenant, detail.requested, detail.used, detail.quota);
  } else if (detail?.kind === 'oom') {
    error = new ArenaOutOfMemoryError(result.message, operation, detail.tenant, detail.requested, detail.holders.map(holder));
  } else {
    error = new NativeError(result.code, result.message, operation);
  }
  Error.captureStackTrace(error, boundary);
  throw error;
}
