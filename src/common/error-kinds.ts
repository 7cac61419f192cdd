/**
 * The closed set of ways a request or an RPC can fail, and the one table that
 * says how each is answered: its gRPC status, its HTTP status (for the KServe
 * V2 REST front door) and its Triton failure reason (nv_inference_request_failure).
 *
 * Every failure is classified once, where it is decided (a ServingError's kind,
 * a batcher rejection's reason, a native status code), and each front door
 * maps the kind to its own status here. No other module picks a status.
 *
 * The HTTP status follows from the gRPC status alone, by Google's canonical
 * mapping (google.rpc.Code), so a failure reads the same on both doors (one
 * exception, 'restricted', answered 403 on HTTP as Triton does):
 * INVALID_ARGUMENT and FAILED_PRECONDITION 400, UNAUTHENTICATED 401,
 * PERMISSION_DENIED 403, NOT_FOUND 404, RESOURCE_EXHAUSTED 429, CANCELLED 499,
 * INTERNAL 500, UNIMPLEMENTED 501, UNAVAILABLE 503, DEADLINE_EXCEEDED 504. A
 * queue timeout is therefore 504 (its gRPC status is DEADLINE_EXCEEDED), where
 * Triton's HTTP server answers a queue timeout 503 (README, differences from
 * Triton). tritonclient treats any status but 200 as an error and shows the
 * body's "error" field.
 *
 * Failure reasons are Triton's (docs/user_guide/metrics.md, "Failure Count
 * Categories"): REJECTED for requests the scheduler refused or dropped before
 * execution (queue full, queue timeout, a caller's deadline passing in the
 * queue, a batcher shut down, a tenant's quota refusing the batch memory, a
 * tenant's request rate or in-flight limit);
 * CANCELED for requests the client cancelled before they ran; BACKEND for
 * failures of the execution itself; OTHER for the rest (malformed requests,
 * a model that is not ready). Triton counts a request dropped for its timeout
 * in the scheduler as REJECTED, and hotpath's deadline is that timeout, given
 * through gRPC: so a passed deadline is REJECTED too, not CANCELED.
 *
 * Pure data and functions; no imports of the layers above. Safe in any thread.
 */
import { status } from '@grpc/grpc-js';

export type ErrorKind =
  /** The request is malformed or does not fit the model. */
  | 'invalid'
  /** No such model, or no such version of it. */
  | 'not_found'
  /** The model or the server cannot serve now (not ready, draining, device gone). */
  | 'unavailable'
  /** The batcher's queue for the request's priority level is full. */
  | 'queue_full'
  /** The batcher (or executor) stopped with the request still pending. */
  | 'shutdown'
  /** The request waited in the queue longer than its queue-policy timeout. */
  | 'timeout'
  /** The caller's deadline passed before the request ran. */
  | 'deadline'
  /** The client cancelled the call before its request started executing. */
  | 'cancelled'
  /** A tenant's memory quota, or the server's memory, has no room. */
  | 'over_quota'
  /** A tenant's request rate or in-flight cap (tenants file) refused the request before it ran. */
  | 'rate_limited'
  /** The call carries no API key, or one the server does not know (--require-api-key). */
  | 'unauthenticated'
  /** The caller's key is valid but does not allow the operation (e.g. load without the admin key). */
  | 'permission_denied'
  /**
   * The call's protocol group is restricted (--grpc-restricted-protocol,
   * --http-restricted-api) and the call lacks the header's value. Answered
   * as Triton answers it: UNAVAILABLE on gRPC, 403 on HTTP.
   */
  | 'restricted'
  /** The operation is valid but the state forbids it (e.g. golden checks failed). */
  | 'precondition'
  /** An RPC or feature hotpath does not implement. */
  | 'unimplemented'
  /** The worker running the request died (after the one retry). */
  | 'worker_crashed'
  /** A bug or an unexpected failure of the runtime. */
  | 'internal';

/** Triton's bounded failure reasons (nv_inference_request_failure{reason}). */
export type KindFailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';

interface KindAnswer {
  readonly grpc: status;
  readonly failure: KindFailureReason;
  /** Only where Triton's HTTP server answers otherwise than the gRPC status maps to. */
  readonly http?: number;
}

const ANSWERS: Readonly<Record<ErrorKind, KindAnswer>> = {
  invalid: { grpc: status.INVALID_ARGUMENT, failure: 'OTHER' },
  not_found: { grpc: status.NOT_FOUND, failure: 'OTHER' },
  unavailable: { grpc: status.UNAVAILABLE, failure: 'OTHER' },
  queue_full: { grpc: status.UNAVAILABLE, failure: 'REJECTED' },
  shutdown: { grpc: status.UNAVAILABLE, failure: 'REJECTED' },
  timeout: { grpc: status.DEADLINE_EXCEEDED, failure: 'REJECTED' },
  deadline: { grpc: status.DEADLINE_EXCEEDED, failure: 'REJECTED' },
  cancelled: { grpc: status.CANCELLED, failure: 'CANCELED' },
  over_quota: { grpc: status.RESOURCE_EXHAUSTED, failure: 'REJECTED' },
  rate_limited: { grpc: status.RESOURCE_EXHAUSTED, failure: 'REJECTED' },
  unauthenticated: { grpc: status.UNAUTHENTICATED, failure: 'OTHER' },
  permission_denied: { grpc: status.PERMISSION_DENIED, failure: 'OTHER' },
  // Triton: gRPC UNAVAILABLE, HTTP 403 ("This API is restricted, ..."); the one kind whose HTTP status is its own.
  restricted: { grpc: status.UNAVAILABLE, failure: 'OTHER', http: 403 },
  precondition: { grpc: status.FAILED_PRECONDITION, failure: 'OTHER' },
  unimplemented: { grpc: status.UNIMPLEMENTED, failure: 'OTHER' },
  worker_crashed: { grpc: status.UNAVAILABLE, failure: 'BACKEND' },
  internal: { grpc: status.INTERNAL, failure: 'BACKEND' },
};

export const ERROR_KINDS: readonly ErrorKind[] = Object.keys(ANSWERS) as ErrorKind[];

export function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === 'string' && Object.hasOwn(ANSWERS, value);
}

/** The gRPC status a failure of this kind is answered with. */
export function grpcStatusOf(kind: ErrorKind): status {
  return ANSWERS[kind].grpc;
}

/**
 * The HTTP status a failure of this kind is answered with (KServe V2 REST):
 * its gRPC status's, except 'restricted' (403, as Triton's HTTP server).
 */
export function httpStatusOf(kind: ErrorKind): number {
  return ANSWERS[kind].http ?? httpStatusOfGrpc(ANSWERS[kind].grpc);
}

/**
 * The HTTP status of a gRPC status, by Google's canonical mapping
 * (google.rpc.Code); 500 for anything it does not list.
 */
export function httpStatusOfGrpc(code: status): number {
  switch (code) {
    case status.OK:
      return 200;
    case status.INVALID_ARGUMENT:
    case status.FAILED_PRECONDITION:
    case status.OUT_OF_RANGE:
      return 400;
    case status.UNAUTHENTICATED:
      return 401;
    case status.PERMISSION_DENIED:
      return 403;
    case status.NOT_FOUND:
      return 404;
    case status.ALREADY_EXISTS:
    case status.ABORTED:
      return 409;
    case status.RESOURCE_EXHAUSTED:
      return 429;
    case status.CANCELLED:
      return 499;
    case status.UNIMPLEMENTED:
      return 501;
    case status.UNAVAILABLE:
      return 503;
    case status.DEADLINE_EXCEEDED:
      return 504;
    default:
      return 500;
  }
}

/** The Triton failure reason counted for a failed inference of this kind. */
export function failureReasonOf(kind: ErrorKind): KindFailureReason {
  return ANSWERS[kind].failure;
}

/**
 * The kind for a gRPC status, for callers that still construct errors from a
 * status code. Several kinds share a status; this picks the general one
 * (UNAVAILABLE → 'unavailable', DEADLINE_EXCEEDED → 'deadline'). Statuses
 * hotpath never answers with map to 'internal'.
 */
export function kindOfGrpcStatus(code: status): ErrorKind {
  switch (code) {
    case status.INVALID_ARGUMENT:
    case status.OUT_OF_RANGE:
      return 'invalid';
    case status.NOT_FOUND:
      return 'not_found';
    case status.UNAVAILABLE:
      return 'unavailable';
    case status.DEADLINE_EXCEEDED:
      return 'deadline';
    case status.CANCELLED:
      return 'cancelled';
    case status.RESOURCE_EXHAUSTED:
      return 'over_quota';
    case status.UNAUTHENTICATED:
      return 'unauthenticated';
    case status.PERMISSION_DENIED:
      return 'permission_denied';
    case status.FAILED_PRECONDITION:
      return 'precondition';
    case status.UNIMPLEMENTED:
      return 'unimplemented';
    default:
      return 'internal';
  }
}

/*
 * The native core's side of the vocabulary. Every failure the addon reports
 * crosses under a code name of one of three families, and each name has one
 * kind. These tables are the TypeScript copy of the native ones
 * (native/common/failure_kind.h, native/batcher/types.h,
 * native/batcher/execution_target.h); test/native/failure-vocabulary.test.ts
 * compares them, names and kinds, with what the addon exports, so the two
 * sides cannot drift. Classification is by these names only, never by a
 * message.
 */

/** Status code names (native/common/status.h StatusCodeName), but OK. */
export const NATIVE_STATUS_KINDS = {
  INVALID_ARGUMENT: 'invalid',
  NOT_FOUND: 'not_found',
  FAILED_PRECONDITION: 'precondition',
  RESOURCE_EXHAUSTED: 'over_quota',
  UNAVAILABLE: 'unavailable',
  DEADLINE_EXCEEDED: 'deadline',
  INTERNAL: 'internal',
} as const satisfies Readonly<Record<string, ErrorKind>>;

/** A native status code name (gRPC-style). */
export type NativeStatusCode = keyof typeof NATIVE_STATUS_KINDS;

/** Batcher rejection reasons (native/batcher/types.h RejectKindName). */
export const REJECTION_KINDS = {
  QUEUE_FULL: 'queue_full',
  TIMEOUT: 'timeout',
  DEADLINE_EXCEEDED: 'deadline',
  SHUTDOWN: 'shutdown',
  OVER_QUOTA: 'over_quota',
  INVALID: 'invalid',
} as const satisfies Readonly<Record<string, ErrorKind>>;

/**
 * Why the batcher refused a request (at enqueue) or dropped it (while
 * queued): TIMEOUT, DEADLINE_EXCEEDED and SHUTDOWN happen while queued (and at
 * enqueue); the rest are refusals at enqueue.
 */
export type RejectionReason = keyof typeof REJECTION_KINDS;

/**
 * Why an executed batch failed (native/batcher/execution_target.h
 * ExecutionFailureName). The device faults are 'unavailable' (the batch
 * normally re-runs on the CPU instead); NONE on a failed result is a bug.
 */
export const EXECUTION_FAILURE_KINDS = {
  NONE: 'internal',
  INVALID: 'invalid',
  DEVICE_TRANSIENT: 'unavailable',
  DEVICE_LOST: 'unavailable',
  RESOURCE_EXHAUSTED: 'over_quota',
  SHUTDOWN: 'shutdown',
  INTERNAL: 'internal',
  /** The onnxruntime worker running the batch exited; the batch is intact and may re-run. */
  WORKER_CRASHED: 'worker_crashed',
  DEADLINE: 'deadline',
} as const satisfies Readonly<Record<string, ErrorKind>>;

export type ExecutionFailure = keyof typeof EXECUTION_FAILURE_KINDS;

/**
 * The execution failures an onnxruntime worker may report by name
 * (workerBatchDone, and a piscina task's RunFailure); the native side
 * decides the others. Native: WorkerMayReport.
 */
export const WORKER_FAILURES = ['INVALID', 'INTERNAL', 'DEADLINE', 'RESOURCE_EXHAUSTED'] as const satisfies readonly ExecutionFailure[];

export type WorkerFailure = (typeof WORKER_FAILURES)[number];

/** The kind of a native status code name; 'internal' for a name it does not know. */
export function kindOfNativeCode(code: string): ErrorKind {
  return Object.hasOwn(NATIVE_STATUS_KINDS, code) ? NATIVE_STATUS_KINDS[code as NativeStatusCode] : 'internal';
}

/** The kind of a batcher rejection reason; undefined for a name that is not one. */
export function kindOfRejection(reason: string): ErrorKind | undefined {
  return Object.hasOwn(REJECTION_KINDS, reason) ? REJECTION_KINDS[reason as RejectionReason] : undefined;
}

/** The kind of an executed batch's failure; 'internal' for a name it does not know. */
export function kindOfExecutionFailure(failure: string): ErrorKind {
  return Object.hasOwn(EXECUTION_FAILURE_KINDS, failure) ? EXECUTION_FAILURE_KINDS[failure as ExecutionFailure] : 'internal';
}
